//! What a request reaches, resolved from the catalog once, when it
//! arrives: the stages after it (policy, audit, forwarding) all read the
//! same [`Target`].

use mcp_core::RequestContext;
use mcp_schema::{ErrorObject, methods};
use serde_json::{Value, json};

use crate::catalog::Route;
use crate::consent::{GrantKey, Pinned, definition_hash};
use crate::host::Host;
use crate::params::Params;
use crate::policy::{Hints, Kind};

/// The tool, prompt or resource a request names, and where it is served.
#[derive(Debug)]
pub(super) struct Target {
    /// What kind of item.
    pub(super) kind: Kind,
    /// Its name or URI as the client gave it.
    pub(super) asked: String,
    /// Its upstream, and its name or URI there.
    pub(super) route: Route,
    /// The upstream's name in the config.
    pub(super) server: String,
}

impl Target {
    /// The target of a request of `method` with `params`: `None` for a
    /// method that names none, an error for a name or URI the catalog
    /// does not have.
    pub(super) fn of(
        host: &Host,
        method: &str,
        params: &Params,
        ctx: &RequestContext,
    ) -> Option<Result<Target, ErrorObject>> {
        let (kind, key) = match method {
            methods::TOOLS_CALL => (Kind::Tool, "name"),
            methods::PROMPTS_GET => (Kind::Prompt, "name"),
            methods::RESOURCES_READ
            | methods::RESOURCES_SUBSCRIBE
            | methods::RESOURCES_UNSUBSCRIBE => (Kind::Resource, "uri"),
            _ => return None,
        };
        let Some(asked) = params.str(key) else {
            let error = ErrorObject::invalid_params(format!("\"{key}\" must be a string"));
            return Some(Err(error));
        };
        let asked = asked.into_owned();
        let route = match kind {
            Kind::Tool => by_name(host, &asked, "tool", crate::Catalog::tool),
            Kind::Prompt => by_name(host, &asked, "prompt", crate::Catalog::prompt),
            Kind::Resource => by_uri(host, &asked, ctx),
            Kind::Server => return None,
        };
        Some(route.map(|route| Target {
            kind,
            server: host.upstream_name(route.upstream).unwrap_or_default(),
            asked,
            route,
        }))
    }
}

/// The definition a target's server lists now, as the guard reads it.
pub(super) struct Definition {
    /// What grants and pins are bound to: the server's identity, the item
    /// and its definition's hash.
    pub(super) key: GrantKey,
    /// The definition, as listed (pretty JSON, as pins keep it).
    pub(super) text: String,
    /// Its description.
    pub(super) description: Option<String>,
    /// Its annotations.
    pub(super) annotations: Option<Value>,
    /// What changed since it was pinned, while it is not approved.
    pub(super) changed: Option<String>,
}

impl Target {
    /// The definition its server lists now; `None` while the server is
    /// not running.
    pub(super) fn definition(&self, host: &Host) -> Option<Definition> {
        let upstream = host.upstream(self.route.upstream).ok()?;
        let listing = upstream.listing();
        let (items, key) = match self.kind {
            Kind::Tool => (&listing.tools, "name"),
            Kind::Prompt => (&listing.prompts, "name"),
            Kind::Resource => (&listing.resources, "uri"),
            // A request never targets a server itself.
            Kind::Server => return None,
        };
        let name = &self.route.original;
        let item = items
            .iter()
            .find(|item| item.get(key).and_then(Value::as_str) == Some(name));
        let key = GrantKey {
            server_identity: upstream.config.identity(),
            kind: self.kind.as_str(),
            name: name.clone(),
            definition: item.map(definition_hash).unwrap_or_default(),
        };
        let text = item
            .and_then(|item| serde_json::to_string_pretty(item).ok())
            .unwrap_or_default();
        // Approved since it was listed (`mcp host approve`, or a person's
        // "always"): the pin says so.
        let changed = listing
            .changed(self.kind.as_str(), name)
            .filter(|_| {
                host.pins()
                    .is_none_or(|pins| pins.check_pin(&self.server, &key, &text) != Pinned::Same)
            })
            .map(|changed| changed.diff.clone());
        Some(Definition {
            description: item
                .and_then(|i| i.get("description"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            annotations: item.and_then(|i| i.get("annotations")).cloned(),
            key,
            text,
            changed,
        })
    }

    /// A tool's annotations as the policy believes them (the server's
    /// claims where it is trusted); `None` for what is not a tool.
    pub(super) fn hints(&self, host: &Host) -> Option<Hints<bool>> {
        if self.kind != Kind::Tool {
            return None;
        }
        let upstream = host.upstream(self.route.upstream).ok()?;
        let listing = upstream.listing();
        let annotations = listing
            .tools
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(&self.route.original))
            .and_then(|t| t.get("annotations"));
        Some(Hints::believed(annotations, upstream.config.trusted))
    }

    /// Whether its definition changed since it was pinned, and is not
    /// approved yet (only where definitions are pinned).
    pub(super) fn changed(&self, host: &Host) -> bool {
        host.pins().is_some()
            && host.upstream(self.route.upstream).is_ok_and(|u| {
                u.listing()
                    .changed(self.kind.as_str(), &self.route.original)
                    .is_some()
            })
            && self.definition(host).is_some_and(|d| d.changed.is_some())
    }
}

/// The route of the tool or prompt `name`: `find` is the catalog's lookup
/// of that kind.
fn by_name(
    host: &Host,
    name: &str,
    kind: &str,
    find: impl for<'c> Fn(&'c crate::Catalog, &str) -> Option<&'c Route>,
) -> Result<Route, ErrorObject> {
    let catalog = host.catalog();
    find(&catalog, name).cloned().ok_or_else(|| {
        // A name of a server that is down says so, rather than that the
        // name is unknown.
        host.down_server_of(name)
            .unwrap_or_else(|| ErrorObject::invalid_params(format!("unknown {kind}: {name}")))
    })
}

/// The route of resource `uri`.
fn by_uri(host: &Host, uri: &str, ctx: &RequestContext) -> Result<Route, ErrorObject> {
    let catalog = host.catalog();
    catalog.resource(uri).ok_or_else(|| {
        let candidates = catalog.ambiguous(uri);
        if candidates.is_empty() {
            return ErrorObject::new(
                ctx.revision.resource_not_found_code(),
                format!("Resource not found: {uri}"),
            )
            .with_data(json!({ "uri": uri }));
        }
        ErrorObject::new(
            ctx.revision.resource_not_found_code(),
            format!(
                "Resource not found: {uri} is served by more than one server; read one of {}",
                candidates.join(", ")
            ),
        )
        .with_data(json!({ "uri": uri, "candidates": candidates }))
    })
}
