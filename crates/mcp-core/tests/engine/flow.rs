//! Cancellation, progress and batches.

use super::*;

// ---------------------------------------------------------------------------
// 6. Cancellation
// ---------------------------------------------------------------------------

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
