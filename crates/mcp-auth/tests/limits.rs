//! The authorization server under hostile load, over real sockets: rate
//! limits per client address (a second loopback address, 127.0.0.2, is a
//! second client) and per user name, the sweep of unused registrations,
//! and the cap on registered clients.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp_auth::server::{
    AuthServerConfig, AuthServerConfigBuilder, AuthorizationServer, RateLimit, RateLimits,
    UserAccount,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const REDIRECT: &str = "http://127.0.0.1:9999/callback";

struct Running {
    base: String,
    server: AuthorizationServer,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn config(issuer: &str) -> AuthServerConfigBuilder {
    AuthServerConfig::builder(issuer)
        .user(UserAccount::with_password("alice", "wonderland").expect("hash"))
        .user(UserAccount::with_password("bob", "builder").expect("hash"))
}

/// The server behind an MCP endpoint, served as `mcp serve --oauth` serves
/// it: by `mcp_http::serve_with`, which gives each request its client's
/// address.
async fn start_with_endpoint(
    configure: impl FnOnce(AuthServerConfigBuilder) -> AuthServerConfigBuilder,
) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let base = format!("http://127.0.0.1:{port}");
    let server = AuthorizationServer::new(configure(config(&base)).build().expect("config"))
        .expect("server");
    let mcp = mcp_server::Server::builder("limits-test", "0.0.1").build();
    let endpoint = mcp_http::McpEndpoint::new(
        Arc::new(mcp.clone()),
        mcp.session_config(),
        mcp_http::HttpConfig::loopback(port),
    );
    let router = server.router();
    let task = tokio::spawn(async move {
        let _ = mcp_http::serve_with(
            listener,
            endpoint,
            move |app| app.merge(router),
            std::future::pending(),
        )
        .await;
    });
    Running { base, server, task }
}

/// The server alone, on axum with connect info.
async fn start(
    configure: impl FnOnce(AuthServerConfigBuilder) -> AuthServerConfigBuilder,
) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let server = AuthorizationServer::new(configure(config(&base)).build().expect("config"))
        .expect("server");
    let app = server
        .router()
        .into_make_service_with_connect_info::<SocketAddr>();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Running { base, server, task }
}

/// A client whose connections come from `from`.
fn http_from(from: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .local_address(from.parse::<IpAddr>().expect("address"))
        .build()
        .expect("client")
}

async fn register(c: &reqwest::Client, base: &str) -> (u16, Option<u64>, Value) {
    let resp = c
        .post(format!("{base}/register"))
        .json(&json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}))
        .send()
        .await
        .expect("register");
    let status = resp.status().as_u16();
    let retry_after = retry_after(&resp);
    (status, retry_after, resp.json().await.expect("json"))
}

fn retry_after(resp: &reqwest::Response) -> Option<u64> {
    resp.headers()
        .get("retry-after")
        .map(|v| v.to_str().expect("ascii").parse().expect("seconds"))
}

fn authorize_url(base: &str, client_id: &str) -> String {
    let verifier = URL_SAFE_NO_PAD.encode([7u8; 32]);
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let mut url = url::Url::parse(&format!("{base}/authorize")).expect("url");
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", REDIRECT)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256");
    url.to_string()
}

fn hidden(html: &str, name: &str) -> String {
    let needle = format!("name=\"{name}\" value=\"");
    let start = html.find(&needle).expect("hidden field") + needle.len();
    let end = html[start..].find('"').expect("end of value") + start;
    html[start..end].to_owned()
}

#[tokio::test]
async fn a_registration_flood_is_refused_per_address() {
    let limits = RateLimits::default().registration(Some(RateLimit::per_minute(1).burst(3)));
    let s = start_with_endpoint(|b| b.rate_limits(limits)).await;
    let first = http_from("127.0.0.1");
    for _ in 0..3 {
        let (status, _, body) = register(&first, &s.base).await;
        assert_eq!(status, 201, "{body}");
    }
    for _ in 0..5 {
        let (status, retry, body) = register(&first, &s.base).await;
        assert_eq!(status, 429, "{body}");
        assert_eq!(body["error"], "slow_down");
        let retry = retry.expect("Retry-After");
        assert!((1..=60).contains(&retry), "Retry-After {retry}");
    }
    // Another address still registers.
    let second = http_from("127.0.0.2");
    let (status, _, body) = register(&second, &s.base).await;
    assert_eq!(status, 201, "{body}");
    assert!(body["client_id"].is_string());
    // The metadata is not limited.
    let meta = first
        .get(format!("{}/.well-known/oauth-authorization-server", s.base))
        .send()
        .await
        .expect("metadata");
    assert_eq!(meta.status(), 200);
}

#[tokio::test]
async fn every_limited_endpoint_answers_429_with_retry_after() {
    let limits = RateLimits::default()
        .authorize(Some(RateLimit::per_minute(2)))
        .token(Some(RateLimit::per_minute(2)))
        .login(Some(RateLimit::per_minute(2)));
    let s = start(|b| b.rate_limits(limits)).await;
    let c = http_from("127.0.0.1");
    let other = http_from("127.0.0.2");

    // GET /authorize without any credentials: refused by the checks, then
    // by the limit.
    for _ in 0..2 {
        let resp = c
            .get(authorize_url(&s.base, "nobody"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400);
    }
    let resp = c
        .get(authorize_url(&s.base, "nobody"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
    assert!(retry_after(&resp).is_some());
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "temporarily_unavailable");

    // The token endpoint.
    for _ in 0..2 {
        let resp = c.post(format!("{}/token", s.base)).send().await.unwrap();
        assert_eq!(resp.status(), 400);
    }
    let resp = c
        .post(format!("{}/token", s.base))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
    assert!(retry_after(&resp).is_some());
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "slow_down");

    // The login form gets a page.
    for _ in 0..2 {
        let resp = c
            .post(format!("{}/authorize", s.base))
            .form(&[("request_id", "x")])
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400);
    }
    let resp = c
        .post(format!("{}/authorize", s.base))
        .form(&[("request_id", "x")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
    assert!(retry_after(&resp).is_some());
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let page = resp.text().await.unwrap();
    assert!(page.contains("Too many sign-in attempts"), "{page}");

    // Each endpoint counts on its own, and per address.
    let resp = other
        .get(authorize_url(&s.base, "nobody"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
}

/// Opens the login form for a fresh registered client; (request id, csrf).
async fn login_form(c: &reqwest::Client, base: &str) -> (String, String) {
    let (status, _, reg) = register(c, base).await;
    assert_eq!(status, 201, "{reg}");
    let client_id = reg["client_id"].as_str().unwrap();
    let resp = c.get(authorize_url(base, client_id)).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let html = resp.text().await.unwrap();
    (hidden(&html, "request_id"), hidden(&html, "csrf_token"))
}

async fn sign_in(
    c: &reqwest::Client,
    base: &str,
    form: &(String, String),
    user: &str,
    password: &str,
) -> reqwest::Response {
    c.post(format!("{base}/authorize"))
        .form(&[
            ("request_id", form.0.as_str()),
            ("csrf_token", form.1.as_str()),
            ("username", user),
            ("password", password),
            ("action", "approve"),
        ])
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn failed_logins_lock_the_user_name_but_not_others() {
    let limits = RateLimits::default()
        .failed_logins_per_user(Some(RateLimit::new(3, Duration::from_secs(15 * 60))))
        .login(None);
    let s = start(|b| b.rate_limits(limits)).await;
    let c = http_from("127.0.0.1");
    let alice_form = login_form(&c, &s.base).await;
    for _ in 0..3 {
        let resp = sign_in(&c, &s.base, &alice_form, "alice", "guess").await;
        assert_eq!(resp.status(), 401);
    }
    // Used up: even the right password is refused, from any address.
    let elsewhere = http_from("127.0.0.2");
    let resp = sign_in(&elsewhere, &s.base, &alice_form, "alice", "wonderland").await;
    assert_eq!(resp.status(), 429);
    let retry = retry_after(&resp).expect("Retry-After");
    assert!((1..=300).contains(&retry), "Retry-After {retry}");
    let page = resp.text().await.unwrap();
    assert!(
        page.contains("Too many failed sign-ins for this user name"),
        "{page}"
    );
    // Bob is not affected.
    let bob_form = login_form(&c, &s.base).await;
    let resp = sign_in(&c, &s.base, &bob_form, "bob", "builder").await;
    assert_eq!(resp.status(), 303);
    let location = resp.headers()["location"].to_str().unwrap();
    assert!(location.contains("code="), "{location}");
    // And his success does not unlock alice.
    let resp = sign_in(&c, &s.base, &alice_form, "alice", "wonderland").await;
    assert_eq!(resp.status(), 429);
    // Unknown names are locked the same way (no telling who exists).
    let form = login_form(&c, &s.base).await;
    for _ in 0..3 {
        let resp = sign_in(&c, &s.base, &form, "mallory", "x").await;
        assert_eq!(resp.status(), 401);
    }
    let resp = sign_in(&c, &s.base, &form, "mallory", "x").await;
    assert_eq!(resp.status(), 429);
}

/// Approves an authorization for `client_id` (auto-approval): the client
/// is then used.
async fn use_client(c: &reqwest::Client, base: &str, client_id: &str) {
    let resp = c.get(authorize_url(base, client_id)).send().await.unwrap();
    assert_eq!(resp.status(), 302);
    let location = resp.headers()["location"].to_str().unwrap();
    assert!(location.contains("code="), "{location}");
}

async fn is_known(c: &reqwest::Client, base: &str, client_id: &str) -> bool {
    let resp = c.get(authorize_url(base, client_id)).send().await.unwrap();
    match resp.status().as_u16() {
        302 => true,
        400 => {
            let page = resp.text().await.unwrap();
            assert!(page.contains("Unknown client."), "{page}");
            false
        }
        other => panic!("unexpected status {other}"),
    }
}

#[tokio::test]
async fn unused_registrations_are_swept() {
    let s = start(|b| {
        b.unused_client_lifetime(Duration::ZERO)
            .auto_approve_as_user_for_testing("alice")
    })
    .await;
    let c = http_from("127.0.0.1");
    let (_, _, used) = register(&c, &s.base).await;
    let (_, _, unused) = register(&c, &s.base).await;
    let used = used["client_id"].as_str().unwrap().to_owned();
    let unused = unused["client_id"].as_str().unwrap().to_owned();
    use_client(&c, &s.base, &used).await;
    assert_eq!(s.server.sweep().expect("sweep"), 1);
    assert!(!is_known(&c, &s.base, &unused).await);
    assert!(is_known(&c, &s.base, &used).await);
    // Nothing more to sweep.
    assert_eq!(s.server.sweep().expect("sweep"), 0);
}

#[tokio::test]
async fn the_store_cap_evicts_unused_clients_then_refuses() {
    let s = start(|b| {
        b.max_clients(2)
            .unused_client_lifetime(Duration::ZERO)
            .auto_approve_as_user_for_testing("alice")
    })
    .await;
    let c = http_from("127.0.0.1");
    let id = |v: &Value| v["client_id"].as_str().unwrap().to_owned();
    let (status, _, a) = register(&c, &s.base).await;
    assert_eq!(status, 201);
    use_client(&c, &s.base, &id(&a)).await;
    let (status, _, b) = register(&c, &s.base).await;
    assert_eq!(status, 201);
    // Full: the unused one past its lifetime makes room.
    let (status, _, cc) = register(&c, &s.base).await;
    assert_eq!(status, 201, "{cc}");
    assert!(!is_known(&c, &s.base, &id(&b)).await);
    use_client(&c, &s.base, &id(&cc)).await;
    // Full of used clients: refused.
    let (status, _, body) = register(&c, &s.base).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"], "temporarily_unavailable");
    assert!(is_known(&c, &s.base, &id(&a)).await);
}

#[tokio::test]
async fn the_cap_keeps_unused_clients_within_their_lifetime() {
    let s = start(|b| b.max_clients(2)).await;
    let c = http_from("127.0.0.1");
    for _ in 0..2 {
        assert_eq!(register(&c, &s.base).await.0, 201);
    }
    let (status, _, body) = register(&c, &s.base).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"], "temporarily_unavailable");
    assert_eq!(s.server.sweep().expect("sweep"), 0);
}
