//! Which upstream runs which task, for whom: a tool call that became a
//! task (2025-11-25 `CreateTaskResult`, or a 2026-07-28 result of type
//! `task`) is remembered here with the downstream client that made it, so
//! `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/update` from that
//! client reach the server that runs it, and no other client reaches it
//! (an upstream's own session is shared by every client of the host, so
//! the upstream cannot tell them apart). The table is bounded: the oldest
//! entries go first.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use mcp_core::TaskScope;
use mcp_core::sync::MutexExt as _;
use serde_json::value::RawValue;

/// How many tasks are remembered at most.
const MAX_TASKS: usize = 10_000;

/// How many of a client's tasks on one upstream are listed at most, when
/// the host lists them itself.
const MAX_LISTED: usize = 100;

/// Where a task runs (an upstream's index) and for whom.
type TaskRoute = (usize, TaskScope);

/// Task ids to the upstream running each and the client it runs for.
#[derive(Default)]
pub(crate) struct TaskRoutes {
    inner: Mutex<(HashMap<String, TaskRoute>, VecDeque<String>)>,
}

impl TaskRoutes {
    /// Remembers the task a result created for `client`, if it did.
    pub(crate) fn record(&self, result: &RawValue, upstream: usize, client: &TaskScope) {
        if let Some(task) = mcp_http::task_relay::created_task(result) {
            self.remember(&task.id, upstream, client);
        }
    }

    /// Remembers that `upstream` runs task `id` for `client`.
    pub(crate) fn remember(&self, id: &str, upstream: usize, client: &TaskScope) {
        let id = id.to_owned();
        let mut inner = self.inner.locked();
        let (routes, order) = &mut *inner;
        if routes
            .insert(id.clone(), (upstream, client.clone()))
            .is_none()
        {
            order.push_back(id);
            while order.len() > MAX_TASKS {
                if let Some(oldest) = order.pop_front() {
                    routes.remove(&oldest);
                }
            }
        }
    }

    /// The tasks `upstream` runs for `client`, newest first, at most
    /// `MAX_LISTED`.
    pub(crate) fn of(&self, client: &TaskScope, upstream: usize) -> Vec<String> {
        let inner = self.inner.locked();
        let (routes, order) = &*inner;
        order
            .iter()
            .rev()
            .filter(|id| routes.get(*id) == Some(&(upstream, client.clone())))
            .take(MAX_LISTED)
            .cloned()
            .collect()
    }

    /// The upstream that runs task `id`, if it runs for `client`.
    pub(crate) fn route(&self, id: &str, client: &TaskScope) -> Option<usize> {
        match self.inner.locked().0.get(id) {
            Some((upstream, owner)) if owner == client => Some(*upstream),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn tasks_of_both_revisions_are_routed_for_their_client_only_and_the_table_is_bounded() {
        let routes = TaskRoutes::default();
        let (ada, bob) = (
            TaskScope::Session("ada".into()),
            TaskScope::Session("bob".into()),
        );
        routes.record(
            &raw(r#"{"resultType":"task","taskId":"m1","status":"working"}"#),
            2,
            &ada,
        );
        routes.record(
            &raw(r#"{"task":{"taskId":"l1","status":"working"}}"#),
            3,
            &bob,
        );
        routes.record(
            &raw(r#"{"content":[{"type":"text","text":"taskId"}]}"#),
            4,
            &ada,
        );
        assert_eq!(routes.route("m1", &ada), Some(2));
        assert_eq!(routes.route("m1", &bob), None, "another client's task");
        assert_eq!(routes.route("l1", &bob), Some(3));
        assert_eq!(routes.route("taskId", &ada), None);
        for i in 0..MAX_TASKS {
            routes.record(&raw(&format!(r#"{{"taskId":"t{i}"}}"#)), 1, &ada);
        }
        assert_eq!(routes.route("m1", &ada), None, "the oldest went first");
        assert_eq!(routes.route(&format!("t{}", MAX_TASKS - 1), &ada), Some(1));
    }
}
