//! Legacy-era HTTP sessions: one engine session per `Mcp-Session-Id`,
//! driven by the HTTP requests themselves, and a routing table that puts
//! each outgoing message on exactly one stream.
//!
//! An idle session is only state: no task and no channel. Each POST runs
//! its messages through the session's [`DirectSession`]; what the engine
//! sends goes through [`Routes`], which stores it (for resumption) and
//! hands it to the connection of its stream in one order with attaching a
//! resumed connection, so nothing is lost or repeated. A response that
//! goes out as a plain JSON reply, the common case, is neither stored nor
//! ordered behind anything, and takes only a brief lock of the table.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::outbound::{self, QueueLimits, StreamReceiver, StreamSender};
use foldhash::{HashMap, HashMapExt as _};
use mcp_core::{
    BoxFuture, DirectSession, FrameKind, FrameSink, OutboundFrame, Owner, Peer, ReadFrame, Service,
    SessionConfig, SinkClosed,
};
use mcp_schema::ProtocolVersion;
use mcp_schema::jsonrpc::{Frame, RequestId};
use smallvec::{SmallVec, smallvec};

use crate::config::{HttpConfig, ResponseMode};
use crate::event_store::{EventId, EventStore, EventStoreError, ReplayError};
use crate::persist::{Persisted, Recording, restoring_requests};
use crate::session_store::{SessionRecord, SessionStore, SessionStoreError};

/// One message on its way to an HTTP response stream.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    /// The JSON-RPC message.
    pub(crate) text: MessageText,
    /// Its SSE event id, where the session is resumable.
    pub(crate) event_id: Option<EventId>,
    /// The response that ends the stream.
    pub(crate) last: bool,
    /// The stream failed (its event store did): the text tells the
    /// client, and the stream ends with it.
    pub(crate) failed: bool,
}

impl Delivery {
    /// A message to send as it is.
    pub(crate) fn new(text: MessageText, event_id: Option<EventId>, last: bool) -> Self {
        Delivery {
            text,
            event_id,
            last,
            failed: false,
        }
    }
}

/// A message's text: as the engine wrote it, for a reply that goes out
/// once; shared with the event store, for one that may be replayed.
#[derive(Debug, Clone)]
pub(crate) enum MessageText {
    /// Written for this response alone.
    Owned(String),
    /// Also kept by the event store.
    Shared(Arc<str>),
}

impl std::ops::Deref for MessageText {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            MessageText::Owned(text) => text,
            MessageText::Shared(text) => text,
        }
    }
}

impl MessageText {
    /// The text as a response body, without a copy.
    pub(crate) fn into_body(self) -> bytes::Bytes {
        match self {
            MessageText::Owned(text) => bytes::Bytes::from(text),
            MessageText::Shared(text) => bytes::Bytes::from_owner(SharedText(text)),
        }
    }
}

/// Shared message text as bytes.
struct SharedText(Arc<str>);

impl AsRef<[u8]> for SharedText {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// The id of the standalone (GET) stream of a session.
const STANDALONE: RouteKey = 0;

/// A stream's id in the route table, a number: naming the stream of each
/// request and looking it up on delivery copy and hash no text. The event
/// store knows it as its decimal text.
pub(crate) type RouteKey = u64;

/// What became of a resumption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResumeOutcome {
    /// Missed events were sent and the stream goes on live.
    Live,
    /// Missed events were sent; the stream had already ended.
    Ended,
    /// The event id is unknown or too old.
    Unknown,
    /// The event store cannot be reached now.
    Unavailable,
}

/// A live legacy session.
pub(crate) struct HttpSession {
    pub(crate) id: Arc<str>,
    /// Who created it (where an authorization layer said); only they
    /// may use it.
    owner: Option<Owner>,
    engine: DirectSession,
    routes: Arc<Routes>,
    /// The sweeps of its manager, read when the session is used.
    sweeps: Arc<AtomicU64>,
    /// How many sweeps there had been when it was last used.
    last_active: AtomicU64,
    open_streams: AtomicUsize,
    next_stream: AtomicU64,
}

impl HttpSession {
    /// A new session whose engine sends through its routing table.
    fn new(
        id: Arc<str>,
        owner: Option<Owner>,
        service: Arc<dyn Service>,
        config: Arc<SessionConfig>,
        routing: RouteSettings,
        sweeps: Arc<AtomicU64>,
    ) -> Arc<HttpSession> {
        let routes = Arc::new(Routes {
            session: Arc::clone(&id),
            store: routing.store,
            json_replies: routing.json_replies,
            limits: routing.limits,
            order: tokio::sync::Mutex::new(()),
            table: Mutex::new(RouteTable::default()),
        });
        let engine = DirectSession::new(Arc::clone(&routes) as Arc<dyn FrameSink>, service, config);
        Arc::new(HttpSession {
            id,
            owner,
            engine,
            routes,
            last_active: AtomicU64::new(sweeps.load(Ordering::Relaxed)),
            sweeps,
            open_streams: AtomicUsize::new(0),
            next_stream: AtomicU64::new(first_stream_key()),
        })
    }

    /// The handle to the client.
    pub(crate) fn peer(&self) -> &Peer {
        self.engine.peer()
    }

    /// Marks the session as used now: two relaxed atomics, where a clock
    /// read under a lock would cost every request.
    pub(crate) fn touch(&self) {
        let now = self.sweeps.load(Ordering::Relaxed);
        self.last_active.store(now, Ordering::Relaxed);
    }

    /// How many whole sweep intervals the session has certainly been
    /// idle for, at sweep `now` (see [`idle_intervals`]).
    fn idle_intervals(&self, now: u64) -> u64 {
        idle_intervals(self.last_active.load(Ordering::Relaxed), now)
    }

    /// The revision negotiated at `initialize`.
    pub(crate) fn revision(&self) -> Option<ProtocolVersion> {
        self.peer().negotiated().and_then(|n| n.revision)
    }

    /// Whether the session has ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.peer().is_closed()
    }

    /// Runs a parsed frame through the engine (see [`DirectSession::handle`]).
    pub(crate) fn handle(
        &self,
        frame: Frame,
        extensions: Option<Arc<mcp_core::Extensions>>,
    ) -> impl Future<Output = ()> + Send + 'static {
        self.engine.handle_parsed(frame, extensions)
    }

    /// Opens a stream for the responses to `requests`; deliveries arrive on
    /// the returned receiver. Call before handing the requests in.
    /// Refused once the session has ended, and while a request of the same
    /// id is pending on another stream: the messages about an id go to one
    /// stream, so the first request's would otherwise be lost.
    pub(crate) fn open_stream(
        &self,
        requests: Vec<RequestId>,
    ) -> Result<StreamReceiver, StreamRefused> {
        let (sink, rx) = outbound::channel(self.routes.limits);
        self.open_route(RequestIds::from_vec(requests), Outlet::Open(sink))?;
        Ok(rx)
    }

    /// Opens the stream of a single request, with no connection to read it
    /// yet: most requests are answered at once, in plain JSON, and need
    /// none. What comes meanwhile is kept for [`HttpSession::attach`].
    /// Refused as [`HttpSession::open_stream`] refuses.
    pub(crate) fn open_request(&self, request: &RequestId) -> Result<RouteKey, StreamRefused> {
        self.open_route(smallvec![request.clone()], Outlet::default())
    }

    /// A new stream for `requests`, its messages going to `outlet`.
    fn open_route(&self, requests: RequestIds, outlet: Outlet) -> Result<RouteKey, StreamRefused> {
        let stream: RouteKey = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let priming = self.primes_streams();
        let mut table = self.routes.table();
        // Checked under the lock that `close` clears the table under.
        if self.is_closed() {
            return Err(StreamRefused::Ended);
        }
        if let Some(id) = requests
            .iter()
            .find(|id| table.by_request.contains_key(*id))
        {
            return Err(StreamRefused::InUse(id.clone()));
        }
        for id in &requests {
            table.by_request.insert(id.clone(), stream);
        }
        table.streams.insert(
            stream,
            StreamRoute {
                outlet,
                requests,
                fresh: true,
                priming,
                failed: false,
            },
        );
        Ok(stream)
    }

    /// Runs a single request through the engine, handing its response
    /// back rather than routing it (see [`DirectSession::answer_parsed`]):
    /// `Some("")` or `None` when it ends without one.
    pub(crate) fn answer(
        &self,
        frame: Frame,
        extensions: Option<Arc<mcp_core::Extensions>>,
    ) -> impl Future<Output = Option<String>> + Send + 'static {
        self.engine
            .answer_parsed(ReadFrame::from(frame), extensions)
    }

    /// Takes the response to the request of `stream` as a plain JSON reply
    /// (`ResponseMode::Auto`) when nothing was sent on the stream before
    /// it: the stream is then done, and nothing is stored. Hands the text
    /// back otherwise, for [`HttpSession::route_answer`].
    pub(crate) fn take_json_reply(&self, stream: RouteKey, text: String) -> Result<String, String> {
        if self.routes.json_replies && self.routes.table().take_fresh(stream).is_some() {
            Ok(text)
        } else {
            Err(text)
        }
    }

    /// A connection for the stream of [`HttpSession::open_request`], with
    /// what was kept for it. Ends at once if the stream is gone (the
    /// session closed, or a resumed connection took it over).
    pub(crate) fn attach(&self, stream: RouteKey) -> StreamReceiver {
        let limits = self.routes.limits;
        let opened = (self.routes.table().streams.get_mut(&stream))
            .and_then(|route| route.outlet.open(limits));
        match opened {
            Some((_, receiver)) => receiver,
            None => outbound::ended(),
        }
    }

    /// Routes what a request answered with, as its response would have
    /// been: stored and sent on its stream, after what came before it. A
    /// request that ended without a response ends its stream.
    pub(crate) async fn route_answer(&self, request: RequestId, answer: Option<String>) {
        if self.is_closed() {
            // Its streams and stored events are gone already.
            return;
        }
        match answer.filter(|text| !text.is_empty()) {
            Some(text) => {
                self.routes
                    .deliver(OutboundFrame {
                        text,
                        related: Some(request),
                        kind: FrameKind::Response,
                    })
                    .await
            }
            None => self.routes.table().request_ended(Some(&request)),
        }
    }

    /// Streams start with a priming event from 2025-11-25 on (SEP-1699):
    /// older clients may not expect an event without data.
    fn primes_streams(&self) -> bool {
        self.revision()
            .is_some_and(|v| v >= ProtocolVersion::V2025_11_25)
    }

    /// Opens the standalone stream; `None` if one is already open, an
    /// error if its priming event cannot be stored.
    pub(crate) async fn open_standalone(&self) -> Result<Option<StreamReceiver>, EventStoreError> {
        let priming = self.primes_streams();
        // Held throughout, so no other standalone stream is attached
        // meanwhile (a resumed one included).
        let _order = self.routes.order.lock().await;
        let open = self
            .routes
            .table()
            .streams
            .get(&STANDALONE)
            .is_some_and(|s| !s.outlet.is_closed());
        if open || self.is_closed() {
            return Ok(None);
        }
        let (sink, rx) = outbound::channel(self.routes.limits);
        if priming {
            let _ = sink.send(self.routes.prime(STANDALONE).await?);
        }
        let mut table = self.routes.table();
        // Checked again: the session may have closed while priming.
        if self.is_closed() {
            return Ok(None);
        }
        table.streams.insert(STANDALONE, StreamRoute::started(sink));
        Ok(Some(rx))
    }

    /// Resumes the stream of `last_event_id` on a new connection.
    pub(crate) async fn resume(&self, last_event_id: String) -> (ResumeOutcome, StreamReceiver) {
        let (sink, rx) = outbound::channel(self.routes.limits);
        let _order = self.routes.order.lock().await;
        if self.is_closed() {
            return (ResumeOutcome::Unknown, rx);
        }
        let replay = self
            .routes
            .store
            .replay_after(&self.routes.session, &last_event_id)
            .await;
        let outcome = match replay {
            Ok(replay) => {
                for (id, text) in replay
                    .events
                    .into_iter()
                    .filter(|(_, text)| !text.is_empty())
                {
                    let _ = sink.replay(Delivery::new(MessageText::Shared(text), Some(id), false));
                }
                // A request stream has a route while a request of it is
                // pending; the new connection carries the same requests.
                // A stream the store names otherwise is not one of ours.
                let stream = replay.stream.parse::<RouteKey>().ok();
                let mut table = self.routes.table();
                if self.is_closed() {
                    return (ResumeOutcome::Unknown, rx);
                }
                let previous = stream.and_then(|stream| table.streams.remove(&stream));
                match stream {
                    Some(stream) if stream == STANDALONE || previous.is_some() => {
                        let route = StreamRoute {
                            requests: previous.map(|route| route.requests).unwrap_or_default(),
                            ..StreamRoute::started(sink)
                        };
                        table.streams.insert(stream, route);
                        ResumeOutcome::Live
                    }
                    _ => ResumeOutcome::Ended,
                }
            }
            Err(ReplayError::Unavailable) => ResumeOutcome::Unavailable,
            Err(ReplayError::UnknownEvent | ReplayError::Evicted) => ResumeOutcome::Unknown,
        };
        (outcome, rx)
    }

    /// Counts an open SSE connection; the session does not expire while it lasts.
    pub(crate) fn stream_opened(self: &Arc<Self>) -> StreamGuard {
        self.open_streams.fetch_add(1, Ordering::Relaxed);
        StreamGuard(Arc::clone(self))
    }

    /// Ends the session here and everywhere: requests in flight stop,
    /// streams end, stored events go.
    pub(crate) async fn close(&self) {
        self.engine.close();
        self.routes.table().clear();
        self.routes.store.drop_session(&self.id).await;
    }

    /// Ends the session and its streams in this instance, keeping stored
    /// events (server shutdown; a session that goes on elsewhere).
    fn end(&self) {
        self.engine.close();
        self.routes.table().clear();
    }
}

/// Why a POST's stream was not opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StreamRefused {
    /// The session has ended.
    Ended,
    /// A request with this id is pending on another stream.
    InUse(RequestId),
}

/// Keeps a session alive while an SSE connection is open.
pub(crate) struct StreamGuard(Arc<HttpSession>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

/// Where a session's outgoing messages go: its event store and the live
/// connection of each stream.
struct Routes {
    session: Arc<str>,
    store: Arc<dyn EventStore>,
    /// A response that is the first message of its stream goes out as a
    /// plain JSON reply (`ResponseMode::Auto`), so it is not stored.
    json_replies: bool,
    /// How far a stream's reader may fall behind.
    limits: QueueLimits,
    /// Held while a message is stored and handed on, and while a resumed
    /// connection is given what it missed and attached: so each stream
    /// gets its messages in the order they are stored, none twice.
    order: tokio::sync::Mutex<()>,
    /// The streams; locked briefly, never across a wait.
    table: Mutex<RouteTable>,
}

/// The session's streams.
/// A request stream's route lasts exactly while one of its requests is
/// pending; an id is pending on at most one stream (a POST reusing it
/// meanwhile is refused), so a route's `requests` are exactly the ids
/// routed to it.
#[derive(Default)]
struct RouteTable {
    /// Live connections by stream.
    streams: HashMap<RouteKey, StreamRoute>,
    /// Which stream carries the messages about a request.
    by_request: HashMap<RequestId, RouteKey>,
}

/// The requests of a stream: one, inline, for all but a batch's.
type RequestIds = SmallVec<[RequestId; 1]>;

/// A stream: where its messages go, and what it carries.
struct StreamRoute {
    outlet: Outlet,
    /// The pending requests whose messages it carries.
    requests: RequestIds,
    /// Nothing was sent on it yet: it becomes an event stream (primed,
    /// where `priming`) only when a message other than its response comes
    /// first.
    fresh: bool,
    priming: bool,
    /// Its event store failed and its client was told: what else comes
    /// for its requests is dropped, and it ends with their response.
    failed: bool,
}

impl StreamRoute {
    /// A route for a connection whose stream is already under way.
    fn started(sink: StreamSender) -> Self {
        StreamRoute {
            outlet: Outlet::Open(sink),
            requests: RequestIds::new(),
            fresh: false,
            priming: false,
            failed: false,
        }
    }
}

/// Where the messages of a response stream go: kept until a connection
/// reads the stream (most requests are answered at once, and need none),
/// then sent to it.
#[derive(Debug)]
pub(crate) enum Outlet {
    /// Kept, until a connection reads the stream.
    Held(Vec<Delivery>),
    /// Sent to the connection reading the stream.
    Open(StreamSender),
}

impl Default for Outlet {
    fn default() -> Self {
        Outlet::Held(Vec::new())
    }
}

impl Outlet {
    /// Sends or keeps `delivery`; refused once the reading connection is
    /// gone.
    pub(crate) fn send(&mut self, delivery: Delivery) -> Result<(), SinkClosed> {
        match self {
            Outlet::Held(held) => {
                held.push(delivery);
                Ok(())
            }
            Outlet::Open(sink) => sink.send(delivery).map_err(|_| SinkClosed),
        }
    }

    /// Whether nothing was kept or sent yet.
    pub(crate) fn holds_nothing(&self) -> bool {
        matches!(self, Outlet::Held(held) if held.is_empty())
    }

    /// The connection that reads the stream from now on, with what was
    /// kept already in it: its sender and receiver. `None` if one reads it
    /// already.
    pub(crate) fn open(&mut self, limits: QueueLimits) -> Option<(StreamSender, StreamReceiver)> {
        let Outlet::Held(held) = self else {
            return None;
        };
        let (sender, receiver) = outbound::channel(limits);
        for delivery in held.drain(..) {
            let _ = sender.send(delivery);
        }
        *self = Outlet::Open(sender.clone());
        Some((sender, receiver))
    }

    /// Whether the connection reading the stream is gone.
    fn is_closed(&self) -> bool {
        matches!(self, Outlet::Open(sink) if sink.is_closed())
    }
}

impl FrameSink for Routes {
    fn send(&self, frame: OutboundFrame) -> BoxFuture<'_, Result<(), SinkClosed>> {
        Box::pin(async move {
            if let Err(frame) = self.reply_in_json(frame) {
                self.deliver(frame).await;
            }
            Ok(())
        })
    }
}

impl Routes {
    /// Stores an empty event at the start of `stream`, and gives it to be
    /// sent first, so the client has an id to resume from before any
    /// message arrives.
    async fn prime(&self, stream: RouteKey) -> Result<Delivery, EventStoreError> {
        let id = self
            .store
            .append(&self.session, &stream.to_string(), Arc::from(""))
            .await?;
        Ok(Delivery::new(
            MessageText::Owned(String::new()),
            Some(id),
            false,
        ))
    }

    /// The routing table.
    fn table(&self) -> std::sync::MutexGuard<'_, RouteTable> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores `frame` and hands it to its stream's connection, in order
    /// with every other such delivery.
    async fn deliver(&self, frame: OutboundFrame) {
        let _order = self.order.lock().await;
        let (stream, last, priming) = {
            let mut table = self.table();
            if frame.kind == FrameKind::Ended {
                return table.request_ended(frame.related.as_ref());
            }
            let stream = table
                .request_stream(frame.related.as_ref())
                .unwrap_or(STANDALONE);
            let last = frame.kind == FrameKind::Response && stream != STANDALONE;
            if table.streams.get(&stream).is_some_and(|route| route.failed) {
                // Its client was told it failed.
                if last {
                    table.stream_done(stream);
                }
                return;
            }
            // The first message of a stream that is not a plain reply
            // makes it an event stream, primed where that is due.
            let priming = match table.streams.get_mut(&stream) {
                Some(route) if route.fresh => {
                    route.fresh = false;
                    route.priming
                }
                _ => false,
            };
            (stream, last, priming)
        };
        if priming {
            match self.prime(stream).await {
                Ok(primed) => {
                    if let Some(route) = self.table().streams.get_mut(&stream) {
                        let _ = route.outlet.send(primed);
                    }
                }
                Err(error) => return self.fail_stream(stream, last, &error),
            }
        }
        let text: Arc<str> = Arc::from(frame.text);
        let stored = self
            .store
            .append(&self.session, &stream.to_string(), Arc::clone(&text))
            .await;
        let event_id = match stored {
            Ok(id) => Some(id),
            Err(error) => return self.fail_stream(stream, last, &error),
        };
        let mut table = self.table();
        if let Some(route) = table.streams.get_mut(&stream) {
            // A dropped connection is not a cancellation: the message stays
            // in the store for a resuming client.
            let _ = route
                .outlet
                .send(Delivery::new(MessageText::Shared(text), event_id, last));
        }
        if last {
            table.stream_done(stream);
        }
    }

    /// A message for `stream` could not be stored: the stream ends with an
    /// error, which answers its pending requests (a POST that has not
    /// started streaming gets it as a 503), and what else comes for them
    /// is dropped. The standalone stream ends with an error without an id.
    /// `done`: the message was the stream's response.
    fn fail_stream(&self, stream: RouteKey, done: bool, error: &EventStoreError) {
        tracing::warn!(session = %self.session, stream, %error, "closing a stream: its message cannot be stored");
        let mut table = self.table();
        let Some(route) = table.streams.get_mut(&stream) else {
            return;
        };
        let error = mcp_schema::jsonrpc::ErrorObject::internal(format!(
            "{error}; the stream is closed and messages may be lost"
        ));
        let text = match route.requests.as_slice() {
            [] => mcp_schema::jsonrpc::write_error(None, &error),
            [one] => mcp_schema::jsonrpc::write_error(Some(one), &error),
            many => {
                let errors: Vec<String> = many
                    .iter()
                    .map(|id| mcp_schema::jsonrpc::write_error(Some(id), &error))
                    .collect();
                format!("[{}]", errors.join(","))
            }
        };
        let _ = route.outlet.send(Delivery {
            text: MessageText::Owned(text),
            event_id: None,
            last: true,
            failed: true,
        });
        route.failed = true;
        route.fresh = false;
        if done || stream == STANDALONE {
            table.stream_done(stream);
        }
    }

    /// Sends a response that comes through the sink (the array answering
    /// a batch) as a plain JSON reply (`ResponseMode::Auto`) when it is
    /// the first message of its stream: nothing to resume, nothing to
    /// store, nothing sent before it to wait for. Hands back any other
    /// frame. A single request's response comes back to its POST instead
    /// (see [`HttpSession::take_json_reply`]).
    fn reply_in_json(&self, frame: OutboundFrame) -> Result<(), OutboundFrame> {
        if !self.json_replies || frame.kind != FrameKind::Response {
            return Err(frame);
        }
        let mut table = self.table();
        let Some(stream) = table.request_stream(frame.related.as_ref()) else {
            return Err(frame);
        };
        let Some(mut route) = table.take_fresh(stream) else {
            return Err(frame);
        };
        let _ = route
            .outlet
            .send(Delivery::new(MessageText::Owned(frame.text), None, true));
        Ok(())
    }
}

impl RouteTable {
    /// The stream of a pending request: never the standalone one, as
    /// request streams are numbered from 1.
    fn request_stream(&self, request: Option<&RequestId>) -> Option<RouteKey> {
        request.and_then(|id| self.by_request.get(id)).copied()
    }

    /// The stream's response went out: it and its requests are done.
    fn stream_done(&mut self, stream: RouteKey) {
        if let Some(route) = self.streams.remove(&stream) {
            self.forget_requests(&route);
        }
    }

    /// The route of `stream` if nothing was sent on it yet, taken out with
    /// its requests: its response is going out as a plain reply.
    fn take_fresh(&mut self, stream: RouteKey) -> Option<StreamRoute> {
        if !self.streams.get(&stream).is_some_and(|route| route.fresh) {
            return None;
        }
        let route = self.streams.remove(&stream)?;
        self.forget_requests(&route);
        Some(route)
    }

    fn forget_requests(&mut self, route: &StreamRoute) {
        for id in &route.requests {
            self.by_request.remove(id);
        }
    }

    /// Forgets every stream: their connections end.
    fn clear(&mut self) {
        self.streams.clear();
        self.by_request.clear();
    }

    /// A request ended without a response (cancelled): its stream ends
    /// once no other request of it is pending.
    fn request_ended(&mut self, id: Option<&RequestId>) {
        let Some((id, stream)) = id.and_then(|id| self.by_request.remove_entry(id)) else {
            return;
        };
        if let Some(route) = self.streams.get_mut(&stream) {
            route.requests.retain(|pending| *pending != id);
            if route.requests.is_empty() {
                self.streams.remove(&stream);
            }
        }
    }
}

/// Why a new session could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionLimit {
    /// The cap on live sessions is reached.
    Full,
}

/// How often the sessions of `idle_timeout` are swept (a quarter of it,
/// from 50 ms to 30 s), and after how many whole intervals of idleness one
/// ends: the fewest that cover the timeout.
fn sweep_schedule(idle_timeout: Duration) -> (Duration, u64) {
    let every = (idle_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
    let limit = idle_timeout.as_nanos().div_ceil(every.as_nanos());
    (every, u64::try_from(limit).unwrap_or(u64::MAX))
}

/// The whole sweep intervals a session last used when `last_used` sweeps
/// had run has certainly been idle for at sweep `now`: it may have been
/// used at the very end of the interval that sweep `last_used + 1` closed.
fn idle_intervals(last_used: u64, now: u64) -> u64 {
    now.saturating_sub(last_used + 1)
}

/// The key of a session's first request stream: from a random point, so
/// that the streams one session opens on several instances sharing an
/// event store do not meet; odd, so never the standalone stream's.
fn first_stream_key() -> RouteKey {
    (u64::from(rand::random::<u32>()) << 32) | 1
}

/// All live legacy sessions of an endpoint.
pub(crate) struct SessionManager {
    sessions: Mutex<HashMap<Arc<str>, Arc<HttpSession>>>,
    max: usize,
    /// Whole sweep intervals of idleness after which a session ends.
    idle_limit: u64,
    /// Sweeps so far: the sessions' coarse clock.
    sweeps: Arc<AtomicU64>,
    routing: RouteSettings,
    /// What the sessions serve: the endpoint's service, wrapped to record
    /// session changes where sessions are shared.
    service: Arc<dyn Service>,
    session_config: Arc<SessionConfig>,
    /// Where sessions are kept for other instances.
    store: Arc<dyn SessionStore>,
    /// Whether that store is shared (read once: it decides the hot path).
    shared: bool,
    /// How long a stored session lives unused.
    ttl: Duration,
}

/// How every session of an endpoint routes its messages.
#[derive(Clone)]
struct RouteSettings {
    /// Where they are kept for resumption.
    store: Arc<dyn EventStore>,
    /// Whether a response that is the first message of its stream goes
    /// out as a plain JSON reply.
    json_replies: bool,
    /// How far a stream's reader may fall behind.
    limits: QueueLimits,
}

/// What a session id stands for, to a caller.
pub(crate) enum Lookup {
    /// A live session of the caller's, here or loaded from the store.
    Found(Arc<HttpSession>),
    /// No session of the caller's has this id (any more).
    Unknown,
    /// The session store cannot be reached.
    Unavailable(SessionStoreError),
    /// The session is stored, but this instance holds all the sessions it
    /// may.
    Full,
}

impl SessionManager {
    /// The sessions of an endpoint serving `service` with these settings.
    pub(crate) fn new(
        config: &HttpConfig,
        service: Arc<dyn Service>,
        session_config: Arc<SessionConfig>,
    ) -> Arc<Self> {
        let (every, idle_limit) = sweep_schedule(config.session_idle_timeout);
        let store = Arc::clone(&config.session_store);
        let shared = store.is_shared();
        let service = if shared {
            Arc::new(Recording(service)) as Arc<dyn Service>
        } else {
            service
        };
        let manager = Arc::new(SessionManager {
            sessions: Mutex::new(HashMap::new()),
            max: config.max_sessions,
            idle_limit,
            sweeps: Arc::new(AtomicU64::new(0)),
            routing: RouteSettings {
                store: Arc::clone(&config.event_store),
                json_replies: config.response_mode == ResponseMode::Auto,
                limits: config.queue_limits(),
            },
            service,
            session_config,
            store,
            shared,
            ttl: config.session_idle_timeout,
        });
        let weak = Arc::downgrade(&manager);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            // A late sweep does not make up for the ones it missed: each
            // counts one whole interval after the last. The first tick is
            // at once, not an interval on.
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let Some(manager) = weak.upgrade() else { break };
                manager.expire().await;
            }
        });
        manager
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Arc<HttpSession>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new session with this id.
    fn new_session(&self, id: Arc<str>, owner: Option<Owner>) -> Arc<HttpSession> {
        HttpSession::new(
            id,
            owner,
            Arc::clone(&self.service),
            Arc::clone(&self.session_config),
            self.routing.clone(),
            Arc::clone(&self.sweeps),
        )
    }

    /// A new session with a fresh random id, belonging to `owner`.
    pub(crate) fn create(&self, owner: Option<Owner>) -> Result<Arc<HttpSession>, SessionLimit> {
        if self.map().len() >= self.max {
            return Err(SessionLimit::Full);
        }
        let id: Arc<str> = Arc::from(new_session_id());
        let session = self.new_session(Arc::clone(&id), owner);
        self.map().insert(id, Arc::clone(&session));
        Ok(session)
    }

    /// Writes a session that has just been initialized to the shared
    /// store, so other instances can continue it; from then on its changes
    /// are written too. Nothing to do without a shared store.
    pub(crate) async fn persist(&self, session: &HttpSession) -> Result<(), SessionStoreError> {
        if !self.shared {
            return Ok(());
        }
        let Some(negotiated) = session.peer().negotiated() else {
            return Ok(());
        };
        let mut record = SessionRecord::new(
            negotiated
                .revision
                .map(|v| v.as_str().to_owned())
                .unwrap_or_default(),
        )
        .with_client_capabilities(negotiated.client_capabilities.clone());
        record.client_info = negotiated.client_info.clone();
        record.owner = session.owner.as_ref().map(|o| o.as_str().to_owned());
        let persisted = Persisted::new(
            Arc::clone(&session.id),
            Arc::clone(&self.store),
            self.ttl,
            record,
        );
        persisted.save().await?;
        session.peer().extensions().insert(persisted);
        Ok(())
    }

    /// The session with this id, if `owner` owns it: to anyone else it
    /// does not exist. With a shared store, a session held here is checked
    /// against it (it may have been deleted elsewhere) and its lifetime
    /// there renewed; one not held here is loaded from it.
    ///
    /// Without a shared store the answer is ready at once, and the future
    /// small: it is held inline by every request's.
    pub(crate) fn find<'a>(
        &'a self,
        id: &'a str,
        owner: Option<&'a Owner>,
    ) -> futures::future::Either<std::future::Ready<Lookup>, BoxFuture<'a, Lookup>> {
        use futures::future::Either;
        let local = self.map().get(id).cloned();
        match local {
            Some(session) if session.owner.as_ref() != owner => {
                Either::Left(std::future::ready(Lookup::Unknown))
            }
            Some(session) if !self.shared => {
                Either::Left(std::future::ready(Lookup::Found(session)))
            }
            None if !self.shared => Either::Left(std::future::ready(Lookup::Unknown)),
            local => Either::Right(Box::pin(self.find_shared(id, owner, local))),
        }
    }

    /// [`SessionManager::find`] with a shared store, given the session
    /// held here, if any.
    async fn find_shared(
        &self,
        id: &str,
        owner: Option<&Owner>,
        local: Option<Arc<HttpSession>>,
    ) -> Lookup {
        match local {
            Some(session) => match self.store.touch(id, self.ttl).await {
                Ok(true) => Lookup::Found(session),
                Ok(false) => {
                    // Deleted (or expired) elsewhere.
                    self.forget(&session);
                    Lookup::Unknown
                }
                Err(error) => Lookup::Unavailable(error),
            },
            None => match self.store.load(id, self.ttl).await {
                Ok(Some(record)) if record.owner.as_deref() == owner.map(Owner::as_str) => {
                    self.restore(id, record).await
                }
                Ok(_) => Lookup::Unknown,
                Err(error) => Lookup::Unavailable(error),
            },
        }
    }

    /// Ends a session held here that goes on (or ended) elsewhere,
    /// keeping what is stored.
    fn forget(&self, session: &Arc<HttpSession>) {
        let removed = {
            let mut map = self.map();
            match map.get(&session.id) {
                Some(held) if Arc::ptr_eq(held, session) => map.remove(&session.id),
                _ => None,
            }
        };
        if let Some(session) = removed {
            session.end();
        }
    }

    /// Makes a session here from its stored record: the negotiated
    /// revision and identities, then its log level and subscriptions
    /// replayed to the service.
    async fn restore(&self, id: &str, record: SessionRecord) -> Lookup {
        let Ok(revision) = record.revision.parse::<ProtocolVersion>() else {
            tracing::warn!(session = id, revision = %record.revision, "stored session of an unknown revision");
            return Lookup::Unknown;
        };
        if self.map().len() >= self.max {
            return Lookup::Full;
        }
        let owner = record.owner.clone().map(Owner::new);
        let id: Arc<str> = Arc::from(id);
        let session = self.new_session(Arc::clone(&id), owner);
        let mut negotiated = mcp_core::Negotiated::default();
        negotiated.revision = Some(revision);
        negotiated.client_info = record.client_info.clone();
        negotiated.client_capabilities = record.client_capabilities.clone();
        if let mcp_core::Role::Server(identity) = &self.session_config.role {
            negotiated.server_info = Some(identity.info().clone());
            negotiated.server_capabilities = identity.capabilities().clone();
        }
        session.peer().set_negotiated(negotiated);
        for frame in restoring_requests(&record) {
            let answer = session.answer(frame, None).await;
            if let Some(error) = answer.filter(|a| a.contains("\"error\"")) {
                tracing::debug!(session = %id, %error, "a stored session setting was refused");
            }
        }
        session.peer().extensions().insert(Persisted::new(
            Arc::clone(&id),
            Arc::clone(&self.store),
            self.ttl,
            record,
        ));
        self.service.session_ready(session.peer());
        let held = {
            let mut map = self.map();
            match map.get(&id) {
                // Loaded meanwhile by another request.
                Some(held) => Err(Arc::clone(held)),
                None => {
                    map.insert(id, Arc::clone(&session));
                    Ok(())
                }
            }
        };
        match held {
            Ok(()) => {
                tracing::debug!(session = %session.id, "session loaded from the session store");
                Lookup::Found(session)
            }
            Err(held) => {
                session.end();
                Lookup::Found(held)
            }
        }
    }

    /// Ends and forgets a session `owner` owns, here and in the shared
    /// store; whether there was one.
    pub(crate) async fn remove(
        &self,
        id: &str,
        owner: Option<&Owner>,
    ) -> Result<bool, SessionStoreError> {
        let local = self.map().get(id).cloned();
        match local {
            Some(session) if session.owner.as_ref() == owner => {
                if self.shared {
                    // First: a session that stays stored would go on elsewhere.
                    self.store.remove(id).await?;
                }
                let removed = {
                    let mut map = self.map();
                    match map.get(id) {
                        Some(held) if Arc::ptr_eq(held, &session) => map.remove(id),
                        _ => None,
                    }
                };
                session.close().await;
                Ok(removed.is_some())
            }
            Some(_) => Ok(false),
            None if !self.shared => Ok(false),
            None => match self.store.load(id, self.ttl).await? {
                Some(record) if record.owner.as_deref() == owner.map(Owner::as_str) => {
                    self.store.remove(id).await?;
                    self.routing.store.drop_session(id).await;
                    Ok(true)
                }
                _ => Ok(false),
            },
        }
    }

    /// How many sessions are live.
    pub(crate) fn len(&self) -> usize {
        self.map().len()
    }

    /// Counts a sweep, and ends the sessions idle for longer than the
    /// timeout (an open stream counts as use). A session is used at some
    /// point of a sweep interval, so it ends between the timeout and the
    /// timeout and two intervals (a quarter of the timeout each, from
    /// 50 ms to 30 s) after its last use.
    ///
    /// With a shared store, an idle session only leaves this instance (it
    /// may be in use on another; the store lets it expire), and one with
    /// an open stream has its lifetime there renewed, and ends here if it
    /// was deleted elsewhere.
    async fn expire(&self) {
        let now = self.sweeps.fetch_add(1, Ordering::Relaxed) + 1;
        let (expired, streaming): (Vec<Arc<HttpSession>>, Vec<Arc<HttpSession>>) = {
            let mut map = self.map();
            let ids: Vec<Arc<str>> = map
                .values()
                .filter(|s| {
                    s.open_streams.load(Ordering::Relaxed) == 0
                        && s.idle_intervals(now) >= self.idle_limit
                })
                .map(|s| Arc::clone(&s.id))
                .collect();
            let expired = ids.iter().filter_map(|id| map.remove(id)).collect();
            let streaming = if self.shared {
                map.values()
                    .filter(|s| s.open_streams.load(Ordering::Relaxed) > 0)
                    .cloned()
                    .collect()
            } else {
                Vec::new()
            };
            (expired, streaming)
        };
        for session in expired {
            tracing::debug!(session = %session.id, "session expired");
            if self.shared {
                session.end();
            } else {
                session.close().await;
            }
        }
        for session in streaming {
            match self.store.touch(&session.id, self.ttl).await {
                Ok(true) => {}
                Ok(false) => self.forget(&session),
                Err(error) => {
                    tracing::debug!(session = %session.id, %error, "cannot renew a session")
                }
            }
        }
    }

    /// Ends every session (server shutdown). Stored events stay, so that a
    /// store shared with other instances still lets clients resume there.
    pub(crate) fn close_all(&self) {
        let all: Vec<Arc<HttpSession>> = self.map().drain().map(|(_, s)| s).collect();
        for session in all {
            session.end();
        }
    }
}

/// 128 random bits, URL-safe base64: visible ASCII only, as the
/// specification asks of session ids.
pub(crate) fn new_session_id() -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 16]>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_session_ends_after_its_timeout_and_never_before() {
        for timeout_ms in [0, 100, 200, 1_000, 30 * 60 * 1_000] {
            let timeout = Duration::from_millis(timeout_ms);
            let (every, limit) = sweep_schedule(timeout);
            // Used during the interval between sweeps 3 and 4.
            let used = 3;
            let ending = (used + 1..used + 1_000)
                .find(|&now| idle_intervals(used, now) >= limit)
                .expect("an idle session ends");
            // Used just before sweep 4, and just after sweep 3.
            let shortest_idle = every * u32::try_from(ending - (used + 1)).unwrap();
            let longest_idle = every * u32::try_from(ending - used).unwrap();
            assert!(
                shortest_idle >= timeout,
                "{timeout:?}: ended at sweep {ending}, possibly {shortest_idle:?} after its last use"
            );
            assert!(
                longest_idle <= timeout + 2 * every,
                "{timeout:?}: ended at sweep {ending}, up to {longest_idle:?} after its last use"
            );
        }
        // Used in the interval the last sweep closed: not idle for any
        // whole interval yet, whatever the timeout.
        assert_eq!(idle_intervals(3, 4), 0);
        assert_eq!(idle_intervals(3, 3), 0);
    }

    fn route(requests: Vec<RequestId>) -> StreamRoute {
        StreamRoute {
            outlet: Outlet::Held(Vec::new()),
            requests: RequestIds::from_vec(requests),
            fresh: true,
            priming: false,
            failed: false,
        }
    }

    #[test]
    fn a_finished_stream_forgets_only_its_own_requests() {
        let mut table = RouteTable::default();
        let (a, b): (RouteKey, RouteKey) = (1, 2);
        let (one, two) = (RequestId::Number(1), RequestId::Number(2));
        table
            .streams
            .insert(a, route(vec![one.clone(), two.clone()]));
        table.by_request.insert(one.clone(), a);
        table.by_request.insert(two.clone(), a);
        // Request 1 is cancelled; its stream stays for request 2.
        table.request_ended(Some(&one));
        assert!(table.streams.contains_key(&a));
        assert_eq!(table.by_request.get(&two), Some(&a));
        // Its id is used again, on another stream.
        table.streams.insert(b, route(vec![one.clone()]));
        table.by_request.insert(one.clone(), b);
        table.stream_done(a);
        assert!(!table.streams.contains_key(&a));
        assert_eq!(table.by_request.get(&one), Some(&b));
        assert_eq!(table.by_request.get(&two), None);
        // The last pending request of a stream ends: so does the stream.
        table.request_ended(Some(&one));
        assert!(table.streams.is_empty() && table.by_request.is_empty());
    }
}
