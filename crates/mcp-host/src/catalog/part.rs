//! One upstream's share of the catalog: its tools and prompts under their
//! exposed names, with their routes and header parameters. A part is made
//! once per listing and shared by every catalog built while that listing
//! stands, so a change of one server's lists costs that server's items.

use std::sync::Arc;

use foldhash::{HashMap, HashMapExt as _};
use mcp_schema::header_params::{HeaderParam, header_params};
use serde_json::Value;

use super::{Route, Source};
use crate::names::{SEPARATOR, expose};
use crate::upstream::{Item, Listing};

/// One upstream's tools and prompts as the catalog shows them.
#[derive(Debug)]
pub(super) struct Part {
    /// The upstream's index in the host.
    pub(super) index: usize,
    /// The config entry's name.
    pub(super) name: String,
    /// Its namespace (`""`: unprefixed).
    pub(super) namespace: String,
    /// The listing the part was made from.
    pub(super) listing: Arc<Listing>,
    /// Its tools.
    pub(super) tools: Named,
    /// Its prompts.
    pub(super) prompts: Named,
    /// Its own name clashes: two of its items that map to one exposed name.
    pub(super) collisions: Vec<String>,
    /// The `Mcp-Param-*` headers of tools that mirror arguments into them.
    tool_headers: HashMap<String, Arc<[HeaderParam]>>,
}

/// Tools or prompts of one part: the items, renamed, and their routes.
#[derive(Debug, Default)]
pub(super) struct Named {
    /// The items as shown.
    pub(super) items: Vec<Item>,
    /// Exposed name to the item's position in `items` and its route.
    routes: HashMap<String, (usize, Route)>,
}

impl Named {
    /// The position and route of exposed name `name`.
    pub(super) fn get(&self, name: &str) -> Option<&(usize, Route)> {
        self.routes.get(name)
    }

    /// The exposed names and their positions.
    pub(super) fn names(&self) -> impl Iterator<Item = (&str, usize)> {
        self.routes
            .iter()
            .map(|(name, (at, _))| (name.as_str(), *at))
    }
}

/// Tools or prompts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NamedKind {
    Tools,
    Prompts,
}

impl NamedKind {
    fn word(self) -> &'static str {
        match self {
            NamedKind::Tools => "tool",
            NamedKind::Prompts => "prompt",
        }
    }
}

impl Part {
    /// The part of `source`.
    pub(super) fn new(source: &Source) -> Part {
        let mut collisions = Vec::new();
        let tools = named(
            source,
            &source.listing.tools,
            NamedKind::Tools,
            &mut collisions,
        );
        let prompts = named(
            source,
            &source.listing.prompts,
            NamedKind::Prompts,
            &mut collisions,
        );
        let tool_headers = tools_header_params(&tools.items);
        Part {
            index: source.index,
            name: source.name.clone(),
            namespace: source.namespace.clone(),
            listing: Arc::clone(&source.listing),
            tools,
            prompts,
            collisions,
            tool_headers,
        }
    }

    /// Whether the part shows `source` as it is now.
    pub(super) fn is_of(&self, source: &Source) -> bool {
        self.index == source.index
            && Arc::ptr_eq(&self.listing, &source.listing)
            && self.name == source.name
            && self.namespace == source.namespace
    }

    /// Its tools or prompts.
    pub(super) fn named(&self, kind: NamedKind) -> &Named {
        match kind {
            NamedKind::Tools => &self.tools,
            NamedKind::Prompts => &self.prompts,
        }
    }

    /// The namespace every exposed name of this part starts with (then
    /// the separator), if there is one: a namespace that is empty, or
    /// that a name could not be split back into, has none.
    pub(super) fn prefix(&self) -> Option<&str> {
        let ns = self.namespace.as_str();
        let clean = !ns.is_empty() && !ns.contains(SEPARATOR) && !ns.ends_with('_');
        clean.then_some(ns)
    }

    /// The `Mcp-Param-*` headers of its exposed tool `name`, if any.
    pub(super) fn header_params(&self, name: &str) -> Option<Arc<[HeaderParam]>> {
        self.tool_headers.get(name).cloned()
    }
}

/// The namespace an exposed name would have, if it has one.
pub(super) fn prefix_of(name: &str) -> Option<&str> {
    // A byte scan: a substring searcher costs more to set up than a name
    // of at most 64 bytes takes to read.
    let separator = SEPARATOR.as_bytes();
    let at = name
        .as_bytes()
        .windows(separator.len())
        .position(|w| w == separator)?;
    Some(&name[..at])
}

/// `items` under their exposed names; an item whose exposed name an
/// earlier item of the same server took is left out and told in
/// `collisions`.
fn named(source: &Source, items: &[Item], kind: NamedKind, collisions: &mut Vec<String>) -> Named {
    let mut named = Named {
        items: Vec::with_capacity(items.len()),
        routes: HashMap::with_capacity(items.len()),
    };
    for item in items {
        let Some(name) = item.get("name").and_then(Value::as_str) else {
            continue;
        };
        let exposed = expose(&source.namespace, name);
        if let Some((_, taken)) = named.routes.get(&exposed) {
            collisions.push(collision(
                kind,
                &exposed,
                name,
                &source.name,
                &taken.original,
                &source.name,
            ));
            continue;
        }
        let mut item = item.clone();
        item.insert("name".into(), Value::String(exposed.clone()));
        let route = Route {
            upstream: source.index,
            original: name.to_owned(),
        };
        named.routes.insert(exposed, (named.items.len(), route));
        named.items.push(item);
    }
    named
}

/// What a left-out item is told as.
pub(super) fn collision(
    kind: NamedKind,
    exposed: &str,
    name: &str,
    server: &str,
    taken: &str,
    owner: &str,
) -> String {
    format!(
        "{} {exposed:?}: {name:?} of server {server:?} is left out, the name is taken by \
         {taken:?} of server {owner:?}; give one of them another namespace",
        kind.word()
    )
}

/// Which arguments each tool mirrors into headers, so an HTTP transport
/// can check them as the upstream would.
fn tools_header_params(tools: &[Item]) -> HashMap<String, Arc<[HeaderParam]>> {
    let mut found = HashMap::new();
    for tool in tools {
        let (Some(Value::String(name)), Some(schema)) = (tool.get("name"), tool.get("inputSchema"))
        else {
            continue;
        };
        match header_params(schema) {
            Ok(params) if params.is_empty() => {}
            Ok(params) => {
                found.insert(name.clone(), params.into());
            }
            Err(e) => tracing::warn!(tool = %name, "{e}; clients on HTTP will refuse this tool"),
        }
    }
    found
}
