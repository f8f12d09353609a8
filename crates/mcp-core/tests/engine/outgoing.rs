//! Requests to the client, their timeout, end of input and concurrency.

use super::*;

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
