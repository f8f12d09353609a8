//! Tool calls that run as tasks. In 2025-11-25 the call asks for a task,
//! whose result is asked for at once (the server answers when the task
//! ends, and sends its questions meanwhile). In 2026-07-28 (the
//! `io.modelcontextprotocol/tasks` extension, which mcp declares) the
//! server decides, and the task is polled to its end, its questions
//! answered on the way. Either way its status is shown on stderr as it
//! changes, and Ctrl-C cancels it.

use std::time::Duration;

use anyhow::{Result, bail};
use mcp_client::Client;
use mcp_core::RequestOptions;
use mcp_schema::{
    CallToolResult, CreateTaskResult, ExtCreateTaskResult, ExtGetTaskResult, ExtTask,
    GetTaskResult, Task, TaskStatus, UpdateTaskRequestParams, methods,
};
use serde_json::{Value, json};
use tokio::signal::unix::{SignalKind, signal};

use crate::stderr::print_err;
use crate::target::explain;

/// How often a task is polled when the server suggests no interval.
const DEFAULT_POLL: Duration = Duration::from_millis(500);

/// The fewest milliseconds between polls, whatever the server suggests.
const SHORTEST_POLL_MS: u64 = 50;

/// Calls tool `name` as a task and waits at most `wait` for its result.
/// `options` go with the call that creates the task.
pub async fn call_as_task(
    client: &Client,
    name: &str,
    arguments: Value,
    options: RequestOptions,
    wait: Duration,
) -> Result<CallToolResult> {
    // Listened for before the task exists, so that no Ctrl-C is missed.
    let mut interrupt = signal(SignalKind::interrupt())?;
    let params = json!({ "name": name, "arguments": arguments, "task": {} });
    let created: CreateTaskResult = client
        .request(methods::TOOLS_CALL, &params, options)
        .await
        .map_err(explain)?;
    let task = created.task;
    print_err(&format!("{name} runs as task {}", task.task_id));
    let followed = follow(client, &task);
    end(client, &task.task_id, followed, wait, &mut interrupt).await
}

/// The end of a `tools/call` of tool `name` in 2026-07-28, given its
/// `result`: the result itself, or, when the server chose to run the
/// call as a task, the task's result once it has ended, at most `wait`
/// later.
pub async fn call_outcome(
    client: &Client,
    name: &str,
    result: Value,
    wait: Duration,
) -> Result<CallToolResult> {
    if result.get("resultType").and_then(Value::as_str) != Some("task") {
        return serde_json::from_value(result)
            .map_err(|e| anyhow::anyhow!("the server's tools/call result is not one: {e}"));
    }
    let mut interrupt = signal(SignalKind::interrupt())?;
    let created: ExtCreateTaskResult = serde_json::from_value(result)
        .map_err(|e| anyhow::anyhow!("the server's task handle is not one: {e}"))?;
    let task = created.task;
    print_err(&format!("{name} runs as task {}", task.task_id));
    let followed = follow_extension(client, &task);
    end(client, &task.task_id, followed, wait, &mut interrupt).await
}

/// Waits at most `wait` for `followed`, the result of task `task_id`;
/// on Ctrl-C or when the wait is over, cancels the task.
async fn end(
    client: &Client,
    task_id: &str,
    followed: impl Future<Output = Result<CallToolResult>>,
    wait: Duration,
    interrupt: &mut tokio::signal::unix::Signal,
) -> Result<CallToolResult> {
    tokio::select! {
        outcome = tokio::time::timeout(wait, followed) => match outcome {
            Ok(result) => result,
            Err(_) => {
                cancel(client, task_id).await;
                bail!(
                    "task {task_id} did not end within {}s (--timeout); it was cancelled",
                    wait.as_secs_f64()
                )
            }
        },
        _ = interrupt.recv() => {
            cancel(client, task_id).await;
            bail!("task {task_id} was cancelled (Ctrl-C)")
        }
    }
}

/// Waits for the task's result, showing each new status on the way.
async fn follow(client: &Client, task: &Task) -> Result<CallToolResult> {
    let id = json!({ "taskId": task.task_id });
    let result = client.request::<_, CallToolResult>(methods::TASKS_RESULT, &id, no_timeout());
    tokio::pin!(result);
    let mut shown = status_line(&task.task_id, task.status, task.status_message.as_deref());
    print_err(&shown);
    let interval = poll_interval(task.poll_interval);
    loop {
        tokio::select! {
            result = &mut result => return result.map_err(explain),
            () = tokio::time::sleep(interval) => {
                let now: GetTaskResult = client
                    .request(methods::TASKS_GET, &id, RequestOptions::new())
                    .await
                    .map_err(explain)?;
                let now = now.task;
                let line = status_line(&now.task_id, now.status, now.status_message.as_deref());
                if line != shown {
                    print_err(&line);
                    shown = line;
                }
            }
        }
    }
}

/// Polls a task of the 2026-07-28 extension to its end, showing each new
/// status on the way and answering its questions as they come.
async fn follow_extension(client: &Client, task: &ExtTask) -> Result<CallToolResult> {
    let id = json!({ "taskId": task.task_id });
    let mut shown = status_line(&task.task_id, task.status, task.status_message.as_deref());
    print_err(&shown);
    let interval = poll_interval(task.poll_interval_ms);
    loop {
        tokio::time::sleep(interval).await;
        let now: ExtGetTaskResult = client
            .request(methods::TASKS_GET, &id, RequestOptions::new())
            .await
            .map_err(explain)?;
        let now = now.task;
        let state = &now.task;
        let line = status_line(
            &state.task_id,
            state.status,
            state.status_message.as_deref(),
        );
        if line != shown {
            print_err(&line);
            shown = line;
        }
        match state.status {
            TaskStatus::Working => {}
            TaskStatus::InputRequired => {
                // The server takes answers before it acknowledges them, so
                // what it still asks after that is a new question.
                let asked = now.input_requests.unwrap_or_default();
                if asked.is_empty() {
                    continue;
                }
                let answers = client.answer_input_requests(asked).await.map_err(explain)?;
                let update = UpdateTaskRequestParams {
                    meta: None,
                    task_id: state.task_id.clone(),
                    input_responses: answers,
                };
                client
                    .request::<_, Value>(methods::TASKS_UPDATE, &update, RequestOptions::new())
                    .await
                    .map_err(explain)?;
            }
            TaskStatus::Completed => {
                let result = Value::Object(now.result.unwrap_or_default());
                return serde_json::from_value(result).map_err(|e| {
                    anyhow::anyhow!("task {}'s result is not a tool's: {e}", state.task_id)
                });
            }
            TaskStatus::Failed => match now.error {
                Some(error) => bail!(
                    "task {} failed: error {}: {}",
                    state.task_id,
                    error.code,
                    error.message
                ),
                None => bail!("task {} failed", state.task_id),
            },
            TaskStatus::Cancelled => bail!("task {} was cancelled by the server", state.task_id),
        }
    }
}

/// The time between polls: what the server suggests, within reason.
fn poll_interval(suggested_ms: Option<u64>) -> Duration {
    suggested_ms.map_or(DEFAULT_POLL, |ms| {
        Duration::from_millis(ms.max(SHORTEST_POLL_MS))
    })
}

/// Options for a request bounded by the caller's own deadline only.
fn no_timeout() -> RequestOptions {
    RequestOptions::new().timeout(Duration::from_secs(24 * 60 * 60))
}

/// Asks the server to cancel the task; what it answers does not matter
/// any more.
async fn cancel(client: &Client, task_id: &str) {
    let id = json!({ "taskId": task_id });
    let cancelled = client
        .request::<_, Value>(methods::TASKS_CANCEL, &id, RequestOptions::new())
        .await;
    if let Err(e) = cancelled {
        print_err(&format!("cancelling task {task_id} failed: {e}"));
    }
}

/// A task's status for people: `task T: working (message)`.
fn status_line(task_id: &str, status: TaskStatus, message: Option<&str>) -> String {
    let status = match status {
        TaskStatus::Working => "working",
        TaskStatus::InputRequired => "waiting for input",
        TaskStatus::Completed => "completed",
        TaskStatus::Failed => "failed",
        TaskStatus::Cancelled => "cancelled",
    };
    match message {
        Some(message) => format!("task {task_id}: {status} ({message})"),
        None => format!("task {task_id}: {status}"),
    }
}
