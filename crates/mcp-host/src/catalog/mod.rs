//! The merged view of every ready upstream: exposed names and URIs to
//! (server, original), in a deterministic order (the config's order of
//! servers, each server's own order of items).
//!
//! - Tools and prompts are `<namespace>__<name>` (see [`crate::names`]).
//!   Two upstream items that would get the same exposed name are a
//!   collision: the first in config order keeps it, the other is left
//!   out, and the collision is reported in [`Catalog::collisions`] (and the
//!   host's status and log), never resolved silently.
//! - Resource URIs and templates pass through unchanged when only one
//!   server lists them. A URI or template two servers list is rewritten for
//!   each of them as `mcp-host:<namespace>/<original>`, which the host
//!   undoes when it is read.

use std::collections::BTreeMap;
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt as _, HashSet};
use mcp_schema::header_params::HeaderParam;
use serde_json::Value;

use crate::upstream::{Item, Listing};

mod part;
mod shown;

use part::{NamedKind, Part, collision, prefix_of};
use shown::Hidden;
pub use shown::Shown;

/// The scheme of rewritten resource URIs.
pub const REWRITE_SCHEME: &str = "mcp-host:";

/// Where an exposed item lives: the upstream's index and its own name or URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The upstream's index in the host.
    pub upstream: usize,
    /// The item's name or URI at the upstream.
    pub original: String,
}

/// One upstream's part of the catalog.
#[derive(Debug, Clone)]
pub struct Source {
    /// The upstream's index in the host.
    pub index: usize,
    /// The config entry's name.
    pub name: String,
    /// Its namespace (`""`: unprefixed).
    pub namespace: String,
    /// What it lists now.
    pub listing: Arc<Listing>,
}

/// A template's route: its literal prefix decides which URIs it may serve.
#[derive(Debug, Clone)]
struct TemplateRoute {
    /// The literal start of the template as shown.
    prefix: String,
    /// The literal start of the template at its server, when it is shown
    /// rewritten.
    rewritten_from: Option<String>,
    upstream: usize,
}

/// The merged catalog.
#[derive(Debug, Default)]
pub struct Catalog {
    /// Each ready upstream's tools and prompts, in config order.
    parts: Vec<Arc<Part>>,
    /// What of each part lost its name to an earlier part's.
    hidden: Vec<Hidden>,
    /// The parts whose names start with a namespace, by that namespace
    /// (positions in `parts`).
    by_prefix: HashMap<String, Vec<usize>>,
    /// The parts whose names may be anything (no namespace).
    unprefixed: Vec<usize>,
    /// The resources, as shown.
    resources: Vec<Item>,
    /// The resource templates, as shown.
    templates: Vec<Item>,
    /// Names two upstreams wanted; each entry says which and who won.
    pub collisions: Vec<String>,
    /// Every upstream's instructions under a heading of its name.
    pub instructions: Option<String>,
    resource_routes: HashMap<String, Route>,
    template_routes: Vec<TemplateRoute>,
    /// Upstreams that serve resources, by index, for URIs nobody lists.
    resource_servers: Vec<usize>,
    namespaces: BTreeMap<String, usize>,
    /// Rewritten URIs by (upstream, original), to show its notifications.
    rewritten: HashMap<(usize, String), String>,
    /// The upstreams some of whose URIs or templates are shown rewritten.
    rewriting: std::collections::BTreeSet<usize>,
}

impl Catalog {
    /// Merges `sources`, in their order.
    pub fn build(sources: &[Source]) -> Catalog {
        Catalog::default().update(sources)
    }

    /// Merges `sources`, in their order, reusing this catalog's part of
    /// every source whose listing is the one it was made from: a change of
    /// one server's lists copies and hashes that server's tools and
    /// prompts, not the others'. (Resources and templates, whose shown
    /// URIs depend on every server's, are merged whole.)
    pub fn update(&self, sources: &[Source]) -> Catalog {
        let old: HashMap<usize, &Arc<Part>> = self.parts.iter().map(|p| (p.index, p)).collect();
        let parts: Vec<Arc<Part>> = sources
            .iter()
            .map(|source| match old.get(&source.index) {
                Some(part) if part.is_of(source) => Arc::clone(part),
                _ => Arc::new(Part::new(source)),
            })
            .collect();
        let mut catalog = Catalog {
            hidden: vec![Hidden::default(); parts.len()],
            ..Catalog::default()
        };
        for (at, part) in parts.iter().enumerate() {
            match part.prefix() {
                Some(ns) => catalog.by_prefix.entry(ns.to_owned()).or_default().push(at),
                None => catalog.unprefixed.push(at),
            }
            catalog.collisions.extend(part.collisions.iter().cloned());
        }
        catalog.parts = parts;
        catalog.settle_contests(NamedKind::Tools);
        catalog.settle_contests(NamedKind::Prompts);
        for source in sources {
            catalog
                .namespaces
                .insert(rewrite_namespace(source), source.index);
            if source.listing.capabilities.resources.is_some() {
                catalog.resource_servers.push(source.index);
            }
        }
        catalog.add_resources(sources);
        catalog.rewriting = catalog
            .rewritten
            .keys()
            .map(|(index, _)| *index)
            .chain(
                catalog
                    .template_routes
                    .iter()
                    .filter(|t| t.rewritten_from.is_some())
                    .map(|t| t.upstream),
            )
            .collect();
        catalog.instructions = merged_instructions(sources);
        catalog
    }

    /// Finds the names two parts both show and hides each from every part
    /// but the first. Only names that can be contested are looked at: those
    /// of parts without a namespace, and those of parts that share one.
    fn settle_contests(&mut self, kind: NamedKind) {
        let shared = self.by_prefix.values().filter(|at| at.len() > 1).flatten();
        let contested: HashSet<&str> = self
            .unprefixed
            .iter()
            .chain(shared)
            .flat_map(|at| self.parts[*at].named(kind).names().map(|(name, _)| name))
            .collect();
        let mut lost: Vec<(usize, usize, String)> = Vec::new();
        for name in contested {
            let mut owners = self.candidates(name).filter_map(|at| {
                let (position, route) = self.parts[at].named(kind).get(name)?;
                Some((at, *position, route))
            });
            let Some((winner, _, taken)) = owners.next() else {
                continue;
            };
            for (at, position, route) in owners {
                let (loser, owner) = (&self.parts[at], &self.parts[winner]);
                let told = collision(
                    kind,
                    name,
                    &route.original,
                    &loser.name,
                    &taken.original,
                    &owner.name,
                );
                lost.push((at, position, told));
            }
        }
        lost.sort();
        for (at, position, told) in lost {
            match kind {
                NamedKind::Tools => self.hidden[at].tools.insert(position),
                NamedKind::Prompts => self.hidden[at].prompts.insert(position),
            };
            self.collisions.push(told);
        }
    }

    /// The parts that may show exposed name `name`, in config order: those
    /// of its namespace and those without one.
    fn candidates<'a>(&'a self, name: &str) -> impl Iterator<Item = usize> + 'a {
        let prefixed = prefix_of(name)
            .and_then(|ns| self.by_prefix.get(ns))
            .map_or(&[][..], Vec::as_slice);
        let unprefixed = self.unprefixed.as_slice();
        // Both are in config order: merge them.
        let (mut a, mut b) = (prefixed.iter().peekable(), unprefixed.iter().peekable());
        std::iter::from_fn(move || match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x <= y => a.next().copied(),
            (_, Some(_)) => b.next().copied(),
            (Some(_), None) => a.next().copied(),
            (None, None) => None,
        })
    }

    /// The part that shows exposed name `name` of `kind`, and the item's
    /// position and route in it.
    fn owner(&self, kind: NamedKind, name: &str) -> Option<(&Part, &(usize, Route))> {
        if self.unprefixed.is_empty() {
            // Every part has a namespace: the name's is the only place.
            let parts = self.by_prefix.get(prefix_of(name)?)?;
            return parts.iter().find_map(|at| {
                let part = &self.parts[*at];
                part.named(kind).get(name).map(|found| (&**part, found))
            });
        }
        self.candidates(name).find_map(|at| {
            let part = &self.parts[at];
            part.named(kind).get(name).map(|found| (&**part, found))
        })
    }

    /// The tools, as shown.
    pub fn tools(&self) -> Shown<'_> {
        Shown::parts(&self.parts, &self.hidden, NamedKind::Tools)
    }

    /// The prompts, as shown.
    pub fn prompts(&self) -> Shown<'_> {
        Shown::parts(&self.parts, &self.hidden, NamedKind::Prompts)
    }

    /// The resources, as shown.
    pub fn resources(&self) -> Shown<'_> {
        Shown::flat(&self.resources)
    }

    /// The resource templates, as shown.
    pub fn templates(&self) -> Shown<'_> {
        Shown::flat(&self.templates)
    }

    /// The definition of exposed tool `name`, as shown.
    pub fn tool_definition(&self, name: &str) -> Option<&Item> {
        let (part, (position, _)) = self.owner(NamedKind::Tools, name)?;
        part.tools.items.get(*position)
    }

    /// The `Mcp-Param-*` headers exposed tool `name` has, if any.
    pub fn header_params(&self, name: &str) -> Option<Arc<[HeaderParam]>> {
        let (part, _) = self.owner(NamedKind::Tools, name)?;
        part.header_params(name)
    }

    fn add_resources(&mut self, sources: &[Source]) {
        let mut uri_owners: HashMap<&str, usize> = HashMap::new();
        let mut template_owners: HashMap<&str, usize> = HashMap::new();
        for source in sources {
            for item in &source.listing.resources {
                if let Some(uri) = item.get("uri").and_then(Value::as_str) {
                    *uri_owners.entry(uri).or_default() += 1;
                }
            }
            for item in &source.listing.templates {
                if let Some(t) = item.get("uriTemplate").and_then(Value::as_str) {
                    *template_owners.entry(t).or_default() += 1;
                }
            }
        }
        for source in sources {
            let ns = rewrite_namespace(source);
            for item in &source.listing.resources {
                let Some(uri) = item.get("uri").and_then(Value::as_str) else {
                    continue;
                };
                let exposed = if uri_owners[uri] > 1 {
                    let exposed = format!("{REWRITE_SCHEME}{ns}/{uri}");
                    self.rewritten
                        .insert((source.index, uri.to_owned()), exposed.clone());
                    exposed
                } else {
                    uri.to_owned()
                };
                let mut shown = item.clone();
                shown.insert("uri".into(), Value::String(exposed.clone()));
                self.resources.push(shown);
                self.resource_routes.insert(
                    exposed,
                    Route {
                        upstream: source.index,
                        original: uri.to_owned(),
                    },
                );
            }
            for item in &source.listing.templates {
                let Some(template) = item.get("uriTemplate").and_then(Value::as_str) else {
                    continue;
                };
                let exposed = if template_owners[template] > 1 {
                    format!("{REWRITE_SCHEME}{ns}/{template}")
                } else {
                    template.to_owned()
                };
                let prefix = literal_start(&exposed);
                let rewritten_from = (exposed != template).then(|| literal_start(template));
                let mut shown = item.clone();
                shown.insert("uriTemplate".into(), Value::String(exposed));
                self.templates.push(shown);
                self.template_routes.push(TemplateRoute {
                    prefix,
                    rewritten_from,
                    upstream: source.index,
                });
            }
        }
    }

    /// How upstream `index` shows its URI `uri`: rewritten if two servers
    /// list it, as it is otherwise.
    pub fn exposed_uri(&self, index: usize, uri: &str) -> String {
        self.rewritten
            .get(&(index, uri.to_owned()))
            .cloned()
            .unwrap_or_else(|| uri.to_owned())
    }

    /// The route of exposed tool `name`.
    pub fn tool(&self, name: &str) -> Option<&Route> {
        self.owner(NamedKind::Tools, name)
            .map(|(_, (_, route))| route)
    }

    /// The upstreams whose tools (`Tools`), resources and templates, or
    /// prompts differ between `self` and `other`.
    pub(crate) fn changed_upstreams(
        &self,
        other: &Catalog,
        kind: crate::ListKind,
    ) -> std::collections::BTreeSet<usize> {
        match kind {
            crate::ListKind::Tools => self.changed_parts(other, NamedKind::Tools),
            crate::ListKind::Prompts => self.changed_parts(other, NamedKind::Prompts),
            crate::ListKind::Resources => {
                let mine = self.resources_by_upstream();
                let theirs = other.resources_by_upstream();
                mine.keys()
                    .chain(theirs.keys())
                    .filter(|index| mine.get(index) != theirs.get(index))
                    .copied()
                    .collect()
            }
        }
    }

    /// The upstreams whose shown tools or prompts differ between `self`
    /// and `other`: a part both share is the same; only a part made anew
    /// is compared item by item.
    fn changed_parts(&self, other: &Catalog, kind: NamedKind) -> std::collections::BTreeSet<usize> {
        let by_index = |catalog: &Catalog| -> HashMap<usize, usize> {
            (catalog.parts.iter().enumerate())
                .map(|(at, part)| (part.index, at))
                .collect()
        };
        let (mine, theirs) = (by_index(self), by_index(other));
        fn shown<'c>(
            catalog: &'c Catalog,
            at: Option<&usize>,
            kind: NamedKind,
        ) -> Option<(&'c Arc<Part>, &'c HashSet<usize>)> {
            at.map(|at| (&catalog.parts[*at], catalog.hidden[*at].of(kind)))
        }
        mine.keys()
            .chain(theirs.keys())
            .filter(|index| {
                match (
                    shown(self, mine.get(index), kind),
                    shown(other, theirs.get(index), kind),
                ) {
                    (Some((a, a_hidden)), Some((b, b_hidden))) => {
                        a_hidden != b_hidden
                            || !Arc::ptr_eq(a, b) && a.named(kind).items != b.named(kind).items
                    }
                    (Some((part, _)), None) | (None, Some((part, _))) => {
                        !part.named(kind).items.is_empty()
                    }
                    (None, None) => false,
                }
            })
            .copied()
            .collect()
    }

    /// The resources and templates, by upstream.
    fn resources_by_upstream(&self) -> HashMap<usize, Vec<&Item>> {
        let mut items: HashMap<usize, Vec<&Item>> = HashMap::new();
        let text = |item: &Item, key: &str| -> String {
            item.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let mut add = |upstream: Option<usize>, item| {
            // What no route names is counted under every upstream's key
            // at once: usize::MAX, changed wherever it differs.
            items
                .entry(upstream.unwrap_or(usize::MAX))
                .or_default()
                .push(item);
        };
        for item in &self.resources {
            let uri = text(item, "uri");
            add(self.resource_routes.get(&uri).map(|r| r.upstream), item);
        }
        for item in &self.templates {
            add(self.template(&text(item, "uriTemplate")), item);
        }
        items
    }

    /// The upstream of exposed resource template `uri_template`.
    pub fn template(&self, uri_template: &str) -> Option<usize> {
        let literal = uri_template.split('{').next().unwrap_or_default();
        self.template_routes
            .iter()
            .find(|route| route.prefix == literal)
            .map(|route| route.upstream)
    }

    /// The route of exposed prompt `name`.
    pub fn prompt(&self, name: &str) -> Option<&Route> {
        self.owner(NamedKind::Prompts, name)
            .map(|(_, (_, route))| route)
    }

    /// Where a resource URI is read: a listed URI, a rewritten one, the
    /// template with the longest literal prefix that matches, or the only
    /// server with resources.
    pub fn resource(&self, uri: &str) -> Option<Route> {
        if let Some(route) = self.resource_routes.get(uri) {
            return Some(route.clone());
        }
        if let Some(rest) = uri.strip_prefix(REWRITE_SCHEME)
            && let Some((ns, original)) = rest.split_once('/')
            && let Some(index) = self.namespaces.get(ns)
        {
            return Some(Route {
                upstream: *index,
                original: original.to_owned(),
            });
        }
        let by_template = self
            .template_routes
            .iter()
            .filter(|t| !t.prefix.is_empty() && uri.starts_with(&t.prefix))
            .max_by_key(|t| t.prefix.len());
        if let Some(t) = by_template {
            return Some(Route {
                upstream: t.upstream,
                original: uri.to_owned(),
            });
        }
        // A URI at its server's own form, under a template shown rewritten
        // (two servers have it): routed when only one server's fits.
        if let [only] = self.owners_by_original_template(uri).as_slice() {
            return Some(Route {
                upstream: *only,
                original: uri.to_owned(),
            });
        }
        match self.resource_servers.as_slice() {
            [only] => Some(Route {
                upstream: *only,
                original: uri.to_owned(),
            }),
            _ => None,
        }
    }
}

impl Catalog {
    /// The servers whose rewritten templates, at their own form, fit `uri`.
    fn owners_by_original_template(&self, uri: &str) -> Vec<usize> {
        let mut owners: Vec<usize> = self
            .template_routes
            .iter()
            .filter(|t| {
                t.rewritten_from
                    .as_deref()
                    .is_some_and(|p| !p.is_empty() && uri.starts_with(p))
            })
            .map(|t| t.upstream)
            .collect();
        owners.dedup();
        owners
    }

    /// For a URI more than one server may serve: the forms that name one
    /// of them, to offer the client instead.
    pub fn ambiguous(&self, uri: &str) -> Vec<String> {
        let owners = self.owners_by_original_template(uri);
        if owners.len() < 2 {
            return Vec::new();
        }
        owners
            .iter()
            .filter_map(|index| self.namespace_of(*index))
            .map(|ns| format!("{REWRITE_SCHEME}{ns}/{uri}"))
            .collect()
    }

    fn namespace_of(&self, index: usize) -> Option<&str> {
        self.namespaces
            .iter()
            .find(|(_, i)| **i == index)
            .map(|(ns, _)| ns.as_str())
    }

    /// Whether some URI of upstream `index` is shown rewritten (asked of
    /// every tool result: read from a set made with the catalog).
    pub fn rewrites(&self, index: usize) -> bool {
        self.rewriting.contains(&index)
    }

    /// How a URI that upstream `index` hands out (in a resource link, an
    /// embedded resource) is shown, when it is shown rewritten.
    pub fn rewritten_link(&self, index: usize, uri: &str) -> Option<String> {
        if let Some(exposed) = self.rewritten.get(&(index, uri.to_owned())) {
            return Some(exposed.clone());
        }
        let under_rewritten = self.template_routes.iter().any(|t| {
            t.upstream == index
                && t.rewritten_from
                    .as_deref()
                    .is_some_and(|p| !p.is_empty() && uri.starts_with(p))
        });
        under_rewritten
            .then(|| self.namespace_of(index))
            .flatten()
            .map(|ns| format!("{REWRITE_SCHEME}{ns}/{uri}"))
    }
}

/// The literal start of a URI template, before its first expression.
fn literal_start(template: &str) -> String {
    template.split('{').next().unwrap_or_default().to_owned()
}

/// The namespace used in rewritten URIs: the entry's own, or its name
/// when it has none.
fn rewrite_namespace(source: &Source) -> String {
    if source.namespace.is_empty() {
        crate::names::sanitize_namespace(&source.name)
    } else {
        source.namespace.clone()
    }
}

fn merged_instructions(sources: &[Source]) -> Option<String> {
    let parts: Vec<String> = sources
        .iter()
        .filter_map(|s| {
            let text = s.listing.instructions.as_deref()?.trim();
            (!text.is_empty()).then(|| format!("## {}\n\n{text}", s.name))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

#[cfg(test)]
mod tests;
