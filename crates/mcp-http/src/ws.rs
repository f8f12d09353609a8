//! MCP over WebSocket, a custom transport: one JSON-RPC message (or batch)
//! per text frame, both ways, on a connection that negotiated the `mcp`
//! subprotocol.
//!
//! The server side ([`McpEndpoint::router`](crate::McpEndpoint::router)
//! mounts it at [`HttpConfig::websocket_path`](crate::HttpConfig), `/ws` by
//! default) runs one engine session per connection, behind the same
//! Host/Origin guard as the HTTP endpoint:
//!
//! - a client that offers the `mcp` subprotocol gets it selected; one that
//!   offers only other subprotocols is refused with 400; one that offers
//!   none is accepted, so that simple tools can connect;
//! - a binary frame closes the connection with 1003 (unsupported data);
//! - a message larger than the body limit closes it with 1009 (too big);
//! - pings are answered, and an idle connection is pinged at the
//!   keep-alive interval; the session ends when the socket closes.
//!
//! The client side is [`connect`], which returns an
//! [`mcp_core::Transport`] for a client-role engine.
//!
//! ```no_run
//! # async fn run() -> Result<(), mcp_http::ws::WsError> {
//! let options = mcp_http::ws::WsOptions::new().header("authorization", "Bearer token");
//! let transport = mcp_http::ws::connect("ws://127.0.0.1:8080/ws", options).await?;
//! # drop(transport);
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Extension;
use axum::extract::State;
use axum::extract::ws::{self as axum_ws, WebSocketUpgrade, rejection::WebSocketUpgradeRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures::{Sink, SinkExt, Stream, StreamExt};
use mcp_core::{Extensions, FrameKind, InboundFrame, OutboundFrame, Peer, Transport};
use mcp_schema::jsonrpc::ErrorObject;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::{self, http as ws_http};

use crate::authz::{MessageExtensions, ToolScopeGuard, refuse_tool_call_message};
use crate::endpoint::reply::error_response;
use crate::serving::Serving;
use mcp_core::sync::MutexExt as _;

/// The WebSocket subprotocol of MCP.
pub const SUBPROTOCOL: &str = "mcp";

/// Close code for a binary frame: the endpoint accepts only text.
pub const CLOSE_UNSUPPORTED_DATA: u16 = 1003;

/// Close code for a message over the size limit.
pub const CLOSE_TOO_BIG: u16 = 1009;

/// Close code of a normal closure.
pub const CLOSE_NORMAL: u16 = 1000;

/// What a received WebSocket message means to the transport.
enum Incoming {
    Text(String),
    Binary,
    Close,
    Control,
}

/// The two WebSocket libraries' message types, seen the same way.
trait WsMessage: Sized + Send + 'static {
    fn classify(self) -> Incoming;
    fn text(text: String) -> Self;
    fn ping() -> Self;
    fn close(code: u16, reason: &'static str) -> Self;
}

impl WsMessage for axum_ws::Message {
    fn classify(self) -> Incoming {
        match self {
            axum_ws::Message::Text(text) => Incoming::Text(text.as_str().to_owned()),
            axum_ws::Message::Binary(_) => Incoming::Binary,
            axum_ws::Message::Close(_) => Incoming::Close,
            _ => Incoming::Control,
        }
    }
    fn text(text: String) -> Self {
        axum_ws::Message::Text(text.into())
    }
    fn ping() -> Self {
        axum_ws::Message::Ping(Default::default())
    }
    fn close(code: u16, reason: &'static str) -> Self {
        axum_ws::Message::Close(Some(axum_ws::CloseFrame {
            code,
            reason: reason.into(),
        }))
    }
}

impl WsMessage for tungstenite::Message {
    fn classify(self) -> Incoming {
        match self {
            tungstenite::Message::Text(text) => Incoming::Text(text.as_str().to_owned()),
            tungstenite::Message::Binary(_) => Incoming::Binary,
            tungstenite::Message::Close(_) => Incoming::Close,
            _ => Incoming::Control,
        }
    }
    fn text(text: String) -> Self {
        tungstenite::Message::Text(text.into())
    }
    fn ping() -> Self {
        tungstenite::Message::Ping(Default::default())
    }
    fn close(code: u16, reason: &'static str) -> Self {
        tungstenite::Message::Close(Some(tungstenite::protocol::CloseFrame {
            code: code.into(),
            reason: reason.into(),
        }))
    }
}

/// Whether a read error means the peer's message was over the size limit.
fn too_large(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(tungstenite::Error::Capacity(_)) = e.downcast_ref::<tungstenite::Error>() {
            return true;
        }
        current = e.source();
    }
    false
}

/// Runs a socket as a transport: a reader task feeding the engine, a writer
/// task (the `flushed` handle) sending the engine's frames and, every
/// `keep_alive`, a ping.
/// Answers a message itself instead of passing it on (with the answer's
/// text), or lets it through (`None`).
type MessageFilter = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

fn pump<S, M, E>(
    socket: S,
    keep_alive: Option<Duration>,
    extensions: Option<Arc<Extensions>>,
    filter: Option<MessageFilter>,
) -> Transport
where
    S: Stream<Item = Result<M, E>> + Sink<M> + Send + 'static,
    <S as Sink<M>>::Error: std::fmt::Display,
    M: WsMessage,
    E: std::error::Error + Send + Sync + 'static,
{
    let (in_tx, inbound) = mpsc::channel(mcp_core::DEFAULT_CHANNEL_CAPACITY);
    let (outbound, out_rx) = mpsc::channel(mcp_core::DEFAULT_CHANNEL_CAPACITY);
    let (close_tx, close_rx) = oneshot::channel();
    let (sink, stream) = socket.split();
    let answers = outbound.downgrade();
    tokio::spawn(read_frames(
        stream, in_tx, close_tx, extensions, filter, answers,
    ));
    let flushed = Some(tokio::spawn(write_frames(
        sink, out_rx, close_rx, keep_alive,
    )));
    Transport {
        inbound: inbound.into(),
        outbound,
        flushed,
    }
}

async fn read_frames<S, M, E>(
    mut stream: S,
    in_tx: mpsc::Sender<InboundFrame>,
    close_tx: oneshot::Sender<(u16, &'static str)>,
    extensions: Option<Arc<Extensions>>,
    filter: Option<MessageFilter>,
    answers: mpsc::WeakSender<OutboundFrame>,
) where
    S: Stream<Item = Result<M, E>> + Unpin,
    M: WsMessage,
    E: std::error::Error + 'static,
{
    while let Some(item) = stream.next().await {
        match item.map(WsMessage::classify) {
            Ok(Incoming::Text(text)) => {
                tracing::debug!(bytes = text.len(), "WebSocket message in");
                if let Some(answer) = filter.as_ref().and_then(|f| f(&text)) {
                    let Some(out) = answers.upgrade() else { return };
                    let frame = OutboundFrame {
                        text: answer,
                        related: None,
                        kind: mcp_core::FrameKind::Response,
                    };
                    if out.send(frame).await.is_err() {
                        return;
                    }
                    continue;
                }
                let frame = InboundFrame::new(text, extensions.clone());
                if in_tx.send(frame).await.is_err() {
                    return;
                }
            }
            Ok(Incoming::Binary) => {
                tracing::debug!("binary WebSocket frame; closing");
                let _ = close_tx.send((CLOSE_UNSUPPORTED_DATA, "MCP messages are text frames"));
                return;
            }
            Ok(Incoming::Close) => return,
            Ok(Incoming::Control) => {}
            Err(e) => {
                tracing::debug!("WebSocket read ended: {e}");
                if too_large(&e) {
                    let _ = close_tx.send((CLOSE_TOO_BIG, "message too big"));
                }
                return;
            }
        }
    }
}

async fn write_frames<K, M>(
    mut sink: K,
    mut out_rx: mpsc::Receiver<OutboundFrame>,
    mut close_rx: oneshot::Receiver<(u16, &'static str)>,
    keep_alive: Option<Duration>,
) where
    K: Sink<M> + Unpin,
    K::Error: std::fmt::Display,
    M: WsMessage,
{
    let every = keep_alive.unwrap_or(Duration::from_secs(24 * 60 * 60));
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut reader_done = false;
    loop {
        tokio::select! {
            biased;
            close = &mut close_rx, if !reader_done => {
                match close {
                    Ok((code, reason)) => {
                        let _ = sink.send(M::close(code, reason)).await;
                        break;
                    }
                    // The peer closed or the connection broke; frames still
                    // queued by the engine have nowhere to go.
                    Err(_) => reader_done = true,
                }
            }
            frame = out_rx.recv() => {
                let Some(frame) = frame else {
                    let _ = sink.send(M::close(CLOSE_NORMAL, "")).await;
                    break;
                };
                if let Err(e) = write_batch(&mut sink, frame, &mut out_rx).await {
                    tracing::debug!("WebSocket write ended: {e}");
                    break;
                }
            }
            _ = ping.tick(), if keep_alive.is_some() && !reader_done => {
                if sink.send(M::ping()).await.is_err() {
                    break;
                }
            }
        }
        if reader_done {
            // Drain without writing until the engine lets go.
            while out_rx.recv().await.is_some() {}
            break;
        }
    }
    let _ = sink.close().await;
}

/// Writes `first` and everything already queued, then flushes once.
async fn write_batch<K, M>(
    sink: &mut K,
    first: OutboundFrame,
    out_rx: &mut mpsc::Receiver<OutboundFrame>,
) -> Result<(), K::Error>
where
    K: Sink<M> + Unpin,
    M: WsMessage,
{
    let mut frame = Some(first);
    while let Some(f) = frame {
        if f.kind != FrameKind::Ended {
            tracing::debug!(bytes = f.text.len(), "WebSocket message out");
            sink.feed(M::text(f.text)).await?;
        }
        frame = out_rx.try_recv().ok();
    }
    sink.flush().await
}

/// An endpoint the WebSocket path is mounted on, with its connections.
pub(crate) trait WebSocketHost: Serving {
    /// The live WebSocket sessions.
    fn websockets(&self) -> &Arc<Connections>;
}

/// The live WebSocket sessions of an endpoint.
#[derive(Default)]
pub(crate) struct Connections {
    map: Mutex<HashMap<u64, Peer>>,
    next: AtomicU64,
}

impl Connections {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Peer>> {
        self.map.locked()
    }

    /// How many sessions are live.
    pub(crate) fn len(&self) -> usize {
        self.map().len()
    }

    fn register(self: &Arc<Self>, peer: Peer) -> ConnectionGuard {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.map().insert(id, peer);
        ConnectionGuard {
            id,
            connections: Arc::clone(self),
        }
    }

    /// Ends every session's engine.
    pub(crate) fn close_all(&self) {
        let all: Vec<Peer> = self.map().drain().map(|(_, p)| p).collect();
        for peer in all {
            peer.close();
        }
    }
}

struct ConnectionGuard {
    id: u64,
    connections: Arc<Connections>,
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.connections.map().remove(&self.id);
    }
}

/// GET on the WebSocket path: the upgrade, then one engine session for the
/// connection.
pub(crate) async fn handle_upgrade<E: WebSocketHost>(
    State(endpoint): State<Arc<E>>,
    extensions: Option<Extension<MessageExtensions>>,
    scope_guard: Option<Extension<ToolScopeGuard>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let extensions = extensions.map(|Extension(e)| e.0);
    // Tools that need scopes the connection's token lacks are refused
    // message by message (a WebSocket has no 403 to answer with).
    let filter = scope_guard.map(|Extension(guard)| {
        let service = Arc::clone(endpoint.service());
        Arc::new(move |text: &str| refuse_tool_call_message(text, service.as_ref(), &guard))
            as MessageFilter
    });
    let upgrade = match upgrade {
        Ok(upgrade) => upgrade,
        Err(rejection) => {
            let error = ErrorObject::invalid_request(rejection.body_text());
            return error_response(rejection.status(), None, &error);
        }
    };
    let offered: Vec<String> = upgrade
        .requested_protocols()
        .filter_map(|p| p.to_str().ok())
        .flat_map(|p| p.split(','))
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    if !offered.is_empty() && !offered.iter().any(|p| p == SUBPROTOCOL) {
        let error = ErrorObject::invalid_request(format!(
            "the WebSocket subprotocol must be {SUBPROTOCOL:?}"
        ));
        return error_response(StatusCode::BAD_REQUEST, None, &error);
    }
    if endpoint.websockets().len() >= endpoint.config().max_sessions {
        let error = ErrorObject::internal("too many sessions; try again later");
        return error_response(StatusCode::SERVICE_UNAVAILABLE, None, &error);
    }
    let limit = endpoint.config().max_body_bytes;
    upgrade
        .protocols([SUBPROTOCOL])
        .max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |socket| async move {
            let transport = pump(
                socket,
                Some(endpoint.config().keep_alive),
                extensions,
                filter,
            );
            let running = mcp_core::serve(
                transport,
                Arc::clone(endpoint.service()),
                mcp_core::SessionConfig::clone(endpoint.session_config()),
            );
            let _guard = endpoint.websockets().register(running.peer().clone());
            tracing::debug!("WebSocket session started");
            running.wait().await;
            tracing::debug!("WebSocket session ended");
        })
        .into_response()
}

/// Settings of a WebSocket client connection.
#[derive(Clone)]
#[non_exhaustive]
pub struct WsOptions {
    /// Extra headers of the upgrade request (`Authorization`, `Origin`...).
    pub headers: Vec<(String, String)>,
    /// The largest message accepted from the server.
    pub max_message_bytes: usize,
    /// Ping the server this often while connected, if set.
    pub keep_alive: Option<Duration>,
    /// Supplies the upgrade request's credentials and answers the
    /// server's refusal of them (401, or 403 `insufficient_scope`).
    pub authorizer: Option<Arc<dyn crate::client::Authorizer>>,
}

impl std::fmt::Debug for WsOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsOptions")
            .field("headers", &self.headers)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("keep_alive", &self.keep_alive)
            .field("authorizer", &self.authorizer.is_some())
            .finish()
    }
}

impl Default for WsOptions {
    fn default() -> Self {
        WsOptions {
            headers: Vec::new(),
            max_message_bytes: mcp_core::stdio::MAX_LINE_BYTES,
            keep_alive: None,
            authorizer: None,
        }
    }
}

impl WsOptions {
    /// No extra headers, 16 MiB messages, no pings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a header to the upgrade request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the largest message accepted from the server.
    pub fn max_message_bytes(mut self, max: usize) -> Self {
        self.max_message_bytes = max;
        self
    }

    /// Pings the server at this interval.
    pub fn keep_alive(mut self, interval: Duration) -> Self {
        self.keep_alive = Some(interval);
        self
    }

    /// Authorizes the upgrade request with `authorizer` (an OAuth
    /// client), which also answers a refusal before the request is sent
    /// again.
    pub fn authorizer(mut self, authorizer: Arc<dyn crate::client::Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }
}

/// Why a WebSocket connection could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WsError {
    /// The URL cannot be used.
    #[error("invalid WebSocket URL: {0}")]
    InvalidUrl(String),
    /// Only `ws://` and `wss://` URLs are supported.
    #[error("unsupported URL scheme {0:?}; use ws:// or wss://")]
    UnsupportedScheme(String),
    /// A header name or value is not valid.
    #[error("invalid header {0:?}")]
    InvalidHeader(String),
    /// The TCP connection failed.
    #[error("connecting failed: {0}")]
    Connect(#[from] std::io::Error),
    /// The server answered the upgrade with this HTTP status.
    #[error("the server refused the upgrade with HTTP {status}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The response body, if any.
        body: String,
        /// The response's headers (`WWW-Authenticate`, say).
        headers: Box<ws_http::HeaderMap>,
    },
    /// The WebSocket handshake failed (for example, the server did not
    /// select the `mcp` subprotocol).
    #[error("WebSocket handshake failed: {0}")]
    Handshake(String),
}

/// Opens a WebSocket connection to `url` (`ws://host:port/path`, or
/// `wss://` over TLS with the web's root certificates), asking
/// for the `mcp` subprotocol, with TCP_NODELAY set; the transport sends each
/// outbound frame as a text frame and delivers each text frame received.
/// Dropping the transport's outbound sender closes the connection. With
/// an authorizer, the upgrade request carries its credentials, and a
/// refusal it answers (a sign-in, say) is followed by another attempt.
pub async fn connect(url: &str, options: WsOptions) -> Result<Transport, WsError> {
    const MAX_CHALLENGES: usize = 3;
    let Some(authorizer) = options.authorizer.clone() else {
        return connect_once(url, &options, Vec::new()).await;
    };
    // The upgrade is an HTTP GET of the http(s) URL.
    let http_url = match url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("wss") => format!("https://{rest}"),
        Some((_, rest)) => format!("http://{rest}"),
        None => url.to_owned(),
    };
    let mut challenges = 0;
    loop {
        let credentials = authorizer
            .credentials(&reqwest::Method::GET, &http_url)
            .await;
        let error = match connect_once(url, &options, credentials).await {
            Err(WsError::Refused {
                status,
                body,
                headers,
            }) => (status, body, headers),
            other => return other,
        };
        let (status, body, headers) = error;
        let refused = || WsError::Refused {
            status,
            body: body.clone(),
            headers: headers.clone(),
        };
        let www_authenticate = headers
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let challenge = crate::client::Challenge {
            status: reqwest::StatusCode::from_u16(status)
                .unwrap_or(reqwest::StatusCode::UNAUTHORIZED),
            www_authenticate,
            url: http_url.clone(),
            headers: (*headers).clone(),
        };
        let answerable = challenge.status == reqwest::StatusCode::UNAUTHORIZED
            || challenge.is_insufficient_scope();
        if !answerable || challenges >= MAX_CHALLENGES {
            return Err(refused());
        }
        challenges += 1;
        tracing::debug!(status, "WebSocket upgrade challenged");
        if !authorizer.challenged(challenge).await {
            return Err(refused());
        }
    }
}

/// One attempt at [`connect`], the upgrade request carrying `extra`
/// headers.
async fn connect_once(
    url: &str,
    options: &WsOptions,
    extra: Vec<(ws_http::HeaderName, ws_http::HeaderValue)>,
) -> Result<Transport, WsError> {
    use tungstenite::client::IntoClientRequest;
    let mut request = url
        .into_client_request()
        .map_err(|e| WsError::InvalidUrl(e.to_string()))?;
    let uri = request.uri().clone();
    let default_port = match uri.scheme_str() {
        Some("ws") => 80,
        Some("wss") => 443,
        other => return Err(WsError::UnsupportedScheme(other.unwrap_or("").to_owned())),
    };
    let host = uri
        .host()
        .ok_or_else(|| WsError::InvalidUrl(format!("{url}: no host")))?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = uri.port_u16().unwrap_or(default_port);
    let headers = request.headers_mut();
    headers.insert(
        ws_http::header::SEC_WEBSOCKET_PROTOCOL,
        ws_http::HeaderValue::from_static(SUBPROTOCOL),
    );
    for (name, value) in &options.headers {
        let name = ws_http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| WsError::InvalidHeader(name.clone()))?;
        let value = ws_http::HeaderValue::from_str(value)
            .map_err(|_| WsError::InvalidHeader(name.to_string()))?;
        headers.append(name, value);
    }
    for (name, value) in extra {
        headers.insert(name, value);
    }
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
    tcp.set_nodelay(true)?;
    let config = tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(options.max_message_bytes))
        .max_frame_size(Some(options.max_message_bytes));
    let (socket, _response) =
        tokio_tungstenite::client_async_tls_with_config(request, tcp, Some(config), None)
            .await
            .map_err(|e| match e {
                tungstenite::Error::Http(response) => WsError::Refused {
                    status: response.status().as_u16(),
                    headers: Box::new(response.headers().clone()),
                    body: response
                        .body()
                        .as_deref()
                        .map(|b| String::from_utf8_lossy(b).into_owned())
                        .unwrap_or_default(),
                },
                tungstenite::Error::Io(e) => WsError::Connect(e),
                other => WsError::Handshake(other.to_string()),
            })?;
    tracing::debug!(url, "WebSocket connected");
    Ok(pump(socket, options.keep_alive, None, None))
}
