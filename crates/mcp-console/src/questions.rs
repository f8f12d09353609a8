//! The console as a person at the host who answers a server's
//! elicitation that no client can (after the terminal): the question
//! waits on the approvals page ([`crate::queue`]), as a form made from its
//! schema (or a link, in URL mode), until a person submits, declines or
//! cancels it.

use std::time::SystemTime;

use mcp_core::BoxFuture;
use mcp_host::elicit::Elicitor;
use mcp_schema::{ElicitRequestParams, ElicitResult};

use crate::approvals::{ConsoleApprover, Question};

impl Elicitor for ConsoleApprover {
    fn name(&self) -> &str {
        crate::approvals::NAME
    }

    fn reachable(&self) -> bool {
        self.watched()
    }

    fn elicit<'a>(
        &'a self,
        server: &'a str,
        params: &'a ElicitRequestParams,
    ) -> BoxFuture<'a, Result<ElicitResult, String>> {
        Box::pin(self.wait(&self.questions, |answer| Question {
            server: server.to_owned(),
            params: params.clone(),
            asked_at: SystemTime::now(),
            answer,
        }))
    }
}
