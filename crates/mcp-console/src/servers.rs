//! The servers view: each upstream's state, era and revision, what it
//! lists, its restarts and last error, with buttons to restart and to
//! disable it; the servers disabled, with a button to enable each; and
//! the servers waiting for a person's trust, with their exact command
//! lines and a button to trust them. The table is fetched again whenever
//! the host says a server changed.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use http::StatusCode;
use maud::{Markup, html};
use mcp_host::UpstreamStatus;

use crate::Console;
use crate::auth::Session;
use crate::layout::{page, shortened};

/// `GET /console`: the page.
pub(crate) async fn view(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
) -> Response {
    if session.user.is_some() {
        // The servers are the operator's; a signed-in person starts
        // from what they may run.
        return axum::response::Redirect::to("/console/catalog").into_response();
    }
    let body = html! {
        p.hint { "Updated as the servers change." }
        div id="servers" hx-get="/console/servers" hx-trigger="sse:servers" hx-swap="innerHTML" {
            (table(&console))
        }
    };
    page("Servers", "/console", &session, body).into_response()
}

/// `GET /console/servers`: the table alone.
pub(crate) async fn fragment(State(console): State<Console>) -> Markup {
    table(&console)
}

/// The form of a server action.
#[derive(serde::Deserialize)]
pub(crate) struct Named {
    server: String,
}

/// `POST /console/servers/restart`, `server=NAME`.
pub(crate) async fn restart(State(console): State<Console>, Form(named): Form<Named>) -> Response {
    done(console.inner.host.restart(&named.server))
}

/// `POST /console/servers/trust`, `server=NAME`: a held server trusted
/// and started (see [`mcp_host::trust`]).
pub(crate) async fn trust(State(console): State<Console>, Form(named): Form<Named>) -> Response {
    done(console.inner.host.trust(&named.server))
}

/// `POST /console/servers/disable`, `server=NAME`: stopped, out of the
/// catalog, until enabled.
pub(crate) async fn disable(State(console): State<Console>, Form(named): Form<Named>) -> Response {
    done(console.inner.host.disable(&named.server))
}

/// `POST /console/servers/enable`, `server=NAME`: a disabled server
/// started again.
pub(crate) async fn enable(State(console): State<Console>, Form(named): Form<Named>) -> Response {
    done(console.inner.host.enable(&named.server))
}

fn done(result: Result<(), String>) -> Response {
    match result {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(why) => (StatusCode::NOT_FOUND, why).into_response(),
    }
}

fn table(console: &Console) -> Markup {
    let status = console.inner.host.status();
    html! {
        @if status.servers.is_empty() {
            p { "No server is configured." }
        } @else {
            table.servers {
                caption.visually-hidden { "Servers" }
                thead { tr {
                    th scope="col" { "Server" }
                    th scope="col" { "State" }
                    th scope="col" { "Era" }
                    th scope="col" { "Lists" }
                    th scope="col" { "Restarts" }
                    th scope="col" { "Last error" }
                    th scope="col" { span.visually-hidden { "Actions" } }
                } }
                tbody {
                    @for server in &status.servers { (row(server)) }
                }
            }
        }
        @if !status.disabled.is_empty() {
            h2 { "Disabled" }
            ul.disabled {
                @for name in &status.disabled {
                    li data-disabled=(name) {
                        strong { (name) } " "
                        button hx-post="/console/servers/enable" hx-swap="none"
                            hx-vals=(serde_json::json!({ "server": name }).to_string())
                            aria-label={"Enable " (name)} { "Enable" }
                    }
                }
            }
        }
        @if !status.untrusted.is_empty() {
            h2 { "Waiting for your trust" }
            p.hint { "Not started until you trust the exact command line." }
            ul.untrusted {
                @for held in &status.untrusted {
                    li data-untrusted=(held.name) {
                        a href={"/console/servers/" (crate::catalog::encode(&held.name))} { strong { (held.name) } }
                        ": " code { (held.identity) }
                        " (" (held.reason) @if held.denied { ", refused" } ") "
                        button hx-post="/console/servers/trust" hx-swap="none"
                            hx-vals=(serde_json::json!({ "server": held.name }).to_string())
                            aria-label={"Trust " (held.name)} { "Trust and start" }
                    }
                }
            }
        }
        @if !status.problems.is_empty() {
            h2 { "Config entries not used" }
            ul { @for problem in &status.problems { li { (format!("{problem:?}")) } } }
        }
        @if !status.collisions.is_empty() {
            h2 { "Name collisions" }
            ul { @for collision in &status.collisions { li { (collision) } } }
        }
    }
}

fn row(server: &UpstreamStatus) -> Markup {
    let state = server.state.as_str();
    let revision = server.revision.as_deref();
    let era = match revision.map(|r| (r, r.parse::<mcp_schema::ProtocolVersion>())) {
        Some((revision, Ok(version))) if !version.is_legacy() => format!("modern ({revision})"),
        Some((revision, _)) => format!("legacy ({revision})"),
        None => "–".to_owned(),
    };
    html! {
        tr data-server=(server.name) {
            th scope="row" {
                a href={"/console/servers/" (crate::catalog::encode(&server.name))} { (server.name) }
                @if let Some(said) = &server.server { br; small { (said) } }
                @if let Some(transport) = server.transport { br; small { (transport) } }
            }
            td { span class={"state state-" (state)} data-state=(state) { (state) } }
            td { (era) }
            td { (server.tools) " tools, " (server.resources) " resources, "
                 (server.templates) " templates, " (server.prompts) " prompts" }
            td.number { (server.restarts) }
            td { @if let Some(error) = &server.last_error { span title=(error) { (shortened(error, 120)) } } }
            td {
                button hx-post="/console/servers/restart" hx-swap="none"
                    hx-vals=(serde_json::json!({ "server": server.name }).to_string())
                    aria-label={"Restart " (server.name)} { "Restart" }
                " "
                button hx-post="/console/servers/disable" hx-swap="none"
                    hx-vals=(serde_json::json!({ "server": server.name }).to_string())
                    aria-label={"Disable " (server.name)} { "Disable" }
            }
        }
    }
}
