//! One server's page: its state and counts, its config entry as it takes
//! effect (secrets masked), what the host found in its definitions
//! (text aimed at the model, changes since they were pinned, with the
//! diff), and the requests it answered; with the actions its state
//! allows.

use axum::Extension;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use maud::{Markup, html};
use mcp_host::UpstreamStatus;

use crate::Console;
use crate::auth::Session;
use crate::layout::{json_block, page};

/// `GET /console/servers/NAME`.
pub(crate) async fn view(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Path(name): Path<String>,
) -> Response {
    let host = &console.inner.host;
    let Some(config) = host.server_config(&name) else {
        return (StatusCode::NOT_FOUND, format!("no server {name:?}")).into_response();
    };
    let status = host.status();
    let running = status.servers.iter().find(|s| s.name == name);
    let held = status.untrusted.iter().find(|u| u.name == name);
    let disabled = status.disabled.contains(&name);
    let action = |path: &str, label: &str| {
        html! {
            button hx-post=(path) hx-swap="none"
                hx-vals=(serde_json::json!({ "server": name }).to_string())
                aria-label={(label) " " (name)} { (label) }
        }
    };
    let body = html! {
        p { a href="/console" { "All servers" } }
        @if let Some(server) = running {
            (state(server))
            p { (action("/console/servers/restart", "Restart")) " " (action("/console/servers/disable", "Disable")) }
        }
        @if disabled {
            p data-state="disabled" { "Disabled. " (action("/console/servers/enable", "Enable")) }
        }
        @if let Some(held) = held {
            p data-state="untrusted" {
                "Waiting for your trust (" (held.reason) @if held.denied { ", refused" } "). "
                (action("/console/servers/trust", "Trust and start"))
            }
        }
        h2 { "Command line or URL" }
        p { code { (config.identity()) } }
        @if let Some(server) = running { (findings(server)) }
        h2 { "Config entry" }
        p.hint { "As it takes effect; the values of secret-looking variables and headers are masked." }
        (json_block(&config.shown()))
        @if let Some(server) = running {
            @if !server.requests.is_empty() {
                h2 { "Requests answered" }
                (json_block(&serde_json::to_value(&server.requests).unwrap_or_default()))
            }
        }
    };
    page(&format!("Server {name}"), "/console", &session, body).into_response()
}

/// The state and counts of a running server.
fn state(server: &UpstreamStatus) -> Markup {
    let state = server.state.as_str();
    html! {
        dl.server {
            dt { "State" } dd { span class={"state state-" (state)} data-state=(state) { (state) } }
            dt { "Server" } dd { (server.server.as_deref().unwrap_or("–")) }
            dt { "Revision" } dd { (server.revision.as_deref().unwrap_or("–")) }
            dt { "Transport" } dd { (server.transport.unwrap_or("–")) }
            @if let Some(pid) = server.pid { dt { "Process" } dd { (pid) } }
            @if let Some(up) = server.up_seconds { dt { "Up" } dd { (format!("{up:.0} s")) } }
            dt { "Lists" } dd { (server.tools) " tools, " (server.resources) " resources, "
                (server.templates) " templates, " (server.prompts) " prompts" }
            dt { "Restarts" } dd { (server.restarts) }
            dt { "Calls in flight" } dd { (server.in_flight) " (" (server.waiting) " waiting)" }
            dt { "Failed calls" } dd { (server.failed_calls) }
            dt { "Notifications dropped" } dd { (server.dropped_notifications) }
            @if server.callers > 0 { dt { "Callers' own connections" } dd { (server.callers) } }
            @if let Some(error) = &server.last_error { dt { "Last error" } dd { (error) } }
        }
    }
}

/// Hints about its entry, definitions flagged, and definitions changed
/// since they were pinned.
fn findings(server: &UpstreamStatus) -> Markup {
    html! {
        @if !server.hints.is_empty() {
            h2 { "Hints about its entry" }
            ul { @for hint in &server.hints { li { (hint) } } }
        }
        @if !server.flagged.is_empty() {
            h2 { "Text aimed at the model" }
            ul {
                @for flagged in &server.flagged {
                    @let flags: Vec<&str> = flagged.flags.iter().map(|f| f.as_str()).collect();
                    li data-flagged=(flagged.name) { (flagged.kind) " " code { (flagged.name) } ": " (flags.join(", ")) }
                }
            }
        }
        @if !server.changed.is_empty() {
            h2 { "Changed since pinned" }
            p.hint { "Calls of these wait for a person's approval (or as [guard] changed says)." }
            @for changed in &server.changed {
                details open data-changed=(changed.name) {
                    summary { (changed.kind) " " code { (changed.name) } }
                    pre.diff { (changed.diff) }
                }
            }
        }
    }
}
