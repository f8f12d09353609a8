//! The console as a person who reviews what servers ask the host's model
//! (`[sampling] approve = "ask"`): a request waits on the approvals page
//! ([`crate::queue`]) as JSON a person may edit before sending it, or
//! refuse; then the model's reply waits there until the person gives it
//! to the server or refuses it. Asked before the terminal, while a
//! browser has the page open.

use std::sync::atomic::Ordering;
use std::time::SystemTime;

use axum::Form;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use maud::{Markup, html};
use mcp_core::BoxFuture;
use mcp_core::sync::MutexExt as _;
use mcp_host::sampler::{Reviewed, Reviewer};
use mcp_schema::{CreateMessageRequestParams, CreateMessageResult};
use serde::Deserialize;
use tokio::sync::oneshot;

use crate::Console;
use crate::approvals::ConsoleApprover;
use crate::layout::json_block;
use crate::queue::queue;

/// A sampling request, or the model's reply to one, waiting for a person.
pub(crate) struct Sampling {
    server: String,
    asked_at: SystemTime,
    what: Reviewing,
}

enum Reviewing {
    /// What the server asks `model`.
    Request {
        model: String,
        params: Box<CreateMessageRequestParams>,
        answer: oneshot::Sender<Reviewed>,
    },
    /// What the model answered.
    Reply {
        reply: Box<CreateMessageResult>,
        answer: oneshot::Sender<bool>,
    },
}

impl Reviewer for ConsoleApprover {
    fn name(&self) -> &str {
        crate::approvals::NAME
    }

    fn reachable(&self) -> bool {
        self.watching.load(Ordering::Relaxed) > 0
    }

    fn review_request<'a>(
        &'a self,
        server: &'a str,
        model: &'a str,
        request: &'a CreateMessageRequestParams,
    ) -> BoxFuture<'a, Result<Reviewed, String>> {
        Box::pin(self.wait(&self.samplings, |answer| Sampling {
            server: server.to_owned(),
            asked_at: SystemTime::now(),
            what: Reviewing::Request {
                model: model.to_owned(),
                params: Box::new(request.clone()),
                answer,
            },
        }))
    }

    fn review_reply<'a>(
        &'a self,
        server: &'a str,
        reply: &'a CreateMessageResult,
    ) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(self.wait(&self.samplings, |answer| Sampling {
            server: server.to_owned(),
            asked_at: SystemTime::now(),
            what: Reviewing::Reply {
                reply: Box::new(reply.clone()),
                answer,
            },
        }))
    }
}

/// The sampling requests and replies waiting, for the approvals page.
pub(crate) fn waiting(console: &Console) -> Markup {
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

/// A request as a person edits it: without its `_meta`, which is the
/// protocol's, not the conversation's.
fn shown(params: &CreateMessageRequestParams) -> serde_json::Value {
    let mut value = serde_json::to_value(params).unwrap_or_default();
    if let Some(object) = value.as_object_mut() {
        object.remove("_meta");
    }
    value
}

/// The review form.
#[derive(Deserialize)]
pub(crate) struct Answer {
    id: u64,
    action: String,
    #[serde(default)]
    request: String,
}

/// `POST /console/approvals/sampling`: `id`, `action` (`send` or
/// `refuse`), and for a request, the request as edited.
pub(crate) async fn answer(State(console): State<Console>, Form(answer): Form<Answer>) -> Response {
    let send = match answer.action.as_str() {
        "send" => true,
        "refuse" => false,
        other => return (StatusCode::BAD_REQUEST, format!("no action {other:?}")).into_response(),
    };
    let approver = &console.inner.approver;
    let mut samplings = approver.samplings.locked();
    let Some(waiting) = samplings.get(&answer.id) else {
        drop(samplings);
        return (
            StatusCode::NOT_FOUND,
            html! { p.error { "That request is no longer waiting." } (queue(&console)) },
        )
            .into_response();
    };
    // An edited request must still be one; the person is told what is
    // wrong and it keeps waiting.
    let edited = match (&waiting.what, send) {
        (Reviewing::Request { params, .. }, true) => match edited(params, &answer.request) {
            Ok(edited) => Some(edited),
            Err(error) => {
                drop(samplings);
                return html! { p.error role="alert" { (error) } (queue(&console)) }
                    .into_response();
            }
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
    drop(samplings);
    approver.changed();
    queue(&console).into_response()
}

/// The request as the person left it, keeping the server's `_meta`.
fn edited(
    original: &CreateMessageRequestParams,
    text: &str,
) -> Result<Box<CreateMessageRequestParams>, String> {
    if text.trim().is_empty() {
        return Ok(Box::new(original.clone()));
    }
    let mut params: CreateMessageRequestParams = serde_json::from_str(text)
        .map_err(|e| format!("The request is not a sampling request: {e}"))?;
    params.meta = original.meta.clone();
    Ok(Box::new(params))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_schema::SamplingMessage;

    #[test]
    fn an_edited_request_keeps_the_servers_meta_and_a_broken_one_is_refused() {
        let mut original =
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text("2+2?")], 100);
        original.meta = serde_json::from_value(serde_json::json!({"progressToken": 4})).ok();
        let mut shown = shown(&original);
        assert!(shown.get("_meta").is_none());
        shown["messages"][0]["content"]["text"] = "3+3?".into();
        shown["maxTokens"] = 20.into();
        let edited = edited(&original, &shown.to_string()).unwrap();
        assert_eq!(edited.max_tokens, 20);
        assert_eq!(edited.meta, original.meta);
        assert!(
            serde_json::to_string(&edited.messages)
                .unwrap()
                .contains("3+3?")
        );
        assert_eq!(*super::edited(&original, " ").unwrap(), original);
        let broken = super::edited(&original, r#"{"messages": 3}"#).unwrap_err();
        assert!(broken.contains("not a sampling request"), "{broken}");
    }
}
