//! Streamable HTTP, 2026-07-28 (stateless) era: per-request `_meta` and
//! the MCP-Protocol-Version / Mcp-Method / Mcp-Name headers, the error
//! codes and statuses, subscriptions/listen and multi-round-trip requests.

mod common;

use std::time::Duration;

use common::*;
use reqwest::StatusCode;
use reqwest::header::HeaderValue;
use serde_json::{Value, json};

/// Sends a complete modern request and returns the reply.
async fn modern(server: &TestServer, id: Value, method: &str, params: Value, caps: Value) -> Reply {
    let (request, body) = server.modern(id, method, params, caps);
    server.send(request, &body).await
}

/// A modern request that must succeed; its result, validated.
async fn ok(server: &TestServer, method: &str, params: Value) -> Value {
    let id = json!(server.id());
    let reply = modern(server, id.clone(), method, params, json!({})).await;
    assert_eq!(reply.status, StatusCode::OK, "{method}: {reply:?}");
    assert_eq!(reply.body["id"], id, "{reply:?}");
    assert!(
        reply.headers.get(mcp_http::SESSION_ID).is_none(),
        "a stateless answer carries a session id"
    );
    validate_response(MODERN, method, &reply.body);
    let result = reply.body["result"].clone();
    assert!(
        result["resultType"].is_string(),
        "{method} without resultType: {reply:?}"
    );
    result
}

/// Checks an error answer: status, code, echoed id; returns the error.
fn expect_error(reply: &Reply, status: StatusCode, code: i64, id: &Value) -> Value {
    assert_eq!(reply.status, status, "{reply:?}");
    assert_eq!(reply.content_type, "application/json", "{reply:?}");
    assert_eq!(reply.error_code(), Some(code), "{reply:?}");
    assert_eq!(
        &reply.body["id"], id,
        "the error does not echo the id: {reply:?}"
    );
    validate_message(MODERN, &reply.body);
    reply.body["error"].clone()
}

#[tokio::test]
async fn modern_requests_with_headers() {
    let server = TestServer::start(|c| c).await;

    let discover = ok(&server, "server/discover", json!({})).await;
    assert_eq!(discover["resultType"], "complete");
    assert!(
        discover["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.contains(&json!(MODERN))),
        "{discover}"
    );

    let tools = ok(&server, "tools/list", json!({})).await;
    assert!(tools["ttlMs"].as_u64().is_some(), "{tools}");
    assert!(tools["tools"].as_array().is_some_and(|t| !t.is_empty()));

    let echo = ok(
        &server,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "stateless"}}),
    )
    .await;
    assert_eq!(echo["resultType"], "complete");
    assert_eq!(echo["content"][0]["text"], "stateless");

    let read = ok(
        &server,
        "resources/read",
        json!({"uri": "test://static-text"}),
    )
    .await;
    assert_eq!(
        read["contents"][0]["text"],
        "This is the content of the static text resource."
    );

    let prompt = ok(
        &server,
        "prompts/get",
        json!({"name": "test_simple_prompt"}),
    )
    .await;
    assert!(prompt["messages"].as_array().is_some_and(|m| !m.is_empty()));

    // clientInfo is optional
    let reply = server
        .send(
            server
                .post()
                .header(mcp_http::PROTOCOL_VERSION, MODERN)
                .header(mcp_http::METHOD, "tools/list"),
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {}}}}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");

    // Mcp-Name with surrounding whitespace is the same name.
    let (mut headers, body) = modern_parts(
        json!(4),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "trimmed"}}),
        json!({}),
    );
    headers.insert(mcp_http::NAME, HeaderValue::from_static("  echo  "));
    let reply = server.send(server.post().headers(headers), &body).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");

    // Progress comes on an SSE response to the one request.
    let (request, mut body) = server.modern(
        json!("p"),
        "tools/call",
        json!({"name": "test_tool_with_progress", "arguments": {}}),
        json!({}),
    );
    body["params"]["_meta"]["progressToken"] = json!("modern-progress");
    let reply = server.send(request, &body).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert_eq!(reply.content_type, "text/event-stream", "{reply:?}");
    let (response, notifications) = reply.messages.split_last().expect("messages");
    assert_eq!(response["id"], "p", "{reply:?}");
    validate_response(MODERN, "tools/call", response);
    assert_eq!(notifications.len(), 3, "{reply:?}");
    for n in notifications {
        assert_eq!(n["method"], "notifications/progress", "{n}");
        assert_eq!(n["params"]["progressToken"], "modern-progress");
        validate_message(MODERN, n);
    }

    assert_eq!(
        server.endpoint.session_count(),
        0,
        "a stateless request made a session"
    );
}

/// A modern request whose MCP header `name` is set to `value` (or removed).
async fn with_header(
    server: &TestServer,
    id: Value,
    method: &str,
    params: Value,
    name: &'static str,
    value: Option<&'static str>,
) -> Reply {
    let (mut headers, body) = modern_parts(id, method, params, json!({}));
    match value {
        Some(value) => headers.insert(name, HeaderValue::from_static(value)),
        None => headers.remove(name),
    };
    server.send(server.post().headers(headers), &body).await
}

#[tokio::test]
async fn header_mismatch() {
    let server = TestServer::start(|c| c).await;
    let call = json!({"name": "echo", "arguments": {"text": "x"}});
    let read = json!({"uri": "test://static-text"});
    let cases = [
        // Mcp-Name differs from params.name, or is missing
        ("tools/call", &call, mcp_http::NAME, Some("wrong_tool_name")),
        ("tools/call", &call, mcp_http::NAME, None),
        // Mcp-Name differs from params.uri, or is missing
        (
            "resources/read",
            &read,
            mcp_http::NAME,
            Some("test://static-binary"),
        ),
        ("resources/read", &read, mcp_http::NAME, None),
        // Mcp-Method differs (values are case-sensitive), or is missing
        ("tools/call", &call, mcp_http::METHOD, Some("prompts/get")),
        ("tools/call", &call, mcp_http::METHOD, Some("TOOLS/CALL")),
        ("tools/call", &call, mcp_http::METHOD, None),
        // MCP-Protocol-Version differs from _meta, or is missing
        (
            "tools/call",
            &call,
            mcp_http::PROTOCOL_VERSION,
            Some("2025-11-25"),
        ),
        ("tools/call", &call, mcp_http::PROTOCOL_VERSION, None),
    ];
    // Before and after the server has served this client (and knows its
    // `_meta` without reading it again).
    for known in [false, true] {
        if known {
            ok(&server, "tools/call", call.clone()).await;
        }
        for (i, (method, params, header, value)) in cases.iter().enumerate() {
            let id = json!(format!("case-{i}"));
            let reply = with_header(
                &server,
                id.clone(),
                method,
                (*params).clone(),
                header,
                *value,
            )
            .await;
            assert_eq!(
                reply.status,
                StatusCode::BAD_REQUEST,
                "known {known}: {method} with {header}: {value:?} -> {reply:?}"
            );
            expect_error(&reply, StatusCode::BAD_REQUEST, -32020, &id);
        }
    }
}

/// Extra headers of one request.
type Headers = &'static [(&'static str, &'static str)];

/// `region_query` mirrors `region` into `Mcp-Param-Region` and `shard`
/// into `Mcp-Param-Shard`: the headers must agree with the arguments.
#[tokio::test]
async fn tool_parameter_headers() {
    let server = TestServer::start(|c| c).await;
    let tools = ok(&server, "tools/list", json!({})).await;
    let listed = tools["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "region_query"))
        .expect("region_query is listed");
    assert_eq!(
        listed["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );
    let call = |arguments: Value, headers: &[(&'static str, &'static str)]| {
        let id = json!(server.id());
        let params = json!({"name": "region_query", "arguments": arguments});
        let (mut map, body) = modern_parts(id.clone(), "tools/call", params, json!({}));
        for (name, value) in headers {
            map.insert(*name, HeaderValue::from_static(value));
        }
        let request = server.post().headers(map);
        let server = &server;
        async move { (id, server.send(request, &body).await) }
    };
    let accepted: [(Value, Headers, &str); 5] = [
        (
            json!({"region": "eu-west"}),
            &[("mcp-param-region", "eu-west")],
            "region eu-west: ",
        ),
        // Base64 is decoded; header names are case-insensitive.
        (
            json!({"region": "Hello, 世界"}),
            &[("MCP-PARAM-REGION", "=?base64?SGVsbG8sIOS4lueVjA==?=")],
            "region Hello, 世界: ",
        ),
        // A value that only looks half like Base64 is literal.
        (
            json!({"region": "=?base64?SGVsbG8="}),
            &[("mcp-param-region", "=?base64?SGVsbG8=")],
            "region =?base64?SGVsbG8=: ",
        ),
        // Integers compare as numbers.
        (
            json!({"region": "eu", "shard": 42}),
            &[("mcp-param-region", "eu"), ("mcp-param-shard", "42.0")],
            "region eu, shard 42: ",
        ),
        // An absent argument needs no header (`shard` is optional; the
        // framework lists it as a plain integer, so it cannot be null).
        (
            json!({"region": "eu"}),
            &[("mcp-param-region", "eu")],
            "region eu: ",
        ),
    ];
    for (arguments, headers, text) in accepted {
        let (_, reply) = call(arguments.clone(), headers).await;
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "{arguments} {headers:?}: {reply:?}"
        );
        assert_eq!(
            reply.body["result"]["content"][0]["text"], text,
            "{reply:?}"
        );
    }
    let refused: [(Value, Headers, &str); 6] = [
        (json!({"region": "eu"}), &[], "missing"),
        (
            json!({"region": "eu"}),
            &[("mcp-param-region", "us")],
            "does not match",
        ),
        (
            json!({"region": "Hello"}),
            &[("mcp-param-region", "=?base64?SGVsbG8?=")],
            "Base64",
        ),
        (
            json!({"region": "Hello"}),
            &[("mcp-param-region", "=?base64?SGVs!!!bG8=?=")],
            "Base64",
        ),
        (
            json!({"region": "eu", "shard": 7}),
            &[("mcp-param-region", "eu"), ("mcp-param-shard", "8")],
            "Mcp-Param-Shard",
        ),
        // A header for an argument the body does not have.
        (
            json!({"region": "eu"}),
            &[("mcp-param-region", "eu"), ("mcp-param-shard", "1")],
            "absent",
        ),
    ];
    for (arguments, headers, message) in refused {
        let (id, reply) = call(arguments.clone(), headers).await;
        let error = expect_error(&reply, StatusCode::BAD_REQUEST, -32020, &id);
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.contains(message)),
            "{arguments} {headers:?}: {error}"
        );
    }
    // Non-ASCII bytes in a header value are refused, not mangled.
    let id = json!(server.id());
    let params = json!({"name": "region_query", "arguments": {"region": "café"}});
    let (mut map, body) = modern_parts(id.clone(), "tools/call", params, json!({}));
    map.insert(
        "mcp-param-region",
        HeaderValue::from_bytes("café".as_bytes()).expect("obs-text is a valid header value"),
    );
    let reply = server.send(server.post().headers(map), &body).await;
    let error = expect_error(&reply, StatusCode::BAD_REQUEST, -32020, &id);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("invalid characters")),
        "{error}"
    );
}

#[tokio::test]
async fn missing_meta() {
    let server = TestServer::start(|c| c).await;
    let headers = || {
        server
            .post()
            .header(mcp_http::PROTOCOL_VERSION, MODERN)
            .header(mcp_http::METHOD, "server/discover")
    };
    let cases = [
        json!({}),
        json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}),
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}),
        // Members of the wrong type are malformed `_meta`, not a mismatch
        // with the headers.
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": 20260728,
                         "io.modelcontextprotocol/clientCapabilities": {}}}),
        json!({"_meta": ""}),
    ];
    for (i, params) in cases.into_iter().enumerate() {
        let id = json!(100 + i);
        let reply = server
            .send(
                headers(),
                &json!({"jsonrpc": "2.0", "id": id, "method": "server/discover", "params": params}),
            )
            .await;
        expect_error(&reply, StatusCode::BAD_REQUEST, -32602, &id);
    }
}

#[tokio::test]
async fn unsupported_version() {
    let server = TestServer::start(|c| c).await;
    let discover = ok(&server, "server/discover", json!({})).await;
    let advertised = discover["supportedVersions"]
        .as_array()
        .cloned()
        .unwrap_or_default();

    let mut meta = modern_meta(json!({}));
    meta["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let reply = server
        .send(
            server
                .post()
                .header(mcp_http::PROTOCOL_VERSION, "1900-01-01")
                .header(mcp_http::METHOD, "server/discover"),
            &json!({"jsonrpc": "2.0", "id": 301, "method": "server/discover",
                    "params": {"_meta": meta}}),
        )
        .await;
    let error = expect_error(&reply, StatusCode::BAD_REQUEST, -32022, &json!(301));
    assert_eq!(error["data"]["requested"], "1900-01-01", "{error}");
    let supported = error["data"]["supported"]
        .as_array()
        .expect("data.supported");
    assert!(supported.contains(&json!(MODERN)), "{error}");
    assert!(
        supported.iter().all(|v| advertised.contains(v)),
        "data.supported {supported:?} names versions discover does not ({advertised:?})"
    );
}

#[tokio::test]
async fn removed_methods_and_get() {
    let server = TestServer::start(|c| c).await;
    for (i, (method, params)) in [
        ("ping", json!({})),
        (
            "initialize",
            json!({"protocolVersion": MODERN, "capabilities": {},
                               "clientInfo": {"name": "t", "version": "1"}}),
        ),
        ("logging/setLevel", json!({"level": "info"})),
        (
            "resources/subscribe",
            json!({"uri": "test://watched-resource"}),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let id = json!(200 + i);
        let reply = modern(&server, id.clone(), method, params.clone(), json!({})).await;
        let error = expect_error(&reply, StatusCode::NOT_FOUND, -32601, &id);
        assert!(error["message"].is_string(), "{method}: {error}");
        assert!(
            reply.headers.get(mcp_http::SESSION_ID).is_none(),
            "{method}"
        );
        // Named by the header alone, without `_meta`, the revision is the
        // same, and so is the answer: no legacy answer without a session.
        let id = json!(210 + i);
        let reply = server
            .send(
                server
                    .post()
                    .header(mcp_http::PROTOCOL_VERSION, MODERN)
                    .header(mcp_http::METHOD, method),
                &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
            )
            .await;
        let error = expect_error(&reply, StatusCode::NOT_FOUND, -32601, &id);
        assert!(
            error["data"]["reason"]
                .as_str()
                .is_some_and(|r| r.contains(MODERN)),
            "{method}: {error}"
        );
        assert!(
            reply.headers.get(mcp_http::SESSION_ID).is_none(),
            "{method}"
        );
    }
    assert_eq!(server.endpoint.session_count(), 0);

    // No GET stream outside a legacy session.
    let response = within("GET", server.get().send()).await.expect("GET");
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);

    // A JSON array is not a 2026-07-28 request.
    let mut meta = modern_meta(json!({}));
    meta["x"] = json!(1);
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}
    ]);
    let reply = server
        .send(
            server
                .post()
                .header(mcp_http::PROTOCOL_VERSION, MODERN)
                .header(mcp_http::METHOD, "server/discover"),
            &batch,
        )
        .await;
    assert!(reply.status.is_client_error(), "batch answered {reply:?}");
    assert!(
        reply.body.is_object() && reply.body.get("error").is_some(),
        "a batch gets one JSON-RPC error object: {reply:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_receives_list_changed() {
    let server = TestServer::start(|c| c).await;
    let (request, body) = server.modern(
        json!("listen-1"),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
        json!({}),
    );
    let response = within("listen", request.body(body.to_string()).send())
        .await
        .expect("POST");
    assert_eq!(response.status(), StatusCode::OK);
    let mut listen = SseStream::new(response);

    let (_, ack) = listen.next_message().await.expect("acknowledgement");
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"]["toolsListChanged"], true,
        "{ack}"
    );
    validate_message(MODERN, &ack);

    let result = ok(
        &server,
        "tools/call",
        json!({"name": "test_trigger_tool_change", "arguments": {}}),
    )
    .await;
    assert_eq!(result["resultType"], "complete");

    let (_, changed) = listen.next_message().await.expect("list_changed");
    assert_eq!(
        changed["method"], "notifications/tools/list_changed",
        "{changed}"
    );
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1",
        "{changed}"
    );
    validate_message(MODERN, &changed);

    // The new tool is listed.
    let tools = ok(&server, "tools/list", json!({})).await;
    assert!(
        tools["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "test_dynamic_tool")),
        "{tools}"
    );

    // Nothing else arrives (no progress, logs or other kinds).
    match listen.next_within(Duration::from_millis(300)).await {
        Err(_) => {}
        Ok(Some(event)) if event.data.is_empty() => {}
        Ok(other) => panic!("unexpected on the listen stream: {other:?}"),
    }
}

#[tokio::test]
async fn input_required_round_trip() {
    let server = TestServer::start(|c| c).await;
    let caps = json!({"elicitation": {}});
    let params = json!({"name": "test_input_required_result_elicitation", "arguments": {}});

    let reply = modern(
        &server,
        json!(1),
        "tools/call",
        params.clone(),
        caps.clone(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    validate_response(MODERN, "tools/call", &reply.body);
    let first = &reply.body["result"];
    assert_eq!(first["resultType"], "input_required", "{first}");
    let ask = &first["inputRequests"]["user_name"];
    assert_eq!(ask["method"], "elicitation/create", "{first}");
    assert_eq!(ask["params"]["message"], "What is your name?", "{first}");

    let mut retry = params.clone();
    retry["inputResponses"] =
        json!({"user_name": {"action": "accept", "content": {"name": "Alice"}}});
    if let Some(state) = first.get("requestState") {
        retry["requestState"] = state.clone();
    }
    let reply = modern(&server, json!(2), "tools/call", retry, caps).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    validate_response(MODERN, "tools/call", &reply.body);
    let done = &reply.body["result"];
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(done["content"][0]["text"], "Hello, Alice!", "{done}");
}
