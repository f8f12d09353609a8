//! Running an endpoint on a socket: TCP_NODELAY on every connection,
//! graceful shutdown.

use std::future::Future;
use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use tokio::net::TcpListener;

use crate::endpoint::McpEndpoint;

/// How long a shutdown waits for requests in flight.
pub const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(10);

/// Serves `endpoint` on `listener` until `shutdown` resolves; then stops
/// accepting, ends open SSE streams (clients may resume elsewhere), lets
/// requests in flight finish for up to [`SHUTDOWN_DEADLINE`], and stops the
/// sessions.
pub async fn serve(
    listener: TcpListener,
    endpoint: Arc<McpEndpoint>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, endpoint, |router| router, shutdown).await
}

/// [`serve`], with the endpoint's router changed by `wrap` first: layers
/// around it (authorization, say) and routes beside it.
pub async fn serve_with(
    listener: TcpListener,
    endpoint: Arc<McpEndpoint>,
    wrap: impl FnOnce(axum::Router) -> axum::Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Without TCP_NODELAY, a response written in two small pieces waits for
    // the peer's delayed ACK (about 40 ms) on every call.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY: {e}");
        }
    });
    let app = wrap(endpoint.router());
    let (began_tx, began_rx) = tokio::sync::oneshot::channel::<()>();
    let closing = Arc::clone(&endpoint);
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        shutdown.await;
        closing.shutdown();
        let _ = began_tx.send(());
    });
    let deadline = async {
        if began_rx.await.is_ok() {
            tokio::time::sleep(SHUTDOWN_DEADLINE).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    let result = tokio::select! {
        result = server.into_future() => result,
        _ = deadline => {
            tracing::warn!("requests still in flight after the shutdown deadline; stopping anyway");
            Ok(())
        }
    };
    endpoint.close_sessions();
    result
}
