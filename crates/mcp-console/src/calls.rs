//! Requests the console makes for a person: through an MCP client of the
//! host's own gateway, in process, so they take the path every client's
//! request takes (policy, consent, limits, audit) with the console as the
//! client. Each runs as a task the page polls, with its progress, and can
//! be cancelled (the server is sent `notifications/cancelled`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use maud::{Markup, html};
use mcp_client::Client;
use mcp_core::RequestOptions;
use mcp_core::sync::MutexExt as _;
use mcp_host::Decided;
use serde_json::Value;

use crate::auth::Session;
use crate::layout::json_block;

/// The most calls kept for their pages and the history; the oldest
/// finished go first.
const KEPT: usize = 100;

/// The most notifications kept of one call.
const KEPT_NOTIFICATIONS: usize = 100;

/// The `_meta` key by which the console's requests carry their call's
/// number, so that the gateway's decision finds its call.
pub(crate) const CALL_META: &str = "mcp-console/call";

/// The calls of the console.
#[derive(Default)]
pub(crate) struct Calls {
    next: std::sync::atomic::AtomicU64,
    by_id: Mutex<BTreeMap<u64, Arc<Call>>>,
}

/// One request and where it is.
pub(crate) struct Call {
    /// What was asked, for people: `tools/call search`.
    pub(crate) what: String,
    /// The request: its method and params.
    pub(crate) method: &'static str,
    /// See `method`.
    pub(crate) params: Value,
    /// When it was made.
    pub(crate) at: std::time::SystemTime,
    /// Whose it is: a signed-in person's key; `None`: the operator's.
    owner: Option<String>,
    started: Instant,
    state: Mutex<CallState>,
    task: Mutex<Option<tokio::task::AbortHandle>>,
    /// What the host's policy decided, once the gateway has answered.
    decided: Mutex<Option<Decided>>,
    /// The progress notifications it got, with when (milliseconds after
    /// it was made); the first [`KEPT_NOTIFICATIONS`].
    notifications: Mutex<Vec<(u128, mcp_schema::ProgressNotificationParams)>>,
}

enum CallState {
    Running {
        progress: Option<String>,
    },
    Done {
        result: Result<Value, String>,
        took_ms: u128,
    },
    Cancelled,
}

impl Calls {
    /// Starts `method` with `params` on `client`, for `owner`: its id.
    pub(crate) fn start(
        &self,
        client: Client,
        owner: Option<String>,
        method: &'static str,
        what: String,
        params: Value,
    ) -> u64 {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let call = Arc::new(Call {
            what,
            method,
            params: params.clone(),
            at: std::time::SystemTime::now(),
            owner,
            started: Instant::now(),
            state: Mutex::new(CallState::Running { progress: None }),
            task: Mutex::new(None),
            decided: Mutex::new(None),
            notifications: Mutex::default(),
        });
        let mut sent = params;
        if let Value::Object(object) = &mut sent {
            object.insert("_meta".into(), serde_json::json!({ CALL_META: id }));
        }
        let progress = Arc::clone(&call);
        let options =
            RequestOptions::new().on_progress(move |p: mcp_schema::ProgressNotificationParams| {
                let told = match (p.total, &p.message) {
                    (_, Some(message)) => message.clone(),
                    (Some(total), None) => format!("{} of {total}", p.progress),
                    (None, None) => format!("{}", p.progress),
                };
                if let CallState::Running { progress } = &mut *progress.state.locked() {
                    *progress = Some(told);
                }
                let mut kept = progress.notifications.locked();
                if kept.len() < KEPT_NOTIFICATIONS {
                    kept.push((progress.started.elapsed().as_millis(), p));
                }
            });
        let done = Arc::clone(&call);
        let task = tokio::spawn(async move {
            let answer = client.request_raw(method, sent, options).await;
            let result = match answer {
                Ok(raw) => serde_json::from_str(raw.get()).map_err(|e| e.to_string()),
                Err(error) => Err(error.to_string()),
            };
            let took_ms = done.started.elapsed().as_millis();
            let mut state = done.state.locked();
            if matches!(*state, CallState::Running { .. }) {
                *state = CallState::Done { result, took_ms };
            }
        });
        *call.task.locked() = Some(task.abort_handle());
        let mut calls = self.by_id.locked();
        calls.insert(id, call);
        if calls.len() > KEPT {
            // The oldest that ended goes; running calls are kept, so a page
            // polling one still finds it.
            let ended = calls
                .iter()
                .find(|(_, c)| !c.is_running())
                .map(|(id, _)| *id);
            if let Some(ended) = ended {
                calls.remove(&ended);
            }
        }
        id
    }

    /// The calls kept that `session` may see, newest first.
    pub(crate) fn kept(&self, session: &Session) -> Vec<(u64, Arc<Call>)> {
        let calls = self.by_id.locked();
        calls
            .iter()
            .rev()
            .filter(|(_, c)| c.seen_by(session))
            .map(|(id, c)| (*id, Arc::clone(c)))
            .collect()
    }

    /// Call `id`, if it is kept and `session` may see it.
    pub(crate) fn get(&self, id: u64, session: &Session) -> Option<Arc<Call>> {
        self.by_id
            .locked()
            .get(&id)
            .filter(|c| c.seen_by(session))
            .cloned()
    }

    /// Keeps what the gateway `decided` for the request whose `_meta` is
    /// `meta`, if it is one of the console's.
    pub(crate) fn decided(&self, meta: &mcp_schema::Meta, decided: Decided) {
        let call = (meta.get(CALL_META))
            .and_then(Value::as_u64)
            .and_then(|id| self.by_id.locked().get(&id).cloned());
        if let Some(call) = call {
            *call.decided.locked() = Some(decided);
        }
    }

    /// Cancels call `id` of `session`; whether it was running.
    pub(crate) fn cancel(&self, id: u64, session: &Session) -> bool {
        let Some(call) = self.get(id, session) else {
            return false;
        };
        let mut state = call.state.locked();
        if !matches!(*state, CallState::Running { .. }) {
            return false;
        }
        *state = CallState::Cancelled;
        if let Some(task) = call.task.locked().take() {
            // Dropping the request sends the server notifications/cancelled.
            task.abort();
        }
        true
    }
}

impl Call {
    /// Whether `session` may see it: the operator sees every call, a
    /// signed-in person their own.
    fn seen_by(&self, session: &Session) -> bool {
        session.user.is_none() || self.owner == session.owner()
    }

    fn is_running(&self) -> bool {
        matches!(*self.state.locked(), CallState::Running { .. })
    }
}

/// Call `id` as its page shows it: its status is polled while it runs;
/// the cancel button stays put (and is hidden once the call ends).
pub(crate) fn view(id: u64, call: &Call) -> Markup {
    html! {
        div.call id={"call-" (id)} data-call=(id) {
            h2 { (call.what) }
            button.cancel hx-post="/console/calls/cancel" hx-vals=(serde_json::json!({"id": id}).to_string())
                hx-target={"#status-" (id)} hx-swap="outerHTML" { "Cancel" }
            (status(id, call))
        }
    }
}

/// Where call `id` is: running (polled), or how it ended.
pub(crate) fn status(id: u64, call: &Call) -> Markup {
    let state = call.state.locked();
    let running = matches!(*state, CallState::Running { .. });
    html! {
        div.status id={"status-" (id)} aria-live="polite"
            hx-get={"/console/calls/" (id)} hx-swap="outerHTML"
            hx-trigger=[running.then_some("every 400ms")] {
            @match &*state {
                CallState::Running { progress } => {
                    p.running data-state="running" {
                        "Running for " (call.started.elapsed().as_secs()) " s"
                        @if let Some(progress) = progress { " — " (progress) }
                    }
                }
                CallState::Cancelled => p.cancelled data-state="cancelled" { "Cancelled." }
                CallState::Done { result: Err(error), took_ms } => {
                    p.error role="alert" data-state="error" { "Failed after " (took_ms) " ms: " (error) }
                }
                CallState::Done { result: Ok(result), took_ms } => {
                    p data-state=(if result.get("isError") == Some(&Value::Bool(true)) { "tool-error" } else { "done" }) {
                        "Answered in " (took_ms) " ms."
                    }
                    (result_view(result))
                }
            }
            @if !running { (decision(call.decided.locked().as_ref())) }
        }
    }
}

/// The notifications a call got, as the history shows them.
pub(crate) fn notifications(call: &Call) -> Markup {
    let kept = call.notifications.locked();
    html! {
        @if !kept.is_empty() {
            details.notifications {
                summary { "Notifications (" (kept.len()) ")" }
                ol {
                    @for (at, p) in kept.iter() {
                        li { small { (at) " ms: " } code { "notifications/progress" } " "
                             (serde_json::to_string(p).unwrap_or_default()) }
                    }
                }
            }
        }
    }
}

/// What the policy decided for a call, and who answered where a person
/// was asked.
fn decision(decided: Option<&Decided>) -> Markup {
    html! {
        @match decided {
            None => {}
            Some(Decided { decision: None, .. }) => {
                p.decision data-decision="none" { small { "No policy rule applies: allowed." } }
            }
            Some(decided) => {
                p.decision data-decision=[decided.decision] {
                    small {
                        "Decision: " strong { (decided.decision.unwrap_or_default()) }
                        " by " code { (decided.rule.as_deref().unwrap_or("the default")) }
                        @if let Some(answer) = decided.answer { "; answered: " strong { (answer) } }
                        "."
                    }
                }
            }
        }
    }
}

/// A result of `tools/call`, `prompts/get` or `resources/read`.
fn result_view(result: &Value) -> Markup {
    html! {
        @if result.get("isError") == Some(&Value::Bool(true)) {
            p.error { "The tool reports an error." }
        }
        @if let Some(Value::Array(blocks)) = result.get("content") {
            section.content aria-label="Content" { @for block in blocks { (content(block)) } }
        }
        @if let Some(structured) = result.get("structuredContent") {
            section aria-label="Structured content" { h3 { "structuredContent" } (json_block(structured)) }
        }
        @if let Some(Value::Array(messages)) = result.get("messages") {
            @if let Some(description) = result.get("description").and_then(Value::as_str) { p { (description) } }
            ol.messages {
                @for message in messages {
                    li { strong { (message.get("role").and_then(Value::as_str).unwrap_or("?")) } ": "
                         @if let Some(block) = message.get("content") { (content(block)) } }
                }
            }
        }
        @if let Some(Value::Array(contents)) = result.get("contents") {
            @for item in contents { (resource_contents(item)) }
        }
        details { summary { "The whole result" } (json_block(result)) }
    }
}

/// One content block.
fn content(block: &Value) -> Markup {
    let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
    match text("type") {
        "text" => html! { pre.text { (text("text")) } },
        "image" => html! {
            img src={"data:" (text("mimeType")) ";base64," (text("data"))} alt="An image the server sent";
        },
        "audio" => html! {
            audio controls src={"data:" (text("mimeType")) ";base64," (text("data"))} {}
        },
        "resource_link" => html! {
            p { "Link: " code { (text("uri")) } @if !text("name").is_empty() { " (" (text("name")) ")" } }
        },
        "resource" => match block.get("resource") {
            Some(resource) => resource_contents(resource),
            None => json_block(block),
        },
        _ => json_block(block),
    }
}

/// A resource's contents: text shown, a blob's size told.
fn resource_contents(item: &Value) -> Markup {
    let uri = item.get("uri").and_then(Value::as_str).unwrap_or_default();
    let mime = item.get("mimeType").and_then(Value::as_str);
    html! {
        figure.resource {
            figcaption { code { (uri) } @if let Some(mime) = mime { " · " (mime) } }
            @if let Some(text) = item.get("text").and_then(Value::as_str) {
                pre.text { (text) }
            } @else if let Some(blob) = item.get("blob").and_then(Value::as_str) {
                p { "Binary, " (blob.len() * 3 / 4) " bytes." }
            }
        }
    }
}
