//! MCP over WebSocket on a real socket: our client transport and a
//! client-role engine against the server endpoint (legacy handshake,
//! tools, a 2026-07-28 request with `_meta`, a server->client request),
//! and raw connections for what a misbehaving client does: a foreign
//! Origin, the wrong subprotocol, binary and oversized frames.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use futures::{SinkExt, StreamExt};
use mcp_core::{
    BoxFuture, ClientIdentity, HandlerResult, IncomingRequest, Negotiated, Peer, RequestContext,
    RequestOptions, Role, Service, SessionConfig,
};
use mcp_http::ws::{self, WsError, WsOptions};
use mcp_schema::jsonrpc::{self, Notification};
use mcp_schema::{
    ClientCapabilities, ErrorObject, Implementation, InitializeResult, ProtocolVersion,
};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};

/// A client that answers sampling requests with a fixed text.
struct Sampler;

impl Service for Sampler {
    fn handle_request(
        &self,
        request: IncomingRequest,
        _: RequestContext,
    ) -> BoxFuture<'static, HandlerResult> {
        Box::pin(async move {
            match request.method.as_str() {
                "sampling/createMessage" => jsonrpc::to_raw(&json!({
                    "role": "assistant",
                    "content": {"type": "text", "text": "sampled over ws"},
                    "model": "test-model"
                }))
                .map_err(ErrorObject::internal),
                other => Err(ErrorObject::method_not_found(other)),
            }
        })
    }

    fn handle_notification(&self, _: Notification, _: Peer) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

fn ws_url(server: &TestServer) -> String {
    format!("ws://127.0.0.1:{}/ws", server.port)
}

fn client_config() -> (ClientIdentity, SessionConfig) {
    let capabilities: ClientCapabilities =
        serde_json::from_value(json!({"sampling": {}})).expect("capabilities");
    let identity = ClientIdentity::new(Implementation::new("ws-tests", "1.0.0"), capabilities);
    let config = SessionConfig::new(Role::Client(Arc::new(identity.clone())));
    (identity, config)
}

/// A client-role engine over a WebSocket to `server`, not yet initialized.
async fn engine(server: &TestServer) -> (Peer, mcp_core::RunningSession) {
    let transport = within("connect", ws::connect(&ws_url(server), WsOptions::new()))
        .await
        .expect("WebSocket connect");
    let (_, config) = client_config();
    let running = mcp_core::serve(transport, Arc::new(Sampler), config);
    (running.peer().clone(), running)
}

/// The legacy handshake through the client's peer.
async fn initialize(peer: &Peer) {
    let (identity, _) = client_config();
    let init: InitializeResult = within(
        "initialize",
        peer.request(
            "initialize",
            &json!({"protocolVersion": "2025-11-25", "capabilities": {"sampling": {}},
                "clientInfo": {"name": "ws-tests", "version": "1.0.0"}}),
            RequestOptions::new(),
        ),
    )
    .await
    .expect("initialize");
    assert_eq!(init.protocol_version, "2025-11-25");
    peer.set_negotiated(Negotiated::from_initialize(
        ProtocolVersion::V2025_11_25,
        &identity,
        &init,
    ));
    peer.notify("notifications/initialized", &json!({}))
        .await
        .expect("initialized");
}

async fn call(peer: &Peer, method: &str, params: Value) -> Value {
    within(method, peer.request(method, &params, RequestOptions::new()))
        .await
        .unwrap_or_else(|e| panic!("{method}: {e}"))
}

async fn settles(what: &str, expected: usize, count: impl Fn() -> usize) {
    within(what, async {
        while count() != expected {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}

#[tokio::test]
async fn a_client_engine_over_websocket() {
    let server = TestServer::start(|c| c).await;
    let (peer, running) = engine(&server).await;
    initialize(&peer).await;
    assert_eq!(server.endpoint.websocket_session_count(), 1);

    let tools = call(&peer, "tools/list", json!({})).await;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"echo"), "{names:?}");

    let echoed = call(
        &peer,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "over ws"}}),
    )
    .await;
    assert_eq!(echoed["content"][0]["text"], "over ws", "{echoed}");

    // The server asks the client's LLM; our Sampler answers.
    let sampled = call(
        &peer,
        "tools/call",
        json!({"name": "test_sampling", "arguments": {"prompt": "hi"}}),
    )
    .await;
    let text = sampled["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("sampled over ws"), "{sampled}");

    // Closing the client ends the server's session.
    peer.close();
    within("the client session to end", running.wait()).await;
    settles("the server session to end", 0, || {
        server.endpoint.websocket_session_count()
    })
    .await;
}

#[tokio::test]
async fn a_modern_request_with_meta() {
    let server = TestServer::start(|c| c).await;
    let (peer, _running) = engine(&server).await;
    let result = call(
        &peer,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "stateless"},
            "_meta": modern_meta(json!({}))}),
    )
    .await;
    assert_eq!(result["content"][0]["text"], "stateless", "{result}");
    assert_eq!(result["resultType"], "complete", "{result}");
    let discover = call(
        &peer,
        "server/discover",
        json!({"_meta": modern_meta(json!({}))}),
    )
    .await;
    assert!(discover["supportedVersions"].is_array(), "{discover}");
}

#[tokio::test]
async fn many_concurrent_connections() {
    let server = TestServer::start(|c| c).await;
    let clients = (0..24).map(|n| {
        let server = &server;
        async move {
            let (peer, running) = engine(server).await;
            initialize(&peer).await;
            for round in 0..5 {
                let text = format!("client {n} round {round}");
                let echoed = call(
                    &peer,
                    "tools/call",
                    json!({"name": "echo", "arguments": {"text": text}}),
                )
                .await;
                assert_eq!(echoed["content"][0]["text"], text);
            }
            peer.close();
            within("client end", running.wait()).await;
        }
    });
    futures::future::join_all(clients).await;
    settles("every server session to end", 0, || {
        server.endpoint.websocket_session_count()
    })
    .await;
}

#[tokio::test]
async fn a_foreign_origin_is_refused() {
    let server = TestServer::start(|c| c).await;
    let refused = within(
        "connect",
        ws::connect(
            &ws_url(&server),
            WsOptions::new().header("origin", "http://evil.example"),
        ),
    )
    .await;
    match refused {
        Err(WsError::Refused { status, .. }) => assert_eq!(status, 403),
        other => panic!("expected a 403 refusal, got {other:?}"),
    }
    let allowed = within(
        "connect",
        ws::connect(
            &ws_url(&server),
            WsOptions::new().header("origin", format!("http://localhost:{}", server.port)),
        ),
    )
    .await;
    assert!(allowed.is_ok(), "{allowed:?}");
}

/// A raw WebSocket connection offering `protocol`.
async fn raw(
    server: &TestServer,
    protocol: Option<&str>,
) -> Result<tokio_tungstenite::WebSocketStream<TcpStream>, tungstenite::Error> {
    let mut request = ws_url(server).into_client_request()?;
    if let Some(protocol) = protocol {
        request.headers_mut().insert(
            "sec-websocket-protocol",
            protocol.parse().expect("header value"),
        );
    }
    let tcp = TcpStream::connect(("127.0.0.1", server.port)).await?;
    within("handshake", tokio_tungstenite::client_async(request, tcp))
        .await
        .map(|(socket, _)| socket)
}

/// The close code that ends `socket`, reading past anything else.
async fn close_code(socket: &mut tokio_tungstenite::WebSocketStream<TcpStream>) -> Option<u16> {
    within("the close frame", async {
        while let Some(message) = socket.next().await {
            match message {
                Ok(Message::Close(frame)) => return frame.map(|f| u16::from(f.code)),
                Ok(_) => continue,
                Err(_) => return None,
            }
        }
        None
    })
    .await
}

#[tokio::test]
async fn subprotocols_pings_and_bad_frames() {
    let server = TestServer::start(|c| c.max_body_bytes(4096)).await;

    // Only other subprotocols: refused.
    match raw(&server, Some("graphql-ws")).await {
        Err(tungstenite::Error::Http(response)) => assert_eq!(response.status(), 400),
        other => panic!("expected 400, got {:?}", other.map(|_| ())),
    }

    // No subprotocol at all: accepted; a ping gets a pong, a message an answer.
    let mut plain = raw(&server, None).await.expect("plain connect");
    plain
        .send(Message::Ping(b"are you there".to_vec().into()))
        .await
        .expect("ping");
    let pong = within("pong", plain.next()).await;
    assert!(
        matches!(&pong, Some(Ok(Message::Pong(data))) if &data[..] == b"are you there"),
        "{pong:?}"
    );
    plain
        .send(Message::text(
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string(),
        ))
        .await
        .expect("send");
    let answer = within("answer", plain.next()).await;
    let Some(Ok(Message::Text(text))) = answer else {
        panic!("{answer:?}")
    };
    let answer: Value = serde_json::from_str(text.as_str()).expect("JSON");
    assert_eq!(answer["id"], 1, "{answer}");

    // A binary frame closes with 1003.
    let mut binary = raw(&server, Some("mcp")).await.expect("mcp connect");
    binary
        .send(Message::Binary(b"{}".to_vec().into()))
        .await
        .expect("send");
    assert_eq!(close_code(&mut binary).await, Some(1003));

    // A message over the body limit closes with 1009.
    let mut big = raw(&server, Some("mcp")).await.expect("mcp connect");
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "ping",
        "params": {"pad": "x".repeat(8192)}});
    let _ = big.send(Message::text(body.to_string())).await;
    assert_eq!(close_code(&mut big).await, Some(1009));

    // Malformed JSON is answered with a parse error; the connection stays.
    plain.send(Message::text("{not json")).await.expect("send");
    let answer = within("parse error", plain.next()).await;
    let Some(Ok(Message::Text(text))) = answer else {
        panic!("{answer:?}")
    };
    let answer: Value = serde_json::from_str(text.as_str()).expect("JSON");
    assert_eq!(answer["error"]["code"], -32700, "{answer}");

    drop(plain);
    drop(binary);
    drop(big);
    settles("every session to end", 0, || {
        server.endpoint.websocket_session_count()
    })
    .await;
}

#[tokio::test]
async fn websocket_can_be_turned_off() {
    let server = TestServer::start(|c| c.without_websocket()).await;
    match raw(&server, Some("mcp")).await {
        Err(tungstenite::Error::Http(response)) => assert_eq!(response.status(), 404),
        other => panic!("expected 404, got {:?}", other.map(|_| ())),
    }
}

#[tokio::test]
async fn the_session_cap_applies() {
    let server = TestServer::start(|c| c.max_sessions(1)).await;
    let (peer, running) = engine(&server).await;
    initialize(&peer).await;
    match within(
        "a second connection",
        ws::connect(&ws_url(&server), WsOptions::new()),
    )
    .await
    {
        Err(WsError::Refused { status, .. }) => assert_eq!(status, 503),
        other => panic!("expected 503, got {other:?}"),
    }
    peer.close();
    within("the first session to end", running.wait()).await;
    settles("the server session to end", 0, || {
        server.endpoint.websocket_session_count()
    })
    .await;
    let (again, _running) = engine(&server).await;
    initialize(&again).await;
}
