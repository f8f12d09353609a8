//! The audit view: the host's audit records searched by time, caller,
//! server, target, decision and outcome, newest first, and exported as
//! JSON lines with the same filters.

use axum::Extension;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use maud::{Markup, html};
use mcp_host::audit::{AuditQuery, AuditRow, query};
use serde::Deserialize;

use crate::Console;
use crate::auth::Session;
use crate::layout::{page, shortened};

/// The most records a page shows.
const SHOWN: usize = 200;
/// The most records an export holds.
const EXPORTED: usize = 100_000;

/// The filters, as the form sends them.
#[derive(Deserialize, Default)]
pub(crate) struct Filters {
    #[serde(default)]
    caller: String,
    #[serde(default)]
    server: String,
    #[serde(default)]
    target: String,
    #[serde(default)]
    decision: String,
    #[serde(default)]
    outcome: String,
    /// Minutes back from now; empty: all.
    #[serde(default)]
    minutes: String,
}

impl Filters {
    fn query(&self, limit: usize) -> AuditQuery {
        let given = |text: &str| (!text.trim().is_empty()).then(|| text.trim().to_owned());
        let since_ms = self.minutes.trim().parse::<i64>().ok().map(|minutes| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .unwrap_or_default();
            now - minutes * 60_000
        });
        let mut query = AuditQuery::default();
        query.since_ms = since_ms;
        query.caller = given(&self.caller);
        query.server = given(&self.server);
        query.target = given(&self.target);
        query.decision = given(&self.decision);
        query.outcome = given(&self.outcome);
        query.limit = limit;
        query
    }

    fn as_query_string(&self) -> String {
        let pairs = [
            ("caller", &self.caller),
            ("server", &self.server),
            ("target", &self.target),
            ("decision", &self.decision),
            ("outcome", &self.outcome),
            ("minutes", &self.minutes),
        ];
        pairs
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| format!("{k}={}", crate::catalog::encode(v)))
            .collect::<Vec<_>>()
            .join("&")
    }
}

fn records(console: &Console, filters: &Filters, limit: usize) -> Result<Vec<AuditRow>, String> {
    let Some(log) = console.inner.host.audit() else {
        return Err("the host keeps no audit: set [audit] in its settings".into());
    };
    query(log.path(), &filters.query(limit))
}

/// `GET /console/audit`: the page.
pub(crate) async fn view(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Query(filters): Query<Filters>,
) -> Markup {
    let field = |name: &'static str, label: &'static str, value: &str| {
        html! {
            div.field {
                label for={"f-" (name)} { (label) }
                input id={"f-" (name)} name=(name) type="text" value=(value);
            }
        }
    };
    let body = html! {
        form.filters hx-get="/console/audit/rows" hx-target="#audit" hx-push-url="false" {
            (field("caller", "Caller", &filters.caller))
            (field("server", "Server", &filters.server))
            (field("target", "Tool, prompt or resource", &filters.target))
            div.field {
                label for="f-decision" { "Decision" }
                select id="f-decision" name="decision" {
                    @for d in ["", "allow", "ask", "deny"] {
                        option value=(d) selected[filters.decision == d] { @if d.is_empty() { "any" } @else { (d) } }
                    }
                }
            }
            div.field {
                label for="f-outcome" { "Outcome" }
                select id="f-outcome" name="outcome" {
                    @for o in ["", "ok", "tool_error", "error", "cancelled"] {
                        option value=(o) selected[filters.outcome == o] { @if o.is_empty() { "any" } @else { (o) } }
                    }
                }
            }
            (field("minutes", "Last minutes", &filters.minutes))
            button type="submit" { "Search" }
        }
        div id="audit" { (rows(&console, &filters)) }
    };
    page("Audit", "/console/audit", &session, body)
}

/// `GET /console/audit/rows`: the table alone.
pub(crate) async fn fragment(
    State(console): State<Console>,
    Query(filters): Query<Filters>,
) -> Markup {
    rows(&console, &filters)
}

fn rows(console: &Console, filters: &Filters) -> Markup {
    let found = records(console, filters, SHOWN).map(|mut found| {
        found.reverse();
        found
    });
    html! {
        @match found {
            Err(why) => p.error role="alert" { (why) },
            Ok(found) => {
                p { (found.len()) " records, newest first. "
                    a href={"/console/audit.jsonl?" (filters.as_query_string())} download="audit.jsonl" { "Export as JSON lines" } }
                table.audit {
                    thead { tr {
                        th scope="col" { "Time" } th scope="col" { "Caller" } th scope="col" { "Method" }
                        th scope="col" { "Target" } th scope="col" { "Server" } th scope="col" { "Decision" }
                        th scope="col" { "Answer" } th scope="col" { "Outcome" } th scope="col" { "ms" }
                    } }
                    tbody {
                        @for row in &found {
                            tr data-outcome=(row.outcome) data-decision=[row.decision.as_deref()] {
                                td { time datetime=(row.time) { (row.time) } }
                                td { (row.caller.as_deref().or(row.client.as_deref()).unwrap_or("–")) }
                                td { code { (row.method) } }
                                td { @if let Some(t) = &row.target { code { (t) } } }
                                td { (row.server.as_deref().unwrap_or("–")) }
                                td { (row.decision.as_deref().unwrap_or("–"))
                                     @if let Some(rule) = &row.rule { br; small { (rule) } } }
                                td { (row.answer.as_deref().unwrap_or("")) }
                                td { (row.outcome)
                                     @if let Some(message) = &row.error_message { br; small { (shortened(message, 100)) } } }
                                td.number { (format!("{:.1}", row.duration_ms)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `GET /console/audit.jsonl`: the records the filters match, one JSON
/// object a line, oldest first.
pub(crate) async fn export(
    State(console): State<Console>,
    Query(filters): Query<Filters>,
) -> Response {
    match records(&console, &filters, EXPORTED) {
        Err(why) => (StatusCode::NOT_FOUND, why).into_response(),
        Ok(found) => {
            let mut body = String::new();
            for row in &found {
                body.push_str(&serde_json::to_string(row).unwrap_or_default());
                body.push('\n');
            }
            (
                [
                    (header::CONTENT_TYPE, "application/jsonl; charset=utf-8"),
                    (
                        header::CONTENT_DISPOSITION,
                        "attachment; filename=\"audit.jsonl\"",
                    ),
                ],
                body,
            )
                .into_response()
        }
    }
}
