//! Running an endpoint on a socket: TCP_NODELAY on every connection,
//! graceful shutdown.

use std::convert::Infallible;
use std::future::Future;
use std::future::IntoFuture;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::ServiceExt;
use axum::extract::Request;
use axum::response::Response;
use axum::serve::ListenerExt;
use futures::future::{BoxFuture, Either, Ready};
use tokio::net::TcpListener;

use crate::endpoint::{Answer, McpEndpoint};

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
    let app = EndpointFirst::new(&endpoint);
    run(listener, endpoint, app, shutdown).await
}

/// [`serve`], with the endpoint's router changed by `wrap` first: layers
/// around it (authorization, say) and routes beside it.
pub async fn serve_with(
    listener: TcpListener,
    endpoint: Arc<McpEndpoint>,
    wrap: impl FnOnce(axum::Router) -> axum::Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = wrap(endpoint.router());
    run(listener, endpoint, app, shutdown).await
}

/// Serves `app`, the endpoint's service, on `listener` until `shutdown`
/// resolves, as [`serve`] says.
async fn run<S>(
    listener: TcpListener,
    endpoint: Arc<McpEndpoint>,
    app: S,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    // Without TCP_NODELAY, a response written in two small pieces waits for
    // the peer's delayed ACK (about 40 ms) on every call.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY: {e}");
        }
    });
    let (began_tx, began_rx) = tokio::sync::oneshot::channel::<()>();
    let closing = Arc::clone(&endpoint);
    let server =
        axum::serve(listener, app.into_make_service()).with_graceful_shutdown(async move {
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

/// The endpoint's own path answered directly (the Host/Origin guard, then
/// the endpoint), and every other path by the endpoint's router: a call to
/// the endpoint skips the router's path lookup and its boxed route. The
/// server clones its service for every request, so everything is behind
/// one `Arc`: one shared count touched per request, not one per part.
#[derive(Clone)]
struct EndpointFirst(Arc<EndpointApp>);

/// What [`EndpointFirst`] shares.
struct EndpointApp {
    endpoint: Arc<McpEndpoint>,
    rest: axum::Router,
}

impl EndpointFirst {
    fn new(endpoint: &Arc<McpEndpoint>) -> Self {
        EndpointFirst(Arc::new(EndpointApp {
            endpoint: Arc::clone(endpoint),
            rest: endpoint.router(),
        }))
    }
}

impl tower::Service<Request> for EndpointFirst {
    type Response = Response;
    type Error = Infallible;
    type Future = Either<
        Either<
            Ready<Result<Response, Infallible>>,
            BoxFuture<'static, Result<Response, Infallible>>,
        >,
        <axum::Router as tower::Service<Request>>::Future,
    >;

    /// Always ready: the endpoint waits for nothing before a call, and
    /// neither does a router.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let app = &*self.0;
        let config = &app.endpoint.config;
        if request.uri().path() != config.path {
            return Either::Right(app.rest.clone().call(request));
        }
        Either::Left(
            config
                .origin_policy
                .guard(request, |request| Answer::respond(&app.endpoint, request)),
        )
    }
}
