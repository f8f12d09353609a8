//! A whole server session driven by a sequence of client messages, built
//! from the fuzzer's bytes: the `everything` server (every protocol
//! feature, both eras) behind one session, as a transport drives it.
//! Requests, notifications, answers to the server's own requests,
//! cancellations and raw text come in any order, many in flight at once;
//! time is paused, so every wait and timeout runs at once.
//!
//! What must hold: nothing panics; every frame the server sends is a
//! well-formed JSON-RPC message; every request is answered unless it was
//! cancelled (or is a `subscriptions/listen` stream, which lasts), and no
//! answer names an id that was not asked.
#![no_main]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mcp_core::{BoxFuture, DirectSession, FrameSink, InboundFrame, OutboundFrame, SinkClosed};
use mcp_schema::jsonrpc::Message;
use serde_json::{Map, Value, json};

const METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
    "tasks/update",
    "no/such/method",
];

const NOTIFICATIONS: &[&str] = &[
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/roots/list_changed",
    "notifications/progress",
    "notifications/unknown",
];

const TOOLS: &[&str] = &[
    "echo",
    "add",
    "calculate",
    "greet",
    "slow_compute",
    "slow_task",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "region_query",
    "json_schema_2020_12_tool",
    "test_sampling",
    "test_elicitation",
    "test_tool_with_progress",
    "test_tool_with_logging",
    "test_tool_slow",
    "test_trigger_tool_change",
    "test_trigger_prompt_change",
    "update_watched_resource",
    "test_tool_with_task",
    "test_input_required_result_request_state",
    "test_input_required_result_multi_round",
    "test_input_required_result_list_roots",
    "no_such_tool",
];

const NAMES: &[&str] = &[
    "test_simple_prompt",
    "test_prompt_with_arguments",
    "test_prompt_with_embedded_resource",
    "test_input_required_result_prompt",
    "test://static-text",
    "test://static-binary",
    "test://watched-resource",
    "test://template/7/data",
    "test://template//data",
    "file:///etc/passwd",
];

const VERSIONS: &[&str] = &[
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
    "1900-01-01",
];

/// A JSON value; its size is bounded by the input's.
#[derive(Arbitrary, Debug)]
enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => json!(b),
            Json::Int(i) => json!(i),
            Json::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Json::Str(s) => json!(s),
            Json::Array(items) => Value::Array(items.iter().map(Json::value).collect()),
            Json::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.clone(), v.value()))
                    .collect(),
            ),
        }
    }

    fn object(&self) -> Map<String, Value> {
        match self.value() {
            Value::Object(map) => map,
            other => Map::from_iter([("value".to_owned(), other)]),
        }
    }
}

/// How a request says which revision it speaks.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Era {
    /// Within the session `initialize` opened (or none yet).
    Session,
    /// A 2026-07-28 request with per-request `_meta`.
    Modern { version: u8, capabilities: u8 },
}

#[derive(Arbitrary, Debug)]
enum Id {
    Number(i32),
    Text(String),
}

#[derive(Arbitrary, Debug)]
enum Step {
    Request {
        method: u8,
        id: Id,
        name: u8,
        arguments: Json,
        extra: Vec<(String, Json)>,
        era: Era,
    },
    Notify {
        method: u8,
        params: Json,
    },
    /// Answers one of the requests the server sent (sampling, elicitation,
    /// roots), with a result or an error.
    Answer {
        pick: u8,
        result: Option<Json>,
    },
    /// Cancels one of the requests sent before.
    Cancel {
        pick: u8,
    },
    Raw(String),
    /// Lets the server run for a while (paused time: at once).
    Wait {
        millis: u16,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    open_legacy: Option<u8>,
    steps: Vec<Step>,
}

/// Keeps every frame the server sends.
#[derive(Default)]
struct Recorder {
    frames: Mutex<Vec<String>>,
}

impl FrameSink for Recorder {
    fn send(&self, frame: OutboundFrame) -> BoxFuture<'_, Result<(), SinkClosed>> {
        self.frames
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(frame.text);
        Box::pin(std::future::ready(Ok(())))
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime")
    })
}

fn modern_meta(version: u8, capabilities: u8) -> Value {
    let mut caps = Map::new();
    if capabilities & 1 != 0 {
        caps.insert("sampling".into(), json!({}));
    }
    if capabilities & 2 != 0 {
        caps.insert("elicitation".into(), json!({"form": {}, "url": {}}));
    }
    if capabilities & 4 != 0 {
        caps.insert("roots".into(), json!({}));
    }
    if capabilities & 8 != 0 {
        caps.insert(
            "extensions".into(),
            json!({"io.modelcontextprotocol/tasks": {}}),
        );
    }
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": VERSIONS[usize::from(version) % VERSIONS.len()],
        "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
    });
    if capabilities & 16 == 0 {
        meta["io.modelcontextprotocol/clientCapabilities"] = Value::Object(caps);
    }
    meta
}

fn pick<'a>(list: &[&'a str], index: u8) -> &'a str {
    list[usize::from(index) % list.len()]
}

/// The params of a request: the members its method needs, from the
/// fuzzer's choices, beside arbitrary others.
fn params(method: &str, name: u8, arguments: &Json, extra: &[(String, Json)], era: Era) -> Value {
    let mut params: Map<String, Value> =
        extra.iter().map(|(k, v)| (k.clone(), v.value())).collect();
    match method {
        "initialize" => {
            params.insert("protocolVersion".into(), json!(pick(VERSIONS, name)));
            params
                .entry("capabilities")
                .or_insert(json!({"sampling": {}, "roots": {}}));
            params.insert("clientInfo".into(), json!({"name": "fuzz", "version": "1"}));
        }
        "tools/call" => {
            params.insert("name".into(), json!(pick(TOOLS, name)));
            params.insert("arguments".into(), Value::Object(arguments.object()));
        }
        "prompts/get" => {
            params.insert("name".into(), json!(pick(NAMES, name)));
            params.insert("arguments".into(), Value::Object(arguments.object()));
        }
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            params.insert("uri".into(), json!(pick(NAMES, name)));
        }
        "completion/complete" => {
            params.insert(
                "ref".into(),
                json!({"type": "ref/prompt", "name": pick(NAMES, name)}),
            );
            params
                .entry("argument")
                .or_insert(json!({"name": "arg1", "value": "a"}));
        }
        _ => {}
    }
    if let Era::Modern {
        version,
        capabilities,
    } = era
    {
        params.insert("_meta".into(), modern_meta(version, capabilities));
    }
    Value::Object(params)
}

/// What the session was sent, to judge what it answered.
#[derive(Default)]
struct Sent {
    /// Request ids (as JSON text), with whether an answer is owed.
    requests: HashMap<String, bool>,
    /// In the order sent, for cancellation.
    order: Vec<Value>,
}

async fn drive(input: Input) {
    let server = mcp_builtin::everything::server();
    let config = server.session_config();
    let recorder = Arc::new(Recorder::default());
    let session = DirectSession::new(
        Arc::clone(&recorder) as Arc<dyn FrameSink>,
        Arc::new(server),
        config,
    );
    let mut sent = Sent::default();
    let mut handled = Vec::new();
    let send = |text: String, handled: &mut Vec<_>| {
        handled.push(tokio::spawn(session.handle(InboundFrame::Text(text))));
    };
    if let Some(version) = input.open_legacy {
        let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": params("initialize", version, &Json::Null, &[], Era::Session)});
        sent.requests.insert("\"init\"".into(), true);
        send(init.to_string(), &mut handled);
        tokio::task::yield_now().await;
        send(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
            &mut handled,
        );
    }
    for step in input.steps.iter().take(64) {
        match step {
            Step::Request {
                method,
                id,
                name,
                arguments,
                extra,
                era,
            } => {
                let method = pick(METHODS, *method);
                let id = match id {
                    Id::Number(n) => json!(n),
                    Id::Text(s) => json!(s),
                };
                let key = id.to_string();
                // A repeated id is refused while the first is in flight:
                // that answer is owed too, under the same id.
                let owed = method != "subscriptions/listen";
                let entry = sent.requests.entry(key).or_insert(owed);
                *entry = *entry && owed;
                sent.order.push(id.clone());
                let message = json!({"jsonrpc": "2.0", "id": id, "method": method,
                    "params": params(method, *name, arguments, extra, *era)});
                send(message.to_string(), &mut handled);
            }
            Step::Notify { method, params } => {
                let method = pick(NOTIFICATIONS, *method);
                let message =
                    json!({"jsonrpc": "2.0", "method": method, "params": params.object()});
                send(message.to_string(), &mut handled);
            }
            Step::Answer { pick, result } => {
                let asked = server_requests(&recorder);
                if asked.is_empty() {
                    continue;
                }
                let id = &asked[usize::from(*pick) % asked.len()];
                let message = match result {
                    Some(result) => json!({"jsonrpc": "2.0", "id": id, "result": result.object()}),
                    None => json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32603, "message": "no"}}),
                };
                send(message.to_string(), &mut handled);
            }
            Step::Cancel { pick } => {
                if sent.order.is_empty() {
                    continue;
                }
                let id = sent.order[usize::from(*pick) % sent.order.len()].clone();
                // A cancelled request may or may not have been answered.
                sent.requests.insert(id.to_string(), false);
                let message = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": id, "reason": "fuzz"}});
                send(message.to_string(), &mut handled);
            }
            Step::Raw(text) => {
                // Raw text may be a request the bookkeeping does not know:
                // its answers are not judged.
                if text.contains("\"id\"") {
                    return finish(session, handled, &recorder, None).await;
                }
                send(text.clone(), &mut handled);
            }
            Step::Wait { millis } => {
                tokio::time::sleep(Duration::from_millis(u64::from(*millis))).await;
            }
        }
        tokio::task::yield_now().await;
    }
    finish(session, handled, &recorder, Some(sent)).await;
}

/// The ids of the requests the server sent, as the client would see them.
fn server_requests(recorder: &Recorder) -> Vec<Value> {
    let frames = recorder.frames.lock().unwrap_or_else(|e| e.into_inner());
    frames
        .iter()
        .filter_map(|text| serde_json::from_str::<Value>(text).ok())
        .filter(|v| v.get("method").is_some())
        .filter_map(|v| v.get("id").cloned())
        .collect()
}

async fn finish(
    session: DirectSession,
    handled: Vec<tokio::task::JoinHandle<()>>,
    recorder: &Recorder,
    sent: Option<Sent>,
) {
    // Past every request timeout (paused time: at once).
    tokio::time::sleep(Duration::from_secs(15 * 60)).await;
    session.close();
    for handle in handled {
        handle.abort();
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let frames = std::mem::take(&mut *recorder.frames.lock().unwrap_or_else(|e| e.into_inner()));
    let mut answered: HashMap<String, usize> = HashMap::new();
    for text in &frames {
        let value: Value = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("the server sent text that is not JSON ({e}): {text}"));
        let messages = match value {
            Value::Array(items) => items,
            single => vec![single],
        };
        for message in messages {
            let text = message.to_string();
            let parsed = Message::parse(&text)
                .unwrap_or_else(|e| panic!("the server sent a malformed message: {text}: {e:?}"));
            if let Message::Response(_) | Message::Error(_) = parsed
                && let Some(id) = message.get("id").filter(|id| !id.is_null())
            {
                *answered.entry(id.to_string()).or_default() += 1;
            }
        }
    }
    let Some(sent) = sent else {
        return;
    };
    for id in answered.keys() {
        assert!(
            sent.requests.contains_key(id),
            "an answer to id {id}, which was never asked"
        );
    }
    for (id, owed) in &sent.requests {
        if *owed {
            assert!(answered.contains_key(id), "request {id} was never answered");
        }
    }
}

fuzz_target!(|input: Input| {
    runtime().block_on(drive(input));
});
