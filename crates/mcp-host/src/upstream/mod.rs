//! One supervised connection per configured server, shared by every
//! downstream client: started, listed, health-checked, restarted with
//! exponential backoff and jitter when it dies, and stopped as the
//! specification says.
//!
//! ```text
//!  starting -> ready -> (connection lost | health checks fail) -> restarting -> ready ...
//!                \-> (cannot start) -> restarting (backoff: 0.5 s, 1 s, 2 s ... 30 s)
//!  any state -> stopped (host shutdown, or the server removed from the config)
//! ```

mod at_host;
mod callers;
mod connect;
mod elicitation;
pub(crate) mod listing;
mod options;
mod pool;
mod sampling;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use mcp_client::{Client, EraChoice};

use mcp_schema::jsonrpc::Notification;
use mcp_schema::{
    CreateMessageRequestParams, ElicitRequestParams, ErrorObject, SubscriptionFilter, methods,
};
use serde::Serialize;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

pub(crate) use callers::{Asked, Question};
pub use connect::{INHERITED_ENV, minimal_env};
pub use listing::{Changed, Flagged, Item, Listing};
pub use options::{AuthorizerFactory, MakeAuthorizer, SupervisorOptions};

use crate::config::ServerConfig;
use connect::{ChildEnd, Connection};
use mcp_core::sync::MutexExt as _;

/// Where an upstream is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UpstreamState {
    /// Connecting for the first time.
    Starting,
    /// Connected and listed; calls go through.
    Ready,
    /// Connected, but a health check or a list failed; calls still go through.
    Degraded,
    /// Lost, waiting to connect again.
    Restarting,
    /// Stopped for good (shutdown, or removed from the config).
    Stopped,
}

impl UpstreamState {
    /// Its name, as the status and the metrics say it.
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamState::Starting => "starting",
            UpstreamState::Ready => "ready",
            UpstreamState::Degraded => "degraded",
            UpstreamState::Restarting => "restarting",
            UpstreamState::Stopped => "stopped",
        }
    }
}

/// An upstream's state for people and scripts (`mcp host status`).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UpstreamStatus {
    /// The config entry's name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// Where it is in its life.
    pub state: UpstreamState,
    /// `stdio`, `streamable-http`, `sse` or `websocket`, once connected.
    pub transport: Option<&'static str>,
    /// The protocol revision in force, once connected.
    pub revision: Option<String>,
    /// The server's name and version, as it said.
    pub server: Option<String>,
    /// How many tools, resources, resource templates and prompts it lists.
    pub tools: usize,
    /// See `tools`.
    pub resources: usize,
    /// See `tools`.
    pub templates: usize,
    /// See `tools`.
    pub prompts: usize,
    /// How many times it was started again.
    pub restarts: u64,
    /// The last thing that went wrong.
    pub last_error: Option<String>,
    /// The child's process id, for stdio servers that run.
    pub pid: Option<u32>,
    /// Calls in flight on it now.
    pub in_flight: usize,
    /// Calls that failed on its side: not answered in time, cut off by
    /// the connection's end, or answered with something that is not a
    /// result. Each sets `last_error`.
    pub failed_calls: u64,
    /// Notifications it sent faster than the host could handle them,
    /// dropped rather than buffered (a flood).
    pub dropped_notifications: u64,
    /// Warnings about its config entry (see [`ServerConfig::hints`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<String>,
    /// Callers' own connections open now, for a per-caller server (see
    /// [`crate::isolation`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub callers: usize,
    /// Its tools, prompts and resources whose definitions hold text
    /// aimed at the model: hidden characters, injection phrases.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flagged: Vec<Flagged>,
    /// Its tools, prompts and resources whose definitions changed since
    /// they were pinned (held until a person approves them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<Changed>,
    /// Calls waiting for a free slot (`max_in_flight`) now.
    pub waiting: usize,
    /// Seconds since its connection was made, while it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up_seconds: Option<f64>,
    /// The requests it answered through the host's gateway, by method,
    /// client era and outcome (counted where the host keeps metrics).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<crate::metrics::Tally>,
}

/// What an upstream tells the host.
#[derive(Debug)]
pub(crate) enum Signal {
    /// Its state or listing changed: the catalog must be rebuilt.
    Changed,
    /// A notification to pass on (resource updates, log messages).
    Notification(Notification),
    /// Something went wrong (the connection was lost, a call failed).
    Fault(String),
    /// A notification of one caller's own connection: for that caller's
    /// sessions only (the peers of its calls in flight, its key).
    OfCaller(Arc<str>, Notification, Vec<mcp_core::Peer>),
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Told of each `notifications/resources/updated` of an upstream (its
/// index, the notification) as it is read, before anything the server
/// sent after it: so that the update is on its way to other instances
/// before the answer of the call that raised it goes out.
pub(crate) type OnUpdate = Arc<dyn Fn(usize, &Notification) + Send + Sync>;

/// One configured server and its supervisor's shared state.
pub struct Upstream {
    pub(crate) config: ServerConfig,
    options: SupervisorOptions,
    live: Mutex<Live>,
    stop: CancellationToken,
    signals: mpsc::Sender<(usize, Signal)>,
    index: usize,
    permits: Semaphore,
    /// Shared by every upstream of a host: starts at once.
    starting: Arc<Semaphore>,
    callers: Mutex<(u64, Vec<callers::Caller>)>,
    /// The most detailed log level a client asked for: a legacy server is
    /// told it (and told again after a restart); the host filters what
    /// each client gets.
    log_level: Mutex<Option<mcp_schema::LoggingLevel>>,
    /// The resources some client subscribed to, at this server's URIs:
    /// a 2026-07-28 server is asked for their updates on a
    /// `subscriptions/listen` stream of their own, opened again when the
    /// set grows.
    subscriptions: Mutex<std::collections::BTreeSet<String>>,
    resubscribe: tokio::sync::Notify,
    /// Wakes the supervisor to make a new connection now.
    restart: tokio::sync::Notify,
    /// Notifications dropped in a flood (see [`UpstreamStatus`]).
    dropped: AtomicU64,
    /// A list change was among the notifications dropped: the lists are
    /// read again with the next notification handled.
    relist: std::sync::atomic::AtomicBool,
    /// The `_meta` of the last forwarded request, for the next one.
    meta: crate::upstream_meta::MetaCache,
    on_update: OnUpdate,
    /// What the gateway counted of its requests.
    pub(crate) stats: crate::metrics::RequestStats,
    /// Calls waiting for a permit.
    waiting: std::sync::atomic::AtomicUsize,
    /// The caller whose own connection this is, for one of a per-caller
    /// server's (see [`crate::isolation`]).
    caller: Option<Arc<str>>,
    /// A per-caller server's connections of its callers' own.
    pool: pool::Pool,
}

struct Live {
    status: UpstreamStatus,
    client: Option<Client>,
    listing: Arc<Listing>,
    /// Why the latest child's output was abandoned, if it was; kept until
    /// the next connection, so that the calls it cut off can say why.
    output_fault: Option<mcp_core::stdio::StreamFault>,
    /// When the connection in use was made.
    connected_at: Option<Instant>,
}

/// Why a connection ended.
enum Ended {
    Stopped,
    Lost(String),
    /// Someone asked for a new connection.
    Restarted,
}

impl Upstream {
    pub(crate) fn new(
        config: ServerConfig,
        options: SupervisorOptions,
        index: usize,
        signals: mpsc::Sender<(usize, Signal)>,
        starting: Arc<Semaphore>,
        on_update: OnUpdate,
    ) -> Arc<Upstream> {
        Self::with(
            config,
            options,
            index,
            (signals, starting, on_update),
            CancellationToken::new(),
            None,
        )
    }

    /// An upstream stopped with `stop`, whose connection is `caller`'s own
    /// where one is named.
    fn with(
        config: ServerConfig,
        options: SupervisorOptions,
        index: usize,
        (signals, starting, on_update): (mpsc::Sender<(usize, Signal)>, Arc<Semaphore>, OnUpdate),
        stop: CancellationToken,
        caller: Option<Arc<str>>,
    ) -> Arc<Upstream> {
        let status = UpstreamStatus {
            name: config.name.clone(),
            namespace: config.namespace.clone(),
            state: UpstreamState::Starting,
            transport: None,
            revision: None,
            server: None,
            tools: 0,
            resources: 0,
            templates: 0,
            prompts: 0,
            restarts: 0,
            last_error: None,
            pid: None,
            in_flight: 0,
            failed_calls: 0,
            dropped_notifications: 0,
            hints: config.hints.clone(),
            callers: 0,
            flagged: Vec::new(),
            changed: Vec::new(),
            waiting: 0,
            up_seconds: None,
            requests: Vec::new(),
        };
        Arc::new(Upstream {
            permits: Semaphore::new(options.max_in_flight.max(1)),
            starting,
            config,
            options,
            live: Mutex::new(Live {
                status,
                client: None,
                listing: Arc::default(),
                output_fault: None,
                connected_at: None,
            }),
            stop,
            signals,
            index,
            callers: Mutex::default(),
            meta: Default::default(),
            log_level: Mutex::default(),
            subscriptions: Mutex::default(),
            resubscribe: tokio::sync::Notify::new(),
            restart: tokio::sync::Notify::new(),
            dropped: AtomicU64::new(0),
            relist: std::sync::atomic::AtomicBool::new(false),
            on_update,
            stats: crate::metrics::RequestStats::default(),
            waiting: std::sync::atomic::AtomicUsize::new(0),
            caller,
            pool: pool::Pool::default(),
        })
    }

    /// Its index in the host.
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// The config entry's name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Its state now.
    pub fn status(&self) -> UpstreamStatus {
        let (mut status, connected_at) = {
            let live = self.live.locked();
            (live.status.clone(), live.connected_at)
        };
        status.up_seconds = connected_at.map(|at| at.elapsed().as_secs_f64());
        status.waiting = self.waiting.load(Ordering::Relaxed);
        status.requests = self.stats.tallies();
        let free = self.permits.available_permits();
        status.in_flight = self.options.max_in_flight.max(1).saturating_sub(free);
        status.dropped_notifications = self.dropped.load(Ordering::Relaxed);
        status.callers = self.pool.len();
        status
    }

    /// A notification was dropped: counted, and told as a fault the 1st,
    /// 2nd, 4th, 8th ... time, so a flood makes a few events, not one each.
    fn dropped_notification(&self) {
        let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        if dropped.is_power_of_two() {
            let error = format!(
                "{dropped} notifications dropped: the server sends them faster than \
                 the host handles them"
            );
            tracing::warn!(server = %self.config.name, "{error}");
            self.live.locked().status.last_error = Some(error.clone());
            self.fault(error);
        }
    }

    /// A call failed on the server's side: counted, and told as a fault.
    pub(crate) fn call_failed(&self, error: &str) {
        tracing::warn!(server = %self.config.name, "{error}");
        {
            let mut live = self.live.locked();
            live.status.failed_calls += 1;
            live.status.last_error = Some(error.to_owned());
        }
        self.fault(error.to_owned());
    }

    fn fault(&self, error: String) {
        let _ = self.signals.try_send((self.index, Signal::Fault(error)));
    }

    /// Why the latest connection was cut off by the host, if it was (a
    /// message over the limit).
    pub(crate) fn cut_off_because(&self) -> Option<String> {
        self.live
            .locked()
            .output_fault
            .as_ref()
            .and_then(|f| f.get().map(str::to_owned))
    }

    /// What it lists now (empty while not connected).
    pub fn listing(&self) -> Arc<Listing> {
        Arc::clone(&self.live.locked().listing)
    }

    /// The client, while connected; otherwise an error naming the server
    /// and its state.
    /// Whether a hop to this server is traced (see [`crate::traces`]).
    pub(crate) fn keeps_traces(&self) -> bool {
        self.options.traces
    }

    pub(crate) fn client(&self) -> Result<Client, ErrorObject> {
        let live = self.live.locked();
        match &live.client {
            Some(client) => Ok(client.clone()),
            None => Err(self.unavailable(&live.status)),
        }
    }

    fn unavailable(&self, status: &UpstreamStatus) -> ErrorObject {
        let state = match status.state {
            UpstreamState::Starting => "starting",
            UpstreamState::Restarting => "restarting",
            UpstreamState::Stopped => "stopped",
            UpstreamState::Ready | UpstreamState::Degraded => "not connected",
        };
        let mut message = format!("server {:?} is {state}", self.config.name);
        if let Some(error) = &status.last_error {
            message.push_str(&format!(" (last error: {error})"));
        }
        ErrorObject::new(mcp_schema::error_codes::INTERNAL_ERROR, message)
    }

    /// The `_meta` of requests to this server, kept between them.
    pub(crate) fn meta_cache(&self) -> &crate::upstream_meta::MetaCache {
        &self.meta
    }

    /// The request timeout for this server.
    pub(crate) fn request_timeout(&self) -> Duration {
        self.config.timeout.unwrap_or(self.options.request_timeout)
    }

    /// Waits for room for one more call in flight: at most `max_wait`,
    /// behind at most `max_waiting` others; refused beyond either, with an
    /// error that says which.
    pub(crate) async fn permit(
        &self,
    ) -> Result<tokio::sync::SemaphorePermit<'_>, mcp_schema::ErrorObject> {
        if let Ok(permit) = self.permits.try_acquire() {
            return Ok(permit);
        }
        /// Counts a call among the waiting while it waits.
        struct Waiting<'a>(&'a std::sync::atomic::AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::Relaxed);
            }
        }
        let before = self.waiting.fetch_add(1, Ordering::Relaxed);
        let _waiting = Waiting(&self.waiting);
        let options = &self.options;
        let busy = |why: String| {
            mcp_schema::ErrorObject::new(
                crate::limits::LIMITED,
                format!(
                    "server {:?} is busy: {} calls in flight (max_in_flight) and {why}; try again later",
                    self.config.name, options.max_in_flight
                ),
            )
            .with_data(serde_json::json!({
                "limit": "max_in_flight",
                "server": self.config.name,
                "retryAfterSeconds": 1.0,
            }))
        };
        if before >= options.max_waiting {
            return Err(busy(format!(
                "{} waiting already (max_waiting)",
                options.max_waiting
            )));
        }
        match tokio::time::timeout(options.max_wait, self.permits.acquire()).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => Err(mcp_schema::ErrorObject::internal(
                "the server's connection is closing",
            )),
            Err(_) => Err(busy(format!(
                "no slot came free within {:?} (max_wait)",
                options.max_wait
            ))),
        }
    }

    /// A client asked for log messages from `level` up: a legacy server
    /// that logs is told, unless it was told a more detailed level.
    pub(crate) fn want_log_level(self: &Arc<Self>, level: mcp_schema::LoggingLevel) {
        {
            let mut wanted = self.log_level.locked();
            if wanted.is_some_and(|current| current <= level) {
                return;
            }
            *wanted = Some(level);
        }
        if let Ok(client) = self.client() {
            tokio::spawn(tell_log_level(client, level));
        }
    }

    /// A client subscribed to this server's resource `uri`: a 2026-07-28
    /// server is asked for its updates (a legacy one is sent
    /// `resources/subscribe` by the gateway).
    pub(crate) fn subscribe(&self, uri: &str) {
        if self.subscriptions.locked().insert(uri.to_owned()) {
            self.resubscribe.notify_one();
        }
    }

    /// Stops the supervisor (and the connection) for good.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Closes the connection (a child process is stopped) and makes a new
    /// one at once; a server waiting to be retried is retried now. Calls
    /// in flight on the old connection fail.
    pub fn restart(&self) {
        self.restart.notify_waiters();
    }

    fn update(&self, change: impl FnOnce(&mut Live)) {
        change(&mut self.live.locked());
        let _ = self.signals.try_send((self.index, Signal::Changed));
    }

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

/// Whether a server takes resource subscriptions.
pub(crate) fn subscribes(client: &Client) -> bool {
    client
        .server_capabilities()
        .resources
        .as_ref()
        .and_then(|r| r.subscribe)
        == Some(true)
}

/// Tells a legacy server that logs which level to send from; bounded,
/// and a refusal only logged.
async fn tell_log_level(client: Client, level: mcp_schema::LoggingLevel) {
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
pub(crate) fn backoff(initial: Duration, max: Duration, failures: u32) -> Duration {
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
