//! Tasks: tool calls that run in the background while the client polls.
//!
//! One feature, two shapes:
//!
//! - **2025-11-25** (experimental, in the core protocol): the client asks
//!   for a task with `params.task` on `tools/call` (for a tool whose
//!   `execution.taskSupport` allows it) and gets a nested
//!   `CreateTaskResult`; then `tasks/get`, `tasks/result` (waits for the
//!   end and returns what the call would have returned), `tasks/list` and
//!   `tasks/cancel`. A task belongs to the session that created it.
//! - **2026-07-28** (extension `io.modelcontextprotocol/tasks`): the server
//!   decides; when the request declares the extension and the tool supports
//!   tasks, `tools/call` answers a flat `CreateTaskResult` (`resultType:
//!   "task"`). `tasks/get` inlines the result, the error or the questions
//!   (`inputRequests`), `tasks/update` answers the questions, `tasks/cancel`
//!   acknowledges. There are no sessions: whoever holds the id, which is
//!   unguessable, may use the task.
//!
//! The [`TaskStore`] keeps tasks in memory, bounded in number, each for its
//! time to live.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mcp_core::{HandlerResult, Owner, Peer, Progress, RequestContext};
use mcp_schema::jsonrpc;
use mcp_schema::{
    CallToolResult, ClientCapabilities, CreateTaskResult, DetailedTask, ErrorObject,
    ExtCreateTaskResult, ExtGetTaskResult, ExtTask, InputRequests, InputResponses, JsonObject,
    ListTasksResult, MissingRequiredClientCapabilityData, PaginatedRequestParams, ResultType, Task,
    TaskIdParams, TaskMetadata, TaskResult, TaskStatus, TaskSupport, error_codes, methods,
};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::context::{Context, HandlerError, InputRound, Purpose};
use crate::server::{CallParams, Server, to_result};
use crate::tool::ToolDef;

/// Limits of the task store.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TaskConfig {
    /// How many tasks are kept at once, running or finished. When full, the
    /// oldest finished task is forgotten; if every task is still running,
    /// new tasks are refused.
    pub max_tasks: usize,
    /// How long a task is kept when the client does not say.
    pub default_ttl: Duration,
    /// The longest a task is kept, whatever the client asks.
    pub max_ttl: Duration,
    /// How often clients are told to poll.
    pub poll_interval: Duration,
}

impl Default for TaskConfig {
    /// 1000 tasks, kept 10 minutes by default and an hour at most; poll
    /// every half second.
    fn default() -> Self {
        TaskConfig {
            max_tasks: 1000,
            default_ttl: Duration::from_secs(600),
            max_ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_millis(500),
        }
    }
}

impl TaskConfig {
    /// Sets how many tasks are kept at once.
    pub fn max_tasks(mut self, n: usize) -> Self {
        self.max_tasks = n.max(1);
        self
    }

    /// Sets how long tasks are kept when the client does not say.
    pub fn default_ttl(mut self, ttl: Duration) -> Self {
        self.default_ttl = ttl;
        self
    }

    /// Sets the longest a task is kept.
    pub fn max_ttl(mut self, ttl: Duration) -> Self {
        self.max_ttl = ttl;
        self
    }

    /// Sets the polling interval suggested to clients.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }
}

/// The shortest time to live a client may ask for.
const MIN_REQUESTED_TTL: Duration = Duration::from_secs(1);

/// Who may see a task.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum TaskOwner {
    /// The legacy session with this (random) identity.
    Session(u128),
    /// Whoever the transport authenticated as this owner and knows the id
    /// (modern era, behind an authorization layer).
    Caller(Owner),
    /// Anyone who knows the id (modern era, no authorization layer).
    Anyone,
}

/// A legacy session's identity as a task owner, kept in the session's
/// extensions. Random, so a later session can never pass for this one.
struct SessionTaskOwner(u128);

impl TaskOwner {
    /// The owner of tasks a request creates or may see.
    pub(crate) fn of(ctx: &RequestContext) -> TaskOwner {
        if ctx.revision.is_legacy() {
            let owner = ctx
                .peer
                .extensions()
                .get_or_insert_with(|| SessionTaskOwner(rand::random()));
            TaskOwner::Session(owner.0)
        } else {
            match ctx.extensions().get::<Owner>() {
                Some(owner) => TaskOwner::Caller(Owner::clone(&owner)),
                None => TaskOwner::Anyone,
            }
        }
    }

    /// The owner a legacy session's tasks have, if it created any.
    pub(crate) fn of_session(peer: &Peer) -> Option<TaskOwner> {
        peer.extensions()
            .get::<SessionTaskOwner>()
            .map(|o| TaskOwner::Session(o.0))
    }
}

/// How a task ended.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome {
    /// The request's result (a `CallToolResult`).
    Result(JsonObject),
    /// The JSON-RPC error the request failed with.
    Error(ErrorObject),
}

#[derive(Debug)]
struct TaskState {
    status: TaskStatus,
    message: Option<String>,
    updated_at: String,
    outcome: Option<Outcome>,
    /// Questions the client has not answered yet.
    pending: InputRequests,
    /// Answers not yet handed to the handler.
    answers: InputResponses,
}

/// One task: its identity, limits, state and the token that stops its work.
#[derive(Debug)]
pub(crate) struct TaskEntry {
    pub(crate) id: String,
    pub(crate) owner: TaskOwner,
    /// Modern-era shapes and rules (a tool error is `completed`).
    pub(crate) modern: bool,
    seq: u64,
    created_at: String,
    ttl: Duration,
    poll_interval: Duration,
    pub(crate) expires: Instant,
    /// Cancelled when the task is cancelled, expires or its session ends.
    pub(crate) cancel: CancellationToken,
    /// Where `notifications/tasks/status` go (legacy sessions).
    pub(crate) notify: Option<Peer>,
    state: Mutex<TaskState>,
    status: watch::Sender<TaskStatus>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl TaskEntry {
    /// Applies `change` to the state; when it reports a change, stamps the
    /// update time and wakes whoever waits on the status.
    fn update(&self, change: impl FnOnce(&mut TaskState) -> bool) -> bool {
        let status = {
            let mut state = lock(&self.state);
            if !change(&mut state) {
                return false;
            }
            state.updated_at = iso8601(SystemTime::now());
            state.status
        };
        self.status.send_replace(status);
        true
    }

    /// The current status.
    pub(crate) fn status(&self) -> TaskStatus {
        lock(&self.state).status
    }

    /// How the task ended, once it has.
    pub(crate) fn outcome(&self) -> Option<Outcome> {
        lock(&self.state).outcome.clone()
    }

    /// Ends the task unless it already ended. Returns whether it changed.
    pub(crate) fn finish(
        &self,
        status: TaskStatus,
        outcome: Outcome,
        message: Option<String>,
    ) -> bool {
        self.update(|s| {
            if s.status.is_terminal() {
                return false;
            }
            s.status = status;
            s.outcome = Some(outcome);
            s.message = message;
            s.pending.clear();
            true
        })
    }

    /// Cancels the task and stops its work; `Err` with the status when it
    /// had already ended.
    pub(crate) fn cancel(&self) -> Result<(), TaskStatus> {
        let mut ended = None;
        self.update(|s| {
            if s.status.is_terminal() {
                ended = Some(s.status);
                return false;
            }
            s.status = TaskStatus::Cancelled;
            s.message = Some("The task was cancelled.".to_owned());
            s.pending.clear();
            true
        });
        match ended {
            Some(status) => Err(status),
            None => {
                self.cancel.cancel();
                Ok(())
            }
        }
    }

    /// Fails the task for outliving its time to live and stops its work.
    pub(crate) fn expire(&self) -> bool {
        let changed = self.finish(
            TaskStatus::Failed,
            Outcome::Error(ErrorObject::internal("the task outlived its time to live")),
            Some("The task expired.".to_owned()),
        );
        self.cancel.cancel();
        changed
    }

    /// Records questions for the client (modern era): the task waits in
    /// `input_required` until they are all answered.
    pub(crate) fn ask(&self, requests: InputRequests) -> bool {
        self.update(|s| {
            if s.status.is_terminal() {
                return false;
            }
            s.pending.extend(requests);
            s.status = TaskStatus::InputRequired;
            s.message = Some("Waiting for input from the client.".to_owned());
            true
        })
    }

    /// Takes the answers to outstanding questions (others are ignored);
    /// once none is outstanding the task works again. Returns whether the
    /// task changed.
    /// Whether the task waits for an answer under `key`.
    pub(crate) fn waits_for(&self, key: &str) -> bool {
        lock(&self.state).pending.contains_key(key)
    }

    pub(crate) fn answer(&self, responses: InputResponses) -> bool {
        self.update(|s| {
            if s.status != TaskStatus::InputRequired {
                return false;
            }
            let mut took = false;
            for (key, response) in responses {
                if s.pending.remove(&key).is_some() {
                    s.answers.insert(key, response);
                    took = true;
                }
            }
            if s.pending.is_empty() {
                s.status = TaskStatus::Working;
                s.message = None;
                return true;
            }
            took
        })
    }

    /// Waits until the task no longer waits for input, and takes the answers.
    pub(crate) async fn answered(&self) -> InputResponses {
        let mut status = self.status.subscribe();
        let _ = status.wait_for(|s| *s != TaskStatus::InputRequired).await;
        std::mem::take(&mut lock(&self.state).answers)
    }

    /// Waits until the task has ended.
    pub(crate) async fn finished(&self) {
        let mut status = self.status.subscribe();
        let _ = status.wait_for(|s| s.is_terminal()).await;
    }

    fn parts(&self) -> (TaskStatus, Option<String>, String) {
        let state = lock(&self.state);
        (
            state.status,
            state.message.clone(),
            state.updated_at.clone(),
        )
    }

    /// The task in the 2025-11-25 shape.
    pub(crate) fn task(&self) -> Task {
        let (status, status_message, last_updated_at) = self.parts();
        Task {
            task_id: self.id.clone(),
            status,
            status_message,
            created_at: self.created_at.clone(),
            last_updated_at,
            ttl: Some(self.ttl.as_millis() as u64),
            poll_interval: Some(self.poll_interval.as_millis() as u64),
        }
    }

    /// The task in the 2026-07-28 extension's shape.
    pub(crate) fn ext_task(&self) -> ExtTask {
        let (status, status_message, last_updated_at) = self.parts();
        ExtTask {
            task_id: self.id.clone(),
            status,
            status_message,
            created_at: self.created_at.clone(),
            last_updated_at,
            ttl_ms: Some(self.ttl.as_millis() as u64),
            poll_interval_ms: Some(self.poll_interval.as_millis() as u64),
        }
    }

    /// The task with what its status carries (2026-07-28 extension).
    pub(crate) fn detailed(&self) -> DetailedTask {
        let state = lock(&self.state);
        let task = ExtTask {
            task_id: self.id.clone(),
            status: state.status,
            status_message: state.message.clone(),
            created_at: self.created_at.clone(),
            last_updated_at: state.updated_at.clone(),
            ttl_ms: Some(self.ttl.as_millis() as u64),
            poll_interval_ms: Some(self.poll_interval.as_millis() as u64),
        };
        let mut detailed = DetailedTask::plain(task);
        match (state.status, &state.outcome) {
            (TaskStatus::InputRequired, _) => detailed.input_requests = Some(state.pending.clone()),
            (TaskStatus::Completed, Some(Outcome::Result(result))) => {
                detailed.result = Some(result.clone())
            }
            (TaskStatus::Failed, Some(Outcome::Error(error))) => {
                detailed.error = Some(error.clone())
            }
            _ => {}
        }
        detailed
    }
}

/// The tasks of one server, in memory: bounded in number, each kept for
/// its time to live, keyed by random 128-bit ids.
#[derive(Debug)]
pub(crate) struct TaskStore {
    config: TaskConfig,
    tasks: Mutex<HashMap<String, Arc<TaskEntry>>>,
    next_seq: AtomicU64,
}

/// A fresh task id: 128 random bits, as 32 hex digits.
fn new_task_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// Forgets expired tasks (stopping their work).
fn purge(tasks: &mut HashMap<String, Arc<TaskEntry>>, now: Instant) {
    tasks.retain(|_, task| {
        let live = task.expires > now;
        if !live {
            task.expire();
        }
        live
    });
}

impl TaskStore {
    /// An empty store with these limits.
    pub(crate) fn new(config: TaskConfig) -> Self {
        TaskStore {
            config,
            tasks: Mutex::new(HashMap::new()),
            next_seq: AtomicU64::new(1),
        }
    }

    /// Creates a working task. `requested_ttl` is the client's wish (kept
    /// within the configured bounds). Fails when the store is full of
    /// running tasks.
    pub(crate) fn create(
        &self,
        owner: TaskOwner,
        modern: bool,
        requested_ttl: Option<Duration>,
        notify: Option<Peer>,
    ) -> Result<Arc<TaskEntry>, ErrorObject> {
        let ttl = requested_ttl
            .map(|t| t.max(MIN_REQUESTED_TTL))
            .unwrap_or(self.config.default_ttl)
            .min(self.config.max_ttl);
        let now = Instant::now();
        let mut tasks = lock(&self.tasks);
        purge(&mut tasks, now);
        if tasks.len() >= self.config.max_tasks {
            let oldest_finished = tasks
                .values()
                .filter(|t| t.status().is_terminal())
                .min_by_key(|t| t.seq)
                .map(|t| t.id.clone());
            match oldest_finished {
                Some(id) => {
                    tasks.remove(&id);
                }
                None => {
                    return Err(ErrorObject::internal(format!(
                        "too many tasks in progress (at most {}); try again later",
                        self.config.max_tasks
                    )));
                }
            }
        }
        let id = loop {
            let id = new_task_id();
            if !tasks.contains_key(&id) {
                break id;
            }
        };
        let created_at = iso8601(SystemTime::now());
        let entry = Arc::new(TaskEntry {
            id: id.clone(),
            owner,
            modern,
            seq: self.next_seq.fetch_add(1, Ordering::Relaxed),
            created_at: created_at.clone(),
            ttl,
            poll_interval: self.config.poll_interval,
            expires: now + ttl,
            cancel: CancellationToken::new(),
            notify,
            state: Mutex::new(TaskState {
                status: TaskStatus::Working,
                message: None,
                updated_at: created_at,
                outcome: None,
                pending: InputRequests::new(),
                answers: InputResponses::new(),
            }),
            status: watch::channel(TaskStatus::Working).0,
        });
        tasks.insert(id, Arc::clone(&entry));
        Ok(entry)
    }

    /// The task `id` if `owner` may see it and it has not expired.
    pub(crate) fn get(&self, id: &str, owner: TaskOwner) -> Option<Arc<TaskEntry>> {
        let mut tasks = lock(&self.tasks);
        let task = tasks.get(id)?;
        if task.expires <= Instant::now() {
            if let Some(task) = tasks.remove(id) {
                task.expire();
            }
            return None;
        }
        (task.owner == owner).then(|| Arc::clone(task))
    }

    /// The live tasks `owner` may see, oldest first.
    pub(crate) fn list(&self, owner: TaskOwner) -> Vec<Arc<TaskEntry>> {
        let mut tasks = lock(&self.tasks);
        purge(&mut tasks, Instant::now());
        let mut mine: Vec<_> = tasks
            .values()
            .filter(|t| t.owner == owner)
            .cloned()
            .collect();
        mine.sort_by_key(|t| t.seq);
        mine
    }

    /// Cancels and forgets every task of `owner` (its session ended).
    pub(crate) fn forget_owner(&self, owner: TaskOwner) {
        let gone: Vec<_> = {
            let mut tasks = lock(&self.tasks);
            let ids: Vec<String> = tasks
                .values()
                .filter(|t| t.owner == owner)
                .map(|t| t.id.clone())
                .collect();
            ids.iter().filter_map(|id| tasks.remove(id)).collect()
        };
        for task in gone {
            let _ = task.cancel();
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        let mut tasks = lock(&self.tasks);
        purge(&mut tasks, Instant::now());
        tasks.len()
    }
}

/// An ISO 8601 UTC timestamp with milliseconds (`2025-11-25T10:30:00.000Z`).
pub(crate) fn iso8601(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date `days` days after 1970-01-01 (Howard
/// Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// How a `tools/call` runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum CallMode {
    /// Answered with the tool's result.
    Direct,
    /// Run as a task kept this long (`None`: the store's default).
    Task(Option<Duration>),
}

/// Whether the client declared the tasks extension on this request.
pub(crate) fn declares_tasks_extension(caps: &ClientCapabilities) -> bool {
    caps.extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(mcp_schema::EXTENSION_TASKS))
}

/// The -32021 error for a request that needs the tasks extension.
pub(crate) fn tasks_extension_required(what: &str) -> ErrorObject {
    let mut extensions = std::collections::BTreeMap::new();
    extensions.insert(mcp_schema::EXTENSION_TASKS.to_owned(), JsonObject::new());
    MissingRequiredClientCapabilityData {
        required_capabilities: ClientCapabilities {
            extensions: Some(extensions),
            ..Default::default()
        },
    }
    .into_error(format!(
        "{what} needs the client capability extensions[\"{}\"]",
        mcp_schema::EXTENSION_TASKS
    ))
}

/// Decides how a call of `tool` runs, from the tool's task support, the
/// revision and what the client asked or declared.
pub(crate) fn call_mode(
    tool: &ToolDef,
    requested: Option<&TaskMetadata>,
    ctx: &RequestContext,
) -> Result<CallMode, ErrorObject> {
    let support = tool.tasks();
    let name = &tool.tool().name;
    let revision = ctx.revision;
    if revision.has_core_tasks() {
        return match (support, requested) {
            (TaskSupport::Forbidden, Some(_)) => Err(ErrorObject::new(
                error_codes::METHOD_NOT_FOUND,
                format!("Tool {name} does not support task-augmented calls"),
            )),
            (TaskSupport::Required, None) => Err(ErrorObject::new(
                error_codes::METHOD_NOT_FOUND,
                format!("Tool {name} must be called as a task (params.task)"),
            )),
            (_, Some(task)) => Ok(CallMode::Task(task.ttl.map(Duration::from_millis))),
            (_, None) => Ok(CallMode::Direct),
        };
    }
    if revision.has_tasks_extension() {
        let declared = declares_tasks_extension(ctx.client_capabilities());
        return match support {
            TaskSupport::Forbidden => Ok(CallMode::Direct),
            _ if declared => Ok(CallMode::Task(None)),
            TaskSupport::Optional => Ok(CallMode::Direct),
            TaskSupport::Required => Err(tasks_extension_required(&format!("Tool {name}"))),
        };
    }
    match support {
        TaskSupport::Required => Err(ErrorObject::new(
            error_codes::METHOD_NOT_FOUND,
            format!("Tool {name} runs only as a task, which protocol revision {revision} lacks"),
        )),
        _ => Ok(CallMode::Direct),
    }
}

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
                self.signer(),
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
        let owner = TaskOwner::of(&ctx);
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
        let owner = TaskOwner::of(&ctx);
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

    fn list_tasks(&self, owner: TaskOwner, cursor: Option<&str>) -> HandlerResult {
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

/// Runs a task's tool call to its end, round after round when the handler
/// asks the client for input (modern era), unless it is cancelled or
/// expires first.
async fn run_task(
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
        let ctx = Context::new(request.clone(), server.clone(), round);
        let work = (tool.handler)(args.clone(), ctx.clone());
        let outcome = tokio::select! {
            biased;
            _ = entry.cancel.cancelled() => return,
            _ = tokio::time::sleep_until(deadline) => {
                if entry.expire() {
                    server.task_changed(&entry);
                }
                return;
            }
            outcome = work => outcome,
        };
        let (status, outcome, message) = match outcome {
            Err(HandlerError::InputRequired) if ctx.round().has_questions() => {
                let (asked, state, mut responses) = ctx.round().suspend();
                if entry.ask(asked) {
                    server.task_changed(&entry);
                }
                let answers = tokio::select! {
                    biased;
                    _ = entry.cancel.cancelled() => return,
                    _ = tokio::time::sleep_until(deadline) => {
                        if entry.expire() {
                            server.task_changed(&entry);
                        }
                        return;
                    }
                    answers = entry.answered() => answers,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn store(config: TaskConfig) -> TaskStore {
        TaskStore::new(config)
    }

    #[test]
    fn ids_are_128_random_bits() {
        let s = store(TaskConfig::default());
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            let task = s.create(TaskOwner::Anyone, true, None, None).unwrap();
            assert_eq!(task.id.len(), 32, "{}", task.id);
            assert!(task.id.chars().all(|c| c.is_ascii_hexdigit()));
            assert!(seen.insert(task.id.clone()), "duplicate id {}", task.id);
        }
        // Not sequential: consecutive ids share no long common prefix.
        let ids: Vec<_> = seen.into_iter().collect();
        let shared = ids.windows(2).filter(|w| w[0][..8] == w[1][..8]).count();
        assert_eq!(shared, 0);
    }

    #[test]
    fn owners_see_only_their_tasks() {
        let s = store(TaskConfig::default());
        let a = s.create(TaskOwner::Session(1), false, None, None).unwrap();
        let b = s.create(TaskOwner::Anyone, true, None, None).unwrap();
        assert!(s.get(&a.id, TaskOwner::Session(1)).is_some());
        assert!(s.get(&a.id, TaskOwner::Session(2)).is_none());
        assert!(s.get(&a.id, TaskOwner::Anyone).is_none());
        assert!(s.get(&b.id, TaskOwner::Anyone).is_some());
        assert!(s.get(&b.id, TaskOwner::Session(1)).is_none());
        assert_eq!(s.list(TaskOwner::Session(1)).len(), 1);
        s.forget_owner(TaskOwner::Session(1));
        assert!(s.get(&a.id, TaskOwner::Session(1)).is_none());
        assert_eq!(a.status(), TaskStatus::Cancelled);
        assert!(a.cancel.is_cancelled());
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn tasks_expire_after_their_ttl() {
        let s = store(
            TaskConfig::default()
                .default_ttl(Duration::from_millis(30))
                .max_ttl(Duration::from_secs(5)),
        );
        let short = s.create(TaskOwner::Anyone, true, None, None).unwrap();
        let long = s
            .create(TaskOwner::Anyone, true, Some(Duration::from_secs(3)), None)
            .unwrap();
        assert_eq!(short.ext_task().ttl_ms, Some(30));
        assert_eq!(long.ext_task().ttl_ms, Some(3000));
        std::thread::sleep(Duration::from_millis(60));
        assert!(s.get(&short.id, TaskOwner::Anyone).is_none());
        assert_eq!(short.status(), TaskStatus::Failed);
        assert!(short.cancel.is_cancelled());
        assert!(s.get(&long.id, TaskOwner::Anyone).is_some());
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn requested_ttls_are_bounded() {
        let s = store(TaskConfig::default().max_ttl(Duration::from_secs(60)));
        let huge = s
            .create(
                TaskOwner::Anyone,
                true,
                Some(Duration::from_secs(86_400)),
                None,
            )
            .unwrap();
        assert_eq!(huge.task().ttl, Some(60_000));
        let tiny = s
            .create(TaskOwner::Anyone, true, Some(Duration::ZERO), None)
            .unwrap();
        assert_eq!(tiny.task().ttl, Some(1000));
    }

    #[test]
    fn the_store_is_bounded() {
        let s = store(TaskConfig::default().max_tasks(3));
        let tasks: Vec<_> = (0..3)
            .map(|_| s.create(TaskOwner::Anyone, true, None, None).unwrap())
            .collect();
        // Full of running tasks: refused.
        let refused = s.create(TaskOwner::Anyone, true, None, None).unwrap_err();
        assert_eq!(refused.code, error_codes::INTERNAL_ERROR);
        // A finished task makes room; the oldest finished one goes.
        tasks[2].finish(
            TaskStatus::Completed,
            Outcome::Result(JsonObject::new()),
            None,
        );
        tasks[1].cancel().unwrap();
        let fourth = s.create(TaskOwner::Anyone, true, None, None).unwrap();
        assert!(s.get(&tasks[1].id, TaskOwner::Anyone).is_none());
        assert!(s.get(&tasks[2].id, TaskOwner::Anyone).is_some());
        assert!(s.get(&fourth.id, TaskOwner::Anyone).is_some());
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn terminal_tasks_do_not_change() {
        let s = store(TaskConfig::default());
        let task = s.create(TaskOwner::Anyone, true, None, None).unwrap();
        assert_eq!(task.cancel(), Ok(()));
        assert_eq!(task.cancel(), Err(TaskStatus::Cancelled));
        assert!(!task.finish(
            TaskStatus::Completed,
            Outcome::Result(JsonObject::new()),
            None
        ));
        assert_eq!(task.status(), TaskStatus::Cancelled);
        assert!(task.outcome().is_none());
    }

    #[test]
    fn detailed_tasks_carry_their_payload() {
        let s = store(TaskConfig::default());
        let task = s.create(TaskOwner::Anyone, true, None, None).unwrap();
        let mut result = JsonObject::new();
        result.insert("content".into(), serde_json::json!([]));
        task.finish(TaskStatus::Completed, Outcome::Result(result.clone()), None);
        let detailed = task.detailed();
        assert_eq!(detailed.result, Some(result));
        assert!(detailed.error.is_none() && detailed.input_requests.is_none());
        let failed = s.create(TaskOwner::Anyone, true, None, None).unwrap();
        failed.finish(
            TaskStatus::Failed,
            Outcome::Error(ErrorObject::internal("x")),
            None,
        );
        let detailed = failed.detailed();
        assert_eq!(detailed.error.unwrap().code, error_codes::INTERNAL_ERROR);
        assert!(detailed.result.is_none());
    }

    #[test]
    fn timestamps_are_iso_8601_utc() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_764_066_600_250);
        assert_eq!(iso8601(t), "2025-11-25T10:30:00.250Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00.000Z");
    }
}
