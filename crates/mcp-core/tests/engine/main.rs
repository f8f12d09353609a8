//! Integration tests of the session engine in the server role: the test
//! drives the client half of an in-memory transport with raw JSON-RPC text
//! and checks what the engine answers, against the protocol rules and the
//! official schema of each revision.

mod direct;
mod flow;
mod handshake;
mod modern;
mod outgoing;

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

/// A `notifications/cancelled` for the request `id`.
fn cancelled(id: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": id, "reason": "test says stop" }
    })
}
