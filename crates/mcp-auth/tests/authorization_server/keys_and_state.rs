//! Key rotation, state across a restart, the limit on failed logins and
//! registering again for a new loopback port.

use super::*;

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
