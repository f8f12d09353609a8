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

use foldhash::{HashMap, HashMapExt as _};
use std::sync::Arc;

use mcp_schema::header_params::{HeaderParam, header_params};
use serde_json::Value;

use crate::names::expose;
use crate::upstream::{Item, Listing};

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
    /// The tools, as shown.
    pub tools: Vec<Item>,
    /// The prompts, as shown.
    pub prompts: Vec<Item>,
    /// The resources, as shown.
    pub resources: Vec<Item>,
    /// The resource templates, as shown.
    pub templates: Vec<Item>,
    /// Names two upstreams wanted; each entry says which and who won.
    pub collisions: Vec<String>,
    /// Every upstream's instructions under a heading of its name.
    pub instructions: Option<String>,
    tool_routes: HashMap<String, Route>,
    /// The `Mcp-Param-*` headers of tools that mirror arguments into them.
    tool_headers: HashMap<String, Arc<[HeaderParam]>>,
    prompt_routes: HashMap<String, Route>,
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
        let mut catalog = Catalog::default();
        for source in sources {
            catalog
                .namespaces
                .insert(rewrite_namespace(source), source.index);
            if source.listing.capabilities.resources.is_some() {
                catalog.resource_servers.push(source.index);
            }
            let (tools, tool_routes) = (&mut catalog.tools, &mut catalog.tool_routes);
            add_named(
                sources,
                source,
                &source.listing.tools,
                tools,
                tool_routes,
                &mut catalog.collisions,
                "tool",
            );
            let (prompts, prompt_routes) = (&mut catalog.prompts, &mut catalog.prompt_routes);
            add_named(
                sources,
                source,
                &source.listing.prompts,
                prompts,
                prompt_routes,
                &mut catalog.collisions,
                "prompt",
            );
        }
        catalog.add_header_params();
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

    /// Reads which arguments each tool mirrors into headers, so an HTTP
    /// transport can check them as the upstream would.
    fn add_header_params(&mut self) {
        for tool in &self.tools {
            let (Some(Value::String(name)), Some(schema)) =
                (tool.get("name"), tool.get("inputSchema"))
            else {
                continue;
            };
            match header_params(schema) {
                Ok(params) if params.is_empty() => {}
                Ok(params) => {
                    self.tool_headers.insert(name.clone(), params.into());
                }
                Err(e) => {
                    tracing::warn!(tool = %name, "{e}; clients on HTTP will refuse this tool")
                }
            }
        }
    }

    /// The `Mcp-Param-*` headers exposed tool `name` has, if any.
    pub fn header_params(&self, name: &str) -> Option<Arc<[HeaderParam]>> {
        self.tool_headers.get(name).cloned()
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
        self.tool_routes.get(name)
    }

    /// The upstreams whose tools (`Tools`), resources and templates, or
    /// prompts differ between `self` and `other`.
    pub(crate) fn changed_upstreams(
        &self,
        other: &Catalog,
        kind: crate::ListKind,
    ) -> std::collections::BTreeSet<usize> {
        let mine = self.by_upstream(kind);
        let theirs = other.by_upstream(kind);
        mine.keys()
            .chain(theirs.keys())
            .filter(|index| mine.get(index) != theirs.get(index))
            .copied()
            .collect()
    }

    /// The items of `kind`'s lists, by upstream.
    fn by_upstream(&self, kind: crate::ListKind) -> HashMap<usize, Vec<&Item>> {
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
        match kind {
            crate::ListKind::Tools => {
                for item in &self.tools {
                    add(self.tool(&text(item, "name")).map(|r| r.upstream), item);
                }
            }
            crate::ListKind::Prompts => {
                for item in &self.prompts {
                    add(self.prompt(&text(item, "name")).map(|r| r.upstream), item);
                }
            }
            crate::ListKind::Resources => {
                for item in &self.resources {
                    let uri = text(item, "uri");
                    add(self.resource_routes.get(&uri).map(|r| r.upstream), item);
                }
                for item in &self.templates {
                    add(self.template(&text(item, "uriTemplate")), item);
                }
            }
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
        self.prompt_routes.get(name)
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

/// Adds `source`'s `items` under their exposed names; one whose name an
/// earlier server of `sources` took is left out and told in `collisions`.
fn add_named(
    sources: &[Source],
    source: &Source,
    items: &[Item],
    shown: &mut Vec<Item>,
    routes: &mut HashMap<String, Route>,
    collisions: &mut Vec<String>,
    kind: &str,
) {
    for item in items {
        let Some(name) = item.get("name").and_then(Value::as_str) else {
            continue;
        };
        let exposed = expose(&source.namespace, name);
        if let Some(taken) = routes.get(&exposed) {
            let owner = sources
                .iter()
                .find(|s| s.index == taken.upstream)
                .map_or("?", |s| s.name.as_str());
            collisions.push(format!(
                "{kind} {exposed:?}: {name:?} of server {:?} is left out, the name is taken by \
                 {:?} of server {owner:?}; give one of them another namespace",
                source.name, taken.original
            ));
            continue;
        }
        let mut item = item.clone();
        item.insert("name".into(), Value::String(exposed.clone()));
        shown.push(item);
        routes.insert(
            exposed,
            Route {
                upstream: source.index,
                original: name.to_owned(),
            },
        );
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
mod tests {
    use super::*;
    use serde_json::json;

    fn item(value: Value) -> Item {
        value.as_object().unwrap().clone()
    }

    fn source(index: usize, name: &str, ns: &str, listing: Listing) -> Source {
        Source {
            index,
            name: name.into(),
            namespace: ns.into(),
            listing: Arc::new(listing),
        }
    }

    fn names(items: &[Item]) -> Vec<&str> {
        items.iter().map(|i| i["name"].as_str().unwrap()).collect()
    }

    #[test]
    fn tools_are_prefixed_and_keep_everything_else() {
        let a = Listing {
            tools: vec![
                item(
                    json!({"name": "echo", "inputSchema": {"type": "object"}, "_meta": {"k": 1}, "annotations": {"readOnlyHint": true}, "x-unknown": [1]}),
                ),
                item(json!({"name": "git.status", "inputSchema": {"type": "object"}})),
            ],
            ..Default::default()
        };
        let b = Listing {
            tools: vec![item(
                json!({"name": "echo", "inputSchema": {"type": "object"}}),
            )],
            ..Default::default()
        };
        let catalog = Catalog::build(&[source(0, "a", "a", a), source(1, "b", "b", b)]);
        let shown = names(&catalog.tools);
        assert_eq!(shown[0], "a__echo");
        assert!(shown[1].starts_with("a__git_status_"));
        assert_eq!(shown[2], "b__echo");
        assert_eq!(catalog.tools[0]["_meta"], json!({"k": 1}));
        assert_eq!(catalog.tools[0]["x-unknown"], json!([1]));
        assert_eq!(
            catalog.tool("b__echo"),
            Some(&Route {
                upstream: 1,
                original: "echo".into()
            })
        );
        assert_eq!(catalog.tool(shown[1]).unwrap().original, "git.status");
        assert!(catalog.collisions.is_empty());
    }

    #[test]
    fn a_collision_is_reported_and_the_first_server_keeps_the_name() {
        let listing = || Listing {
            prompts: vec![item(json!({"name": "p"}))],
            tools: vec![item(json!({"name": "t", "inputSchema": {}}))],
            ..Default::default()
        };
        let catalog = Catalog::build(&[
            source(0, "one", "", listing()),
            source(1, "two", "", listing()),
        ]);
        assert_eq!(names(&catalog.tools), ["t"]);
        assert_eq!(names(&catalog.prompts), ["p"]);
        assert_eq!(catalog.tool("t").unwrap().upstream, 0);
        assert_eq!(catalog.collisions.len(), 2, "{:?}", catalog.collisions);
        let told = &catalog.collisions[0];
        assert!(
            told.contains("of server \"two\" is left out")
                && told.contains("of server \"one\";")
                && told.contains("namespace"),
            "{told}"
        );
        assert!(!told.contains("index"), "{told}");
    }

    #[test]
    fn resources_pass_through_unless_two_servers_list_them() {
        let a = Listing {
            resources: vec![
                item(json!({"uri": "file:///same", "name": "same"})),
                item(json!({"uri": "memo://only-a", "name": "a"})),
            ],
            templates: vec![item(json!({"uriTemplate": "memo://a/{id}", "name": "t"}))],
            capabilities: serde_json::from_value(json!({"resources": {}})).unwrap(),
            ..Default::default()
        };
        let b = Listing {
            resources: vec![item(json!({"uri": "file:///same", "name": "same"}))],
            capabilities: serde_json::from_value(json!({"resources": {}})).unwrap(),
            ..Default::default()
        };
        let catalog = Catalog::build(&[source(0, "a", "fs", a), source(1, "b", "", b)]);
        let uris: Vec<_> = catalog
            .resources
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(
            uris,
            [
                "mcp-host:fs/file:///same",
                "memo://only-a",
                "mcp-host:b/file:///same"
            ]
        );
        assert_eq!(
            catalog.resource("mcp-host:b/file:///same"),
            Some(Route {
                upstream: 1,
                original: "file:///same".into()
            })
        );
        assert_eq!(catalog.resource("memo://only-a").unwrap().upstream, 0);
        // Not listed, but under a's template.
        assert_eq!(
            catalog.resource("memo://a/42"),
            Some(Route {
                upstream: 0,
                original: "memo://a/42".into()
            })
        );
        // Two servers with resources, no template: nobody to guess.
        assert_eq!(catalog.resource("other://x"), None);
        assert!(catalog.rewrites(0) && catalog.rewrites(1));
        assert_eq!(
            catalog.rewritten_link(1, "file:///same").as_deref(),
            Some("mcp-host:b/file:///same")
        );
        assert_eq!(catalog.rewritten_link(0, "memo://only-a"), None);
    }

    #[test]
    fn a_uri_under_a_template_two_servers_have_is_ambiguous() {
        let listing = || Listing {
            templates: vec![item(
                json!({"uriTemplate": "demo://blob/{id}", "name": "t"}),
            )],
            capabilities: serde_json::from_value(json!({"resources": {}})).unwrap(),
            ..Default::default()
        };
        let catalog = Catalog::build(&[
            source(0, "a", "a", listing()),
            source(1, "b", "b", listing()),
        ]);
        assert_eq!(catalog.resource("demo://blob/1"), None);
        assert_eq!(
            catalog.ambiguous("demo://blob/1"),
            ["mcp-host:a/demo://blob/1", "mcp-host:b/demo://blob/1"]
        );
        assert_eq!(
            catalog.resource("mcp-host:b/demo://blob/1"),
            Some(Route {
                upstream: 1,
                original: "demo://blob/1".into()
            })
        );
        assert_eq!(
            catalog.rewritten_link(0, "demo://blob/7").as_deref(),
            Some("mcp-host:a/demo://blob/7")
        );
        assert!(!catalog.rewrites(2));
    }

    #[test]
    fn instructions_are_merged_under_headings() {
        let with = |text: &str| Listing {
            instructions: Some(text.into()),
            ..Default::default()
        };
        let catalog = Catalog::build(&[
            source(0, "alpha", "alpha", with("Use A.")),
            source(1, "beta", "beta", Listing::default()),
            source(2, "gamma", "gamma", with("  Use G.\n")),
        ]);
        assert_eq!(
            catalog.instructions.as_deref(),
            Some("## alpha\n\nUse A.\n\n## gamma\n\nUse G.")
        );
    }
}
