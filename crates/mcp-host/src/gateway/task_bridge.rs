//! Tasks across a hop between eras.
//!
//! A 2025-11-25 client's task-augmented `tools/call` (`params.task`) to a
//! 2026-07-28 upstream, whose tasks are an extension the client must
//! declare and the server chooses to use.
//! The host declares the extension for the call, hands the client the
//! task in its own revision's shape, and answers the client's task
//! requests with the upstream's: `tasks/get` as it is, `tasks/cancel`
//! followed by a `tasks/get` (the client's revision answers it with the
//! task), `tasks/list` by reading each task of the client's, and
//! `tasks/result` by polling the task until it ends, asking the
//! client whatever the task waits for on the way.

use std::sync::Arc;
use std::time::Duration;

use mcp_core::{HandlerResult, RequestContext};
use mcp_schema::{
    ClientCapabilities, CreateTaskResult, DetailedTask, EXTENSION_TASKS, ErrorObject,
    ExtCreateTaskResult, ExtGetTaskResult, ExtTask, ResultType, Task, TaskResult, TaskStatus,
    jsonrpc, methods,
};
use serde_json::{Map, Value};

use super::forward::{answer_for_legacy_client, forward, forward_declaring};
use crate::params::Params;
use crate::rounds::HeldCalls;
use crate::upstream::{Item, Upstream};

/// How many rounds of questions a task may ask a client through the host.
const MAX_ROUNDS: usize = 16;

/// The polling interval used when the upstream suggests none.
const DEFAULT_POLL: Duration = Duration::from_millis(500);

/// Whether a request from this client to `upstream` crosses between the
/// eras' tasks: a legacy client, a 2026-07-28 upstream.
pub(super) fn bridges(ctx: &RequestContext, upstream: &Upstream) -> bool {
    ctx.revision.is_legacy()
        && upstream
            .client()
            .is_ok_and(|client| client.revision().has_tasks_extension())
}

/// The client's capabilities with the tasks extension declared.
fn declaring_tasks(capabilities: &ClientCapabilities) -> ClientCapabilities {
    let mut capabilities = capabilities.clone();
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .entry(EXTENSION_TASKS.to_owned())
        .or_default();
    capabilities
}

/// A legacy client's task-augmented `tools/call`: the upstream decides
/// whether it becomes a task; if it does, the client gets its
/// `CreateTaskResult`, else the result as it is.
pub(super) async fn call_as_task(
    upstream: &Arc<Upstream>,
    mut params: Params,
    ctx: &RequestContext,
    held: &HeldCalls,
) -> HandlerResult {
    params.remove("task");
    let capabilities = declaring_tasks(ctx.client_capabilities());
    let raw = forward_declaring(
        upstream,
        methods::TOOLS_CALL,
        params,
        ctx,
        held,
        &capabilities,
    )
    .await?;
    let Some(task) = ext_task(raw.get()) else {
        return Ok(raw);
    };
    jsonrpc::to_raw(&CreateTaskResult {
        meta: None,
        task: legacy_task(task),
    })
    .map_err(ErrorObject::internal)
}

/// A legacy client's request about a task a 2026-07-28 upstream runs.
pub(super) async fn task_request(
    upstream: &Arc<Upstream>,
    method: &str,
    params: Params,
    ctx: &RequestContext,
    held: &HeldCalls,
) -> HandlerResult {
    let capabilities = declaring_tasks(ctx.client_capabilities());
    match method {
        methods::TASKS_GET | methods::TASKS_CANCEL => {
            // The extension's `tasks/cancel` answers with nothing: the
            // task's state, which the client's revision answers with, is
            // read after it.
            let get = if method == methods::TASKS_CANCEL {
                let again = Params::from_map(params.clone().into_map()?)?;
                forward_declaring(upstream, method, params, ctx, held, &capabilities).await?;
                again
            } else {
                params
            };
            let task =
                detailed(upstream, methods::TASKS_GET, get, ctx, held, &capabilities).await?;
            jsonrpc::to_raw(&TaskResult {
                meta: None,
                result_type: None,
                task: legacy_task(task.task),
            })
            .map_err(ErrorObject::internal)
        }
        methods::TASKS_RESULT => {
            let id = params
                .str("taskId")
                .ok_or_else(|| ErrorObject::invalid_params("\"taskId\" must be a string"))?
                .into_owned();
            task_result(upstream, &id, ctx, held, &capabilities).await
        }
        other => Err(ErrorObject::method_not_found(other)),
    }
}

/// `tasks/list` for a legacy client of tasks a 2026-07-28 upstream runs
/// (the extension has no list): each of `ids` as `tasks/get` finds it,
/// oldest first; those the upstream no longer knows are left out.
pub(super) async fn list(
    upstream: &Arc<Upstream>,
    ids: Vec<String>,
    ctx: &RequestContext,
    held: &HeldCalls,
) -> Vec<Value> {
    let capabilities = declaring_tasks(ctx.client_capabilities());
    let mut tasks = Vec::new();
    for id in ids.into_iter().rev() {
        let Ok(get) = Params::from_map(naming(&id)) else {
            continue;
        };
        let found = detailed(upstream, methods::TASKS_GET, get, ctx, held, &capabilities).await;
        if let Ok(value) = found.map(|task| serde_json::to_value(legacy_task(task.task))) {
            tasks.extend(value.ok());
        }
    }
    tasks
}

/// Polls the task until it ends: its result, or the error it failed
/// with. What it waits for on the way is asked of the client, and the
/// answers sent on with `tasks/update`.
async fn task_result(
    upstream: &Arc<Upstream>,
    id: &str,
    ctx: &RequestContext,
    held: &HeldCalls,
    capabilities: &ClientCapabilities,
) -> HandlerResult {
    let mut rounds = 0;
    loop {
        let get = Params::from_map(naming(id))?;
        let task = detailed(upstream, methods::TASKS_GET, get, ctx, held, capabilities).await?;
        match task.task.status {
            TaskStatus::Completed => {
                let result = task.result.unwrap_or_default();
                return jsonrpc::to_raw(&result).map_err(ErrorObject::internal);
            }
            TaskStatus::Failed => {
                return Err(task.error.unwrap_or_else(|| {
                    ErrorObject::internal(
                        task.task
                            .status_message
                            .unwrap_or_else(|| "the task failed".to_owned()),
                    )
                }));
            }
            TaskStatus::Cancelled => {
                return Err(ErrorObject::internal(format!("task {id} was cancelled")));
            }
            TaskStatus::InputRequired => {
                rounds += 1;
                if rounds > MAX_ROUNDS {
                    return Err(ErrorObject::internal(format!(
                        "server {:?} asked for input more than {MAX_ROUNDS} times",
                        upstream.name()
                    )));
                }
                let questions = match task.input_requests {
                    Some(questions) => serde_json::to_value(questions)
                        .ok()
                        .and_then(|v| v.as_object().cloned())
                        .unwrap_or_default(),
                    None => Map::new(),
                };
                let answers = answer_for_legacy_client(upstream, ctx, questions).await?;
                let mut update = naming(id);
                update.insert("inputResponses".into(), Value::Object(answers));
                let update = Params::from_map(update)?;
                forward_declaring(
                    upstream,
                    methods::TASKS_UPDATE,
                    update,
                    ctx,
                    held,
                    capabilities,
                )
                .await?;
            }
            TaskStatus::Working => {
                let wait = task
                    .task
                    .poll_interval_ms
                    .map(Duration::from_millis)
                    .unwrap_or(DEFAULT_POLL)
                    .clamp(Duration::from_millis(50), Duration::from_secs(5));
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = ctx.cancellation.cancelled() => {
                        return Err(ErrorObject::internal("the request was cancelled"));
                    }
                }
            }
        }
    }
}

/// A task request to the upstream, its answer read as a detailed task.
async fn detailed(
    upstream: &Arc<Upstream>,
    method: &str,
    params: Params,
    ctx: &RequestContext,
    held: &HeldCalls,
    capabilities: &ClientCapabilities,
) -> Result<DetailedTask, ErrorObject> {
    let raw = forward_declaring(upstream, method, params, ctx, held, capabilities).await?;
    serde_json::from_str(raw.get()).map_err(|e| {
        ErrorObject::internal(format!(
            "server {:?} answered {method} with something that is not a task: {e}",
            upstream.name()
        ))
    })
}

/// The task a 2026-07-28 result hands back, if it is one.
fn ext_task(text: &str) -> Option<ExtTask> {
    if !text.contains("\"taskId\"") {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// The params naming task `id`.
fn naming(id: &str) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert("taskId".into(), Value::String(id.to_owned()));
    params
}

/// A 2026-07-28 task in the 2025-11-25 shape.
fn legacy_task(task: ExtTask) -> Task {
    Task {
        task_id: task.task_id,
        status: task.status,
        status_message: task.status_message,
        created_at: task.created_at,
        last_updated_at: task.last_updated_at,
        ttl: task.ttl_ms,
        poll_interval: task.poll_interval_ms,
    }
}

/// Whether a 2026-07-28 client's request to `upstream` crosses between
/// the eras' tasks: the client declared the extension, and the upstream
/// speaks 2025-11-25.
pub(super) fn bridges_to_legacy(ctx: &RequestContext, upstream: &Upstream) -> bool {
    let declared = ctx
        .client_capabilities()
        .extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(EXTENSION_TASKS));
    declared
        && !ctx.revision.is_legacy()
        && upstream
            .client()
            .is_ok_and(|client| client.revision().has_core_tasks())
}

/// Whether a tool, as listed, runs only as a task.
pub(super) fn task_required(tool: &Item) -> bool {
    tool.get("execution")
        .and_then(|e| e.get("taskSupport"))
        .and_then(Value::as_str)
        == Some("required")
}

/// A 2026-07-28 client's call of a 2025-11-25 tool that runs only as a
/// task: the upstream's task, as the extension shows it.
pub(super) async fn call_legacy_task(
    upstream: &Arc<Upstream>,
    mut params: Params,
    ctx: &RequestContext,
    held: &HeldCalls,
) -> HandlerResult {
    params.set("task", &Map::new())?;
    let raw = forward(upstream, methods::TOOLS_CALL, params, ctx, held).await?;
    let created: CreateTaskResult = serde_json::from_str(raw.get()).map_err(|e| {
        ErrorObject::internal(format!(
            "server {:?} answered a task-augmented call without a task: {e}",
            upstream.name()
        ))
    })?;
    jsonrpc::to_raw(&ExtCreateTaskResult::new(modern_task(created.task)))
        .map_err(ErrorObject::internal)
}

/// A 2026-07-28 client's request about a task a 2025-11-25 upstream
/// runs.
pub(super) async fn legacy_task_request(
    upstream: &Arc<Upstream>,
    method: &str,
    params: Params,
    ctx: &RequestContext,
    held: &HeldCalls,
) -> HandlerResult {
    match method {
        methods::TASKS_GET => {
            let id = params
                .str("taskId")
                .ok_or_else(|| ErrorObject::invalid_params("\"taskId\" must be a string"))?
                .into_owned();
            let raw = forward(upstream, method, params, ctx, held).await?;
            let state: TaskResult = serde_json::from_str(raw.get()).map_err(|e| {
                ErrorObject::internal(format!(
                    "server {:?} answered tasks/get with something that is not a task: {e}",
                    upstream.name()
                ))
            })?;
            let task = detail(upstream, &id, modern_task(state.task), ctx, held).await?;
            jsonrpc::to_raw(&ExtGetTaskResult {
                result_type: Some(ResultType::Complete),
                meta: None,
                task,
            })
            .map_err(ErrorObject::internal)
        }
        methods::TASKS_CANCEL => {
            // Eventually consistent in the extension: acknowledged even
            // when the task had ended already.
            match forward(upstream, method, params, ctx, held).await {
                Ok(_) => {}
                Err(error) if error.code == mcp_schema::error_codes::INVALID_PARAMS => {}
                Err(error) => return Err(error),
            }
            jsonrpc::to_raw(&Map::new()).map_err(ErrorObject::internal)
        }
        _ => Err(ErrorObject::invalid_request(format!(
            "server {:?} speaks 2025-11-25, whose tasks take no {method}",
            upstream.name()
        ))),
    }
}

/// What the extension shows of a 2025-11-25 task: once it ended, its
/// result (a tool's error too, which the extension counts as completed)
/// or its error, read with `tasks/result`.
async fn detail(
    upstream: &Arc<Upstream>,
    id: &str,
    mut task: ExtTask,
    ctx: &RequestContext,
    held: &HeldCalls,
) -> Result<DetailedTask, ErrorObject> {
    match task.status {
        TaskStatus::Completed | TaskStatus::Failed => {
            let result = Params::from_map(naming(id))?;
            let mut detailed = DetailedTask::plain(task);
            match forward(upstream, methods::TASKS_RESULT, result, ctx, held).await {
                Ok(raw) => {
                    detailed.task.status = TaskStatus::Completed;
                    detailed.result =
                        Some(serde_json::from_str(raw.get()).map_err(ErrorObject::internal)?);
                }
                Err(error) => {
                    detailed.task.status = TaskStatus::Failed;
                    detailed.error = Some(error);
                }
            }
            Ok(detailed)
        }
        TaskStatus::InputRequired => {
            task.status_message = Some(format!(
                "server {:?} (2025-11-25) waits for input, which it asks for in a way a \
                 2026-07-28 client cannot answer through the host; cancel the task",
                upstream.name()
            ));
            Ok(DetailedTask::plain(task))
        }
        TaskStatus::Working | TaskStatus::Cancelled => Ok(DetailedTask::plain(task)),
    }
}

/// A 2025-11-25 task in the extension's shape.
fn modern_task(task: Task) -> ExtTask {
    ExtTask {
        task_id: task.task_id,
        status: task.status,
        status_message: task.status_message,
        created_at: task.created_at,
        last_updated_at: task.last_updated_at,
        ttl_ms: task.ttl,
        poll_interval_ms: task.poll_interval,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_modern_task_takes_the_legacy_shape() {
        let text = r#"{"taskId":"t1","status":"working","createdAt":"2026-01-01T00:00:00Z",
            "lastUpdatedAt":"2026-01-01T00:00:01Z","ttlMs":60000,"pollIntervalMs":200}"#;
        let task = legacy_task(ext_task(text).expect("a task"));
        let shown = serde_json::to_value(CreateTaskResult { meta: None, task }).unwrap();
        assert_eq!(shown["task"]["taskId"], "t1");
        assert_eq!(shown["task"]["ttl"], 60000);
        assert_eq!(shown["task"]["pollInterval"], 200);
        assert_eq!(ext_task(r#"{"content":[]}"#), None);
    }

    #[test]
    fn declaring_tasks_keeps_what_the_client_declared() {
        let declared: ClientCapabilities =
            serde_json::from_value(serde_json::json!({"elicitation": {}})).unwrap();
        let with = declaring_tasks(&declared);
        assert!(with.elicitation.is_some());
        assert!(with.extensions.unwrap().contains_key(EXTENSION_TASKS));
    }
}
