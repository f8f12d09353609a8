//! How upstreams are supervised: timeouts, backoff, limits, and the
//! credentials of remote servers.

use std::sync::Arc;
use std::time::Duration;

/// Makes the credential hook for a remote server at a URL (an OAuth client
/// with stored tokens, say); used for remote servers whose entry sets no
/// `Authorization` header.
#[derive(Clone)]
pub struct AuthorizerFactory(pub Arc<MakeAuthorizer>);

/// The function inside an [`AuthorizerFactory`].
pub type MakeAuthorizer = dyn Fn(
        String,
    ) -> mcp_core::BoxFuture<'static, Result<Arc<dyn mcp_http::client::Authorizer>, String>>
    + Send
    + Sync;

impl std::fmt::Debug for AuthorizerFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuthorizerFactory")
    }
}

/// How upstreams are supervised.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SupervisorOptions {
    /// How long connecting (and the handshake and first listing) may take.
    pub connect_timeout: Duration,
    /// For a server of era `auto`, how long its answer to `server/discover`
    /// is waited for alone before `initialize` is sent too; a late answer
    /// to either is still used, until `connect_timeout`.
    pub probe_patience: Duration,
    /// The default for one request, unless the server's entry sets one.
    pub request_timeout: Duration,
    /// How often a ready server is pinged.
    pub health_interval: Duration,
    /// The first wait before starting again; doubled each failure.
    pub backoff_initial: Duration,
    /// The longest wait before starting again.
    pub backoff_max: Duration,
    /// How long each step of stopping a child waits.
    pub shutdown_grace: Duration,
    /// Calls in flight to one server at most; more wait.
    pub max_in_flight: usize,
    /// Calls waiting for a slot on one server at most; more are refused
    /// at once.
    pub max_waiting: usize,
    /// How long a call waits for a slot at most before it is refused.
    pub max_wait: Duration,
    /// Servers starting (connecting, handshaking, listing) at once, at
    /// most: many slow servers do not hold the others up.
    pub start_concurrency: usize,
    /// Credentials for remote servers that ask for them (OAuth).
    pub authorizer: Option<AuthorizerFactory>,
    /// The longest message a stdio server may send; a longer one ends its
    /// connection (the server is then restarted).
    pub max_message_bytes: usize,
    /// Where each listed definition is pinned as first seen and checked
    /// after (see [`crate::consent::GuardStore::check_pin`]); none: not
    /// pinned.
    pub pins: Option<std::sync::Arc<crate::consent::GuardStore>>,
    /// Where a server's own requests to clients (sampling, elicitation,
    /// roots) are recorded; [`crate::Host::start`] sets the host's audit
    /// log here.
    pub audit: Option<crate::audit::AuditLog>,
    /// Who answers a server's sampling requests when the host may (see
    /// [`crate::sampler`]); [`crate::Host::start`] sets it from
    /// [`crate::HostOptions::sampling`]. None: the clients only.
    pub sampler: Option<Arc<crate::sampler::Sampler>>,
    /// Who answers a server's elicitation that no client can (see
    /// [`crate::elicit`]); [`crate::Host::start`] sets it from
    /// [`crate::HostOptions::elicitors`].
    pub elicitors: crate::elicit::Elicitors,
    /// The roots offered to every server; declared where there are any
    /// at start.
    pub roots: crate::roots::SharedRoots,
    /// Whether each hop to a server is a span whose context the server
    /// gets (see [`crate::traces`]).
    pub traces: bool,
    /// Connections of callers of their own per per-caller server, at
    /// most (see [`crate::isolation`]).
    pub max_callers: usize,
    /// How long a caller's own connection is kept unused.
    pub caller_idle: Duration,
}

impl Default for SupervisorOptions {
    fn default() -> Self {
        SupervisorOptions {
            connect_timeout: Duration::from_secs(30),
            probe_patience: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            health_interval: Duration::from_secs(30),
            backoff_initial: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(2),
            max_in_flight: 256,
            max_waiting: 1024,
            max_wait: Duration::from_secs(30),
            start_concurrency: 8,
            authorizer: None,
            max_message_bytes: mcp_core::stdio::MAX_LINE_BYTES,
            pins: None,
            audit: None,
            sampler: None,
            elicitors: crate::elicit::Elicitors::default(),
            roots: crate::roots::SharedRoots::default(),
            traces: false,
            max_callers: 16,
            caller_idle: Duration::from_secs(300),
        }
    }
}
