//! Streamable HTTP: flows beyond the basic checks. Server-to-client
//! requests over a POST's SSE stream, what closing a stream means in each
//! era, sessions kept alive by open streams, a failed initialize, and
//! resumption refused once the events it needs were evicted.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::*;
use mcp_http::{EventStore as _, EventStoreLimits, MemoryEventStore};
use mcp_schema::CallToolResult;
use mcp_server::{Context, HandlerError, NoArguments, Server, ToolDef};
use reqwest::StatusCode;
use serde_json::{Value, json};

const V11: &str = "2025-11-25";

/// Polls `condition` every 20 ms until it holds; panics after `limit`.
async fn eventually(what: &str, limit: Duration, condition: impl Fn() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}");

        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn server_to_client_request_over_sse() {
    let server = TestServer::start(|c| c).await;
    // initialize declaring elicitation
    let mut init = initialize_body(1, V11);
    init["params"]["capabilities"] = json!({"elicitation": {}});
    let reply = server.send(server.post(), &init).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    let session = LegacySession {
        id: reply.headers[mcp_http::SESSION_ID]
            .to_str()
            .unwrap()
            .to_owned(),
        version: V11.into(),
    };
    let reply = server
        .send(
            session.headers(server.post()),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);

    let response = within(
        "POST",
        session
            .headers(server.post())
            .body(
                json!({"jsonrpc": "2.0", "id": "call-1", "method": "tools/call", "params": {
                    "name": "test_elicitation", "arguments": {"message": "Who are you?"}}})
                .to_string(),
            )
            .send(),
    )
    .await
    .expect("POST");
    let mut stream = SseStream::new(response);
    let (_, request) = stream
        .next_message()
        .await
        .expect("the elicitation request");
    assert_eq!(request["method"], "elicitation/create", "{request}");
    assert_eq!(request["params"]["message"], "Who are you?");
    validate_message(V11, &request);

    // The answer goes in its own POST: 202, no body.
    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {
        "action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}});
    let reply = server.send(session.headers(server.post()), &answer).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{reply:?}");
    assert!(reply.text.is_empty());

    let (_, response) = stream.next_message().await.expect("the tool's response");
    assert_eq!(response["id"], "call-1", "{response}");
    validate_response(V11, "tools/call", &response);
    let text = response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("accept") && text.contains("ada"),
        "{response}"
    );
    assert_eq!(
        stream.next().await,
        None,
        "the stream goes on after the response"
    );
}

/// Counts what became of the calls of tool `steps`.
#[derive(Default)]
struct Outcomes {
    cancelled: AtomicUsize,
    finished: AtomicUsize,
}

/// Counts a handler that ends without finishing (the engine drops the
/// handler's future when the request is cancelled) as cancelled.
struct Exit {
    outcomes: Arc<Outcomes>,
    finished: bool,
}

impl Drop for Exit {
    fn drop(&mut self) {
        let counter = if self.finished {
            &self.outcomes.finished
        } else {
            &self.outcomes.cancelled
        };
        counter.fetch_add(1, Ordering::SeqCst);
    }
}

/// A server with one tool, `steps`: 40 progress steps of 50 ms, counting
/// whether it was cancelled or finished.
fn counting_server(outcomes: Arc<Outcomes>) -> Server {
    Server::builder("counting", "1.0.0")
        .tool(ToolDef::new(
            "steps",
            "Forty steps of 50 ms",
            move |_: NoArguments, ctx: Context| {
                let exit = Exit {
                    outcomes: Arc::clone(&outcomes),
                    finished: false,
                };
                async move {
                    // Move the whole guard in (not just its Copy field).
                    let mut exit = exit;
                    for step in 1..=40 {
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                            _ = ctx.cancelled() => return Err(HandlerError::failed("cancelled")),
                        }
                        ctx.progress(f64::from(step), Some(40.0), None).await;
                    }
                    exit.finished = true;
                    Ok::<_, HandlerError>(CallToolResult::text("done"))
                }
            },
        ))
        .build()
}

/// A server whose tool `report` sends `steps` progress notifications, with
/// a pause of `pause_ms` before each (and, with `yield_after`, a yield to
/// the runtime after each), then answers.
fn reporting_server() -> Server {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Report {
        steps: u32,
        pause_ms: u64,
        #[serde(default)]
        yield_after: bool,
    }
    Server::builder("reporting", "1.0.0")
        .tool(ToolDef::new(
            "report",
            "Progress, then an answer",
            |args: Report, ctx: Context| async move {
                for step in 1..=args.steps {
                    if args.pause_ms > 0 {
                        tokio::time::sleep(Duration::from_millis(args.pause_ms)).await;
                    }
                    ctx.progress(f64::from(step), None, None).await;
                    if args.yield_after {
                        tokio::task::yield_now().await;
                    }
                }
                Ok::<_, HandlerError>(CallToolResult::text("reported"))
            },
        ))
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_response_follows_what_its_handler_sent_first() {
    let server = TestServer::start_with(reporting_server(), |c| c).await;
    // Without a pause the notifications and the answer come in the same
    // poll of the handler; with one, the answer comes from a handling that
    // went on after the stream opened; with a yield after the notification,
    // the handling ends as the stream opens, once the notification is out.
    let cases = [
        (1, 0, 0, false),
        (2, 2, 0, false),
        (3, 3, 30, false),
        (4, 1, 0, true),
    ];
    for (id, steps, pause_ms, yield_after) in cases {
        let arguments = json!({"steps": steps, "pause_ms": pause_ms, "yield_after": yield_after});
        let (request, mut body) = server.modern(
            json!(id),
            "tools/call",
            json!({"name": "report", "arguments": arguments}),
            json!({}),
        );
        body["params"]["_meta"]["progressToken"] = json!("p");
        let response = within("POST", request.body(body.to_string()).send())
            .await
            .expect("POST");
        assert_eq!(response.status(), StatusCode::OK);
        let content_type = response.headers()[reqwest::header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_owned();
        let messages: Vec<Value> = if content_type.starts_with("application/json") {
            vec![response.json().await.expect("JSON")]
        } else {
            let mut stream = SseStream::new(response);
            let mut messages = Vec::new();
            while let Some((_, message)) = stream.next_message().await {
                messages.push(message);
            }
            messages
        };
        let progress: Vec<&Value> = messages
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| &m["params"]["progress"])
            .collect();
        assert_eq!(progress.len(), steps as usize, "{messages:?}");
        for (step, value) in progress.iter().enumerate() {
            assert_eq!(value.as_f64(), Some(step as f64 + 1.0), "{messages:?}");
        }
        let last = messages.last().expect("a response");
        assert_eq!(
            last["id"],
            json!(id),
            "the response comes last: {messages:?}"
        );
        assert_eq!(last["result"]["content"][0]["text"], "reported", "{last}");
        assert_eq!(messages.len(), steps as usize + 1, "{messages:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_response_follows_what_its_handler_sent_first() {
    let server = TestServer::start_with(reporting_server(), |c| c).await;
    let session = server.initialize(V11).await;
    // As in the stateless case: answered at once with nothing before it,
    // answered in the poll that sent the notifications, answered after
    // the stream opened, and ending as the stream opens.
    let cases = [(0, 0, false), (2, 0, false), (3, 30, false), (1, 0, true)];
    for (steps, pause_ms, yield_after) in cases {
        let arguments = json!({"steps": steps, "pause_ms": pause_ms, "yield_after": yield_after});
        let id = server.id();
        let body = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {"name": "report", "arguments": arguments, "_meta": {"progressToken": "p"}}
        });
        let reply = server.send(session.headers(server.post()), &body).await;
        assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
        assert_eq!(
            reply.body["id"],
            json!(id),
            "the response comes last: {reply:?}"
        );
        assert_eq!(
            reply.body["result"]["content"][0]["text"], "reported",
            "{reply:?}"
        );
        assert_eq!(reply.messages.len(), steps as usize + 1, "{reply:?}");
        if steps == 0 {
            assert_eq!(reply.content_type, "application/json", "{reply:?}");
            continue;
        }
        // A stream: primed, every event stored (it has an id), and the
        // whole of it replayed to a client that resumes from its start.
        assert_eq!(reply.content_type, "text/event-stream", "{reply:?}");
        let priming = &reply.events[0];
        assert!(priming.data.is_empty(), "{reply:?}");
        assert!(reply.events.iter().all(|e| e.id.is_some()), "{reply:?}");
        let response = within(
            "GET",
            session
                .headers(server.get())
                .header(mcp_http::LAST_EVENT_ID, priming.id.as_deref().unwrap())
                .send(),
        )
        .await
        .expect("GET");
        let replayed = Reply::collect(response).await;
        assert_eq!(replayed.messages, reply.messages, "{replayed:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_a_stream_cancels_only_in_the_modern_era() {
    // 2026-07-28: closing the response stream cancels the request.
    let outcomes = Arc::new(Outcomes::default());
    let server = TestServer::start_with(counting_server(Arc::clone(&outcomes)), |c| c).await;
    let (request, mut body) = server.modern(
        json!(1),
        "tools/call",
        json!({"name": "steps", "arguments": {}}),
        json!({}),
    );
    body["params"]["_meta"]["progressToken"] = json!("t");
    let response = within("POST", request.body(body.to_string()).send())
        .await
        .expect("POST");
    let mut stream = SseStream::new(response);
    let (_, progress) = stream.next_message().await.expect("progress");
    assert_eq!(progress["method"], "notifications/progress");
    drop(stream);
    eventually("modern request cancelled", Duration::from_secs(3), || {
        outcomes.cancelled.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(outcomes.finished.load(Ordering::SeqCst), 0);

    // Legacy: a dropped stream is not a cancellation...
    let outcomes = Arc::new(Outcomes::default());
    let server = TestServer::start_with(counting_server(Arc::clone(&outcomes)), |c| c).await;
    let session = server.initialize(V11).await;
    let response = within(
        "POST",
        session
            .headers(server.post())
            .body(
                json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                    "name": "steps", "arguments": {}, "_meta": {"progressToken": "t"}}})
                .to_string(),
            )
            .send(),
    )
    .await
    .expect("POST");
    let mut stream = SseStream::new(response);
    stream.next_message().await.expect("progress");
    drop(stream);
    eventually("legacy request finished", Duration::from_secs(5), || {
        outcomes.finished.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(outcomes.cancelled.load(Ordering::SeqCst), 0);

    // ...notifications/cancelled is.
    let response = within(
        "POST",
        session
            .headers(server.post())
            .body(
                json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                    "name": "steps", "arguments": {}, "_meta": {"progressToken": "u"}}})
                .to_string(),
            )
            .send(),
    )
    .await
    .expect("POST");
    let mut stream = SseStream::new(response);
    stream.next_message().await.expect("progress");
    let reply = server
        .send(
            session.headers(server.post()),
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": 3, "reason": "test"}}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{reply:?}");
    eventually("legacy request cancelled", Duration::from_secs(3), || {
        outcomes.cancelled.load(Ordering::SeqCst) == 1
    })
    .await;
    // No response follows a cancellation (progress already on its way may).
    while let Ok(Some(event)) = stream.next_within(Duration::from_millis(300)).await {
        if event.data.is_empty() {
            continue;
        }
        let message: Value = serde_json::from_str(&event.data).expect("JSON");
        assert!(
            message.get("id").is_none(),
            "a response after cancelling: {message}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_stream_keeps_session_alive() {
    warm_validators();
    let server = TestServer::start(|c| c.session_idle_timeout(Duration::from_millis(200))).await;
    let session = server.initialize(V11).await;
    let response = within("GET", session.headers(server.get()).send())
        .await
        .expect("GET");
    let mut standalone = SseStream::new(response);
    standalone.next().await.expect("priming event");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let reply = server.call(&session, "ping", json!({})).await;
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "expired with an open stream: {reply:?}"
    );

    drop(standalone);
    eventually("session expired", Duration::from_secs(3), || {
        server.endpoint.session_count() == 0
    })
    .await;
    let reply = server.call(&session, "ping", json!({})).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{reply:?}");
}

#[tokio::test]
async fn failed_initialize_leaves_no_session() {
    let server = TestServer::start(|c| c).await;
    let reply = server
        .send(
            server.post(),
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"capabilities": "not an object"}}),
        )
        .await;
    assert!(reply.body.get("error").is_some(), "{reply:?}");
    assert!(
        reply.headers.get(mcp_http::SESSION_ID).is_none(),
        "a failed initialize minted a session: {reply:?}"
    );
    assert_eq!(server.endpoint.session_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_refused_after_eviction() {
    let store = MemoryEventStore::new(EventStoreLimits::default().with_max_events_per_session(3));
    let server = TestServer::start(|c| c.event_store(Arc::new(store))).await;
    let session = server.initialize(V11).await;
    let mut stream = server
        .start_slow_task(&session, json!(5), (8, 30), "e")
        .await;
    stream.next_message().await.expect("progress");
    let last_id = stream.last_event_id().to_owned();
    drop(stream);
    // The task finishes; the store keeps only its last three events.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let response = within(
        "GET",
        session
            .headers(server.get())
            .header(mcp_http::LAST_EVENT_ID, &last_id)
            .send(),
    )
    .await
    .expect("GET");
    // Replaying would leave a gap: the server must refuse, not skip events.
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_stream_ends_after_cancellation() {
    let outcomes = Arc::new(Outcomes::default());
    let server = TestServer::start_with(counting_server(Arc::clone(&outcomes)), |c| c).await;
    let session = server.initialize(V11).await;
    let response = within(
        "POST",
        session
            .headers(server.post())
            .body(
                json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                    "name": "steps", "arguments": {}, "_meta": {"progressToken": "u"}}})
                .to_string(),
            )
            .send(),
    )
    .await
    .expect("POST");
    let mut stream = SseStream::new(response);
    stream.next_message().await.expect("progress");
    let reply = server
        .send(
            session.headers(server.post()),
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": 3}}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{reply:?}");
    // The request is over: nothing more will come on its stream, which
    // should end (as it does after a response) rather than idle on.
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match stream.next_within(left).await {
            Ok(None) => break,
            Ok(Some(event)) => assert!(
                !event.data.contains("\"result\""),
                "a response after cancelling: {event:?}"
            ),
            Err(_) => panic!("the stream of a cancelled request is still open"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_session_leaves_no_stored_events_behind_its_running_request() {
    let store = Arc::new(MemoryEventStore::new(EventStoreLimits::default()));
    let server = TestServer::start({
        let store = Arc::clone(&store);
        move |c| c.event_store(store)
    })
    .await;
    let session = server.initialize(V11).await;
    let mut stream = server
        .start_slow_task(&session, json!(9), (20, 50), "d")
        .await;
    stream.next_message().await.expect("progress");
    assert!(
        store.stats().events >= 2,
        "primed and stored: {:?}",
        store.stats()
    );
    assert_eq!(server.delete(&session.id).await, StatusCode::NO_CONTENT);
    // The request is cancelled with its session: its stream ends without
    // a response, and nothing it would have sent is stored afterwards.
    let mut rest = Vec::new();
    while let Some((_, message)) = stream.next_message().await {
        rest.push(message);
    }
    assert!(rest.iter().all(|m| m.get("id").is_none()), "{rest:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stats = store.stats();
    assert_eq!((stats.events, stats.sessions), (0, 0), "{stats:?}");
}
