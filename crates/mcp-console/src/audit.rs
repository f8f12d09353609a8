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
    /// The first request of a 2026-07-28 call's `input_required` rounds:
    /// that call's requests only.
    #[serde(default)]
    conversation: String,
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
        query.conversation = self.conversation.trim().parse().ok();
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
            ("conversation", &self.conversation),
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
            @if !filters.conversation.is_empty() {
                input type="hidden" name="conversation" value=(filters.conversation);
            }
            button type="submit" { "Search" }
        }
        @if !filters.conversation.is_empty() {
            p { "The requests of call #" (filters.conversation) ": the call and the retries that answered its "
                code { "input_required" } " rounds. " a href="/console/audit" { "Every call" } }
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
                    @for group in conversations(&found) {
                        (conversation(&group))
                    }
                }
            }
        }
    }
}

/// The rows, newest first, gathered into conversations: a 2026-07-28
/// call and the retries that continued its `input_required` rounds, in
/// the order they came; a request without rounds alone.
fn conversations(newest_first: &[AuditRow]) -> Vec<Vec<&AuditRow>> {
    let mut groups: Vec<(i64, Vec<&AuditRow>)> = Vec::new();
    for row in newest_first {
        let key = row.conversation.unwrap_or(row.id);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, rows)) => rows.push(row),
            None => groups.push((key, vec![row])),
        }
    }
    groups
        .into_iter()
        .map(|(_, mut rows)| {
            rows.sort_by_key(|row| row.id);
            rows
        })
        .collect()
}

/// One conversation's rows: a `tbody` of its own, its rounds numbered,
/// with a link to all of it where it took more than one request.
fn conversation(rows: &[&AuditRow]) -> Markup {
    let first = rows.first().map(|row| row.conversation.unwrap_or(row.id));
    let rounds = rows.len() > 1 || rows.iter().any(|row| row.conversation.is_some());
    html! {
        tbody data-conversation=[first.filter(|_| rounds)] {
            @for (at, row) in rows.iter().enumerate() {
                tr data-outcome=(row.outcome) data-decision=[row.decision.as_deref()] {
                    td { time datetime=(row.time) { (row.time) }
                         @if rounds {
                             br; small.round {
                                 @if row.conversation.is_some() { "↳ round " (at + 1) " of " }
                                 @else { "round 1 of " }
                                 a href={"/console/audit?conversation=" (first.unwrap_or_default())} { "call #" (first.unwrap_or_default()) }
                             }
                         } }
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

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_host::audit::{AuditLog, AuditRecord, AuditSettings};

    fn record(target: &str, answers: Option<&str>, asks: Option<&str>) -> AuditRecord {
        let mut record = AuditRecord::default();
        record.time_ms = mcp_host::audit::now_ms();
        record.method = "tools/call".to_owned();
        record.target = Some(target.to_owned());
        record.revision = "2026-07-28".to_owned();
        record.outcome = "ok";
        record.answers_round = answers.map(str::to_owned);
        record.asks_round = asks.map(str::to_owned);
        record
    }

    #[tokio::test]
    async fn a_calls_rounds_are_shown_as_one_conversation() {
        let dir = std::env::temp_dir().join(format!("console-audit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.db");
        let log = AuditLog::open(AuditSettings::new(&path)).unwrap();
        log.record(record("asks", None, Some("h1")));
        log.record(record("alone", None, None));
        log.record(record("asks", Some("h1"), Some("h2")));
        log.record(record("asks", Some("h2"), None));
        log.flush(std::time::Duration::from_secs(5)).await;
        let mut newest_first = query(&path, &AuditQuery::default()).unwrap();
        newest_first.reverse();
        let groups = conversations(&newest_first);
        let targets: Vec<Vec<&str>> = (groups.iter())
            .map(|g| g.iter().map(|r| r.target.as_deref().unwrap()).collect())
            .collect();
        assert_eq!(targets, [vec!["asks", "asks", "asks"], vec!["alone"]]);
        let first = groups[0][0].id;
        let shown = conversation(&groups[0]).into_string();
        assert!(
            shown.contains(&format!("data-conversation=\"{first}\"")),
            "{shown}"
        );
        assert!(shown.contains("↳ round 3 of"), "{shown}");
        let alone = conversation(&groups[1]).into_string();
        assert!(!alone.contains("round"), "{alone}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
