//! The built-in authorization server over real sockets: metadata, the
//! authorization-code flow through the login form, token grants, client
//! authentication methods, registration, client ID metadata documents, key
//! rotation and restart persistence.

mod clients;
mod flows;
mod keys_and_state;

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use mcp_auth::server::{
    AuthServerConfig, AuthServerConfigBuilder, AuthorizationServer, ClientConfig,
    TokenEndpointAuthMethod, UserAccount,
};
use ring::signature::KeyPair;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const REDIRECT: &str = "http://127.0.0.1:9999/callback";
const RESOURCE: &str = "http://127.0.0.1:7777/mcp";

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

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client")
}

fn base_config(issuer: &str) -> AuthServerConfigBuilder {
    AuthServerConfig::builder(issuer)
        .resource(RESOURCE)
        .scopes_supported(["mcp", "mcp:write"])
        .user(UserAccount::with_password("alice", "wonderland").expect("hash"))
        .client(ClientConfig::public("public-app", vec![REDIRECT.into()]).client_name("Public App"))
        .client(ClientConfig::confidential(
            "basic-app",
            "basic-secret",
            TokenEndpointAuthMethod::ClientSecretBasic,
            vec![REDIRECT.into()],
        ))
        .client(ClientConfig::confidential(
            "post-app",
            "post-secret",
            TokenEndpointAuthMethod::ClientSecretPost,
            vec![REDIRECT.into()],
        ))
}

async fn start_with(
    configure: impl FnOnce(AuthServerConfigBuilder) -> AuthServerConfigBuilder,
) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let config = configure(base_config(&base)).build().expect("config");
    let server = AuthorizationServer::new(config).expect("server");
    let app = server.router();
    let task = tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await;
    });
    Running { base, server, task }
}

async fn start() -> Running {
    start_with(|b| b).await
}

fn pkce() -> (String, String) {
    let verifier = URL_SAFE_NO_PAD.encode(rand_bytes());
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

fn rand_bytes() -> [u8; 32] {
    let mut b = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b).expect("rng");
    b
}

fn query(url: &str) -> HashMap<String, String> {
    url::Url::parse(url)
        .expect("url")
        .query_pairs()
        .into_owned()
        .collect()
}

fn hidden(html: &str, name: &str) -> String {
    let needle = format!("name=\"{name}\" value=\"");
    let start = html.find(&needle).expect("hidden field") + needle.len();
    let end = html[start..].find('"').expect("end of value") + start;
    html[start..end].to_owned()
}

fn location(resp: &reqwest::Response) -> String {
    resp.headers()
        .get("location")
        .expect("location")
        .to_str()
        .expect("ascii")
        .to_owned()
}

fn authorize_url(base: &str, client_id: &str, challenge: &str, extra: &[(&str, &str)]) -> String {
    let mut url = url::Url::parse(&format!("{base}/authorize")).expect("url");
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", REDIRECT)
        .append_pair("code_challenge", challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", "xyz-state")
        .append_pair("scope", "mcp");
    for (k, v) in extra {
        url.query_pairs_mut().append_pair(k, v);
    }
    url.to_string()
}

/// Goes through the login and consent form; returns the redirect's query.
async fn login(
    c: &reqwest::Client,
    base: &str,
    client_id: &str,
    challenge: &str,
    extra: &[(&str, &str)],
) -> HashMap<String, String> {
    let page = c
        .get(authorize_url(base, client_id, challenge, extra))
        .send()
        .await
        .expect("authorize");
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["cache-control"], "no-store");
    let html = page.text().await.expect("html");
    let form = [
        ("request_id", hidden(&html, "request_id")),
        ("csrf_token", hidden(&html, "csrf_token")),
        ("username", "alice".to_owned()),
        ("password", "wonderland".to_owned()),
        ("action", "approve".to_owned()),
    ];
    let resp = c
        .post(format!("{base}/authorize"))
        .form(&form)
        .send()
        .await
        .expect("consent");
    assert_eq!(resp.status(), 303);
    let loc = location(&resp);
    assert!(loc.starts_with(REDIRECT), "{loc}");
    query(&loc)
}

async fn token(c: &reqwest::Client, base: &str, form: &[(&str, &str)]) -> (u16, Value) {
    let resp = c
        .post(format!("{base}/token"))
        .form(form)
        .send()
        .await
        .expect("token");
    let status = resp.status().as_u16();
    if status == 200 {
        assert_eq!(resp.headers()["cache-control"], "no-store");
    }
    (status, resp.json().await.expect("json"))
}

async fn exchange(c: &reqwest::Client, base: &str, code: &str, verifier: &str) -> (u16, Value) {
    token(
        c,
        base,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier),
            ("client_id", "public-app"),
        ],
    )
    .await
}

/// Verifies an access token against the published JWK Set.
async fn verify(c: &reqwest::Client, base: &str, jwt: &str, aud: &str) -> (Header, Value) {
    let header = jsonwebtoken::decode_header(jwt).expect("header");
    assert_eq!(header.typ.as_deref(), Some("at+jwt"));
    assert_eq!(header.alg, Algorithm::ES256);
    let kid = header.kid.clone().expect("kid");
    let set: JwkSet = c
        .get(format!("{base}/jwks"))
        .send()
        .await
        .expect("jwks")
        .json()
        .await
        .expect("jwks json");
    let jwk = set.find(&kid).expect("kid published");
    let mut v = Validation::new(Algorithm::ES256);
    v.set_audience(&[aud]);
    v.set_issuer(&[base]);
    let data = jsonwebtoken::decode::<Value>(jwt, &DecodingKey::from_jwk(jwk).expect("key"), &v)
        .expect("valid token");
    (header, data.claims)
}
