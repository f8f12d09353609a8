//! An upstream's supervisor: connects (the handshake and the first
//! listing), serves the connection until it ends (notifications passed
//! on, changed lists read again, health checked), and starts it again
//! with exponential backoff and jitter.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use mcp_client::{Client, EraChoice};
use mcp_core::sync::MutexExt as _;
use mcp_schema::jsonrpc::Notification;
use mcp_schema::{
    CreateMessageRequestParams, ElicitRequestParams, ErrorObject, SubscriptionFilter, methods,
};
use tokio::sync::mpsc;

use super::connect::{self, ChildEnd, Connection};
use super::{Listing, Signal, Upstream, UpstreamState, subscribes};

/// Why a connection ended.
enum Ended {
    Stopped,
    Lost(String),
    /// Someone asked for a new connection.
    Restarted,
}

impl Upstream {
    /// Runs the supervisor until [`Upstream::stop`].
    pub(crate) async fn supervise(self: Arc<Self>) {
        let mut failures: u32 = 0;
        loop {
            // The wait for a turn to start does not count against the
            // connect timeout.
            let turn = tokio::select! {
                turn = Arc::clone(&self.starting).acquire_owned() => turn.ok(),
                _ = self.stop.cancelled() => break,
            };
            let started = Instant::now();
            let connected = tokio::select! {
                c = tokio::time::timeout(self.options.connect_timeout, self.connect()) => c,
                _ = self.stop.cancelled() => break,
            };
            drop(turn);
            let (connection, notifications) = match connected {
                Ok(Ok(connected)) => connected,
                Ok(Err(e)) => {
                    self.lost(e);
                    failures += 1;
                    if !self.wait_backoff(failures).await {
                        break;
                    }
                    continue;
                }
                Err(_) => {
                    self.lost(format!(
                        "did not start within {:?}",
                        self.options.connect_timeout
                    ));
                    failures += 1;
                    if !self.wait_backoff(failures).await {
                        break;
                    }
                    continue;
                }
            };
            let ended = self.run(&connection, notifications).await;
            self.update(|live| {
                live.client = None;
                live.listing = Arc::default();
                live.status.pid = None;
                live.connected_at = None;
            });
            let exited = connection.close(self.options.shutdown_grace).await;
            match ended {
                Ended::Stopped => break,
                Ended::Restarted => {
                    tracing::info!(server = %self.config.name, "restarting, as asked");
                    self.update(|live| {
                        live.status.state = UpstreamState::Restarting;
                        live.status.restarts += 1;
                    });
                    failures = 0;
                }
                Ended::Lost(mut why) => {
                    if let Some(exited) = exited {
                        why.push_str(&exited.told());
                    }
                    tracing::warn!(server = %self.config.name, "connection lost: {why}");
                    self.lost(why);
                    // A server that ran a while restarts at once; one that
                    // keeps dying right after starting backs off.
                    if started.elapsed() > Duration::from_secs(10) {
                        failures = 0;
                    }
                    failures += 1;
                    if !self.wait_backoff(failures).await {
                        break;
                    }
                }
            }
        }
        self.update(|live| {
            live.client = None;
            live.listing = Arc::default();
            live.status.state = UpstreamState::Stopped;
            live.status.pid = None;
        });
        self.pool.close_all().await;
    }

    fn lost(&self, why: String) {
        self.update(|live| {
            live.status.state = UpstreamState::Restarting;
            live.status.last_error = Some(why.clone());
        });
        self.fault(why);
    }

    /// Waits out the backoff after `failures` failures in a row; false when
    /// stopped meanwhile.
    async fn wait_backoff(&self, failures: u32) -> bool {
        let delay = backoff(
            self.options.backoff_initial,
            self.options.backoff_max,
            failures.saturating_sub(1),
        );
        tokio::select! {
            _ = tokio::time::sleep(delay) => {
                self.update(|live| live.status.restarts += 1);
                true
            }
            _ = self.restart.notified() => {
                self.update(|live| live.status.restarts += 1);
                true
            }
            _ = self.stop.cancelled() => false,
        }
    }

    /// Connects, settles the era and reads what the server lists.
    async fn connect(
        self: &Arc<Self>,
    ) -> Result<(Connection, mpsc::Receiver<Notification>), String> {
        let transport = match (&self.config.isolation, &self.caller) {
            (crate::config::Isolation::Shared, _) => {
                std::borrow::Cow::Borrowed(&self.config.transport)
            }
            (crate::config::Isolation::PerCaller, caller) => std::borrow::Cow::Owned(
                self.config
                    .transport_for(caller.as_deref().unwrap_or("shared")),
            ),
        };
        let opened = connect::open(
            &transport,
            self.options.connect_timeout,
            // A caller's own connection never signs in with the host's
            // credentials: those are another person's (the operator's).
            self.options
                .authorizer
                .as_ref()
                .filter(|_| self.caller.is_none()),
            self.options.max_message_bytes,
        )
        .await?;
        let pid = opened.child.as_ref().and_then(|c| c.id());
        let output_fault = opened.child.as_ref().map(|c| c.output_fault());
        // Dropped on any early return (or when this future is dropped at a
        // timeout): the child's whole process group goes with it.
        let group = opened.group;
        let (notify_tx, notify_rx) = mpsc::channel(NOTIFICATION_QUEUE);
        let weak = Arc::downgrade(self);
        let client = self
            .client_builder(weak, notify_tx)
            .connect(opened.transport)
            .await;
        let client = match client {
            Ok(client) => client,
            Err(e) => {
                let mut why = connect::handshake_failed(&e);
                if let Some(child) = opened.child {
                    let ended = ChildEnd::of(child, self.options.shutdown_grace).await;
                    why.push_str(&ended.told());
                }
                return Err(why);
            }
        };
        let connection = Connection {
            client,
            child: opened.child,
            group,
            http: opened.http,
            kind: opened.kind,
        };
        let listing = match Listing::fetch(&connection.client).await {
            Ok(listing) => self.pinned(listing),
            Err(mut e) => {
                if let Some(ended) = connection.close(self.options.shutdown_grace).await {
                    e.push_str(&ended.told());
                }
                return Err(e);
            }
        };
        let client = connection.client.clone();
        self.update(|live| {
            live.status.state = UpstreamState::Ready;
            live.status.transport = Some(connection.kind);
            live.status.revision = Some(client.revision().to_string());
            live.status.server = client
                .server_info()
                .map(|i| format!("{} {}", i.name, i.version));
            live.status.pid = pid;
            live.output_fault = output_fault;
            live.connected_at = Some(Instant::now());
            listing.count_into(&mut live.status);
            live.listing = Arc::new(listing);
            live.client = Some(client);
        });
        self.warn_flagged();
        tracing::info!(server = %self.config.name, "ready");
        let wanted = *self.log_level.locked();
        if let Some(level) = wanted {
            tell_log_level(connection.client.clone(), level).await;
        }
        Ok((connection, notify_rx))
    }

    fn client_builder(
        &self,
        weak: Weak<Upstream>,
        notifications: mpsc::Sender<Notification>,
    ) -> mcp_client::ClientBuilder {
        let sampling = weak.clone();
        let elicitation = weak.clone();
        let flooded = weak;
        let (on_update, index) = (Arc::clone(&self.on_update), self.index);
        // Calls set their own timeout (the server's `timeout`); the
        // host's own requests (the handshake, lists read again) may take
        // as long as connecting may, so that a short call timeout does not
        // keep a slow starter from ever connecting.
        let own_timeout = self.request_timeout().max(self.options.connect_timeout);
        let mut builder = Client::builder("mcp-host", env!("CARGO_PKG_VERSION"));
        if !self.options.roots.is_empty() {
            builder = builder.roots(self.options.roots.get());
        }
        builder
            .era(self.config.era.parse().unwrap_or(EraChoice::Auto))
            .probe_patience(self.options.probe_patience)
            .request_timeout(own_timeout)
            .on_sampling(move |params: CreateMessageRequestParams| {
                let upstream = sampling.upgrade();
                async move {
                    let upstream =
                        upstream.ok_or_else(|| ErrorObject::internal("host stopping"))?;
                    upstream.sample(params).await
                }
            })
            .on_elicitation(move |params: ElicitRequestParams| {
                let upstream = elicitation.upgrade();
                async move {
                    let upstream =
                        upstream.ok_or_else(|| ErrorObject::internal("host stopping"))?;
                    upstream.elicit(params).await
                }
            })
            .elicitation_url(true)
            // The host's model takes tools; a client may not, and is then
            // not asked a request that has them.
            .sampling_tools(self.options.sampler.as_deref().is_some_and(|sampler| {
                sampler.has_model() && sampler.mode(&self.config.name).host_may_answer()
            }))
            .on_notification(move |n: &Notification| {
                if n.method == methods::NOTIFICATION_RESOURCES_UPDATED {
                    on_update(index, n);
                }
                // A flood beyond the queue is dropped, not buffered; once
                // the connection is being closed, nothing is handled.
                if let Err(mpsc::error::TrySendError::Full(_)) = notifications.try_send(n.clone())
                    && let Some(upstream) = flooded.upgrade()
                {
                    if n.method.ends_with("/list_changed") {
                        upstream.relist.store(true, Ordering::Relaxed);
                    }
                    upstream.dropped_notification();
                }
            })
    }

    /// Serves a connection until it ends: passes notifications on,
    /// re-reads lists that changed, checks health.
    async fn run(
        self: &Arc<Self>,
        connection: &Connection,
        mut notifications: mpsc::Receiver<Notification>,
    ) -> Ended {
        let client = &connection.client;
        let listen = self.listen_for_changes(client);
        tokio::pin!(listen);
        let updates = self.listen_for_updates(client);
        tokio::pin!(updates);
        let mut health = tokio::time::interval(self.options.health_interval);
        health.reset();
        let mut failed_checks = 0;
        let mut relist_at = None;
        loop {
            tokio::select! {
                _ = self.stop.cancelled() => return Ended::Stopped,
                _ = self.restart.notified() => return Ended::Restarted,
                _ = client.peer().closed() => {
                    let why = connection.child.as_ref().and_then(|c| c.output_fault().get().map(str::to_owned));
                    return Ended::Lost(match why {
                        Some(why) => format!("the connection was closed: {why}"),
                        None => "the connection closed".into(),
                    });
                }
                _ = &mut listen => {}
                _ = &mut updates => {}
                _ = self.resubscribe.notified() => {
                    updates.set(self.listen_for_updates(client));
                }
                Some(notification) = notifications.recv() => {
                    self.on_notification(notification, &mut relist_at);
                }
                _ = until(relist_at) => {
                    relist_at = None;
                    self.relist(client).await;
                }
                _ = health.tick() => {
                    let ping = tokio::time::timeout(Duration::from_secs(10), client.ping()).await;
                    match ping {
                        Ok(Ok(())) => {
                            failed_checks = 0;
                            self.set_state_if(UpstreamState::Degraded, UpstreamState::Ready);
                        }
                        Ok(Err(e)) => failed_checks = self.failed_check(failed_checks, e.to_string()),
                        Err(_) => failed_checks = self.failed_check(failed_checks, "ping timed out".into()),
                    }
                    if failed_checks >= 2 {
                        return Ended::Lost("two health checks failed in a row".into());
                    }
                }
            }
        }
    }

    fn failed_check(&self, failed: u32, why: String) -> u32 {
        self.update(|live| {
            live.status.state = UpstreamState::Degraded;
            live.status.last_error = Some(format!("health check: {why}"));
        });
        failed + 1
    }

    fn set_state_if(&self, from: UpstreamState, to: UpstreamState) {
        if self.live.locked().status.state == from {
            self.update(|live| live.status.state = to);
        }
    }

    /// In 2026-07-28 a server tells of list changes only on a
    /// `subscriptions/listen` stream; this keeps one open for what it
    /// declares. Pending forever for a legacy server, which sends them
    /// unasked.
    async fn listen_for_changes(&self, client: &Client) {
        if client.revision().is_legacy() {
            return std::future::pending().await;
        }
        let caps = client.server_capabilities();
        let filter = SubscriptionFilter {
            tools_list_changed: caps
                .tools
                .as_ref()
                .and_then(|t| t.list_changed)
                .filter(|on| *on),
            prompts_list_changed: caps
                .prompts
                .as_ref()
                .and_then(|p| p.list_changed)
                .filter(|on| *on),
            resources_list_changed: caps
                .resources
                .as_ref()
                .and_then(|r| r.list_changed)
                .filter(|on| *on),
            ..Default::default()
        };
        if filter == SubscriptionFilter::default() {
            return std::future::pending().await;
        }
        // The stream ends only with the connection; an error (a server
        // without it) leaves the lists as read at start.
        if let Err(e) = client.listen(filter).await {
            tracing::debug!(server = %self.config.name, "subscriptions/listen: {e}");
        }
        std::future::pending().await
    }

    /// The `subscriptions/listen` stream of a 2026-07-28 server for the
    /// resources clients subscribed to; pending forever when there are
    /// none, or for a legacy server.
    async fn listen_for_updates(&self, client: &Client) {
        let uris: Vec<String> = self.subscriptions.locked().iter().cloned().collect();
        if client.revision().is_legacy() || uris.is_empty() || !subscribes(client) {
            return std::future::pending().await;
        }
        let filter = SubscriptionFilter {
            resource_subscriptions: Some(uris),
            ..Default::default()
        };
        if let Err(e) = client.listen(filter).await {
            tracing::debug!(server = %self.config.name, "subscriptions/listen for updates: {e}");
        }
        std::future::pending().await
    }

    /// Passes a notification on; a list change only marks the lists to
    /// be read again at `relist_at`, so that a burst of changes is read
    /// once, and the other notifications keep flowing meanwhile.
    fn on_notification(&self, notification: Notification, relist_at: &mut Option<Instant>) {
        let method = notification.method.as_str();
        // A change that was dropped (the queue was full) is not forgotten:
        // this notification came from that queue soon after.
        if method.ends_with("/list_changed") || self.relist.swap(false, Ordering::Relaxed) {
            relist_at.get_or_insert_with(|| Instant::now() + RELIST_DELAY);
        }
        if (method == methods::NOTIFICATION_RESOURCES_UPDATED
            || method == methods::NOTIFICATION_MESSAGE)
            && self
                .signals
                .try_send((self.index, Signal::Notification(notification)))
                .is_err()
        {
            self.dropped_notification();
        }
    }

    /// `listing`, checked against the pins where definitions are pinned
    /// (before anyone can call what it lists).
    fn pinned(&self, mut listing: Listing) -> Listing {
        if let Some(store) = &self.options.pins {
            listing.check_pins(store, &self.config.name, &self.config.identity());
            for changed in &listing.changed {
                tracing::warn!(
                    server = %self.config.name,
                    "{} {:?} changed since it was pinned; it is held until a person approves it:\n{}",
                    changed.kind,
                    changed.name,
                    changed.diff
                );
            }
        }
        listing
    }

    /// Checks what it lists against the pins again (another instance's
    /// pin replaced one of this one's).
    pub(crate) fn recheck_pins(&self) {
        let listing = Listing::clone(&self.listing());
        let listing = self.pinned(listing);
        self.update(|live| live.listing = Arc::new(listing));
    }

    /// Logs each item whose definition holds text aimed at the model.
    fn warn_flagged(&self) {
        for flagged in &self.listing().flagged {
            let flags: Vec<&str> = flagged.flags.iter().map(|f| f.as_str()).collect();
            tracing::warn!(
                server = %self.config.name,
                "{} {:?} holds text aimed at the model: {}",
                flagged.kind,
                flagged.name,
                flags.join(", ")
            );
        }
    }

    /// Reads the lists again after a change.
    async fn relist(&self, client: &Client) {
        match Listing::fetch(client).await.map(|l| self.pinned(l)) {
            Ok(listing) => {
                self.update(|live| {
                    listing.count_into(&mut live.status);
                    live.listing = Arc::new(listing);
                });
                self.warn_flagged();
            }
            Err(e) => self.update(|live| {
                live.status.state = UpstreamState::Degraded;
                live.status.last_error = Some(e);
            }),
        }
    }
}

/// How long after a list change the lists are read again: the changes
/// of a burst are read once.
const RELIST_DELAY: Duration = Duration::from_millis(50);

/// Sleeps until `deadline`; forever without one.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}

/// Tells a legacy server that logs which level to send from; bounded,
/// and a refusal only logged.
pub(super) async fn tell_log_level(client: Client, level: mcp_schema::LoggingLevel) {
    if !client.revision().is_legacy() || client.server_capabilities().logging.is_none() {
        return;
    }
    match tokio::time::timeout(Duration::from_secs(10), client.set_logging_level(level)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!("logging/setLevel: {e}"),
        Err(_) => tracing::debug!("logging/setLevel timed out"),
    }
}

/// How many notifications from one server wait to be handled at most.
const NOTIFICATION_QUEUE: usize = 1024;

/// The wait before start number `failures + 1`: `initial * 2^failures`,
/// at most `max`, with ±25% jitter so servers that fell together do not
/// come back together.
fn backoff(initial: Duration, max: Duration, failures: u32) -> Duration {
    let base = initial
        .saturating_mul(2u32.saturating_pow(failures.min(20)))
        .min(max);
    let jitter = rand::random_range(0.75..1.25);
    base.mul_f64(jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_up_to_the_cap() {
        let initial = Duration::from_millis(500);
        let max = Duration::from_secs(30);
        for _ in 0..100 {
            let first = backoff(initial, max, 0);
            assert!(first >= Duration::from_millis(375) && first <= Duration::from_millis(625));
            let third = backoff(initial, max, 2);
            assert!(third >= Duration::from_millis(1500) && third <= Duration::from_millis(2500));
            let late = backoff(initial, max, 40);
            assert!(late >= Duration::from_millis(22_500) && late <= Duration::from_millis(37_500));
        }
    }
}
