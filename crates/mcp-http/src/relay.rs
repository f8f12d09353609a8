//! Responses to server-to-client requests that reach another instance:
//! where several instances serve the same legacy sessions behind a load
//! balancer without affinity, a client may POST its answer to an
//! instance that did not send the request. [`ResponseRelay`] hands it to
//! the one that did (Redis implements it). It also tells the other
//! instances when a session's settings changed, so that their copies of
//! the session follow.

use mcp_core::BoxFuture;
use mcp_schema::jsonrpc::RequestId;

/// Where an instance records the requests it sends its sessions' clients,
/// and hands on the answers it receives to requests it did not send.
pub trait ResponseRelay: Send + Sync + 'static {
    /// Records that this instance sent request `id` to `session`'s client
    /// (before the request goes out, so an answer can be routed back).
    fn sent(&self, session: &str, id: &RequestId) -> BoxFuture<'_, ()>;

    /// Hands `message`, the client's answer to request `id` of `session`,
    /// to the instance that sent the request; whether one took it (if not,
    /// this instance handles the answer as it would any other).
    fn forward(&self, session: &str, id: &RequestId, message: String) -> BoxFuture<'_, bool>;

    /// Tells the other instances that `session`'s stored settings (log
    /// level, subscriptions) changed here: those holding the session pass
    /// it to [`crate::McpEndpoint::refresh_session`].
    fn session_changed(&self, session: &str) -> BoxFuture<'_, ()> {
        let _ = session;
        Box::pin(async {})
    }

    /// This instance's id among those sharing the sessions, where the
    /// relay knows one: the streams of requests running here name it, so
    /// that a client resuming one on another instance after this one
    /// died learns its requests' fate. `None` (the default): not noted.
    fn instance(&self) -> Option<&str> {
        None
    }

    /// Whether instance `instance` still runs (the default, which cannot
    /// tell, says it does).
    fn alive(&self, instance: &str) -> BoxFuture<'_, bool> {
        let _ = instance;
        Box::pin(async { true })
    }
}
