//! Console users who sign in through the host's authorization server
//! (`mcp host --oauth`, or the one `--oauth-issuer` names) instead of
//! showing the admin token. The console is an OAuth client of the host's
//! own MCP endpoint, as any client is ([`mcp_auth::client::OAuthClient`]:
//! discovery, registration, PKCE, the resource indicator): the browser
//! goes to the authorization server, the person signs in there, and comes
//! back to `/console/login/callback`, where the console takes the token,
//! validates it as the endpoint does, and opens a session for its
//! principal. That person's requests then go through the host as that
//! caller, and the console shows them only what the policy lets them see.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use http::{HeaderMap, StatusCode, header};
use mcp_auth::client::{
    Callback, Credentials, OAuthClient, OAuthClientConfig, OAuthError, Registration, TokenStore,
    Tokens, UserAgent, UserAgentFuture,
};
use mcp_auth::{Principal, TokenValidator};
use mcp_core::sync::MutexExt as _;
use tokio::sync::oneshot;
use url::Url;

use crate::{Console, auth, layout};

/// How long the authorization server has to say where to send the
/// browser (discovery and registration happen first).
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a person has to sign in at the authorization server.
const PENDING_LIFE: Duration = Duration::from_secs(600);
/// The most sign-ins under way; the oldest is dropped beyond it.
const MAX_PENDING: usize = 32;
/// How long the token exchange may take once the browser is back.
const FINISH_TIMEOUT: Duration = Duration::from_secs(30);

/// How console users sign in: the host's MCP endpoint, whose tokens they
/// get, and how that endpoint validates them.
pub struct SignIn {
    resource: String,
    validator: Arc<dyn TokenValidator>,
    registrations: Arc<Registrations>,
    pending: Mutex<HashMap<String, Pending>>,
}

impl SignIn {
    /// Sign-in for the protected MCP endpoint `resource` (its URL), whose
    /// tokens `validator` checks.
    pub fn new(resource: impl Into<String>, validator: Arc<dyn TokenValidator>) -> SignIn {
        SignIn {
            resource: resource.into(),
            validator,
            registrations: Arc::default(),
            pending: Mutex::default(),
        }
    }
}

/// A sign-in waiting for the browser to come back.
struct Pending {
    callback: oneshot::Sender<Callback>,
    done: oneshot::Receiver<Result<Principal, String>>,
    started: Instant,
}

/// The console's registrations with authorization servers, by issuer,
/// shared by every sign-in (the tokens are each sign-in's own).
#[derive(Default)]
struct Registrations(Mutex<BTreeMap<String, Registration>>);

/// One sign-in's store: the shared registration, its own tokens.
struct OneSignIn {
    registrations: Arc<Registrations>,
    tokens: Mutex<BTreeMap<String, Tokens>>,
}

impl TokenStore for OneSignIn {
    fn load(&self, issuer: &str) -> Result<Credentials, OAuthError> {
        let mut credentials = Credentials::default();
        credentials.registration = self.registrations.0.locked().get(issuer).cloned();
        credentials.tokens = self.tokens.locked().get(issuer).cloned();
        Ok(credentials)
    }

    fn save(&self, issuer: &str, credentials: &Credentials) -> Result<(), OAuthError> {
        if let Some(registration) = &credentials.registration {
            (self.registrations.0.locked()).insert(issuer.to_owned(), registration.clone());
        }
        match &credentials.tokens {
            Some(tokens) => self
                .tokens
                .locked()
                .insert(issuer.to_owned(), tokens.clone()),
            None => self.tokens.locked().remove(issuer),
        };
        Ok(())
    }
}

/// The authorization URL, and where the browser's return is to be sent.
type Shown = (Url, oneshot::Sender<Callback>);

/// The person's browser: the authorization URL is handed to the request
/// that started the sign-in (which redirects there), and the query of
/// the browser's return is awaited.
struct Browser {
    redirect_uri: String,
    shown: Mutex<Option<oneshot::Sender<Shown>>>,
}

impl UserAgent for Browser {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize(&self, url: Url) -> UserAgentFuture<'_> {
        Box::pin(async move {
            let (callback, back) = oneshot::channel();
            let shown = self.shown.locked().take();
            let sent = shown.is_some_and(|shown| shown.send((url, callback)).is_ok());
            if !sent {
                return Err(OAuthError::Authorization(
                    "the sign-in was abandoned".to_owned(),
                ));
            }
            // A person who never comes back ends the flow when the
            // sign-in expires, so that nothing waits for them after.
            match tokio::time::timeout(PENDING_LIFE, back).await {
                Ok(Ok(callback)) => Ok(callback),
                _ => Err(OAuthError::Authorization(
                    "the browser did not come back in time".to_owned(),
                )),
            }
        })
    }
}

/// `GET /console/login/oauth`: sends the browser to the authorization
/// server.
pub(crate) async fn start(State(console): State<Console>, headers: HeaderMap) -> Response {
    let Some(sign_in) = console.inner.sign_in.as_ref() else {
        return (
            StatusCode::NOT_FOUND,
            "this host has no sign-in (mcp host --oauth)",
        )
            .into_response();
    };
    let Some(origin) = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(|host| format!("http://{host}"))
    else {
        return (StatusCode::BAD_REQUEST, "no Host header").into_response();
    };
    let (shown, shown_back) = oneshot::channel();
    let browser = Arc::new(Browser {
        redirect_uri: format!("{origin}/console/login/callback"),
        shown: Mutex::new(Some(shown)),
    });
    let store = Arc::new(OneSignIn {
        registrations: Arc::clone(&sign_in.registrations),
        tokens: Mutex::default(),
    });
    let config = OAuthClientConfig::new("mcp host console", browser).store(store);
    let client = match OAuthClient::new(&sign_in.resource, config) {
        Ok(client) => client,
        Err(error) => return refused(&console, &error.to_string()),
    };
    let validator = Arc::clone(&sign_in.validator);
    let (finished, done) = oneshot::channel();
    tokio::spawn(async move {
        let outcome = match client.authorize(None).await {
            Ok(()) => match client.tokens().await {
                Some(tokens) => (validator.validate(&tokens.access_token).await)
                    .map_err(|e| format!("the token was not accepted: {e}")),
                None => Err("the authorization server issued no token".to_owned()),
            },
            Err(error) => Err(error.to_string()),
        };
        let _ = finished.send(outcome);
    });
    let (url, callback) = match tokio::time::timeout(START_TIMEOUT, shown_back).await {
        Ok(Ok(shown)) => shown,
        _ => {
            let why = match done.await {
                Ok(Err(why)) => why,
                _ => "the authorization server did not answer".to_owned(),
            };
            return refused(&console, &why);
        }
    };
    let Some(state) = url
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
    else {
        return refused(&console, "the authorization URL has no state");
    };
    let mut pending = sign_in.pending.locked();
    pending.retain(|_, p| p.started.elapsed() < PENDING_LIFE);
    if pending.len() >= MAX_PENDING
        && let Some(oldest) = (pending.iter())
            .min_by_key(|(_, p)| p.started)
            .map(|(state, _)| state.clone())
    {
        pending.remove(&oldest);
    }
    pending.insert(
        state,
        Pending {
            callback,
            done,
            started: Instant::now(),
        },
    );
    Redirect::to(url.as_str()).into_response()
}

/// `GET /console/login/callback?code=...&state=...`: the browser back from
/// the authorization server; a session for the person it signed in.
pub(crate) async fn callback(
    State(console): State<Console>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let Some(sign_in) = console.inner.sign_in.as_ref() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let pending = (query.get("state")).and_then(|state| sign_in.pending.locked().remove(state));
    let Some(pending) = pending else {
        return refused(
            &console,
            "this sign-in is not under way (it ended or expired)",
        );
    };
    if pending.callback.send(query).is_err() {
        return refused(&console, "the sign-in ended before the browser came back");
    }
    let principal = match tokio::time::timeout(FINISH_TIMEOUT, pending.done).await {
        Ok(Ok(Ok(principal))) => principal,
        Ok(Ok(Err(why))) => return refused(&console, &why),
        _ => return refused(&console, "the token exchange did not finish"),
    };
    let id = console.inner.sessions.open(Some(Arc::new(principal)));
    (
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, auth::session_cookie(&id)),
            (header::LOCATION, "/console/catalog".to_owned()),
        ],
    )
        .into_response()
}

/// The sign-in page, saying why signing in failed.
fn refused(console: &Console, why: &str) -> Response {
    let offered = console.inner.sign_in.is_some();
    (
        StatusCode::UNAUTHORIZED,
        layout::sign_in(Some(&format!("Could not sign in: {why}")), offered),
    )
        .into_response()
}
