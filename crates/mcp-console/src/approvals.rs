//! The console as an approver (`console` in `[guard] approvers`): a request
//! the policy marks `ask` waits in the console's queue until a person
//! allows it (once, for the session, or always, with the arguments as
//! they edited them) or denies it; the servers' questions no client could
//! answer wait beside them (see [`crate::questions`]). The queue's page
//! is [`crate::queue`]. The console can be asked while a browser holds its
//! event stream open.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::SystemTime;

use mcp_core::BoxFuture;
use mcp_core::sync::MutexExt as _;
use mcp_host::consent::{Approval, ApprovalRequest, Approver};
use tokio::sync::{broadcast, oneshot};

/// The approver's name in `[guard] approvers`.
pub const NAME: &str = "console";

/// The queue of requests waiting for a person at the console.
pub struct ConsoleApprover {
    next: AtomicU64,
    pub(crate) waiting: Mutex<BTreeMap<u64, Waiting>>,
    /// Servers' questions no client could answer.
    pub(crate) questions: Mutex<BTreeMap<u64, Question>>,
    /// Sampling requests, and the model's replies, to review.
    pub(crate) samplings: Mutex<BTreeMap<u64, Sampling>>,
    /// Told whenever the queue changes.
    changed: broadcast::Sender<()>,
    /// Browsers with the event stream open.
    pub(crate) watching: AtomicUsize,
}

/// A server's question waiting at the console.
pub(crate) struct Question {
    pub(crate) server: String,
    pub(crate) params: mcp_schema::ElicitRequestParams,
    pub(crate) asked_at: SystemTime,
    pub(crate) answer: oneshot::Sender<mcp_schema::ElicitResult>,
}

/// A sampling request, or the model's reply to one, waiting for a person.
pub(crate) struct Sampling {
    pub(crate) server: String,
    pub(crate) asked_at: SystemTime,
    pub(crate) what: Reviewing,
}

/// What waits in a [`Sampling`].
pub(crate) enum Reviewing {
    /// What the server asks `model`.
    Request {
        model: String,
        params: Box<mcp_schema::CreateMessageRequestParams>,
        answer: oneshot::Sender<mcp_host::sampler::Reviewed>,
    },
    /// What the model answered.
    Reply {
        reply: Box<mcp_schema::CreateMessageResult>,
        answer: oneshot::Sender<bool>,
    },
}

/// A request waiting for a person's approval.
pub(crate) struct Waiting {
    pub(crate) request: ApprovalRequest,
    pub(crate) asked_at: SystemTime,
    pub(crate) answer: oneshot::Sender<Approval>,
}

impl Default for ConsoleApprover {
    fn default() -> Self {
        ConsoleApprover {
            next: AtomicU64::new(0),
            waiting: Mutex::new(BTreeMap::new()),
            questions: Mutex::new(BTreeMap::new()),
            samplings: Mutex::new(BTreeMap::new()),
            changed: broadcast::channel(16).0,
            watching: AtomicUsize::new(0),
        }
    }
}

impl ConsoleApprover {
    /// Told whenever the queue changes.
    pub(crate) fn changes(&self) -> broadcast::Receiver<()> {
        self.changed.subscribe()
    }

    /// Tells the pages that the queue changed.
    pub(crate) fn changed(&self) {
        let _ = self.changed.send(());
    }

    /// Whether a person can be asked here now: an operator's browser
    /// holds the event stream open.
    pub(crate) fn watched(&self) -> bool {
        self.watching.load(Ordering::Relaxed) > 0
    }

    /// A number for the next request or question.
    pub(crate) fn next_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Puts the entry `entry` makes into `list` until a person answers
    /// it (through the sender it is given) or the asking ends.
    pub(crate) async fn wait<T, A>(
        &self,
        list: &Mutex<BTreeMap<u64, T>>,
        entry: impl FnOnce(oneshot::Sender<A>) -> T,
    ) -> Result<A, String> {
        let id = self.next_id();
        let (answer, answered) = oneshot::channel();
        list.locked().insert(id, entry(answer));
        self.changed();
        let _leaves = Leaves {
            approver: self,
            list,
            id,
        };
        answered
            .await
            .map_err(|_| "the console's queue was closed".to_owned())
    }

    /// Answers request `id`; whether it was waiting.
    pub(crate) fn answer(&self, id: u64, approval: Approval) -> bool {
        let waiting = self.waiting.locked().remove(&id);
        let _ = self.changed.send(());
        waiting.is_some_and(|w| w.answer.send(approval).is_ok())
    }
}

/// Takes an entry out of one of the queue's lists when its question
/// ends, answered or not (timed out, the caller gone).
struct Leaves<'a, T> {
    approver: &'a ConsoleApprover,
    list: &'a Mutex<BTreeMap<u64, T>>,
    id: u64,
}

impl<T> Drop for Leaves<'_, T> {
    fn drop(&mut self) {
        if self.list.locked().remove(&self.id).is_some() {
            self.approver.changed();
        }
    }
}

impl Approver for ConsoleApprover {
    fn name(&self) -> &str {
        NAME
    }

    fn reachable(&self) -> bool {
        self.watched()
    }

    fn ask<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Result<Approval, String>> {
        Box::pin(self.wait(&self.waiting, |answer| Waiting {
            request: request.clone(),
            asked_at: SystemTime::now(),
            answer,
        }))
    }
}
