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
//!
//! This module holds the upstream, its state and what callers ask of it
//! (its client, a slot for a call); `supervisor` runs the connection's
//! life, `connect` opens it, `listing` reads its lists, `callers`,
//! `sampling`, `elicitation` and `at_host` answer what the server asks
//! back, and `pool` keeps the connections of callers' own.

mod at_host;
mod callers;
mod connect;
mod elicitation;
pub(crate) mod listing;
mod options;
mod pool;
mod sampling;
mod supervisor;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_client::Client;

use mcp_schema::ErrorObject;
use mcp_schema::jsonrpc::Notification;
use serde::Serialize;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

pub(crate) use callers::{Asked, Question};
pub use connect::{INHERITED_ENV, minimal_env};
pub use listing::{Changed, Flagged, Item, Listing};
pub use options::{AuthorizerFactory, MakeAuthorizer, SupervisorOptions};

use crate::config::ServerConfig;
use mcp_core::sync::MutexExt as _;
use supervisor::tell_log_level;

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
