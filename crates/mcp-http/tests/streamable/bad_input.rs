//! Bad input and its status codes, and batches in each revision.

use super::*;

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
