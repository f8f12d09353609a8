//! The token endpoint: `authorization_code` (PKCE), `refresh_token` with
//! rotation and reuse detection, `client_credentials`.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use http::{HeaderMap, StatusCode};

use super::config::TokenEndpointAuthMethod;
use super::store::{ClientRecord, CodeLookup, RefreshGrant, RefreshLookup};
use super::{AuthorizationServer, OAuthError, json_response, util};

/// `POST /token`.
pub(super) async fn token(
    State(s): State<AuthorizationServer>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match handle(&s, &headers, &body).await {
        Ok(resp) => resp,
        Err(e) => {
            tracing::debug!(
                error = e.error,
                "authorization server: token request refused"
            );
            axum::response::IntoResponse::into_response(e)
        }
    }
}

async fn handle(
    s: &AuthorizationServer,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, OAuthError> {
    let form = util::parse_form(body).ok_or_else(|| {
        OAuthError::bad("invalid_request", "a parameter was given more than once")
    })?;
    let grant_type = form
        .get("grant_type")
        .ok_or_else(|| OAuthError::bad("invalid_request", "grant_type is required"))?
        .clone();
    if !matches!(
        grant_type.as_str(),
        "authorization_code" | "refresh_token" | "client_credentials"
    ) {
        return Err(OAuthError::bad(
            "unsupported_grant_type",
            "unsupported grant_type",
        ));
    }
    let client = s.authenticate_client(headers, &form).await?;
    if !client.grant_types.contains(&grant_type) {
        return Err(OAuthError::bad(
            "unauthorized_client",
            "the client may not use this grant type",
        ));
    }
    let resp = match grant_type.as_str() {
        "authorization_code" => authorization_code(s, &client, &form),
        "refresh_token" => refresh_token(s, &client, &form),
        _ => client_credentials(s, &client, &form),
    }?;
    s.inner.store.client_used(&client.client_id)?;
    Ok(resp)
}

fn token_response(
    s: &AuthorizationServer,
    access_token: String,
    scope: &[String],
    refresh_token: Option<String>,
) -> Response {
    let mut body = serde_json::json!({
        "access_token": access_token,
        "token_type": "Bearer",
        "expires_in": s.inner.config.access_token_lifetime.as_secs(),
    });
    if !scope.is_empty() {
        body["scope"] = scope.join(" ").into();
    }
    if let Some(r) = refresh_token {
        body["refresh_token"] = r.into();
    }
    json_response(StatusCode::OK, &body)
}

/// A resource in the token request must be the one the grant is bound to.
fn bound_resource(
    s: &AuthorizationServer,
    form: &HashMap<String, String>,
    granted: Option<&str>,
) -> Result<Option<String>, OAuthError> {
    match (form.get("resource"), granted) {
        (None, g) => Ok(g.map(str::to_owned)),
        (Some(r), Some(g)) if r.trim_end_matches('/') == g.trim_end_matches('/') => {
            Ok(Some(g.to_owned()))
        }
        (Some(r), None) => {
            s.check_resource(r)?;
            Ok(Some(r.clone()))
        }
        (Some(_), Some(_)) => Err(OAuthError::bad(
            "invalid_target",
            "the resource differs from the one authorized",
        )),
    }
}

/// A narrower scope on refresh, or the granted one.
fn narrowed_scope(
    form: &HashMap<String, String>,
    granted: &[String],
) -> Result<Vec<String>, OAuthError> {
    match form.get("scope") {
        None => Ok(granted.to_vec()),
        Some(asked) => {
            let asked: Vec<String> = asked
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            if asked.iter().all(|a| granted.contains(a)) {
                Ok(asked)
            } else {
                Err(OAuthError::bad(
                    "invalid_scope",
                    "the scope exceeds the one granted",
                ))
            }
        }
    }
}

fn new_refresh_token(s: &AuthorizationServer, grant: &RefreshGrant) -> Result<String, OAuthError> {
    let token = util::random_token();
    s.inner.store.put_refresh(&util::digest(&token), grant)?;
    Ok(token)
}

fn authorization_code(
    s: &AuthorizationServer,
    client: &ClientRecord,
    form: &HashMap<String, String>,
) -> Result<Response, OAuthError> {
    let code = form
        .get("code")
        .ok_or_else(|| OAuthError::bad("invalid_request", "code is required"))?;
    let verifier = form
        .get("code_verifier")
        .ok_or_else(|| OAuthError::bad("invalid_request", "code_verifier is required"))?;
    let grant = match s.inner.store.redeem_code(&util::digest(code))? {
        CodeLookup::Valid(g) => g,
        CodeLookup::Unknown => {
            return Err(OAuthError::bad(
                "invalid_grant",
                "invalid authorization code",
            ));
        }
        CodeLookup::Reused => {
            tracing::info!(client_id = %client.client_id, "authorization server: authorization code reused; its grant is revoked");
            return Err(OAuthError::bad(
                "invalid_grant",
                "invalid authorization code",
            ));
        }
    };
    if grant.client_id != client.client_id {
        return Err(OAuthError::bad(
            "invalid_grant",
            "the code was issued to another client",
        ));
    }
    if grant.expires < util::now() {
        return Err(OAuthError::bad(
            "invalid_grant",
            "the authorization code has expired",
        ));
    }
    match form.get("redirect_uri") {
        Some(uri) if uri == &grant.redirect_uri => {}
        None if !grant.redirect_uri_given => {}
        _ => {
            return Err(OAuthError::bad(
                "invalid_grant",
                "redirect_uri does not match the authorization request",
            ));
        }
    }
    if !util::pkce_s256_matches(verifier, &grant.code_challenge) {
        return Err(OAuthError::bad("invalid_grant", "PKCE verification failed"));
    }
    let resource = bound_resource(s, form, grant.resource.as_deref())?;
    let access = s.issue_access_token(
        &grant.subject,
        &client.client_id,
        &grant.scope,
        resource.as_deref(),
    )?;
    let refresh = if client.grant_types.iter().any(|g| g == "refresh_token") {
        Some(new_refresh_token(
            s,
            &RefreshGrant {
                client_id: client.client_id.clone(),
                subject: grant.subject.clone(),
                scope: grant.scope.clone(),
                resource: grant.resource.clone(),
                family: grant.family.clone(),
                expires: util::now() + s.inner.config.refresh_token_lifetime.as_secs() as i64,
            },
        )?)
    } else {
        None
    };
    tracing::debug!(client_id = %client.client_id, "authorization server: tokens issued for a code");
    Ok(token_response(s, access, &grant.scope, refresh))
}

fn refresh_token(
    s: &AuthorizationServer,
    client: &ClientRecord,
    form: &HashMap<String, String>,
) -> Result<Response, OAuthError> {
    let token = form
        .get("refresh_token")
        .ok_or_else(|| OAuthError::bad("invalid_request", "refresh_token is required"))?;
    let grant = match s.inner.store.rotate_refresh(&util::digest(token))? {
        RefreshLookup::Valid(g) => g,
        RefreshLookup::Unknown => {
            return Err(OAuthError::bad("invalid_grant", "invalid refresh token"));
        }
        RefreshLookup::Reused => {
            tracing::info!(client_id = %client.client_id, "authorization server: refresh token reused; its family is revoked");
            return Err(OAuthError::bad("invalid_grant", "invalid refresh token"));
        }
    };
    if grant.client_id != client.client_id {
        return Err(OAuthError::bad(
            "invalid_grant",
            "the refresh token was issued to another client",
        ));
    }
    if grant.expires < util::now() {
        return Err(OAuthError::bad(
            "invalid_grant",
            "the refresh token has expired",
        ));
    }
    let scope = narrowed_scope(form, &grant.scope)?;
    let resource = bound_resource(s, form, grant.resource.as_deref())?;
    let access = s.issue_access_token(
        &grant.subject,
        &client.client_id,
        &scope,
        resource.as_deref(),
    )?;
    let next = new_refresh_token(
        s,
        &RefreshGrant {
            scope: grant.scope.clone(),
            ..grant.clone()
        },
    )?;
    tracing::debug!(client_id = %client.client_id, "authorization server: refresh token rotated");
    Ok(token_response(s, access, &scope, Some(next)))
}

fn client_credentials(
    s: &AuthorizationServer,
    client: &ClientRecord,
    form: &HashMap<String, String>,
) -> Result<Response, OAuthError> {
    if client.auth_method == TokenEndpointAuthMethod::None {
        return Err(OAuthError::bad(
            "unauthorized_client",
            "public clients may not use client_credentials",
        ));
    }
    let scope = s.check_scope(form.get("scope").map(String::as_str))?;
    let resource = bound_resource(s, form, None)?;
    let access = s.issue_access_token(
        &client.client_id,
        &client.client_id,
        &scope,
        resource.as_deref(),
    )?;
    tracing::debug!(client_id = %client.client_id, "authorization server: client credentials token issued");
    Ok(token_response(s, access, &scope, None))
}
