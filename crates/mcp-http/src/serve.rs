//! Running an endpoint on a socket: TCP_NODELAY on every connection,
//! graceful shutdown.

use std::future::Future;
use std::sync::Arc;

use axum::serve::ListenerExt;
use tokio::net::TcpListener;

use crate::endpoint::McpEndpoint;

/// Serves `endpoint` on `listener` until `shutdown` resolves; then stops
/// accepting, closes open streams (clients may resume elsewhere) and lets
/// requests in flight finish.
pub async fn serve(
    listener: TcpListener,
    endpoint: Arc<McpEndpoint>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Without TCP_NODELAY, a response written in two small pieces waits for
    // the peer's delayed ACK (about 40 ms) on every call.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY: {e}");
        }
    });
    let app = endpoint.router();
    let closing = Arc::clone(&endpoint);
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            closing.shutdown().await;
        })
        .await
}
