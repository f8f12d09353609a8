//! Whose tasks a request creates and may reach. A server, the host in
//! front of servers and the instances sharing sessions on Redis all answer
//! this the same way, from the request's context.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Owner, Peer, RequestContext, SessionName};

/// Who may reach a task by its id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TaskScope {
    /// A legacy session: by the transport's name for it (the same on
    /// every instance serving it), or else by a name of its own that no
    /// other session of this process ever has.
    Session(Arc<str>),
    /// A 2026-07-28 caller the transport authenticated as this owner.
    Caller(Owner),
    /// Anyone who knows the id: a 2026-07-28 request without
    /// authentication.
    Anyone,
}

/// A legacy session's name as a task scope, kept in its extensions.
struct SessionScope(Arc<str>);

impl TaskScope {
    /// The scope of the tasks `ctx`'s request creates or may see.
    pub fn of(ctx: &RequestContext) -> TaskScope {
        if !ctx.revision.is_legacy() {
            return match ctx.extensions().get::<Owner>() {
                Some(owner) => TaskScope::Caller(Owner::clone(&owner)),
                None => TaskScope::Anyone,
            };
        }
        let extensions = ctx.peer.extensions();
        if let Some(scope) = extensions.get::<SessionScope>() {
            return TaskScope::Session(Arc::clone(&scope.0));
        }
        // Read before `get_or_insert_with`, which holds the map's lock.
        let name = extensions.get::<SessionName>();
        let scope = extensions.get_or_insert_with(|| {
            SessionScope(match name {
                Some(name) => Arc::clone(&name.0),
                None => {
                    static NEXT: AtomicU64 = AtomicU64::new(0);
                    format!("local-{}", NEXT.fetch_add(1, Ordering::Relaxed)).into()
                }
            })
        });
        TaskScope::Session(Arc::clone(&scope.0))
    }

    /// The scope of a legacy session's tasks, once a request of it asked
    /// for one.
    pub fn of_session(peer: &Peer) -> Option<TaskScope> {
        peer.extensions()
            .get::<SessionScope>()
            .map(|scope| TaskScope::Session(Arc::clone(&scope.0)))
    }

    /// The scope as one string (`session:NAME`, `owner:KEY` or `anyone`),
    /// for keys shared between processes.
    pub fn key(&self) -> String {
        match self {
            TaskScope::Session(name) => format!("session:{name}"),
            TaskScope::Caller(owner) => format!("owner:{}", owner.as_str()),
            TaskScope::Anyone => "anyone".to_owned(),
        }
    }
}
