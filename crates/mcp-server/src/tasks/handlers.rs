//! The task requests (`tasks/get`, `tasks/result`, `tasks/list`,
//! `tasks/cancel`, `tasks/update`) and the start of a task.

use std::sync::Arc;
use std::time::Duration;

use mcp_core::{HandlerResult, Progress, RequestContext};
use mcp_schema::jsonrpc;
use mcp_schema::{
    CreateTaskResult, ErrorObject, ExtCreateTaskResult, ExtGetTaskResult, JsonObject,
    ListTasksResult, PaginatedRequestParams, ResultType, TaskIdParams, TaskResult, methods,
};
use serde_json::Value;

use super::era::{declares_tasks_extension, tasks_extension_required};
use super::run::run_task;
use super::store::Outcome;
use crate::context::{InputRound, Purpose};
use crate::server::{CallParams, Server, to_result};
use crate::tool::ToolDef;
use mcp_core::TaskScope;

fn task_not_found(id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("Failed to retrieve task: Task not found: {id}"))
}

const LIST_CURSOR_PURPOSE: &str = "tasks/list";

impl Server {
    /// Starts `tool` as a task and answers with the task's handle.
    pub(crate) fn start_task(
        &self,
        tool: Arc<ToolDef>,
        args: JsonObject,
        params: &CallParams<'_>,
        ttl: Option<Duration>,
        ctx: RequestContext,
    ) -> HandlerResult {
        let round = if ctx.revision.uses_input_required() {
            let purpose = Purpose {
                method: methods::TOOLS_CALL,
                name: &params.name,
            };
            InputRound::open(
                &self.signer(),
                purpose,
                params.request_state.as_deref(),
                params.input_responses.clone(),
            )?
        } else {
            InputRound::default()
        };
        self.launch_task(tool, args, ttl, ctx, round)
    }

    /// Creates the task, runs the tool in it from `round` on, and answers
    /// with the task's handle.
    pub(crate) fn launch_task(
        &self,
        tool: Arc<ToolDef>,
        args: JsonObject,
        ttl: Option<Duration>,
        ctx: RequestContext,
        round: InputRound,
    ) -> HandlerResult {
        let modern = !ctx.revision.is_legacy();
        let owner = TaskScope::of(&ctx);
        let notify = (!modern).then(|| ctx.peer.related_to(None));
        let entry = self.task_store().create(owner, modern, ttl, notify)?;
        // The work outlives the request: its own token, no progress (the
        // request's progress ends with its response) and, in the modern
        // era, no log messages.
        let mut work_ctx = ctx;
        work_ctx.cancellation = entry.cancel.clone();
        work_ctx.progress = Progress::disabled();
        if modern {
            let mut meta = (*work_ctx.meta).clone();
            meta.log_level = None;
            meta.progress_token = None;
            work_ctx.meta = Arc::new(meta);
        }
        tokio::spawn(run_task(
            self.clone(),
            Arc::clone(&entry),
            tool,
            args,
            work_ctx,
            round,
        ));
        if modern {
            to_result(&ExtCreateTaskResult::new(entry.ext_task()))
        } else {
            to_result(&CreateTaskResult {
                meta: None,
                task: entry.task(),
            })
        }
    }

    /// Answers `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`
    /// and `tasks/update`.
    pub(crate) async fn task_request(
        &self,
        method: &str,
        params: Option<&str>,
        ctx: RequestContext,
    ) -> HandlerResult {
        let modern = ctx.revision.has_tasks_extension();
        if modern && !declares_tasks_extension(ctx.client_capabilities()) {
            return Err(tasks_extension_required(method));
        }
        let owner = TaskScope::of(&ctx);
        let store = self.task_store();
        if method == methods::TASKS_LIST {
            let cursor = jsonrpc::from_params_text::<PaginatedRequestParams>(params)?.cursor;
            return self.list_tasks(owner, cursor.as_deref());
        }
        if method == methods::TASKS_UPDATE {
            // Answers under keys the task does not wait for are ignored
            // unread, as the extension asks; the awaited ones must be valid.
            #[derive(serde::Deserialize)]
            #[serde(rename_all = "camelCase")]
            struct Update {
                task_id: String,
                #[serde(default)]
                input_responses: JsonObject,
            }
            let update: Update = jsonrpc::from_params_text(params)?;
            let task = store
                .get(&update.task_id, owner)
                .ok_or_else(|| task_not_found(&update.task_id))?;
            let mut answers = mcp_schema::InputResponses::new();
            for (key, value) in update.input_responses {
                if task.waits_for(&key) {
                    let answer = serde_json::from_value(value).map_err(|e| {
                        ErrorObject::invalid_params(format!("inputResponses[{key:?}]: {e}"))
                    })?;
                    answers.insert(key, answer);
                }
            }
            if task.answer(answers) {
                self.task_changed(&task);
            }
            return to_result(&serde_json::json!({}));
        }
        let id = jsonrpc::from_params_text::<TaskIdParams>(params)?.task_id;
        let task = store.get(&id, owner).ok_or_else(|| task_not_found(&id))?;
        match method {
            methods::TASKS_GET if modern => to_result(&ExtGetTaskResult {
                result_type: Some(ResultType::Complete),
                meta: None,
                task: task.detailed(),
            }),
            methods::TASKS_GET => to_result(&TaskResult {
                meta: None,
                result_type: None,
                task: task.task(),
            }),
            // 2026-07-28: cancelling is an eventually consistent request,
            // acknowledged even when the task has already finished.
            methods::TASKS_CANCEL if modern => {
                if task.cancel().is_ok() {
                    self.task_changed(&task);
                }
                to_result(&serde_json::json!({}))
            }
            methods::TASKS_CANCEL => {
                task.cancel().map_err(|status| {
                    let status = serde_json::to_value(status).unwrap_or(Value::Null);
                    ErrorObject::invalid_params(format!(
                        "Cannot cancel task {}: it is already {}",
                        task.id,
                        status.as_str().unwrap_or("finished")
                    ))
                })?;
                self.task_changed(&task);
                {
                    to_result(&TaskResult {
                        meta: None,
                        result_type: None,
                        task: task.task(),
                    })
                }
            }
            methods::TASKS_RESULT => {
                task.finished().await;
                match task.outcome() {
                    Some(Outcome::Result(mut result)) => {
                        let meta = result
                            .entry("_meta")
                            .or_insert_with(|| Value::Object(JsonObject::new()));
                        if let Value::Object(meta) = meta {
                            meta.insert(
                                mcp_schema::META_RELATED_TASK.to_owned(),
                                serde_json::json!({ "taskId": task.id }),
                            );
                        }
                        to_result(&result)
                    }
                    Some(Outcome::Error(error)) => Err(error),
                    None => Err(ErrorObject::internal(format!(
                        "task {} was cancelled before it produced a result",
                        task.id
                    ))
                    .with_data(serde_json::json!({ "taskId": task.id, "status": "cancelled" }))),
                }
            }
            other => Err(ErrorObject::method_not_found(other)),
        }
    }

    fn list_tasks(&self, owner: TaskScope, cursor: Option<&str>) -> HandlerResult {
        let after = match cursor {
            None => 0,
            Some(cursor) => self
                .signer()
                .open(LIST_CURSOR_PURPOSE, cursor)
                .and_then(|bytes| <[u8; 8]>::try_from(bytes.as_slice()).ok())
                .map(u64::from_be_bytes)
                .ok_or_else(|| ErrorObject::invalid_params("invalid cursor"))?,
        };
        let page_size = self.page_size();
        let tasks: Vec<_> = self
            .task_store()
            .list(owner)
            .into_iter()
            .filter(|t| t.seq > after)
            .collect();
        let more = tasks.len() > page_size;
        let page = &tasks[..tasks.len().min(page_size)];
        let next_cursor = match page.last() {
            Some(last) if more => Some(
                self.signer()
                    .seal(LIST_CURSOR_PURPOSE, &last.seq.to_be_bytes()),
            ),
            _ => None,
        };
        to_result(&ListTasksResult {
            meta: None,
            tasks: page.iter().map(|t| t.task()).collect(),
            next_cursor,
        })
    }
}
