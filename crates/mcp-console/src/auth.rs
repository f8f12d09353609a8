//! Who may use the console: a person shows the admin token once, on the
//! sign-in page, and gets a session cookie (`HttpOnly`, `SameSite=Strict`,
//! scoped to `/console`); every change also carries the session's CSRF
//! token, in the `X-CSRF-Token` header (which htmx sends from the page) or
//! a `csrf` form field. Host and Origin are checked by the admin
//! listener's guard before any of this.
//!
//! A person may instead sign in through the host's authorization server
//! ([`crate::sign_in`]): their session is theirs (their principal is the
//! caller of what they run, they see what the policy shows them, and
//! the operator's pages, which need the admin token, are closed to them).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::Extension;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use http::{HeaderMap, Method, StatusCode, header};
use mcp_auth::Principal;
use mcp_client::Client;
use mcp_core::sync::MutexExt as _;
use mcp_host::policy::Caller;
use subtle::ConstantTimeEq as _;
use tokio::sync::OnceCell;

use crate::Console;

/// The session cookie's name.
pub(crate) const COOKIE: &str = "mcp_console";
/// The header that carries the CSRF token.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";
/// How long a session lasts.
const SESSION_LIFE: Duration = Duration::from_secs(12 * 3600);
/// The most sessions kept; the oldest goes first.
const MAX_SESSIONS: usize = 64;

/// The signed-in browsers: session id to its CSRF token and end.
#[derive(Default)]
pub(crate) struct Sessions {
    by_id: Mutex<HashMap<String, Session>>,
}

#[derive(Clone)]
pub(crate) struct Session {
    /// The token every change must carry.
    pub(crate) csrf: String,
    ends: Instant,
    /// The person signed in through the authorization server; `None`: the
    /// operator, who showed the admin token.
    pub(crate) user: Option<Arc<Principal>>,
    /// That person's MCP client of the host, connected on first use and
    /// closed with the session.
    pub(crate) client: Arc<OnceCell<Client>>,
}

impl Session {
    /// The caller the policy decides for, for a signed-in person.
    pub(crate) fn caller(&self) -> Option<Caller> {
        (self.user.clone()).map(|user| Caller::signed_in(user, Some("mcp-console".to_owned())))
    }

    /// Whose calls are this session's: the signed-in person's key; `None`
    /// for the operator, who sees every call.
    pub(crate) fn owner(&self) -> Option<String> {
        (self.user.as_ref()).map(|user| user.owner().as_str().to_owned())
    }

    /// The signed-in person's name, for the page.
    pub(crate) fn name(&self) -> Option<String> {
        let user = self.user.as_ref()?;
        let claim = |key: &str| user.claims.get(key).and_then(|v| v.as_str());
        let name = (claim("preferred_username").or(claim("name")))
            .or(user.subject.as_deref())
            .unwrap_or("someone");
        Some(name.to_owned())
    }
}

fn random_token() -> String {
    format!("{:032x}", rand::random::<u128>())
}

impl Sessions {
    /// A new session, the operator's or `user`'s: its id (the cookie's
    /// value). A user's ends when their token does, if that is sooner.
    pub(crate) fn open(&self, user: Option<Arc<Principal>>) -> String {
        let id = random_token();
        let mut sessions = self.by_id.locked();
        let now = Instant::now();
        sessions.retain(|_, s| s.ends > now);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, s)| s.ends)
                .map(|(id, _)| id.clone())
        {
            sessions.remove(&oldest);
        }
        let token_left = (user.as_ref())
            .and_then(|user| user.expires_at)
            .map(|at| at.duration_since(SystemTime::now()).unwrap_or_default());
        let life = token_left.map_or(SESSION_LIFE, |left| left.min(SESSION_LIFE));
        let session = Session {
            csrf: random_token(),
            ends: now + life,
            user,
            client: Arc::default(),
        };
        sessions.insert(id.clone(), session);
        id
    }

    /// The live session the request's cookie names.
    pub(crate) fn of(&self, headers: &HeaderMap) -> Option<Session> {
        let id = cookie(headers, COOKIE)?;
        let sessions = self.by_id.locked();
        sessions
            .get(id)
            .filter(|s| s.ends > Instant::now())
            .cloned()
    }

    /// Ends the session the request's cookie names.
    pub(crate) fn close(&self, headers: &HeaderMap) {
        if let Some(id) = cookie(headers, COOKIE) {
            self.by_id.locked().remove(id);
        }
    }
}

/// The value of cookie `name` in the request's `Cookie` headers.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// Whether `given` is the admin token.
pub(crate) fn is_token(console: &Console, given: &str) -> bool {
    bool::from(
        given
            .trim()
            .as_bytes()
            .ct_eq(console.inner.token.as_bytes()),
    )
}

/// The `Set-Cookie` value of session `id`.
pub(crate) fn session_cookie(id: &str) -> String {
    format!(
        "{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/console; Max-Age={}",
        SESSION_LIFE.as_secs()
    )
}

/// The `Set-Cookie` value that ends the session in the browser.
pub(crate) fn cleared_cookie() -> String {
    format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/console; Max-Age=0")
}

/// Lets through a request of a signed-in browser (and, for a change, one
/// with its CSRF token); sends others to sign in, or refuses them.
pub(crate) async fn require_session(
    State(console): State<Console>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(session) = console.inner.sessions.of(request.headers()) else {
        if request.method() == Method::GET && !is_htmx(request.headers()) {
            return Redirect::to("/console/login").into_response();
        }
        return (StatusCode::UNAUTHORIZED, "sign in to the console first").into_response();
    };
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let given = request
            .headers()
            .get(CSRF_HEADER)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if !bool::from(given.as_bytes().ct_eq(session.csrf.as_bytes())) {
            return (
                StatusCode::FORBIDDEN,
                "this change lacks the console's CSRF token; reload the page",
            )
                .into_response();
        }
    }
    request.extensions_mut().insert(session);
    next.run(request).await
}

/// Lets through the operator (signed in with the admin token) only.
pub(crate) async fn require_operator(
    Extension(session): Extension<Session>,
    request: Request,
    next: Next,
) -> Response {
    if session.user.is_some() {
        return (
            StatusCode::FORBIDDEN,
            "this part of the console is the operator's: sign in with the admin token",
        )
            .into_response();
    }
    next.run(request).await
}

/// Whether htmx sent the request (it wants a fragment, not a redirect).
fn is_htmx(headers: &HeaderMap) -> bool {
    headers.contains_key("hx-request")
}
