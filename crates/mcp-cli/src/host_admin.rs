//! `mcp host`'s routes for operators: `/status` (JSON, for people and
//! scripts), `/healthz` (for load balancers), `/metrics` (Prometheus),
//! `POST /servers/NAME/restart` (`mcp host restart NAME`),
//! `POST /servers/NAME/trust` (`mcp host trust NAME`),
//! `POST /servers/NAME/disable` and `.../enable` (`mcp host disable|enable
//! NAME`) and
//! the web console (`/console`, see [`mcp_console`]), served on the admin
//! listener (`[admin] http`, `--admin`), an address of
//! its own that exists whether the host serves its clients over HTTP or
//! stdio; `/status` and `/healthz` are also served beside the MCP endpoint.
//!
//! The admin listener checks Host and Origin as the MCP endpoint does, and
//! wants its bearer token on everything but `/healthz` (the console takes
//! it once, on its sign-in page, for a session cookie).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Result;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use mcp_host::settings::AdminSettings;
use mcp_host::{Host, UpstreamState};
use subtle::ConstantTimeEq as _;

use crate::serve::{Extra, bind};
use crate::stderr::print_err;

/// The environment variable that gives the admin listener's token.
const TOKEN_VARIABLE: &str = "MCP_ADMIN_TOKEN";

/// The content type of the OpenMetrics text format, which Prometheus reads.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `/status` as a router.
fn status(host: &Host) -> axum::Router {
    let host = host.clone();
    axum::Router::new().route(
        "/status",
        get(move || {
            let host = host.clone();
            async move {
                let body = serde_json::to_string(&host.status()).unwrap_or_default();
                ([(http::header::CONTENT_TYPE, "application/json")], body)
            }
        }),
    )
}

/// `/healthz` as a router: 200 while at least one server is ready or none
/// is configured, 503 otherwise.
fn health(host: &Host) -> axum::Router {
    let host = host.clone();
    axum::Router::new().route(
        "/healthz",
        get(move || {
            let host = host.clone();
            async move {
                let servers = host.status().servers;
                let healthy = servers.is_empty()
                    || servers
                        .iter()
                        .any(|s| matches!(s.state, UpstreamState::Ready | UpstreamState::Degraded));
                if healthy {
                    (http::StatusCode::OK, "ok")
                } else {
                    (http::StatusCode::SERVICE_UNAVAILABLE, "no server is ready")
                }
            }
        }),
    )
}

/// `/metrics` as a router: every counter and the servers' state, read
/// at each scrape.
fn metrics(host: &Host) -> axum::Router {
    let host = host.clone();
    axum::Router::new().route(
        "/metrics",
        get(move || {
            let host = host.clone();
            async move {
                let body = host.metrics().encode();
                ([(http::header::CONTENT_TYPE, OPENMETRICS)], body)
            }
        }),
    )
}

/// `POST /servers/NAME/ACTION` as a router, doing `act` to the server
/// NAME: 204 once done, 404 with the reason where it cannot be (a name
/// not in the config, or not waiting for trust).
fn server_action(
    host: &Host,
    action: &str,
    act: fn(&Host, &str) -> Result<(), String>,
) -> axum::Router {
    let host = host.clone();
    axum::Router::new().route(
        &format!("/servers/{{name}}/{action}"),
        axum::routing::post(
            move |axum::extract::Path(name): axum::extract::Path<String>| {
                let host = host.clone();
                async move {
                    match act(&host, &name) {
                        Ok(()) => (http::StatusCode::NO_CONTENT, String::new()),
                        Err(why) => (http::StatusCode::NOT_FOUND, why),
                    }
                }
            },
        ),
    )
}

/// The routes served beside the MCP endpoint: `/status` behind its
/// Host/Origin checks (and its OAuth, where it has one), `/healthz` open.
pub fn endpoint_routes(host: &Host) -> Extra {
    Extra {
        guarded: Some(status(host)),
        open: Some(health(host)),
        endpoints: Vec::new(),
    }
}

/// The admin listener's address: the flag's, else the settings file's.
pub fn address(flag: Option<SocketAddr>, settings: &AdminSettings) -> Option<SocketAddr> {
    flag.or(settings.http)
}

/// The token the admin listener wants, and whether it was made up here
/// (and so must be shown): the settings file's, else the environment's,
/// else a random one.
fn token(settings: &AdminSettings) -> (String, bool) {
    if let Some(token) = settings.token.clone().filter(|t| !t.is_empty()) {
        return (token, false);
    }
    match std::env::var(TOKEN_VARIABLE) {
        Ok(token) if !token.is_empty() => (token, false),
        _ => (format!("{:032x}", rand::random::<u128>()), true),
    }
}

/// Lets a request through only with `Authorization: Bearer TOKEN`.
async fn require_token(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .unwrap_or_default();
    if bool::from(given.as_bytes().ct_eq(token.as_bytes())) {
        return next.run(request).await;
    }
    let mut response = (
        http::StatusCode::UNAUTHORIZED,
        "the admin listener wants its token: Authorization: Bearer TOKEN",
    )
        .into_response();
    response.headers_mut().insert(
        http::header::WWW_AUTHENTICATE,
        http::HeaderValue::from_static("Bearer"),
    );
    response
}

/// Binds the admin listener on `addr` (so that a busy port fails before
/// any server starts); [`Admin::serve`] serves it.
pub async fn bind_admin(addr: SocketAddr, settings: &AdminSettings) -> Result<Admin> {
    let listener = bind(addr).await?;
    let (token, made_up) = token(settings);
    Ok(Admin {
        listener,
        token,
        made_up,
    })
}

/// A bound admin listener.
pub struct Admin {
    listener: tokio::net::TcpListener,
    token: String,
    made_up: bool,
}

impl Admin {
    /// Says where it is (and its token, where it was made up here), then
    /// serves `host`'s routes until the task is aborted. `allow` are the
    /// Host names and Origins accepted beyond loopback; `approver` is the
    /// console's, registered with the host; with `sign_in`, people may
    /// sign in to the console through the host's authorization server.
    pub fn serve(
        self,
        host: &Host,
        allow: &[String],
        approver: Arc<mcp_console::ConsoleApprover>,
        sign_in: Option<mcp_console::SignIn>,
    ) -> Result<tokio::task::JoinHandle<()>> {
        let local = self.listener.local_addr()?;
        let policy = Arc::new(crate::serve::origin_policy(local.port(), allow));
        let token: Arc<str> = Arc::from(self.token.as_str());
        let protected = status(host)
            .merge(metrics(host))
            .merge(server_action(host, "restart", Host::restart))
            .merge(server_action(host, "trust", Host::trust))
            .merge(server_action(host, "disable", Host::disable))
            .merge(server_action(host, "enable", Host::enable))
            .layer(axum::middleware::from_fn_with_state(token, require_token));
        let gateway = mcp_host::Gateway::new(host.clone(), "mcp-host", env!("CARGO_PKG_VERSION"));
        let console =
            mcp_console::Console::new(host.clone(), gateway, &self.token, approver, sign_in);
        let app = protected
            .merge(health(host))
            .merge(console.router())
            .layer(mcp_http::guard::GuardLayer::new(policy));
        let shown = if self.made_up {
            format!(
                "; token {} (set [admin] token or {TOKEN_VARIABLE} to choose one)",
                self.token
            )
        } else {
            String::new()
        };
        print_err(&format!(
            "admin: http://{local} (/console, /metrics, /status, /healthz){shown}"
        ));
        let listener = self.listener;
        Ok(tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::warn!(%error, "the admin listener stopped");
            }
        }))
    }
}
