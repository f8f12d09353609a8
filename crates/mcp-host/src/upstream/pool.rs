//! A per-caller server's connections of its callers' own (see
//! [`crate::isolation`]): each an [`Upstream`] of its own, supervised as
//! any, whose notifications go only to its caller, started on the
//! caller's first request and closed when idle.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mcp_core::sync::MutexExt as _;
use mcp_schema::ErrorObject;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;

use super::{Signal, Upstream, UpstreamState};

/// The callers' connections of one server.
#[derive(Default)]
pub(super) struct Pool {
    open: Mutex<HashMap<Arc<str>, Pooled>>,
    /// Whether the task that closes idle connections runs.
    reaping: AtomicBool,
}

struct Pooled {
    upstream: Arc<Upstream>,
    /// Told each time the connection's state changes.
    changed: Arc<Notify>,
    last_used: Instant,
    supervisor: JoinHandle<()>,
}

impl Pool {
    /// How many are open.
    pub(super) fn len(&self) -> usize {
        self.open.locked().len()
    }

    /// Stops every one and waits for them to close.
    pub(super) async fn close_all(&self) {
        let all: Vec<Pooled> = self.open.locked().drain().map(|(_, p)| p).collect();
        for pooled in &all {
            pooled.upstream.stop();
        }
        for pooled in all {
            let _ = pooled.supervisor.await;
        }
    }
}

impl Pooled {
    /// Whether it is connected and no call is in flight on it (one still
    /// starting is waited on by its caller's request).
    fn idle(&self) -> bool {
        let upstream = &self.upstream;
        upstream.client().is_ok()
            && upstream.permits.available_permits() >= upstream.options.max_in_flight.max(1)
    }
}

impl Upstream {
    /// The connection of caller `key`'s own, made now if it has none;
    /// an error when it cannot be made, or when `max_callers` are open and
    /// in use.
    pub(crate) async fn for_caller(
        self: &Arc<Self>,
        key: &Arc<str>,
    ) -> Result<Arc<Upstream>, ErrorObject> {
        let (upstream, changed) = self.pooled(key)?;
        let deadline = tokio::time::Instant::now() + self.options.connect_timeout;
        loop {
            let notified = changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if upstream.client().is_ok() {
                // Used from now: not closed before the request reaches it.
                if let Some(pooled) = self.pool.open.locked().get_mut(key) {
                    pooled.last_used = Instant::now();
                }
                return Ok(upstream);
            }
            let status = upstream.status();
            if status.state == UpstreamState::Restarting || status.state == UpstreamState::Stopped {
                self.drop_caller(key, &upstream);
                let why = status.last_error.unwrap_or_else(|| "it stopped".into());
                return Err(ErrorObject::internal(format!(
                    "server {:?} could not be started for this caller: {why}",
                    self.config.name
                )));
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                self.drop_caller(key, &upstream);
                return Err(ErrorObject::internal(format!(
                    "server {:?} did not start for this caller within {:?}",
                    self.config.name, self.options.connect_timeout
                )));
            }
        }
    }

    /// The pooled connection of `key`, made (and its supervisor started)
    /// where there is none.
    fn pooled(
        self: &Arc<Self>,
        key: &Arc<str>,
    ) -> Result<(Arc<Upstream>, Arc<Notify>), ErrorObject> {
        let mut open = self.pool.open.locked();
        if let Some(pooled) = open.get_mut(key) {
            pooled.last_used = Instant::now();
            return Ok((Arc::clone(&pooled.upstream), Arc::clone(&pooled.changed)));
        }
        if open.len() >= self.options.max_callers.max(1) {
            let least_used = open
                .iter()
                .filter(|(_, pooled)| pooled.idle())
                .min_by_key(|(_, pooled)| pooled.last_used)
                .map(|(key, _)| Arc::clone(key));
            let Some(evicted) = least_used else {
                return Err(ErrorObject::new(
                    crate::limits::LIMITED,
                    format!(
                        "server {:?} has {} callers' connections in use (max_callers); try again later",
                        self.config.name,
                        open.len()
                    ),
                )
                .with_data(serde_json::json!({
                    "limit": "max_callers",
                    "server": self.config.name,
                    "retryAfterSeconds": 1.0,
                })));
            };
            if let Some(pooled) = open.remove(&evicted) {
                tracing::info!(server = %self.config.name, caller = %evicted, "closing the least recently used caller's connection");
                pooled.upstream.stop();
            }
        }
        let (signals, received) = mpsc::channel(64);
        let upstream = Upstream::with(
            self.config.clone(),
            self.options.clone(),
            self.index,
            (signals, Arc::clone(&self.starting), Arc::new(|_, _| {})),
            self.stop.child_token(),
            Some(Arc::clone(key)),
        );
        let changed = Arc::new(Notify::new());
        tokio::spawn(relay(
            Arc::downgrade(self),
            Arc::downgrade(&upstream),
            Arc::clone(key),
            received,
            Arc::clone(&changed),
        ));
        let supervisor = tokio::spawn(Arc::clone(&upstream).supervise());
        tracing::info!(server = %self.config.name, caller = %key, "starting a connection of the caller's own");
        open.insert(
            Arc::clone(key),
            Pooled {
                upstream: Arc::clone(&upstream),
                changed: Arc::clone(&changed),
                last_used: Instant::now(),
                supervisor,
            },
        );
        drop(open);
        if !self.pool.reaping.swap(true, Ordering::Relaxed) {
            tokio::spawn(reap(Arc::downgrade(self)));
        }
        Ok((upstream, changed))
    }

    /// Forgets `key`'s connection `upstream` (one that could not start),
    /// and stops it.
    fn drop_caller(&self, key: &Arc<str>, upstream: &Arc<Upstream>) {
        let mut open = self.pool.open.locked();
        if open
            .get(key)
            .is_some_and(|p| Arc::ptr_eq(&p.upstream, upstream))
        {
            open.remove(key);
        }
        upstream.stop();
    }
}

/// Passes a caller's connection's signals on: its notifications to the
/// host, for that caller only; its state changes to whoever waits for it
/// to be ready.
async fn relay(
    server: std::sync::Weak<Upstream>,
    upstream: std::sync::Weak<Upstream>,
    key: Arc<str>,
    mut signals: mpsc::Receiver<(usize, Signal)>,
    changed: Arc<Notify>,
) {
    while let Some((_, signal)) = signals.recv().await {
        match signal {
            Signal::Changed | Signal::Fault(_) | Signal::OfCaller(..) => changed.notify_waiters(),
            Signal::Notification(notification) => {
                let (Some(server), Some(upstream)) = (server.upgrade(), upstream.upgrade()) else {
                    return;
                };
                let peers = upstream.caller_peers();
                let signal = Signal::OfCaller(Arc::clone(&key), notification, peers);
                if server.signals.try_send((server.index, signal)).is_err() {
                    server.dropped_notification();
                }
            }
        }
    }
}

/// Closes the callers' connections of `server` unused for
/// `caller_idle`, until it stops.
async fn reap(server: std::sync::Weak<Upstream>) {
    let every = match server.upgrade() {
        Some(server) => (server.options.caller_idle / 4).clamp(
            std::time::Duration::from_millis(50),
            std::time::Duration::from_secs(30),
        ),
        None => return,
    };
    loop {
        let Some(server) = server.upgrade() else {
            return;
        };
        let stop = server.stop.clone();
        let idle_for = server.options.caller_idle;
        let idle: Vec<Pooled> = {
            let mut open = server.pool.open.locked();
            let keys: Vec<Arc<str>> = open
                .iter()
                .filter(|(_, p)| p.idle() && p.last_used.elapsed() >= idle_for)
                .map(|(key, _)| Arc::clone(key))
                .collect();
            keys.iter().filter_map(|key| open.remove(key)).collect()
        };
        for pooled in idle {
            tracing::info!(server = %server.config.name, caller = ?pooled.upstream.caller, "closing an idle caller's connection");
            pooled.upstream.stop();
        }
        drop(server);
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.cancelled() => return,
        }
    }
}
