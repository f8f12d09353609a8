//! Tool calls that run as tasks (2025-11-25): the call creates a task,
//! whose result is asked for at once (the server answers when the task
//! ends, and sends its questions meanwhile); its status is polled and
//! shown on stderr as it changes; Ctrl-C cancels it.

use std::time::Duration;

use anyhow::{Result, bail};
use mcp_client::Client;
use mcp_core::RequestOptions;
use mcp_schema::{CallToolResult, CreateTaskResult, GetTaskResult, Task, TaskStatus, methods};
use serde_json::{Value, json};
use tokio::signal::unix::{SignalKind, signal};

use crate::call::explain;
use crate::stderr::print_err;

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
    tokio::select! {
        outcome = tokio::time::timeout(wait, follow(client, &task)) => match outcome {
            Ok(result) => result,
            Err(_) => {
                cancel(client, &task.task_id).await;
                bail!(
                    "task {} did not end within {}s (--timeout); it was cancelled",
                    task.task_id,
                    wait.as_secs_f64()
                )
            }
        },
        _ = interrupt.recv() => {
            cancel(client, &task.task_id).await;
            bail!("task {} was cancelled (Ctrl-C)", task.task_id)
        }
    }
}

/// Waits for the task's result, showing each new status on the way.
async fn follow(client: &Client, task: &Task) -> Result<CallToolResult> {
    let id = json!({ "taskId": task.task_id });
    let result = client.request::<_, CallToolResult>(methods::TASKS_RESULT, &id, no_timeout());
    tokio::pin!(result);
    let mut shown = status_line(task);
    print_err(&shown);
    let interval = task.poll_interval.map_or(DEFAULT_POLL, |ms| {
        Duration::from_millis(ms.max(SHORTEST_POLL_MS))
    });
    loop {
        tokio::select! {
            result = &mut result => return result.map_err(explain),
            () = tokio::time::sleep(interval) => {
                let now: GetTaskResult = client
                    .request(methods::TASKS_GET, &id, RequestOptions::new())
                    .await
                    .map_err(explain)?;
                let line = status_line(&now.task);
                if line != shown {
                    print_err(&line);
                    shown = line;
                }
            }
        }
    }
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
fn status_line(task: &Task) -> String {
    let status = match task.status {
        TaskStatus::Working => "working",
        TaskStatus::InputRequired => "waiting for input",
        TaskStatus::Completed => "completed",
        TaskStatus::Failed => "failed",
        TaskStatus::Cancelled => "cancelled",
    };
    match &task.status_message {
        Some(message) => format!("task {}: {status} ({message})", task.task_id),
        None => format!("task {}: {status}", task.task_id),
    }
}
