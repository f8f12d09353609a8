//! What the gateway decided for each request, told to the one who serves
//! it in process and asked to hear it ([`Gateway::observed`]): the
//! console shows each call's decision and rule in its history. Other
//! gateways have no observer and do nothing here.
//!
//! [`Gateway::observed`]: super::Gateway::observed

use std::sync::Arc;

use mcp_core::RequestContext;
use mcp_schema::{Meta, RequestMetaObject};

use crate::policy::Verdict;

/// Told, as each request is answered, its `_meta` (where the observer's
/// own client marks its requests) and what was decided.
pub type DecisionObserver = Arc<dyn Fn(&Meta, Decided) + Send + Sync>;

/// What the policy decided for a request, and how a person answered where
/// one was asked.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Decided {
    /// `allow`, `ask` or `deny`; `None`: no policy applies (everything
    /// is allowed).
    pub decision: Option<&'static str>,
    /// The rule that decided, by its name, or `the default`.
    pub rule: Option<String>,
    /// How a person answered (`once`, `session`, `always`, `denied` ...),
    /// where one was asked.
    pub answer: Option<&'static str>,
}

/// A request's decision, told when it is answered.
pub(super) struct Observed {
    observer: DecisionObserver,
    meta: Arc<RequestMetaObject>,
    decided: Decided,
}

impl Observed {
    /// The decision `verdict` on the request of `ctx`.
    pub(super) fn begin(
        observer: &DecisionObserver,
        ctx: &RequestContext,
        verdict: Option<&Verdict>,
    ) -> Observed {
        Observed {
            observer: Arc::clone(observer),
            meta: Arc::clone(&ctx.meta),
            decided: Decided {
                decision: verdict.map(|v| v.decision.as_str()),
                rule: verdict.map(|v| v.decided_by().to_owned()),
                answer: None,
            },
        }
    }

    /// Tells the observer, with how a person `answered`.
    pub(super) fn finish(mut self, answered: Option<&'static str>) {
        self.decided.answer = answered;
        (self.observer)(&self.meta.other, self.decided);
    }
}
