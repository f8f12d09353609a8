//! The modern (2026-07-28) era: requests that carry their own metadata.

use super::*;

// ---------------------------------------------------------------------------
// 9. Modern era
// ---------------------------------------------------------------------------

#[tokio::test]
async fn modern_request_is_handled_with_result_type() {
    let version = ProtocolVersion::V2026_07_28;
    let mut h = start();
    let request = modern_call(1, "echo", json!({ "m": true }));
    assert_valid(version, &request);
    let response = h.request(request).await;
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
    assert_eq!(
        response["result"]["echo"],
        json!({ "m": true }),
        "{response}"
    );
    assert_valid_response(version, "tools/call", &response);

    // Without clientInfo (optional) it is served too.
    let mut request = modern_call(2, "echo", json!({}));
    request["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientInfo");
    let response = h.request(request).await;
    assert_eq!(response["result"]["resultType"], "complete", "{response}");

    // Errors stay plain errors.
    let response = h.request(modern_call(3, "no-such-tool", json!({}))).await;
    assert_eq!(error_code(&response), -32602, "{response}");
    assert_valid(version, &response);
}

#[tokio::test]
async fn stateless_requests_each_see_their_own_client() {
    let mut h = start();
    let from = |id: i64, client: &str, sampling: bool, token: Option<i64>| {
        let mut request = modern_call(id, "whoami", json!({}));
        let meta = &mut request["params"]["_meta"];
        meta["io.modelcontextprotocol/clientInfo"] = json!({ "name": client, "version": "1" });
        if sampling {
            meta["io.modelcontextprotocol/clientCapabilities"] = json!({ "sampling": {} });
        }
        if let Some(token) = token {
            meta["progressToken"] = json!(token);
        }
        request
    };
    // The same client twice (its `_meta` repeats), others between; what
    // one request said never shows in another.
    let sent = [
        (1, "a", true, None),
        (2, "b", false, None),
        (3, "a", true, None),
        (4, "a", false, Some(40)),
        (5, "a", true, Some(50)),
        (6, "a", true, None),
    ];
    for (id, client, sampling, token) in sent {
        let request = from(id, client, sampling, token);
        let response = h.request(request.clone()).await;
        let seen = &response["result"];
        assert_eq!(seen["client"], client, "{response}");
        assert_eq!(seen["sampling"], sampling, "{response}");
        assert_eq!(seen["token"], json!(token), "{response}");
        assert_eq!(seen["revision"], "2026-07-28", "{response}");
        // `_meta` opens the params: whether read or recognised, it is
        // not handed on again.
        assert_eq!(
            seen["params_past_meta"],
            json!({ "arguments": {}, "name": "whoami" }),
            "{response}"
        );
        // The handler has the params whole, a recognised `_meta` included.
        assert_eq!(seen["params"], request["params"], "{response}");
    }
    // Where `_meta` is not first, the params go on untouched.
    let meta = from(8, "a", true, None)["params"]["_meta"].to_string();
    let text = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"whoami","_meta":{meta}}}}}"#
    );
    h.send_text(text, FrameKind::Request).await;
    let response = h.recv().await;
    assert_eq!(response["result"]["client"], "a", "{response}");
    assert_eq!(
        response["result"]["params_past_meta"],
        json!({ "name": "whoami", "_meta": serde_json::from_str::<Value>(&meta).unwrap() }),
        "{response}"
    );
    // A request that lost a required member is refused even after the same
    // client was served.
    let mut request = from(7, "a", true, None);
    request["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    assert_eq!(error_code(&h.request(request).await), -32602);
}

#[tokio::test]
async fn modern_unsupported_version_is_minus_32022() {
    let mut h = start();
    let mut request = modern_call(1, "echo", json!({}));
    request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let response = h.request(request).await;
    assert_eq!(error_code(&response), -32022, "{response}");
    let data = &response["error"]["data"];
    let supported = data["supported"]
        .as_array()
        .unwrap_or_else(|| panic!("data.supported: {response}"));
    assert!(!supported.is_empty(), "{response}");
    assert!(supported.contains(&json!("2026-07-28")), "{response}");
    assert_eq!(data["requested"], "1900-01-01", "{response}");
    assert_valid(ProtocolVersion::V2026_07_28, &response);
    assert!(
        validator(ProtocolVersion::V2026_07_28).has_def("UnsupportedProtocolVersionError"),
        "the schema names the error"
    );
    validator(ProtocolVersion::V2026_07_28)
        .validate_def("UnsupportedProtocolVersionError", &response)
        .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn server_discover_describes_the_server() {
    let version = ProtocolVersion::V2026_07_28;
    let mut h = start();
    let request = json!({ "jsonrpc": "2.0", "id": "discover-1", "method": "server/discover", "params": { "_meta": modern_meta() } });
    assert_valid(version, &request);
    let response = h.request(request).await;
    let result = &response["result"];
    let versions = result["supportedVersions"]
        .as_array()
        .unwrap_or_else(|| panic!("{response}"));
    assert!(versions.contains(&json!("2026-07-28")), "{response}");
    assert!(result["capabilities"]["tools"].is_object(), "{response}");
    assert!(
        result["capabilities"].get("prompts").is_none(),
        "{response}"
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "engine-test-server",
        "{response}"
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["version"], "1.2.3",
        "{response}"
    );
    assert_eq!(result["resultType"], "complete", "{response}");
    assert!(result["ttlMs"].is_u64(), "{response}");
    assert!(
        matches!(result["cacheScope"].as_str(), Some("public" | "private")),
        "{response}"
    );
    assert_valid_response(version, "server/discover", &response);
    validator(version)
        .validate_def("DiscoverResult", result)
        .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn modern_request_without_client_capabilities_is_invalid_params() {
    let mut h = start();
    let mut request = modern_call(1, "echo", json!({}));
    request["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let response = h.request(request).await;
    assert_eq!(error_code(&response), -32602, "{response}");

    // Same for discovery.
    let response = h
        .request(json!({
            "jsonrpc": "2.0", "id": 2, "method": "server/discover",
            "params": { "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } }
        }))
        .await;
    assert_eq!(error_code(&response), -32602, "{response}");

    // A _meta that is not an object at all.
    let response = h
        .request(
            json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": { "_meta": 5 } }),
        )
        .await;
    assert_eq!(error_code(&response), -32602, "{response}");
}

#[tokio::test]
async fn ping_is_removed_in_the_modern_era() {
    let mut h = start();
    let response =
        h.request(json!({ "jsonrpc": "2.0", "id": 1, "method": "ping", "params": { "_meta": modern_meta() } })).await;
    assert_eq!(error_code(&response), -32601, "{response}");
    // The modern request did not start a legacy session: a handshake works.
    h.handshake(ProtocolVersion::V2025_11_25, json!({})).await;
}
