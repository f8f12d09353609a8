//! The tasks in memory: each with its owner, status and outcome, bounded
//! in number, each kept for its time to live.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use mcp_core::{Peer, TaskScope};
use mcp_schema::{
    DetailedTask, ErrorObject, ExtTask, InputRequests, InputResponses, JsonObject, Task, TaskStatus,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::TaskConfig;
use mcp_core::sync::MutexExt as _;

/// The shortest time to live a client may ask for.
const MIN_REQUESTED_TTL: Duration = Duration::from_secs(1);

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
    pub(crate) owner: TaskScope,
    /// Modern-era shapes and rules (a tool error is `completed`).
    pub(crate) modern: bool,
    pub(super) seq: u64,
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

impl TaskEntry {
    /// Applies `change` to the state; when it reports a change, stamps the
    /// update time and wakes whoever waits on the status.
    fn update(&self, change: impl FnOnce(&mut TaskState) -> bool) -> bool {
        let status = {
            let mut state = self.state.locked();
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
        self.state.locked().status
    }

    /// How the task ended, once it has.
    pub(crate) fn outcome(&self) -> Option<Outcome> {
        self.state.locked().outcome.clone()
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
        self.state.locked().pending.contains_key(key)
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
        std::mem::take(&mut self.state.locked().answers)
    }

    /// Waits until the task has ended.
    pub(crate) async fn finished(&self) {
        let mut status = self.status.subscribe();
        let _ = status.wait_for(|s| s.is_terminal()).await;
    }

    fn parts(&self) -> (TaskStatus, Option<String>, String) {
        let state = self.state.locked();
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
        let state = self.state.locked();
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
        owner: TaskScope,
        modern: bool,
        requested_ttl: Option<Duration>,
        notify: Option<Peer>,
    ) -> Result<Arc<TaskEntry>, ErrorObject> {
        let ttl = requested_ttl
            .map(|t| t.max(MIN_REQUESTED_TTL))
            .unwrap_or(self.config.default_ttl)
            .min(self.config.max_ttl);
        let now = Instant::now();
        let mut tasks = self.tasks.locked();
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
    pub(crate) fn get(&self, id: &str, owner: TaskScope) -> Option<Arc<TaskEntry>> {
        let mut tasks = self.tasks.locked();
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
    pub(crate) fn list(&self, owner: TaskScope) -> Vec<Arc<TaskEntry>> {
        let mut tasks = self.tasks.locked();
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
    pub(crate) fn forget_owner(&self, owner: TaskScope) {
        let gone: Vec<_> = {
            let mut tasks = self.tasks.locked();
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
        let mut tasks = self.tasks.locked();
        purge(&mut tasks, Instant::now());
        tasks.len()
    }
}

/// An ISO 8601 UTC timestamp with milliseconds (`2025-11-25T10:30:00.000Z`).
pub(crate) fn iso8601(at: SystemTime) -> String {
    const FORMAT: &[time::format_description::BorrowedFormatItem<'_>] = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from(at)
        .format(FORMAT)
        .unwrap_or_else(|_| unreachable!("every field of the format is in an OffsetDateTime"))
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use mcp_schema::error_codes;

    use super::*;

    fn store(config: TaskConfig) -> TaskStore {
        TaskStore::new(config)
    }

    #[test]
    fn ids_are_128_random_bits() {
        let s = store(TaskConfig::default());
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            let task = s.create(TaskScope::Anyone, true, None, None).unwrap();
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
        let a = s
            .create(TaskScope::Session("1".into()), false, None, None)
            .unwrap();
        let b = s.create(TaskScope::Anyone, true, None, None).unwrap();
        assert!(s.get(&a.id, TaskScope::Session("1".into())).is_some());
        assert!(s.get(&a.id, TaskScope::Session("2".into())).is_none());
        assert!(s.get(&a.id, TaskScope::Anyone).is_none());
        assert!(s.get(&b.id, TaskScope::Anyone).is_some());
        assert!(s.get(&b.id, TaskScope::Session("1".into())).is_none());
        assert_eq!(s.list(TaskScope::Session("1".into())).len(), 1);
        s.forget_owner(TaskScope::Session("1".into()));
        assert!(s.get(&a.id, TaskScope::Session("1".into())).is_none());
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
        let short = s.create(TaskScope::Anyone, true, None, None).unwrap();
        let long = s
            .create(TaskScope::Anyone, true, Some(Duration::from_secs(3)), None)
            .unwrap();
        assert_eq!(short.ext_task().ttl_ms, Some(30));
        assert_eq!(long.ext_task().ttl_ms, Some(3000));
        std::thread::sleep(Duration::from_millis(60));
        assert!(s.get(&short.id, TaskScope::Anyone).is_none());
        assert_eq!(short.status(), TaskStatus::Failed);
        assert!(short.cancel.is_cancelled());
        assert!(s.get(&long.id, TaskScope::Anyone).is_some());
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn requested_ttls_are_bounded() {
        let s = store(TaskConfig::default().max_ttl(Duration::from_secs(60)));
        let huge = s
            .create(
                TaskScope::Anyone,
                true,
                Some(Duration::from_secs(86_400)),
                None,
            )
            .unwrap();
        assert_eq!(huge.task().ttl, Some(60_000));
        let tiny = s
            .create(TaskScope::Anyone, true, Some(Duration::ZERO), None)
            .unwrap();
        assert_eq!(tiny.task().ttl, Some(1000));
    }

    #[test]
    fn the_store_is_bounded() {
        let s = store(TaskConfig::default().max_tasks(3));
        let tasks: Vec<_> = (0..3)
            .map(|_| s.create(TaskScope::Anyone, true, None, None).unwrap())
            .collect();
        // Full of running tasks: refused.
        let refused = s.create(TaskScope::Anyone, true, None, None).unwrap_err();
        assert_eq!(refused.code, error_codes::INTERNAL_ERROR);
        // A finished task makes room; the oldest finished one goes.
        tasks[2].finish(
            TaskStatus::Completed,
            Outcome::Result(JsonObject::new()),
            None,
        );
        tasks[1].cancel().unwrap();
        let fourth = s.create(TaskScope::Anyone, true, None, None).unwrap();
        assert!(s.get(&tasks[1].id, TaskScope::Anyone).is_none());
        assert!(s.get(&tasks[2].id, TaskScope::Anyone).is_some());
        assert!(s.get(&fourth.id, TaskScope::Anyone).is_some());
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn terminal_tasks_do_not_change() {
        let s = store(TaskConfig::default());
        let task = s.create(TaskScope::Anyone, true, None, None).unwrap();
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
        let task = s.create(TaskScope::Anyone, true, None, None).unwrap();
        let mut result = JsonObject::new();
        result.insert("content".into(), serde_json::json!([]));
        task.finish(TaskStatus::Completed, Outcome::Result(result.clone()), None);
        let detailed = task.detailed();
        assert_eq!(detailed.result, Some(result));
        assert!(detailed.error.is_none() && detailed.input_requests.is_none());
        let failed = s.create(TaskScope::Anyone, true, None, None).unwrap();
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
