//! The console as a person at the host who answers a server's
//! elicitation that no client can (after the terminal): the question
//! waits on the approvals page ([`crate::queue`]), as a form made from its
//! schema (or a link, in URL mode), until a person submits, declines or
//! cancels it.

use std::sync::atomic::Ordering;
use std::time::SystemTime;

use mcp_core::BoxFuture;
use mcp_core::sync::MutexExt as _;
use mcp_host::elicit::Elicitor;
use mcp_schema::{ElicitRequestParams, ElicitResult};
use tokio::sync::oneshot;

use crate::approvals::{ConsoleApprover, Question};

/// Takes a question out of the queue when it ends, answered or not.
struct Leaves<'a> {
    approver: &'a ConsoleApprover,
    id: u64,
}

impl Drop for Leaves<'_> {
    fn drop(&mut self) {
        if self.approver.questions.locked().remove(&self.id).is_some() {
            self.approver.changed();
        }
    }
}

impl Elicitor for ConsoleApprover {
    fn name(&self) -> &str {
        crate::approvals::NAME
    }

    fn reachable(&self) -> bool {
        self.watching.load(Ordering::Relaxed) > 0
    }

    fn elicit<'a>(
        &'a self,
        server: &'a str,
        params: &'a ElicitRequestParams,
    ) -> BoxFuture<'a, Result<ElicitResult, String>> {
        Box::pin(async move {
            let id = self.next_id();
            let (answer, answered) = oneshot::channel();
            self.questions.locked().insert(
                id,
                Question {
                    server: server.to_owned(),
                    params: params.clone(),
                    asked_at: SystemTime::now(),
                    answer,
                },
            );
            self.changed();
            let _leaves = Leaves { approver: self, id };
            answered
                .await
                .map_err(|_| "the console's queue was closed".to_owned())
        })
    }
}
