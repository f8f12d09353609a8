//! The built-in authorization server over real sockets: metadata, the
//! authorization-code flow through the login form, token grants, client
//! authentication methods, registration, client ID metadata documents, key
//! rotation and restart persistence.

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

#[tokio::test]
async fn metadata_documents() {
    let s = start().await;
    let c = http();
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        let resp = c
            .get(format!("{}{path}", s.base))
            .send()
            .await
            .expect("get");
        assert_eq!(resp.status(), 200);
        assert!(
            resp.headers()["content-type"]
                .to_str()
                .expect("ct")
                .starts_with("application/json")
        );
        let m: Value = resp.json().await.expect("json");
        assert_eq!(m["issuer"], s.base);
        assert_eq!(m["authorization_endpoint"], format!("{}/authorize", s.base));
        assert_eq!(m["token_endpoint"], format!("{}/token", s.base));
        assert_eq!(m["registration_endpoint"], format!("{}/register", s.base));
        assert_eq!(m["jwks_uri"], format!("{}/jwks", s.base));
        assert_eq!(m["response_types_supported"], json!(["code"]));
        assert_eq!(m["code_challenge_methods_supported"], json!(["S256"]));
        assert_eq!(m["scopes_supported"], json!(["mcp", "mcp:write"]));
        assert_eq!(
            m["token_endpoint_auth_methods_supported"],
            json!([
                "none",
                "client_secret_basic",
                "client_secret_post",
                "private_key_jwt"
            ])
        );
        assert!(
            m["token_endpoint_auth_signing_alg_values_supported"]
                .as_array()
                .expect("algs")
                .contains(&json!("ES256"))
        );
        assert_eq!(m["authorization_response_iss_parameter_supported"], true);
        assert_eq!(m["client_id_metadata_document_supported"], true);
        assert!(
            m["grant_types_supported"]
                .as_array()
                .expect("grants")
                .contains(&json!("refresh_token"))
        );
    }
    let jwks: Value = c
        .get(format!("{}/.well-known/jwks.json", s.base))
        .send()
        .await
        .expect("jwks")
        .json()
        .await
        .expect("json");
    assert_eq!(jwks["keys"].as_array().expect("keys").len(), 1);
    assert_eq!(jwks["keys"][0]["kty"], "EC");
    assert!(jwks["keys"][0].get("d").is_none());
}

#[tokio::test]
async fn authorization_code_flow_through_the_login_form() {
    let s = start().await;
    let c = http();
    let (verifier, challenge) = pkce();

    // The page names the client and the scopes; a wrong password is refused generically.
    let html = c
        .get(authorize_url(
            &s.base,
            "public-app",
            &challenge,
            &[("resource", RESOURCE)],
        ))
        .send()
        .await
        .expect("authorize")
        .text()
        .await
        .expect("html");
    assert!(html.contains("Public App") && html.contains("<li>mcp</li>"));
    let id = hidden(&html, "request_id");
    let csrf = hidden(&html, "csrf_token");
    let bad = c
        .post(format!("{}/authorize", s.base))
        .form(&[
            ("request_id", id.as_str()),
            ("csrf_token", csrf.as_str()),
            ("username", "alice"),
            ("password", "nope"),
            ("action", "approve"),
        ])
        .send()
        .await
        .expect("post");
    assert_eq!(bad.status(), 401);
    assert!(
        bad.text()
            .await
            .expect("html")
            .contains("Invalid user name or password.")
    );
    // A forged CSRF token is refused.
    let forged = c
        .post(format!("{}/authorize", s.base))
        .form(&[
            ("request_id", id.as_str()),
            ("csrf_token", "forged"),
            ("username", "alice"),
            ("password", "wonderland"),
            ("action", "approve"),
        ])
        .send()
        .await
        .expect("post");
    assert_eq!(forged.status(), 403);
    // The right credentials approve.
    let ok = c
        .post(format!("{}/authorize", s.base))
        .form(&[
            ("request_id", id.as_str()),
            ("csrf_token", csrf.as_str()),
            ("username", "alice"),
            ("password", "wonderland"),
            ("action", "approve"),
        ])
        .send()
        .await
        .expect("post");
    assert_eq!(ok.status(), 303);
    let q = query(&location(&ok));
    assert_eq!(q["state"], "xyz-state");
    assert_eq!(q["iss"], s.base);
    let code = &q["code"];

    let (status, body) = exchange(&c, &s.base, code, &verifier).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["scope"], "mcp");
    assert!(body["refresh_token"].is_string());
    let (header, claims) = verify(
        &c,
        &s.base,
        body["access_token"].as_str().expect("at"),
        RESOURCE,
    )
    .await;
    assert_eq!(header.kid.as_deref(), Some(s.server.current_kid().as_str()));
    assert_eq!(claims["iss"], s.base);
    assert_eq!(claims["sub"], "alice");
    assert_eq!(claims["aud"], RESOURCE);
    assert_eq!(claims["client_id"], "public-app");
    assert_eq!(claims["scope"], "mcp");
    assert!(claims["jti"].is_string() && claims["iat"].is_i64() && claims["exp"].is_i64());

    // Deny sends access_denied back to the client.
    let html = c
        .get(authorize_url(&s.base, "public-app", &challenge, &[]))
        .send()
        .await
        .expect("authorize")
        .text()
        .await
        .expect("html");
    let deny = c
        .post(format!("{}/authorize", s.base))
        .form(&[
            ("request_id", hidden(&html, "request_id")),
            ("csrf_token", hidden(&html, "csrf_token")),
            ("action", "deny".to_owned()),
        ])
        .send()
        .await
        .expect("deny");
    let q = query(&location(&deny));
    assert_eq!(q["error"], "access_denied");
    assert_eq!(q["state"], "xyz-state");
}

#[tokio::test]
async fn authorization_errors() {
    let s = start().await;
    let c = http();
    let (verifier, challenge) = pkce();

    // Wrong PKCE verifier.
    let q = login(&c, &s.base, "public-app", &challenge, &[]).await;
    let (other, _) = pkce();
    let (status, body) = exchange(&c, &s.base, &q["code"], &other).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );

    // Reused code: refused, and the tokens of its first use are revoked.
    let q = login(&c, &s.base, "public-app", &challenge, &[]).await;
    let (status, first) = exchange(&c, &s.base, &q["code"], &verifier).await;
    assert_eq!(status, 200);
    let (status, body) = exchange(&c, &s.base, &q["code"], &verifier).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let (status, body) = token(
        &c,
        &s.base,
        &[
            ("grant_type", "refresh_token"),
            (
                "refresh_token",
                first["refresh_token"].as_str().expect("rt"),
            ),
            ("client_id", "public-app"),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );

    // Redirect URI at the token endpoint differing from the authorization request.
    let q = login(&c, &s.base, "public-app", &challenge, &[]).await;
    let (status, body) = token(
        &c,
        &s.base,
        &[
            ("grant_type", "authorization_code"),
            ("code", &q["code"]),
            ("redirect_uri", "http://127.0.0.1:9999/other"),
            ("code_verifier", &verifier),
            ("client_id", "public-app"),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );

    // Unregistered redirect URI: an error page, never a redirect.
    let mut url =
        url::Url::parse(&authorize_url(&s.base, "public-app", &challenge, &[])).expect("url");
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .into_owned()
        .map(|(k, v)| {
            if k == "redirect_uri" {
                (k, "https://evil.example/cb".into())
            } else {
                (k, v)
            }
        })
        .collect();
    url.query_pairs_mut().clear().extend_pairs(pairs);
    let resp = c.get(url.as_str()).send().await.expect("authorize");
    assert_eq!(resp.status(), 400);
    assert!(resp.headers().get("location").is_none());

    // Unknown client: an error page.
    let resp = c
        .get(authorize_url(&s.base, "nobody", &challenge, &[]))
        .send()
        .await
        .expect("authorize");
    assert_eq!(resp.status(), 400);
    assert!(resp.headers().get("location").is_none());

    // plain PKCE, missing PKCE, unknown scope, unknown resource: redirected errors.
    for (extra, error) in [
        (vec![("code_challenge_method", "plain")], "invalid_request"),
        (vec![("scope", "admin")], "invalid_scope"),
        (
            vec![("resource", "https://elsewhere.example/mcp")],
            "invalid_target",
        ),
    ] {
        let mut url =
            url::Url::parse(&authorize_url(&s.base, "public-app", &challenge, &[])).expect("url");
        let mut pairs: Vec<(String, String)> = url
            .query_pairs()
            .into_owned()
            .filter(|(k, _)| !extra.iter().any(|(e, _)| e == k))
            .collect();
        pairs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        url.query_pairs_mut().clear().extend_pairs(pairs);
        let resp = c.get(url.as_str()).send().await.expect("authorize");
        assert_eq!(resp.status(), 302);
        let q = query(&location(&resp));
        assert_eq!(q["error"], error);
        assert_eq!(q["state"], "xyz-state");
        assert_eq!(q["iss"], s.base);
    }
    let mut url =
        url::Url::parse(&authorize_url(&s.base, "public-app", &challenge, &[])).expect("url");
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .into_owned()
        .filter(|(k, _)| !k.starts_with("code_challenge"))
        .collect();
    url.query_pairs_mut().clear().extend_pairs(pairs);
    let resp = c.get(url.as_str()).send().await.expect("authorize");
    assert_eq!(query(&location(&resp))["error"], "invalid_request");

    // Registration with a non-loopback http redirect URI.
    let resp = c
        .post(format!("{}/register", s.base))
        .json(&json!({"redirect_uris": ["http://app.example/cb"], "token_endpoint_auth_method": "none"}))
        .send()
        .await
        .expect("register");
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.expect("json");
    assert_eq!(body["error"], "invalid_redirect_uri");

    // Unsupported grant type.
    let (status, body) = token(
        &c,
        &s.base,
        &[("grant_type", "password"), ("client_id", "public-app")],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("unsupported_grant_type"))
    );
}

#[tokio::test]
async fn refresh_rotation_and_reuse_detection() {
    let s = start().await;
    let c = http();
    let (verifier, challenge) = pkce();
    let q = login(&c, &s.base, "public-app", &challenge, &[]).await;
    let (_, first) = exchange(&c, &s.base, &q["code"], &verifier).await;
    let rt1 = first["refresh_token"].as_str().expect("rt").to_owned();
    let refresh = |rt: String| {
        let c = c.clone();
        let base = s.base.clone();
        async move {
            token(
                &c,
                &base,
                &[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", &rt),
                    ("client_id", "public-app"),
                ],
            )
            .await
        }
    };
    let (status, second) = refresh(rt1.clone()).await;
    assert_eq!(status, 200, "{second}");
    let rt2 = second["refresh_token"].as_str().expect("rt").to_owned();
    assert_ne!(rt1, rt2);
    verify(
        &c,
        &s.base,
        second["access_token"].as_str().expect("at"),
        RESOURCE,
    )
    .await;
    // Presenting the rotated token again revokes the family: rt2 dies too.
    let (status, body) = refresh(rt1).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let (status, body) = refresh(rt2).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
}

#[tokio::test]
async fn client_credentials_with_client_secrets() {
    let s = start().await;
    let c = http();
    let resp = c
        .post(format!("{}/token", s.base))
        .basic_auth("basic-app", Some("basic-secret"))
        .form(&[("grant_type", "client_credentials"), ("scope", "mcp")])
        .send()
        .await
        .expect("token");
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.expect("json");
    assert!(body.get("refresh_token").is_none());
    let (_, claims) = verify(
        &c,
        &s.base,
        body["access_token"].as_str().expect("at"),
        RESOURCE,
    )
    .await;
    assert_eq!(claims["sub"], "basic-app");
    assert_eq!(claims["client_id"], "basic-app");

    let (status, body) = token(
        &c,
        &s.base,
        &[
            ("grant_type", "client_credentials"),
            ("client_id", "post-app"),
            ("client_secret", "post-secret"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // Wrong secret, wrong method, public client.
    let resp = c
        .post(format!("{}/token", s.base))
        .basic_auth("basic-app", Some("wrong"))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .expect("token");
    assert_eq!(resp.status(), 401);
    assert!(resp.headers().contains_key("www-authenticate"));
    assert_eq!(
        resp.json::<Value>().await.expect("json")["error"],
        "invalid_client"
    );
    let (status, body) = token(
        &c,
        &s.base,
        &[
            ("grant_type", "client_credentials"),
            ("client_id", "basic-app"),
            ("client_secret", "basic-secret"),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (401, Some("invalid_client"))
    );
    let (status, body) = token(
        &c,
        &s.base,
        &[
            ("grant_type", "client_credentials"),
            ("client_id", "public-app"),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("unauthorized_client"))
    );
}

/// A P-256 key pair for a client: its PKCS#8 and its public JWK Set.
fn client_key(kid: &str) -> (Vec<u8>, Value) {
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key");
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .expect("pair");
    let point = pair.public_key().as_ref();
    let jwks = json!({"keys": [{
        "kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256",
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
    }]});
    (pkcs8.as_ref().to_vec(), jwks)
}

fn assertion(pkcs8: &[u8], kid: &str, client_id: &str, aud: &str, jti: &str) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_owned());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("time")
        .as_secs();
    let claims = json!({"iss": client_id, "sub": client_id, "aud": aud, "exp": now + 60, "iat": now, "jti": jti});
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ec_der(pkcs8)).expect("sign")
}

#[tokio::test]
async fn private_key_jwt_client_authentication() {
    let (pkcs8, jwks) = client_key("client-key-1");
    let s = start_with(|b| {
        b.client(ClientConfig::private_key_jwt(
            "jwt-app",
            jwks,
            vec![REDIRECT.into()],
        ))
    })
    .await;
    let c = http();
    let token_endpoint = format!("{}/token", s.base);
    let jwt_type = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
    let a = assertion(&pkcs8, "client-key-1", "jwt-app", &token_endpoint, "jti-1");
    let form = [
        ("grant_type", "client_credentials"),
        ("client_assertion_type", jwt_type),
        ("client_assertion", a.as_str()),
    ];
    let (status, body) = token(&c, &s.base, &form).await;
    assert_eq!(status, 200, "{body}");
    let (_, claims) = verify(
        &c,
        &s.base,
        body["access_token"].as_str().expect("at"),
        RESOURCE,
    )
    .await;
    assert_eq!(claims["client_id"], "jwt-app");
    // The same jti again is a replay.
    let (status, body) = token(&c, &s.base, &form).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (401, Some("invalid_client"))
    );
    // The issuer is an accepted audience too.
    let a = assertion(&pkcs8, "client-key-1", "jwt-app", &s.base, "jti-2");
    let (status, _) = token(
        &c,
        &s.base,
        &[
            ("grant_type", "client_credentials"),
            ("client_assertion_type", jwt_type),
            ("client_assertion", &a),
        ],
    )
    .await;
    assert_eq!(status, 200);
    // Another key, another audience: refused.
    let (other, _) = client_key("client-key-1");
    let a = assertion(&other, "client-key-1", "jwt-app", &token_endpoint, "jti-3");
    let (status, _) = token(
        &c,
        &s.base,
        &[
            ("grant_type", "client_credentials"),
            ("client_assertion_type", jwt_type),
            ("client_assertion", &a),
        ],
    )
    .await;
    assert_eq!(status, 401);
    let a = assertion(
        &pkcs8,
        "client-key-1",
        "jwt-app",
        "https://other.example/token",
        "jti-4",
    );
    let (status, _) = token(
        &c,
        &s.base,
        &[
            ("grant_type", "client_credentials"),
            ("client_assertion_type", jwt_type),
            ("client_assertion", &a),
        ],
    )
    .await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn dynamic_client_registration() {
    let s = start().await;
    let c = http();
    let resp = c
        .post(format!("{}/register", s.base))
        .json(&json!({
            "client_name": "Registered",
            "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "application_type": "native",
        }))
        .send()
        .await
        .expect("register");
    assert_eq!(resp.status(), 201);
    let reg: Value = resp.json().await.expect("json");
    let client_id = reg["client_id"].as_str().expect("client_id").to_owned();
    assert!(reg.get("client_secret").is_none());
    assert_eq!(reg["client_name"], "Registered");
    let (verifier, challenge) = pkce();
    let q = login(&c, &s.base, &client_id, &challenge, &[]).await;
    let (status, body) = token(
        &c,
        &s.base,
        &[
            ("grant_type", "authorization_code"),
            ("code", &q["code"]),
            ("redirect_uri", REDIRECT),
            ("code_verifier", &verifier),
            ("client_id", &client_id),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // A confidential client gets a secret it can use.
    let reg: Value = c
        .post(format!("{}/register", s.base))
        .json(&json!({
            "redirect_uris": ["https://app.example/cb"],
            "token_endpoint_auth_method": "client_secret_post",
            "grant_types": ["client_credentials"],
        }))
        .send()
        .await
        .expect("register")
        .json()
        .await
        .expect("json");
    let (status, body) = token(
        &c,
        &s.base,
        &[
            ("grant_type", "client_credentials"),
            ("client_id", reg["client_id"].as_str().expect("id")),
            (
                "client_secret",
                reg["client_secret"].as_str().expect("secret"),
            ),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // Invalid metadata.
    let resp = c
        .post(format!("{}/register", s.base))
        .json(&json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "magic"}))
        .send()
        .await
        .expect("register");
    assert_eq!(resp.status(), 400);
    assert_eq!(
        resp.json::<Value>().await.expect("json")["error"],
        "invalid_client_metadata"
    );
}

fn json_body(v: Value) -> ([(http::header::HeaderName, &'static str); 1], String) {
    (
        [(http::header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
}

#[tokio::test]
async fn client_id_metadata_document() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let doc_url = format!(
        "http://{}/client.json",
        listener.local_addr().expect("addr")
    );
    let doc = json!({
        "client_id": doc_url,
        "client_name": "Metadata Client",
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
    });
    let nameless_url = doc_url.replace("client.json", "nameless.json");
    let nameless = json!({"client_id": nameless_url, "redirect_uris": [REDIRECT]});
    let app = axum::Router::new()
        .route(
            "/client.json",
            axum::routing::get(move || async move { json_body(doc) }),
        )
        .route(
            "/nameless.json",
            axum::routing::get(move || async move { json_body(nameless) }),
        )
        .route(
            "/wrong.json",
            axum::routing::get(|| async {
                json_body(
                    json!({"client_id": "https://other.example/c", "redirect_uris": [REDIRECT]}),
                )
            }),
        );
    let doc_task = tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await;
    });

    let s = start_with(|b| b.allow_loopback_client_id_documents_for_testing(true)).await;
    let c = http();
    let (verifier, challenge) = pkce();
    let html = c
        .get(authorize_url(&s.base, &doc_url, &challenge, &[]))
        .send()
        .await
        .expect("authorize")
        .text()
        .await
        .expect("html");
    assert!(html.contains("Metadata Client"), "{html}");
    let q = login(&c, &s.base, &doc_url, &challenge, &[]).await;
    let (status, body) = token(
        &c,
        &s.base,
        &[
            ("grant_type", "authorization_code"),
            ("code", &q["code"]),
            ("redirect_uri", REDIRECT),
            ("code_verifier", &verifier),
            ("client_id", &doc_url),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (_, claims) = verify(
        &c,
        &s.base,
        body["access_token"].as_str().expect("at"),
        RESOURCE,
    )
    .await;
    assert_eq!(claims["client_id"], doc_url);

    // A document whose client_id is not its URL is refused.
    let wrong = doc_url.replace("client.json", "wrong.json");
    let resp = c
        .get(authorize_url(&s.base, &wrong, &challenge, &[]))
        .send()
        .await
        .expect("authorize");
    assert_eq!(resp.status(), 400);

    // A document without client_name is refused.
    let resp = c
        .get(authorize_url(&s.base, &nameless_url, &challenge, &[]))
        .send()
        .await
        .expect("authorize");
    assert_eq!(resp.status(), 400);

    // Without the test switch, a loopback http URL is not a client.
    let strict = start().await;
    let resp = c
        .get(authorize_url(&strict.base, &doc_url, &challenge, &[]))
        .send()
        .await
        .expect("authorize");
    assert_eq!(resp.status(), 400);
    doc_task.abort();
}

#[tokio::test]
async fn key_rotation_keeps_the_previous_key_published() {
    let s = start().await;
    let c = http();
    let old_kid = s.server.current_kid();
    let old = c
        .post(format!("{}/token", s.base))
        .basic_auth("basic-app", Some("basic-secret"))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .expect("token")
        .json::<Value>()
        .await
        .expect("json");
    let new_kid = s.server.rotate_keys().expect("rotate");
    assert_ne!(old_kid, new_kid);
    let jwks: Value = c
        .get(format!("{}/jwks", s.base))
        .send()
        .await
        .expect("jwks")
        .json()
        .await
        .expect("json");
    let kids: Vec<&str> = jwks["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| k["kid"].as_str().expect("kid"))
        .collect();
    assert_eq!(kids, vec![new_kid.as_str(), old_kid.as_str()]);
    // The token signed before still verifies; new tokens use the new key.
    let (h, _) = verify(
        &c,
        &s.base,
        old["access_token"].as_str().expect("at"),
        RESOURCE,
    )
    .await;
    assert_eq!(h.kid.as_deref(), Some(old_kid.as_str()));
    let new = c
        .post(format!("{}/token", s.base))
        .basic_auth("basic-app", Some("basic-secret"))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .expect("token")
        .json::<Value>()
        .await
        .expect("json");
    let (h, _) = verify(
        &c,
        &s.base,
        new["access_token"].as_str().expect("at"),
        RESOURCE,
    )
    .await;
    assert_eq!(h.kid.as_deref(), Some(new_kid.as_str()));
}

#[tokio::test]
async fn state_survives_a_restart() {
    let path = std::env::temp_dir().join(format!(
        "mcp-auth-as-{}.sqlite",
        URL_SAFE_NO_PAD.encode(&rand_bytes()[..9])
    ));
    let path_str = path.to_str().expect("path").to_owned();
    let c = http();
    let (verifier, challenge) = pkce();
    let (rt, kid) = {
        let p = path_str.clone();
        let s = start_with(move |b| b.storage_path(p)).await;
        let q = login(&c, &s.base, "public-app", &challenge, &[]).await;
        let (_, body) = exchange(&c, &s.base, &q["code"], &verifier).await;
        (
            body["refresh_token"].as_str().expect("rt").to_owned(),
            s.server.current_kid(),
        )
    };
    // A new server on the same file (and another port) honours the refresh token.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let server = AuthorizationServer::new(
        base_config(&base)
            .storage_path(path_str.clone())
            .build()
            .expect("config"),
    )
    .expect("server");
    assert_eq!(server.current_kid(), kid);
    let app = server.router();
    let task = tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await;
    });
    let (status, body) = token(
        &c,
        &base,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &rt),
            ("client_id", "public-app"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    task.abort();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{path_str}{suffix}"));
    }
}

#[tokio::test]
async fn failed_logins_are_limited() {
    let s = start().await;
    let c = http();
    let (_, challenge) = pkce();
    let html = c
        .get(authorize_url(&s.base, "public-app", &challenge, &[]))
        .send()
        .await
        .expect("authorize")
        .text()
        .await
        .expect("html");
    assert!(html.contains("localhost address"));
    let form = |password: &str| {
        [
            ("request_id", hidden(&html, "request_id")),
            ("csrf_token", hidden(&html, "csrf_token")),
            ("username", "alice".to_owned()),
            ("password", password.to_owned()),
            ("action", "approve".to_owned()),
        ]
    };
    for _ in 0..4 {
        let resp = c
            .post(format!("{}/authorize", s.base))
            .form(&form("guess"))
            .send()
            .await
            .expect("post");
        assert_eq!(resp.status(), 401);
    }
    let resp = c
        .post(format!("{}/authorize", s.base))
        .form(&form("guess"))
        .send()
        .await
        .expect("post");
    assert_eq!(resp.status(), 403);
    // The request is gone: even the right password no longer works.
    let resp = c
        .post(format!("{}/authorize", s.base))
        .form(&form("wonderland"))
        .send()
        .await
        .expect("post");
    assert_eq!(resp.status(), 400);
    assert!(resp.headers().get("location").is_none());
}

/// A client registered for one loopback redirect URI that signs in again
/// from another port (a later run's listener) registers again for it, and
/// the store keeps the new registration.
#[tokio::test]
async fn a_client_registers_again_for_a_new_loopback_port() {
    use mcp_auth::client::{
        HeadlessUserAgent, MemoryTokenStore, OAuthClient, OAuthClientConfig, TokenStore,
    };
    use std::sync::Arc;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let resource = format!("{base}/mcp");
    let config = AuthServerConfig::builder(&base)
        .resource(&resource)
        .dynamic_registration(true)
        .user(UserAccount::with_password("alice", "wonderland").expect("hash"))
        .auto_approve_as_user_for_testing("alice")
        .build()
        .expect("config");
    let server = AuthorizationServer::new(config).expect("server");
    let app = server.router();
    let task = tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await;
    });
    let store = Arc::new(MemoryTokenStore::default());
    let sign_in = async |redirect: &str| {
        let agent = Arc::new(HeadlessUserAgent::new(redirect));
        let config = OAuthClientConfig::new("test", agent).store(store.clone());
        let client = OAuthClient::new(&resource, config).expect("client");
        client.authorize(None).await.expect("signed in");
        store.load(&base).unwrap().registration.expect("registered")
    };
    let first = sign_in("http://127.0.0.1:1111/callback").await;
    assert_eq!(first.redirect_uris, ["http://127.0.0.1:1111/callback"]);
    let same = sign_in("http://127.0.0.1:1111/callback").await;
    assert_eq!(same.client_id, first.client_id, "the registration fits");
    let second = sign_in("http://127.0.0.1:2222/callback").await;
    assert_ne!(second.client_id, first.client_id);
    assert_eq!(second.redirect_uris, ["http://127.0.0.1:2222/callback"]);
    task.abort();
}
