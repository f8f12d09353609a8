//! Settings of the Streamable HTTP endpoint.

use std::sync::Arc;
use std::time::Duration;

use crate::event_store::{EventStore, MemoryEventStore};
use crate::guard::OriginPolicy;
use crate::session_store::{LocalSessionStore, SessionStore};

/// How responses to requests are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ResponseMode {
    /// Plain JSON when the handler sends nothing before its result, an SSE
    /// stream otherwise.
    #[default]
    Auto,
    /// Always an SSE stream.
    AlwaysSse,
}

/// Settings of the HTTP endpoint: Streamable HTTP, and beside it the legacy
/// HTTP+SSE and WebSocket transports.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The path of the MCP endpoint.
    pub path: String,
    /// A legacy session unused for this long is ended.
    pub session_idle_timeout: Duration,
    /// At most this many live sessions of each transport (Streamable HTTP
    /// legacy-era sessions, legacy HTTP+SSE sessions, WebSocket
    /// connections, each counted on its own); more get 503.
    pub max_sessions: usize,
    /// Request bodies larger than this get 413.
    pub max_body_bytes: usize,
    /// How long a client has to send a request's headers, counted from the
    /// connection's start or from the end of its last response: a
    /// connection that sends nothing (or trickles its headers) for this
    /// long is closed.
    pub header_read_timeout: Duration,
    /// How long a client has to send a request's whole body; a slower one
    /// gets 408 and the connection is closed.
    pub body_read_timeout: Duration,
    /// At most this many connections at once; more are closed as soon as
    /// they are accepted.
    pub max_connections: usize,
    /// At most this many connections at once from one IP address, if set.
    pub max_connections_per_ip: Option<usize>,
    /// A response stream whose reader falls behind by this many messages
    /// is closed (a session's client resumes it from the event store).
    pub max_queued_messages: usize,
    /// A response stream whose reader falls behind by this many bytes is
    /// closed, likewise; one message is always taken, whatever its size.
    pub max_queued_bytes: usize,
    /// JSON or SSE responses.
    pub response_mode: ResponseMode,
    /// Idle SSE streams get a comment this often.
    pub keep_alive: Duration,
    /// The `retry` hint of priming events: how soon a client reconnects.
    pub retry: Duration,
    /// Which Host and Origin headers are accepted.
    pub origin_policy: Arc<OriginPolicy>,
    /// Where SSE events are kept for resumption.
    pub event_store: Arc<dyn EventStore>,
    /// Where legacy sessions are kept for other instances (by default
    /// nowhere: a session lives in the instance that made it). Its records
    /// live for `session_idle_timeout` after their last use.
    pub session_store: Arc<dyn SessionStore>,
    /// Where the answers to requests another instance sent go (by default
    /// nowhere: every request is sent by the instance that receives its
    /// answer).
    pub response_relay: Option<Arc<dyn crate::relay::ResponseRelay>>,
    /// Where this instance records the tasks it runs and finds the ones
    /// others run (by default nowhere: a task is found only where it
    /// runs).
    pub task_relay: Option<Arc<dyn crate::task_relay::TaskRelay>>,
    /// The resource updates raised here for the sessions of every
    /// instance (by default none): each answer to a legacy session kept
    /// in a shared store waits until the updates raised before it are
    /// stored (see [`crate::fanout`]).
    pub stored_updates: Option<crate::fanout::UpdateQueue>,
    /// The GET path of the legacy HTTP+SSE transport (2024-11-05), or
    /// `None` to leave it off.
    pub legacy_sse_path: Option<String>,
    /// The POST path of the legacy HTTP+SSE transport's messages.
    pub legacy_message_path: String,
    /// The WebSocket path, or `None` to leave WebSocket off.
    pub websocket_path: Option<String>,
}

impl HttpConfig {
    /// Defaults for an endpoint bound to a loopback `port`: path `/mcp`,
    /// 30 min idle timeout, 10,000 sessions, 4 MiB bodies, 30 s for a
    /// request's headers (and for an idle connection's next request) and
    /// 30 s for its body, 10,000 connections (any number per address), a
    /// stream closed when its reader is 1,024 messages or 1 MiB behind, automatic
    /// response mode, 15 s keep-alive, 1 s retry, loopback hosts only, a
    /// bounded in-memory event store, sessions kept in this process only, the legacy HTTP+SSE transport at
    /// `/sse` and `/message`, WebSocket at `/ws`.
    pub fn loopback(port: u16) -> Self {
        HttpConfig {
            path: "/mcp".to_owned(),
            session_idle_timeout: Duration::from_secs(30 * 60),
            max_sessions: 10_000,
            max_body_bytes: 4 * 1024 * 1024,
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(30),
            max_connections: 10_000,
            max_connections_per_ip: None,
            max_queued_messages: 1024,
            max_queued_bytes: 1024 * 1024,
            response_mode: ResponseMode::Auto,
            keep_alive: Duration::from_secs(15),
            retry: Duration::from_secs(1),
            origin_policy: Arc::new(OriginPolicy::loopback(port)),
            event_store: Arc::new(MemoryEventStore::new(Default::default())),
            session_store: Arc::new(LocalSessionStore),
            response_relay: None,
            task_relay: None,
            stored_updates: None,
            legacy_sse_path: Some("/sse".to_owned()),
            legacy_message_path: "/message".to_owned(),
            websocket_path: Some("/ws".to_owned()),
        }
    }

    /// Sets how long a client has to send a request's headers (and an
    /// idle connection its next request).
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// Sets how long a client has to send a request's body.
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// Sets how many connections may be open at once.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// Sets how many connections one IP address may have open at once.
    pub fn max_connections_per_ip(mut self, max: usize) -> Self {
        self.max_connections_per_ip = Some(max.max(1));
        self
    }

    /// Sets how far, in messages and bytes, a response stream's reader
    /// may fall behind before the stream is closed.
    pub fn max_queued(mut self, messages: usize, bytes: usize) -> Self {
        self.max_queued_messages = messages.max(1);
        self.max_queued_bytes = bytes;
        self
    }

    /// The limits of each response stream's queue.
    pub(crate) fn queue_limits(&self) -> crate::outbound::QueueLimits {
        crate::outbound::QueueLimits {
            messages: self.max_queued_messages,
            bytes: self.max_queued_bytes,
        }
    }

    /// Sets the endpoint path.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Sets the idle timeout of legacy sessions.
    pub fn session_idle_timeout(mut self, timeout: Duration) -> Self {
        self.session_idle_timeout = timeout;
        self
    }

    /// Sets the cap on live legacy sessions.
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max;
        self
    }

    /// Sets the largest accepted request body.
    pub fn max_body_bytes(mut self, max: usize) -> Self {
        self.max_body_bytes = max;
        self
    }

    /// Sets how responses are sent.
    pub fn response_mode(mut self, mode: ResponseMode) -> Self {
        self.response_mode = mode;
        self
    }

    /// Sets the keep-alive interval of idle SSE streams.
    pub fn keep_alive(mut self, interval: Duration) -> Self {
        self.keep_alive = interval;
        self
    }

    /// Sets which Host and Origin headers are accepted.
    pub fn origin_policy(mut self, policy: OriginPolicy) -> Self {
        self.origin_policy = Arc::new(policy);
        self
    }

    /// Hands the answers to requests this instance did not send to the
    /// instance that did (see [`crate::relay::ResponseRelay`]).
    pub fn response_relay(mut self, relay: Arc<dyn crate::relay::ResponseRelay>) -> Self {
        self.response_relay = Some(relay);
        self
    }

    /// Finds tasks that run on other instances (see
    /// [`crate::task_relay::TaskRelay`]).
    pub fn task_relay(mut self, relay: Arc<dyn crate::task_relay::TaskRelay>) -> Self {
        self.task_relay = Some(relay);
        self
    }

    /// Makes each answer to a legacy session kept in a shared store wait
    /// until the resource updates `updates` took before it are stored, so
    /// that a client that has an answer can resume every update raised
    /// before it on any instance, even if this one dies.
    pub fn stored_updates(mut self, updates: crate::fanout::UpdateQueue) -> Self {
        self.stored_updates = Some(updates);
        self
    }

    /// Sets where SSE events are kept for resumption.
    pub fn event_store(mut self, store: Arc<dyn EventStore>) -> Self {
        self.event_store = store;
        self
    }

    /// Sets where legacy sessions are kept for other instances (a shared
    /// store lets any instance continue any session).
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.session_store = store;
        self
    }

    /// Serves the legacy HTTP+SSE transport: the event stream on GET
    /// `sse_path`, messages on POST `message_path`.
    pub fn legacy_sse(
        mut self,
        sse_path: impl Into<String>,
        message_path: impl Into<String>,
    ) -> Self {
        self.legacy_sse_path = Some(sse_path.into());
        self.legacy_message_path = message_path.into();
        self
    }

    /// Leaves the legacy HTTP+SSE transport off.
    pub fn without_legacy_sse(mut self) -> Self {
        self.legacy_sse_path = None;
        self
    }

    /// Serves WebSocket connections on `path`.
    pub fn websocket(mut self, path: impl Into<String>) -> Self {
        self.websocket_path = Some(path.into());
        self
    }

    /// Leaves WebSocket off.
    pub fn without_websocket(mut self) -> Self {
        self.websocket_path = None;
        self
    }
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("path", &self.path)
            .field("session_idle_timeout", &self.session_idle_timeout)
            .field("max_sessions", &self.max_sessions)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("response_mode", &self.response_mode)
            .field("legacy_sse_path", &self.legacy_sse_path)
            .field("legacy_message_path", &self.legacy_message_path)
            .field("websocket_path", &self.websocket_path)
            .finish_non_exhaustive()
    }
}
