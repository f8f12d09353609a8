//! Who may use the console: a person shows the admin token once, on the
//! sign-in page, and gets a session cookie (`HttpOnly`, `SameSite=Strict`,
//! scoped to `/console`); every change also carries the session's CSRF
//! token, in the `X-CSRF-Token` header (which htmx sends from the page) or
//! a `csrf` form field. Host and Origin are checked by the admin
//! listener's guard before any of this.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use http::{HeaderMap, Method, StatusCode, header};
use mcp_core::sync::MutexExt as _;
use subtle::ConstantTimeEq as _;

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
}

fn random_token() -> String {
    format!("{:032x}", rand::random::<u128>())
}

impl Sessions {
    /// A new session: its id (the cookie's value).
    pub(crate) fn open(&self) -> String {
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
        let session = Session {
            csrf: random_token(),
            ends: now + SESSION_LIFE,
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

/// Whether htmx sent the request (it wants a fragment, not a redirect).
fn is_htmx(headers: &HeaderMap) -> bool {
    headers.contains_key("hx-request")
}
