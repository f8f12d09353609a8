//! Running an endpoint on a socket: TCP_NODELAY on every connection,
//! connections bounded in number and in the time their clients take,
//! graceful shutdown.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use axum::extract::Request;
use axum::response::Response;
use futures::future::{BoxFuture, Either, Ready};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

use crate::endpoint::{Answer, McpEndpoint};
use mcp_core::sync::MutexExt as _;

/// The most a connection buffers on its way out, beyond the socket's own
/// buffer and its stream's queue, and the most its request headers take.
const CONNECTION_BUFFER: usize = 64 * 1024;

/// How long a shutdown waits for requests in flight.
pub const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(10);

/// Serves `endpoint` on `listener` until `shutdown` resolves; then stops
/// accepting, ends open SSE streams (clients may resume elsewhere), lets
/// requests in flight finish for up to `SHUTDOWN_DEADLINE`, and stops the
/// sessions.
pub async fn serve(
    listener: TcpListener,
    endpoint: Arc<McpEndpoint>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = EndpointFirst::new(&endpoint);
    run(listener, endpoint, app, false, shutdown).await
}

/// [`serve`], with the endpoint's router changed by `wrap` first: layers
/// around it (authorization, say) and routes beside it. Each request
/// carries its client's address as axum's `ConnectInfo<SocketAddr>`.
pub async fn serve_with(
    listener: TcpListener,
    endpoint: Arc<McpEndpoint>,
    wrap: impl FnOnce(axum::Router) -> axum::Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = wrap(endpoint.router());
    run(listener, endpoint, app, true, shutdown).await
}

/// Serves `app`, the endpoint's service, on `listener` until `shutdown`
/// resolves, as [`serve`] says. Each connection is bounded by the
/// endpoint's limits: the time its client has to send a request's headers
/// (or, idle, its next request), the connections open at once, in all
/// and from one address. With `connect_info`, each request carries its
/// client's address as `ConnectInfo<SocketAddr>`.
async fn run<S>(
    listener: TcpListener,
    endpoint: Arc<McpEndpoint>,
    app: S,
    connect_info: bool,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    let config = &endpoint.config;
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout)
        // What a connection buffers on its way out (and for a request's
        // headers): with the stream's own queue, this bounds what a
        // reader that stops reading costs (hyper's default is ~400 KiB).
        .max_buf_size(CONNECTION_BUFFER);
    let admission = Arc::new(Admission::new(
        config.max_connections,
        config.max_connections_per_ip,
    ));
    let stop = tokio_util::sync::CancellationToken::new();
    let connections = tokio_util::task::TaskTracker::new();
    tokio::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(admitted) = admission.admit(peer.ip()) else {
            tracing::debug!(%peer, "connection refused: too many open");
            continue;
        };
        // Without TCP_NODELAY, a response written in two small pieces
        // waits for the peer's delayed ACK (about 40 ms) on every call.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY: {e}");
        }
        let app = app.clone();
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let mut request = request.map(axum::body::Body::new);
            if connect_info {
                request
                    .extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
            }
            // Always ready: the endpoint and routers wait for nothing.
            app.clone().call(request)
        });
        let connection = http
            .serve_connection(TokioIo::new(tcp), service)
            .with_upgrades();
        let stopping = stop.clone();
        connections.spawn(async move {
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                () = stopping.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
            drop(admitted);
        });
    }
    drop(listener);
    endpoint.shutdown();
    stop.cancel();
    connections.close();
    if tokio::time::timeout(SHUTDOWN_DEADLINE, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!("requests still in flight after the shutdown deadline; stopping anyway");
    }
    endpoint.close_sessions();
    Ok(())
}

/// After a failed `accept`: a connection that went away before it was
/// taken is nothing; anything else (out of descriptors, say) is logged,
/// and accepting resumes a moment later rather than spinning.
async fn accept_failed(error: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::warn!("accepting a connection failed: {error}; retrying in 100 ms");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Counts the open connections, in all and per address, against their
/// limits.
struct Admission {
    max: usize,
    max_per_ip: Option<usize>,
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
}

impl Admission {
    fn new(max: usize, max_per_ip: Option<usize>) -> Self {
        Admission {
            max,
            max_per_ip,
            open: Mutex::new(Open::default()),
        }
    }

    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.locked()
    }

    /// Room for one more connection from `ip`, held until the returned
    /// handle drops; `None` when a limit is reached.
    fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Admitted> {
        let mut open = self.open();
        if open.total >= self.max {
            return None;
        }
        if let Some(max) = self.max_per_ip {
            let from_ip = open.per_ip.entry(ip).or_default();
            if *from_ip >= max {
                return None;
            }
            *from_ip += 1;
        }
        open.total += 1;
        Some(Admitted {
            admission: Arc::clone(self),
            ip,
        })
    }
}

/// One admitted connection; gives its room back when dropped.
struct Admitted {
    admission: Arc<Admission>,
    ip: IpAddr,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.admission.open();
        open.total -= 1;
        if self.admission.max_per_ip.is_some()
            && let Some(from_ip) = open.per_ip.get_mut(&self.ip)
        {
            *from_ip -= 1;
            if *from_ip == 0 {
                open.per_ip.remove(&self.ip);
            }
        }
    }
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
