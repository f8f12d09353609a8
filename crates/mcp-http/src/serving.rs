//! What the endpoints beside Streamable HTTP (HTTP+SSE, WebSocket) need
//! of the endpoint they are mounted on: the service, the engine's and
//! the HTTP settings, and the shutdown signal. [`crate::McpEndpoint`]
//! gives them; each adds its own sessions (see
//! [`crate::legacy_sse::LegacyHost`] and [`crate::ws::WebSocketHost`]).

use std::sync::Arc;

use mcp_core::{Service, SessionConfig};
use tokio_util::sync::CancellationToken;

use crate::config::HttpConfig;

/// An endpoint that serves MCP sessions.
pub(crate) trait Serving: Send + Sync + 'static {
    /// What answers the sessions' requests.
    fn service(&self) -> &Arc<dyn Service>;
    /// The engine's settings of each session.
    fn session_config(&self) -> &SessionConfig;
    /// The HTTP settings.
    fn config(&self) -> &HttpConfig;
    /// Cancelled when the endpoint shuts down.
    fn shutdown_token(&self) -> CancellationToken;
}
