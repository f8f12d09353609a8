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

use crate::outbound::{self, StreamReceiver};
use mcp_core::{
    DirectSession, FrameKind, FrameSink, OutboundFrame, Owner, Peer, ReadFrame, Service,
    SessionConfig,
};
use mcp_schema::ProtocolVersion;
use mcp_schema::jsonrpc::{Frame, RequestId};
use smallvec::smallvec;

use crate::event_store::{EventStoreError, Replay, ReplayError, is_priming};
use mcp_schema::jsonrpc::ErrorObject;

pub(crate) mod delivery;
mod manager;
mod routes;
mod stream_note;

pub(crate) use delivery::{Delivery, MessageText};
pub(crate) use manager::{Lookup, SessionLimit, SessionManager};
use manager::{RouteSettings, idle_intervals};
pub(crate) use routes::Outlet;
use routes::{RequestIds, RouteTable, Routes, StreamRoute};
use stream_note::{StreamNote, answered_id};

/// The id of the standalone (GET) stream of a session.
pub(crate) const STANDALONE: RouteKey = 0;

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
            follows: routing.follows,
            relay: routing.relay,
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
        let mut after = None;
        if priming || self.routes.follows {
            // A stream that follows the store starts after its priming
            // event, sent to clients that expect one.
            let primed = self.routes.prime(STANDALONE, &[]).await?;
            after.clone_from(&primed.event_id);
            if priming {
                let _ = sink.send(primed);
            }
        }
        let mut table = self.routes.table();
        // Checked again: the session may have closed while priming.
        if self.is_closed() {
            return Ok(None);
        }
        if self.routes.follows {
            table.follower = Some(routes::spawn_follower(
                Arc::clone(&self.routes.store),
                Arc::clone(&self.id),
                after,
                sink.clone(),
            ));
        }
        table.streams.insert(STANDALONE, StreamRoute::started(sink));
        Ok(Some(rx))
    }

    /// Resumes the stream of `last_event_id` on a new connection.
    pub(crate) async fn resume(&self, last_event_id: String) -> (ResumeOutcome, StreamReceiver) {
        let (sink, rx) = outbound::channel(self.routes.limits);
        let order = self.routes.order.lock().await;
        if self.is_closed() {
            return (ResumeOutcome::Unknown, rx);
        }
        let replay = self
            .routes
            .store
            .replay_after(&self.routes.session, &last_event_id)
            .await;
        let mut unanswered = None;
        let outcome = match replay {
            Ok(replay) => {
                unanswered = self.unanswered(&replay);
                let mut after = last_event_id;
                for (id, text) in replay
                    .events
                    .into_iter()
                    .filter(|(_, text)| !is_priming(text))
                {
                    after.clone_from(&id);
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
                        if self.routes.follows && stream == STANDALONE {
                            // The connection it replaces ends with its follower.
                            table.follower = Some(routes::spawn_follower(
                                Arc::clone(&self.routes.store),
                                Arc::clone(&self.id),
                                Some(after),
                                sink.clone(),
                            ));
                        }
                        let route = StreamRoute {
                            requests: previous.map(|route| route.requests).unwrap_or_default(),
                            ..StreamRoute::started(sink.clone())
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
        // Whether their instance is gone may take a while to tell: the
        // session's other streams are not held up meanwhile.
        drop(order);
        if let (ResumeOutcome::Ended, Some((instance, requests))) = (outcome, unanswered) {
            self.answer_orphans(&instance, &requests, &sink).await;
        }
        (outcome, rx)
    }

    /// The requests of a resumed stream that nothing answered yet, and the
    /// instance that ran them, where its note names them (see
    /// [`StreamNote`]) and that instance is not this one. None where the
    /// store keeps no note or no relay can tell.
    fn unanswered(&self, replay: &Replay) -> Option<(String, Vec<RequestId>)> {
        let relay = self.routes.relay.as_ref()?;
        let note = StreamNote::read(replay.note.as_deref()?)?;
        if relay.instance() == Some(note.instance.as_str()) {
            return None;
        }
        let answered: Vec<RequestId> = replay
            .events
            .iter()
            .filter_map(|(_, text)| answered_id(text))
            .collect();
        let pending: Vec<RequestId> = note
            .requests
            .into_iter()
            .filter(|id| !answered.contains(id))
            .collect();
        (!pending.is_empty()).then_some((note.instance, pending))
    }

    /// Answers `requests` with an error on `sink` where `instance`, which
    /// ran them, is gone: nothing else will answer them.
    async fn answer_orphans(
        &self,
        instance: &str,
        requests: &[RequestId],
        sink: &outbound::StreamSender,
    ) {
        let Some(relay) = &self.routes.relay else {
            return;
        };
        if relay.alive(instance).await {
            return;
        }
        let error = ErrorObject::internal(
            "the server instance handling this request stopped before answering; \
             whether it took effect is unknown",
        );
        for id in requests {
            let text = mcp_schema::jsonrpc::write_error(Some(id), &error);
            let _ = sink.replay(Delivery::new(MessageText::Owned(text), None, false));
        }
    }

    /// Whether this instance sent the client request `id` and awaits its
    /// answer (where a relay is set); forgets it: the answer is here.
    pub(crate) fn take_sent(&self, id: &RequestId) -> bool {
        self.routes.table().sent.remove(id)
    }

    /// Forgets the request a forwarded answer answers.
    pub(crate) fn take_sent_of(&self, frame: &Frame) {
        use mcp_schema::jsonrpc::Message;
        let id = match frame {
            Frame::Single(Message::Response(response)) => Some(&response.id),
            Frame::Single(Message::Error(error)) => error.id.as_ref(),
            _ => None,
        };
        if let Some(id) = id {
            self.take_sent(id);
        }
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

/// The key of a session's first request stream: from a random point, so
/// that the streams one session opens on several instances sharing an
/// event store do not meet; odd, so never the standalone stream's.
fn first_stream_key() -> RouteKey {
    (u64::from(rand::random::<u32>()) << 32) | 1
}

/// 128 random bits, URL-safe base64: visible ASCII only, as the
/// specification asks of session ids.
pub(crate) fn new_session_id() -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 16]>())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::manager::sweep_schedule;
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
