//! Hooks for an authorization layer wrapped around the endpoint's router
//! (such as `mcp-auth`'s bearer-token layer). The endpoint knows nothing
//! of tokens; a layer talks to it through two request extensions:
//!
//! - [`MessageExtensions`]: values handed to the engine with every message
//!   the HTTP request carries, which handlers read through
//!   [`mcp_core::RequestContext::extensions`]. On a WebSocket upgrade they
//!   apply to every message of the connection.
//! - [`ToolScopeGuard`]: asked before dispatch whether the caller may call
//!   a tool that declares required scopes
//!   ([`mcp_core::Service::tool_required_scopes`]); when it refuses, its
//!   response (a `403` step-up challenge, say) is the HTTP answer.

use std::sync::Arc;

use axum::response::Response;
use mcp_core::{Extensions, Service};
use mcp_schema::jsonrpc::{Frame, Message, Request};
use mcp_schema::methods;
use serde::Deserialize;

/// Values to attach to the messages of an HTTP request (put it into the
/// request's extensions in a layer).
#[derive(Clone, Debug, Default)]
pub struct MessageExtensions(pub Arc<Extensions>);

impl MessageExtensions {
    /// Extensions holding `value`.
    pub fn with<T: std::any::Any + Send + Sync>(value: T) -> Self {
        let extensions = Extensions::default();
        extensions.insert(value);
        MessageExtensions(Arc::new(extensions))
    }
}

/// Decides whether the caller of an HTTP request may call a tool that
/// needs scopes.
pub trait ToolScopeCheck: Send + Sync + 'static {
    /// `None` lets the call through; `Some(response)` refuses it with that
    /// response. `required` is what tool `tool` declares (never empty).
    fn check(&self, tool: &str, required: &[String]) -> Option<Response>;
}

/// The [`ToolScopeCheck`] of one HTTP request (put it into the request's
/// extensions in a layer).
#[derive(Clone)]
pub struct ToolScopeGuard(pub Arc<dyn ToolScopeCheck>);

impl std::fmt::Debug for ToolScopeGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToolScopeGuard { .. }")
    }
}

/// What the guard says of `request` when it calls a tool that declares
/// scopes: the tool, its scopes and the guard's refusal; `None` lets it
/// through. Only `tools/call` params are read.
fn refused_tool_call(
    request: &Request,
    service: &dyn Service,
    guard: &ToolScopeGuard,
) -> Option<(String, Arc<[String]>, Response)> {
    if request.method != methods::TOOLS_CALL {
        return None;
    }
    #[derive(Deserialize)]
    struct NameProbe {
        name: String,
    }
    let name = serde_json::from_str::<NameProbe>(request.params.as_deref()?.get())
        .ok()?
        .name;
    let required = service.tool_required_scopes(&name)?;
    if required.is_empty() {
        return None;
    }
    let refusal = guard.0.check(&name, &required)?;
    tracing::debug!(tool = %name, "tool call refused: missing scopes");
    Some((name, required, refusal))
}

/// A message-level refusal, for transports without HTTP statuses
/// (WebSocket): the JSON-RPC error answering a `tools/call` whose tool
/// needs scopes the guard does not grant; `None` lets the message through.
pub(crate) fn refuse_tool_call_message(
    text: &str,
    service: &dyn Service,
    guard: &ToolScopeGuard,
) -> Option<String> {
    if !text.contains("tools/call") {
        return None;
    }
    let Ok(Message::Request(request)) = Message::parse(text) else {
        return None;
    };
    let (name, required, _) = refused_tool_call(&request, service, guard)?;
    let error = mcp_schema::ErrorObject::invalid_request(format!(
        "tool {name} needs the scopes {}; authorize with them and connect again",
        required.join(" ")
    ))
    .with_data(serde_json::json!({ "requiredScopes": &*required }));
    Some(mcp_schema::jsonrpc::write_error(Some(&request.id), &error))
}

/// The refusal for the first `tools/call` in `frame` whose tool needs
/// scopes the guard does not grant.
pub(crate) fn check_tool_scopes(
    frame: &Frame,
    service: &dyn Service,
    guard: &ToolScopeGuard,
) -> Option<Response> {
    let check = |request: &Request| {
        refused_tool_call(request, service, guard).map(|(_, _, refusal)| refusal)
    };
    match frame {
        Frame::Single(Message::Request(request)) => check(request),
        Frame::Single(_) => None,
        Frame::Batch(items) => items.iter().find_map(|item| match item {
            Ok(Message::Request(request)) => check(request),
            _ => None,
        }),
    }
}
