//! The authorization endpoint: request checks, the login and consent page,
//! and the redirect back with a code (or an error), `state` and `iss`.

use std::collections::{HashMap, HashSet};

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use http::header::{CACHE_CONTROL, LOCATION};
use http::{HeaderValue, StatusCode};

use super::page::{error_page, page_response};
use super::store::{ClientRecord, CodeGrant, PendingRequest};
use super::{AuthorizationServer, limits, util};

/// Failed logins allowed on one authorization request.
const MAX_LOGIN_ATTEMPTS: u32 = 5;

/// Query parameters: first values, and the names given more than once.
fn parse_params(raw: &[u8]) -> (HashMap<String, String>, HashSet<String>) {
    let mut map = HashMap::new();
    let mut dup = HashSet::new();
    for (k, v) in form_urlencoded::parse(raw) {
        if map.contains_key(k.as_ref()) {
            dup.insert(k.into_owned());
        } else {
            map.insert(k.into_owned(), v.into_owned());
        }
    }
    (map, dup)
}

/// A redirect to `redirect_uri` with `params` added to its query.
fn redirect(status: StatusCode, redirect_uri: &str, params: &[(&str, &str)]) -> Response {
    let mut url = match url::Url::parse(redirect_uri) {
        Ok(u) => u,
        Err(_) => return error_page(StatusCode::BAD_REQUEST, "invalid redirect URI"),
    };
    {
        let mut q = url.query_pairs_mut();
        for (k, v) in params {
            q.append_pair(k, v);
        }
    }
    match HeaderValue::from_str(url.as_str()) {
        Ok(loc) => {
            let mut resp = status.into_response();
            resp.headers_mut().insert(LOCATION, loc);
            resp.headers_mut()
                .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
            resp
        }
        Err(_) => error_page(StatusCode::BAD_REQUEST, "invalid redirect URI"),
    }
}

impl AuthorizationServer {
    fn error_redirect(
        &self,
        status: StatusCode,
        redirect_uri: &str,
        state: Option<&str>,
        error: &str,
        description: &str,
    ) -> Response {
        let mut params = vec![("error", error), ("error_description", description)];
        if let Some(s) = state {
            params.push(("state", s));
        }
        params.push(("iss", &self.inner.config.issuer));
        redirect(status, redirect_uri, &params)
    }

    /// Issues a code for an approved request and redirects to the client.
    fn approve(&self, status: StatusCode, req: &PendingRequest, subject: &str) -> Response {
        let code = util::random_token();
        let now = util::now();
        let grant = CodeGrant {
            client_id: req.client_id.clone(),
            redirect_uri: req.redirect_uri.clone(),
            redirect_uri_given: req.redirect_uri_given,
            subject: subject.to_owned(),
            scope: req.scope.clone(),
            resource: req.resource.clone(),
            code_challenge: req.code_challenge.clone(),
            expires: now + self.inner.config.code_lifetime.as_secs() as i64,
            family: util::random_token(),
        };
        let family_expires = now + self.inner.config.refresh_token_lifetime.as_secs() as i64;
        if let Err(e) = self
            .inner
            .store
            .put_code(&util::digest(&code), &grant, family_expires)
        {
            tracing::warn!("authorization server: {e}");
            return self.error_redirect(
                status,
                &req.redirect_uri,
                req.state.as_deref(),
                "server_error",
                "internal error",
            );
        }
        if let Err(e) = self.inner.store.client_used(&req.client_id) {
            tracing::warn!("authorization server: {e}");
        }
        tracing::debug!(client_id = %req.client_id, "authorization server: code issued");
        let mut params = vec![("code", code.as_str())];
        if let Some(s) = &req.state {
            params.push(("state", s));
        }
        params.push(("iss", &self.inner.config.issuer));
        redirect(status, &req.redirect_uri, &params)
    }

    fn login_page(
        &self,
        id: &str,
        req: &PendingRequest,
        client: &ClientRecord,
        error: Option<&str>,
    ) -> Response {
        let esc = util::html_escape;
        let name = client.client_name.as_deref().unwrap_or(&client.client_id);
        let redirect_host = url::Url::parse(&req.redirect_uri)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        let scopes = if req.scope.is_empty() {
            "<li>(no specific scope)</li>".to_owned()
        } else {
            req.scope
                .iter()
                .map(|s| format!("<li>{}</li>", esc(s)))
                .collect()
        };
        let resource = req
            .resource
            .as_deref()
            .map(|r| format!("<p>For: <code>{}</code></p>", esc(r)))
            .unwrap_or_default();
        let loopback_warning = if client
            .redirect_uris
            .iter()
            .all(|u| url::Url::parse(u).is_ok_and(|u| util::is_loopback(&u)))
        {
            "<p><strong>Note:</strong> this application only returns to this computer \
             (a localhost address). Allow it only if you started it yourself.</p>"
        } else {
            ""
        };
        let error = error
            .map(|e| format!("<p role=\"alert\" style=\"color:#b00\">{}</p>", esc(e)))
            .unwrap_or_default();
        let body = format!(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>Authorize {name}</title></head><body>\
             <h1>Authorize {name}</h1>\
             <p><strong>{name}</strong> (<code>{client_id}</code>, returning to <code>{host}</code>) asks for access:</p>\
             <ul>{scopes}</ul>{resource}{loopback_warning}{error}\
             <form method=\"post\" action=\"{action}\">\
             <input type=\"hidden\" name=\"request_id\" value=\"{id}\">\
             <input type=\"hidden\" name=\"csrf_token\" value=\"{csrf}\">\
             <p><label>User name <input name=\"username\" autocomplete=\"username\" required></label></p>\
             <p><label>Password <input type=\"password\" name=\"password\" autocomplete=\"current-password\" required></label></p>\
             <p><button type=\"submit\" name=\"action\" value=\"approve\">Allow</button> \
             <button type=\"submit\" name=\"action\" value=\"deny\" formnovalidate>Deny</button></p>\
             </form></body></html>",
            name = esc(name),
            client_id = esc(&client.client_id),
            host = esc(&redirect_host),
            action = esc(&format!("{}/authorize", self.inner.base_path)),
            id = esc(id),
            csrf = esc(&req.csrf),
        );
        page_response(StatusCode::OK, body)
    }

    /// Checks a password in constant time against the user's Argon2 hash
    /// (an unknown user is checked against a dummy hash), at most
    /// `max_concurrent_password_checks` at once.
    async fn check_user(&self, username: &str, password: &str) -> bool {
        let known = self.inner.users.get(username);
        let hash = known
            .cloned()
            .unwrap_or_else(|| self.inner.dummy_hash.clone());
        let password = password.to_owned();
        let Ok(_permit) = self.inner.password_checks.acquire().await else {
            return false;
        };
        let ok = tokio::task::spawn_blocking(move || super::password::verify(&hash, &password))
            .await
            .unwrap_or(false);
        ok && known.is_some()
    }
}

/// `GET /authorize`.
pub(super) async fn get_authorize(
    State(s): State<AuthorizationServer>,
    RawQuery(q): RawQuery,
) -> Response {
    let (p, dup) = parse_params(q.unwrap_or_default().as_bytes());
    if dup.contains("client_id") || dup.contains("redirect_uri") {
        return error_page(
            StatusCode::BAD_REQUEST,
            "client_id and redirect_uri must be given once.",
        );
    }
    let Some(client_id) = p.get("client_id") else {
        return error_page(StatusCode::BAD_REQUEST, "The request has no client_id.");
    };
    let client = match s.resolve_client(client_id).await {
        Ok(Some(c)) => c,
        Ok(None) => return error_page(StatusCode::BAD_REQUEST, "Unknown client."),
        Err(e) => {
            tracing::debug!("authorization server: client metadata document: {e}");
            return error_page(
                StatusCode::BAD_REQUEST,
                &format!("The client's metadata document is not usable: {e}"),
            );
        }
    };
    let (redirect_uri, given) = match p.get("redirect_uri") {
        Some(uri)
            if client
                .redirect_uris
                .iter()
                .any(|r| util::redirect_uri_matches(r, uri)) =>
        {
            (uri.clone(), true)
        }
        Some(_) => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "The redirect URI is not registered for this client.",
            );
        }
        None if client.redirect_uris.len() == 1 => (client.redirect_uris[0].clone(), false),
        None => return error_page(StatusCode::BAD_REQUEST, "The request has no redirect_uri."),
    };
    let state = p.get("state").map(String::as_str);
    let fail = |error: &str, description: &str| {
        s.error_redirect(StatusCode::FOUND, &redirect_uri, state, error, description)
    };
    if !dup.is_empty() {
        return fail("invalid_request", "a parameter was given more than once");
    }
    if p.get("response_type").map(String::as_str) != Some("code") {
        return fail(
            "unsupported_response_type",
            "only response_type=code is supported",
        );
    }
    if !client.grant_types.iter().any(|g| g == "authorization_code") {
        return fail(
            "unauthorized_client",
            "the client may not use the authorization code grant",
        );
    }
    let Some(challenge) = p.get("code_challenge") else {
        return fail("invalid_request", "code_challenge is required (PKCE)");
    };
    if p.get("code_challenge_method").map(String::as_str) != Some("S256") {
        return fail("invalid_request", "code_challenge_method must be S256");
    }
    if challenge.len() != 43
        || !challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return fail("invalid_request", "malformed code_challenge");
    }
    let scope = match s.check_scope(p.get("scope").map(String::as_str)) {
        Ok(scope) => scope,
        Err(e) => return fail(e.error, &e.description),
    };
    let resource = p.get("resource").cloned();
    if let Some(r) = &resource
        && let Err(e) = s.check_resource(r)
    {
        return fail(e.error, &e.description);
    }
    let req = PendingRequest {
        csrf: util::random_token(),
        client_id: client.client_id.clone(),
        redirect_uri: redirect_uri.clone(),
        redirect_uri_given: given,
        state: state.map(str::to_owned),
        scope,
        resource,
        code_challenge: challenge.clone(),
        expires: util::now() + s.inner.config.login_lifetime.as_secs() as i64,
    };
    if let Some(user) = &s.inner.config.auto_approve_as_user_for_testing {
        tracing::debug!("authorization server: request approved automatically (test mode)");
        return s.approve(StatusCode::FOUND, &req, user);
    }
    let id = util::random_token();
    match s
        .inner
        .store
        .put_pending(&id, &req, s.inner.config.max_pending_requests)
    {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!("authorization server: too many authorization requests waiting");
            return fail(
                "temporarily_unavailable",
                "too many authorization requests are waiting; try again later",
            );
        }
        Err(e) => {
            tracing::warn!("authorization server: {e}");
            return fail("server_error", "internal error");
        }
    }
    s.login_page(&id, &req, &client, None)
}

/// `POST /authorize`: the login and consent form.
pub(super) async fn post_authorize(State(s): State<AuthorizationServer>, body: Bytes) -> Response {
    let Some(f) = util::parse_form(&body) else {
        return error_page(StatusCode::BAD_REQUEST, "Malformed form.");
    };
    let (Some(id), Some(csrf)) = (f.get("request_id"), f.get("csrf_token")) else {
        return error_page(StatusCode::BAD_REQUEST, "Malformed form.");
    };
    let req = match s.inner.store.pending(id) {
        Ok(Some(r)) => r,
        Ok(None) => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "This authorization request has expired. Start again from the application.",
            );
        }
        Err(e) => {
            tracing::warn!("authorization server: {e}");
            return error_page(StatusCode::INTERNAL_SERVER_ERROR, "Internal error.");
        }
    };
    if !util::ct_eq(csrf, &req.csrf) {
        return error_page(
            StatusCode::FORBIDDEN,
            "The form is not valid for this request.",
        );
    }
    if f.get("action").map(String::as_str) == Some("deny") {
        let _ = s.inner.store.take_pending(id);
        return s.error_redirect(
            StatusCode::SEE_OTHER,
            &req.redirect_uri,
            req.state.as_deref(),
            "access_denied",
            "the user denied the request",
        );
    }
    let username = f.get("username").map(String::as_str).unwrap_or("");
    let password = f.get("password").map(String::as_str).unwrap_or("");
    if let Some(wait) = s.inner.limits.user_locked(username) {
        tracing::debug!("authorization server: login refused, too many failures for the name");
        let page = error_page(
            StatusCode::TOO_MANY_REQUESTS,
            &format!(
                "Too many failed sign-ins for this user name. Wait {} and try again \
                 from the application.",
                limits::in_words(wait)
            ),
        );
        return limits::with_retry_after(page, wait);
    }
    if !s.check_user(username, password).await {
        tracing::debug!("authorization server: login failed");
        s.inner.limits.login_failed(username);
        match s.inner.store.login_failed(id) {
            Ok(n) if n < MAX_LOGIN_ATTEMPTS => {}
            Ok(_) => {
                let _ = s.inner.store.take_pending(id);
                return error_page(
                    StatusCode::FORBIDDEN,
                    "Too many failed attempts. Start again from the application.",
                );
            }
            Err(e) => {
                tracing::warn!("authorization server: {e}");
                return error_page(StatusCode::INTERNAL_SERVER_ERROR, "Internal error.");
            }
        }
        let client = match s.resolve_client(&req.client_id).await {
            Ok(Some(c)) => c,
            _ => return error_page(StatusCode::BAD_REQUEST, "Unknown client."),
        };
        let mut resp = s.login_page(id, &req, &client, Some("Invalid user name or password."));
        *resp.status_mut() = StatusCode::UNAUTHORIZED;
        return resp;
    }
    match s.inner.store.take_pending(id) {
        Ok(true) => s.approve(StatusCode::SEE_OTHER, &req, username),
        Ok(false) => error_page(
            StatusCode::BAD_REQUEST,
            "This authorization request was already answered.",
        ),
        Err(e) => {
            tracing::warn!("authorization server: {e}");
            error_page(StatusCode::INTERNAL_SERVER_ERROR, "Internal error.")
        }
    }
}
