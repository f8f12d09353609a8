//! Responses as SSE streams, resuming them, and the standalone GET stream.

use super::*;

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
