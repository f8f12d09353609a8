//! Who each side of a session is, and what they agreed: the server's and
//! the client's identities, the engine's settings, what was negotiated,
//! and the stateless clients a server has seen.
//!
//! In the stateless era each request repeats the client's protocol
//! version, info and capabilities. A client sends the same text every
//! time, so a server reads it once and keeps the typed `_meta` and the
//! [`Negotiated`] it implies, keyed by that text.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::sync::RwLockExt as _;
use foldhash::HashMap;
use mcp_schema::leading_meta::META_FIRST;
use mcp_schema::{
    ClientCapabilities, Implementation, InitializeResult, ProtocolVersion, RequestMetaObject,
    ServerCapabilities,
};
use serde_json::value::RawValue;

/// How many distinct `_meta` texts a server keeps; past that it starts over.
pub(crate) const CAPACITY: usize = 64;

/// How many of the latest remembered texts are looked for at the start of
/// params before they are parsed.
pub(crate) const RECENT: usize = 4;

/// Who the server is and what it offers, as announced at `initialize` and
/// `server/discover`. Fixed once made but for its instructions, so what is
/// derived from it (the `_meta` naming the server, what stateless clients
/// said) is made once.
#[derive(Clone, Debug)]
pub struct ServerIdentity {
    pub(crate) info: Implementation,
    pub(crate) capabilities: ServerCapabilities,
    /// Shared by the clones of one identity: a gateway's change as its
    /// servers come and go ([`ServerIdentity::set_instructions`]).
    instructions: Arc<std::sync::RwLock<Option<String>>>,
    /// The `_meta` member naming the server on modern-era results.
    pub(crate) meta_member: Option<Arc<str>>,
    /// The stateless clients seen, so their repeated `_meta` is read once.
    stateless_clients: StatelessClients,
}

impl ServerIdentity {
    /// An identity with these capabilities and no instructions.
    pub fn new(info: Implementation, capabilities: ServerCapabilities) -> Self {
        ServerIdentity {
            meta_member: server_meta_member(&info),
            info,
            capabilities,
            instructions: Arc::default(),
            stateless_clients: StatelessClients::default(),
        }
    }

    /// Adds instructions.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Arc::new(std::sync::RwLock::new(Some(instructions.into())));
        self
    }

    /// Replaces the instructions of this identity and its clones, for the
    /// `initialize` and `server/discover` answered from now on.
    pub fn set_instructions(&self, instructions: Option<String>) {
        *self.instructions.write_locked() = instructions;
    }

    /// Name and version.
    pub fn info(&self) -> &Implementation {
        &self.info
    }

    /// What the server offers; requests for undeclared features get -32601.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.capabilities
    }

    /// How to use the server.
    pub fn instructions(&self) -> Option<String> {
        self.instructions.read_locked().clone()
    }

    /// The stateless clients this identity has served.
    pub(crate) fn stateless_clients(&self) -> &StatelessClients {
        &self.stateless_clients
    }
}

/// Who the client is and what it can do for a server.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ClientIdentity {
    /// Name and version.
    pub info: Implementation,
    /// What the client answers; server requests for others get -32601.
    pub capabilities: ClientCapabilities,
}

impl ClientIdentity {
    /// An identity with these capabilities.
    pub fn new(info: Implementation, capabilities: ClientCapabilities) -> Self {
        ClientIdentity { info, capabilities }
    }
}

/// Which side of the conversation this session is.
#[derive(Clone, Debug)]
pub enum Role {
    /// Answers `initialize` and `server/discover`, serves features.
    Server(Arc<ServerIdentity>),
    /// Drives the handshake, answers sampling, roots and elicitation.
    Client(Arc<ClientIdentity>),
}

/// The engine's settings.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SessionConfig {
    /// Which side this is.
    pub role: Role,
    /// Default wait for a response to an outgoing request.
    pub request_timeout: Duration,
    /// Progress may extend a request's wait up to this much in total.
    pub max_request_timeout: Duration,
    /// Incoming requests handled at once; more wait (back-pressure).
    pub max_concurrent_requests: usize,
    /// When the peer stops sending, requests in flight get this long to
    /// finish before they are cancelled.
    pub shutdown_grace: Duration,
    /// The id of the first request this side sends in a session (then 1
    /// more each time). Instances that share sessions start at different,
    /// random points, so that their requests to one client never share an
    /// id.
    pub first_request_id: i64,
}

impl SessionConfig {
    /// Default settings for `role`: 60 s timeout, 10 min hard maximum,
    /// 512 requests in flight, 5 s shutdown grace.
    pub fn new(role: Role) -> Self {
        SessionConfig {
            role,
            request_timeout: Duration::from_secs(60),
            max_request_timeout: Duration::from_secs(600),
            max_concurrent_requests: 512,
            shutdown_grace: Duration::from_secs(5),
            first_request_id: 1,
        }
    }

    /// Sets the default request timeout.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets the hard maximum a request may wait, progress included.
    pub fn max_request_timeout(mut self, timeout: Duration) -> Self {
        self.max_request_timeout = timeout;
        self
    }

    /// Sets how long requests in flight may finish after the peer stops sending.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Sets how many incoming requests run at once.
    pub fn max_concurrent_requests(mut self, n: usize) -> Self {
        self.max_concurrent_requests = n.max(1);
        self
    }
}

/// What both sides know about each other for a request: the revision and
/// each side's identity and capabilities.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Negotiated {
    /// The revision in force.
    pub revision: Option<ProtocolVersion>,
    /// The client's name and version, if it said.
    pub client_info: Option<Implementation>,
    /// What the client declared.
    pub client_capabilities: ClientCapabilities,
    /// The server's name and version, if known.
    pub server_info: Option<Implementation>,
    /// What the server declared.
    pub server_capabilities: ServerCapabilities,
}

impl Negotiated {
    /// The revision in force: the legacy one before any was agreed.
    pub(crate) fn revision_in_force(&self) -> ProtocolVersion {
        self.revision.unwrap_or(ProtocolVersion::LATEST_LEGACY)
    }

    /// What a client learned about a server of `revision` (from
    /// `initialize` or `server/discover`).
    pub fn for_client(
        revision: ProtocolVersion,
        client: &ClientIdentity,
        server_info: Option<Implementation>,
        server_capabilities: ServerCapabilities,
    ) -> Self {
        Negotiated {
            revision: Some(revision),
            client_info: Some(client.info.clone()),
            client_capabilities: client.capabilities.clone(),
            server_info,
            server_capabilities,
        }
    }

    /// The outcome of a legacy handshake, seen from the client.
    pub fn from_initialize(
        revision: ProtocolVersion,
        client: &ClientIdentity,
        result: &InitializeResult,
    ) -> Self {
        Negotiated {
            revision: Some(revision),
            client_info: Some(client.info.clone()),
            client_capabilities: client.capabilities.clone(),
            server_info: Some(result.server_info.clone()),
            server_capabilities: result.capabilities.clone(),
        }
    }
}

/// The `_meta` member that names a server on modern-era results.
fn server_meta_member(info: &Implementation) -> Option<Arc<str>> {
    let mut meta = mcp_schema::Meta::new();
    meta.insert(
        mcp_schema::META_SERVER_INFO.into(),
        serde_json::to_value(info).ok()?,
    );
    Some(Arc::from(format!(
        "\"_meta\":{}",
        serde_json::to_string(&meta).ok()?
    )))
}

/// What a stateless request's `_meta` says, read once.
#[derive(Debug)]
pub(crate) struct StatelessClient {
    /// The typed `_meta`.
    pub(crate) meta: Arc<RequestMetaObject>,
    /// Both sides, as a request with this `_meta` sees them (the revision
    /// it asks for included).
    pub(crate) negotiated: Arc<Negotiated>,
}

impl StatelessClient {
    /// Both sides as a stateless request with `meta` sees them.
    pub(crate) fn new(
        identity: &ServerIdentity,
        meta: Arc<RequestMetaObject>,
        revision: ProtocolVersion,
    ) -> Self {
        let negotiated = Arc::new(Negotiated {
            revision: Some(revision),
            client_info: meta.client_info.clone(),
            client_capabilities: meta.client_capabilities.clone().unwrap_or_default(),
            server_info: Some(identity.info().clone()),
            server_capabilities: identity.capabilities().clone(),
        });
        StatelessClient { meta, negotiated }
    }

    /// Whether the `_meta` is the same for every request of its client:
    /// one with a progress token, or members beyond the protocol's own
    /// (trace context, say), is particular to its request.
    fn repeats(&self) -> bool {
        self.meta.progress_token.is_none() && self.meta.other.is_empty()
    }
}

/// The stateless clients a server has seen, by the text of their `_meta`.
/// A clone starts empty.
#[derive(Default)]
pub(crate) struct StatelessClients {
    seen: RwLock<Seen>,
}

#[derive(Default)]
struct Seen {
    by_text: HashMap<Arc<str>, Arc<StatelessClient>>,
    /// The latest remembered, newest first.
    recent: Vec<(Arc<RawValue>, Arc<StatelessClient>)>,
}

impl Seen {
    /// The latest remembered `_meta` whose text opens `rest`, as a whole
    /// value: one that `rest` goes on from with `,` or `}`.
    fn recent_opening(&self, rest: &str) -> Option<&(Arc<RawValue>, Arc<StatelessClient>)> {
        self.recent.iter().find(|(text, _)| {
            rest.strip_prefix(text.get())
                .is_some_and(|after| matches!(after.as_bytes().first(), Some(b',' | b'}')))
        })
    }
}

impl StatelessClients {
    /// How many `_meta` texts are remembered.
    #[cfg(test)]
    pub(crate) fn remembered(&self) -> usize {
        self.seen.read_locked().by_text.len()
    }

    /// The remembered client whose `_meta` text opens `params`, with that
    /// text. Found by comparing text, without
    /// parsing: a client that writes its `_meta` first and the same every
    /// time is recognised by a comparison of bytes. A complete JSON object
    /// that the params go on from with `,` or `}` is the whole `_meta` value.
    pub(crate) fn recognise<'p>(&self, params: &'p str) -> Option<(&'p str, Arc<StatelessClient>)> {
        let rest = params.strip_prefix(META_FIRST)?;
        let seen = self.seen.read_locked();
        seen.recent_opening(rest)
            .map(|(text, client)| (&rest[..text.get().len()], Arc::clone(client)))
    }

    /// The latest remembered `_meta` whose text opens `rest` (the text
    /// after a `"_meta":` key), as a whole value, and its client.
    pub(crate) fn recent_meta_opening(
        &self,
        rest: &str,
    ) -> Option<(Arc<RawValue>, Arc<StatelessClient>)> {
        let seen = self.seen.read_locked();
        seen.recent_opening(rest)
            .map(|(text, client)| (Arc::clone(text), Arc::clone(client)))
    }

    /// The client whose requests carry exactly this `_meta` text.
    pub(crate) fn get(&self, text: &str) -> Option<Arc<StatelessClient>> {
        let seen = self.seen.read_locked();
        seen.by_text.get(text).cloned()
    }

    /// Remembers `client` under its `_meta` text, if that text repeats.
    pub(crate) fn remember(&self, text: &str, client: &Arc<StatelessClient>) {
        if !client.repeats() {
            return;
        }
        // The text of a `_meta` member read before: valid JSON, checked
        // again only here, once per client.
        let Ok(raw) = RawValue::from_string(text.to_owned()) else {
            return;
        };
        let mut seen = self.seen.write_locked();
        if seen.by_text.len() >= CAPACITY {
            *seen = Seen::default();
        }
        seen.recent.retain(|(recent, _)| recent.get() != text);
        seen.recent.insert(0, (Arc::from(raw), Arc::clone(client)));
        seen.recent.truncate(RECENT);
        seen.by_text.insert(Arc::from(text), Arc::clone(client));
    }
}

impl Clone for StatelessClients {
    fn clone(&self) -> Self {
        StatelessClients::default()
    }
}

impl std::fmt::Debug for StatelessClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seen = self.seen.read().map_or(0, |s| s.by_text.len());
        f.debug_struct("StatelessClients")
            .field("seen", &seen)
            .finish()
    }
}
