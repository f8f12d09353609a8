//! Which upstream owns which task: a tool call that became a task
//! (2025-11-25 `CreateTaskResult`, or a 2026-07-28 result of type `task`)
//! is remembered here, so `tasks/get`, `tasks/result`, `tasks/cancel` and
//! `tasks/update` reach the server that runs it. The table is bounded:
//! the oldest entries go first.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde_json::value::RawValue;

/// How many tasks are remembered at most.
const MAX_TASKS: usize = 10_000;

/// Task ids to upstream indices.
#[derive(Default)]
pub(crate) struct TaskRoutes {
    inner: Mutex<(HashMap<String, usize>, VecDeque<String>)>,
}

impl TaskRoutes {
    /// Remembers the task a result created, if it did.
    pub(crate) fn record(&self, result: &RawValue, upstream: usize) {
        if let Some(task) = mcp_http::task_relay::created_task(result) {
            self.remember(&task.id, upstream);
        }
    }

    /// Remembers that `upstream` runs task `id`.
    pub(crate) fn remember(&self, id: &str, upstream: usize) {
        let id = id.to_owned();
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (routes, order) = &mut *inner;
        if routes.insert(id.clone(), upstream).is_none() {
            order.push_back(id);
            while order.len() > MAX_TASKS {
                if let Some(oldest) = order.pop_front() {
                    routes.remove(&oldest);
                }
            }
        }
    }

    /// The upstream that runs task `id`.
    pub(crate) fn owner(&self, id: &str) -> Option<usize> {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .0
            .get(id)
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn tasks_of_both_revisions_are_routed_and_the_table_is_bounded() {
        let routes = TaskRoutes::default();
        routes.record(
            &raw(r#"{"resultType":"task","taskId":"m1","status":"working"}"#),
            2,
        );
        routes.record(&raw(r#"{"task":{"taskId":"l1","status":"working"}}"#), 3);
        routes.record(&raw(r#"{"content":[{"type":"text","text":"taskId"}]}"#), 4);
        assert_eq!(routes.owner("m1"), Some(2));
        assert_eq!(routes.owner("l1"), Some(3));
        assert_eq!(routes.owner("taskId"), None);
        for i in 0..MAX_TASKS {
            routes.record(&raw(&format!(r#"{{"taskId":"t{i}"}}"#)), 1);
        }
        assert_eq!(routes.owner("m1"), None, "the oldest went first");
        assert_eq!(routes.owner(&format!("t{}", MAX_TASKS - 1)), Some(1));
    }
}
