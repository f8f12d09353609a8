//! The handshake, requests before and after it, undeclared capabilities,
//! unknown methods and malformed input.

use super::*;

// ---------------------------------------------------------------------------
// 1. Legacy handshake
// ---------------------------------------------------------------------------

#[tokio::test]
async fn legacy_handshake_in_every_legacy_revision() {
    for version in LEGACY {
        let mut h = start();
        let response = h.initialize(version.as_str(), json!({})).await;
        let result = &response["result"];
        assert_eq!(result["protocolVersion"], version.as_str(), "{response}");
        assert_eq!(
            result["serverInfo"]["name"], "engine-test-server",
            "{response}"
        );
        assert_eq!(result["serverInfo"]["version"], "1.2.3", "{response}");
        assert!(result["capabilities"]["tools"].is_object(), "{response}");
        assert!(
            result["capabilities"].get("prompts").is_none(),
            "{response}"
        );
        assert!(
            result.get("resultType").is_none(),
            "legacy results carry no resultType: {response}"
        );
        assert_valid_response(version, "initialize", &response);

        // The session works once initialized.
        h.initialized().await;
        let echo = h.request(call(2, "echo", json!({ "x": 1 }))).await;
        assert_eq!(echo["result"]["echo"], json!({ "x": 1 }), "{echo}");
        assert!(echo["result"].get("resultType").is_none(), "{echo}");
        assert_valid_response(version, "tools/call", &echo);
    }
}

#[tokio::test]
async fn legacy_handshake_with_unknown_version_offers_latest_legacy() {
    let mut h = start();
    let response = h.initialize("1999-01-01", json!({})).await;
    assert_eq!(
        response["result"]["protocolVersion"], "2025-11-25",
        "{response}"
    );
    assert_valid_response(ProtocolVersion::V2025_11_25, "initialize", &response);
}

// ---------------------------------------------------------------------------
// 2. Before initialize
// ---------------------------------------------------------------------------

#[tokio::test]
async fn request_before_initialize_without_meta_is_invalid_params() {
    let mut h = start();
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }))
        .await;
    assert_eq!(error_code(&response), -32602, "{response}");
    let response = h.request(call(2, "echo", json!({}))).await;
    assert_eq!(error_code(&response), -32602, "{response}");
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {} }))
        .await;
    assert_eq!(error_code(&response), -32602, "{response}");
}

#[tokio::test]
async fn ping_before_initialize_returns_empty_object() {
    let mut h = start();
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": "p", "method": "ping" }))
        .await;
    assert_eq!(
        response,
        json!({ "jsonrpc": "2.0", "id": "p", "result": {} })
    );
    // And a handshake still works afterwards.
    h.handshake(ProtocolVersion::V2025_11_25, json!({})).await;
}

// ---------------------------------------------------------------------------
// 3. Second initialize
// ---------------------------------------------------------------------------

#[tokio::test]
async fn second_initialize_is_invalid_request() {
    let mut h = start();
    h.initialize("2025-06-18", json!({})).await;
    // Before notifications/initialized ...
    let again = h.initialize("2025-06-18", json!({})).await;
    assert_eq!(error_code(&again), -32600, "{again}");
    // ... and after.
    h.initialized().await;
    let again = h.initialize("2025-11-25", json!({})).await;
    assert_eq!(error_code(&again), -32600, "{again}");
    // The session is unharmed and still speaks the first revision.
    let echo = h.request(call(5, "echo", json!({}))).await;
    assert!(echo.get("result").is_some(), "{echo}");
}

// ---------------------------------------------------------------------------
// 4. Capabilities and unknown methods
// ---------------------------------------------------------------------------

#[tokio::test]
async fn undeclared_capability_and_unknown_method_are_method_not_found() {
    let mut h = start();
    h.handshake(ProtocolVersion::V2025_06_18, json!({})).await;
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": 1, "method": "prompts/list" }))
        .await;
    assert_eq!(error_code(&response), -32601, "{response}");
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": { "name": "x" } }))
        .await;
    assert_eq!(error_code(&response), -32601, "{response}");
    // Not a method of MCP at all: the service says so, the engine passes it on.
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": 3, "method": "no/such/method" }))
        .await;
    assert_eq!(error_code(&response), -32601, "{response}");
    assert_valid(ProtocolVersion::V2025_06_18, &response);

    // Same in the modern era.
    let mut h = start();
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": 4, "method": "prompts/list", "params": { "_meta": modern_meta() } }))
        .await;
    assert_eq!(error_code(&response), -32601, "{response}");
    let response = h
        .request(json!({ "jsonrpc": "2.0", "id": 5, "method": "no/such/method", "params": { "_meta": modern_meta() } }))
        .await;
    assert_eq!(error_code(&response), -32601, "{response}");
}

// ---------------------------------------------------------------------------
// 5. Malformed input
// ---------------------------------------------------------------------------

#[tokio::test]
async fn malformed_json_is_a_parse_error_and_the_session_continues() {
    let mut h = start();
    h.send_text(
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ",
        FrameKind::Request,
    )
    .await;
    let response = h.recv().await;
    assert_eq!(error_code(&response), -32700, "{response}");
    assert_eq!(response["id"], Value::Null, "{response}");
    assert!(
        response.as_object().unwrap().contains_key("id"),
        "the id member must be present (null): {response}"
    );

    let pong = h
        .request(json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" }))
        .await;
    assert_eq!(pong["result"], json!({}), "{pong}");

    // Also inside an initialized session.
    h.handshake(ProtocolVersion::V2025_06_18, json!({})).await;
    h.send_text("not json at all", FrameKind::Request).await;
    let response = h.recv().await;
    assert_eq!(error_code(&response), -32700, "{response}");
    assert_eq!(response["id"], Value::Null, "{response}");
    let pong = h
        .request(json!({ "jsonrpc": "2.0", "id": 3, "method": "ping" }))
        .await;
    assert_eq!(pong["result"], json!({}), "{pong}");
}

#[tokio::test]
async fn invalid_requests_are_rejected_with_their_id_when_readable() {
    let mut h = start();
    h.handshake(ProtocolVersion::V2025_06_18, json!({})).await;

    // No method.
    h.send_text(r#"{"jsonrpc":"2.0","id":5}"#, FrameKind::Request)
        .await;
    let response = h.recv().await;
    assert_eq!(error_code(&response), -32600, "{response}");
    assert_eq!(response["id"], 5, "{response}");

    // Wrong JSON-RPC version.
    h.send_text(
        r#"{"jsonrpc":"1.0","id":6,"method":"ping"}"#,
        FrameKind::Request,
    )
    .await;
    let response = h.recv().await;
    assert_eq!(error_code(&response), -32600, "{response}");
    assert_eq!(response["id"], 6, "{response}");

    // No jsonrpc member.
    h.send_text(r#"{"id":"seven","method":"ping"}"#, FrameKind::Request)
        .await;
    let response = h.recv().await;
    assert_eq!(error_code(&response), -32600, "{response}");
    assert_eq!(response["id"], "seven", "{response}");

    // Ids of the wrong type cannot be echoed.
    for id in [r#"{"a":1}"#, "true", "[1]", "1.5"] {
        h.send_text(
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
            FrameKind::Request,
        )
        .await;
        let response = h.recv().await;
        assert_eq!(error_code(&response), -32600, "id {id}: {response}");
        assert_eq!(response["id"], Value::Null, "id {id}: {response}");
    }

    // Not an object at all.
    h.send_text("42", FrameKind::Request).await;
    let response = h.recv().await;
    assert_eq!(error_code(&response), -32600, "{response}");

    // Params that are not an object.
    for params in [r#""text""#, "7", "true"] {
        h.send_text(
            format!(r#"{{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{params}}}"#),
            FrameKind::Request,
        )
        .await;
        let response = h.recv().await;
        assert_eq!(error_code(&response), -32600, "params {params}: {response}");
        assert_eq!(response["id"], 8, "params {params}: {response}");
    }

    // Method of the wrong type.
    h.send_text(
        r#"{"jsonrpc":"2.0","id":9,"method":12}"#,
        FrameKind::Request,
    )
    .await;
    let response = h.recv().await;
    assert_eq!(error_code(&response), -32600, "{response}");
    assert_eq!(response["id"], 9, "{response}");

    // The session keeps serving.
    let pong = h
        .request(json!({ "jsonrpc": "2.0", "id": 10, "method": "ping" }))
        .await;
    assert_eq!(pong["result"], json!({}), "{pong}");
}
