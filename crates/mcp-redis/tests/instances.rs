//! Two server instances (two endpoints on their own loopback ports, in
//! this process) sharing one real Redis, as behind a load balancer
//! without affinity.

mod support;

use std::sync::Arc;
use std::time::Duration;

use mcp_schema::LoggingLevel;
use mcp_server::{Context, HandlerError, NoArguments, Server, ToolDef};
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{Events, Instance, Redis, call, client, initialize, post, reply, resume, within};
use tokio::sync::Notify;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Burst {
    /// How many log messages to send before answering.
    count: u64,
}

/// A server whose tools send log messages: `echo` none, `levels` one at
/// info and one at error, `burst` many, `gated` three before `gate` is
/// notified and three after.
fn server(gate: Arc<Notify>) -> Server {
    Server::builder("redis-test", "1.0")
        .tool(ToolDef::new(
            "echo",
            "Answers at once",
            |_: NoArguments, _: Context| async move { Ok::<_, HandlerError>("echo".to_owned()) },
        ))
        .tool(ToolDef::new(
            "levels",
            "Logs at info and at error",
            |_: NoArguments, ctx: Context| async move {
                ctx.log(LoggingLevel::Info, None, "info").await;
                ctx.log(LoggingLevel::Error, None, "error").await;
                Ok::<_, HandlerError>("logged".to_owned())
            },
        ))
        .tool(ToolDef::new(
            "burst",
            "Logs `count` numbered messages",
            |args: Burst, ctx: Context| async move {
                for n in 0..args.count {
                    ctx.log(LoggingLevel::Info, None, json!({ "n": n })).await;
                }
                Ok::<_, HandlerError>("done".to_owned())
            },
        ))
        .tool(ToolDef::new(
            "gated",
            "Logs three messages, waits for the test, logs three more",
            move |_: NoArguments, ctx: Context| {
                let gate = Arc::clone(&gate);
                async move {
                    for n in 0..3 {
                        ctx.log(LoggingLevel::Info, None, json!({ "n": n })).await;
                    }
                    gate.notified().await;
                    for n in 3..6 {
                        ctx.log(LoggingLevel::Info, None, json!({ "n": n })).await;
                    }
                    Ok::<_, HandlerError>("done".to_owned())
                }
            },
        ))
        .build()
}

fn tool_call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
}

/// The JSON messages of an SSE body, priming events left out.
async fn messages(response: reqwest::Response) -> Vec<Value> {
    let mut events = Events::new(response);
    let mut messages = Vec::new();
    while let Some(event) = events.next().await {
        if !event.data.is_empty() {
            messages.push(serde_json::from_str(&event.data).expect("JSON event"));
        }
    }
    messages
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_opened_on_one_instance_continues_on_another() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let gate = Arc::new(Notify::new());
    let a = Instance::start(server(Arc::clone(&gate)), &conn, |c| c).await;
    let b = Instance::start(server(gate), &conn, |c| c).await;
    let http = client();

    let session = initialize(&http, &a.url).await;
    let (status, body) = call(
        &http,
        &a.url,
        &session,
        1,
        "logging/setLevel",
        json!({"level": "error"}),
    )
    .await;
    assert_eq!(
        (status, &body["result"]),
        (StatusCode::OK, &json!({})),
        "{body}"
    );
    assert_eq!(b.endpoint.session_count(), 0);

    // B never saw the session: it loads it.
    let (status, body) = call(
        &http,
        &b.url,
        &session,
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["content"][0]["text"], "echo", "{body}");
    assert_eq!(b.endpoint.session_count(), 1);

    // With the log level chosen on A.
    let response = post(
        &http,
        &b.url,
        Some(&session),
        &tool_call(3, "levels", json!({})),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let messages = messages(response).await;
    let logged: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| &m["params"]["data"])
        .collect();
    assert_eq!(logged, [&json!("error")], "{messages:?}");
    assert_eq!(messages.last().unwrap()["id"], 3);

    // Both instances serve it, in any order.
    for (i, url) in [&a.url, &b.url, &a.url].into_iter().enumerate() {
        let (status, body) =
            call(&http, url, &session, 10 + i as i64, "tools/list", json!({})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    // An unknown id is still unknown.
    let (status, _) = call(
        &http,
        &b.url,
        "no-such-session",
        20,
        "tools/list",
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // DELETE on B ends it on A too.
    let deleted = within(
        "DELETE",
        http.delete(&b.url)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", support::VERSION)
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    for url in [&a.url, &b.url] {
        let (status, body) = call(&http, url, &session, 30, "tools/list", json!({})).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{url}: {body}");
    }
    assert_eq!(a.endpoint.session_count(), 0);
}

/// What a client read of a stream, over its connections.
#[derive(Default)]
struct Collected {
    /// The numbers of the log messages, in order.
    seen: Vec<u64>,
    /// Every other message.
    responses: Vec<Value>,
    last_id: Option<String>,
}

impl Collected {
    fn take(&mut self, event: mcp_http::sse::SseEvent) {
        if event.id.is_some() {
            self.last_id = event.id;
        }
        if event.data.is_empty() {
            return;
        }
        let message: Value = serde_json::from_str(&event.data).expect("JSON event");
        if message["method"] == "notifications/message" {
            self.seen
                .push(message["params"]["data"]["n"].as_u64().expect("numbered"));
        } else {
            self.responses.push(message);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_started_on_one_instance_resumes_on_another_without_loss_or_repeat() {
    const COUNT: u64 = 1500;
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let gate = Arc::new(Notify::new());
    let a = Instance::start(server(Arc::clone(&gate)), &conn, |c| c).await;
    let b = Instance::start(server(gate), &conn, |c| c).await;
    let http = client();
    let session = initialize(&http, &a.url).await;

    let response = post(
        &http,
        &a.url,
        Some(&session),
        &tool_call(7, "burst", json!({"count": COUNT})),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut got = Collected::default();
    // Read part of the stream on A, then drop the connection.
    let mut events = Events::new(response);
    while got.seen.len() < 300 {
        got.take(events.next().await.expect("the stream goes on"));
    }
    drop(events);

    // Resume on B until the response came (B replays what A stored so far
    // and ends the stream; the client comes back for the rest).
    let mut resumes = 0;
    while got.responses.is_empty() {
        resumes += 1;
        assert!(resumes < 500, "no response after {resumes} resumes");
        let from = got.last_id.clone().expect("an event id to resume from");
        let response = resume(&http, &b.url, &session, &from).await;
        assert_eq!(response.status(), StatusCode::OK, "resume from {from}");
        let mut events = Events::new(response);
        while let Some(event) = events.next().await {
            got.take(event);
        }
        if got.responses.is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let (seen, responses) = (got.seen, got.responses);
    let expected: Vec<u64> = (0..COUNT).collect();
    assert_eq!(seen.len(), expected.len(), "events lost or repeated");
    assert_eq!(seen, expected, "events out of order");
    assert_eq!(responses.len(), 1, "{responses:?}");
    assert_eq!(responses[0]["id"], 7);
    assert_eq!(responses[0]["result"]["content"][0]["text"], "done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_gives_clear_errors_and_the_instances_recover() {
    let Some(mut redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let gate = Arc::new(Notify::new());
    let a = Instance::start(server(Arc::clone(&gate)), &conn, |c| c).await;
    let b = Instance::start(server(Arc::clone(&gate)), &conn, |c| c).await;
    let http = client();
    let session = initialize(&http, &a.url).await;

    // A stream under way when Redis goes.
    let response = post(
        &http,
        &a.url,
        Some(&session),
        &tool_call(5, "gated", json!({})),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut events = Events::new(response);
    let mut logged = 0;
    while logged < 3 {
        let event = events.next().await.expect("the stream goes on");
        if event.data.contains("notifications/message") {
            logged += 1;
        }
    }
    redis.kill();
    gate.notify_one();
    let mut rest = Vec::new();
    while let Some(event) = events.next().await {
        if !event.data.is_empty() {
            rest.push(serde_json::from_str::<Value>(&event.data).expect("JSON event"));
        }
    }
    // The stream ends with an error answering the request.
    let last = rest.last().expect("the stream says why it ends");
    assert_eq!(last["id"], 5, "{rest:?}");
    let message = last["error"]["message"].as_str().expect("an error");
    assert!(message.contains("event store unavailable"), "{message}");

    // Meanwhile: 503 with a JSON-RPC error, on both instances.
    for url in [&a.url, &b.url] {
        let (status, body) = call(&http, url, &session, 6, "tools/list", json!({})).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("unavailable"),
            "{body}"
        );
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": support::VERSION, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}});
        let (status, body) = reply(post(&http, url, None, &init).await).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    }

    // Redis comes back (empty, on the same port): no restart needed.
    redis.restart();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": support::VERSION, "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    support::eventually("instance A serves new sessions again", || {
        let (http, url, init) = (&http, &a.url, &init);
        async move { post(http, url, None, init).await.status() == StatusCode::OK }
    })
    .await;
    let fresh = initialize(&http, &a.url).await;
    let (status, body) = call(
        &http,
        &b.url,
        &fresh,
        8,
        "tools/call",
        json!({"name": "echo", "arguments": {}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let response = post(
        &http,
        &b.url,
        Some(&fresh),
        &tool_call(9, "burst", json!({"count": 3})),
    )
    .await;
    let messages = messages(response).await;
    assert_eq!(messages.len(), 4, "{messages:?}");
    // The old session was lost with Redis's memory: every instance says so.
    for url in [&a.url, &b.url] {
        let (status, _) = call(&http, url, &session, 10, "tools/list", json!({})).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
}
