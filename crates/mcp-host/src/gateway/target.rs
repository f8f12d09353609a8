//! What a request reaches, resolved from the catalog once, when it
//! arrives: the stages after it (policy, audit, forwarding) all read the
//! same [`Target`].

use mcp_core::RequestContext;
use mcp_schema::{ErrorObject, methods};
use serde_json::json;

use crate::catalog::Route;
use crate::host::Host;
use crate::params::Params;
use crate::policy::Kind;

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
        };
        Some(route.map(|route| Target {
            kind,
            server: host.upstream_name(route.upstream).unwrap_or_default(),
            asked,
            route,
        }))
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
