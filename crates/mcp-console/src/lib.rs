//! The web console of `mcp host`: one page where a person sees and
//! controls the host. Served on the admin listener under `/console`.
//!
//! - **Servers**: each upstream's state, era and revision, what it lists,
//!   its restarts and last error, updated live; restart one.
//! - **Catalog**: every tool, prompt and resource template, searched; a
//!   tool run from a form made from its input schema, a prompt rendered
//!   with its arguments, a template read with its variables filled in.
//!   These go through the host's own gateway, so policy, consent, limits
//!   and the audit apply to them as to any client's. A call shows its
//!   progress and can be cancelled.
//! - **Approvals**: the requests the policy marks `ask`, when `console` is
//!   among `[guard] approvers`: allowed once, for the session or always,
//!   with arguments edited, or denied; the servers' questions no client
//!   can answer (`questions`); and what servers ask the host's model,
//!   edited, sent or refused, and its reply given to the server or not
//!   (`review`). The queue updates live.
//! - **History**: the console's calls with their requests, results,
//!   timing, and the policy's decision and rule; run again.
//! - **Audit**: the audit records searched, and exported as JSON lines.
//!
//! Pages are rendered on the server ([`maud`]) and made live with htmx
//! and its SSE extension, both embedded (the console works offline).
//! Security: the admin token, shown once, is exchanged for a session
//! cookie (`HttpOnly`, `SameSite=Strict`); every change carries the
//! session's CSRF token; the admin listener checks Host and Origin.
//!
//! A browser request meets, in order: the admin listener's check of Host and
//! Origin (in `mcp host`); [`Console::router`] in `lib.rs`, whose sign-in
//! routes are open (`/console/login` takes the admin token, `sign_in` the
//! host's authorization server) beside the embedded assets; `auth` on every
//! other route, which finds the session by its cookie, checks the CSRF token
//! of every change, and keeps the operator's pages from people signed in as
//! themselves; then the page, framed by `layout`: `servers` (the upstreams
//! and their actions) and `server` (one server's page); `catalog`, with forms
//! made by `form`, whose runs go through `calls` to the host's gateway
//! (polled until they end, cancellable) and are listed in `history`; `queue`,
//! the approvals page, which shows and answers what waits in `approvals` (the
//! [`ConsoleApprover`]), `questions` and `review`; `metrics` and `audit`,
//! both read from the audit log. `events` streams what changed, so that each
//! page fetches again what it shows.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Extension, Form, Router};
use http::{HeaderMap, StatusCode, header};
use maud::html;
use mcp_client::Client;
use mcp_host::{Gateway, Host};
use serde::Deserialize;
use serde_json::Value;

mod approvals;
mod audit;
mod auth;
mod calls;
mod catalog;
mod events;
mod form;
mod history;
mod layout;
mod metrics;
mod questions;
mod queue;
mod review;
mod server;
mod servers;
mod sign_in;

pub use approvals::{ConsoleApprover, NAME as APPROVER_NAME};
pub use sign_in::SignIn;

/// The console of one host.
#[derive(Clone)]
pub struct Console {
    inner: Arc<Inner>,
}

struct Inner {
    host: Host,
    gateway: Gateway,
    token: String,
    approver: Arc<ConsoleApprover>,
    sessions: auth::Sessions,
    calls: Arc<calls::Calls>,
    client: tokio::sync::OnceCell<Client>,
    /// How people sign in through the host's authorization server, where
    /// it has one.
    sign_in: Option<SignIn>,
}

impl Console {
    /// The console of `host`, whose requests go through `gateway`, for
    /// people who know the admin `token`; `approver` is the one registered
    /// with the host's consent options (see [`ConsoleApprover`]); with
    /// `sign_in`, people may also sign in through the host's
    /// authorization server (see [`SignIn`]).
    pub fn new(
        host: Host,
        gateway: Gateway,
        token: &str,
        approver: Arc<ConsoleApprover>,
        sign_in: Option<SignIn>,
    ) -> Console {
        Console {
            inner: Arc::new(Inner {
                host,
                gateway,
                token: token.to_owned(),
                approver,
                sessions: auth::Sessions::default(),
                calls: Arc::default(),
                client: tokio::sync::OnceCell::new(),
                sign_in,
            }),
        }
    }

    /// Its routes, under `/console`.
    pub fn router(&self) -> Router {
        // The operator's pages: they need the admin token.
        let operator = Router::new()
            .route("/console/servers", get(servers::fragment))
            .route("/console/servers/{name}", get(server::view))
            .route("/console/servers/restart", post(servers::restart))
            .route("/console/servers/trust", post(servers::trust))
            .route("/console/servers/disable", post(servers::disable))
            .route("/console/servers/enable", post(servers::enable))
            .route("/console/approvals", get(queue::view))
            .route("/console/approvals/queue", get(queue::fragment))
            .route("/console/approvals/answer", post(queue::answer))
            .route("/console/approvals/question", post(queue::answer_question))
            .route("/console/approvals/sampling", post(queue::answer_sampling))
            .route("/console/metrics", get(metrics::view))
            .route("/console/audit", get(audit::view))
            .route("/console/audit/rows", get(audit::fragment))
            .route("/console/audit.jsonl", get(audit::export))
            .route_layer(axum::middleware::from_fn(auth::require_operator));
        // What everyone signed in uses, each as themselves.
        let signed_in = Router::new()
            .route("/console", get(servers::view))
            .route("/console/catalog", get(catalog::view))
            .route("/console/catalog/rows", get(catalog::fragment))
            .route("/console/tool", get(catalog::tool))
            .route("/console/tool/call", post(catalog::call_tool))
            .route("/console/prompt", get(catalog::prompt))
            .route("/console/prompt/get", post(catalog::get_prompt))
            .route("/console/template", get(catalog::template))
            .route("/console/template/read", post(catalog::read_template))
            .route("/console/template/complete", get(catalog::complete))
            .route("/console/calls/{id}", get(call))
            .route("/console/calls/cancel", post(cancel))
            .route("/console/history", get(history::view))
            .route("/console/history/again", post(history::again))
            .route("/console/events", get(events::stream))
            .route("/console/logout", post(logout))
            .merge(operator)
            .route_layer(axum::middleware::from_fn_with_state(
                self.clone(),
                auth::require_session,
            ));
        Router::new()
            .route("/console/login", get(sign_in_page).post(sign_in))
            .route("/console/login/oauth", get(sign_in::start))
            .route("/console/login/callback", get(sign_in::callback))
            .route("/console/assets/{file}", get(asset))
            .merge(signed_in)
            .with_state(self.clone())
    }

    /// The MCP client of the gateway `session` makes its requests with:
    /// the operator's (anonymous, client `mcp-console`), or a signed-in
    /// person's own, whose requests carry their principal.
    async fn client(&self, session: &auth::Session) -> Result<Client, String> {
        match &session.user {
            None => (self.inner.client)
                .get_or_try_init(|| self.connect(None))
                .await
                .cloned(),
            Some(user) => (session.client)
                .get_or_try_init(|| self.connect(Some(user)))
                .await
                .cloned(),
        }
    }

    /// A new in-process client of the gateway, speaking for `user`.
    async fn connect(&self, user: Option<&Arc<mcp_auth::Principal>>) -> Result<Client, String> {
        let calls = Arc::clone(&self.inner.calls);
        let observer: mcp_host::DecisionObserver =
            Arc::new(move |meta, decided| calls.decided(meta, decided));
        let gateway = self.inner.gateway.clone().observed(observer);
        let extensions = user.map(|user| {
            let extensions = mcp_core::Extensions::default();
            extensions.insert(user.owner());
            extensions.insert((**user).clone());
            Arc::new(extensions)
        });
        let (server_side, client_side) = mcp_core::Transport::pair_attaching(extensions);
        let config = gateway.session_config();
        // The session ends when the client is dropped (with the console
        // session it belongs to), or with the host's process.
        let _session = mcp_core::serve(server_side, Arc::new(gateway), config);
        Client::builder("mcp-console", env!("CARGO_PKG_VERSION"))
            .connect(client_side)
            .await
            .map_err(|e| format!("the console could not reach the host: {e}"))
    }

    /// Starts a request for `session` and answers with its view (polled
    /// until it ends).
    async fn start(
        &self,
        session: &auth::Session,
        method: &'static str,
        what: String,
        params: Value,
    ) -> Response {
        let client = match self.client(session).await {
            Ok(client) => client,
            Err(why) => return (StatusCode::SERVICE_UNAVAILABLE, why).into_response(),
        };
        let calls = &self.inner.calls;
        let id = calls.start(client, session.owner(), method, what, params);
        match calls.get(id, session) {
            Some(call) => calls::view(id, &call).into_response(),
            None => StatusCode::NOT_FOUND.into_response(),
        }
    }
}

/// `GET /console/calls/ID`: where a call is now.
async fn call(
    State(console): State<Console>,
    Extension(session): Extension<auth::Session>,
    axum::extract::Path(id): axum::extract::Path<u64>,
) -> Response {
    match console.inner.calls.get(id, &session) {
        Some(call) => calls::status(id, &call).into_response(),
        None => (StatusCode::NOT_FOUND, "that call is no longer kept").into_response(),
    }
}

#[derive(Deserialize)]
struct CallId {
    id: u64,
}

/// `POST /console/calls/cancel`, `id=ID`.
async fn cancel(
    State(console): State<Console>,
    Extension(session): Extension<auth::Session>,
    Form(asked): Form<CallId>,
) -> Response {
    console.inner.calls.cancel(asked.id, &session);
    call(
        State(console),
        Extension(session),
        axum::extract::Path(asked.id),
    )
    .await
}

/// `GET /console/login`.
async fn sign_in_page(State(console): State<Console>, headers: HeaderMap) -> Response {
    if console.inner.sessions.of(&headers).is_some() {
        return Redirect::to("/console").into_response();
    }
    layout::sign_in(None, console.inner.sign_in.is_some()).into_response()
}

#[derive(Deserialize)]
struct TokenForm {
    token: String,
}

/// `POST /console/login`, `token=...`: a session cookie for the admin
/// token.
async fn sign_in(State(console): State<Console>, Form(form): Form<TokenForm>) -> Response {
    if !auth::is_token(&console, &form.token) {
        let offered = console.inner.sign_in.is_some();
        let wrong = layout::sign_in(Some("That is not the admin token."), offered);
        return (StatusCode::UNAUTHORIZED, wrong).into_response();
    }
    let id = console.inner.sessions.open(None);
    (
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, auth::session_cookie(&id)),
            (header::LOCATION, "/console".to_owned()),
        ],
    )
        .into_response()
}

/// `POST /console/logout`.
async fn logout(
    State(console): State<Console>,
    headers: HeaderMap,
    Extension(_): Extension<auth::Session>,
) -> Response {
    console.inner.sessions.close(&headers);
    (
        StatusCode::OK,
        [
            (header::SET_COOKIE, auth::cleared_cookie()),
            (
                http::HeaderName::from_static("hx-redirect"),
                "/console/login".to_owned(),
            ),
        ],
        html! { "Signed out." },
    )
        .into_response()
}

/// `GET /console/assets/FILE`: the embedded script and style files.
async fn asset(axum::extract::Path(file): axum::extract::Path<String>) -> Response {
    let (body, kind): (&'static str, &str) = match file.as_str() {
        "htmx.min.js" => (include_str!("../assets/htmx.min.js"), "text/javascript"),
        "sse.min.js" => (include_str!("../assets/sse.min.js"), "text/javascript"),
        "console.css" => (include_str!("../assets/console.css"), "text/css"),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        body,
    )
        .into_response()
}
