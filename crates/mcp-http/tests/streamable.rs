//! Streamable HTTP, legacy (session) era: lifecycle, limits, SSE responses,
//! resumability, the standalone stream, bad input, load and shutdown. Each
//! test serves its own endpoint on a loopback port.

mod common;

use std::time::{Duration, Instant};

use common::*;
use mcp_http::ResponseMode;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HOST, ORIGIN};
use serde_json::{Value, json};

const V11: &str = "2025-11-25";
const V06: &str = "2025-06-18";

fn progress_values(messages: &[Value], token: &Value) -> Vec<f64> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(&m["params"]["progressToken"], token, "{m}");
            m["params"]["progress"]
                .as_f64()
                .expect("progress is a number")
        })
        .collect()
}

// 1 ---------------------------------------------------------------------

#[tokio::test]
async fn legacy_session_lifecycle() {
    let server = TestServer::start(|c| c).await;

    // initialize -> 200 JSON with a session id
    let reply = server.send(server.post(), &initialize_body(1, V11)).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert_eq!(reply.content_type, "application/json", "{reply:?}");
    validate_response(V11, "initialize", &reply.body);
    assert_eq!(reply.body["result"]["protocolVersion"], V11);
    let id = reply
        .headers
        .get(mcp_http::SESSION_ID)
        .expect("Mcp-Session-Id")
        .to_str()
        .expect("ASCII")
        .to_owned();
    assert!(is_visible_ascii(&id), "session id {id:?}");
    assert!(id.len() >= 16, "session id {id:?} is too short");
    let session = LegacySession {
        id: id.clone(),
        version: V11.to_owned(),
    };

    // notifications/initialized -> 202, empty body
    let reply = server
        .send(
            session.headers(server.post()),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{reply:?}");
    assert!(reply.text.is_empty(), "202 with a body: {reply:?}");
    assert_eq!(server.endpoint.session_count(), 1);

    // tools/call echo -> JSON
    let reply = server
        .call(
            &session,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hello over http"}}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert_eq!(reply.content_type, "application/json", "{reply:?}");
    assert_eq!(
        reply.body["result"]["content"][0]["text"], "hello over http",
        "{reply:?}"
    );

    // no session id, no modern _meta -> 400
    let reply = server
        .send(
            server.post().header(mcp_http::PROTOCOL_VERSION, V11),
            &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{reply:?}");
    assert!(reply.body.get("error").is_some(), "{reply:?}");

    // unknown session id -> 404
    let unknown = LegacySession {
        id: "no-such-session-id-0123456789".into(),
        version: V11.into(),
    };
    let reply = server.call(&unknown, "tools/list", json!({})).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{reply:?}");

    // DELETE -> 204; then the id is gone for POST, GET and DELETE
    assert_eq!(server.delete(&id).await, StatusCode::NO_CONTENT);
    assert_eq!(server.endpoint.session_count(), 0);
    let reply = server.call(&session, "tools/list", json!({})).await;
    assert_eq!(
        reply.status,
        StatusCode::NOT_FOUND,
        "POST after DELETE: {reply:?}"
    );
    let get = within("GET", session.headers(server.get()).send())
        .await
        .expect("GET");
    assert_eq!(get.status(), StatusCode::NOT_FOUND, "GET after DELETE");
    assert_eq!(
        server.delete(&id).await,
        StatusCode::NOT_FOUND,
        "DELETE after DELETE"
    );
}

// 2 ---------------------------------------------------------------------

/// A legacy call answered later than its first poll, having sent nothing
/// before its response, is a plain JSON reply, and stores no event: no
/// client could resume a stream that has none.
#[tokio::test]
async fn a_late_plain_answer_is_not_stored() {
    let server = TestServer::start(|c| c).await;
    let session = server.initialize(V11).await;
    let reply = server
        .call(
            &session,
            "tools/call",
            json!({"name": "slow_task", "arguments": {"steps": 2, "step_ms": 20}}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert_eq!(reply.content_type, "application/json", "{reply:?}");
    assert!(reply.body.get("result").is_some(), "{reply:?}");
    let stats = server.endpoint.event_store_stats();
    assert_eq!(stats.events, 0, "{stats:?}");
}

#[tokio::test]
async fn idle_sessions_expire() {
    // Loading a schema takes a while in a debug build: not between pings.
    warm_validators();
    let server = TestServer::start(|c| c.session_idle_timeout(Duration::from_millis(200))).await;
    let idle = server.initialize(V11).await;
    let busy = server.initialize(V11).await;
    assert_eq!(server.endpoint.session_count(), 2);

    // `busy` is used every 50 ms for a second; `idle` is not.
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        let reply = server.call(&busy, "ping", json!({})).await;
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "a used session expired: {reply:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let reply = server.call(&idle, "ping", json!({})).await;
    assert_eq!(
        reply.status,
        StatusCode::NOT_FOUND,
        "idle session still served: {reply:?}"
    );
    assert_eq!(server.endpoint.session_count(), 1);

    // and the used one goes too once left alone
    tokio::time::sleep(Duration::from_secs(1)).await;
    let reply = server.call(&busy, "ping", json!({})).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{reply:?}");
    assert_eq!(server.endpoint.session_count(), 0);
}

#[tokio::test]
async fn session_cap() {
    let server = TestServer::start(|c| c.max_sessions(3)).await;
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(server.initialize(V11).await);
    }
    let reply = server.send(server.post(), &initialize_body(99, V11)).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE, "{reply:?}");
    assert!(
        reply.headers.get(mcp_http::SESSION_ID).is_none(),
        "a refused initialize minted a session id"
    );
    assert_eq!(server.endpoint.session_count(), 3);

    assert_eq!(server.delete(&sessions[0].id).await, StatusCode::NO_CONTENT);
    let fourth = server.initialize(V11).await;
    let result = server
        .call_tool(&fourth, "echo", json!({"text": "fits"}))
        .await;
    assert_eq!(result["content"][0]["text"], "fits");
    assert_eq!(server.endpoint.session_count(), 3);

    let reply = server.send(server.post(), &initialize_body(100, V11)).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE, "{reply:?}");
}

// 3 ---------------------------------------------------------------------

/// test_tool_with_progress with a token: an SSE stream of progress events
/// then the response, and the end of the stream.
async fn progress_over_sse(version: &str) -> Vec<mcp_http::sse::SseEvent> {
    let server = TestServer::start(|c| c).await;
    let session = server.initialize(version).await;
    let token = json!("progress-token-1");
    let response = within(
        "POST",
        session
            .headers(server.post())
            .body(
                json!({"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {
                    "name": "test_tool_with_progress", "arguments": {},
                    "_meta": {"progressToken": token}}})
                .to_string(),
            )
            .send(),
    )
    .await
    .expect("POST");
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = SseStream::new(response);
    let mut events = Vec::new();
    let mut messages = Vec::new();
    loop {
        let event = stream
            .next()
            .await
            .expect("the stream ended before the response");
        assert!(
            event.id.as_deref().is_some_and(|id| !id.is_empty()),
            "an event without id: {event:?}"
        );
        events.push(event.clone());
        if event.data.is_empty() {
            continue;
        }
        let message: Value = serde_json::from_str(&event.data).expect("JSON");
        messages.push(message.clone());
        if message.get("id").is_some() {
            assert_eq!(message["id"], 42);
            validate_response(version, "tools/call", &message);
            assert_eq!(
                message["result"]["content"][0]["text"],
                "Progress test completed"
            );
            break;
        }
        assert_eq!(message["method"], "notifications/progress", "{message}");
        validate_message(version, &message);
    }
    // The stream ends after the response.
    let end = stream
        .next_within(Duration::from_secs(3))
        .await
        .expect("the stream did not end after the response");
    assert_eq!(end, None, "an event after the response");
    assert_eq!(progress_values(&messages, &token), vec![0.0, 50.0, 100.0]);
    // Ids are distinct.
    let mut ids: Vec<_> = events.iter().filter_map(|e| e.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), events.len(), "repeated event ids: {events:?}");
    events
}

#[tokio::test]
async fn sse_progress_with_priming_2025_11_25() {
    let events = progress_over_sse(V11).await;
    let first = &events[0];
    assert!(
        first.data.is_empty(),
        "first event is not a priming event: {events:?}"
    );
    assert!(first.id.is_some(), "priming event without id");
    assert_eq!(
        first.retry,
        Some(1000),
        "priming event without retry: {first:?}"
    );
    assert_eq!(
        events.iter().filter(|e| e.data.is_empty()).count(),
        1,
        "more than one priming event: {events:?}"
    );
}

#[tokio::test]
async fn sse_progress_without_priming_2025_06_18() {
    let events = progress_over_sse(V06).await;
    assert!(
        events.iter().all(|e| !e.data.is_empty()),
        "a 2025-06-18 stream carries a priming event: {events:?}"
    );
    assert!(events.iter().all(|e| e.retry.is_none()), "{events:?}");
}

#[tokio::test]
async fn always_sse_mode() {
    let server = TestServer::start(|c| c.response_mode(ResponseMode::AlwaysSse)).await;
    for version in [V11, V06] {
        let session = server.initialize(version).await;
        let reply = server
            .call(
                &session,
                "tools/call",
                json!({"name": "echo", "arguments": {"text": "as sse"}}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
        assert_eq!(reply.content_type, "text/event-stream", "{reply:?}");
        assert_eq!(reply.messages.len(), 1, "{reply:?}");
        assert_eq!(reply.body["result"]["content"][0]["text"], "as sse");
        let priming = reply.events.iter().filter(|e| e.data.is_empty()).count();
        assert_eq!(priming, usize::from(version == V11), "{version}: {reply:?}");
    }
    // A stateless request answered at once is streamed too.
    let (request, body) = server.modern(
        json!(9),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "stateless as sse"}}),
        json!({}),
    );
    let reply = server.send(request, &body).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert_eq!(reply.content_type, "text/event-stream", "{reply:?}");
    assert_eq!(reply.messages.len(), 1, "{reply:?}");
    assert_eq!(reply.body["id"], 9, "{reply:?}");
    assert_eq!(
        reply.body["result"]["content"][0]["text"],
        "stateless as sse"
    );
}

// 4 ---------------------------------------------------------------------

/// Starts slow_task {steps: 10, step_ms: 100} with a progress token in a
/// 2025-11-25 session, reads the priming event and two progress events,
/// and drops the connection. Returns the session, the last event id read
/// and the last progress value read.
async fn start_and_drop(server: &TestServer) -> (LegacySession, String, f64) {
    let session = server.initialize(V11).await;
    let mut stream = server
        .start_slow_task(&session, json!("slow-1"), (10, 100), "slow")
        .await;
    let mut last = 0.0;
    let mut seen = 0;
    while seen < 2 {
        let (_, message) = stream.next_message().await.expect("stream ended early");
        assert_eq!(message["method"], "notifications/progress", "{message}");
        last = message["params"]["progress"].as_f64().expect("progress");
        seen += 1;
    }
    let last_id = stream.last_event_id().to_owned();
    assert!(!last_id.is_empty());
    drop(stream); // a dropped stream is not a cancellation
    (session, last_id, last)
}

/// Resumes with Last-Event-ID and checks that the remaining progress values
/// (after `last`) and the response arrive exactly once.
async fn resume_and_check(server: &TestServer, session: &LegacySession, last_id: &str, last: f64) {
    let response = within(
        "GET",
        session
            .headers(server.get())
            .header(mcp_http::LAST_EVENT_ID, last_id)
            .send(),
    )
    .await
    .expect("GET");
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = SseStream::new(response);
    let mut messages = Vec::new();
    let mut ids = Vec::new();
    while let Some(event) = stream.next().await {
        if event.data.is_empty() {
            continue;
        }
        ids.push(event.id.clone().expect("replayed event without id"));
        messages.push(serde_json::from_str::<Value>(&event.data).expect("JSON"));
    }
    let response = messages.last().expect("nothing after resuming");
    assert_eq!(
        response["id"], "slow-1",
        "the last message is not the response: {messages:?}"
    );
    validate_response(V11, "tools/call", response);
    assert_eq!(
        response["result"]["content"][0]["text"], "finished 10 steps",
        "{response}"
    );
    let expected: Vec<f64> = ((last as u32 + 1)..=10).map(f64::from).collect();
    assert_eq!(
        progress_values(&messages, &json!("slow")),
        expected,
        "missed or repeated progress after resuming from {last_id}"
    );
    assert_eq!(messages.len(), expected.len() + 1, "{messages:?}");
    assert!(
        !ids.iter().any(|id| id == last_id),
        "the last seen event was replayed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_while_running() {
    let server = TestServer::start(|c| c).await;
    let (session, last_id, last) = start_and_drop(&server).await;
    resume_and_check(&server, &session, &last_id, last).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_after_completion() {
    let server = TestServer::start(|c| c).await;
    let (session, last_id, last) = start_and_drop(&server).await;
    // slow_task takes about a second; it must finish without a reader.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    resume_and_check(&server, &session, &last_id, last).await;
}

#[tokio::test]
async fn resume_with_unknown_event_id() {
    let server = TestServer::start(|c| c).await;
    let session = server.initialize(V11).await;
    for bad in ["not-an-event-id", "1:999999999", "0:0", ""] {
        let response = within(
            "GET",
            session
                .headers(server.get())
                .header(mcp_http::LAST_EVENT_ID, bad)
                .send(),
        )
        .await
        .expect("GET");
        assert_eq!(
            response.status(),
            StatusCode::NOT_FOUND,
            "Last-Event-ID {bad:?}"
        );
    }
    // The session is still fine.
    let result = server
        .call_tool(&session, "echo", json!({"text": "still here"}))
        .await;
    assert_eq!(result["content"][0]["text"], "still here");
}

/// A request whose id is pending on another stream is refused (alone or
/// in a batch), and the first request's messages still reach the first
/// stream. In a 2025-03-26 session, which takes batches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_id_in_flight_keeps_the_first_stream() {
    let server = TestServer::start(|c| c).await;
    let session = server.initialize("2025-03-26").await;
    let slow = json!({"jsonrpc": "2.0", "id": "dup", "method": "tools/call", "params": {
        "name": "slow_task", "arguments": {"steps": 4, "step_ms": 100},
        "_meta": {"progressToken": "p"}}});
    let response = within(
        "POST",
        session.headers(server.post()).body(slow.to_string()).send(),
    )
    .await
    .expect("POST");
    let mut stream = SseStream::new(response);
    let (_, first) = stream.next_message().await.expect("a progress event");
    let ping = json!({"jsonrpc": "2.0", "id": "dup", "method": "ping"});
    assert_eq!(first["method"], "notifications/progress", "{first}");

    let reply = server.send(session.headers(server.post()), &ping).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert_eq!(reply.body["id"], "dup", "{reply:?}");
    assert_eq!(reply.error_code(), Some(-32600), "{reply:?}");
    let message = reply.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("already in use"), "{reply:?}");
    let batch = json!([ping, {"jsonrpc": "2.0", "id": "other", "method": "ping"}]);
    let reply = server.send(session.headers(server.post()), &batch).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{reply:?}");
    assert_eq!(reply.body["id"], Value::Null, "{reply:?}");
    assert_eq!(reply.error_code(), Some(-32600), "{reply:?}");
    let message = reply.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("already in use"), "{reply:?}");

    let mut messages = vec![first];
    while let Some((_, message)) = stream.next_message().await {
        messages.push(message);
    }
    let response = messages.last().expect("messages");
    assert_eq!(response["id"], "dup", "{messages:?}");
    assert_eq!(
        response["result"]["content"][0]["text"], "finished 4 steps",
        "{messages:?}"
    );
    assert_eq!(
        progress_values(&messages, &json!("p")),
        vec![1.0, 2.0, 3.0, 4.0]
    );

    // Once answered, the id is free again.
    let reply = server.send(session.headers(server.post()), &ping).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert_eq!(reply.body["id"], "dup", "{reply:?}");
    assert!(reply.body.get("result").is_some(), "{reply:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standalone_get_stream() {
    let server = TestServer::start(|c| c).await;
    let session = server.initialize(V11).await;

    let response = within("GET", session.headers(server.get()).send())
        .await
        .expect("GET");
    assert_eq!(response.status(), StatusCode::OK);
    let mut standalone = SseStream::new(response);
    let priming = standalone.next().await.expect("priming event");
    assert!(
        priming.data.is_empty() && priming.id.is_some(),
        "{priming:?}"
    );

    // A second concurrent GET -> 409.
    let second = within("GET", session.headers(server.get()).send())
        .await
        .expect("GET");
    assert_eq!(second.status(), StatusCode::CONFLICT);

    // Subscribe, then change the resource: the update arrives on the
    // standalone stream, not on the tool call's response.
    let reply = server
        .call(
            &session,
            "resources/subscribe",
            json!({"uri": "test://watched-resource"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    let reply = server
        .call(
            &session,
            "tools/call",
            json!({"name": "update_watched_resource", "arguments": {}}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert!(reply.body.get("result").is_some(), "{reply:?}");
    assert!(
        !reply
            .messages
            .iter()
            .any(|m| m["method"] == "notifications/resources/updated"),
        "the update came on the POST response stream: {reply:?}"
    );
    let (event, message) = standalone
        .next_message()
        .await
        .expect("standalone stream ended");
    assert!(event.id.is_some(), "{event:?}");
    assert_eq!(
        message["method"], "notifications/resources/updated",
        "{message}"
    );
    assert_eq!(message["params"]["uri"], "test://watched-resource");
    validate_message(V11, &message);

    // Once the first stream is closed, a new GET may open it again.
    drop(standalone);
    drop(second);
    let start = Instant::now();
    loop {
        let again = within("GET", session.headers(server.get()).send())
            .await
            .expect("GET");
        if again.status() == StatusCode::OK {
            break;
        }
        assert_eq!(again.status(), StatusCode::CONFLICT);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the standalone stream stays taken after its client left"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// 5 ---------------------------------------------------------------------

#[tokio::test]
async fn bad_input_and_status_codes() {
    let server = TestServer::start(|c| c.max_body_bytes(1024)).await;
    let session = server.initialize(V06).await;
    let ping = json!({"jsonrpc": "2.0", "id": 5, "method": "ping"});

    // malformed JSON -> 400, -32700, id null
    let response = within(
        "POST",
        server
            .post()
            .body(r#"{"jsonrpc": "2.0", "id": 1, "method": "#)
            .send(),
    )
    .await
    .expect("POST");
    let reply = Reply::collect(response).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{reply:?}");
    assert_eq!(reply.error_code(), Some(-32700), "{reply:?}");
    // JSON-RPC 2.0 wants `"id": null` here (the 2025-06-18 schema, which
    // only admits string or integer ids, cannot validate this message).
    assert_eq!(reply.body.get("id"), Some(&Value::Null), "{reply:?}");

    // the same inside a session
    let response = within(
        "POST",
        session
            .headers(server.post())
            .body("not json at all")
            .send(),
    )
    .await
    .expect("POST");
    let reply = Reply::collect(response).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{reply:?}");
    assert_eq!(reply.error_code(), Some(-32700), "{reply:?}");

    // wrong Content-Type -> 415
    let response = within(
        "POST",
        session
            .headers(server.http.post(&server.url))
            .header(CONTENT_TYPE, "text/plain")
            .header(ACCEPT, ACCEPT_BOTH)
            .body(ping.to_string())
            .send(),
    )
    .await
    .expect("POST");
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);

    // Accept without text/event-stream -> 406
    let response = within(
        "POST",
        session
            .headers(server.http.post(&server.url))
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .body(ping.to_string())
            .send(),
    )
    .await
    .expect("POST");
    assert_eq!(response.status(), StatusCode::NOT_ACCEPTABLE);

    // body over the limit -> 413
    let mut big = initialize_body(3, V06);
    big["params"]["clientInfo"]["name"] = json!("x".repeat(2000));
    let reply = server.send(server.post(), &big).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE, "{reply:?}");
    assert_eq!(
        reply.messages[0]["error"]["code"], -32600,
        "a JSON-RPC error says why: {reply:?}"
    );

    // foreign Host -> 403
    let reply = server
        .send(
            server.post().header(HOST, "evil.example.com"),
            &initialize_body(4, V06),
        )
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{reply:?}");

    // foreign Origin -> 403
    let reply = server
        .send(
            server.post().header(ORIGIN, "http://evil.example.com"),
            &initialize_body(5, V06),
        )
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{reply:?}");
    let response = within(
        "GET",
        session
            .headers(server.get())
            .header(ORIGIN, "http://evil.example.com")
            .send(),
    )
    .await
    .expect("GET");
    assert_eq!(
        response.status(),
        StatusCode::FORBIDDEN,
        "GET with a foreign Origin"
    );

    // loopback Origins -> served
    for origin in [
        format!("http://127.0.0.1:{}", server.port),
        format!("http://localhost:{}", server.port),
    ] {
        let reply = server
            .send(
                server.post().header(ORIGIN, &origin),
                &initialize_body(6, V06),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "Origin {origin}: {reply:?}");
        let id = reply.headers[mcp_http::SESSION_ID]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(server.delete(&id).await, StatusCode::NO_CONTENT);
    }
    let reply = server
        .send(
            server
                .post()
                .header(HOST, format!("localhost:{}", server.port)),
            &initialize_body(7, V06),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "Host localhost: {reply:?}");

    // a batch in a 2025-06-18 session -> 400 (a batch of requests: see
    // batch_of_requests_rejected_in_2025_06_18_session)
    let notifications = json!([
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
    ]);
    let reply = server
        .send(session.headers(server.post()), &notifications)
        .await;
    assert_eq!(
        reply.status,
        StatusCode::BAD_REQUEST,
        "batch of notifications: {reply:?}"
    );

    // unsupported MCP-Protocol-Version -> 400, in a session and without one
    for version in ["invalid-protocol-version", "2000-01-01", "2099-01-01"] {
        let reply = server
            .send(
                server
                    .post()
                    .header(mcp_http::SESSION_ID, &session.id)
                    .header(mcp_http::PROTOCOL_VERSION, version),
                &ping,
            )
            .await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "in session, {version}: {reply:?}"
        );
        let reply = server
            .send(
                server.post().header(mcp_http::PROTOCOL_VERSION, version),
                &json!({"jsonrpc": "2.0", "id": 12, "method": "tools/list"}),
            )
            .await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "no session, {version}: {reply:?}"
        );
    }

    // The session and the server still work.
    let reply = server.call(&session, "ping", json!({})).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert_eq!(reply.body["result"], json!({}));
    let fresh = server.initialize(V11).await;
    let result = server
        .call_tool(&fresh, "echo", json!({"text": "still serving"}))
        .await;
    assert_eq!(result["content"][0]["text"], "still serving");
}

/// Sends `target` as the request target of a raw HTTP/1.1 POST of
/// `body` (with `Host: 127.0.0.1:PORT`) and returns the status code.
async fn raw_post(server: &TestServer, target: &str, body: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = within(
        "connect",
        tokio::net::TcpStream::connect(("127.0.0.1", server.port)),
    )
    .await
    .expect("connected");
    let request = format!(
        "POST {target} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: {ACCEPT_BOTH}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        server.port,
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("sent");
    let mut answer = Vec::new();
    within("answer", stream.read_to_end(&mut answer))
        .await
        .expect("read");
    let answer = String::from_utf8_lossy(&answer);
    let status = answer.split(' ').nth(1).unwrap_or_default();
    status
        .parse()
        .unwrap_or_else(|_| panic!("no status in {answer:?}"))
}

/// A request target in absolute form names the host to judge (RFC 9112
/// §3.2.2), not `Host`: a foreign one is refused even with a loopback
/// `Host`, and a loopback one is served.
#[tokio::test]
async fn an_absolute_form_target_is_judged_by_its_authority() {
    let server = TestServer::start(|c| c).await;
    let body = initialize_body(1, V06).to_string();
    assert_eq!(raw_post(&server, "http://evil.com/mcp", &body).await, 403);
    let port = server.port;
    assert_eq!(
        raw_post(&server, &format!("http://evil.com:{port}/mcp"), &body).await,
        403
    );
    let own = format!("http://127.0.0.1:{port}/mcp");
    assert_eq!(raw_post(&server, &own, &body).await, 200);
    assert_eq!(raw_post(&server, "/mcp", &body).await, 200);
}

/// A `Mcp-Session-Id` that is there but cannot be a session id (not all
/// visible ASCII, or empty) is refused with 400, for POST, GET and DELETE
/// alike, and never passes for a request without a session; the session
/// it resembles goes on.
#[tokio::test]
async fn an_unreadable_session_id_is_refused() {
    let server = TestServer::start(|c| c).await;
    let session = server.initialize(V06).await;
    let ping = json!({"jsonrpc": "2.0", "id": 5, "method": "ping"});
    let mut spoiled = session.id.as_bytes().to_vec();
    spoiled.extend("é".as_bytes());
    for value in [spoiled, b"".to_vec(), b"with space".to_vec()] {
        let header = reqwest::header::HeaderValue::from_bytes(&value).expect("a header value");
        let shown = String::from_utf8_lossy(&value).into_owned();
        let post = server
            .post()
            .header(mcp_http::SESSION_ID, header.clone())
            .header(mcp_http::PROTOCOL_VERSION, V06);
        let reply = server.send(post, &ping).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "POST {shown:?}: {reply:?}"
        );
        assert_eq!(
            reply.error_code(),
            Some(-32600),
            "POST {shown:?}: {reply:?}"
        );
        assert!(
            reply.text.contains("Mcp-Session-Id"),
            "POST {shown:?}: {reply:?}"
        );

        let get = server.get().header(mcp_http::SESSION_ID, header.clone());
        let response = within("GET", get.send()).await.expect("GET");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "GET {shown:?}");

        let delete = server
            .http
            .delete(&server.url)
            .header(mcp_http::SESSION_ID, header);
        let response = within("DELETE", delete.send()).await.expect("DELETE");
        assert_eq!(
            response.status(),
            StatusCode::BAD_REQUEST,
            "DELETE {shown:?}"
        );
    }
    let reply = server.call(&session, "ping", json!({})).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert!(reply.body.get("result").is_some(), "{reply:?}");
}

#[tokio::test]
async fn batch_of_requests_rejected_in_2025_06_18_session() {
    let server = TestServer::start(|c| c).await;
    let session = server.initialize(V06).await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 10, "method": "ping"},
        {"jsonrpc": "2.0", "id": 11, "method": "ping"}
    ]);
    let response = tokio::time::timeout(
        Duration::from_secs(3),
        session
            .headers(server.post())
            .body(batch.to_string())
            .send(),
    )
    .await
    .expect("no answer to a batch of requests in a 2025-06-18 session")
    .expect("POST");
    let reply = Reply::collect(response).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{reply:?}");
    assert_eq!(reply.content_type, "application/json", "{reply:?}");
    assert!(reply.body.get("error").is_some(), "{reply:?}");
    // The session goes on.
    let reply = server.call(&session, "ping", json!({})).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
}

#[tokio::test]
async fn batch_in_2025_03_26_session() {
    let server = TestServer::start(|c| c).await;
    let session = server.initialize("2025-03-26").await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 10, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
        {"jsonrpc": "2.0", "id": 11, "method": "tools/call",
         "params": {"name": "echo", "arguments": {"text": "batched"}}}
    ]);
    let reply = server.send(session.headers(server.post()), &batch).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    let answers = reply.body.as_array().expect("an array of responses");
    assert_eq!(answers.len(), 2, "{reply:?}");
    let by_id = |id: i64| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {reply:?}"))
    };
    assert_eq!(by_id(10)["result"], json!({}));
    assert_eq!(by_id(11)["result"]["content"][0]["text"], "batched");
    validate_message("2025-03-26", &reply.body);
}

/// Malformed elements of a batch follow JSON-RPC 2.0's batch rules: each
/// gets its -32600 error, beside the answers to the requests; a batch with
/// no request that holds malformed elements is refused with 400 and an
/// error for each; an array nested deep is one malformed element, and
/// the session goes on. Without a session no batch is taken.
#[tokio::test]
async fn malformed_batch_elements_are_answered() {
    let server = TestServer::start(|c| c).await;
    let session = server.initialize("2025-03-26").await;

    let mixed = json!([{"jsonrpc": "2.0", "id": 10, "method": "ping"}, 1, [1]]);
    let reply = server.send(session.headers(server.post()), &mixed).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    let answers = reply.body.as_array().expect("an array of responses");
    assert_eq!(answers.len(), 3, "{reply:?}");
    assert!(
        answers
            .iter()
            .any(|a| a["id"] == 10 && a["result"] == json!({}))
    );
    let errors: Vec<&Value> = answers.iter().filter(|a| a["id"].is_null()).collect();
    assert_eq!(errors.len(), 2, "{reply:?}");
    assert!(
        errors.iter().all(|e| e["error"]["code"] == -32600),
        "{reply:?}"
    );

    let deep = format!("[{}{}]", "[".repeat(100_000), "]".repeat(100_000));
    for body in ["[1]".to_owned(), "[[1]]".to_owned(), deep] {
        let request = session.headers(server.post()).body(body.clone());
        let response = within("POST", request.send()).await.expect("POST");
        let reply = Reply::collect(response).await;
        let shown = &body[..body.len().min(12)];
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{shown}: {reply:?}");
        let errors = serde_json::from_str::<Value>(&reply.text).expect("a JSON body");
        let errors = errors.as_array().expect("an array of errors");
        assert_eq!(errors.len(), 1, "{shown}: {reply:?}");
        assert_eq!(errors[0]["error"]["code"], -32600, "{shown}: {reply:?}");
    }

    let ping = json!([{"jsonrpc": "2.0", "id": 12, "method": "ping"}]);
    let reply = server.send(server.post(), &ping).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{reply:?}");
    assert_eq!(reply.error_code(), Some(-32600), "{reply:?}");
    assert!(reply.text.contains("batches"), "{reply:?}");

    let reply = server.call(&session, "ping", json!({})).await;
    assert_eq!(reply.body["result"], json!({}), "{reply:?}");
}

// 7 ---------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn isolation_under_load() {
    const SESSIONS: usize = 300;
    const CALLS: usize = 3;
    let server = std::sync::Arc::new(TestServer::start(|c| c).await);
    let start = Instant::now();
    let run = async {
        let tasks: Vec<_> = (0..SESSIONS)
            .map(|i| {
                let server = std::sync::Arc::clone(&server);
                tokio::spawn(async move {
                    let session = server.initialize(V11).await;
                    let mut texts = Vec::new();
                    for k in 0..CALLS {
                        let text = format!("session {i} call {k} {}", session.id);
                        let result = server
                            .call_tool(&session, "echo", json!({"text": text}))
                            .await;
                        texts.push((text, result["content"][0]["text"].clone()));
                    }
                    (session, texts)
                })
            })
            .collect();
        let mut sessions = Vec::new();
        for task in tasks {
            let (session, texts) = task.await.expect("session task panicked");
            for (sent, got) in texts {
                assert_eq!(got, json!(sent), "a session got someone else's answer");
            }
            sessions.push(session);
        }
        sessions
    };
    let sessions = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("300 sessions took more than 60 s");
    let mut ids: Vec<_> = sessions.iter().map(|s| s.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), SESSIONS, "session ids repeat");
    assert_eq!(server.endpoint.session_count(), SESSIONS);

    let deletes = futures::future::join_all(sessions.iter().map(|s| server.delete(&s.id))).await;
    assert!(
        deletes.iter().all(|s| *s == StatusCode::NO_CONTENT),
        "{deletes:?}"
    );
    assert_eq!(server.endpoint.session_count(), 0);
    assert!(start.elapsed() < Duration::from_secs(60));
}

// 8 ---------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown() {
    let mut server = TestServer::start(|c| c).await;
    let session = server.initialize(V11).await;

    let response = within("GET", session.headers(server.get()).send())
        .await
        .expect("GET");
    let mut standalone = SseStream::new(response);
    standalone.next().await.expect("priming event");

    // An in-flight slow request (about 5 s) on an SSE stream...
    let response = within(
        "POST",
        session
            .headers(server.post())
            .body(
                json!({"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": {
                    "name": "slow_task", "arguments": {"steps": 50, "step_ms": 100},
                    "_meta": {"progressToken": 1}}})
                .to_string(),
            )
            .send(),
    )
    .await
    .expect("POST");
    let mut slow = SseStream::new(response);
    slow.next_message().await.expect("first progress");
    // ...and one (about 1 s) waiting for a plain JSON answer.
    let pending = tokio::spawn({
        let request = session.headers(server.post()).body(
            json!({"jsonrpc": "2.0", "id": 78, "method": "tools/call", "params": {
                "name": "slow_task", "arguments": {"steps": 10, "step_ms": 100}}})
            .to_string(),
        );
        async move { request.send().await.map(|r| r.status()) }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;

    // serve() returns once the request in flight has finished, well before
    // the shutdown deadline.
    let result = server.shutdown(Duration::from_secs(8)).await;
    assert!(result.is_ok(), "serve() failed: {result:?}");

    // The standalone stream ended.
    let end = standalone
        .next_within(Duration::from_secs(2))
        .await
        .expect("the standalone stream did not end at shutdown");
    assert_eq!(end, None, "an event instead of the end");
    // The slow request's stream ended (maybe after a few more events).
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match slow.next_within(left).await {
            Ok(None) => break,
            Ok(Some(_)) => continue,
            Err(_) => panic!("the slow request's stream did not end at shutdown"),
        }
    }
    // The JSON request was answered or cut off, not left hanging.
    // The JSON request in flight was let finish: answered, not cut off.
    let outcome = tokio::time::timeout(Duration::from_secs(2), pending)
        .await
        .expect("the pending JSON request hangs after shutdown");
    let status = outcome.expect("request task panicked").expect("answered");
    assert_eq!(status, StatusCode::OK);
    // The bodies ended cleanly, not with a transport error.
    assert_eq!(standalone.error, None, "standalone stream");
    assert_eq!(slow.error, None, "slow request stream");
}
