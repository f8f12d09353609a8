//! RFC 7591 dynamic client registration.

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::StatusCode;

use super::config::TokenEndpointAuthMethod;
use super::store::ClientRecord;
use super::{AuthorizationServer, OAuthError, json_response, util};

const GRANTS: &[&str] = &["authorization_code", "refresh_token", "client_credentials"];

/// `POST /register`.
pub(super) async fn register(State(s): State<AuthorizationServer>, body: Bytes) -> Response {
    match handle(&s, &body) {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

fn meta(description: impl Into<String>) -> OAuthError {
    OAuthError::bad("invalid_client_metadata", description)
}

fn strings(v: &serde_json::Value, key: &str) -> Result<Option<Vec<String>>, OAuthError> {
    match v.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| meta(format!("{key} must be strings")))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(meta(format!("{key} must be an array"))),
    }
}

fn string(v: &serde_json::Value, key: &str) -> Result<Option<String>, OAuthError> {
    match v.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(meta(format!("{key} must be a string"))),
    }
}

fn handle(s: &AuthorizationServer, body: &[u8]) -> Result<Response, OAuthError> {
    let req: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| meta("the body is not a JSON object"))?;
    if !req.is_object() {
        return Err(meta("the body is not a JSON object"));
    }
    let auth_method = match string(&req, "token_endpoint_auth_method")? {
        None => TokenEndpointAuthMethod::ClientSecretBasic,
        Some(m) => TokenEndpointAuthMethod::parse(&m)
            .ok_or_else(|| meta(format!("unsupported token_endpoint_auth_method {m:?}")))?,
    };
    let grant_types = strings(&req, "grant_types")?
        .unwrap_or_else(|| vec!["authorization_code".into(), "refresh_token".into()]);
    if let Some(g) = grant_types.iter().find(|g| !GRANTS.contains(&g.as_str())) {
        return Err(meta(format!("unsupported grant type {g:?}")));
    }
    if grant_types.iter().any(|g| g == "client_credentials")
        && auth_method == TokenEndpointAuthMethod::None
    {
        return Err(meta("client_credentials needs an authenticated client"));
    }
    let response_types = strings(&req, "response_types")?.unwrap_or_else(|| vec!["code".into()]);
    if response_types.iter().any(|r| r != "code") {
        return Err(meta("only the code response type is supported"));
    }
    let redirect_uris = strings(&req, "redirect_uris")?.unwrap_or_default();
    if grant_types.iter().any(|g| g == "authorization_code") && redirect_uris.is_empty() {
        return Err(OAuthError::bad(
            "invalid_redirect_uri",
            "redirect_uris is required",
        ));
    }
    for uri in &redirect_uris {
        util::check_redirect_uri(uri).map_err(|e| OAuthError::bad("invalid_redirect_uri", e))?;
    }
    let application_type = string(&req, "application_type")?;
    match application_type.as_deref() {
        None | Some("web") | Some("native") => {}
        Some(other) => return Err(meta(format!("unsupported application_type {other:?}"))),
    }
    let jwks = match req.get("jwks") {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => {
            serde_json::from_value::<jsonwebtoken::jwk::JwkSet>(v.clone())
                .map_err(|_| meta("jwks is not a JWK Set"))?;
            Some(v.clone())
        }
    };
    let jwks_uri = string(&req, "jwks_uri")?;
    if jwks.is_some() && jwks_uri.is_some() {
        return Err(meta("jwks and jwks_uri are mutually exclusive"));
    }
    if let Some(uri) = &jwks_uri
        && !url::Url::parse(uri)
            .is_ok_and(|u| u.scheme() == "https" || (u.scheme() == "http" && util::is_loopback(&u)))
    {
        return Err(meta("jwks_uri must be an https URL"));
    }
    if auth_method == TokenEndpointAuthMethod::PrivateKeyJwt && jwks.is_none() && jwks_uri.is_none()
    {
        return Err(meta("private_key_jwt needs jwks or jwks_uri"));
    }
    let scope = string(&req, "scope")?;
    if scope.is_some() {
        s.check_scope(scope.as_deref())
            .map_err(|e| meta(e.description))?;
    }
    let client_name = string(&req, "client_name")?;
    let client_id = util::random_token();
    let secret = auth_method.uses_secret().then(util::random_token);
    let issued_at = util::now();
    let rec = ClientRecord {
        client_id: client_id.clone(),
        secret_digest: secret.as_deref().map(util::digest),
        redirect_uris: redirect_uris.clone(),
        auth_method,
        grant_types: grant_types.clone(),
        jwks: jwks.clone(),
        jwks_uri: jwks_uri.clone(),
        client_name: client_name.clone(),
        scope: scope.clone(),
        application_type: application_type.clone(),
        issued_at,
    };
    let config = &s.inner.config;
    let unused_since = issued_at - config.unused_client_lifetime.as_secs() as i64;
    if !s
        .inner
        .store
        .register_client(&rec, config.max_clients, unused_since)?
    {
        tracing::warn!(
            max = config.max_clients,
            "authorization server: registration refused, the store is full"
        );
        return Err(OAuthError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "temporarily_unavailable",
            "the server holds as many registered clients as it may; try again later",
        ));
    }
    tracing::debug!(client_id = %client_id, "authorization server: client registered");
    let mut out = req.clone();
    out["client_id"] = client_id.into();
    out["client_id_issued_at"] = issued_at.into();
    out["token_endpoint_auth_method"] = auth_method.as_str().into();
    out["grant_types"] = grant_types.into();
    out["response_types"] = response_types.into();
    out["redirect_uris"] = redirect_uris.into();
    if let Some(secret) = secret {
        out["client_secret"] = secret.into();
        out["client_secret_expires_at"] = 0.into();
    }
    Ok(json_response(StatusCode::CREATED, &out))
}
