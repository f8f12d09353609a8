//! Integration tests of the session engine in the server role: the test
//! drives the client half of an in-memory transport with raw JSON-RPC text
//! and checks what the engine answers, against the protocol rules and the
//! official schema of each revision.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use mcp_core::{
    BoxFuture, DirectSession, Extensions, FrameKind, FrameSink, HandlerResult, InboundFrame,
    IncomingRequest, OutboundFrame, RequestContext, RequestError, RequestOptions, Role,
    RunningSession, ServerIdentity, Service, SessionConfig, SinkClosed, Transport, serve,
};
use mcp_schema::jsonrpc;
use mcp_schema::validation::SchemaValidator;
use mcp_schema::{
    ErrorObject, Implementation, ProtocolVersion, ServerCapabilities, ToolsCapability,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// How long any single wait may take before the test fails.
const WAIT: Duration = Duration::from_secs(5);

const LEGACY: [ProtocolVersion; 4] = [
    ProtocolVersion::V2024_11_05,
    ProtocolVersion::V2025_03_26,
    ProtocolVersion::V2025_06_18,
    ProtocolVersion::V2025_11_25,
];

// ---------------------------------------------------------------------------
// The service under the engine
// ---------------------------------------------------------------------------

/// Tools (`tools/call` by name): `echo`, `slow` (returns as soon as it is
/// cancelled), `stubborn` (ignores cancellation), `progress`, `ask_client`,
/// `ping_client`. Anything but `tools/call` is "method not found".
struct TestService {
    events: mpsc::UnboundedSender<String>,
}

/// Records, when a `slow` or `stubborn` handler ends (returns or is dropped), whether its
/// request had been cancelled by then.
struct SlowGuard {
    ctx: RequestContext,
    events: mpsc::UnboundedSender<String>,
}

impl Drop for SlowGuard {
    fn drop(&mut self) {
        let what = if self.ctx.is_cancelled() {
            "cancelled"
        } else {
            "finished"
        };
        let _ = self.events.send(format!("slow:{what}:{}", self.ctx.id));
    }
}

/// What a transport attaches to the messages it hands in (the `caller`
/// tool reports it).
struct Caller(&'static str);

fn tool_result(text: &str, extra: Value) -> Value {
    let mut result = json!({ "content": [{ "type": "text", "text": text }] });
    if let (Value::Object(result), Value::Object(extra)) = (&mut result, extra) {
        result.extend(extra);
    }
    result
}

fn error_kind(e: &RequestError) -> &'static str {
    match e {
        RequestError::Rpc(_) => "rpc",
        RequestError::Timeout => "timeout",
        RequestError::ConnectionClosed => "closed",
        RequestError::NotAllowed(_) => "not_allowed",
        RequestError::Invalid(_) => "invalid",
        _ => "other",
    }
}

fn tool_error(e: &RequestError) -> Value {
    tool_result(
        &e.to_string(),
        json!({ "isError": true, "errorKind": error_kind(e) }),
    )
}

impl Service for TestService {
    fn handle_request(
        &self,
        req: IncomingRequest,
        ctx: RequestContext,
    ) -> BoxFuture<'static, HandlerResult> {
        let events = self.events.clone();
        Box::pin(async move {
            if req.method != "tools/call" {
                return Err(ErrorObject::method_not_found(&req.method));
            }
            let params: Value = match &req.params {
                Some(raw) => {
                    serde_json::from_str(raw.get()).map_err(ErrorObject::invalid_params)?
                }
                None => json!({}),
            };
            // What a reader that ignores `_meta` is handed.
            let past_meta: Option<Value> = req
                .params_past_meta()
                .map(|text| serde_json::from_str(&text).expect("params past _meta are JSON"));
            let args = params
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| json!({}));
            let result = match params["name"].as_str().unwrap_or_default() {
                "echo" => tool_result("echo", json!({ "echo": args })),
                "slow" => {
                    let _ = events.send(format!("slow:started:{}", ctx.id));
                    let guard = SlowGuard {
                        ctx: ctx.clone(),
                        events,
                    };
                    // A well-behaved handler: it stops as soon as it is
                    // cancelled and returns what it has.
                    tokio::select! {
                        _ = ctx.cancellation.cancelled() => {}
                        _ = tokio::time::sleep(Duration::from_secs(10)) => {}
                    }
                    drop(guard);
                    tool_result("slow done", json!({}))
                }
                "stubborn" => {
                    let _ = events.send(format!("slow:started:{}", ctx.id));
                    let _guard = SlowGuard {
                        ctx: ctx.clone(),
                        events,
                    };
                    // Ignores its cancellation token: only the engine can
                    // stop it, by dropping it.
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    tool_result("stubborn done", json!({}))
                }
                "progress" => {
                    let mut sent = Vec::new();
                    for value in [1.0, 2.0, 3.0, 3.0, 2.0] {
                        sent.push(ctx.progress.report(value, Some(3.0), None).await);
                    }
                    tool_result("progress done", json!({ "sent": sent }))
                }
                "ask_client" => {
                    let params = json!({
                        "messages": [{ "role": "user", "content": { "type": "text", "text": "hello?" } }],
                        "maxTokens": 10
                    });
                    match ctx
                        .peer
                        .request::<_, Value>(
                            "sampling/createMessage",
                            &params,
                            RequestOptions::new(),
                        )
                        .await
                    {
                        Ok(answer) => tool_result("answered", json!({ "answer": answer })),
                        Err(e) => tool_error(&e),
                    }
                }
                "caller" => tool_result(
                    "caller",
                    json!({ "caller": ctx.extensions().get::<Caller>().map(|c| c.0) }),
                ),
                "whoami" => tool_result(
                    "whoami",
                    json!({
                        "client": ctx.negotiated.client_info.as_ref().map(|i| i.name.clone()),
                        "sampling": ctx.negotiated.client_capabilities.sampling.is_some(),
                        "token": ctx.meta.progress_token,
                        "revision": ctx.revision.as_str(),
                        "params_past_meta": past_meta,
                        "params": params,
                    }),
                ),
                "ping_client" => match ctx
                    .peer
                    .request::<_, Value>("ping", &json!({}), RequestOptions::new())
                    .await
                {
                    Ok(answer) => tool_result("pinged", json!({ "answer": answer })),
                    Err(e) => tool_error(&e),
                },
                other => return Err(ErrorObject::invalid_params(format!("unknown tool {other}"))),
            };
            jsonrpc::to_raw(&result).map_err(ErrorObject::internal)
        })
    }
}

// ---------------------------------------------------------------------------
// The raw client
// ---------------------------------------------------------------------------

struct Harness {
    /// The client's outgoing half; dropping it is EOF for the server.
    outbound: Option<mpsc::Sender<OutboundFrame>>,
    inbound: mcp_core::Inbound,
    events: mpsc::UnboundedReceiver<String>,
    session: Option<RunningSession>,
}

fn identity() -> ServerIdentity {
    let capabilities = ServerCapabilities {
        tools: Some(ToolsCapability::default()),
        ..Default::default()
    };
    ServerIdentity::new(
        Implementation::new("engine-test-server", "1.2.3"),
        capabilities,
    )
}

fn start() -> Harness {
    start_with(|c| c)
}

fn start_with(configure: impl FnOnce(SessionConfig) -> SessionConfig) -> Harness {
    let (server_side, client_side) = Transport::pair();
    let (events_tx, events) = mpsc::unbounded_channel();
    let config = configure(SessionConfig::new(Role::Server(Arc::new(identity()))));
    let session = serve(
        server_side,
        Arc::new(TestService { events: events_tx }),
        config,
    );
    Harness {
        outbound: Some(client_side.outbound),
        inbound: client_side.inbound,
        events,
        session: Some(session),
    }
}

fn kind_of(value: &Value) -> FrameKind {
    match (value.get("method"), value.get("id")) {
        (Some(_), Some(_)) => FrameKind::Request,
        (Some(_), None) => FrameKind::Notification,
        _ => FrameKind::Response,
    }
}

impl Harness {
    async fn send_text(&self, text: impl Into<String>, kind: FrameKind) {
        let frame = OutboundFrame {
            text: text.into(),
            related: None,
            kind,
        };
        let sender = self
            .outbound
            .as_ref()
            .expect("the client's outbound was dropped");
        tokio::time::timeout(WAIT, sender.send(frame))
            .await
            .expect("sending to the server timed out")
            .expect("the server's inbound is closed");
    }

    async fn send(&self, value: Value) {
        let kind = kind_of(&value);
        self.send_text(value.to_string(), kind).await;
    }

    /// The next message from the server (fails after [`WAIT`]).
    async fn recv(&mut self) -> Value {
        match tokio::time::timeout(WAIT, self.inbound.recv()).await {
            Ok(Some(InboundFrame::Text(text) | InboundFrame::WithExtensions(text, _))) => {
                serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("server sent invalid JSON {text:?}: {e}"))
            }
            Ok(Some(InboundFrame::Unreadable(why))) => {
                panic!("unreadable frame from the server: {why}")
            }
            Ok(Some(InboundFrame::Parsed(..))) => panic!("a parsed frame, not text"),
            Ok(None) => panic!("the server closed the connection"),
            Err(_) => panic!("no message from the server within {WAIT:?}"),
        }
    }

    /// Messages up to and including the response (or error) with `id`.
    async fn recv_until_response(&mut self, id: &Value) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let message = self.recv().await;
            let is_response = message.get("method").is_none() && message.get("id") == Some(id);
            if is_response {
                return (before, message);
            }
            before.push(message);
        }
    }

    async fn expect_no_message_within(&mut self, ms: u64) {
        if let Ok(message) =
            tokio::time::timeout(Duration::from_millis(ms), self.inbound.recv()).await
        {
            match message {
                Some(InboundFrame::Text(text)) => {
                    panic!("expected silence, the server sent {text}")
                }
                other => panic!("expected silence, got {other:?}"),
            }
        }
    }

    /// Sends a request and returns its response, which must be the next
    /// message.
    async fn request(&mut self, value: Value) -> Value {
        let id = value["id"].clone();
        self.send(value).await;
        let response = self.recv().await;
        assert_eq!(
            response["id"], id,
            "expected the response to {id}, got {response}"
        );
        response
    }

    async fn initialize(&mut self, version: &str, capabilities: Value) -> Value {
        self.request(json!({
            "jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": capabilities,
                "clientInfo": { "name": "raw-test-client", "version": "0.0.1" }
            }
        }))
        .await
    }

    async fn initialized(&self) {
        self.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
    }

    /// `initialize` + `notifications/initialized`.
    async fn handshake(&mut self, version: ProtocolVersion, capabilities: Value) {
        let response = self.initialize(version.as_str(), capabilities).await;
        assert_eq!(
            response["result"]["protocolVersion"],
            version.as_str(),
            "{response}"
        );
        self.initialized().await;
    }

    async fn event(&mut self) -> String {
        tokio::time::timeout(WAIT, self.events.recv())
            .await
            .expect("no event from the service in time")
            .expect("the service's event channel closed")
    }
}

fn call(id: impl Into<Value>, tool: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id.into(), "method": "tools/call",
        "params": { "name": tool, "arguments": arguments }
    })
}

fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "raw-test-client", "version": "0.0.1" }
    })
}

/// `call` with modern per-request `_meta`.
fn modern_call(id: impl Into<Value>, tool: &str, arguments: Value) -> Value {
    let mut request = call(id, tool, arguments);
    request["params"]["_meta"] = modern_meta();
    request
}

fn error_code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error response, got {response}"))
}

fn validator(v: ProtocolVersion) -> Arc<SchemaValidator> {
    SchemaValidator::for_revision(v)
}

fn assert_valid(v: ProtocolVersion, message: &Value) {
    validator(v)
        .validate_message(message)
        .unwrap_or_else(|e| panic!("{v}: invalid message {message}: {e}"));
}

fn assert_valid_response(v: ProtocolVersion, method: &str, message: &Value) {
    assert_valid(v, message);
    validator(v)
        .validate_response(method, message)
        .unwrap_or_else(|e| panic!("{v}: invalid response to {method} {message}: {e}"));
}

// ---------------------------------------------------------------------------
// 1. Legacy handshake
// ---------------------------------------------------------------------------

#[tokio::test]
async fn legacy_handshake_in_every_legacy_revision() {
    for version in LEGACY {
        let mut h = start();
        let response = h.initialize(version.as_str(), json!({})).await;
        let result = &response["result"];
        assert_eq!(result["protocolVersion"], version.as_str(), "{response}");
        assert_eq!(
            result["serverInfo"]["name"], "engine-test-server",
            "{response}"
        );
        assert_eq!(result["serverInfo"]["version"], "1.2.3", "{response}");
        assert!(result["capabilities"]["tools"].is_object(), "{response}");
        assert!(
            result["capabilities"].get("prompts").is_none(),
            "{response}"
        );
        assert!(
            result.get("resultType").is_none(),
            "legacy results carry no resultType: {response}"
        );
        assert_valid_response(version, "initialize", &response);

        // The session works once initialized.
        h.initialized().await;
        let echo = h.request(call(2, "echo", json!({ "x": 1 }))).await;
        assert_eq!(echo["result"]["echo"], json!({ "x": 1 }), "{echo}");
        assert!(echo["result"].get("resultType").is_none(), "{echo}");
        assert_valid_response(version, "tools/call", &echo);
    }
}

#[tokio::test]
async fn legacy_handshake_with_unknown_version_offers_latest_legacy() {
    let mut h = start();
    let response = h.initialize("1999-01-01", json!({})).await;
    assert_eq!(
        response["result"]["protocolVersion"], "2025-11-25",
        "{response}"
    );
    assert_valid_response(ProtocolVersion::V2025_11_25, "initialize", &response);
}

// ---------------------------------------------------------------------------
// 2. Before initialize
// ---------------------------------------------------------------------------

#[tokio::test]
async fn request_before_initialize_without_meta_is_invalid_params() {
    let mut h = start();
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }))
        .await;
    assert_eq!(error_code(&response), -32602, "{response}");
    let response = h.request(call(2, "echo", json!({}))).await;
    assert_eq!(error_code(&response), -32602, "{response}");
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {} }))
        .await;
    assert_eq!(error_code(&response), -32602, "{response}");
}

#[tokio::test]
async fn ping_before_initialize_returns_empty_object() {
    let mut h = start();
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": "p", "method": "ping" }))
        .await;
    assert_eq!(
        response,
        json!({ "jsonrpc": "2.0", "id": "p", "result": {} })
    );
    // And a handshake still works afterwards.
    h.handshake(ProtocolVersion::V2025_11_25, json!({})).await;
}

// ---------------------------------------------------------------------------
// 3. Second initialize
// ---------------------------------------------------------------------------

#[tokio::test]
async fn second_initialize_is_invalid_request() {
    let mut h = start();
    h.initialize("2025-06-18", json!({})).await;
    // Before notifications/initialized ...
    let again = h.initialize("2025-06-18", json!({})).await;
    assert_eq!(error_code(&again), -32600, "{again}");
    // ... and after.
    h.initialized().await;
    let again = h.initialize("2025-11-25", json!({})).await;
    assert_eq!(error_code(&again), -32600, "{again}");
    // The session is unharmed and still speaks the first revision.
    let echo = h.request(call(5, "echo", json!({}))).await;
    assert!(echo.get("result").is_some(), "{echo}");
}

// ---------------------------------------------------------------------------
// 4. Capabilities and unknown methods
// ---------------------------------------------------------------------------

#[tokio::test]
async fn undeclared_capability_and_unknown_method_are_method_not_found() {
    let mut h = start();
    h.handshake(ProtocolVersion::V2025_06_18, json!({})).await;
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": 1, "method": "prompts/list" }))
        .await;
    assert_eq!(error_code(&response), -32601, "{response}");
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": { "name": "x" } }))
        .await;
    assert_eq!(error_code(&response), -32601, "{response}");
    // Not a method of MCP at all: the service says so, the engine passes it on.
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": 3, "method": "no/such/method" }))
        .await;
    assert_eq!(error_code(&response), -32601, "{response}");
    assert_valid(ProtocolVersion::V2025_06_18, &response);

    // Same in the modern era.
    let mut h = start();
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": 4, "method": "prompts/list", "params": { "_meta": modern_meta() } }))
        .await;
    assert_eq!(error_code(&response), -32601, "{response}");
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": 5, "method": "no/such/method", "params": { "_meta": modern_meta() } }))
        .await;
    assert_eq!(error_code(&response), -32601, "{response}");
}

// ---------------------------------------------------------------------------
// 5. Malformed input
// ---------------------------------------------------------------------------

#[tokio::test]
async fn malformed_json_is_a_parse_error_and_the_session_continues() {
    let mut h = start();
    h.send_text(
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ",
        FrameKind::Request,
    )
    .await;
    let response = h.recv().await;
    assert_eq!(error_code(&response), -32700, "{response}");
    assert_eq!(response["id"], Value::Null, "{response}");
    assert!(
        response.as_object().unwrap().contains_key("id"),
        "the id member must be present (null): {response}"
    );

    let pong = h
        .request(json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" }))
        .await;
    assert_eq!(pong["result"], json!({}), "{pong}");

    // Also inside an initialized session.
    h.handshake(ProtocolVersion::V2025_06_18, json!({})).await;
    h.send_text("not json at all", FrameKind::Request).await;
    let response = h.recv().await;
    assert_eq!(error_code(&response), -32700, "{response}");
    assert_eq!(response["id"], Value::Null, "{response}");
    let pong = h
        .request(json!({ "jsonrpc": "2.0", "id": 3, "method": "ping" }))
        .await;
    assert_eq!(pong["result"], json!({}), "{pong}");
}

#[tokio::test]
async fn invalid_requests_are_rejected_with_their_id_when_readable() {
    let mut h = start();
    h.handshake(ProtocolVersion::V2025_06_18, json!({})).await;

    // No method.
    h.send_text(r#"{"jsonrpc":"2.0","id":5}"#, FrameKind::Request)
        .await;
    let response = h.recv().await;
    assert_eq!(error_code(&response), -32600, "{response}");
    assert_eq!(response["id"], 5, "{response}");

    // Wrong JSON-RPC version.
    h.send_text(
        r#"{"jsonrpc":"1.0","id":6,"method":"ping"}"#,
        FrameKind::Request,
    )
    .await;
    let response = h.recv().await;
    assert_eq!(error_code(&response), -32600, "{response}");
    assert_eq!(response["id"], 6, "{response}");

    // No jsonrpc member.
    h.send_text(r#"{"id":"seven","method":"ping"}"#, FrameKind::Request)
        .await;
    let response = h.recv().await;
    assert_eq!(error_code(&response), -32600, "{response}");
    assert_eq!(response["id"], "seven", "{response}");

    // Ids of the wrong type cannot be echoed.
    for id in [r#"{"a":1}"#, "true", "[1]", "1.5"] {
        h.send_text(
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
            FrameKind::Request,
        )
        .await;
        let response = h.recv().await;
        assert_eq!(error_code(&response), -32600, "id {id}: {response}");
        assert_eq!(response["id"], Value::Null, "id {id}: {response}");
    }

    // Not an object at all.
    h.send_text("42", FrameKind::Request).await;
    let response = h.recv().await;
    assert_eq!(error_code(&response), -32600, "{response}");

    // Params that are not an object.
    for params in [r#""text""#, "7", "true"] {
        h.send_text(
            format!(r#"{{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{params}}}"#),
            FrameKind::Request,
        )
        .await;
        let response = h.recv().await;
        assert_eq!(error_code(&response), -32600, "params {params}: {response}");
        assert_eq!(response["id"], 8, "params {params}: {response}");
    }

    // Method of the wrong type.
    h.send_text(
        r#"{"jsonrpc":"2.0","id":9,"method":12}"#,
        FrameKind::Request,
    )
    .await;
    let response = h.recv().await;
    assert_eq!(error_code(&response), -32600, "{response}");
    assert_eq!(response["id"], 9, "{response}");

    // The session keeps serving.
    let pong = h
        .request(json!({ "jsonrpc": "2.0", "id": 10, "method": "ping" }))
        .await;
    assert_eq!(pong["result"], json!({}), "{pong}");
}

// ---------------------------------------------------------------------------
// 6. Cancellation
// ---------------------------------------------------------------------------

fn cancelled(id: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": id, "reason": "test says stop" }
    })
}

/// Starts `tool` as request `id`, cancels it, and checks that its handler
/// ended as cancelled and that no response comes.
async fn start_and_cancel(h: &mut Harness, id: Value, tool: &str, silence_ms: u64) {
    h.send(call(id.clone(), tool, json!({}))).await;
    assert_eq!(h.event().await, format!("slow:started:{id}"));
    h.send(cancelled(id.clone())).await;
    assert_eq!(
        h.event().await,
        format!("slow:cancelled:{id}"),
        "the handler must see the cancellation"
    );
    h.expect_no_message_within(silence_ms).await;
}

#[tokio::test]
async fn cancelled_request_gets_no_response_and_its_handler_stops() {
    let mut h = start();
    h.handshake(ProtocolVersion::V2025_06_18, json!({})).await;
    assert_valid(ProtocolVersion::V2025_06_18, &cancelled(json!(10)));

    // A handler that ignores its token is dropped by the engine.
    start_and_cancel(&mut h, json!(10), "stubborn", 300).await;
    start_and_cancel(&mut h, json!("s-11"), "stubborn", 100).await;
    let pong = h
        .request(json!({ "jsonrpc": "2.0", "id": 12, "method": "ping" }))
        .await;
    assert_eq!(pong["result"], json!({}), "{pong}");

    // Modern era: same rules.
    let mut h = start();
    h.send(modern_call(1, "stubborn", json!({}))).await;
    assert_eq!(h.event().await, "slow:started:1");
    h.send(cancelled(json!(1))).await;
    assert_eq!(h.event().await, "slow:cancelled:1");
    h.expect_no_message_within(300).await;
}

/// A handler that does what handlers should, returning as soon as its token
/// is cancelled, must not get its result sent either. Repeated, because the
/// engine's `tokio::select!` between the handler and the token is a coin
/// toss when both are ready.
#[tokio::test]
async fn cooperative_handler_returning_on_cancellation_gets_no_response() {
    let mut h = start();
    h.handshake(ProtocolVersion::V2025_06_18, json!({})).await;
    for i in 0..20 {
        let silence = if i == 0 { 300 } else { 30 };
        start_and_cancel(&mut h, json!(format!("slow-{i}")), "slow", silence).await;
    }
    let pong = h
        .request(json!({ "jsonrpc": "2.0", "id": 11, "method": "ping" }))
        .await;
    assert_eq!(pong["result"], json!({}), "{pong}");

    // Same when the session ends (EOF cancels every handler once the grace
    // period is over): nothing but the close follows.
    for _ in 0..10 {
        let mut h = start_with(|c| c.shutdown_grace(Duration::from_millis(50)));
        h.handshake(ProtocolVersion::V2025_06_18, json!({})).await;
        h.send(call("s", "slow", json!({}))).await;
        assert_eq!(h.event().await, "slow:started:\"s\"");
        drop(h.outbound.take());
        assert_eq!(h.event().await, "slow:cancelled:\"s\"");
        match tokio::time::timeout(WAIT, h.inbound.recv()).await {
            Ok(None) => {}
            Ok(Some(frame)) => panic!("unexpected frame after EOF: {frame:?}"),
            Err(_) => panic!("the server's outbound was not closed"),
        }
    }
}

#[tokio::test]
async fn cancellation_of_unknown_or_finished_requests_is_ignored() {
    let mut h = start();
    h.handshake(ProtocolVersion::V2025_06_18, json!({})).await;

    // Unknown id.
    h.send(cancelled(json!(999))).await;
    h.send(cancelled(json!("never-sent"))).await;
    h.expect_no_message_within(100).await;
    let pong = h
        .request(json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }))
        .await;
    assert_eq!(pong["result"], json!({}), "{pong}");

    // Finished request.
    let echo = h.request(call(2, "echo", json!({ "n": 2 }))).await;
    assert_eq!(echo["result"]["echo"], json!({ "n": 2 }), "{echo}");
    h.send(cancelled(json!(2))).await;
    h.expect_no_message_within(100).await;

    // A slow request running beside it is not affected by either.
    h.send(call(3, "stubborn", json!({}))).await;
    assert_eq!(h.event().await, "slow:started:3");
    h.send(cancelled(json!(2))).await;
    h.send(cancelled(json!(999))).await;
    let echo = h.request(call(4, "echo", json!({ "n": 4 }))).await;
    assert_eq!(echo["result"]["echo"], json!({ "n": 4 }), "{echo}");
    assert!(
        h.events.try_recv().is_err(),
        "the slow handler must still run"
    );
    // The id of the finished request may be reused.
    let echo = h.request(call(2, "echo", json!({ "n": 22 }))).await;
    assert_eq!(echo["result"]["echo"], json!({ "n": 22 }), "{echo}");
    h.send(cancelled(json!(3))).await;
    assert_eq!(h.event().await, "slow:cancelled:3");
    h.expect_no_message_within(200).await;
}

// ---------------------------------------------------------------------------
// 7. Progress
// ---------------------------------------------------------------------------

fn with_progress_token(mut request: Value, token: Value) -> Value {
    let params = request["params"].as_object_mut().unwrap();
    let meta = params.entry("_meta").or_insert_with(|| json!({}));
    meta["progressToken"] = token;
    request
}

/// Checks the progress notifications sent before a response: all for
/// `token`, values strictly increasing, exactly 1, 2, 3.
fn check_progress(version: ProtocolVersion, before: &[Value], token: &Value) {
    let mut values = Vec::new();
    for message in before {
        assert_eq!(
            message["method"], "notifications/progress",
            "unexpected message {message}"
        );
        assert!(message.get("id").is_none(), "{message}");
        assert_eq!(&message["params"]["progressToken"], token, "{message}");
        assert_valid(version, message);
        values.push(message["params"]["progress"].as_f64().unwrap());
    }
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "progress must strictly increase: {values:?}"
    );
    assert_eq!(
        values,
        [1.0, 2.0, 3.0],
        "the non-increasing reports must not be sent"
    );
}

#[tokio::test]
async fn progress_is_reported_before_the_response_only_when_asked() {
    let version = ProtocolVersion::V2025_06_18;
    let mut h = start();
    h.handshake(version, json!({})).await;

    let token = json!("tok-1");
    let request = with_progress_token(call(1, "progress", json!({})), token.clone());
    assert_valid(version, &request);
    h.send(request).await;
    let (before, response) = h.recv_until_response(&json!(1)).await;
    check_progress(version, &before, &token);
    assert_eq!(
        response["result"]["sent"],
        json!([true, true, true, false, false]),
        "{response}"
    );
    assert_valid_response(version, "tools/call", &response);
    h.expect_no_message_within(300).await;

    // An integer token works the same.
    h.send(with_progress_token(
        call(2, "progress", json!({})),
        json!(77),
    ))
    .await;
    let (before, _) = h.recv_until_response(&json!(2)).await;
    check_progress(version, &before, &json!(77));

    // Without a token: no notifications at all.
    h.send(call(3, "progress", json!({}))).await;
    let response = h.recv().await;
    assert_eq!(
        response["id"], 3,
        "expected only the response, got {response}"
    );
    assert_eq!(
        response["result"]["sent"],
        json!([false, false, false, false, false]),
        "{response}"
    );
    h.expect_no_message_within(300).await;
}

#[tokio::test]
async fn progress_in_the_modern_era() {
    let version = ProtocolVersion::V2026_07_28;
    let mut h = start();
    let token = json!("tok-1");
    let request = with_progress_token(modern_call(1, "progress", json!({})), token.clone());
    assert_valid(version, &request);
    h.send(request).await;
    let (before, response) = h.recv_until_response(&json!(1)).await;
    check_progress(version, &before, &token);
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
    assert_valid_response(version, "tools/call", &response);
    h.expect_no_message_within(300).await;
}

// ---------------------------------------------------------------------------
// 8. Batches
// ---------------------------------------------------------------------------

#[tokio::test]
async fn batches_in_2025_03_26() {
    let version = ProtocolVersion::V2025_03_26;
    let mut h = start();
    h.handshake(version, json!({})).await;

    let batch = json!([
        { "jsonrpc": "2.0", "id": 1, "method": "ping" },
        { "jsonrpc": "2.0", "method": "notifications/roots/list_changed" },
        call(2, "echo", json!({ "in": "batch" })),
        42
    ]);
    h.send_text(batch.to_string(), FrameKind::Request).await;
    let reply = h.recv().await;
    let items = reply
        .as_array()
        .unwrap_or_else(|| panic!("expected one array reply, got {reply}"));
    assert_eq!(items.len(), 3, "{reply}");
    let by_id = |id: Value| {
        items
            .iter()
            .filter(move |m| m["id"] == id)
            .collect::<Vec<_>>()
    };
    let ping = by_id(json!(1));
    assert_eq!(ping.len(), 1, "{reply}");
    assert_eq!(ping[0]["result"], json!({}), "{reply}");
    let echo = by_id(json!(2));
    assert_eq!(echo.len(), 1, "{reply}");
    assert_eq!(
        echo[0]["result"]["echo"],
        json!({ "in": "batch" }),
        "{reply}"
    );
    let invalid = by_id(Value::Null);
    assert_eq!(invalid.len(), 1, "{reply}");
    assert_eq!(error_code(invalid[0]), -32600, "{reply}");
    assert_valid_response(version, "ping", ping[0]);
    assert_valid_response(version, "tools/call", echo[0]);
    h.expect_no_message_within(200).await;

    // Only notifications: nothing comes back.
    let batch = json!([
        { "jsonrpc": "2.0", "method": "notifications/roots/list_changed" },
        cancelled(json!(12345))
    ]);
    h.send_text(batch.to_string(), FrameKind::Notification)
        .await;
    h.expect_no_message_within(300).await;

    // initialize inside a batch fails for that element only.
    let batch = json!([
        {
            "jsonrpc": "2.0", "id": 20, "method": "initialize",
            "params": { "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": { "name": "c", "version": "1" } }
        },
        { "jsonrpc": "2.0", "id": 21, "method": "ping" }
    ]);
    h.send_text(batch.to_string(), FrameKind::Request).await;
    let reply = h.recv().await;
    let items = reply
        .as_array()
        .unwrap_or_else(|| panic!("expected one array reply, got {reply}"));
    assert_eq!(items.len(), 2, "{reply}");
    let init = items
        .iter()
        .find(|m| m["id"] == 20)
        .unwrap_or_else(|| panic!("{reply}"));
    assert!(
        init.get("error").is_some(),
        "initialize in a batch must fail: {reply}"
    );
    let ping = items
        .iter()
        .find(|m| m["id"] == 21)
        .unwrap_or_else(|| panic!("{reply}"));
    assert_eq!(ping["result"], json!({}), "{reply}");
    assert_valid(version, &reply);

    // The session is still alive.
    let pong = h
        .request(json!({ "jsonrpc": "2.0", "id": 30, "method": "ping" }))
        .await;
    assert_eq!(pong["result"], json!({}), "{pong}");
}

#[tokio::test]
async fn batches_are_rejected_in_2025_06_18() {
    let mut h = start();
    h.handshake(ProtocolVersion::V2025_06_18, json!({})).await;
    let batch = json!([
        { "jsonrpc": "2.0", "id": 1, "method": "ping" },
        { "jsonrpc": "2.0", "id": 2, "method": "ping" }
    ]);
    h.send_text(batch.to_string(), FrameKind::Request).await;
    let reply = h.recv().await;
    assert!(
        reply.is_object(),
        "expected a single error object, got {reply}"
    );
    assert_eq!(error_code(&reply), -32600, "{reply}");
    h.expect_no_message_within(200).await;
    let pong = h
        .request(json!({ "jsonrpc": "2.0", "id": 3, "method": "ping" }))
        .await;
    assert_eq!(pong["result"], json!({}), "{pong}");
}

#[tokio::test]
async fn batches_are_rejected_in_the_modern_era() {
    let mut h = start();
    let batch = json!([
        { "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": { "_meta": modern_meta() } },
        { "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": { "_meta": modern_meta() } }
    ]);
    h.send_text(batch.to_string(), FrameKind::Request).await;
    let reply = h.recv().await;
    assert!(
        reply.is_object(),
        "expected a single error object, got {reply}"
    );
    assert_eq!(error_code(&reply), -32600, "{reply}");
    h.expect_no_message_within(200).await;
}

// ---------------------------------------------------------------------------
// 9. Modern era
// ---------------------------------------------------------------------------

#[tokio::test]
async fn modern_request_is_handled_with_result_type() {
    let version = ProtocolVersion::V2026_07_28;
    let mut h = start();
    let request = modern_call(1, "echo", json!({ "m": true }));
    assert_valid(version, &request);
    let response = h.request(request).await;
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
    assert_eq!(
        response["result"]["echo"],
        json!({ "m": true }),
        "{response}"
    );
    assert_valid_response(version, "tools/call", &response);

    // Without clientInfo (optional) it is served too.
    let mut request = modern_call(2, "echo", json!({}));
    request["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientInfo");
    let response = h.request(request).await;
    assert_eq!(response["result"]["resultType"], "complete", "{response}");

    // Errors stay plain errors.
    let response = h.request(modern_call(3, "no-such-tool", json!({}))).await;
    assert_eq!(error_code(&response), -32602, "{response}");
    assert_valid(version, &response);
}

#[tokio::test]
async fn stateless_requests_each_see_their_own_client() {
    let mut h = start();
    let from = |id: i64, client: &str, sampling: bool, token: Option<i64>| {
        let mut request = modern_call(id, "whoami", json!({}));
        let meta = &mut request["params"]["_meta"];
        meta["io.modelcontextprotocol/clientInfo"] = json!({ "name": client, "version": "1" });
        if sampling {
            meta["io.modelcontextprotocol/clientCapabilities"] = json!({ "sampling": {} });
        }
        if let Some(token) = token {
            meta["progressToken"] = json!(token);
        }
        request
    };
    // The same client twice (its `_meta` repeats), others between; what
    // one request said never shows in another.
    let sent = [
        (1, "a", true, None),
        (2, "b", false, None),
        (3, "a", true, None),
        (4, "a", false, Some(40)),
        (5, "a", true, Some(50)),
        (6, "a", true, None),
    ];
    for (id, client, sampling, token) in sent {
        let request = from(id, client, sampling, token);
        let response = h.request(request.clone()).await;
        let seen = &response["result"];
        assert_eq!(seen["client"], client, "{response}");
        assert_eq!(seen["sampling"], sampling, "{response}");
        assert_eq!(seen["token"], json!(token), "{response}");
        assert_eq!(seen["revision"], "2026-07-28", "{response}");
        // `_meta` opens the params: whether read or recognised, it is
        // not handed on again.
        assert_eq!(
            seen["params_past_meta"],
            json!({ "arguments": {}, "name": "whoami" }),
            "{response}"
        );
        // The handler has the params whole, a recognised `_meta` included.
        assert_eq!(seen["params"], request["params"], "{response}");
    }
    // Where `_meta` is not first, the params go on untouched.
    let meta = from(8, "a", true, None)["params"]["_meta"].to_string();
    let text = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"whoami","_meta":{meta}}}}}"#
    );
    h.send_text(text, FrameKind::Request).await;
    let response = h.recv().await;
    assert_eq!(response["result"]["client"], "a", "{response}");
    assert_eq!(
        response["result"]["params_past_meta"],
        json!({ "name": "whoami", "_meta": serde_json::from_str::<Value>(&meta).unwrap() }),
        "{response}"
    );
    // A request that lost a required member is refused even after the same
    // client was served.
    let mut request = from(7, "a", true, None);
    request["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    assert_eq!(error_code(&h.request(request).await), -32602);
}

#[tokio::test]
async fn modern_unsupported_version_is_minus_32022() {
    let mut h = start();
    let mut request = modern_call(1, "echo", json!({}));
    request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let response = h.request(request).await;
    assert_eq!(error_code(&response), -32022, "{response}");
    let data = &response["error"]["data"];
    let supported = data["supported"]
        .as_array()
        .unwrap_or_else(|| panic!("data.supported: {response}"));
    assert!(!supported.is_empty(), "{response}");
    assert!(supported.contains(&json!("2026-07-28")), "{response}");
    assert_eq!(data["requested"], "1900-01-01", "{response}");
    assert_valid(ProtocolVersion::V2026_07_28, &response);
    assert!(
        validator(ProtocolVersion::V2026_07_28).has_def("UnsupportedProtocolVersionError"),
        "the schema names the error"
    );
    validator(ProtocolVersion::V2026_07_28)
        .validate_def("UnsupportedProtocolVersionError", &response)
        .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn server_discover_describes_the_server() {
    let version = ProtocolVersion::V2026_07_28;
    let mut h = start();
    let request = json!({ "jsonrpc": "2.0", "id": "discover-1", "method": "server/discover", "params": { "_meta": modern_meta() } });
    assert_valid(version, &request);
    let response = h.request(request).await;
    let result = &response["result"];
    let versions = result["supportedVersions"]
        .as_array()
        .unwrap_or_else(|| panic!("{response}"));
    assert!(versions.contains(&json!("2026-07-28")), "{response}");
    assert!(result["capabilities"]["tools"].is_object(), "{response}");
    assert!(
        result["capabilities"].get("prompts").is_none(),
        "{response}"
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "engine-test-server",
        "{response}"
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["version"], "1.2.3",
        "{response}"
    );
    assert_eq!(result["resultType"], "complete", "{response}");
    assert!(result["ttlMs"].is_u64(), "{response}");
    assert!(
        matches!(result["cacheScope"].as_str(), Some("public" | "private")),
        "{response}"
    );
    assert_valid_response(version, "server/discover", &response);
    validator(version)
        .validate_def("DiscoverResult", result)
        .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn modern_request_without_client_capabilities_is_invalid_params() {
    let mut h = start();
    let mut request = modern_call(1, "echo", json!({}));
    request["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let response = h.request(request).await;
    assert_eq!(error_code(&response), -32602, "{response}");

    // Same for discovery.
    let response = h
        .request(json!({
            "jsonrpc": "2.0", "id": 2, "method": "server/discover",
            "params": { "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } }
        }))
        .await;
    assert_eq!(error_code(&response), -32602, "{response}");

    // A _meta that is not an object at all.
    let response = h
        .request(
            json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": { "_meta": 5 } }),
        )
        .await;
    assert_eq!(error_code(&response), -32602, "{response}");
}

#[tokio::test]
async fn ping_is_removed_in_the_modern_era() {
    let mut h = start();
    let response =
        h.request(json!({ "jsonrpc": "2.0", "id": 1, "method": "ping", "params": { "_meta": modern_meta() } })).await;
    assert_eq!(error_code(&response), -32601, "{response}");
    // The modern request did not start a legacy session: a handshake works.
    h.handshake(ProtocolVersion::V2025_11_25, json!({})).await;
}

// ---------------------------------------------------------------------------
// 10. Server-to-client requests
// ---------------------------------------------------------------------------

#[tokio::test]
async fn server_asks_a_client_that_declared_sampling() {
    let version = ProtocolVersion::V2025_06_18;
    let mut h = start();
    h.handshake(version, json!({ "sampling": {} })).await;
    h.send(call(1, "ask_client", json!({}))).await;
    let request = h.recv().await;
    assert_eq!(request["method"], "sampling/createMessage", "{request}");
    assert!(
        request["id"].is_i64() || request["id"].is_string(),
        "{request}"
    );
    assert_valid(version, &request);
    let answer = json!({ "role": "assistant", "content": { "type": "text", "text": "hi there" }, "model": "test-model" });
    let reply = json!({ "jsonrpc": "2.0", "id": request["id"], "result": answer });
    assert_valid(version, &reply);
    h.send(reply).await;
    let response = h.recv().await;
    assert_eq!(response["id"], 1, "{response}");
    assert_eq!(response["result"]["answer"], answer, "{response}");

    // The client answering with an error reaches the tool as an error.
    h.send(call(2, "ask_client", json!({}))).await;
    let request = h.recv().await;
    assert_eq!(request["method"], "sampling/createMessage", "{request}");
    h.send(json!({ "jsonrpc": "2.0", "id": request["id"], "error": { "code": -1, "message": "user declined" } }))
        .await;
    let response = h.recv().await;
    assert_eq!(response["id"], 2, "{response}");
    assert_eq!(response["result"]["errorKind"], "rpc", "{response}");
}

#[tokio::test]
async fn server_does_not_ask_a_client_without_sampling() {
    let mut h = start();
    h.handshake(ProtocolVersion::V2025_06_18, json!({ "roots": {} }))
        .await;
    let response = h.request(call(1, "ask_client", json!({}))).await;
    assert_eq!(response["result"]["errorKind"], "not_allowed", "{response}");
    h.expect_no_message_within(200).await;
}

#[tokio::test]
async fn a_clients_request_ends_its_handshake_a_ping_does_not() {
    // Over HTTP, `notifications/initialized` and the client's first
    // request race on separate connections, or reach different instances
    // sharing the session: a request (a ping aside) says the client is
    // past its handshake as surely as the notification.
    let mut h = start();
    h.initialize("2025-06-18", json!({ "sampling": {} })).await;
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": "p", "method": "ping" }))
        .await;
    assert_eq!(response["result"], json!({}), "{response}");
    h.expect_no_message_within(200).await;
    // No notifications/initialized yet: the call's own question goes out.
    h.send(call(1, "ask_client", json!({}))).await;
    let request = h.recv().await;
    assert_eq!(request["method"], "sampling/createMessage", "{request}");
    h.send(json!({ "jsonrpc": "2.0", "id": request["id"], "result": {
        "role": "assistant", "content": { "type": "text", "text": "hi" }, "model": "m" } }))
        .await;
    let response = h.recv().await;
    assert_eq!(response["id"], 1, "{response}");
    // The notification, late, changes nothing.
    h.initialized().await;
    let echo = h.request(call(2, "echo", json!({}))).await;
    assert!(echo.get("result").is_some(), "{echo}");
}

#[tokio::test]
async fn modern_server_sends_no_requests() {
    let mut h = start();
    let mut request = modern_call(1, "ask_client", json!({}));
    request["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({ "sampling": {} });
    let response = h.request(request).await;
    assert_eq!(response["result"]["errorKind"], "not_allowed", "{response}");
    h.expect_no_message_within(200).await;
}

// ---------------------------------------------------------------------------
// 11. Outgoing timeout
// ---------------------------------------------------------------------------

#[tokio::test]
async fn unanswered_server_request_times_out_and_is_cancelled() {
    let version = ProtocolVersion::V2025_06_18;
    let mut h = start_with(|c| c.request_timeout(Duration::from_millis(200)));
    h.handshake(version, json!({ "sampling": {} })).await;
    h.send(call(1, "ask_client", json!({}))).await;
    let request = h.recv().await;
    assert_eq!(request["method"], "sampling/createMessage", "{request}");
    let request_id = request["id"].clone();
    // Never answered.
    let (before, response) = h.recv_until_response(&json!(1)).await;
    assert_eq!(response["result"]["errorKind"], "timeout", "{response}");
    let cancels: Vec<_> = before
        .iter()
        .filter(|m| m["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(
        cancels.len(),
        1,
        "expected one cancellation, got {before:?}"
    );
    assert_eq!(
        cancels[0]["params"]["requestId"], request_id,
        "{}",
        cancels[0]
    );
    assert_valid(version, cancels[0]);
    assert_eq!(before.len(), 1, "unexpected messages {before:?}");

    // A late answer is dropped quietly.
    h.send(json!({
        "jsonrpc": "2.0", "id": request_id,
        "result": { "role": "assistant", "content": { "type": "text", "text": "late" }, "model": "m" }
    }))
    .await;
    h.expect_no_message_within(200).await;
    let pong = h
        .request(json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" }))
        .await;
    assert_eq!(pong["result"], json!({}), "{pong}");
}

// ---------------------------------------------------------------------------
// 12. EOF
// ---------------------------------------------------------------------------

#[tokio::test]
async fn eof_ends_the_session_and_cancels_handlers() {
    let mut h = start_with(|c| c.shutdown_grace(Duration::from_millis(200)));
    h.handshake(ProtocolVersion::V2025_06_18, json!({})).await;
    h.send(call("s", "stubborn", json!({}))).await;
    assert_eq!(h.event().await, "slow:started:\"s\"");

    drop(h.outbound.take());
    let session = h.session.take().unwrap();
    tokio::time::timeout(Duration::from_secs(3), session.wait())
        .await
        .expect("the session must end within a few seconds of EOF");
    assert_eq!(h.event().await, "slow:cancelled:\"s\"");
    // The server's side of the transport is closed too, with no response.
    match tokio::time::timeout(WAIT, h.inbound.recv()).await {
        Ok(None) => {}
        Ok(Some(frame)) => panic!("unexpected frame after EOF: {frame:?}"),
        Err(_) => panic!("the server's outbound was not closed"),
    }
}

#[tokio::test]
async fn eof_in_the_modern_era_ends_the_session() {
    let mut h = start_with(|c| c.shutdown_grace(Duration::from_millis(200)));
    h.send(modern_call(1, "stubborn", json!({}))).await;
    assert_eq!(h.event().await, "slow:started:1");
    drop(h.outbound.take());
    let session = h.session.take().unwrap();
    tokio::time::timeout(Duration::from_secs(3), session.wait())
        .await
        .expect("the session must end within a few seconds of EOF");
    assert_eq!(h.event().await, "slow:cancelled:1");
}

#[tokio::test]
async fn eof_lets_requests_in_flight_answer_within_the_grace_period() {
    let mut h = start();
    h.handshake(ProtocolVersion::V2025_06_18, json!({})).await;
    h.send(call("last", "echo", json!({"x": 1}))).await;
    drop(h.outbound.take());
    let response = h.recv().await;
    assert_eq!(
        response["id"], "last",
        "the last request is still answered: {response}"
    );
    assert!(response.get("result").is_some(), "{response}");
}

// ---------------------------------------------------------------------------
// 13. Concurrency
// ---------------------------------------------------------------------------

#[tokio::test]
async fn many_concurrent_requests_each_get_their_response() {
    let mut h = start();
    h.handshake(ProtocolVersion::V2025_11_25, json!({})).await;
    // One slow request stays in flight the whole time.
    h.send(call("slow", "stubborn", json!({}))).await;
    for i in 0..50 {
        h.send(call(i, "echo", json!({ "i": i }))).await;
    }
    let mut seen = BTreeSet::new();
    for _ in 0..50 {
        let response = h.recv().await;
        let id = response["id"]
            .as_i64()
            .unwrap_or_else(|| panic!("{response}"));
        assert_eq!(response["result"]["echo"]["i"], id, "{response}");
        assert!(seen.insert(id), "duplicate response for {id}");
    }
    assert_eq!(seen, (0..50).collect::<BTreeSet<_>>());
    h.send(cancelled(json!("slow"))).await;
    h.expect_no_message_within(200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_concurrent_requests_on_a_multi_threaded_runtime() {
    let mut h = start();
    h.send(modern_call("first", "echo", json!({}))).await;
    h.recv().await;
    for i in 0..50 {
        h.send(modern_call(i, "echo", json!({ "i": i }))).await;
    }
    let mut seen = BTreeSet::new();
    for _ in 0..50 {
        let response = h.recv().await;
        let id = response["id"]
            .as_i64()
            .unwrap_or_else(|| panic!("{response}"));
        assert_eq!(response["result"]["echo"]["i"], id, "{response}");
        assert_eq!(response["result"]["resultType"], "complete", "{response}");
        assert!(seen.insert(id), "duplicate response for {id}");
    }
    assert_eq!(seen, (0..50).collect::<BTreeSet<_>>());
    h.expect_no_message_within(100).await;
}

#[tokio::test]
async fn an_id_in_flight_cannot_be_reused() {
    let mut h = start();
    h.handshake(ProtocolVersion::V2025_06_18, json!({})).await;
    h.send(call(1, "stubborn", json!({}))).await;
    assert_eq!(h.event().await, "slow:started:1");
    let response = h.request(call(1, "echo", json!({}))).await;
    assert_eq!(error_code(&response), -32600, "{response}");
    // The first request is still running and still cancellable.
    assert!(
        h.events.try_recv().is_err(),
        "the first request must still run"
    );
    h.send(cancelled(json!(1))).await;
    assert_eq!(h.event().await, "slow:cancelled:1");
    h.expect_no_message_within(200).await;
}

// ---------------------------------------------------------------------------
// A session its transport drives (DirectSession)
// ---------------------------------------------------------------------------

/// Keeps what a direct session sends.
#[derive(Default)]
struct Collected(std::sync::Mutex<Vec<OutboundFrame>>);

impl Collected {
    fn take(&self) -> Vec<OutboundFrame> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl FrameSink for Collected {
    fn send(&self, frame: OutboundFrame) -> BoxFuture<'_, Result<(), SinkClosed>> {
        self.0.lock().unwrap().push(frame);
        Box::pin(std::future::ready(Ok(())))
    }
}

/// A direct session made by `make`, what it sends, and the service's events.
type Direct = (
    DirectSession,
    Arc<Collected>,
    mpsc::UnboundedReceiver<String>,
);

fn direct_made_by(
    make: fn(Arc<dyn FrameSink>, Arc<dyn Service>, SessionConfig) -> DirectSession,
) -> Direct {
    let (events_tx, events) = mpsc::unbounded_channel();
    let sent = Arc::new(Collected::default());
    let session = make(
        Arc::clone(&sent) as Arc<dyn FrameSink>,
        Arc::new(TestService { events: events_tx }),
        SessionConfig::new(Role::Server(Arc::new(identity()))),
    );
    (session, sent, events)
}

fn direct() -> Direct {
    direct_made_by(DirectSession::new)
}

/// Waits for a request's task, which the session's close ends.
async fn ends_once_closed(running: tokio::task::JoinHandle<()>) {
    tokio::time::timeout(WAIT, running)
        .await
        .expect("the request ends once the session closes")
        .unwrap();
}

async fn next_event(events: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(WAIT, events.recv())
        .await
        .expect("an event in time")
        .expect("the service is alive")
}

fn text(value: Value) -> InboundFrame {
    InboundFrame::Text(value.to_string())
}

#[tokio::test]
async fn direct_session_answers_within_the_callers_future() {
    let (session, sent, _events) = direct();
    session
        .handle(text(modern_call(1, "echo", json!({ "a": 1 }))))
        .await;
    let frames = sent.take();
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0].kind, FrameKind::Response);
    assert_eq!(frames[0].related, Some(jsonrpc::RequestId::Number(1)));
    let response: Value = serde_json::from_str(&frames[0].text).unwrap();
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
    assert_eq!(response["result"]["echo"], json!({ "a": 1 }), "{response}");

    // A legacy handshake on the same kind of session, then a call.
    let init = json!({
        "jsonrpc": "2.0", "id": 2, "method": "initialize",
        "params": { "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": { "name": "t", "version": "1" } }
    });
    session.handle(text(init)).await;
    session
        .handle(text(
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        ))
        .await;
    session.handle(text(call(3, "echo", json!({})))).await;
    let ids: Vec<Value> = sent
        .take()
        .iter()
        .map(|f| serde_json::from_str::<Value>(&f.text).unwrap())
        .inspect(|r| assert!(r.get("result").is_some(), "{r}"))
        .map(|r| r["id"].clone())
        .collect();
    assert_eq!(ids, [json!(2), json!(3)]);
    assert_eq!(
        session.peer().negotiated().and_then(|n| n.revision),
        Some(ProtocolVersion::V2025_06_18)
    );
}

#[tokio::test]
async fn direct_session_abandons_dropped_requests_and_cancels_on_close() {
    let (session, sent, mut events) = direct();
    // A request whose future is dropped unfinished gets no response, and
    // its id is free again.
    let pending = session.handle(text(modern_call(7, "slow", json!({}))));
    assert!(futures::FutureExt::now_or_never(pending).is_none());
    assert_eq!(next_event(&mut events).await, "slow:started:7");
    session
        .handle(text(modern_call(7, "echo", json!({}))))
        .await;
    let frames = sent.take();
    assert_eq!(frames.len(), 1, "{frames:?}");
    let response: Value = serde_json::from_str(&frames[0].text).unwrap();
    assert_eq!(response["id"], 7);
    assert!(response.get("result").is_some(), "{response}");

    // Closing the session cancels what still runs; it is not answered.
    let running = tokio::spawn(session.handle(text(modern_call(8, "slow", json!({})))));
    loop {
        if next_event(&mut events).await == "slow:started:8" {
            break;
        }
    }
    session.close();
    ends_once_closed(running).await;
    assert_eq!(next_event(&mut events).await, "slow:cancelled:8");
    assert!(session.peer().is_closed());
    assert!(
        sent.take().iter().all(|f| f.kind == FrameKind::Ended),
        "a cancelled request is not answered"
    );
}

#[tokio::test]
async fn a_session_for_one_message_answers_one_request_and_cancels_it_on_close() {
    let responses = |sent: &Collected| -> Vec<Value> {
        sent.take()
            .iter()
            .filter(|f| f.kind == FrameKind::Response)
            .map(|f| serde_json::from_str(&f.text).unwrap())
            .collect()
    };
    let (session, sent, _events) = direct_made_by(DirectSession::for_one_message);
    session
        .handle(text(modern_call(1, "echo", json!({ "a": 1 }))))
        .await;
    let answered = responses(&sent);
    assert_eq!(answered.len(), 1, "{answered:?}");
    assert_eq!(answered[0]["result"]["echo"], json!({ "a": 1 }));
    session
        .handle(text(modern_call(2, "echo", json!({}))))
        .await;
    let refused = responses(&sent);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["id"], 2);
    assert_eq!(refused[0]["error"]["code"], -32600, "{refused:?}");

    // Its request is cancelled when the session closes, and not answered.
    let (session, sent, mut events) = direct_made_by(DirectSession::for_one_message);
    let running = tokio::spawn(session.handle(text(modern_call(3, "slow", json!({})))));
    assert_eq!(next_event(&mut events).await, "slow:started:3");
    session.close();
    ends_once_closed(running).await;
    assert_eq!(next_event(&mut events).await, "slow:cancelled:3");
    assert!(
        responses(&sent).is_empty(),
        "a cancelled request is not answered"
    );
}

#[tokio::test]
async fn a_frame_the_transport_parsed_is_handled_with_its_extensions() {
    let (to_server, inbound) = mpsc::channel(8);
    let (outbound, mut from_server) = mpsc::channel::<OutboundFrame>(8);
    let (events, _) = mpsc::unbounded_channel();
    let _session = serve(
        Transport {
            inbound: inbound.into(),
            outbound,
            flushed: None,
        },
        Arc::new(TestService { events }),
        SessionConfig::new(Role::Server(Arc::new(identity()))),
    );
    let send = |message: Value, extensions: Option<Arc<Extensions>>| {
        let frame = jsonrpc::Message::parse_frame(&message.to_string()).expect("a message");
        to_server.send(InboundFrame::Parsed(frame, extensions))
    };
    let mut recv = async || -> Value {
        let frame = tokio::time::timeout(WAIT, from_server.recv())
            .await
            .expect("an answer in time")
            .expect("the server is running");
        serde_json::from_str(&frame.text).expect("JSON")
    };
    let version = ProtocolVersion::V2025_06_18.as_str();
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "parsed", "version": "1"}}}),
        None,
    )
    .await
    .unwrap();
    assert_eq!(recv().await["result"]["protocolVersion"], version);
    send(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        None,
    )
    .await
    .unwrap();
    let extensions = Arc::new(Extensions::default());
    extensions.insert(Caller("legacy HTTP+SSE"));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "caller"}}),
        Some(extensions),
    )
    .await
    .unwrap();
    let answer = recv().await;
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["result"]["caller"], "legacy HTTP+SSE", "{answer}");
}
