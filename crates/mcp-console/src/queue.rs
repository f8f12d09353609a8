//! The approvals page: the requests waiting for a person's approval, the
//! servers' questions no client could answer, and what servers ask the
//! host's model and what it answered, updated as they come and go; and
//! the answers a person gives there.

use std::collections::BTreeMap;
use std::time::SystemTime;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use http::StatusCode;
use maud::{Markup, html};
use mcp_core::sync::MutexExt as _;
use mcp_host::consent::{Approval, Scope};
use mcp_schema::{ElicitRequestParams, ElicitResult, ElicitValue};
use serde::Deserialize;
use serde_json::Value;

use crate::Console;
use crate::approvals::{ConsoleApprover, Reviewing};
use crate::auth::Session;
use crate::layout::{json_block, page};
use crate::review::{edited, shown};
use mcp_host::sampler::Reviewed;

/// `GET /console/approvals`: the page.
pub(crate) async fn view(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
) -> Markup {
    let body = html! {
        p.hint { "Requests the policy marks " code { "ask" } " wait here while " code { "console" }
                 " is among " code { "[guard] approvers" } "; so do the servers' questions no client can answer, and, with "
                 code { "[sampling] approve = \"ask\"" } ", what servers ask the host's model and what it answers." }
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
    let questions = waiting_questions(console);
    let samplings = waiting_samplings(console);
    let no_question = console.inner.approver.questions.locked().is_empty()
        && console.inner.approver.samplings.locked().is_empty();
    let waiting = console.inner.approver.waiting.locked();
    html! {
        @if waiting.is_empty() && no_question {
            p data-queue="empty" { "Nothing is waiting." }
        }
        (questions)
        (samplings)
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

/// The questions waiting, for the approvals page.
fn waiting_questions(console: &Console) -> Markup {
    let questions = console.inner.approver.questions.locked();
    html! {
        @for (id, q) in questions.iter() {
            article.approval data-question=(id) aria-labelledby={"question-" (id)} {
                h2 id={"question-" (id)} { "A question from " (q.server) }
                p { small { "Asked " (q.asked_at.elapsed().map(|d| d.as_secs()).unwrap_or_default()) " s ago; no client could answer it." } }
                @match &q.params {
                    ElicitRequestParams::Form(form) => {
                        p { (form.message) }
                        form hx-post="/console/approvals/question" hx-target="#approvals" {
                            input type="hidden" name="id" value=(id);
                            (crate::form::fields(&schema_of(&q.params)))
                            div.buttons {
                                button name="action" value="accept" { "Send" }
                                button name="action" value="decline" { "Decline" }
                                button.danger name="action" value="cancel" { "Cancel" }
                            }
                        }
                    }
                    ElicitRequestParams::Url(url) => {
                        p { (url.message) }
                        p { a href=(url.url) target="_blank" rel="noopener noreferrer" { (url.url) } }
                        form hx-post="/console/approvals/question" hx-target="#approvals" {
                            input type="hidden" name="id" value=(id);
                            div.buttons {
                                button name="action" value="accept" { "I opened it" }
                                button name="action" value="decline" { "Decline" }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A form question's schema as JSON.
fn schema_of(params: &ElicitRequestParams) -> Value {
    match params {
        ElicitRequestParams::Form(form) => {
            serde_json::to_value(&form.requested_schema).unwrap_or_default()
        }
        ElicitRequestParams::Url(_) => Value::Null,
    }
}

/// `POST /console/approvals/question`: `id`, `action`, and the form's
/// fields.
pub(crate) async fn answer_question(
    State(console): State<Console>,
    Extension(_session): Extension<crate::auth::Session>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Response {
    let value = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let Some(id) = value("id").and_then(|id| id.parse::<u64>().ok()) else {
        return (StatusCode::BAD_REQUEST, "no question id").into_response();
    };
    let approver = &console.inner.approver;
    let Some(params) = approver
        .questions
        .locked()
        .get(&id)
        .map(|q| q.params.clone())
    else {
        return (
            StatusCode::NOT_FOUND,
            html! { p.error { "That question is no longer waiting." } (queue(&console)) },
        )
            .into_response();
    };
    let result = match value("action").as_deref() {
        Some("accept") => match content(&params, &pairs) {
            Ok(content) => ElicitResult::accept(content),
            Err(error) => {
                return html! { p.error role="alert" { (error) } (queue(&console)) }
                    .into_response();
            }
        },
        Some("decline") => ElicitResult::decline(),
        Some("cancel") => ElicitResult::cancel(),
        other => {
            return (StatusCode::BAD_REQUEST, format!("no action {other:?}")).into_response();
        }
    };
    if let Some(question) = approver.questions.locked().remove(&id) {
        let _ = question.answer.send(result);
    }
    approver.changed();
    queue(&console).into_response()
}

/// What a form's fields say, as the answer's content (none for a page
/// opened in URL mode).
fn content(
    params: &ElicitRequestParams,
    pairs: &[(String, String)],
) -> Result<BTreeMap<String, ElicitValue>, String> {
    if let ElicitRequestParams::Url(_) = params {
        return Ok(BTreeMap::new());
    }
    let fields: Vec<(String, String)> = pairs
        .iter()
        .filter(|(k, _)| k.starts_with('/'))
        .cloned()
        .collect();
    let read = crate::form::arguments(&schema_of(params), &fields)?;
    serde_json::from_value(read).map_err(|e| format!("the answer does not fit the form: {e}"))
}

/// The sampling requests and replies waiting, for the approvals page.
fn waiting_samplings(console: &Console) -> Markup {
    let samplings = console.inner.approver.samplings.locked();
    html! {
        @for (id, s) in samplings.iter() {
            @let ago = s.asked_at.elapsed().map(|d| d.as_secs()).unwrap_or_default();
            article.approval data-sampling=(id) aria-labelledby={"sampling-" (id)} {
                @match &s.what {
                    Reviewing::Request { model, params, .. } => {
                        h2 id={"sampling-" (id)} { (s.server) " asks the model " code { (model) } }
                        p { small { "Asked " (ago) " s ago. Nothing is sent to the model until you send it." } }
                        form hx-post="/console/approvals/sampling" hx-target="#approvals" {
                            input type="hidden" name="id" value=(id);
                            label for={"sampling-request-" (id)} { "The request (JSON; edit before sending)" }
                            textarea.json id={"sampling-request-" (id)} name="request" rows="12" {
                                (serde_json::to_string_pretty(&shown(params)).unwrap_or_default())
                            }
                            div.buttons {
                                button name="action" value="send" { "Send to the model" }
                                button.danger name="action" value="refuse" { "Refuse" }
                            }
                        }
                    }
                    Reviewing::Reply { reply, .. } => {
                        h2 id={"sampling-" (id)} { "The model " code { (reply.model) } " answered " (s.server) }
                        p { small { "Answered " (ago) " s ago. The server gets it only if you give it." } }
                        (json_block(&serde_json::to_value(&reply.content).unwrap_or_default()))
                        form hx-post="/console/approvals/sampling" hx-target="#approvals" {
                            input type="hidden" name="id" value=(id);
                            div.buttons {
                                button name="action" value="send" { "Give it to the server" }
                                button.danger name="action" value="refuse" { "Refuse" }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The form that answers a sampling request or reply.
#[derive(Deserialize)]
pub(crate) struct SamplingAnswer {
    id: u64,
    action: String,
    #[serde(default)]
    request: String,
}

/// `POST /console/approvals/sampling`: `id`, `action` (`send` or
/// `refuse`), and for a request, the request as edited.
pub(crate) async fn answer_sampling(
    State(console): State<Console>,
    Form(answer): Form<SamplingAnswer>,
) -> Response {
    let send = match answer.action.as_str() {
        "send" => true,
        "refuse" => false,
        other => return (StatusCode::BAD_REQUEST, format!("no action {other:?}")).into_response(),
    };
    let approver = &console.inner.approver;
    match take_sampling(approver, &answer, send) {
        SamplingTaken::Gone => (
            StatusCode::NOT_FOUND,
            html! { p.error { "That request is no longer waiting." } (queue(&console)) },
        )
            .into_response(),
        // The person is told what is wrong, and the request keeps waiting.
        SamplingTaken::Invalid(error) => {
            html! { p.error role="alert" { (error) } (queue(&console)) }.into_response()
        }
        SamplingTaken::Answered => {
            approver.changed();
            queue(&console).into_response()
        }
    }
}

/// What became of a person's answer to a waiting sampling request or
/// reply.
enum SamplingTaken {
    /// It no longer waits.
    Gone,
    /// The edited request is not a sampling request (why).
    Invalid(String),
    /// Its waiter has the answer.
    Answered,
}

/// Hands `answer` (send, when `send`, or refuse) to the sampling it names,
/// under the queue's lock: an edited request must still be one.
fn take_sampling(approver: &ConsoleApprover, answer: &SamplingAnswer, send: bool) -> SamplingTaken {
    let mut samplings = approver.samplings.locked();
    let Some(waiting) = samplings.get(&answer.id) else {
        return SamplingTaken::Gone;
    };
    let edited = match (&waiting.what, send) {
        (Reviewing::Request { params, .. }, true) => match edited(params.as_ref(), &answer.request)
        {
            Ok(edited) => Some(edited),
            Err(error) => return SamplingTaken::Invalid(error),
        },
        _ => None,
    };
    if let Some(waiting) = samplings.remove(&answer.id) {
        match waiting.what {
            Reviewing::Request { answer, .. } => {
                let _ = answer.send(match edited {
                    Some(params) => Reviewed::Send(params),
                    None => Reviewed::Refuse,
                });
            }
            Reviewing::Reply { answer, .. } => {
                let _ = answer.send(send);
            }
        }
    }
    SamplingTaken::Answered
}
