//! The console as an approver (`console` in `[guard] approvers`): a request
//! the policy marks `ask` waits in the console's queue until a person
//! allows it (once, for the session, or always, with the arguments as
//! they edited them) or denies it. The queue's page updates as requests
//! come and go, and shows the servers' questions no client could answer
//! too (see [`crate::questions`]). The console can be asked while a
//! browser holds its event stream open.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::SystemTime;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use http::StatusCode;
use maud::{Markup, html};
use mcp_core::BoxFuture;
use mcp_core::sync::MutexExt as _;
use mcp_host::consent::{Approval, ApprovalRequest, Approver, Scope};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{broadcast, oneshot};

use crate::Console;
use crate::auth::Session;
use crate::layout::{json_block, page};

/// The approver's name in `[guard] approvers`.
pub const NAME: &str = "console";

/// The queue of requests waiting for a person at the console.
pub struct ConsoleApprover {
    next: AtomicU64,
    waiting: Mutex<BTreeMap<u64, Waiting>>,
    /// Servers' questions no client could answer.
    pub(crate) questions: Mutex<BTreeMap<u64, crate::questions::Question>>,
    /// Told whenever the queue changes.
    changed: broadcast::Sender<()>,
    /// Browsers with the event stream open.
    pub(crate) watching: AtomicUsize,
}

struct Waiting {
    request: ApprovalRequest,
    asked_at: SystemTime,
    answer: oneshot::Sender<Approval>,
}

impl Default for ConsoleApprover {
    fn default() -> Self {
        ConsoleApprover {
            next: AtomicU64::new(0),
            waiting: Mutex::new(BTreeMap::new()),
            questions: Mutex::new(BTreeMap::new()),
            changed: broadcast::channel(16).0,
            watching: AtomicUsize::new(0),
        }
    }
}

impl ConsoleApprover {
    /// Told whenever the queue changes.
    pub(crate) fn changes(&self) -> broadcast::Receiver<()> {
        self.changed.subscribe()
    }

    /// Tells the pages that the queue changed.
    pub(crate) fn changed(&self) {
        let _ = self.changed.send(());
    }

    /// A number for the next request or question.
    pub(crate) fn next_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Answers request `id`; whether it was waiting.
    fn answer(&self, id: u64, approval: Approval) -> bool {
        let waiting = self.waiting.locked().remove(&id);
        let _ = self.changed.send(());
        waiting.is_some_and(|w| w.answer.send(approval).is_ok())
    }
}

/// Takes a request out of the queue when its question ends, answered or
/// not (timed out, the caller gone).
struct Leaves<'a> {
    approver: &'a ConsoleApprover,
    id: u64,
}

impl Drop for Leaves<'_> {
    fn drop(&mut self) {
        if self.approver.waiting.locked().remove(&self.id).is_some() {
            let _ = self.approver.changed.send(());
        }
    }
}

impl Approver for ConsoleApprover {
    fn name(&self) -> &str {
        NAME
    }

    fn reachable(&self) -> bool {
        self.watching.load(Ordering::Relaxed) > 0
    }

    fn ask<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Result<Approval, String>> {
        Box::pin(async move {
            let id = self.next_id();
            let (answer, answered) = oneshot::channel();
            self.waiting.locked().insert(
                id,
                Waiting {
                    request: request.clone(),
                    asked_at: SystemTime::now(),
                    answer,
                },
            );
            let _ = self.changed.send(());
            let _leaves = Leaves { approver: self, id };
            answered
                .await
                .map_err(|_| "the console's queue was closed".to_owned())
        })
    }
}

/// `GET /console/approvals`: the page.
pub(crate) async fn view(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
) -> Markup {
    let body = html! {
        p.hint { "Requests the policy marks " code { "ask" } " wait here while " code { "console" }
                 " is among " code { "[guard] approvers" } "." }
        div id="approvals" hx-get="/console/approvals/queue" hx-trigger="sse:approvals" {
            (queue(&console))
        }
    };
    page("Approvals", "/console/approvals", &session, body)
}

/// `GET /console/approvals/queue`: the queue alone.
pub(crate) async fn fragment(State(console): State<Console>) -> Markup {
    queue(&console)
}

pub(crate) fn queue(console: &Console) -> Markup {
    let questions = crate::questions::waiting(console);
    let no_question = console.inner.approver.questions.locked().is_empty();
    let waiting = console.inner.approver.waiting.locked();
    html! {
        @if waiting.is_empty() && no_question {
            p data-queue="empty" { "Nothing is waiting." }
        }
        (questions)
        @for (id, w) in waiting.iter() {
            @let request = &w.request;
            article.approval data-approval=(id) aria-labelledby={"approval-" (id)} {
                h2 id={"approval-" (id)} { (request.kind.as_str()) " " code { (request.name) } " on " (request.server) }
                p { small { "Asked " (seconds_ago(w.asked_at)) " s ago. " (request.reason) } }
                p { small { "Server: " code { (request.server_identity) } } }
                @if let Some(description) = &request.description { p { (description) } }
                @if let Some(annotations) = &request.annotations { details { summary { "Annotations" } (json_block(annotations)) } }
                @if let Some(changes) = &request.changes { details open { summary { "What changed since it was pinned" } pre.diff { (changes) } } }
                form hx-post="/console/approvals/answer" hx-target="#approvals" {
                    input type="hidden" name="id" value=(id);
                    label for={"args-" (id)} { "Arguments (JSON; edit before allowing)" }
                    textarea.json id={"args-" (id)} name="arguments" rows="8" {
                        (serde_json::to_string_pretty(&request.arguments.clone().map(Value::Object).unwrap_or(Value::Null)).unwrap_or_default())
                    }
                    div.buttons {
                        button name="decision" value="once" { "Allow once" }
                        button name="decision" value="session" { "Allow for the session" }
                        button name="decision" value="always" { "Always allow" }
                        button.danger name="decision" value="deny" { "Deny" }
                    }
                }
            }
        }
    }
}

fn seconds_ago(at: SystemTime) -> u64 {
    at.elapsed().map(|d| d.as_secs()).unwrap_or_default()
}

/// The answer form.
#[derive(Deserialize)]
pub(crate) struct Answer {
    id: u64,
    decision: String,
    #[serde(default)]
    arguments: String,
}

/// `POST /console/approvals/answer`.
pub(crate) async fn answer(State(console): State<Console>, Form(answer): Form<Answer>) -> Response {
    let scope = match answer.decision.as_str() {
        "once" => Some(Scope::Once),
        "session" => Some(Scope::Session),
        "always" => Some(Scope::Always),
        "deny" => None,
        other => {
            return (StatusCode::BAD_REQUEST, format!("no decision {other:?}")).into_response();
        }
    };
    let approver = &console.inner.approver;
    let original = approver
        .waiting
        .locked()
        .get(&answer.id)
        .map(|w| w.request.arguments.clone());
    let Some(original) = original else {
        return (
            StatusCode::NOT_FOUND,
            html! { p.error { "That request is no longer waiting." } (queue(&console)) },
        )
            .into_response();
    };
    let arguments = match serde_json::from_str::<Value>(&answer.arguments) {
        Ok(Value::Object(edited)) if Some(&edited) != original.as_ref() => Some(edited),
        Ok(_) => None,
        Err(e) if scope.is_some() && !answer.arguments.trim().is_empty() => {
            return html! { p.error role="alert" { "The arguments are not JSON: " (e) } (queue(&console)) }
                .into_response();
        }
        Err(_) => None,
    };
    let approval = Approval {
        allowed: scope.is_some(),
        scope: scope.unwrap_or(Scope::Once),
        arguments,
    };
    approver.answer(answer.id, approval);
    queue(&console).into_response()
}
