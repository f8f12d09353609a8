//! The HTTP client transport against our Streamable HTTP server, with a
//! client-role engine on top: legacy sessions (SSE replies, server requests,
//! re-initialization, DELETE on close, resumption after a dropped stream),
//! stateless 2026-07-28 requests with their headers, and HTTP failures that
//! become JSON-RPC errors.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{TestServer, modern_meta, within};
use mcp_core::{
    BoxFuture, ClientIdentity, HandlerResult, InboundFrame, IncomingRequest, Negotiated, Peer,
    RequestContext, RequestError, RequestOptions, Role, RunningSession, Service, SessionConfig,
    Transport, serve,
};
use mcp_http::client::{HttpClientConfig, HttpClientHandle, HttpTransportKind, connect};
use mcp_http::{HttpConfig, OriginPolicy, WireProtocol};
use mcp_schema::jsonrpc::{self, Notification};
use mcp_schema::{
    ClientCapabilities, ErrorObject, Implementation, InitializeResult, ProtocolVersion,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A client that answers elicitation, sampling and roots.
struct Answers;

impl Service for Answers {
    fn handle_request(
        &self,
        request: IncomingRequest,
        _: RequestContext,
    ) -> BoxFuture<'static, HandlerResult> {
        Box::pin(async move {
            let result = match request.method.as_str() {
                "elicitation/create" => json!({
                    "action": "accept",
                    "content": {"username": "alice", "email": "alice@example.com"}
                }),
                "sampling/createMessage" => json!({
                    "role": "assistant",
                    "content": {"type": "text", "text": "forty-two"},
                    "model": "test-model",
                    "stopReason": "endTurn"
                }),
                "roots/list" => json!({"roots": [{"uri": "file:///tmp", "name": "tmp"}]}),
                other => return Err(ErrorObject::method_not_found(other)),
            };
            jsonrpc::to_raw(&result).map_err(ErrorObject::internal)
        })
    }

    fn handle_notification(&self, _: Notification, _: Peer) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

fn capabilities() -> Value {
    json!({"sampling": {}, "elicitation": {}, "roots": {}})
}

fn identity() -> ClientIdentity {
    let caps: ClientCapabilities = serde_json::from_value(capabilities()).expect("capabilities");
    ClientIdentity::new(Implementation::new("client-tests", "1.0.0"), caps)
}

/// A client engine over a new HTTP client transport.
struct Client {
    peer: Peer,
    session: RunningSession,
    handle: HttpClientHandle,
    /// Every frame that reached the engine.
    seen: Arc<Mutex<Vec<String>>>,
}

/// Copies every inbound frame into `seen` on its way to the engine.
fn tap(transport: Transport, seen: Arc<Mutex<Vec<String>>>) -> Transport {
    let Transport {
        mut inbound,
        outbound,
        flushed,
    } = transport;
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(async move {
        while let Some(frame) = inbound.recv().await {
            if let InboundFrame::Text(text) = &frame {
                seen.lock().unwrap().push(text.clone());
            }
            if tx.send(frame).await.is_err() {
                break;
            }
        }
    });
    Transport {
        inbound: rx.into(),
        outbound,
        flushed,
    }
}

async fn start_client(config: HttpClientConfig) -> Client {
    let connected = within("connect", connect(config)).await.expect("connect");
    let (transport, handle) = connected.into_parts();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let transport = tap(transport, Arc::clone(&seen));
    let session = serve(
        transport,
        Arc::new(Answers),
        SessionConfig::new(Role::Client(Arc::new(identity())))
            .request_timeout(Duration::from_secs(20)),
    );
    Client {
        peer: session.peer().clone(),
        session,
        handle,
        seen,
    }
}

/// A legacy-era client: initialize, then notifications/initialized.
async fn legacy_client(config: HttpClientConfig) -> Client {
    let client = start_client(config).await;
    let init: InitializeResult = within(
        "initialize",
        client.peer.request(
            "initialize",
            &json!({
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities(),
                "clientInfo": {"name": "client-tests", "version": "1.0.0"}
            }),
            RequestOptions::new(),
        ),
    )
    .await
    .expect("initialize");
    client.peer.set_negotiated(Negotiated::from_initialize(
        ProtocolVersion::V2025_11_25,
        &identity(),
        &init,
    ));
    client
        .peer
        .notify("notifications/initialized", &json!({}))
        .await
        .expect("initialized");
    client
}

async fn call(peer: &Peer, name: &str, arguments: Value) -> Result<Value, RequestError> {
    within(
        name,
        peer.request(
            "tools/call",
            &json!({"name": name, "arguments": arguments}),
            RequestOptions::new(),
        ),
    )
    .await
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn legacy_session_lists_and_calls_tools() {
    let server = TestServer::start(|c| c).await;
    let client = legacy_client(HttpClientConfig::new(&server.url)).await;
    assert_eq!(
        client.handle.wire_protocol(),
        Some(WireProtocol::StreamableHttp)
    );
    assert!(client.handle.session_id().is_some());
    assert_eq!(
        client.handle.protocol_version().as_deref(),
        Some("2025-11-25")
    );

    let list: Value = within(
        "tools/list",
        client
            .peer
            .request("tools/list", &json!({}), RequestOptions::new()),
    )
    .await
    .expect("tools/list");
    let names: Vec<&str> = list["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"echo"), "{names:?}");

    let echoed = call(&client.peer, "echo", json!({"text": "hi there"}))
        .await
        .expect("echo");
    assert_eq!(text_of(&echoed), "hi there");
}

#[tokio::test]
async fn progress_arrives_over_sse() {
    let server = TestServer::start(|c| c).await;
    let client = legacy_client(HttpClientConfig::new(&server.url)).await;
    let progress = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&progress);
    let options = RequestOptions::new().on_progress(move |p| seen.lock().unwrap().push(p.progress));
    let result: Value = within(
        "progress call",
        client.peer.request(
            "tools/call",
            &json!({"name": "test_tool_with_progress", "arguments": {}}),
            options,
        ),
    )
    .await
    .expect("call");
    assert_eq!(text_of(&result), "Progress test completed");
    assert_eq!(*progress.lock().unwrap(), vec![0.0, 50.0, 100.0]);
}

#[tokio::test]
async fn server_requests_are_answered_by_the_client() {
    let server = TestServer::start(|c| c).await;
    let client = legacy_client(HttpClientConfig::new(&server.url)).await;
    let elicited = call(&client.peer, "test_elicitation", json!({"message": "Who?"}))
        .await
        .expect("elicitation");
    assert!(text_of(&elicited).contains("alice"), "{elicited}");
    let sampled = call(&client.peer, "test_sampling", json!({"prompt": "meaning?"}))
        .await
        .expect("sampling");
    assert!(text_of(&sampled).contains("forty-two"), "{sampled}");
}

/// `params` with the per-request `_meta` of 2026-07-28.
fn modern(mut params: Value) -> Value {
    params["_meta"] = modern_meta(capabilities());
    params
}

#[tokio::test]
async fn modern_requests_carry_the_metadata_headers() {
    let server = TestServer::start(|c| c).await;
    let client = start_client(HttpClientConfig::new(&server.url)).await;
    let peer = &client.peer;

    // Before tools/list the client knows no x-mcp-header annotations: the
    // server refuses the call for its missing Mcp-Param-Region header.
    let region_args = json!({"region": "Hello, 世界", "shard": 7});
    let refused: Result<Value, _> = within(
        "region_query before tools/list",
        peer.request(
            "tools/call",
            &modern(json!({"name": "region_query", "arguments": region_args})),
            RequestOptions::new(),
        ),
    )
    .await;
    match refused {
        Err(RequestError::Rpc(e)) => assert_eq!(e.code, -32020, "{e:?}"),
        other => panic!("expected a header mismatch, got {other:?}"),
    }

    let list: Value = within(
        "tools/list",
        peer.request("tools/list", &modern(json!({})), RequestOptions::new()),
    )
    .await
    .expect("tools/list");
    assert!(
        list["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .any(|t| t["name"] == "region_query")
    );

    let result: Value = within(
        "region_query",
        peer.request(
            "tools/call",
            &modern(json!({"name": "region_query", "arguments": region_args})),
            RequestOptions::new(),
        ),
    )
    .await
    .expect("region_query");
    assert_eq!(text_of(&result), "region Hello, 世界, shard 7: ");

    let echoed: Value = within(
        "echo",
        peer.request(
            "tools/call",
            &modern(json!({"name": "echo", "arguments": {"text": "modern"}})),
            RequestOptions::new(),
        ),
    )
    .await
    .expect("echo");
    assert_eq!(text_of(&echoed), "modern");
    assert_eq!(client.handle.session_id(), None);
    assert_eq!(server.endpoint.session_count(), 0);
}

/// Waits until `what` holds, polling; false after 5 s.
async fn eventually(what: impl Fn() -> bool) -> bool {
    for _ in 0..100 {
        if what() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn cancellation_closes_the_stream_in_the_stateless_era() {
    let (_server, url, log) = proxied_server(Duration::from_secs(1), None).await;
    let client = start_client(HttpClientConfig::new(url)).await;
    let outcome: Result<Value, _> = within(
        "slow_task",
        client.peer.request(
            "tools/call",
            &modern(json!({"name": "slow_task", "arguments": {"steps": 100, "step_ms": 100}})),
            RequestOptions::new().timeout(Duration::from_millis(300)),
        ),
    )
    .await;
    assert!(matches!(outcome, Err(RequestError::Timeout)), "{outcome:?}");
    assert!(
        eventually(|| log.closed_by_client.load(Ordering::SeqCst) >= 1).await,
        "the client closed the request's connection"
    );
    assert!(
        !log.upstream().contains("notifications/cancelled"),
        "no cancellation notification is posted in 2026-07-28"
    );
    // The transport still works.
    let echoed: Value = within(
        "echo",
        client.peer.request(
            "tools/call",
            &modern(json!({"name": "echo", "arguments": {"text": "after"}})),
            RequestOptions::new(),
        ),
    )
    .await
    .expect("echo");
    assert_eq!(text_of(&echoed), "after");
}

#[tokio::test]
async fn cancellation_is_posted_in_a_legacy_session() {
    let (_server, url, log) = proxied_server(Duration::from_secs(1), None).await;
    let client = legacy_client(HttpClientConfig::new(url)).await;
    let outcome: Result<Value, _> = within(
        "slow_task",
        client.peer.request(
            "tools/call",
            &json!({"name": "slow_task", "arguments": {"steps": 100, "step_ms": 100}}),
            RequestOptions::new().timeout(Duration::from_millis(300)),
        ),
    )
    .await;
    assert!(matches!(outcome, Err(RequestError::Timeout)), "{outcome:?}");
    assert!(
        eventually(|| log.upstream().contains("notifications/cancelled")).await,
        "notifications/cancelled was posted"
    );
}

#[tokio::test]
async fn the_standalone_stream_carries_unrelated_notifications() {
    let server = TestServer::start(|c| c).await;
    let client = legacy_client(HttpClientConfig::new(&server.url)).await;
    let _: Value = within(
        "subscribe",
        client.peer.request(
            "resources/subscribe",
            &json!({"uri": "test://watched-resource"}),
            RequestOptions::new(),
        ),
    )
    .await
    .expect("subscribe");
    call(&client.peer, "update_watched_resource", json!({}))
        .await
        .expect("update");
    let seen = Arc::clone(&client.seen);
    assert!(
        eventually(move || {
            seen.lock()
                .unwrap()
                .iter()
                .any(|f| f.contains("notifications/resources/updated"))
        })
        .await,
        "the update notification arrived"
    );
}

#[tokio::test]
async fn an_expired_session_is_initialized_again() {
    let server = TestServer::start(|c| c).await;
    let client = legacy_client(HttpClientConfig::new(&server.url)).await;
    let first = client.handle.session_id().expect("session id");
    assert_eq!(server.delete(&first).await, reqwest::StatusCode::NO_CONTENT);
    let echoed = call(&client.peer, "echo", json!({"text": "still here"}))
        .await
        .expect("echo after the session was deleted");
    assert_eq!(text_of(&echoed), "still here");
    let second = client.handle.session_id().expect("new session id");
    assert_ne!(first, second);
    assert_eq!(server.endpoint.session_count(), 1);
}

#[tokio::test]
async fn closing_deletes_the_session() {
    let server = TestServer::start(|c| c).await;
    let client = legacy_client(HttpClientConfig::new(&server.url)).await;
    assert_eq!(server.endpoint.session_count(), 1);
    client.peer.close();
    within("session end", client.session.wait()).await;
    assert_eq!(server.endpoint.session_count(), 0);
}

/// What a [`proxy`] saw.
#[derive(Default)]
struct ProxyLog {
    /// Whether a connection was cut.
    cut: AtomicBool,
    /// Everything the client sent, over every connection.
    upstream: Mutex<Vec<u8>>,
    /// How many connections the client closed.
    closed_by_client: std::sync::atomic::AtomicUsize,
}

impl ProxyLog {
    fn upstream(&self) -> String {
        String::from_utf8_lossy(&self.upstream.lock().unwrap()).into_owned()
    }
}

/// A TCP proxy from `listener` to `target` that records what the client
/// sends and, given `cut_after`, cuts the first connection whose
/// server-to-client bytes contain it, right after forwarding them.
fn proxy(listener: TcpListener, target: u16, cut_after: Option<&'static str>) -> Arc<ProxyLog> {
    let log = Arc::new(ProxyLog::default());
    let shared = Arc::clone(&log);
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let log = Arc::clone(&shared);
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)).await else {
                    return;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let up_log = Arc::clone(&log);
                let up = tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    loop {
                        let n = match cr.read(&mut buf).await {
                            Ok(0) | Err(_) => {
                                up_log.closed_by_client.fetch_add(1, Ordering::SeqCst);
                                break;
                            }
                            Ok(n) => n,
                        };
                        up_log.upstream.lock().unwrap().extend_from_slice(&buf[..n]);
                        if sw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = match sr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if cw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    let text = String::from_utf8_lossy(&buf[..n]);
                    if cut_after.is_some_and(|c| text.contains(c))
                        && !log.cut.swap(true, Ordering::SeqCst)
                    {
                        break;
                    }
                }
                up.abort();
                // Dropping both halves closes the connection.
            });
        }
    });
    log
}

/// A server reached through a [`proxy`]; the URL to use.
async fn proxied_server(
    retry: Duration,
    cut_after: Option<&'static str>,
) -> (TestServer, String, Arc<ProxyLog>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
    let port = listener.local_addr().expect("addr").port();
    let server = TestServer::start(|c| {
        // The server sees the proxy's port in the Host header.
        let mut c: HttpConfig = c.origin_policy(OriginPolicy::loopback(port));
        c.retry = retry;
        c
    })
    .await;
    let log = proxy(listener, server.port, cut_after);
    (server, format!("http://127.0.0.1:{port}/mcp"), log)
}

#[tokio::test]
async fn a_dropped_stream_is_resumed_without_loss_or_duplicates() {
    let (_server, url, log) =
        proxied_server(Duration::from_millis(100), Some("notifications/progress")).await;
    let client = legacy_client(HttpClientConfig::new(url)).await;
    let progress = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&progress);
    let options = RequestOptions::new().on_progress(move |p| seen.lock().unwrap().push(p.progress));
    let result: Value = within(
        "slow_task",
        client.peer.request(
            "tools/call",
            &json!({"name": "slow_task", "arguments": {"steps": 5, "step_ms": 60}}),
            options,
        ),
    )
    .await
    .expect("slow_task through a cut stream");
    assert!(log.cut.load(Ordering::SeqCst), "the proxy cut a stream");
    assert!(
        log.upstream()
            .to_ascii_lowercase()
            .contains("last-event-id:"),
        "the client resumed with Last-Event-ID"
    );
    assert_eq!(text_of(&result), "finished 5 steps");
    assert_eq!(*progress.lock().unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0]);
    let frames = client.seen.lock().unwrap().clone();
    let results = frames
        .iter()
        .filter(|f| f.contains("finished 5 steps"))
        .count();
    assert_eq!(results, 1, "the result arrived exactly once: {frames:#?}");
    let progress_frames = frames
        .iter()
        .filter(|f| f.contains("notifications/progress"))
        .count();
    assert_eq!(progress_frames, 5, "{frames:#?}");
}

/// An HTTP server that answers every request with `status` and an HTML body.
async fn html_server(status: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let mut got = Vec::new();
                // Reads the head and whatever body came with it.
                loop {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                    if got.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                let body = "<html><body>Something broke</body></html>";
                let reply = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    format!("http://127.0.0.1:{port}/mcp")
}

async fn initialize_error(config: HttpClientConfig) -> String {
    initialize_failure(config).await.message
}

/// The error an `initialize` over `config` fails with.
async fn initialize_failure(config: HttpClientConfig) -> mcp_schema::ErrorObject {
    let client = start_client(config).await;
    let outcome: Result<Value, _> = within(
        "initialize",
        client.peer.request(
            "initialize",
            &json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "client-tests", "version": "1.0.0"}
            }),
            RequestOptions::new(),
        ),
    )
    .await;
    match outcome {
        Err(RequestError::Rpc(e)) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn http_failures_become_errors_for_the_caller() {
    let url = html_server("500 Internal Server Error").await;
    let message = initialize_error(HttpClientConfig::new(&url)).await;
    assert!(message.starts_with("HTTP 500"), "{message}");

    // A 404 in auto mode probes for HTTP+SSE; that GET fails too, so the
    // original error is what the caller gets.
    let url = html_server("404 Not Found").await;
    let message = initialize_error(HttpClientConfig::new(&url)).await;
    assert!(message.starts_with("HTTP 404"), "{message}");

    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let config = HttpClientConfig::new(&url).transport(HttpTransportKind::StreamableHttp);
    let message = initialize_error(config).await;
    assert_eq!(
        message,
        format!("cannot connect to {url}: the connection was refused")
    );
}

#[tokio::test]
async fn a_request_that_reaches_no_server_is_told_apart_from_an_answer() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    for kind in [HttpTransportKind::Auto, HttpTransportKind::StreamableHttp] {
        let config = HttpClientConfig::new(format!("http://127.0.0.1:{port}/mcp")).transport(kind);
        let error = initialize_failure(config).await;
        assert!(
            mcp_http::client::is_unreached(&error),
            "{kind:?}: {error:?}"
        );
    }
    let url = html_server("500 Internal Server Error").await;
    let error = initialize_failure(HttpClientConfig::new(&url)).await;
    assert!(!mcp_http::client::is_unreached(&error), "{error:?}");
}

#[tokio::test]
async fn a_dropped_standalone_stream_is_resumed() {
    let (_server, url, log) = proxied_server(
        Duration::from_millis(100),
        Some("notifications/resources/updated"),
    )
    .await;
    let client = legacy_client(HttpClientConfig::new(url)).await;
    let _: Value = within(
        "subscribe",
        client.peer.request(
            "resources/subscribe",
            &json!({"uri": "test://watched-resource"}),
            RequestOptions::new(),
        ),
    )
    .await
    .expect("subscribe");
    let updates = |seen: &Arc<Mutex<Vec<String>>>| {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|f| f.contains("notifications/resources/updated"))
            .count()
    };
    call(&client.peer, "update_watched_resource", json!({}))
        .await
        .expect("first update");
    let seen = Arc::clone(&client.seen);
    assert!(
        eventually(move || updates(&seen) == 1).await,
        "first update"
    );
    assert!(
        log.cut.load(Ordering::SeqCst),
        "the standalone stream was cut"
    );
    call(&client.peer, "update_watched_resource", json!({}))
        .await
        .expect("second update");
    let seen = Arc::clone(&client.seen);
    assert!(
        eventually(move || updates(&seen) == 2).await,
        "second update"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(updates(&client.seen), 2, "nothing arrived twice");
    assert!(
        log.upstream()
            .to_ascii_lowercase()
            .contains("last-event-id:"),
        "the stream was resumed with Last-Event-ID"
    );
}

/// Hands out `Bearer good` only once challenged, and counts challenges.
struct Tokens {
    granted: AtomicBool,
    challenges: Mutex<Vec<(u16, Option<String>)>>,
}

impl mcp_http::client::Authorizer for Tokens {
    fn credentials<'a>(
        &'a self,
        _method: &'a reqwest::Method,
        _url: &'a str,
    ) -> mcp_http::client::AuthFuture<
        'a,
        Vec<(reqwest::header::HeaderName, reqwest::header::HeaderValue)>,
    > {
        let granted = self.granted.load(Ordering::SeqCst);
        Box::pin(async move {
            let bearer = reqwest::header::HeaderValue::from_static("Bearer good");
            granted
                .then_some((reqwest::header::AUTHORIZATION, bearer))
                .into_iter()
                .collect()
        })
    }

    fn challenged(
        &self,
        challenge: mcp_http::client::Challenge,
    ) -> mcp_http::client::AuthFuture<'_, bool> {
        self.challenges
            .lock()
            .unwrap()
            .push((challenge.status.as_u16(), challenge.www_authenticate));
        Box::pin(async move { !self.granted.swap(true, Ordering::SeqCst) })
    }
}

/// Refuses every request without `Authorization: Bearer good`.
async fn require_bearer(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let authorized = request
        .headers()
        .get("authorization")
        .is_some_and(|v| v == "Bearer good");
    if authorized {
        next.run(request).await
    } else {
        (
            reqwest::StatusCode::UNAUTHORIZED,
            [(
                "www-authenticate",
                r#"Bearer resource_metadata="http://x/prm""#,
            )],
        )
            .into_response()
    }
}

#[tokio::test]
async fn an_authorizer_answers_challenges_and_supplies_credentials() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = mcp_builtin::everything::server();
    let endpoint = mcp_http::McpEndpoint::new(
        Arc::new(server.clone()),
        server.session_config(),
        HttpConfig::loopback(port),
    );
    let app = endpoint
        .router()
        .layer(axum::middleware::from_fn(require_bearer));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let tokens = Arc::new(Tokens {
        granted: AtomicBool::new(false),
        challenges: Mutex::new(Vec::new()),
    });
    let config = HttpClientConfig::new(format!("http://127.0.0.1:{port}/mcp"))
        .authorizer(Arc::clone(&tokens) as Arc<dyn mcp_http::client::Authorizer>);
    let client = legacy_client(config).await;
    let echo = call(&client.peer, "echo", json!({"text": "authorized"}))
        .await
        .expect("echo");
    assert_eq!(text_of(&echo), "authorized");
    let challenges = tokens.challenges.lock().unwrap().clone();
    assert_eq!(
        challenges,
        [(
            401,
            Some(r#"Bearer resource_metadata="http://x/prm""#.to_owned())
        )],
        "one challenge, then the credentials were used on every request"
    );
}
