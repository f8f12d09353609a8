//! A request's count and latency, for the host's metrics: begun when the
//! request arrives, counted with its outcome when it is answered, or as
//! cancelled when it is dropped unanswered.

use std::sync::Arc;
use std::time::Instant;

use mcp_core::{HandlerResult, RequestContext};
use mcp_schema::methods;

use super::target::Target;
use crate::host::Host;
use crate::metrics::{Counted, Outcome, stats::method_slot};
use crate::policy::Kind;
use crate::upstream::Upstream;

/// Where a request is counted: its server's stats, or the host's own.
enum Owner {
    Server(Arc<Upstream>),
    Host(Host),
}

/// A request being answered, counted when dropped.
pub(super) struct Measured {
    owner: Owner,
    method: usize,
    modern: bool,
    /// The tool called, as the catalog shows it.
    tool: Option<String>,
    outcome: Outcome,
    started: Instant,
}

impl Measured {
    /// Begins counting a request of `method` reaching `target`.
    pub(super) fn begin(
        host: &Host,
        method: &str,
        target: Option<&Target>,
        ctx: &RequestContext,
    ) -> Measured {
        let server = target.and_then(|t| host.upstream(t.route.upstream).ok());
        let tool = target
            .filter(|t| t.kind == Kind::Tool)
            .map(|t| t.asked.clone());
        Measured {
            owner: match server {
                Some(upstream) => Owner::Server(upstream),
                None => Owner::Host(host.clone()),
            },
            method: method_slot(method),
            modern: !ctx.revision.is_legacy(),
            tool,
            outcome: Outcome::Cancelled,
            started: Instant::now(),
        }
    }

    /// Notes how the request ended.
    pub(super) fn finish(mut self, result: &HandlerResult) {
        let calls_tool = self.method == method_slot(methods::TOOLS_CALL);
        self.outcome = outcome_of(calls_tool, result);
    }
}

impl Drop for Measured {
    fn drop(&mut self) {
        let counted = Counted {
            method: self.method,
            modern: self.modern,
            outcome: self.outcome,
            took: self.started.elapsed(),
            tool: self.tool.as_deref(),
        };
        match &self.owner {
            Owner::Server(upstream) => upstream.stats.count(counted),
            Owner::Host(host) => host.count_own(counted),
        }
    }
}

/// How a request (a tool call, or not) that got `result` ended.
fn outcome_of(calls_tool: bool, result: &HandlerResult) -> Outcome {
    match result {
        Ok(raw) if calls_tool && super::audited::is_tool_error(raw.get()) => Outcome::ToolError,
        Ok(_) => Outcome::Ok,
        Err(error) if error.code == crate::policy::DENIED => Outcome::Denied,
        Err(error) if error.code == crate::limits::LIMITED => Outcome::Limited,
        Err(_) => Outcome::Error,
    }
}
