//! The legacy HTTP+SSE transport (2024-11-05) on a real socket: the
//! endpoint event, messages POSTed and answered on the stream, a
//! server->client request, every kind of bad input, sessions freed on
//! disconnect, concurrent sessions kept apart.

mod common;

use std::time::Duration;

use common::*;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, ORIGIN};
use serde_json::{Value, json};

const LEGACY: &str = "2024-11-05";

/// One open legacy SSE session, seen from the client.
struct Legacy {
    stream: SseStream,
    /// The absolute message URL of the endpoint event.
    post_url: String,
    /// The session id of the message URL.
    id: String,
    http: reqwest::Client,
}

impl Legacy {
    /// GET /sse, then the endpoint event.
    async fn open(server: &TestServer) -> Legacy {
        let response = within(
            "GET /sse",
            server
                .http
                .get(format!("http://127.0.0.1:{}/sse", server.port))
                .header("accept", "text/event-stream")
                .send(),
        )
        .await
        .expect("GET /sse");
        assert_eq!(response.status(), StatusCode::OK);
        let mut stream = SseStream::new(response);
        let endpoint = stream.next().await.expect("an endpoint event");
        assert_eq!(endpoint.event.as_deref(), Some("endpoint"), "{endpoint:?}");
        let id = endpoint
            .data
            .strip_prefix("/message?sessionId=")
            .unwrap_or_else(|| panic!("endpoint URL {:?}", endpoint.data))
            .to_owned();
        assert!(is_visible_ascii(&id), "session id {id:?}");
        assert!(
            id.len() >= 16,
            "session id {id:?} is too short to be random"
        );
        Legacy {
            stream,
            post_url: format!("http://127.0.0.1:{}{}", server.port, endpoint.data),
            id,
            http: server.http.clone(),
        }
    }

    /// POSTs `body` (any text) with a JSON content type.
    async fn post_text(&self, body: String) -> reqwest::Response {
        within(
            "POST /message",
            self.http
                .post(&self.post_url)
                .header(CONTENT_TYPE, "application/json")
                .body(body)
                .send(),
        )
        .await
        .expect("POST /message")
    }

    /// POSTs a message that must be accepted.
    async fn post(&self, body: &Value) {
        let response = self.post_text(body.to_string()).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED, "POST {body}");
    }

    /// The next `message` event, parsed.
    async fn next_message(&mut self) -> Value {
        let event = self.stream.next().await.expect("the stream goes on");
        assert_eq!(event.event.as_deref(), Some("message"), "{event:?}");
        serde_json::from_str(&event.data).expect("message data is JSON")
    }

    /// The next message that `pick` accepts; notifications in between are
    /// skipped, anything else is a failure.
    async fn next_where(&mut self, pick: impl Fn(&Value) -> bool) -> Value {
        loop {
            let message = self.next_message().await;
            if pick(&message) {
                return message;
            }
            assert!(message.get("id").is_none(), "unexpected message {message}");
        }
    }

    /// A request whose response arrives on the stream.
    async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let response = self.next_where(|m| m["id"] == id).await;
        validate_response(LEGACY, method, &response);
        response
    }

    /// initialize and notifications/initialized.
    async fn initialize(&mut self, capabilities: Value) {
        let result = self
            .request(
                0,
                "initialize",
                json!({
                    "protocolVersion": LEGACY,
                    "capabilities": capabilities,
                    "clientInfo": {"name": "legacy-sse-tests", "version": "1.0.0"}
                }),
            )
            .await;
        assert_eq!(result["result"]["protocolVersion"], LEGACY, "{result}");
        self.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }
}

/// Waits until `count()` is `expected`.
async fn settles(what: &str, expected: usize, count: impl Fn() -> usize) {
    within(what, async {
        while count() != expected {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}

#[tokio::test]
async fn a_session_from_endpoint_event_to_disconnect() {
    let server = TestServer::start(|c| c).await;
    let mut session = Legacy::open(&server).await;
    assert_eq!(server.endpoint.legacy_sse_session_count(), 1);
    assert_eq!(
        server.endpoint.session_count(),
        0,
        "legacy SSE sessions count on their own"
    );
    session.initialize(json!({})).await;

    let tools = session.request(1, "tools/list", json!({})).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"echo"), "{names:?}");

    let echoed = session
        .request(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "over SSE"}}),
        )
        .await;
    assert_eq!(
        echoed["result"]["content"][0]["text"], "over SSE",
        "{echoed}"
    );

    // A ping without params, and a notification: both accepted.
    session
        .post(&json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}))
        .await;
    let pong = session.next_where(|m| m["id"] == "p").await;
    assert_eq!(pong["result"], json!({}), "{pong}");

    // The client goes away: the session ends and its URL is gone.
    let post_url = session.post_url.clone();
    drop(session);
    settles("the session to be freed", 0, || {
        server.endpoint.legacy_sse_session_count()
    })
    .await;
    let response = within(
        "POST after disconnect",
        server
            .http
            .post(&post_url)
            .header(CONTENT_TYPE, "application/json")
            .body(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string())
            .send(),
    )
    .await
    .expect("POST");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let body: Value = response.json().await.expect("a JSON-RPC error body");
    assert!(body["error"]["code"].is_i64(), "{body}");
}

#[tokio::test]
async fn a_server_request_is_answered_by_a_post() {
    let server = TestServer::start(|c| c).await;
    let mut session = Legacy::open(&server).await;
    session.initialize(json!({"sampling": {}})).await;
    session
        .post(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "test_sampling", "arguments": {"prompt": "Say hi"}}}))
        .await;
    let asked = session
        .next_where(|m| m["method"] == "sampling/createMessage")
        .await;
    validate_message(LEGACY, &asked);
    assert!(asked["id"].is_string() || asked["id"].is_i64(), "{asked}");
    session
        .post(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
            "role": "assistant",
            "content": {"type": "text", "text": "hi there"},
            "model": "test-model"
        }}))
        .await;
    let result = session.next_where(|m| m["id"] == 7).await;
    validate_response(LEGACY, "tools/call", &result);
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .expect("text content");
    assert!(text.contains("hi there"), "{result}");
}

#[tokio::test]
async fn bad_input_gets_its_status_and_disturbs_nothing() {
    let server = TestServer::start(|c| c.max_body_bytes(1024)).await;
    let mut session = Legacy::open(&server).await;
    session.initialize(json!({})).await;
    let base = format!("http://127.0.0.1:{}", server.port);
    let http = &server.http;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();

    let post = |url: String, content_type: &'static str, body: String| async move {
        within(
            "POST",
            http.post(url)
                .header(CONTENT_TYPE, content_type)
                .body(body)
                .send(),
        )
        .await
        .expect("POST")
    };
    let check = |response: reqwest::Response, status: StatusCode, code: Option<i64>| async move {
        assert_eq!(response.status(), status, "{response:?}");
        let body: Value = response.json().await.expect("a JSON-RPC error body");
        assert_eq!(body["jsonrpc"], "2.0", "{body}");
        assert!(body["error"]["message"].is_string(), "{body}");
        if let Some(code) = code {
            assert_eq!(body["error"]["code"], code, "{body}");
        }
    };

    // No sessionId.
    let r = post(format!("{base}/message"), "application/json", ping.clone()).await;
    check(r, StatusCode::BAD_REQUEST, None).await;
    // An unknown session.
    let r = post(
        format!("{base}/message?sessionId=nope"),
        "application/json",
        ping.clone(),
    )
    .await;
    check(r, StatusCode::NOT_FOUND, None).await;
    // Malformed JSON.
    let r = post(
        session.post_url.clone(),
        "application/json",
        "{not json".into(),
    )
    .await;
    check(r, StatusCode::BAD_REQUEST, Some(-32700)).await;
    // The wrong content type.
    let r = post(session.post_url.clone(), "text/plain", ping.clone()).await;
    check(r, StatusCode::UNSUPPORTED_MEDIA_TYPE, None).await;
    // Too large.
    let big =
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x".repeat(4096)}});
    let r = post(
        session.post_url.clone(),
        "application/json",
        big.to_string(),
    )
    .await;
    check(r, StatusCode::PAYLOAD_TOO_LARGE, None).await;
    // A foreign Origin, on both paths.
    let r = within(
        "POST with a bad Origin",
        http.post(&session.post_url)
            .header(CONTENT_TYPE, "application/json")
            .header(ORIGIN, "http://evil.example")
            .body(ping.clone())
            .send(),
    )
    .await
    .expect("POST");
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = within(
        "GET with a bad Origin",
        http.get(format!("{base}/sse"))
            .header(ORIGIN, "http://evil.example")
            .send(),
    )
    .await
    .expect("GET");
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(server.endpoint.legacy_sse_session_count(), 1);

    // The session is unharmed.
    let echoed = session
        .request(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "still here"}}),
        )
        .await;
    assert_eq!(echoed["result"]["content"][0]["text"], "still here");
}

#[tokio::test]
async fn the_session_cap_applies() {
    let server = TestServer::start(|c| c.max_sessions(1)).await;
    let first = Legacy::open(&server).await;
    let r = within(
        "a second GET /sse",
        server
            .http
            .get(format!("http://127.0.0.1:{}/sse", server.port))
            .send(),
    )
    .await
    .expect("GET");
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    drop(first);
    settles("the first session to be freed", 0, || {
        server.endpoint.legacy_sse_session_count()
    })
    .await;
    let _again = Legacy::open(&server).await;
}

#[tokio::test]
async fn concurrent_sessions_each_get_their_own_messages() {
    let server = TestServer::start(|c| c).await;
    let sessions = (0..8).map(|n| {
        let server = &server;
        async move {
            let mut session = Legacy::open(server).await;
            session.initialize(json!({})).await;
            for round in 0..5 {
                let text = format!("session {n} round {round}");
                let echoed = session
                    .request(
                        round + 1,
                        "tools/call",
                        json!({"name": "echo", "arguments": {"text": text}}),
                    )
                    .await;
                assert_eq!(echoed["result"]["content"][0]["text"], text, "{echoed}");
            }
            session.id.clone()
        }
    });
    let ids = futures::future::join_all(sessions).await;
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "session ids are distinct");
    settles("every session to be freed", 0, || {
        server.endpoint.legacy_sse_session_count()
    })
    .await;
}

#[tokio::test]
async fn legacy_sse_can_be_turned_off() {
    let server = TestServer::start(|c| c.without_legacy_sse()).await;
    let r = within(
        "GET /sse",
        server
            .http
            .get(format!("http://127.0.0.1:{}/sse", server.port))
            .send(),
    )
    .await
    .expect("GET");
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn shutdown_ends_the_streams() {
    let mut server = TestServer::start(|c| c).await;
    let mut session = Legacy::open(&server).await;
    session.initialize(json!({})).await;
    server
        .shutdown(Duration::from_secs(5))
        .await
        .expect("serve() returns");
    let end = session
        .stream
        .next_within(Duration::from_secs(2))
        .await
        .expect("the stream ends at shutdown");
    assert_eq!(end, None);
    assert_eq!(session.stream.error, None, "a clean end");
    assert_eq!(server.endpoint.legacy_sse_session_count(), 0);
}
