//! What a role plugs into the engine: a handler for requests and
//! notifications the engine does not answer itself.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcp_schema::ErrorObject;
use mcp_schema::header_params::HeaderParam;
use mcp_schema::jsonrpc::Notification;
use serde_json::value::RawValue;

use crate::context::RequestContext;
use crate::peer::Peer;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The outcome of a request handler: raw result JSON or a JSON-RPC error.
pub type HandlerResult = Result<Box<RawValue>, ErrorObject>;

/// One incoming request, with its params still raw.
#[derive(Debug)]
pub struct IncomingRequest {
    /// The method name.
    pub method: String,
    /// The params, untouched.
    pub params: Option<Box<RawValue>>,
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
