//! The console as a person at the host who answers a server's
//! elicitation that no client can (`[[elicitors]]` order: after the
//! terminal): the question waits on the approvals page, as a form made
//! from its schema (or a link, in URL mode), until a person submits,
//! declines or cancels it.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use http::StatusCode;
use maud::{Markup, html};
use mcp_core::BoxFuture;
use mcp_core::sync::MutexExt as _;
use mcp_host::elicit::Elicitor;
use mcp_schema::{ElicitRequestParams, ElicitResult, ElicitValue};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::Console;
use crate::approvals::ConsoleApprover;

/// A server's question waiting at the console.
pub(crate) struct Question {
    server: String,
    params: ElicitRequestParams,
    asked_at: SystemTime,
    answer: oneshot::Sender<ElicitResult>,
}

/// Takes a question out of the queue when it ends, answered or not.
struct Leaves<'a> {
    approver: &'a ConsoleApprover,
    id: u64,
}

impl Drop for Leaves<'_> {
    fn drop(&mut self) {
        if self.approver.questions.locked().remove(&self.id).is_some() {
            self.approver.changed();
        }
    }
}

impl Elicitor for ConsoleApprover {
    fn name(&self) -> &str {
        crate::approvals::NAME
    }

    fn reachable(&self) -> bool {
        self.watching.load(Ordering::Relaxed) > 0
    }

    fn elicit<'a>(
        &'a self,
        server: &'a str,
        params: &'a ElicitRequestParams,
    ) -> BoxFuture<'a, Result<ElicitResult, String>> {
        Box::pin(async move {
            let id = self.next_id();
            let (answer, answered) = oneshot::channel();
            self.questions.locked().insert(
                id,
                Question {
                    server: server.to_owned(),
                    params: params.clone(),
                    asked_at: SystemTime::now(),
                    answer,
                },
            );
            self.changed();
            let _leaves = Leaves { approver: self, id };
            answered
                .await
                .map_err(|_| "the console's queue was closed".to_owned())
        })
    }
}

/// The questions waiting, for the approvals page.
pub(crate) fn waiting(console: &Console) -> Markup {
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
pub(crate) async fn answer(
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
            html! { p.error { "That question is no longer waiting." } (crate::approvals::queue(&console)) },
        )
            .into_response();
    };
    let result = match value("action").as_deref() {
        Some("accept") => match content(&params, &pairs) {
            Ok(content) => ElicitResult::accept(content),
            Err(error) => {
                return html! { p.error role="alert" { (error) } (crate::approvals::queue(&console)) }
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
    crate::approvals::queue(&console).into_response()
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
