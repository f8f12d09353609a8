//! Shared helpers of the Streamable HTTP integration tests: an in-process
//! server on a loopback port, a plain reqwest client, an incremental SSE
//! reader, legacy sessions and 2026-07-28 requests, schema validation.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use mcp_http::sse::{SseEvent, SseParser};
use mcp_http::{HttpConfig, McpEndpoint};
use mcp_schema::ProtocolVersion;
use mcp_schema::validation::SchemaValidator;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The bound of every single wait in these tests.
pub const WAIT: Duration = Duration::from_secs(10);

/// Both media types a Streamable HTTP client must accept.
pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// `fut`, or a panic naming `what` after [`WAIT`].
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out after {WAIT:?}: {what}"))
}

/// A revision by its date string.
pub fn revision(version: &str) -> ProtocolVersion {
    version
        .parse()
        .unwrap_or_else(|e| panic!("unknown revision {version}: {e:?}"))
}

/// Checks a response to `method` against the official schema of `version`.
pub fn validate_response(version: &str, method: &str, message: &Value) {
    SchemaValidator::for_revision(revision(version))
        .validate_response(method, message)
        .unwrap_or_else(|e| panic!("{method} response is not valid {version}: {e}\n{message:#}"));
}

/// Checks a notification (or any message) against the official schema of `version`.
pub fn validate_message(version: &str, message: &Value) {
    SchemaValidator::for_revision(revision(version))
        .validate_message(message)
        .unwrap_or_else(|e| panic!("message is not valid {version}: {e}\n{message:#}"));
}

/// Loads the validators of every revision now (it takes a while in a
/// debug build), so that timing-sensitive tests do not pay for it midway.
pub fn warm_validators() {
    for version in ProtocolVersion::ALL {
        SchemaValidator::for_revision(version);
    }
}

/// An endpoint served in-process on a loopback port.
pub struct TestServer {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    pub port: u16,
    pub endpoint: Arc<McpEndpoint>,
    pub http: reqwest::Client,
    shutdown: Option<oneshot::Sender<()>>,
    served: Option<JoinHandle<std::io::Result<()>>>,
    next_id: AtomicI64,
}

/// A fresh HTTP client: loopback only, no proxies, no overall timeout
/// (SSE bodies are long-lived; every wait is bounded by the tests).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(WAIT)
        .build()
        .expect("reqwest client")
}

impl TestServer {
    /// The `everything` server with the loopback defaults changed by `tweak`.
    pub async fn start(tweak: impl FnOnce(HttpConfig) -> HttpConfig) -> TestServer {
        Self::start_with(mcp_builtin::everything::server(), tweak).await
    }

    /// `server` with the loopback defaults changed by `tweak`.
    pub async fn start_with(
        server: mcp_server::Server,
        tweak: impl FnOnce(HttpConfig) -> HttpConfig,
    ) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("local addr").port();
        let config = tweak(HttpConfig::loopback(port));
        let path = config.path.clone();
        let endpoint = McpEndpoint::new(Arc::new(server.clone()), server.session_config(), config);
        let (tx, rx) = oneshot::channel::<()>();
        let served = tokio::spawn(mcp_http::serve(
            listener,
            Arc::clone(&endpoint),
            async move {
                // A dropped sender (the test ended) also shuts the server down.
                let _ = rx.await;
            },
        ));
        TestServer {
            url: format!("http://127.0.0.1:{port}{path}"),
            port,
            endpoint,
            http: client(),
            shutdown: Some(tx),
            served: Some(served),
            next_id: AtomicI64::new(1),
        }
    }

    /// Triggers the shutdown future and waits (bounded by `limit`) for
    /// `serve` to return.
    pub async fn shutdown(&mut self, limit: Duration) -> std::io::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let served = self.served.take().expect("serve task");
        tokio::time::timeout(limit, served)
            .await
            .unwrap_or_else(|_| panic!("serve() did not return within {limit:?} of shutdown"))
            .expect("serve task panicked")
    }

    /// A fresh JSON-RPC id.
    pub fn id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A POST with the right Content-Type and Accept headers.
    pub fn post(&self) -> reqwest::RequestBuilder {
        self.http
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, ACCEPT_BOTH)
    }

    /// A GET asking for an event stream.
    pub fn get(&self) -> reqwest::RequestBuilder {
        self.http.get(&self.url).header(ACCEPT, "text/event-stream")
    }

    /// Sends `body` and collects the answer (JSON or a whole SSE stream).
    pub async fn send(&self, request: reqwest::RequestBuilder, body: &Value) -> Reply {
        let response = within("POST", request.body(body.to_string()).send())
            .await
            .expect("POST failed");
        Reply::collect(response).await
    }

    /// Starts a legacy session at `version`: initialize, then
    /// notifications/initialized.
    pub async fn initialize(&self, version: &str) -> LegacySession {
        let reply = self
            .send(self.post(), &initialize_body(self.id(), version))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "initialize: {reply:?}");
        let result = &reply.body["result"];
        assert_eq!(result["protocolVersion"], version, "{reply:?}");
        let id = reply
            .headers
            .get(mcp_http::SESSION_ID)
            .expect("initialize answer has Mcp-Session-Id")
            .to_str()
            .expect("session id is ASCII")
            .to_owned();
        let session = LegacySession {
            id,
            version: version.to_owned(),
        };
        let reply = self
            .send(
                session.headers(self.post()),
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::ACCEPTED, "initialized: {reply:?}");
        session
    }

    /// A request in a legacy session; the answer validated against the schema when it is a response.
    pub async fn call(&self, session: &LegacySession, method: &str, params: Value) -> Reply {
        let id = self.id();
        let reply = self
            .send(
                session.headers(self.post()),
                &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
            )
            .await;
        if reply.status == StatusCode::OK {
            assert_eq!(reply.body["id"], id, "{reply:?}");
            validate_response(&session.version, method, &reply.body);
        }
        reply
    }

    /// Calls a tool in a legacy session and returns its result.
    pub async fn call_tool(&self, session: &LegacySession, name: &str, arguments: Value) -> Value {
        let reply = self
            .call(
                session,
                "tools/call",
                json!({"name": name, "arguments": arguments}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
        assert!(reply.body.get("result").is_some(), "{reply:?}");
        reply.body["result"].clone()
    }

    /// Starts the `slow_task` tool in a legacy session: `steps` progress
    /// notifications (token `token`) `step_ms` apart, then its answer.
    /// The POST's SSE stream.
    pub async fn start_slow_task(
        &self,
        session: &LegacySession,
        id: Value,
        (steps, step_ms): (u32, u64),
        token: &str,
    ) -> SseStream {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "slow_task", "arguments": {"steps": steps, "step_ms": step_ms},
            "_meta": {"progressToken": token}}});
        let response = within(
            "POST",
            session.headers(self.post()).body(body.to_string()).send(),
        )
        .await
        .expect("POST");
        SseStream::new(response)
    }

    /// Ends a legacy session with DELETE; the status.
    pub async fn delete(&self, session_id: &str) -> StatusCode {
        within(
            "DELETE",
            self.http
                .delete(&self.url)
                .header(mcp_http::SESSION_ID, session_id)
                .send(),
        )
        .await
        .expect("DELETE failed")
        .status()
    }

    /// A 2026-07-28 request: `_meta` (with `capabilities`) added to
    /// `params`, and the matching MCP-Protocol-Version, Mcp-Method and
    /// Mcp-Name headers.
    pub fn modern(
        &self,
        id: Value,
        method: &str,
        params: Value,
        capabilities: Value,
    ) -> (reqwest::RequestBuilder, Value) {
        let (headers, body) = modern_parts(id, method, params, capabilities);
        (self.post().headers(headers), body)
    }
}

/// The MCP headers and the body of a 2026-07-28 request (see
/// [`TestServer::modern`]), to change before sending.
pub fn modern_parts(
    id: Value,
    method: &str,
    params: Value,
    capabilities: Value,
) -> (HeaderMap, Value) {
    let mut params = params;
    params["_meta"] = modern_meta(capabilities);
    let mut headers = HeaderMap::new();
    headers.insert(mcp_http::PROTOCOL_VERSION, HeaderValue::from_static(MODERN));
    headers.insert(
        mcp_http::METHOD,
        HeaderValue::from_str(method).expect("header value"),
    );
    let name = match method {
        "tools/call" | "prompts/get" => params["name"].as_str(),
        "resources/read" => params["uri"].as_str(),
        _ => None,
    };
    if let Some(name) = name {
        headers.insert(
            mcp_http::NAME,
            HeaderValue::from_str(name).expect("header value"),
        );
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    (headers, body)
}

/// The stateless revision.
pub const MODERN: &str = "2026-07-28";

/// A complete per-request `_meta` of 2026-07-28.
pub fn modern_meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-http-tests", "version": "1.0.0"},
    })
}

/// An initialize request.
pub fn initialize_body(id: i64, version: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "mcp-http-tests", "version": "1.0.0"}
        }
    })
}

/// A legacy session: its id and negotiated revision.
#[derive(Debug, Clone)]
pub struct LegacySession {
    pub id: String,
    pub version: String,
}

impl LegacySession {
    /// Adds Mcp-Session-Id and MCP-Protocol-Version.
    pub fn headers(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request
            .header(mcp_http::SESSION_ID, &self.id)
            .header(mcp_http::PROTOCOL_VERSION, &self.version)
    }
}

/// A whole answer to a POST.
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// The media type, without parameters.
    pub content_type: String,
    /// Every SSE event (priming events included); empty for JSON answers.
    pub events: Vec<SseEvent>,
    /// Every JSON message of the answer, in order.
    pub messages: Vec<Value>,
    /// The JSON body, or the last message of an SSE stream (the response);
    /// `Null` for an empty body.
    pub body: Value,
    /// The raw body of a non-SSE answer.
    pub text: String,
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {}",
            self.status,
            self.content_type,
            if self.events.is_empty() {
                self.text.clone()
            } else {
                format!("{:?}", self.events)
            }
        )
    }
}

/// The media type of a response, without parameters.
pub fn media_type(headers: &HeaderMap) -> String {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

impl Reply {
    /// Reads the whole answer (an SSE stream to its end, bounded).
    pub async fn collect(response: reqwest::Response) -> Reply {
        let status = response.status();
        let headers = response.headers().clone();
        let content_type = media_type(&headers);
        if content_type == "text/event-stream" {
            let mut stream = SseStream::new(response);
            let mut events = Vec::new();
            while let Some(event) = stream.next().await {
                events.push(event);
            }
            let messages: Vec<Value> = events
                .iter()
                .filter(|e| !e.data.is_empty())
                .map(|e| serde_json::from_str(&e.data).expect("SSE data is JSON"))
                .collect();
            let body = messages.last().cloned().unwrap_or(Value::Null);
            return Reply {
                status,
                headers,
                content_type,
                events,
                messages,
                body,
                text: String::new(),
            };
        }
        let text = within("body", response.text())
            .await
            .expect("reading body failed");
        let body = if content_type == "application/json" {
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("body is not JSON ({e}): {text}"))
        } else {
            // Empty (202) or not JSON-RPC (e.g. a plain-text 413).
            serde_json::from_str(&text).unwrap_or(Value::Null)
        };
        Reply {
            status,
            headers,
            content_type,
            events: Vec::new(),
            messages: if body.is_null() {
                Vec::new()
            } else {
                vec![body.clone()]
            },
            body,
            text,
        }
    }

    /// The JSON-RPC error code of the body.
    pub fn error_code(&self) -> Option<i64> {
        self.body["error"]["code"].as_i64()
    }
}

/// An SSE response body read incrementally.
pub struct SseStream {
    response: reqwest::Response,
    parser: SseParser,
    pending: VecDeque<SseEvent>,
    ended: bool,
    /// The transport error that ended the body, if any.
    pub error: Option<String>,
}

impl SseStream {
    /// Wraps a `text/event-stream` response.
    pub fn new(response: reqwest::Response) -> SseStream {
        assert_eq!(
            media_type(response.headers()),
            "text/event-stream",
            "expected an SSE response, got {} {:?}",
            response.status(),
            response.headers()
        );
        SseStream {
            response,
            parser: SseParser::new(),
            pending: VecDeque::new(),
            ended: false,
            error: None,
        }
    }

    /// The next event, `None` when the body ended; panics after [`WAIT`].
    pub async fn next(&mut self) -> Option<SseEvent> {
        within("the next SSE event", self.next_event()).await
    }

    /// The next event, or `Err` after `limit`.
    pub async fn next_within(
        &mut self,
        limit: Duration,
    ) -> Result<Option<SseEvent>, tokio::time::error::Elapsed> {
        tokio::time::timeout(limit, self.next_event()).await
    }

    /// The next event with data (priming events skipped), parsed.
    pub async fn next_message(&mut self) -> Option<(SseEvent, Value)> {
        loop {
            let event = self.next().await?;
            if event.data.is_empty() {
                continue;
            }
            let value = serde_json::from_str(&event.data)
                .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {}", event.data));
            return Some((event, value));
        }
    }

    /// The last event id the stream set.
    pub fn last_event_id(&self) -> &str {
        self.parser.last_event_id()
    }

    async fn next_event(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(event);
            }
            if self.ended {
                return None;
            }
            match self.response.chunk().await {
                Ok(Some(bytes)) => self.pending.extend(self.parser.feed(&bytes)),
                Ok(None) => self.ended = true,
                Err(e) => {
                    self.error = Some(e.to_string());
                    self.ended = true;
                }
            }
        }
    }
}

/// Whether a session id is visible ASCII only (0x21..=0x7E).
pub fn is_visible_ascii(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| (0x21..=0x7e).contains(&b))
}
