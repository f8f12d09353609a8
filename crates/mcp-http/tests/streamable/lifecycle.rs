//! A session's life: its handshake, its end, late answers, idle expiry and
//! the cap on sessions.

use super::*;

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
