//! Metadata, the authorization-code flow through the login form, its errors,
//! refresh-token rotation and client secrets.

use super::*;

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
