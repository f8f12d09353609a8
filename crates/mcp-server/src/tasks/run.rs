//! A task's run: the tool called in the background, its outcome kept.

use std::sync::Arc;

use mcp_core::RequestContext;
use mcp_schema::{CallToolResult, ErrorObject, JsonObject, TaskStatus};
use serde_json::Value;

use super::store::{Outcome, TaskEntry};
use crate::context::{HandlerError, InputRound};
use crate::server::Server;
use crate::tool::ToolDef;

/// Runs a task's tool call to its end, round after round when the handler
/// asks the client for input (modern era), unless it is cancelled or
/// expires first.
pub(super) async fn run_task(
    server: Server,
    entry: Arc<TaskEntry>,
    tool: Arc<ToolDef>,
    args: JsonObject,
    request: RequestContext,
    first_round: InputRound,
) {
    let deadline = tokio::time::Instant::from_std(entry.expires);
    let revision = request.revision;
    let mut round = first_round;
    loop {
        let ctx = server.handler_context(request.clone(), round);
        let work = (tool.handler)(args.clone(), ctx.clone());
        let Some(outcome) = until_ended(&server, &entry, deadline, work).await else {
            return;
        };
        let (status, outcome, message) = match outcome {
            Err(HandlerError::InputRequired) if ctx.round().has_questions() => {
                let (asked, state, mut responses) = ctx.round().suspend();
                if entry.ask(asked) {
                    server.task_changed(&entry);
                }
                let Some(answers) = until_ended(&server, &entry, deadline, entry.answered()).await
                else {
                    return;
                };
                responses.extend(answers);
                round = InputRound::resume(responses, state);
                continue;
            }
            Err(HandlerError::InputRequired | HandlerError::ContinueAsTask) => {
                let error = ErrorObject::internal("handler asked for input without a question");
                let message = error.message.clone();
                (TaskStatus::Failed, Outcome::Error(error), Some(message))
            }
            Err(HandlerError::Protocol(error)) => {
                let message = error.message.clone();
                (TaskStatus::Failed, Outcome::Error(error), Some(message))
            }
            Err(HandlerError::Failed(message)) => {
                tool_outcome(CallToolResult::error(message), revision, entry.modern)
            }
            Ok(result) => tool_outcome(result, revision, entry.modern),
        };
        if entry.finish(status, outcome, message) {
            server.task_changed(&entry);
        }
        return;
    }
}

/// What `work` comes to, unless the task is cancelled or reaches its
/// `deadline` first (then `None`; an expiry is told to the task's
/// watchers).
async fn until_ended<T>(
    server: &Server,
    entry: &TaskEntry,
    deadline: tokio::time::Instant,
    work: impl Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        biased;
        _ = entry.cancel.cancelled() => None,
        _ = tokio::time::sleep_until(deadline) => {
            if entry.expire() {
                server.task_changed(entry);
            }
            None
        }
        outcome = work => Some(outcome),
    }
}

/// The end of a task whose tool returned `result`. A tool error
/// (`isError: true`) fails the task in 2025-11-25 but completes it in the
/// extension, where `failed` means a JSON-RPC error.
fn tool_outcome(
    mut result: CallToolResult,
    revision: mcp_schema::ProtocolVersion,
    modern: bool,
) -> (TaskStatus, Outcome, Option<String>) {
    if !revision.has_structured_output() {
        result.structured_content = None;
    }
    let is_error = result.is_error == Some(true);
    let status = if is_error && !modern {
        TaskStatus::Failed
    } else {
        TaskStatus::Completed
    };
    let message = is_error.then(|| "The tool reported an error.".to_owned());
    match serde_json::to_value(&result) {
        Ok(Value::Object(object)) => (status, Outcome::Result(object), message),
        _ => {
            let error = ErrorObject::internal("the tool result does not serialize");
            (TaskStatus::Failed, Outcome::Error(error), None)
        }
    }
}
