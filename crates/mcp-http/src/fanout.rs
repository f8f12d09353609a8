//! Resource updates for the legacy sessions of several instances, stored
//! once, by the instance that raised them.
//!
//! Where the event store is shared and standalone streams follow it
//! ([`EventStore::follows`]), a session's `notifications/resources/updated`
//! is not stored by whichever instance holds a copy of the session: its
//! stream may be open nowhere (its instance was killed and the client has
//! not resumed yet), and copies on several instances would each store it.
//! Instead the instance where the update happened calls
//! [`store_resource_updated`], which appends the notification to the
//! standalone stream of every session subscribed to the resource, as the
//! shared [`SessionStore`] knows them. A client resuming its stream on any
//! instance gets every update, once.

use std::sync::Arc;
use std::time::Duration;

use mcp_schema::jsonrpc;
use mcp_schema::methods;

use crate::event_store::{EventStore, EventStoreError};
use crate::session::STANDALONE;
use crate::session_store::{SessionStore, SessionStoreError};
use mcp_core::sync::MutexExt as _;

/// Why an update was not stored for every subscriber.
#[derive(Debug, thiserror::Error)]
pub enum FanoutError {
    /// The subscribers could not be read: no session got it.
    #[error("the subscribers of {uri} cannot be read: {source}")]
    Subscribers {
        /// The resource.
        uri: String,
        /// The store's error.
        source: SessionStoreError,
    },
    /// It could not be stored for some of them.
    #[error("the update of {uri} was not stored for {failed} of {of} sessions: {source}")]
    Append {
        /// The resource.
        uri: String,
        /// How many sessions missed it.
        failed: usize,
        /// How many are subscribed.
        of: usize,
        /// The first error.
        source: EventStoreError,
    },
}

/// Stores `notifications/resources/updated` for `uri` on the standalone
/// stream of every session subscribed to it in `sessions`; how many.
pub async fn store_resource_updated(
    events: &dyn EventStore,
    sessions: &dyn SessionStore,
    uri: &str,
) -> Result<usize, FanoutError> {
    let subscribers =
        sessions
            .subscribers(uri)
            .await
            .map_err(|source| FanoutError::Subscribers {
                uri: uri.to_owned(),
                source,
            })?;
    if subscribers.is_empty() {
        return Ok(0);
    }
    let params =
        jsonrpc::to_raw(&serde_json::json!({ "uri": uri })).expect("a JSON object is written");
    let text: Arc<str> =
        jsonrpc::write_notification(methods::NOTIFICATION_RESOURCES_UPDATED, Some(&params)).into();
    let stream = STANDALONE.to_string();
    let appended = futures::future::join_all(
        subscribers
            .iter()
            .map(|session| events.append(session, &stream, Arc::clone(&text))),
    )
    .await;
    let of = appended.len();
    let mut failures = appended.into_iter().filter_map(Result::err);
    match failures.next() {
        None => Ok(of),
        Some(source) => Err(FanoutError::Append {
            uri: uri.to_owned(),
            failed: 1 + failures.count(),
            of,
            source,
        }),
    }
}

/// Resource updates raised on this instance, stored in the order raised
/// by a task of their own ([`store_resource_updated`]), so that raising
/// one never waits for the store; an answer can wait for those raised
/// before it ([`UpdateQueue::stored`]).
#[derive(Debug, Clone)]
pub struct UpdateQueue(Arc<Queue>);

#[derive(Debug)]
struct Queue {
    /// The storing task's inbox: each update with its number.
    sender: tokio::sync::mpsc::Sender<(String, u64)>,
    /// How many were queued; held while one is, so numbers go in order.
    queued: std::sync::Mutex<u64>,
    /// How many were stored (or given up on) so far.
    stored: tokio::sync::watch::Sender<u64>,
}

impl UpdateQueue {
    /// How many updates may wait for the store before more are dropped
    /// (each with a warning).
    pub const CAPACITY: usize = 4096;

    /// How long [`UpdateQueue::stored`] waits at most, when the store is
    /// slow or unreachable.
    pub const PATIENCE: Duration = Duration::from_secs(5);

    /// Starts the task that stores updates in `events` for the sessions
    /// `sessions` finds subscribed; it ends when the last clone is
    /// dropped.
    pub fn start(events: Arc<dyn EventStore>, sessions: Arc<dyn SessionStore>) -> Self {
        let (sender, mut receiver) = tokio::sync::mpsc::channel::<(String, u64)>(Self::CAPACITY);
        let (stored, _) = tokio::sync::watch::channel(0);
        let queue = Arc::new(Queue {
            sender,
            queued: std::sync::Mutex::new(0),
            stored,
        });
        let progress = Arc::downgrade(&queue);
        tokio::spawn(async move {
            while let Some((uri, number)) = receiver.recv().await {
                if let Err(error) = store_resource_updated(&*events, &*sessions, &uri).await {
                    tracing::warn!(%error, "a resource update is lost");
                }
                let Some(queue) = progress.upgrade() else {
                    continue;
                };
                queue.stored.send_replace(number);
            }
        });
        UpdateQueue(queue)
    }

    /// Queues the update of `uri`.
    pub fn push(&self, uri: &str) {
        let mut queued = self.0.queued.locked();
        match self.0.sender.try_send((uri.to_owned(), *queued + 1)) {
            Ok(()) => *queued += 1,
            Err(_) => tracing::warn!(
                uri,
                "a resource update is lost: too many wait for the store"
            ),
        }
    }

    /// Resolves once every update queued before this call is stored (or
    /// its failure logged), or after [`UpdateQueue::PATIENCE`]: an answer
    /// that waits for it reaches its client only after the updates raised
    /// before it are where any instance can resume them from. At once
    /// when none waits.
    pub async fn stored(&self) {
        let queued = *self.0.queued.locked();
        if *self.0.stored.borrow() >= queued {
            return;
        }
        let mut stored = self.0.stored.subscribe();
        let caught_up = stored.wait_for(|stored| *stored >= queued);
        if tokio::time::timeout(Self::PATIENCE, caught_up)
            .await
            .is_err()
        {
            tracing::warn!(
                "an answer goes out before the resource updates raised before it are stored"
            );
        }
    }
}
