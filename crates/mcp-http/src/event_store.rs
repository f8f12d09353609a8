//! Resumability storage: the SSE events a server sent, kept for a while so
//! that a client which lost its stream can reconnect with `Last-Event-ID`
//! and receive what it missed.
//!
//! [`EventStore`] is the interface (Redis implements it too, for several
//! server instances); [`MemoryEventStore`] is the bounded in-memory one. An
//! unbounded store is a known trap (DESIGN.md): this one evicts the oldest
//! events by count per session, by total bytes and by age, and frees a
//! session's events when [`EventStore::drop_session`] is called.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use mcp_core::BoxFuture;
use mcp_core::sync::MutexExt as _;

/// Identifies one SSE stream within a session (server-chosen; visible ASCII, as it ends up in event ids).
pub type StreamId = String;

/// Identifies one stored event; opaque to clients, unique within a session, encodes its stream.
pub type EventId = String;

/// What a resume gets: the stream the last event id belonged to and the events after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    /// The stream the client is resuming.
    pub stream: StreamId,
    /// The events strictly after the client's last event id on that stream, oldest first.
    pub events: Vec<(EventId, Arc<str>)>,
    /// The note of the stream's priming event, without its mark, where
    /// it has one (see [`PRIMING_NOTE`]) and the store still holds it.
    pub note: Option<Arc<str>>,
}

/// The first character of a priming event that carries a note for the
/// instance a client resumes on (which requests the stream carries, and
/// where they run). A priming event is stored with an empty message, or
/// this mark and its note; either way it is never replayed. Messages
/// proper are JSON, which never starts with it.
pub const PRIMING_NOTE: char = '#';

/// Whether a stored message is a priming event, never replayed.
pub fn is_priming(message: &str) -> bool {
    message.is_empty() || message.starts_with(PRIMING_NOTE)
}

/// The note a stored priming event carries, if it is one with a note.
pub fn priming_note(message: &str) -> Option<&str> {
    message.strip_prefix(PRIMING_NOTE)
}

/// Why a resume cannot be served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The event id is not one this store issued for this session.
    #[error("unknown event id")]
    UnknownEvent,
    /// Events after this id were evicted: the client has missed messages.
    #[error("events after this id are no longer stored")]
    Evicted,
    /// The store cannot be reached now (a shared store that is down): the
    /// client may try again later.
    #[error("the event store is unavailable")]
    Unavailable,
}

/// Why an event could not be stored: the store (a shared one, such as
/// Redis) failed or cannot be reached. The message was not stored, so a
/// stream that carries it must not go on as if it had been.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event store unavailable: {reason}")]
pub struct EventStoreError {
    reason: String,
}

impl EventStoreError {
    /// An error saying why the store failed.
    pub fn new(reason: impl Into<String>) -> Self {
        EventStoreError {
            reason: reason.into(),
        }
    }

    /// Why the store failed.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// A snapshot of a store's size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventStoreStats {
    /// Events currently stored.
    pub events: usize,
    /// Bytes of message text currently stored.
    pub bytes: usize,
    /// Events evicted (by count, bytes or age) since the store was created.
    pub evicted: u64,
    /// Sessions with at least one stored event.
    pub sessions: usize,
}

/// Where SSE events are kept for resumption.
pub trait EventStore: Send + Sync + 'static {
    /// Stores a message sent on `stream` of `session` and returns its event id.
    ///
    /// An empty `message` marks a priming event (SEP-1699): it gets an id a
    /// client can resume from, but it is never replayed. An error means
    /// the message was not stored: the caller tells its client so rather
    /// than send it as resumable.
    fn append(
        &self,
        session: &str,
        stream: &str,
        message: Arc<str>,
    ) -> BoxFuture<'_, Result<EventId, EventStoreError>>;

    /// The events of the stream `last_event_id` belongs to that came after it, in order.
    fn replay_after(
        &self,
        session: &str,
        last_event_id: &str,
    ) -> BoxFuture<'_, Result<Replay, ReplayError>>;

    /// Frees everything stored for `session` (call it when the session ends).
    fn drop_session(&self, session: &str) -> BoxFuture<'_, ()>;

    /// How much the store holds now.
    fn stats(&self) -> EventStoreStats;

    /// Whether the standalone (GET) stream of a session is fed from this
    /// store by [`EventStore::follow`] rather than directly: a store
    /// shared by several instances, where a message for a session's
    /// stream may be produced on any of them. `false` (the default, and
    /// the in-memory store's answer): messages reach the stream directly.
    /// A following store also leaves a session's resource updates out:
    /// the instance where an update happens stores it for every
    /// subscribed session ([`crate::fanout::store_resource_updated`]).
    fn follows(&self) -> bool {
        false
    }

    /// The events appended to `stream` of `session` after the event
    /// `after` (after the stream's end when the follower starts, if
    /// `None`), by any
    /// instance, as they come: each item a batch, in order; an empty batch
    /// now and then while nothing comes, so the reader can check it is
    /// still wanted. Priming events are left out. Only called where
    /// [`EventStore::follows`]; the default is a stream that ends at once.
    fn follow(&self, session: &str, stream: &str, after: Option<&str>) -> FollowStream {
        let _ = (session, stream, after);
        Box::pin(futures::stream::empty())
    }
}

/// What [`EventStore::follow`] yields: batches of events, or the error
/// that ends the stream.
pub type FollowStream =
    futures::stream::BoxStream<'static, Result<Vec<(EventId, Arc<str>)>, EventStoreError>>;

/// What one stored event costs beyond its message, as counted against
/// [`EventStoreLimits::max_bytes_total`]: the message's shared allocation
/// header, its entries in the stream's, the session's and the store's
/// queues, and the slack those queues keep as they grow.
pub const EVENT_OVERHEAD: usize = 160;

/// Bounds of a [`MemoryEventStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventStoreLimits {
    /// Most events kept per session; the oldest go first (default 1024).
    pub max_events_per_session: usize,
    /// Most bytes kept in all, each event counting its message and
    /// [`EVENT_OVERHEAD`] bytes of bookkeeping (for small messages most of
    /// what an event costs); the globally oldest go first (default 64 MiB).
    pub max_bytes_total: usize,
    /// Events older than this are dropped (default 5 minutes).
    pub max_age: Duration,
}

impl Default for EventStoreLimits {
    fn default() -> Self {
        Self {
            max_events_per_session: 1024,
            max_bytes_total: 64 * 1024 * 1024,
            max_age: Duration::from_secs(5 * 60),
        }
    }
}

impl EventStoreLimits {
    /// Sets the most events kept per session.
    pub fn with_max_events_per_session(mut self, n: usize) -> Self {
        self.max_events_per_session = n;
        self
    }

    /// Sets the most bytes kept in all (messages and their bookkeeping).
    pub fn with_max_bytes_total(mut self, n: usize) -> Self {
        self.max_bytes_total = n;
        self
    }

    /// Sets how long events are kept.
    pub fn with_max_age(mut self, age: Duration) -> Self {
        self.max_age = age;
        self
    }
}

/// A bounded in-memory [`EventStore`].
///
/// Event ids are `{stream}:{seq}-{tag}`, where `seq` is a decimal number
/// from one counter shared by the whole store (so ids are unique within a
/// session and increasing along a stream, and a session id that comes back
/// after [`drop_session`](EventStore::drop_session) never meets its old
/// ids), and `tag` 16 hex digits keyed by a secret of the store over the
/// session, the stream and `seq`: an id cannot be guessed, nor one of
/// another session's passed off. The id is split at its last `:`, so
/// stream ids may contain `:` themselves.
///
/// Eviction always removes a session's oldest event, so a session's events
/// disappear in id order; each stream remembers the highest id it lost. A
/// replay never returns a gap: if anything after the client's id on that
/// stream may be gone, the answer is [`ReplayError::Evicted`]. Once a stream
/// (or a session) has lost all its events it is forgotten, and the answer
/// for its old ids errs on the side of `Evicted`.
///
/// Costs: appends and replays are amortized O(1) plus the size of the reply;
/// one global queue of (time, session, seq) orders eviction by age and bytes.
#[derive(Debug)]
pub struct MemoryEventStore {
    limits: EventStoreLimits,
    /// The secret key of the ids' tags.
    tags: std::hash::RandomState,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    sessions: HashMap<Arc<str>, SessionEvents>,
    /// Every appended event in append order; entries whose event is already gone are stale.
    global: VecDeque<GlobalEntry>,
    /// The last seq issued (seqs start at 1).
    seq: u64,
    /// The highest seq ever evicted (0: none).
    evicted_through: u64,
    events: usize,
    bytes: usize,
    evicted: u64,
}

#[derive(Debug)]
struct GlobalEntry {
    at: Instant,
    session: Arc<str>,
    seq: u64,
}

#[derive(Debug)]
struct SessionEvents {
    /// Streams with at least one stored event.
    streams: HashMap<Arc<str>, StreamEvents>,
    /// The session's stored events in seq order, with their streams.
    order: VecDeque<(u64, Arc<str>)>,
    bytes: usize,
    /// An upper bound of the seqs this session lost (0: none).
    evicted_through: u64,
}

#[derive(Debug)]
struct StreamEvents {
    events: VecDeque<(u64, Arc<str>)>,
    /// An upper bound of the seqs this stream lost (0: none).
    evicted_through: u64,
}

/// An id's parts: its stream, its seq and its tag.
fn parse_event_id(id: &str) -> Option<(&str, u64, u64)> {
    let (stream, rest) = id.rsplit_once(':')?;
    let (seq, tag) = rest.split_once('-')?;
    if seq.is_empty() || !seq.bytes().all(|b| b.is_ascii_digit()) || tag.len() != 16 {
        return None;
    }
    let seq = seq.parse().ok().filter(|&s| s > 0)?;
    let tag = u64::from_str_radix(tag, 16).ok()?;
    Some((stream, seq, tag))
}

impl Default for MemoryEventStore {
    fn default() -> Self {
        Self::new(EventStoreLimits::default())
    }
}

impl MemoryEventStore {
    /// An empty store with these bounds.
    pub fn new(limits: EventStoreLimits) -> Self {
        Self {
            limits,
            tags: std::hash::RandomState::new(),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The tag of event `seq` of `stream` in `session`.
    fn tag(&self, session: &str, stream: &str, seq: u64) -> u64 {
        use std::hash::BuildHasher;
        self.tags.hash_one((session, stream, seq))
    }

    /// The id of event `seq` of `stream` in `session`.
    fn event_id(&self, session: &str, stream: &str, seq: u64) -> EventId {
        format!("{stream}:{seq}-{:016x}", self.tag(session, stream, seq))
    }

    /// The bounds this store enforces.
    pub fn limits(&self) -> EventStoreLimits {
        self.limits
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing in a critical section can leave `Inner` half-updated in a way
        // worse than a wrong counter, so a poisoned lock is still usable.
        self.inner.locked()
    }

    fn append_at(&self, session: &str, stream: &str, message: Arc<str>, now: Instant) -> EventId {
        let mut inner = self.lock();
        // Keep the global queue in time order even if callers raced to the lock.
        let now = inner.global.back().map_or(now, |back| now.max(back.at));
        inner.evict_older_than(now, self.limits.max_age);
        inner.seq += 1;
        let seq = inner.seq;
        let len = message.len();
        let global_watermark = inner.evicted_through;

        let session_key = match inner.sessions.get_key_value(session) {
            Some((key, _)) => key.clone(),
            None => Arc::from(session),
        };
        let sess = inner
            .sessions
            .entry(session_key.clone())
            .or_insert_with(|| SessionEvents {
                streams: HashMap::new(),
                order: VecDeque::new(),
                bytes: 0,
                evicted_through: global_watermark,
            });
        let stream_key = match sess.streams.get_key_value(stream) {
            Some((key, _)) => key.clone(),
            None => Arc::from(stream),
        };
        let session_watermark = sess.evicted_through;
        sess.streams
            .entry(stream_key.clone())
            .or_insert_with(|| StreamEvents {
                events: VecDeque::new(),
                evicted_through: session_watermark,
            })
            .events
            .push_back((seq, message));
        sess.order.push_back((seq, stream_key));
        sess.bytes += len;
        let over_count = sess.order.len() > self.limits.max_events_per_session;

        inner.global.push_back(GlobalEntry {
            at: now,
            session: session_key.clone(),
            seq,
        });
        inner.events += 1;
        inner.bytes += len;

        if over_count {
            inner.evict_oldest_of(&session_key);
        }
        while inner.bytes + inner.events * EVENT_OVERHEAD > self.limits.max_bytes_total {
            if !inner.evict_globally_oldest() {
                break;
            }
        }
        inner.compact();
        drop(inner);
        self.event_id(session, stream, seq)
    }

    fn replay_at(
        &self,
        session: &str,
        last_event_id: &str,
        now: Instant,
    ) -> Result<Replay, ReplayError> {
        let (stream, seq, _) = parse_event_id(last_event_id)
            .filter(|&(stream, seq, tag)| tag == self.tag(session, stream, seq))
            .ok_or(ReplayError::UnknownEvent)?;
        let mut inner = self.lock();
        inner.evict_older_than(now, self.limits.max_age);
        inner.compact();
        let gone = |watermark: u64| {
            if seq <= watermark {
                ReplayError::Evicted
            } else {
                ReplayError::UnknownEvent
            }
        };
        let Some(sess) = inner.sessions.get(session) else {
            return Err(gone(inner.evicted_through));
        };
        let Some(st) = sess.streams.get(stream) else {
            return Err(gone(sess.evicted_through));
        };
        if st.evicted_through > seq {
            return Err(ReplayError::Evicted);
        }
        let start = match st.events.binary_search_by_key(&seq, |(s, _)| *s) {
            Ok(i) => i + 1,
            // The event itself was evicted but nothing after it on this stream.
            Err(i) if st.evicted_through == seq => i,
            Err(_) => return Err(ReplayError::UnknownEvent),
        };
        let events = st
            .events
            .range(start..)
            .filter(|(_, message)| !is_priming(message))
            .map(|(s, message)| (self.event_id(session, stream, *s), message.clone()))
            .collect();
        let note = st
            .events
            .front()
            .and_then(|(_, message)| priming_note(message))
            .map(Arc::from);
        Ok(Replay {
            stream: stream.to_owned(),
            events,
            note,
        })
    }

    fn drop_session_now(&self, session: &str) {
        let mut inner = self.lock();
        if let Some(sess) = inner.sessions.remove(session) {
            inner.events -= sess.order.len();
            inner.bytes -= sess.bytes;
        }
        inner.compact();
    }
}

impl Inner {
    /// Removes the oldest event of `session`; returns whether there was one.
    fn evict_oldest_of(&mut self, session: &str) -> bool {
        let Some(sess) = self.sessions.get_mut(session) else {
            return false;
        };
        let Some((seq, stream)) = sess.order.pop_front() else {
            return false;
        };
        let st = sess
            .streams
            .get_mut(&*stream)
            .expect("every ordered event has its stream");
        let (front, message) = st
            .events
            .pop_front()
            .expect("every ordered event is in its stream");
        debug_assert_eq!(front, seq);
        st.evicted_through = seq;
        if st.events.is_empty() {
            sess.streams.remove(&*stream);
        }
        sess.evicted_through = seq;
        sess.bytes -= message.len();
        let now_empty = sess.order.is_empty();
        if now_empty {
            self.sessions.remove(session);
        }
        self.evicted_through = self.evicted_through.max(seq);
        self.events -= 1;
        self.bytes -= message.len();
        self.evicted += 1;
        true
    }

    /// Whether the event of a global entry is still stored.
    fn is_live(&self, entry: &GlobalEntry) -> bool {
        // A session loses events oldest first and seqs are never reused, so the
        // event is there iff its session's oldest stored seq is not after it.
        self.sessions
            .get(&entry.session)
            .and_then(|sess| sess.order.front())
            .is_some_and(|(front, _)| *front <= entry.seq)
    }

    /// Removes the oldest stored event of the whole store; returns whether there was one.
    fn evict_globally_oldest(&mut self) -> bool {
        while let Some(entry) = self.global.pop_front() {
            if self.is_live(&entry) {
                return self.evict_oldest_of(&entry.session);
            }
        }
        false
    }

    /// Removes events appended before `now - max_age`.
    fn evict_older_than(&mut self, now: Instant, max_age: Duration) {
        let Some(cutoff) = now.checked_sub(max_age) else {
            return;
        };
        while let Some(entry) = self.global.front() {
            if entry.at >= cutoff {
                break;
            }
            let entry = self.global.pop_front().expect("front exists");
            if self.is_live(&entry) {
                self.evict_oldest_of(&entry.session);
            }
        }
    }

    /// Drops stale global entries once they outnumber the live ones (amortized O(1)),
    /// and gives back the room the queue kept for a flood once far fewer
    /// events are stored (its sessions ended, say).
    fn compact(&mut self) {
        let room = 2 * self.events + 64;
        if self.global.len() > room {
            let mut global = std::mem::take(&mut self.global);
            global.retain(|entry| self.is_live(entry));
            if global.capacity() > 4 * room {
                global.shrink_to(room);
            }
            self.global = global;
        }
    }
}

impl EventStore for MemoryEventStore {
    fn append(
        &self,
        session: &str,
        stream: &str,
        message: Arc<str>,
    ) -> BoxFuture<'_, Result<EventId, EventStoreError>> {
        let id = self.append_at(session, stream, message, Instant::now());
        Box::pin(std::future::ready(Ok(id)))
    }

    fn replay_after(
        &self,
        session: &str,
        last_event_id: &str,
    ) -> BoxFuture<'_, Result<Replay, ReplayError>> {
        let result = self.replay_at(session, last_event_id, Instant::now());
        Box::pin(std::future::ready(result))
    }

    fn drop_session(&self, session: &str) -> BoxFuture<'_, ()> {
        self.drop_session_now(session);
        Box::pin(std::future::ready(()))
    }

    fn stats(&self) -> EventStoreStats {
        let inner = self.lock();
        EventStoreStats {
            events: inner.events,
            bytes: inner.bytes,
            evicted: inner.evicted,
            sessions: inner.sessions.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(s: &str) -> Arc<str> {
        Arc::from(s)
    }

    fn ids(replay: &Replay) -> Vec<&str> {
        replay.events.iter().map(|(id, _)| id.as_str()).collect()
    }

    fn texts(replay: &Replay) -> Vec<&str> {
        replay.events.iter().map(|(_, m)| &**m).collect()
    }

    #[tokio::test]
    async fn ids_unique_and_ordered() {
        let store = MemoryEventStore::default();
        let mut seen = std::collections::HashSet::new();
        let mut last_seq = HashMap::new();
        for i in 0..50 {
            let stream = ["get", "post-1", "post:2"][i % 3];
            let id = store.append("s1", stream, msg("m")).await.unwrap();
            assert!(seen.insert(id.clone()), "duplicate id {id}");
            let (parsed_stream, seq, _) = parse_event_id(&id).unwrap();
            assert_eq!(parsed_stream, stream);
            if let Some(prev) = last_seq.insert(stream, seq) {
                assert!(seq > prev);
            }
        }
        assert_eq!(store.stats().events, 50);
        assert_eq!(store.stats().sessions, 1);
    }

    #[tokio::test]
    async fn replay_returns_only_later_events_of_that_stream() {
        let store = MemoryEventStore::default();
        let a1 = store.append("s", "a", msg("a1")).await.unwrap();
        let b1 = store.append("s", "b", msg("b1")).await.unwrap();
        let a2 = store.append("s", "a", msg("a2")).await.unwrap();
        store.append("other", "a", msg("x")).await.unwrap();
        let a3 = store.append("s", "a", msg("a3")).await.unwrap();

        let replay = store.replay_after("s", &a1).await.unwrap();
        assert_eq!(replay.stream, "a");
        assert_eq!(ids(&replay), [a2.as_str(), a3.as_str()]);
        assert_eq!(texts(&replay), ["a2", "a3"]);

        let replay = store.replay_after("s", &a3).await.unwrap();
        assert!(replay.events.is_empty());

        let replay = store.replay_after("s", &b1).await.unwrap();
        assert_eq!(replay.stream, "b");
        assert!(replay.events.is_empty());

        // A stream id containing ':' still works.
        let c1 = store.append("s", "c:d", msg("c1")).await.unwrap();
        let c2 = store.append("s", "c:d", msg("c2")).await.unwrap();
        let replay = store.replay_after("s", &c1).await.unwrap();
        assert_eq!(
            (replay.stream.as_str(), ids(&replay)),
            ("c:d", vec![c2.as_str()])
        );
    }

    #[tokio::test]
    async fn priming_events_are_resumable_but_not_replayed() {
        let store = MemoryEventStore::default();
        let p = store.append("s", "get", msg("")).await.unwrap();
        let m1 = store.append("s", "get", msg("m1")).await.unwrap();
        let p2 = store.append("s", "get", msg("")).await.unwrap();
        store.append("s", "get", msg("m2")).await.unwrap();
        let replay = store.replay_after("s", &p).await.unwrap();
        assert_eq!(replay.stream, "get");
        assert_eq!(texts(&replay), ["m1", "m2"]);
        assert_eq!(texts(&store.replay_after("s", &m1).await.unwrap()), ["m2"]);
        assert_eq!(texts(&store.replay_after("s", &p2).await.unwrap()), ["m2"]);
    }

    #[tokio::test]
    async fn unknown_ids() {
        let store = MemoryEventStore::default();
        let a1 = store.append("s", "a", msg("a1")).await.unwrap();
        for bad in [
            "",
            "a",
            "a:",
            "a:x",
            "a:0",
            "a:-1",
            "zz:1",
            "a:999",
            "a:99999999999999999999999",
        ] {
            assert_eq!(
                store.replay_after("s", bad).await,
                Err(ReplayError::UnknownEvent),
                "{bad}"
            );
        }
        // Right id, wrong session.
        assert_eq!(
            store.replay_after("t", &a1).await,
            Err(ReplayError::UnknownEvent)
        );
        // An id of another stream's seq.
        let b = store.append("s", "b", msg("b1")).await.unwrap();
        let (_, b_seq, b_tag) = parse_event_id(&b).unwrap();
        assert_eq!(
            store
                .replay_after("s", &format!("a:{b_seq}-{b_tag:016x}"))
                .await,
            Err(ReplayError::UnknownEvent)
        );
        // A well-formed id whose tag is not the store's.
        let (_, a_seq, a_tag) = parse_event_id(&a1).unwrap();
        let forged = format!("a:{a_seq}-{:016x}", a_tag ^ 1);
        assert_eq!(
            store.replay_after("s", &forged).await,
            Err(ReplayError::UnknownEvent)
        );
        // The same id from another store (another secret) is unknown here.
        let other = MemoryEventStore::default();
        assert_eq!(
            other.replay_after("s", &a1).await,
            Err(ReplayError::UnknownEvent)
        );
    }

    #[tokio::test]
    async fn eviction_by_count() {
        let store =
            MemoryEventStore::new(EventStoreLimits::default().with_max_events_per_session(3));
        let mut a = Vec::new();
        for i in 0..5 {
            a.push(store.append("s", "a", msg(&format!("a{i}"))).await.unwrap());
        }
        store.append("t", "a", msg("t0")).await.unwrap();
        let stats = store.stats();
        assert_eq!((stats.events, stats.evicted, stats.sessions), (4, 2, 2));
        assert_eq!(stats.bytes, 3 * 2 + 2);

        // a0 is gone and a1 after it too: the client missed a1.
        assert_eq!(
            store.replay_after("s", &a[0]).await,
            Err(ReplayError::Evicted)
        );
        // a1 itself is gone but nothing after it: a2.. are replayed.
        let replay = store.replay_after("s", &a[1]).await.unwrap();
        assert_eq!(texts(&replay), ["a2", "a3", "a4"]);
        let replay = store.replay_after("s", &a[2]).await.unwrap();
        assert_eq!(texts(&replay), ["a3", "a4"]);
    }

    #[tokio::test]
    async fn eviction_by_count_across_streams() {
        let store =
            MemoryEventStore::new(EventStoreLimits::default().with_max_events_per_session(2));
        let a1 = store.append("s", "a", msg("a1")).await.unwrap();
        let b1 = store.append("s", "b", msg("b1")).await.unwrap();
        store.append("s", "b", msg("b2")).await.unwrap();
        // a1 was evicted, and stream a is empty and forgotten.
        assert_eq!(
            store.replay_after("s", &a1).await,
            Err(ReplayError::Evicted)
        );
        let replay = store.replay_after("s", &b1).await.unwrap();
        assert_eq!(texts(&replay), ["b2"]);
        // Stream a comes back.
        let a2 = store.append("s", "a", msg("a2")).await.unwrap();
        store.append("s", "a", msg("a3")).await.unwrap();
        // a2 evicted b1, a3 evicted b2; stream a has lost nothing since a1.
        assert_eq!(
            texts(&store.replay_after("s", &a1).await.unwrap()),
            ["a2", "a3"]
        );
        assert_eq!(texts(&store.replay_after("s", &a2).await.unwrap()), ["a3"]);
        assert_eq!(
            store.replay_after("s", &b1).await,
            Err(ReplayError::Evicted)
        );
    }

    #[tokio::test]
    async fn eviction_by_bytes_is_globally_oldest_first() {
        // Room for 10 bytes of messages in two events.
        let store = MemoryEventStore::new(
            EventStoreLimits::default().with_max_bytes_total(10 + 2 * EVENT_OVERHEAD),
        );
        let s1 = store.append("s", "a", msg("1234")).await.unwrap();
        let t1 = store.append("t", "a", msg("1234")).await.unwrap();
        let s2 = store.append("s", "a", msg("1234")).await.unwrap(); // 12 bytes > 10: s1 goes
        let stats = store.stats();
        assert_eq!((stats.events, stats.bytes, stats.evicted), (2, 8, 1));
        // s1 itself is gone but nothing after it: s2 is replayed.
        assert_eq!(
            texts(&store.replay_after("s", &s1).await.unwrap()),
            ["1234"]
        );
        store.append("t", "a", msg("1234567")).await.unwrap(); // 15 bytes: t1 goes, then s2
        let stats = store.stats();
        assert_eq!(
            (stats.events, stats.bytes, stats.evicted, stats.sessions),
            (1, 7, 3, 1)
        );
        assert_eq!(
            store.replay_after("s", &s1).await,
            Err(ReplayError::Evicted)
        );
        assert_eq!(
            store.replay_after("s", &s2).await,
            Err(ReplayError::Evicted)
        );
        assert!(store.replay_after("t", &t1).await.unwrap().events.len() == 1);
        // A message larger than the whole budget is evicted at once.
        let huge = "x".repeat(10 + 2 * EVENT_OVERHEAD);
        store.append("u", "a", msg(&huge)).await.unwrap();
        assert!(store.stats().bytes <= 10);
    }

    #[test]
    fn eviction_by_age() {
        let store = MemoryEventStore::new(
            EventStoreLimits::default().with_max_age(Duration::from_secs(10)),
        );
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let a1 = store.append_at("s", "a", msg("a1"), at(0));
        let b1 = store.append_at("t", "b", msg("b1"), at(1));
        let a2 = store.append_at("s", "a", msg("a2"), at(5));
        store.append_at("s", "a", msg("a3"), at(8));

        assert_eq!(store.replay_at("s", &a1, at(9)).unwrap().events.len(), 2);
        // At 12 s, a1 (0 s) and b1 (1 s) are older than 10 s.
        let replay = store.replay_at("s", &a2, at(12)).unwrap();
        assert_eq!(texts(&replay), ["a3"]);
        // a1 itself is gone, but nothing after it.
        assert_eq!(
            texts(&store.replay_at("s", &a1, at(12)).unwrap()),
            ["a2", "a3"]
        );
        let stats = store.stats();
        assert_eq!((stats.events, stats.evicted, stats.sessions), (2, 2, 1));
        // Session t lost everything and was forgotten; its old id reports the loss.
        assert_eq!(store.replay_at("t", &b1, at(12)), Err(ReplayError::Evicted));
        // Appends also expire old events.
        store.append_at("u", "c", msg("c1"), at(30));
        let stats = store.stats();
        assert_eq!((stats.events, stats.evicted, stats.sessions), (1, 4, 1));
        assert_eq!(store.replay_at("s", &a2, at(30)), Err(ReplayError::Evicted));
    }

    #[tokio::test]
    async fn eviction_by_age_real_clock() {
        let store = MemoryEventStore::new(
            EventStoreLimits::default().with_max_age(Duration::from_millis(20)),
        );
        let a1 = store.append("s", "a", msg("a1")).await.unwrap();
        store.append("s", "a", msg("a2")).await.unwrap();
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(
            store.replay_after("s", &a1).await,
            Err(ReplayError::Evicted)
        );
        assert_eq!(store.stats().events, 0);
        assert_eq!(store.stats().evicted, 2);
    }

    #[tokio::test]
    async fn drop_session_frees_everything() {
        let store = MemoryEventStore::default();
        for i in 0..10 {
            store
                .append("s", if i % 2 == 0 { "a" } else { "b" }, msg("0123456789"))
                .await
                .unwrap();
        }
        let t = store.append("t", "a", msg("xyz")).await.unwrap();
        assert_eq!(store.stats().bytes, 103);
        store.drop_session("s").await;
        let stats = store.stats();
        assert_eq!(
            (stats.events, stats.bytes, stats.sessions, stats.evicted),
            (1, 3, 1, 0)
        );
        store.drop_session("t").await;
        store.drop_session("never-existed").await;
        assert_eq!(store.stats(), EventStoreStats::default());
        assert_eq!(
            store.replay_after("t", &t).await,
            Err(ReplayError::UnknownEvent)
        );
        // A session id that comes back starts afresh.
        let t2 = store.append("t", "a", msg("new")).await.unwrap();
        assert_ne!(t, t2);
        assert_eq!(
            store.replay_after("t", &t).await,
            Err(ReplayError::UnknownEvent)
        );
    }

    #[tokio::test]
    async fn stale_queue_entries_are_compacted() {
        let store =
            MemoryEventStore::new(EventStoreLimits::default().with_max_events_per_session(1));
        for i in 0..10_000 {
            store.append("s", "a", msg("m")).await.unwrap();
            if i % 100 == 0 {
                store.drop_session("s").await;
            }
        }
        let inner = store.lock();
        assert_eq!(inner.events, 1);
        assert!(
            inner.global.len() <= 2 * inner.events + 65,
            "{}",
            inner.global.len()
        );
    }

    #[tokio::test]
    async fn ended_sessions_leave_no_room_behind() {
        let store = MemoryEventStore::default();
        let sessions: Vec<String> = (0..20).map(|i| format!("s{i}")).collect();
        for _ in 0..5_000 {
            for session in &sessions {
                store.append(session, "0", msg("{}")).await.unwrap();
            }
        }
        assert!(store.lock().global.capacity() >= 20 * 1024);
        for session in &sessions {
            store.drop_session(session).await;
        }
        let inner = store.lock();
        assert_eq!(inner.events, 0);
        assert!(
            inner.global.capacity() <= 4 * 64,
            "{}",
            inner.global.capacity()
        );
    }

    #[tokio::test]
    async fn evicted_counter_grows() {
        let store =
            MemoryEventStore::new(EventStoreLimits::default().with_max_events_per_session(1));
        let mut previous = 0;
        for i in 0..5 {
            store.append("s", "a", msg("m")).await.unwrap();
            let evicted = store.stats().evicted;
            assert_eq!(evicted, i);
            assert!(evicted >= previous);
            previous = evicted;
        }
    }

    #[test]
    fn object_safe() {
        let store: Arc<dyn EventStore> = Arc::new(MemoryEventStore::default());
        assert_eq!(store.stats().events, 0);
    }
}
