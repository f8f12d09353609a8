//! Client authentication by signed assertion, dynamic registration and client
//! ID metadata documents.

use super::*;

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
