//! The resource server in front of a real MCP endpoint on 127.0.0.1, with
//! a real JWKS endpoint and a real introspection endpoint standing in for
//! the authorization server.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use base64::Engine as _;
use futures::{SinkExt, StreamExt};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_auth::resource::{
    BearerAuthLayer, IntrospectionConfig, IntrospectionValidator, JwtConfig, JwtValidator,
    Principal, ResourceServerConfig, TokenValidator, protected_resource_router,
};
use mcp_server::{Context, HandlerError, NoArguments, Server, ToolDef};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);
const ISSUER: &str = "https://auth.test";
const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {WAIT:?}"))
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

/// An ES256 signing key and its public JWK.
struct SigningKey {
    kid: String,
    encoding: EncodingKey,
    jwk: Value,
}

impl SigningKey {
    fn generate(kid: &str) -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("key generation");
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("key pair");
        let point = pair.public_key().as_ref();
        assert_eq!(point.len(), 65, "uncompressed P-256 point");
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
            "x": b64(&point[1..33]), "y": b64(&point[33..65]),
        });
        SigningKey {
            kid: kid.to_owned(),
            encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
            jwk,
        }
    }

    fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }

    fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("at+jwt".into());
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("signing")
    }
}

/// A JWKS endpoint whose key set can be swapped; counts its fetches.
struct Jwks {
    url: String,
    keys: Arc<Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
}

async fn start_jwks(keys: Value) -> Jwks {
    let keys = Arc::new(Mutex::new(keys));
    let fetches = Arc::new(AtomicUsize::new(0));
    let (k, f) = (Arc::clone(&keys), Arc::clone(&fetches));
    let app = axum::Router::new().route(
        "/jwks.json",
        get(move || {
            let (k, f) = (Arc::clone(&k), Arc::clone(&f));
            async move {
                f.fetch_add(1, Ordering::SeqCst);
                json_response(StatusCode::OK, &k.lock().expect("lock"))
            }
        }),
    );
    let url = spawn(app).await;
    Jwks {
        url: format!("{url}/jwks.json"),
        keys,
        fetches,
    }
}

fn json_response(status: StatusCode, value: &Value) -> axum::response::Response {
    axum::response::IntoResponse::into_response((
        status,
        [("content-type", "application/json")],
        value.to_string(),
    ))
}

async fn spawn(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

/// A server with a tool that needs `files:write` and one that needs
/// nothing; both echo the caller's subject.
fn scoped_server() -> Server {
    fn whoami(ctx: &Context) -> String {
        let principal = ctx.extension::<Principal>();
        let subject = principal.and_then(|p| p.subject.clone());
        format!("subject={}", subject.unwrap_or_default())
    }
    Server::builder("scoped-test", "0.0.1")
        .tool(ToolDef::new(
            "whoami",
            "Names the caller",
            |_: NoArguments, ctx: Context| async move { Ok::<_, HandlerError>(whoami(&ctx)) },
        ))
        .tool(
            ToolDef::new(
                "write",
                "Writes files",
                |_: NoArguments, ctx: Context| async move { Ok::<_, HandlerError>(whoami(&ctx)) },
            )
            .required_scopes(["files:write"]),
        )
        .build()
}

/// The MCP endpoint behind the layer, with the metadata routes beside it.
struct Mcp {
    base: String,
    url: String,
    http: reqwest::Client,
}

async fn start_mcp(server: Server, make: impl FnOnce(&str) -> Arc<dyn TokenValidator>) -> Mcp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let base = format!("http://127.0.0.1:{port}");
    let resource = format!("{base}/mcp");
    let config = ResourceServerConfig::new(&resource, make(&resource))
        .authorization_server(ISSUER)
        .scopes_supported(["files:read", "files:write"])
        .resource_name("Test resource");
    let endpoint = mcp_http::McpEndpoint::new(
        Arc::new(server.clone()),
        server.session_config(),
        mcp_http::HttpConfig::loopback(port),
    );
    let app = endpoint
        .router()
        .layer(BearerAuthLayer::new(config.clone()))
        .merge(protected_resource_router(&config));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Mcp {
        base,
        url: resource,
        http: reqwest::Client::new(),
    }
}

fn jwt_validator(jwks_url: &str, resource: &str) -> Arc<dyn TokenValidator> {
    let config = JwtConfig::new(ISSUER, jwks_url, resource)
        .leeway(Duration::from_secs(5))
        .min_refetch_interval(Duration::from_millis(300));
    Arc::new(JwtValidator::new(config).expect("validator"))
}

fn claims(resource: &str, scope: &str) -> Value {
    json!({
        "iss": ISSUER, "aud": resource, "sub": "alice", "client_id": "test-client",
        "scope": scope, "iat": now(), "exp": now() + 600,
    })
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
}

impl Reply {
    fn challenge(&self) -> &str {
        self.headers
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

impl Mcp {
    fn post(&self, token: Option<&str>) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request
    }

    async fn send(&self, request: reqwest::RequestBuilder, body: &Value) -> Reply {
        let response = within("POST", request.json(body).send())
            .await
            .expect("response");
        let status = response.status();
        let headers = response.headers().clone();
        let text = within("body", response.text()).await.expect("body");
        let body = if text.trim_start().starts_with('{') {
            serde_json::from_str(&text).expect("JSON body")
        } else {
            // An SSE stream: the last data line is the response.
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .rfind(|d| !d.trim().is_empty())
                .map(|d| serde_json::from_str(d.trim()).expect("JSON event"))
                .unwrap_or(Value::Null)
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    /// A stateless 2026-07-28 request.
    async fn modern(&self, token: Option<&str>, method: &str, mut params: Value) -> Reply {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "auth-tests", "version": "1.0.0"},
        });
        let mut request = self
            .post(token)
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", method);
        if let Some(name) = params["name"].as_str() {
            request = request.header("mcp-name", name);
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.send(request, &body).await
    }

    /// Starts a legacy session; returns its id.
    async fn initialize(&self, token: &str) -> String {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "auth-tests", "version": "1.0.0"},
        }});
        let reply = self.send(self.post(Some(token)), &body).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        let id = reply
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("session id")
            .to_owned();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let reply = self.send(self.legacy(token, &id), &note).await;
        assert_eq!(reply.status, StatusCode::ACCEPTED);
        id
    }

    fn legacy(&self, token: &str, session: &str) -> reqwest::RequestBuilder {
        self.post(Some(token))
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", LEGACY)
    }
}

fn tool_text(reply: &Reply) -> String {
    reply.body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no tool text in {:?}", reply.body))
        .to_owned()
}

#[tokio::test]
async fn requests_without_a_valid_token_are_challenged() {
    let key = SigningKey::generate("k1");
    let jwks = start_jwks(json!({"keys": [key.jwk]})).await;
    let mcp = start_mcp(mcp_builtin::everything::server(), |r| {
        jwt_validator(&jwks.url, r)
    })
    .await;
    let metadata = format!("{}/.well-known/oauth-protected-resource/mcp", mcp.base);

    // No token.
    let reply = mcp.modern(None, "tools/list", json!({})).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        reply.challenge(),
        format!("Bearer resource_metadata=\"{metadata}\", scope=\"files:read files:write\"")
    );
    assert_eq!(reply.body["error"], "unauthorized");

    // A token in the query string is never accepted, even a valid one.
    let token = key.sign(&claims(&mcp.url, "files:read"));
    let request = mcp
        .http
        .post(format!("{}?access_token={token}", mcp.url))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    let reply = mcp
        .send(
            request,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(reply.challenge().contains("error=\"invalid_request\""));

    // The legacy SSE stream and the WebSocket upgrade need a token too.
    let response = within(
        "GET /sse",
        mcp.http
            .get(format!("{}/sse", mcp.base))
            .header("accept", "text/event-stream")
            .send(),
    )
    .await
    .expect("response");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let ws_url = format!("{}/ws", mcp.base.replace("http://", "ws://"));
    let request = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
        ws_url.as_str(),
    )
    .expect("ws request");
    match within("ws", tokio_tungstenite::connect_async(request)).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
            assert!(response.headers().contains_key("www-authenticate"));
        }
        other => panic!("WebSocket upgrade without a token: {:?}", other.map(|_| ())),
    }

    // Refused tokens: 401 invalid_token.
    let mut bad: Vec<(&str, String)> = Vec::new();
    let mut c = claims(&mcp.url, "files:read");
    c["exp"] = json!(now() - 120);
    bad.push(("expired", key.sign(&c)));
    let mut c = claims(&mcp.url, "files:read");
    c["nbf"] = json!(now() + 600);
    bad.push(("not yet valid", key.sign(&c)));
    let mut c = claims(&mcp.url, "files:read");
    c["iss"] = json!("https://evil.test");
    bad.push(("wrong issuer", key.sign(&c)));
    bad.push((
        "another resource",
        key.sign(&claims("https://other.test/mcp", "files:read")),
    ));
    let impostor = SigningKey::generate("k1");
    bad.push((
        "bad signature",
        impostor.sign(&claims(&mcp.url, "files:read")),
    ));
    let payload = b64(claims(&mcp.url, "files:read").to_string().as_bytes());
    bad.push((
        "alg none",
        format!(
            "{}.{payload}.",
            b64(br#"{"alg":"none","typ":"JWT","kid":"k1"}"#)
        ),
    ));
    let mut hs = Header::new(Algorithm::HS256);
    hs.kid = Some("k1".into());
    let hs_token = jsonwebtoken::encode(
        &hs,
        &claims(&mcp.url, "files:read"),
        &EncodingKey::from_secret(b"a shared secret"),
    )
    .expect("HS256");
    bad.push(("HS256", hs_token));
    bad.push(("garbage", "not-a-jwt".to_owned()));
    for (what, token) in bad {
        let reply = mcp.modern(Some(&token), "tools/list", json!({})).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{what}");
        let challenge = reply.challenge();
        assert!(
            challenge.starts_with(&format!("Bearer resource_metadata=\"{metadata}\"")),
            "{what}: {challenge}"
        );
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{what}: {challenge}"
        );
        assert!(
            challenge.contains("error_description=\""),
            "{what}: {challenge}"
        );
        assert_eq!(reply.body["error"], "invalid_token", "{what}");
    }
}

#[tokio::test]
async fn valid_tokens_reach_both_eras_and_keys_rotate() {
    let k1 = SigningKey::generate("k1");
    let jwks = start_jwks(json!({"keys": [k1.jwk]})).await;
    let mcp = start_mcp(mcp_builtin::everything::server(), |r| {
        jwt_validator(&jwks.url, r)
    })
    .await;
    let token = k1.sign(&claims(&mcp.url, "files:read"));

    // Modern stateless request.
    let reply = mcp.modern(Some(&token), "tools/list", json!({})).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert!(
        reply.body["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );

    // Legacy session: every POST carries the token.
    let session = mcp.initialize(&token).await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let reply = mcp.send(mcp.legacy(&token, &session), &list).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.body["result"]["tools"].is_array(), "{:?}", reply.body);
    let reply = mcp
        .send(mcp.post(None).header("mcp-session-id", &session), &list)
        .await;
    assert_eq!(
        reply.status,
        StatusCode::UNAUTHORIZED,
        "a session id is no credential"
    );
    assert_eq!(jwks.fetches.load(Ordering::SeqCst), 1, "keys are cached");

    // The authorization server rotates to a new key: an unknown kid fetches
    // the key set again.
    tokio::time::sleep(Duration::from_millis(350)).await;
    let k2 = SigningKey::generate("k2");
    *jwks.keys.lock().expect("lock") = json!({"keys": [k2.jwk]});
    let token2 = k2.sign(&claims(&mcp.url, "files:read"));
    let reply = mcp.modern(Some(&token2), "tools/list", json!({})).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(jwks.fetches.load(Ordering::SeqCst), 2);

    // Unknown kids re-fetch at most once per interval.
    let stranger = SigningKey::generate("k9");
    let token9 = stranger.sign(&claims(&mcp.url, "files:read"));
    for _ in 0..3 {
        let reply = mcp.modern(Some(&token9), "tools/list", json!({})).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    }
    assert!(
        jwks.fetches.load(Ordering::SeqCst) <= 3,
        "refetches are rate-limited"
    );
}

/// A legacy session, its stream and a 2026-07-28 task belong to the user
/// whose token made them: another user's valid token gets 404 (POST, GET,
/// DELETE, the HTTP+SSE message path) or "task not found", as if they did
/// not exist, and the owner goes on using them.
#[tokio::test]
async fn sessions_and_tasks_belong_to_their_principal() {
    let key = SigningKey::generate("k1");
    let jwks = start_jwks(json!({"keys": [key.jwk]})).await;
    let mcp = start_mcp(mcp_builtin::everything::server(), |r| {
        jwt_validator(&jwks.url, r)
    })
    .await;
    let alice = key.sign(&claims(&mcp.url, "files:read"));
    let mut bobs = claims(&mcp.url, "files:read");
    bobs["sub"] = json!("bob");
    let bob = key.sign(&bobs);

    // Streamable HTTP: alice's session is not there for bob.
    let session = mcp.initialize(&alice).await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let reply = mcp.send(mcp.legacy(&bob, &session), &list).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{:?}", reply.body);
    let stream = mcp
        .http
        .get(&mcp.url)
        .bearer_auth(&bob)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session);
    let response = within("GET", stream.send()).await.expect("GET");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let delete = mcp
        .http
        .delete(&mcp.url)
        .bearer_auth(&bob)
        .header("mcp-session-id", &session);
    let response = within("DELETE", delete.send()).await.expect("DELETE");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let reply = mcp.send(mcp.legacy(&alice, &session), &list).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let delete = mcp
        .http
        .delete(&mcp.url)
        .bearer_auth(&alice)
        .header("mcp-session-id", &session);
    let response = within("DELETE", delete.send()).await.expect("DELETE");
    assert_eq!(response.status(), StatusCode::NO_CONTENT);

    // HTTP+SSE: the message path of alice's stream is not there for bob.
    let sse = mcp
        .http
        .get(format!("{}/sse", mcp.base))
        .bearer_auth(&alice)
        .header("accept", "text/event-stream");
    let mut events = within("GET /sse", sse.send()).await.expect("GET /sse");
    assert_eq!(events.status(), StatusCode::OK);
    let mut seen = String::new();
    let path = loop {
        let chunk = within("the endpoint event", events.chunk())
            .await
            .expect("a chunk")
            .expect("the stream goes on");
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(line) = seen
            .lines()
            .find(|l| l.starts_with("data:") && l.contains("sessionId="))
        {
            break line["data:".len()..].trim().to_owned();
        }
    };
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    let message = format!("{}{path}", mcp.base);
    let as_bob = mcp.http.post(&message).bearer_auth(&bob).json(&ping);
    let response = within("POST", as_bob.send()).await.expect("POST");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let as_alice = mcp.http.post(&message).bearer_auth(&alice).json(&ping);
    let response = within("POST", as_alice.send()).await.expect("POST");
    assert_eq!(response.status(), StatusCode::ACCEPTED);

    // 2026-07-28: alice's task is not there for bob.
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "auth-tests", "version": "1.0.0"},
    });
    let call = |token: &str, id: i64, method: &str, params: Value| {
        let mut params = params;
        params["_meta"] = meta.clone();
        let mut request = mcp
            .post(Some(token))
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", method);
        if let Some(name) = params["name"].as_str().or(params["taskId"].as_str()) {
            request = request.header("mcp-name", name);
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        (request, body)
    };
    let (request, body) = call(
        &alice,
        4,
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 30}}),
    );
    let reply = mcp.send(request, &body).await;
    assert_eq!(
        reply.body["result"]["resultType"], "task",
        "{:?}",
        reply.body
    );
    let task = reply.body["result"]["taskId"].clone();
    let (request, body) = call(&bob, 5, "tasks/get", json!({"taskId": task}));
    let reply = mcp.send(request, &body).await;
    assert_eq!(reply.body["error"]["code"], -32602, "{:?}", reply.body);
    let (request, body) = call(&bob, 6, "tasks/cancel", json!({"taskId": task}));
    let reply = mcp.send(request, &body).await;
    assert_eq!(reply.body["error"]["code"], -32602, "{:?}", reply.body);
    let (request, body) = call(&alice, 7, "tasks/get", json!({"taskId": task}));
    let reply = mcp.send(request, &body).await;
    assert_eq!(
        reply.body["result"]["status"], "working",
        "{:?}",
        reply.body
    );
    let (request, body) = call(&alice, 8, "tasks/cancel", json!({"taskId": task}));
    let reply = mcp.send(request, &body).await;
    assert!(reply.body.get("result").is_some(), "{:?}", reply.body);
}

#[tokio::test]
async fn metadata_is_served_at_both_well_known_paths() {
    let key = SigningKey::generate("k1");
    let jwks = start_jwks(json!({"keys": [key.jwk]})).await;
    let mcp = start_mcp(mcp_builtin::everything::server(), |r| {
        jwt_validator(&jwks.url, r)
    })
    .await;
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let response = within("PRM", mcp.http.get(format!("{}{path}", mcp.base)).send())
            .await
            .expect("response");
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let doc: Value = response.json().await.expect("JSON");
        assert_eq!(doc["resource"], mcp.url.as_str(), "{path}");
        assert_eq!(doc["authorization_servers"], json!([ISSUER]));
        assert_eq!(
            doc["scopes_supported"],
            json!(["files:read", "files:write"])
        );
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        assert_eq!(doc["resource_name"], "Test resource");
    }
}

#[tokio::test]
async fn scoped_tools_step_up_and_handlers_see_the_principal() {
    let key = SigningKey::generate("k1");
    let jwks = start_jwks(json!({"keys": [key.jwk]})).await;
    let mcp = start_mcp(scoped_server(), |r| jwt_validator(&jwks.url, r)).await;
    let reader = key.sign(&claims(&mcp.url, "files:read"));
    let writer = key.sign(&claims(&mcp.url, "files:read files:write"));
    let call = json!({"name": "write", "arguments": {}});

    // Modern: refused before dispatch with the step-up challenge.
    let reply = mcp.modern(Some(&reader), "tools/call", call.clone()).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{:?}", reply.body);
    let challenge = reply.challenge();
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"files:write\""), "{challenge}");
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            mcp.base
        )),
        "{challenge}"
    );
    assert_eq!(reply.body["error"], "insufficient_scope");

    // Tools without scopes are open to the same token.
    let reply = mcp
        .modern(
            Some(&reader),
            "tools/call",
            json!({"name": "whoami", "arguments": {}}),
        )
        .await;
    assert_eq!(tool_text(&reply), "subject=alice");

    // With enough scope the handler runs and sees the principal.
    let reply = mcp.modern(Some(&writer), "tools/call", call.clone()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(tool_text(&reply), "subject=alice");

    // Legacy session: the token of each POST decides.
    let session = mcp.initialize(&reader).await;
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": call});
    let reply = mcp.send(mcp.legacy(&reader, &session), &body).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert!(reply.challenge().contains("scope=\"files:write\""));
    let reply = mcp.send(mcp.legacy(&writer, &session), &body).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(tool_text(&reply), "subject=alice");
}

#[tokio::test]
async fn websocket_connections_carry_the_upgrade_principal() {
    let key = SigningKey::generate("k1");
    let jwks = start_jwks(json!({"keys": [key.jwk]})).await;
    let mcp = start_mcp(scoped_server(), |r| jwt_validator(&jwks.url, r)).await;
    let token = key.sign(&claims(&mcp.url, "files:read"));
    let ws_url = format!("{}/ws", mcp.base.replace("http://", "ws://"));
    let mut request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
            ws_url.as_str(),
        )
        .expect("ws request");
    request.headers_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("header"),
    );
    request
        .headers_mut()
        .insert("sec-websocket-protocol", "mcp".parse().expect("header"));
    let (mut socket, _) = within("ws", tokio_tungstenite::connect_async(request))
        .await
        .expect("upgrade");
    let mut params = json!({"name": "whoami", "arguments": {}});
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "auth-tests", "version": "1.0.0"},
    });
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    within("ws send", socket.send(message.to_string().into()))
        .await
        .expect("send");
    let reply = loop {
        let frame = within("ws recv", socket.next())
            .await
            .expect("open")
            .expect("frame");
        if let tokio_tungstenite::tungstenite::Message::Text(text) = frame {
            let value: Value = serde_json::from_str(text.as_str()).expect("JSON");
            if value["id"] == 1 {
                break value;
            }
        }
    };
    assert_eq!(
        reply["result"]["content"][0]["text"], "subject=alice",
        "{reply}"
    );
    // A tool that needs more scope than the connection's token has is
    // refused message by message; the connection stays usable.
    let mut refused = message.clone();
    refused["id"] = json!(2);
    refused["params"]["name"] = json!("write");
    within("ws send", socket.send(refused.to_string().into()))
        .await
        .expect("send");
    let reply = loop {
        let frame = within("ws recv", socket.next())
            .await
            .expect("open")
            .expect("frame");
        if let tokio_tungstenite::tungstenite::Message::Text(text) = frame {
            let value: Value = serde_json::from_str(text.as_str()).expect("JSON");
            if value["id"] == 2 {
                break value;
            }
        }
    };
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert_eq!(
        reply["error"]["data"]["requiredScopes"],
        json!(["files:write"]),
        "{reply}"
    );
}

/// An introspection endpoint that knows three tokens; counts its calls.
async fn start_introspection(resource: Arc<Mutex<String>>) -> (String, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let app = axum::Router::new().route(
        "/introspect",
        post(move |headers: HeaderMap, body: String| {
            let c = Arc::clone(&c);
            let resource = resource.lock().expect("lock").clone();
            async move {
                c.fetch_add(1, Ordering::SeqCst);
                let expected = format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode("rs-client:rs+secret")
                );
                if headers.get("authorization").and_then(|v| v.to_str().ok())
                    != Some(expected.as_str())
                {
                    return json_response(StatusCode::UNAUTHORIZED, &json!({"error": "invalid_client"}));
                }
                let token = url::form_urlencoded::parse(body.as_bytes())
                    .find(|(k, _)| k == "token")
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_default();
                let answer = match token.as_str() {
                    "good" => json!({
                        "active": true, "sub": "bob", "client_id": "c1", "scope": "files:read files:write",
                        "aud": resource, "iss": ISSUER, "exp": now() + 600,
                    }),
                    "elsewhere" => json!({
                        "active": true, "sub": "bob", "aud": "https://other.test/mcp", "exp": now() + 600,
                    }),
                    _ => json!({"active": false}),
                };
                json_response(StatusCode::OK, &answer)
            }
        }),
    );
    let url = spawn(app).await;
    (format!("{url}/introspect"), calls)
}

#[tokio::test]
async fn introspected_tokens_are_checked_and_cached() {
    let resource = Arc::new(Mutex::new(String::new()));
    let (endpoint, calls) = start_introspection(Arc::clone(&resource)).await;
    let mcp = start_mcp(scoped_server(), |r| {
        *resource.lock().expect("lock") = r.to_owned();
        let config = IntrospectionConfig::new(&endpoint, "rs-client", "rs secret", r)
            .issuer(ISSUER)
            .negative_cache_ttl(Duration::from_secs(30));
        Arc::new(IntrospectionValidator::new(config).expect("validator"))
    })
    .await;
    let whoami = json!({"name": "write", "arguments": {}});
    for _ in 0..3 {
        let reply = mcp.modern(Some("good"), "tools/call", whoami.clone()).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        assert_eq!(tool_text(&reply), "subject=bob");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1, "active results are cached");
    for _ in 0..3 {
        let reply = mcp.modern(Some("revoked"), "tools/list", json!({})).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
        assert!(reply.challenge().contains("error=\"invalid_token\""));
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "inactive results are cached"
    );
    let reply = mcp.modern(Some("elsewhere"), "tools/list", json!({})).await;
    assert_eq!(
        reply.status,
        StatusCode::UNAUTHORIZED,
        "a token for another resource"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

/// The server's other endpoints (HTTP+SSE, WebSocket) are protected
/// resources of their own: their refusals name their own metadata, which
/// names them, and a token for one is taken at every endpoint.
#[tokio::test]
async fn other_endpoints_name_their_own_metadata() {
    let key = SigningKey::generate("k1");
    let jwks = start_jwks(json!({"keys": [key.jwk]})).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let base = format!("http://127.0.0.1:{port}");
    let (resource, sse, ws) = (
        format!("{base}/mcp"),
        format!("{base}/sse"),
        format!("{base}/ws"),
    );
    let jwt = JwtConfig::new(ISSUER, &jwks.url, &resource)
        .other_audience(&sse)
        .other_audience(&ws);
    let validator = Arc::new(JwtValidator::new(jwt).expect("validator"));
    let config = ResourceServerConfig::new(&resource, validator)
        .authorization_server(ISSUER)
        .endpoint(&sse)
        .endpoint(&ws);
    let server = mcp_builtin::everything::server();
    let endpoint = mcp_http::McpEndpoint::new(
        Arc::new(server.clone()),
        server.session_config(),
        mcp_http::HttpConfig::loopback(port),
    );
    let app = endpoint
        .router()
        .layer(BearerAuthLayer::new(config.clone()))
        .merge(protected_resource_router(&config));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let mcp = Mcp {
        base: base.clone(),
        url: resource.clone(),
        http: reqwest::Client::new(),
    };
    for (path, named) in [("/mcp", &resource), ("/sse", &sse), ("/ws", &ws)] {
        let refused = mcp
            .http
            .get(format!("{base}{path}"))
            .send()
            .await
            .expect("response");
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED, "{path}");
        let challenge = refused.headers()["www-authenticate"].to_str().unwrap();
        let metadata = format!("{base}/.well-known/oauth-protected-resource{path}");
        assert!(
            challenge.contains(&format!("resource_metadata=\"{metadata}\"")),
            "{path}: {challenge}"
        );
        let doc: Value = mcp
            .http
            .get(&metadata)
            .send()
            .await
            .expect("metadata")
            .json()
            .await
            .expect("JSON");
        assert_eq!(doc["resource"], named.as_str(), "{path}");
        assert_eq!(doc["authorization_servers"], json!([ISSUER]));
    }
    let for_sse = key.sign(&claims(&sse, "files:read"));
    let reply = mcp.modern(Some(&for_sse), "tools/list", json!({})).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let elsewhere = key.sign(&claims("http://elsewhere.example/mcp", "files:read"));
    let reply = mcp.modern(Some(&elsewhere), "tools/list", json!({})).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
}
