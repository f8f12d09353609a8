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

use std::time::Duration;

mod era;
mod handlers;
mod run;
mod store;

pub(crate) use era::{CallMode, call_mode, declares_tasks_extension, tasks_extension_required};
pub(crate) use store::{TaskEntry, TaskStore};

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
