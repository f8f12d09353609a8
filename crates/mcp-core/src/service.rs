//! What a role plugs into the engine: a handler for requests and
//! notifications the engine does not answer itself.

use std::borrow::Cow;
use std::sync::Arc;

use mcp_schema::ErrorObject;
use mcp_schema::header_params::HeaderParam;
use mcp_schema::jsonrpc::Notification;
use serde_json::value::RawValue;

use crate::context::RequestContext;
use crate::future::BoxFuture;
use crate::peer::Peer;
use crate::request_meta::members_after;

/// The outcome of a request handler: raw result JSON or a JSON-RPC error.
pub type HandlerResult = Result<Box<RawValue>, ErrorObject>;

/// One incoming request, with its params still raw.
#[derive(Debug)]
pub struct IncomingRequest {
    /// The method name.
    pub method: String,
    /// The params, untouched.
    pub params: Option<Box<RawValue>>,
    /// Where a `_meta` member that opens the params ends, when the engine
    /// found it there.
    pub(crate) leading_meta_end: Option<usize>,
}

impl IncomingRequest {
    /// A request with these params.
    pub fn new(method: impl Into<String>, params: Option<Box<RawValue>>) -> Self {
        IncomingRequest {
            method: method.into(),
            params,
            leading_meta_end: None,
        }
    }

    /// The params' text for a reader that ignores `_meta`, which the engine
    /// has already read into the request's context: without that member
    /// when it opens the params (as clients of the stateless era write
    /// it, with every request), so it is not read again; the params as
    /// they are otherwise.
    pub fn params_past_meta(&self) -> Option<Cow<'_, str>> {
        let text = self.params.as_deref()?.get();
        self.leading_meta_end
            .and_then(|end| members_after(text, end))
            .or(Some(Cow::Borrowed(text)))
    }
}

/// The role's business logic, called by the session engine.
///
/// The engine itself answers `initialize`, `ping`, `server/discover`,
/// cancellation and progress, and enforces lifecycle and capability rules
/// before a request reaches [`Service::handle_request`].
pub trait Service: Send + Sync + 'static {
    /// Handles one request. Runs concurrently with others; dropped (and not
    /// answered) if the peer cancels it.
    fn handle_request(
        &self,
        request: IncomingRequest,
        ctx: RequestContext,
    ) -> BoxFuture<'static, HandlerResult>;

    /// Handles one notification the engine does not consume itself.
    fn handle_notification(
        &self,
        notification: Notification,
        peer: Peer,
    ) -> BoxFuture<'static, ()> {
        let _ = (notification, peer);
        Box::pin(async {})
    }

    /// A legacy session became ready (`notifications/initialized` arrived).
    fn session_ready(&self, peer: &Peer) {
        let _ = peer;
    }

    /// The session ended.
    fn session_closed(&self, peer: &Peer) {
        let _ = peer;
    }

    /// The arguments of tool `name` that clients mirror into
    /// `Mcp-Param-*` headers (`x-mcp-header`), for transports that check
    /// them against the body. `None`: no such tool, or nothing mirrored.
    fn tool_header_params(&self, name: &str) -> Option<Arc<[HeaderParam]>> {
        let _ = name;
        None
    }

    /// The scopes a caller must hold to call tool `name`, so that a
    /// transport can refuse the call (an HTTP step-up challenge) before
    /// dispatch. `None`: no such tool, or it needs no scope.
    fn tool_required_scopes(&self, name: &str) -> Option<Arc<[String]>> {
        let _ = name;
        None
    }
}
