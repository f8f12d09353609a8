//! Tasks end to end: a [`Server`] with task-capable tools, driven over an
//! in-memory transport with raw JSON-RPC text, in the 2025-11-25 shape
//! (sessions, `params.task`, `tasks/result`, `tasks/list`) and the
//! 2026-07-28 extension shape (server-directed, flat results,
//! `tasks/update`). Responses are checked against each revision's schema.

use std::sync::Arc;
use std::time::Duration;

use mcp_core::{FrameKind, InboundFrame, OutboundFrame, RunningSession, Transport};
use mcp_schema::validation::SchemaValidator;
use mcp_schema::{CallToolResult, ElicitRequestParams, ErrorObject, ProtocolVersion};
use mcp_server::{Context, HandlerError, NoArguments, Server, TaskSupport, ToolDef};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// How long any single wait may take before the test fails.
const WAIT: Duration = Duration::from_secs(5);

const LEGACY: ProtocolVersion = ProtocolVersion::V2025_11_25;
const MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;

// ---------------------------------------------------------------------------
// The server under test
// ---------------------------------------------------------------------------

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct GreetArgs {
    /// Whom to greet.
    name: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SlowArgs {
    /// Seconds to work.
    seconds: f64,
    /// Echoed in the result.
    label: String,
}

fn server() -> Server {
    server_with_page_size(100)
}

fn server_with_page_size(page_size: usize) -> Server {
    Server::builder("tasks-test", "0.0.1")
        .page_size(page_size)
        .tool(ToolDef::new(
            "greet",
            "Says hello",
            |args: GreetArgs, _ctx: Context| async move {
                Ok::<_, HandlerError>(format!("Hello, {}!", args.name))
            },
        ))
        .tool(
            ToolDef::new(
                "slow_compute",
                "Works for a while",
                |args: SlowArgs, ctx: Context| async move {
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs_f64(args.seconds)) => {}
                        _ = ctx.cancelled() => return Err(HandlerError::failed("cancelled")),
                    }
                    Ok(format!("{}: done", args.label))
                },
            )
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolDef::new(
                "failing_job",
                "Fails with a tool error",
                |_: NoArguments, _ctx: Context| async move {
                    Ok::<_, HandlerError>(CallToolResult::error("the job failed"))
                },
            )
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolDef::new(
                "protocol_error_job",
                "Fails with a JSON-RPC error",
                |_: NoArguments, _ctx: Context| async move {
                    Err::<String, _>(HandlerError::Protocol(ErrorObject::internal(
                        "the job hit a protocol error",
                    )))
                },
            )
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolDef::new(
                "only_as_task",
                "Runs only as a task",
                |_: NoArguments, _ctx: Context| async move { Ok::<_, HandlerError>("done") },
            )
            .task_support(TaskSupport::Required),
        )
        .tool(
            ToolDef::new(
                "ask_name",
                "Asks the user's name, then greets",
                |_: NoArguments, ctx: Context| async move {
                    let form: ElicitRequestParams = serde_json::from_value(json!({
                        "message": "Your name?",
                        "requestedSchema": {"type": "object",
                            "properties": {"name": {"type": "string"}}, "required": ["name"]}
                    }))
                    .map_err(HandlerError::failed)?;
                    let answer = ctx.elicit("name", form).await?;
                    let content =
                        serde_json::to_value(&answer.content).map_err(HandlerError::failed)?;
                    let name = content["name"].as_str().unwrap_or("nobody").to_owned();
                    Ok(format!("Hello, {name}!"))
                },
            )
            .task_support(TaskSupport::Optional),
        )
        .build()
}

// ---------------------------------------------------------------------------
// The raw client
// ---------------------------------------------------------------------------

struct Harness {
    outbound: mpsc::Sender<OutboundFrame>,
    inbound: mcp_core::Inbound,
    /// Notifications received while waiting for responses.
    notifications: Vec<Value>,
    _session: RunningSession,
    next_id: i64,
}

fn kind_of(value: &Value) -> FrameKind {
    match (value.get("method"), value.get("id")) {
        (Some(_), Some(_)) => FrameKind::Request,
        (Some(_), None) => FrameKind::Notification,
        _ => FrameKind::Response,
    }
}

impl Harness {
    fn start(server: &Server) -> Harness {
        let (server_side, client_side) = Transport::pair();
        let session = mcp_core::serve(
            server_side,
            Arc::new(server.clone()),
            server.session_config(),
        );
        Harness {
            outbound: client_side.outbound,
            inbound: client_side.inbound,
            notifications: Vec::new(),
            _session: session,
            next_id: 1,
        }
    }

    async fn send(&self, value: Value) {
        let frame = OutboundFrame {
            kind: kind_of(&value),
            text: value.to_string(),
            related: None,
        };
        tokio::time::timeout(WAIT, self.outbound.send(frame))
            .await
            .expect("sending timed out")
            .expect("the server's inbound is closed");
    }

    /// The next message, as text.
    async fn recv_text(&mut self) -> String {
        match tokio::time::timeout(WAIT, self.inbound.recv()).await {
            Ok(Some(InboundFrame::Text(text) | InboundFrame::WithExtensions(text, _))) => text,
            Ok(Some(InboundFrame::Unreadable(why))) => panic!("unreadable frame: {why}"),
            Ok(Some(InboundFrame::Parsed(..))) => panic!("a parsed frame, not text"),
            Ok(None) => panic!("the server closed the connection"),
            Err(_) => panic!("no message from the server within {WAIT:?}"),
        }
    }

    /// Sends a request and waits for its response (text and JSON), keeping
    /// notifications that arrive before it.
    async fn exchange(&mut self, method: &str, params: Value) -> (String, Value) {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let text = self.recv_text().await;
            let message: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("invalid JSON {text:?}: {e}"));
            if message.get("method").is_none() && message["id"] == json!(id) {
                return (text, message);
            }
            assert!(
                message.get("id").is_none(),
                "unexpected message while waiting for {id}: {message}"
            );
            self.notifications.push(message);
        }
    }

    /// A request whose response must be valid for `version`.
    async fn request(&mut self, version: ProtocolVersion, method: &str, params: Value) -> Value {
        let (_, response) = self.exchange(method, params).await;
        SchemaValidator::for_revision(version)
            .validate_response(method, &response)
            .unwrap_or_else(|e| panic!("{version}: invalid response to {method}: {e}\n{response}"));
        response
    }

    async fn handshake(&mut self, version: ProtocolVersion) -> Value {
        let init = self
            .request(
                version,
                "initialize",
                json!({"protocolVersion": version.as_str(), "capabilities": {},
                       "clientInfo": {"name": "tasks-test", "version": "0"}}),
            )
            .await;
        assert_eq!(init["result"]["protocolVersion"], version.as_str());
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        init
    }

    /// Waits for a notification `method` about task `id` with `status`.
    async fn task_notification(&mut self, method: &str, id: &str, status: &str) -> Value {
        let matches = |n: &Value| {
            n["method"] == method && n["params"]["taskId"] == id && n["params"]["status"] == status
        };
        if let Some(found) = self.notifications.iter().find(|n| matches(n)) {
            return found.clone();
        }
        loop {
            let text = self.recv_text().await;
            let message: Value = serde_json::from_str(&text).unwrap();
            if matches(&message) {
                return message;
            }
            self.notifications.push(message);
        }
    }
}

fn result(response: &Value) -> &Value {
    response
        .get("result")
        .unwrap_or_else(|| panic!("expected a result, got {response}"))
}

/// A modern empty acknowledgement: `resultType` complete, the server's
/// identity in `_meta`, nothing else.
fn assert_empty_ack(response: &Value) {
    let mut ack = result(response).clone();
    let meta = ack.as_object_mut().and_then(|o| o.remove("_meta"));
    assert_eq!(ack, json!({"resultType": "complete"}), "{response}");
    assert_eq!(
        meta.unwrap_or_default()["io.modelcontextprotocol/serverInfo"]["name"],
        "tasks-test",
        "{response}"
    );
}

fn error_code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error, got {response}"))
}

fn call_params(tool: &str, arguments: Value) -> Value {
    json!({"name": tool, "arguments": arguments})
}

/// A legacy call run as a task; returns the task id.
async fn legacy_task(h: &mut Harness, tool: &str, arguments: Value) -> String {
    let mut params = call_params(tool, arguments);
    params["task"] = json!({"ttl": 60000});
    let response = h.request(LEGACY, "tools/call", params).await;
    let task = &result(&response)["task"];
    assert_eq!(task["status"], "working", "{response}");
    assert_eq!(task["ttl"], 60000, "{response}");
    assert!(task["pollInterval"].is_u64(), "{response}");
    task["taskId"].as_str().unwrap().to_owned()
}

fn is_iso_8601(s: &Value) -> bool {
    let s = s.as_str().unwrap_or_default();
    let b = s.as_bytes();
    s.len() >= 20
        && s.ends_with('Z')
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
}

// ---------------------------------------------------------------------------
// 2025-11-25
// ---------------------------------------------------------------------------

#[tokio::test]
async fn legacy_capabilities_and_tool_execution_by_revision() {
    let server = server();
    let mut h = Harness::start(&server);
    let init = h.handshake(LEGACY).await;
    assert_eq!(
        init["result"]["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
    );
    assert!(init["result"]["capabilities"].get("extensions").is_none());
    let tools = h.request(LEGACY, "tools/list", json!({})).await;
    let tools = result(&tools)["tools"].as_array().unwrap().clone();
    let support = |name: &str| {
        tools.iter().find(|t| t["name"] == name).unwrap()["execution"]["taskSupport"].clone()
    };
    assert_eq!(support("slow_compute"), "optional");
    assert_eq!(support("only_as_task"), "required");
    assert_eq!(support("greet"), Value::Null);

    for older in [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
    ] {
        let mut h = Harness::start(&server);
        let init = h.handshake(older).await;
        let caps = &init["result"]["capabilities"];
        assert!(
            caps.get("tasks").is_none() && caps.get("extensions").is_none(),
            "{older}: {caps}"
        );
        let tools = h.request(older, "tools/list", json!({})).await;
        assert!(
            result(&tools)["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t.get("execution").is_none()),
            "{older}: {tools}"
        );
        let (_, get) = h.exchange("tasks/get", json!({"taskId": "x"})).await;
        assert_eq!(error_code(&get), -32601, "{older}");
        // A task-only tool cannot run where there are no tasks; a task
        // request is ignored.
        let (_, only) = h
            .exchange("tools/call", call_params("only_as_task", json!({})))
            .await;
        assert_eq!(error_code(&only), -32601, "{older}");
        let mut params = call_params("greet", json!({"name": "Old"}));
        params["task"] = json!({});
        let greet = h.request(older, "tools/call", params).await;
        assert_eq!(result(&greet)["content"][0]["text"], "Hello, Old!");
    }
}

#[tokio::test]
async fn legacy_task_lifecycle_with_cancellation() {
    let server = server();
    let mut h = Harness::start(&server);
    h.handshake(LEGACY).await;

    let id = legacy_task(&mut h, "slow_compute", json!({"seconds": 60, "label": "x"})).await;
    assert_eq!(id.len(), 32);
    let get = h.request(LEGACY, "tasks/get", json!({"taskId": id})).await;
    let task = result(&get);
    assert_eq!(task["taskId"], id.as_str());
    assert_eq!(task["status"], "working");
    assert!(
        is_iso_8601(&task["createdAt"]) && is_iso_8601(&task["lastUpdatedAt"]),
        "{task}"
    );

    let cancel = h
        .request(LEGACY, "tasks/cancel", json!({"taskId": id}))
        .await;
    assert_eq!(result(&cancel)["status"], "cancelled", "{cancel}");
    let get = h.request(LEGACY, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(result(&get)["status"], "cancelled");
    let (_, again) = h.exchange("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(error_code(&again), -32602, "{again}");

    // The session heard about it.
    let note = h
        .task_notification("notifications/tasks/status", &id, "cancelled")
        .await;
    SchemaValidator::for_revision(LEGACY)
        .validate_message(&note)
        .unwrap_or_else(|e| panic!("invalid notification {note}: {e}"));

    // A cancelled task has no result.
    let (_, payload) = h.exchange("tasks/result", json!({"taskId": id})).await;
    assert!(error_code(&payload) < 0);
}

#[tokio::test]
async fn legacy_results_errors_and_related_task_meta() {
    let server = server();
    let mut h = Harness::start(&server);
    h.handshake(LEGACY).await;

    // A tool error: tasks/result returns what the call would have, with
    // the related-task meta; in 2025-11-25 the task is failed.
    let failing = legacy_task(&mut h, "failing_job", json!({})).await;
    let payload = h
        .request(LEGACY, "tasks/result", json!({"taskId": failing}))
        .await;
    let payload = result(&payload);
    assert_eq!(payload["isError"], true, "{payload}");
    assert_eq!(payload["content"][0]["text"], "the job failed");
    assert_eq!(
        payload["_meta"]["io.modelcontextprotocol/related-task"],
        json!({"taskId": failing})
    );
    let get = h
        .request(LEGACY, "tasks/get", json!({"taskId": failing}))
        .await;
    assert_eq!(result(&get)["status"], "failed");
    h.task_notification("notifications/tasks/status", &failing, "failed")
        .await;

    // A successful one.
    let slow = legacy_task(
        &mut h,
        "slow_compute",
        json!({"seconds": 0.01, "label": "quick"}),
    )
    .await;
    let payload = h
        .request(LEGACY, "tasks/result", json!({"taskId": slow}))
        .await;
    assert_eq!(result(&payload)["content"][0]["text"], "quick: done");
    let get = h
        .request(LEGACY, "tasks/get", json!({"taskId": slow}))
        .await;
    assert_eq!(result(&get)["status"], "completed");

    // A JSON-RPC error: tasks/result returns that error.
    let broken = legacy_task(&mut h, "protocol_error_job", json!({})).await;
    let (_, payload) = h.exchange("tasks/result", json!({"taskId": broken})).await;
    assert_eq!(error_code(&payload), -32603, "{payload}");
    let get = h
        .request(LEGACY, "tasks/get", json!({"taskId": broken}))
        .await;
    assert_eq!(result(&get)["status"], "failed");

    // Unknown ids.
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let (_, unknown) = h.exchange(method, json!({"taskId": "no-such-task"})).await;
        assert_eq!(error_code(&unknown), -32602, "{method}: {unknown}");
    }
}

#[tokio::test]
async fn legacy_task_support_is_enforced() {
    let server = server();
    let mut h = Harness::start(&server);
    h.handshake(LEGACY).await;
    let mut params = call_params("greet", json!({"name": "Ada"}));
    params["task"] = json!({});
    let (_, forbidden) = h.exchange("tools/call", params).await;
    assert_eq!(error_code(&forbidden), -32601, "{forbidden}");
    let (_, required) = h
        .exchange("tools/call", call_params("only_as_task", json!({})))
        .await;
    assert_eq!(error_code(&required), -32601, "{required}");
    let id = legacy_task(&mut h, "only_as_task", json!({})).await;
    let payload = h
        .request(LEGACY, "tasks/result", json!({"taskId": id}))
        .await;
    assert_eq!(result(&payload)["content"][0]["text"], "done");
    // Optional: without params.task the call is answered directly.
    let direct = h
        .request(
            LEGACY,
            "tools/call",
            call_params("slow_compute", json!({"seconds": 0, "label": "d"})),
        )
        .await;
    assert_eq!(result(&direct)["content"][0]["text"], "d: done");
}

#[tokio::test]
async fn legacy_tasks_list_pages_and_sessions_are_isolated() {
    let server = server_with_page_size(2);
    let mut a = Harness::start(&server);
    a.handshake(LEGACY).await;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(
            legacy_task(
                &mut a,
                "slow_compute",
                json!({"seconds": 60, "label": i.to_string()}),
            )
            .await,
        );
    }
    let first = a.request(LEGACY, "tasks/list", json!({})).await;
    let first = result(&first).clone();
    assert_eq!(first["tasks"].as_array().unwrap().len(), 2, "{first}");
    let cursor = first["nextCursor"]
        .as_str()
        .expect("a next cursor")
        .to_owned();
    let second = a
        .request(LEGACY, "tasks/list", json!({"cursor": cursor}))
        .await;
    let second = result(&second).clone();
    assert!(second.get("nextCursor").is_none(), "{second}");
    let listed: Vec<String> = first["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["tasks"].as_array().unwrap())
        .map(|t| t["taskId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, ids);
    let (_, bad) = a.exchange("tasks/list", json!({"cursor": "forged"})).await;
    assert_eq!(error_code(&bad), -32602);

    // Another session sees none of them.
    let mut b = Harness::start(&server);
    b.handshake(LEGACY).await;
    let theirs = b.request(LEGACY, "tasks/list", json!({})).await;
    assert_eq!(result(&theirs)["tasks"], json!([]));
    for method in ["tasks/get", "tasks/cancel"] {
        let (_, foreign) = b.exchange(method, json!({"taskId": ids[0]})).await;
        assert_eq!(error_code(&foreign), -32602, "{method}: {foreign}");
    }
    // Nor does a modern client holding the id.
    let mut c = Harness::start(&server);
    let (_, modern) = c
        .exchange("tasks/get", with_meta(json!({"taskId": ids[0]}), true))
        .await;
    assert_eq!(error_code(&modern), -32602, "{modern}");
    let get = a
        .request(LEGACY, "tasks/get", json!({"taskId": ids[0]}))
        .await;
    assert_eq!(result(&get)["status"], "working");
}

// ---------------------------------------------------------------------------
// 2026-07-28: the tasks extension
// ---------------------------------------------------------------------------

/// `params` with modern per-request `_meta`, declaring the tasks extension
/// (and elicitation) when `tasks` is set.
fn with_meta(mut params: Value, tasks: bool) -> Value {
    let capabilities = if tasks {
        json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
    } else {
        json!({"elicitation": {}})
    };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN.as_str(),
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "tasks-test", "version": "0"}
    });
    params
}

/// A modern request with the extension declared, checked against the schema.
async fn modern(h: &mut Harness, method: &str, params: Value) -> Value {
    h.request(MODERN, method, with_meta(params, true)).await
}

/// A modern tool call that the server runs as a task; returns the id.
async fn modern_task(h: &mut Harness, tool: &str, arguments: Value) -> String {
    let (text, response) = h
        .exchange("tools/call", with_meta(call_params(tool, arguments), true))
        .await;
    SchemaValidator::for_revision(MODERN)
        .validate_response("tools/call", &response)
        .unwrap_or_else(|e| panic!("invalid CreateTaskResult: {e}\n{response}"));
    assert!(
        text.contains(r#""result":{"resultType":"task","#),
        "resultType must come first: {text}"
    );
    let task = result(&response);
    assert_eq!(task["status"], "working", "{task}");
    assert!(task.get("task").is_none(), "the handle is flat: {task}");
    for absent in ["result", "error", "inputRequests", "ttl", "pollInterval"] {
        assert!(task.get(absent).is_none(), "{absent} in {task}");
    }
    assert!(
        task["ttlMs"].is_u64() && task["pollIntervalMs"].is_u64(),
        "{task}"
    );
    assert!(
        is_iso_8601(&task["createdAt"]) && is_iso_8601(&task["lastUpdatedAt"]),
        "{task}"
    );
    task["taskId"].as_str().unwrap().to_owned()
}

/// Polls `tasks/get` until the task's status is `status`.
async fn poll_until(h: &mut Harness, id: &str, status: &str) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let get = modern(h, "tasks/get", json!({"taskId": id})).await;
        let task = result(&get).clone();
        assert_eq!(task["resultType"], "complete", "{task}");
        if task["status"] == status {
            return task;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "task {id} never reached {status}: {task}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn modern_discovery_and_listing() {
    let server = server();
    let mut h = Harness::start(&server);
    let discover = modern(&mut h, "server/discover", json!({})).await;
    let caps = &result(&discover)["capabilities"];
    assert_eq!(
        caps["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}})
    );
    assert!(caps.get("tasks").is_none(), "{caps}");
    let tools = modern(&mut h, "tools/list", json!({})).await;
    assert!(
        result(&tools)["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("execution").is_none())
    );
}

#[tokio::test]
async fn modern_task_lifecycle() {
    let server = server();
    let mut h = Harness::start(&server);

    // A tool without task support answers directly.
    let greet = modern(
        &mut h,
        "tools/call",
        call_params("greet", json!({"name": "Ada"})),
    )
    .await;
    let greet = result(&greet);
    assert_eq!(greet["resultType"], "complete");
    assert_eq!(greet["content"][0]["text"], "Hello, Ada!");
    assert!(greet.get("taskId").is_none());

    // Working, cancelled, cancelled again (idempotent).
    let id = modern_task(
        &mut h,
        "slow_compute",
        json!({"seconds": 60, "label": "long"}),
    )
    .await;
    let task = poll_until(&mut h, &id, "working").await;
    assert!(task.get("result").is_none() && task.get("error").is_none());
    let cancel = modern(&mut h, "tasks/cancel", json!({"taskId": id})).await;
    assert_empty_ack(&cancel);
    poll_until(&mut h, &id, "cancelled").await;
    // Cancelling a finished task is acknowledged and changes nothing.
    let again = modern(&mut h, "tasks/cancel", json!({"taskId": id})).await;
    assert_empty_ack(&again);
    poll_until(&mut h, &id, "cancelled").await;

    // A tool error completes the task; the result is inlined.
    let failing = modern_task(&mut h, "failing_job", json!({})).await;
    let task = poll_until(&mut h, &failing, "completed").await;
    assert_eq!(task["result"]["isError"], true, "{task}");
    assert_eq!(task["result"]["content"][0]["text"], "the job failed");
    assert!(task.get("error").is_none());

    // A JSON-RPC error fails it, with the error and no result.
    let broken = modern_task(&mut h, "protocol_error_job", json!({})).await;
    let task = poll_until(&mut h, &broken, "failed").await;
    assert_eq!(task["error"]["code"], -32603, "{task}");
    assert!(task["error"]["message"].is_string());
    assert!(task.get("result").is_none());

    // A successful one.
    let quick = modern_task(
        &mut h,
        "slow_compute",
        json!({"seconds": 0.01, "label": "q"}),
    )
    .await;
    let task = poll_until(&mut h, &quick, "completed").await;
    assert_eq!(task["result"]["content"][0]["text"], "q: done");

    // Unknown ids; methods the extension removed.
    for method in ["tasks/get", "tasks/cancel"] {
        let (_, unknown) = h
            .exchange(method, with_meta(json!({"taskId": "nope"}), true))
            .await;
        assert_eq!(error_code(&unknown), -32602, "{method}: {unknown}");
    }
    let (_, unknown) = h
        .exchange(
            "tasks/update",
            with_meta(json!({"taskId": "nope", "inputResponses": {}}), true),
        )
        .await;
    assert_eq!(error_code(&unknown), -32602, "{unknown}");
    for (method, params) in [
        ("tasks/result", json!({"taskId": quick})),
        ("tasks/list", json!({})),
    ] {
        let (_, removed) = h.exchange(method, with_meta(params, true)).await;
        assert_eq!(error_code(&removed), -32601, "{method}: {removed}");
    }

    // Anyone holding the id may use the task: another connection sees it.
    let mut other = Harness::start(&server);
    let task = poll_until(&mut other, &quick, "completed").await;
    assert_eq!(task["taskId"], quick.as_str());
}

#[tokio::test]
async fn modern_without_the_extension() {
    let server = server();
    let mut h = Harness::start(&server);
    let id = modern_task(&mut h, "slow_compute", json!({"seconds": 60, "label": "x"})).await;
    for (method, params) in [
        ("tasks/get", json!({"taskId": id})),
        ("tasks/cancel", json!({"taskId": id})),
        ("tasks/update", json!({"taskId": id, "inputResponses": {}})),
    ] {
        let (_, response) = h.exchange(method, with_meta(params, false)).await;
        assert_eq!(error_code(&response), -32021, "{method}: {response}");
        assert_eq!(
            response["error"]["data"]["requiredCapabilities"],
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        );
    }
    // An optional tool runs directly; a task-only tool cannot run.
    let (_, direct) = h
        .exchange(
            "tools/call",
            with_meta(
                call_params("slow_compute", json!({"seconds": 0, "label": "d"})),
                false,
            ),
        )
        .await;
    SchemaValidator::for_revision(MODERN)
        .validate_response("tools/call", &direct)
        .unwrap();
    assert_eq!(result(&direct)["resultType"], "complete");
    assert_eq!(result(&direct)["content"][0]["text"], "d: done");
    let (_, only) = h
        .exchange(
            "tools/call",
            with_meta(call_params("only_as_task", json!({})), false),
        )
        .await;
    assert_eq!(error_code(&only), -32021, "{only}");
    assert_eq!(
        only["error"]["data"]["requiredCapabilities"],
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    // The task is still there for a client that declares the extension.
    poll_until(&mut h, &id, "working").await;
}

#[tokio::test]
async fn modern_task_asks_for_input_and_resumes() {
    let server = server();
    let mut h = Harness::start(&server);
    let id = modern_task(&mut h, "ask_name", json!({})).await;
    let task = poll_until(&mut h, &id, "input_required").await;
    let question = &task["inputRequests"]["name"];
    assert_eq!(question["method"], "elicitation/create", "{task}");
    assert_eq!(question["params"]["message"], "Your name?");

    // A malformed answer to what the task waits for is refused.
    let (_, bad) = h
        .exchange(
            "tasks/update",
            with_meta(
                json!({"taskId": id, "inputResponses": {"name": 12345}}),
                true,
            ),
        )
        .await;
    assert_eq!(error_code(&bad), -32602, "{bad}");

    // Unknown keys are ignored unread, whatever they hold; the answer
    // resumes the task.
    let ack = modern(
        &mut h,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {
            "unrelated": {"action": "decline"},
            "junk": 42,
            "name": {"action": "accept", "content": {"name": "Grace"}}
        }}),
    )
    .await;
    assert_empty_ack(&ack);
    let task = poll_until(&mut h, &id, "completed").await;
    assert_eq!(
        task["result"]["content"][0]["text"], "Hello, Grace!",
        "{task}"
    );
    assert!(task.get("inputRequests").is_none());
}

#[tokio::test]
async fn modern_task_notifications_on_a_listen_stream() {
    let server = server();
    let mut h = Harness::start(&server);
    let id = modern_task(&mut h, "slow_compute", json!({"seconds": 60, "label": "n"})).await;
    h.send(
        json!({"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen",
                  "params": with_meta(json!({"notifications": {"taskIds": [id]}}), true)}),
    )
    .await;
    // The acknowledgement comes before anything else on the stream.
    let ack: Value = serde_json::from_str(&h.recv_text().await).unwrap();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id]));
    modern(&mut h, "tasks/cancel", json!({"taskId": id})).await;
    let note = h
        .task_notification("notifications/tasks", &id, "cancelled")
        .await;
    assert_eq!(
        note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen"
    );
    SchemaValidator::for_revision(MODERN)
        .validate_message(&note)
        .unwrap_or_else(|e| panic!("invalid notification {note}: {e}"));

    // Task notifications need the extension.
    let (_, refused) = h
        .exchange(
            "subscriptions/listen",
            with_meta(json!({"notifications": {"taskIds": [id]}}), false),
        )
        .await;
    assert_eq!(error_code(&refused), -32021, "{refused}");
}

// ---------------------------------------------------------------------------
// Lifetimes
// ---------------------------------------------------------------------------

/// Reports on a channel when the handler holding it goes away.
struct DropSignal(mpsc::UnboundedSender<&'static str>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        let _ = self.0.send("stopped");
    }
}

/// A server whose `forever` tool never ends by itself and says when its
/// work is stopped.
fn watched_server(
    config: mcp_server::TaskConfig,
) -> (Server, mpsc::UnboundedReceiver<&'static str>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let server = Server::builder("tasks-lifetimes", "0.0.1")
        .tasks(config)
        .tool(
            ToolDef::new(
                "forever",
                "Never ends",
                move |_: NoArguments, _ctx: Context| {
                    let signal = DropSignal(tx.clone());
                    async move {
                        let _signal = signal;
                        std::future::pending::<()>().await;
                        Ok::<_, HandlerError>("unreachable")
                    }
                },
            )
            .task_support(TaskSupport::Optional),
        )
        .build();
    (server, rx)
}

async fn stopped(rx: &mut mpsc::UnboundedReceiver<&'static str>) {
    let signal = tokio::time::timeout(WAIT, rx.recv()).await;
    assert_eq!(signal, Ok(Some("stopped")), "the work was not stopped");
}

#[tokio::test]
async fn legacy_tasks_end_with_their_session() {
    let (server, mut rx) = watched_server(mcp_server::TaskConfig::default());
    let mut h = Harness::start(&server);
    h.handshake(LEGACY).await;
    legacy_task(&mut h, "forever", json!({})).await;
    assert!(rx.try_recv().is_err(), "the work stopped too early");
    drop(h);
    stopped(&mut rx).await;
}

#[tokio::test]
async fn expired_tasks_stop_and_are_forgotten() {
    let config = mcp_server::TaskConfig::default().default_ttl(Duration::from_millis(100));
    let (server, mut rx) = watched_server(config);
    let mut h = Harness::start(&server);
    let id = modern_task(&mut h, "forever", json!({})).await;
    stopped(&mut rx).await;
    let (_, gone) = h
        .exchange("tasks/get", with_meta(json!({"taskId": id}), true))
        .await;
    assert_eq!(error_code(&gone), -32602, "{gone}");
}
