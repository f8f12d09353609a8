//! End-to-end tests of `mcp serve everything` over stdio: the real binary as
//! a child process, newline-delimited JSON-RPC on its stdin/stdout, and every
//! server message checked against the official schema of the revision in use.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use mcp_schema::ProtocolVersion;
use mcp_schema::validation::SchemaValidator;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::timeout;

/// How long any single wait may take.
const WAIT: Duration = Duration::from_secs(5);

const MODERN: &str = "2026-07-28";

/// `mcp serve everything` as a child with piped stdin and stdout, killed
/// when dropped.
fn serve_everything(stderr: Stdio) -> Child {
    Command::new(env!("CARGO_BIN_EXE_mcp"))
        .args(["serve", "everything"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .expect("spawn `mcp serve everything`")
}

/// One `mcp serve everything` child and its pipes.
struct Harness {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    validator: Option<Arc<SchemaValidator>>,
}

impl Harness {
    fn spawn() -> Harness {
        let mut child = serve_everything(Stdio::inherit());
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        Harness {
            child,
            stdin: Some(stdin),
            stdout,
            validator: None,
        }
    }

    /// Checks server messages against `version`'s schema from now on.
    fn validate_with(&mut self, version: ProtocolVersion) {
        self.validator = Some(SchemaValidator::for_revision(version));
    }

    async fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        timeout(WAIT, async {
            stdin.write_all(&bytes).await?;
            stdin.flush().await
        })
        .await
        .expect("write timed out")
        .expect("write to the server");
    }

    async fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string()).await;
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// The next message from the server, within `wait`; `None` on timeout.
    async fn recv_within(&mut self, wait: Duration) -> Option<Value> {
        let line = match timeout(wait, self.stdout.next_line()).await {
            Err(_) => return None,
            Ok(line) => line
                .expect("read from the server")
                .expect("the server closed stdout"),
        };
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the server wrote invalid JSON ({e}): {line}"));
        if let Some(v) = &self.validator
            && message.get("method").is_some()
        {
            v.validate_message(&message)
                .unwrap_or_else(|e| panic!("invalid server message {message}: {e}"));
        }
        Some(message)
    }

    /// The next message from the server.
    async fn recv(&mut self) -> Value {
        self.recv_within(WAIT)
            .await
            .expect("no message from the server within 5 s")
    }

    /// Sends a request and waits for its response; the other messages seen
    /// before the response are returned too.
    async fn request_full(&mut self, id: i64, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let mut seen = Vec::new();
        loop {
            let message = self.recv().await;
            if message.get("method").is_none() && message.get("id") == Some(&json!(id)) {
                if let Some(v) = &self.validator {
                    v.validate_response(method, &message)
                        .unwrap_or_else(|e| panic!("invalid response {message}: {e}"));
                }
                return (message, seen);
            }
            seen.push(message);
        }
    }

    async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.request_full(id, method, params).await.0
    }

    /// The `result` of a successful request.
    async fn call_ok(&mut self, id: i64, method: &str, params: Value) -> Value {
        let response = self.request(id, method, params).await;
        response
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {response}"))
    }

    /// The `error` of a failed request.
    async fn call_err(&mut self, id: i64, method: &str, params: Value) -> Value {
        let response = self.request(id, method, params).await;
        response
            .get("error")
            .cloned()
            .unwrap_or_else(|| panic!("{method} should fail: {response}"))
    }

    /// `initialize` in `version`, then `notifications/initialized`.
    async fn initialize(&mut self, version: ProtocolVersion) -> Value {
        self.validate_with(version);
        let result = self
            .call_ok(
                0,
                "initialize",
                json!({
                    "protocolVersion": version.as_str(),
                    "capabilities": {},
                    "clientInfo": {"name": "stdio-test", "version": "0.0.0"}
                }),
            )
            .await;
        assert_eq!(result["protocolVersion"], version.as_str(), "{result}");
        self.notify("notifications/initialized", json!({})).await;
        result
    }
}

fn error_code(error: &Value) -> i64 {
    error["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no code: {error}"))
}

/// The concatenated text blocks of a tool or prompt result's content.
fn tool_text(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content: {result}"))
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect()
}

fn tool_names(result: &Value) -> Vec<String> {
    result["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {result}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

fn method_of(message: &Value) -> Option<&str> {
    message.get("method").and_then(Value::as_str)
}

#[tokio::test]
async fn handshake_in_every_legacy_revision() {
    for version in [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
    ] {
        let mut h = Harness::spawn();
        let init = h.initialize(version).await;
        assert!(init["serverInfo"]["name"].is_string(), "{init}");
        let tools = h.call_ok(1, "tools/list", json!({})).await;
        let names = tool_names(&tools);
        for name in ["echo", "calculate", "test_simple_text"] {
            assert!(
                names.iter().any(|n| n == name),
                "{version}: {name} missing from {names:?}"
            );
        }
    }
}

/// Every content-producing fixture answers with a message the revision's own
/// schema accepts: content a revision lacks (audio before 2025-03-26) is
/// replaced by a text block, structured output is left out before 2025-06-18.
#[tokio::test]
async fn results_fit_every_legacy_revision() {
    for version in [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
    ] {
        let mut h = Harness::spawn();
        h.initialize(version).await;
        let mut id = 1;
        for tool in [
            "test_simple_text",
            "test_image_content",
            "test_audio_content",
            "test_embedded_resource",
            "test_multiple_content_types",
            "test_error_handling",
        ] {
            id += 1;
            let result = h
                .call_ok(id, "tools/call", json!({"name": tool, "arguments": {}}))
                .await;
            if tool == "test_audio_content" {
                let kind = &result["content"][0]["type"];
                let expected = if version.has_audio() { "audio" } else { "text" };
                assert_eq!(kind, expected, "{version}: {result}");
            }
        }
        id += 1;
        let sum = h
            .call_ok(
                id,
                "tools/call",
                json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
            )
            .await;
        assert_eq!(
            sum.get("structuredContent").is_some(),
            version.has_structured_output(),
            "{version}: {sum}"
        );
        for (prompt, args) in [
            ("test_simple_prompt", json!({})),
            ("test_prompt_with_image", json!({})),
            (
                "test_prompt_with_embedded_resource",
                json!({"resourceUri": "test://example-resource"}),
            ),
        ] {
            id += 1;
            h.call_ok(
                id,
                "prompts/get",
                json!({"name": prompt, "arguments": args}),
            )
            .await;
        }
    }
}

#[tokio::test]
async fn features_in_2025_06_18() {
    let mut h = Harness::spawn();
    h.initialize(ProtocolVersion::V2025_06_18).await;
    let call = |name: &str, args: Value| json!({"name": name, "arguments": args});

    let r = h
        .call_ok(1, "tools/call", call("echo", json!({"text": "hi"})))
        .await;
    assert_eq!(tool_text(&r), "hi");
    assert_ne!(r["isError"], true);

    let r = h
        .call_ok(
            2,
            "tools/call",
            call("calculate", json!({"expression": "2*(3+4)^2"})),
        )
        .await;
    assert_eq!(tool_text(&r), "98");

    let r = h
        .call_ok(
            3,
            "tools/call",
            call("calculate", json!({"expression": "2*(3+"})),
        )
        .await;
    assert_eq!(r["isError"], true, "{r}");

    let r = h
        .call_ok(4, "tools/call", call("add", json!({"a": 1, "b": 2.5})))
        .await;
    assert_eq!(r["structuredContent"], json!({"sum": 3.5}), "{r}");

    let e = h
        .call_err(5, "tools/call", call("echo", json!({"wrong": 1})))
        .await;
    assert_eq!(error_code(&e), -32602, "{e}");

    let e = h
        .call_err(6, "tools/call", call("no_such_tool", json!({})))
        .await;
    assert_eq!(error_code(&e), -32602, "{e}");

    let r = h.call_ok(7, "resources/list", json!({})).await;
    let uris: Vec<&str> = r["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|x| x["uri"].as_str())
        .collect();
    assert!(uris.contains(&"test://static-text"), "{uris:?}");

    let r = h
        .call_ok(8, "resources/read", json!({"uri": "test://static-text"}))
        .await;
    assert_eq!(
        r["contents"][0]["text"], "This is the content of the static text resource.",
        "{r}"
    );

    let r = h
        .call_ok(
            9,
            "resources/read",
            json!({"uri": "test://template/42/data"}),
        )
        .await;
    let text = r["contents"][0]["text"].as_str().expect("text contents");
    assert!(text.contains("42"), "{text}");

    let e = h
        .call_err(10, "resources/read", json!({"uri": "test://nope"}))
        .await;
    assert_eq!(error_code(&e), -32002, "{e}");
    assert_eq!(e["data"]["uri"], "test://nope", "{e}");

    let r = h.call_ok(11, "resources/templates/list", json!({})).await;
    assert!(
        r["resourceTemplates"]
            .as_array()
            .expect("resourceTemplates")
            .iter()
            .any(|t| t["uriTemplate"] == "test://template/{id}/data"),
        "{r}"
    );

    let r = h.call_ok(12, "prompts/list", json!({})).await;
    assert!(
        r["prompts"]
            .as_array()
            .expect("prompts")
            .iter()
            .any(|p| p["name"] == "test_prompt_with_arguments"),
        "{r}"
    );

    let r = h
        .call_ok(
            13,
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b"}}),
        )
        .await;
    let text = r["messages"][0]["content"]["text"]
        .as_str()
        .expect("prompt text");
    assert!(
        text.contains("arg1='a'") && text.contains("arg2='b'"),
        "{text}"
    );

    let e = h
        .call_err(
            14,
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a"}}),
        )
        .await;
    assert_eq!(error_code(&e), -32602, "{e}");

    let r = h
        .call_ok(
            15,
            "completion/complete",
            json!({
                "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg1", "value": "te"}
            }),
        )
        .await;
    let values = r["completion"]["values"].as_array().expect("values");
    assert!(!values.is_empty(), "{r}");
    assert!(
        values
            .iter()
            .all(|v| v.as_str().is_some_and(|s| s.starts_with("te"))),
        "{r}"
    );
    assert!(r["completion"]["total"].is_number(), "{r}");

    let r = h
        .call_ok(16, "logging/setLevel", json!({"level": "info"}))
        .await;
    assert_eq!(r, json!({}));

    let (response, seen) = h
        .request_full(17, "tools/call", call("test_tool_with_logging", json!({})))
        .await;
    assert!(response.get("result").is_some(), "{response}");
    let logs = seen
        .iter()
        .filter(|m| method_of(m) == Some("notifications/message"))
        .count();
    assert!(logs >= 3, "expected 3 log messages, saw {seen:?}");

    let r = h
        .call_ok(
            18,
            "resources/subscribe",
            json!({"uri": "test://watched-resource"}),
        )
        .await;
    assert!(r.is_object(), "{r}");
    let is_update = |m: &Value| {
        method_of(m) == Some("notifications/resources/updated")
            && m["params"]["uri"] == "test://watched-resource"
    };
    let (response, seen) = h
        .request_full(19, "tools/call", call("update_watched_resource", json!({})))
        .await;
    assert!(response.get("result").is_some(), "{response}");
    if !seen.iter().any(is_update) {
        loop {
            let m = h
                .recv_within(WAIT)
                .await
                .expect("no notifications/resources/updated within 5 s");
            if is_update(&m) {
                break;
            }
        }
    }
}

#[tokio::test]
async fn progress_notifications() {
    let mut h = Harness::spawn();
    h.initialize(ProtocolVersion::V2025_06_18).await;
    let (response, seen) = h
        .request_full(
            1,
            "tools/call",
            json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "p1"}}),
        )
        .await;
    assert!(response.get("result").is_some(), "{response}");
    let progress: Vec<f64> = seen
        .iter()
        .filter(|m| method_of(m) == Some("notifications/progress"))
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "p1", "{m}");
            m["params"]["progress"].as_f64().expect("progress number")
        })
        .collect();
    assert_eq!(progress.len(), 3, "{seen:?}");
    assert!(
        progress.windows(2).all(|w| w[0] < w[1]),
        "progress not strictly increasing: {progress:?}"
    );
}

#[tokio::test]
async fn cancellation_stops_a_slow_task() {
    let mut h = Harness::spawn();
    h.initialize(ProtocolVersion::V2025_06_18).await;
    h.send(json!({
        "jsonrpc": "2.0", "id": 20, "method": "tools/call",
        "params": {"name": "slow_task", "arguments": {"steps": 100, "step_ms": 50},
                   "_meta": {"progressToken": "slow"}}
    }))
    .await;
    loop {
        let m = h.recv().await;
        assert_ne!(m.get("id"), Some(&json!(20)), "finished early: {m}");
        if method_of(&m) == Some("notifications/progress") {
            assert_eq!(m["params"]["progressToken"], "slow");
            break;
        }
    }
    h.notify(
        "notifications/cancelled",
        json!({"requestId": 20, "reason": "test"}),
    )
    .await;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            break;
        }
        match h.recv_within(left).await {
            None => break,
            Some(m) => assert!(
                m.get("method").is_some() || m.get("id") != Some(&json!(20)),
                "a cancelled request was answered: {m}"
            ),
        }
    }
    let (pong, seen) = h.request_full(21, "ping", json!({})).await;
    assert_eq!(pong["result"], json!({}), "{pong}");
    assert!(
        !seen
            .iter()
            .any(|m| m.get("method").is_none() && m.get("id") == Some(&json!(20))),
        "a cancelled request was answered: {seen:?}"
    );
}

#[tokio::test]
async fn batches_in_2025_03_26() {
    let mut h = Harness::spawn();
    h.initialize(ProtocolVersion::V2025_03_26).await;
    h.send(json!([
        {"jsonrpc": "2.0", "id": 10, "method": "ping"},
        {"jsonrpc": "2.0", "id": 11, "method": "tools/call",
         "params": {"name": "echo", "arguments": {"text": "batched"}}},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
    ]))
    .await;
    let reply = h.recv().await;
    let v = SchemaValidator::for_revision(ProtocolVersion::V2025_03_26);
    v.validate_message(&reply)
        .unwrap_or_else(|e| panic!("invalid batch reply {reply}: {e}"));
    let items = reply
        .as_array()
        .unwrap_or_else(|| panic!("not a batch: {reply}"));
    assert_eq!(items.len(), 2, "{reply}");
    let by_id = |id: i64| {
        items
            .iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no response {id} in {reply}"))
    };
    let ping = by_id(10);
    v.validate_response("ping", ping).unwrap();
    assert_eq!(ping["result"], json!({}));
    let echo = by_id(11);
    v.validate_response("tools/call", echo).unwrap();
    assert_eq!(tool_text(&echo["result"]), "batched");
}

#[tokio::test]
async fn batches_rejected_in_2025_06_18() {
    let mut h = Harness::spawn();
    h.initialize(ProtocolVersion::V2025_06_18).await;
    h.send(json!([
        {"jsonrpc": "2.0", "id": 10, "method": "ping"},
        {"jsonrpc": "2.0", "id": 11, "method": "ping"}
    ]))
    .await;
    let reply = h.recv().await;
    assert!(reply.is_object(), "expected a single error: {reply}");
    assert_eq!(error_code(&reply["error"]), -32600, "{reply}");
    // Not schema-checked: JSON-RPC 2.0 requires `"id": null` here, which no
    // revision's `JSONRPCError` schema admits (`RequestId` is string | integer).
    assert_eq!(reply["id"], Value::Null, "{reply}");
    let pong = h.call_ok(12, "ping", json!({})).await;
    assert_eq!(pong, json!({}));
}

#[tokio::test]
async fn bad_input_is_answered_and_survived() {
    let mut h = Harness::spawn();
    h.initialize(ProtocolVersion::V2025_06_18).await;

    h.send_raw("not json").await;
    let reply = h.recv().await;
    assert_eq!(error_code(&reply["error"]), -32700, "{reply}");
    assert_eq!(reply["id"], Value::Null, "{reply}");

    h.send_raw(r#"{"jsonrpc":"2.0","id":1}"#).await;
    let reply = h.recv().await;
    assert_eq!(error_code(&reply["error"]), -32600, "{reply}");

    let e = h.call_err(2, "no/such_method", json!({})).await;
    assert_eq!(error_code(&e), -32601, "{e}");

    let pong = h.call_ok(3, "ping", json!({})).await;
    assert_eq!(pong, json!({}));
}

fn modern_meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

#[tokio::test]
async fn modern_era_without_initialize() {
    let mut h = Harness::spawn();
    h.validate_with(ProtocolVersion::V2026_07_28);

    let r = h
        .call_ok(
            1,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}, "_meta": modern_meta(json!({}))}),
        )
        .await;
    assert_eq!(r["resultType"], "complete", "{r}");
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-everything",
        "modern results name the server: {r}"
    );
    assert_eq!(tool_text(&r), "hi");

    let r = h
        .call_ok(
            2,
            "server/discover",
            json!({"_meta": modern_meta(json!({}))}),
        )
        .await;
    assert!(
        r["supportedVersions"]
            .as_array()
            .unwrap_or_else(|| panic!("no supportedVersions: {r}"))
            .iter()
            .any(|v| v == MODERN),
        "{r}"
    );

    // One round of elicitation.
    let caps = json!({"elicitation": {}});
    let tool = "test_input_required_result_elicitation";
    let r = h
        .call_ok(
            3,
            "tools/call",
            json!({"name": tool, "arguments": {}, "_meta": modern_meta(caps.clone())}),
        )
        .await;
    assert_eq!(r["resultType"], "input_required", "{r}");
    assert!(r["inputRequests"]["user_name"].is_object(), "{r}");
    let state = r["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("no requestState: {r}"))
        .to_owned();

    let r = h
        .call_ok(
            4,
            "tools/call",
            json!({
                "name": tool, "arguments": {}, "_meta": modern_meta(caps.clone()),
                "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
                "requestState": state,
            }),
        )
        .await;
    assert_eq!(r["resultType"], "complete", "{r}");
    assert!(tool_text(&r).contains("Alice"), "{r}");

    let e = h
        .call_err(
            5,
            "tools/call",
            json!({
                "name": tool, "arguments": {}, "_meta": modern_meta(caps.clone()),
                "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
                "requestState": format!("{state}x"),
            }),
        )
        .await;
    assert_eq!(error_code(&e), -32602, "{e}");

    // Two questions, one round each: three requests in all.
    let tool = "test_input_required_result_multi_round";
    let r = h
        .call_ok(
            6,
            "tools/call",
            json!({"name": tool, "arguments": {}, "_meta": modern_meta(caps.clone())}),
        )
        .await;
    assert_eq!(r["resultType"], "input_required", "{r}");
    assert!(r["inputRequests"]["step1"].is_object(), "{r}");
    let state1 = r["requestState"].as_str().expect("requestState").to_owned();

    let r = h
        .call_ok(
            7,
            "tools/call",
            json!({
                "name": tool, "arguments": {}, "_meta": modern_meta(caps.clone()),
                "inputResponses": {"step1": {"action": "accept", "content": {"name": "Bob"}}},
                "requestState": state1,
            }),
        )
        .await;
    assert_eq!(r["resultType"], "input_required", "{r}");
    assert!(r["inputRequests"]["step2"].is_object(), "{r}");
    let state2 = r["requestState"].as_str().expect("requestState").to_owned();
    assert_ne!(state1, state2);

    let r = h
        .call_ok(
            8,
            "tools/call",
            json!({
                "name": tool, "arguments": {}, "_meta": modern_meta(caps.clone()),
                "inputResponses": {"step2": {"action": "accept", "content": {"color": "blue"}}},
                "requestState": state2,
            }),
        )
        .await;
    assert_eq!(r["resultType"], "complete", "{r}");
    assert_eq!(tool_text(&r), "Bob likes blue", "{r}");

    // An unknown version.
    let e = h
        .call_err(
            9,
            "tools/call",
            json!({
                "name": "echo", "arguments": {"text": "hi"},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "1900-01-01",
                    "io.modelcontextprotocol/clientCapabilities": {}
                }
            }),
        )
        .await;
    assert_eq!(error_code(&e), -32022, "{e}");
}

#[tokio::test]
async fn closing_stdin_ends_the_process() {
    let mut h = Harness::spawn();
    h.initialize(ProtocolVersion::V2025_06_18).await;
    drop(h.stdin.take());
    let status = timeout(WAIT, h.child.wait())
        .await
        .expect("the server did not exit within 5 s of EOF")
        .expect("wait for the server");
    assert!(status.success(), "exit status {status}");
}

/// A client that stops reading (its end of stdout closed) costs the server
/// nothing worse than unanswerable requests: it keeps reading (more
/// requests than the pipes hold), its writes fail quietly, and it exits
/// cleanly when stdin ends, not before, without a panic.
#[tokio::test]
async fn a_closed_stdout_ends_nothing_but_the_answers() {
    let mut child = serve_everything(Stdio::piped());
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut messages = vec![
        json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "gone", "version": "1"}
            }
        }),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    // About 380 KiB: more than stdin's pipe, the server's read buffer and
    // its queue of messages read hold (64 + 64 KiB and 256 lines), so the
    // write finishes only if the server goes on handling them.
    messages.extend((2..4000).map(|id| {
        json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "unread"}}
        })
    }));
    let lines: String = messages.iter().map(|m| format!("{m}\n")).collect();
    timeout(WAIT, stdin.write_all(lines.as_bytes()))
        .await
        .expect("the server kept reading")
        .expect("write the requests");
    assert!(
        child.try_wait().expect("the server's status").is_none(),
        "the server serves until stdin ends"
    );
    drop(stdin);
    let output = timeout(WAIT, child.wait_with_output())
        .await
        .expect("the server did not exit within 5 s of EOF")
        .expect("wait for the server");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{}: {stderr}", output.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Many more requests in flight than the pipes hold (64 KiB each way): the
/// server keeps reading while its replies wait for room, and every request
/// is answered once, with its own text.
#[tokio::test]
async fn a_burst_larger_than_the_pipes_is_answered_in_full() {
    const BURST: i64 = 3000;
    let mut h = Harness::spawn();
    h.initialize(ProtocolVersion::V2025_06_18).await;
    let mut stdin = h.stdin.take().expect("stdin is open");
    let writer = tokio::spawn(async move {
        let mut burst = String::new();
        for id in 1..=BURST {
            let text = format!("{id:0>100}");
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": text}}});
            burst.push_str(&request.to_string());
            burst.push('\n');
        }
        stdin.write_all(burst.as_bytes()).await?;
        stdin.flush().await?;
        Ok::<_, std::io::Error>(stdin)
    });
    let mut answered = vec![false; BURST as usize + 1];
    for _ in 0..BURST {
        let response = h.recv().await;
        let id = response["id"]
            .as_i64()
            .unwrap_or_else(|| panic!("not a response: {response}"));
        assert_eq!(tool_text(&response["result"]), format!("{id:0>100}"));
        assert!(!answered[id as usize], "{id} answered twice");
        answered[id as usize] = true;
    }
    let stdin = timeout(WAIT, writer)
        .await
        .expect("the burst was not taken within 5 s")
        .expect("writer task")
        .expect("write the burst");
    drop(stdin);
    let status = timeout(WAIT, h.child.wait())
        .await
        .expect("exit")
        .expect("wait");
    assert!(status.success(), "exit status {status}");
}

/// The server reads and writes its stdio pipes without blocking, and puts
/// the pipe (an open file it shares with whoever else holds it) back in
/// blocking mode when it lets go of it.
#[cfg(unix)]
#[tokio::test]
async fn stdin_pipe_is_blocking_again_after_exit() {
    use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

    fn nonblocking(fd: BorrowedFd<'_>) -> bool {
        // SAFETY: F_GETFL on a descriptor this test holds open.
        let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
        assert!(flags >= 0, "fcntl: {}", std::io::Error::last_os_error());
        flags & libc::O_NONBLOCK != 0
    }

    let (reader, writer) = std::io::pipe().expect("pipe");
    let kept = reader.try_clone().expect("dup the read end");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp"))
        .args(["serve", "everything"])
        .stdin(Stdio::from(reader))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn `mcp serve everything`");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let mut writer = tokio::net::unix::pipe::Sender::from_owned_fd(writer.into())
        .expect("the write end as an async pipe");
    writer
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
        .await
        .expect("send ping");
    let pong = timeout(WAIT, stdout.next_line())
        .await
        .expect("no answer within 5 s")
        .expect("read")
        .expect("a line");
    assert!(pong.contains("\"id\":1"), "{pong}");
    assert!(
        nonblocking(kept.as_fd()),
        "the server reads its stdin pipe in non-blocking mode"
    );
    drop(writer);
    let status = timeout(WAIT, child.wait())
        .await
        .expect("exit")
        .expect("wait");
    assert!(status.success(), "exit status {status}");
    assert!(
        !nonblocking(kept.as_fd()),
        "the pipe is in blocking mode again once the server is gone"
    );
}
