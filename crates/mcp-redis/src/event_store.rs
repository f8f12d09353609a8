//! SSE events on Redis: one Redis stream per SSE stream of a session.
//!
//! Keys (with the default prefix `mcp:`): the events of stream `S` of
//! session `ID` are the Redis stream `mcp:ev:{ID}:S`, each entry holding
//! the message (`m`) and a random tag (`t`); the sorted set `mcp:ev:{ID}`
//! lists the session's stream keys by last append, so that
//! [`drop_session`](EventStore::drop_session) finds them. The braces are a
//! hash tag: a session's keys live together, as one script touches them.
//!
//! An event id is `S:MS-SEQ-TAG`: the stream, the Redis entry id and the
//! entry's tag in 16 hex digits. A replay looks for the entry under the
//! session's own key and checks its tag, so an id from another session, a
//! guessed one, or one whose tag was altered replays nothing.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use mcp_core::BoxFuture;
use mcp_http::event_store::{
    EventId, EventStore, EventStoreError, EventStoreStats, FollowStream, Replay, ReplayError,
    is_priming, priming_note,
};
use redis::aio::ConnectionManager;
use redis::{Script, Value};

use crate::{DEFAULT_PREFIX, millis};

/// Appends an event, bounds the stream, renews the expiry of the stream
/// and of the session's index, and forgets index entries older than that.
///
/// KEYS: the stream, the index. ARGV: max length, expiry (ms), tag, message.
static APPEND: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 't', ARGV[3], 'm', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZADD', KEYS[2], now, KEYS[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return id
",
    )
});

/// The events after an entry, if the entry is there with this tag.
///
/// KEYS: the stream. ARGV: entry id, tag. Returns `{1, entries, first
/// entry}`; `{-1, first id}` when the entry is gone but others are there;
/// `{0}` when the tag does not match or the stream is empty.
static REPLAY: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local found = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if #found == 0 then
  local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
  if #first == 0 then return {0} end
  return {-1, first[1][1]}
end
local fields = found[1][2]
for i = 1, #fields, 2 do
  if fields[i] == 't' then
    if fields[i + 1] == ARGV[2] then
      local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
      return {1, redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+'), first}
    end
    return {0}
  end
end
return {0}
",
    )
});

/// Deletes a session's streams and its index. KEYS: the index.
static DROP: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local streams = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, key in ipairs(streams) do redis.call('DEL', key) end
redis.call('DEL', KEYS[1])
return #streams
",
    )
});

/// The longest stream id accepted in an event id (the endpoint's are
/// numbers; anything much longer is not one of ours).
const MAX_STREAM_ID: usize = 128;

/// An [`EventStore`] on Redis, shared by every instance that uses the same
/// Redis and prefix.
///
/// Each SSE stream keeps at most about `max_events_per_stream` events
/// (`XADD … MAXLEN ~`, which trims whole blocks of entries, so a stream
/// may hold a little more), and a stream or session not appended to for
/// `max_age` expires. A resume after events were trimmed away answers
/// [`ReplayError::Evicted`]; Redis errors answer
/// [`ReplayError::Unavailable`] and [`EventStoreError`].
///
/// [`EventStore::stats`] reports nothing (all zeros): the events are in
/// Redis, not here; ask Redis (`INFO memory`, `SCAN` on the prefix).
#[derive(Clone)]
pub struct RedisEventStore {
    redis: ConnectionManager,
    /// Where followers open their own connections, if standalone streams
    /// follow the store.
    follow: Option<redis::Client>,
    prefix: String,
    max_events_per_stream: usize,
    max_age: Duration,
}

impl std::fmt::Debug for RedisEventStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisEventStore")
            .field("prefix", &self.prefix)
            .field("max_events_per_stream", &self.max_events_per_stream)
            .field("max_age", &self.max_age)
            .finish_non_exhaustive()
    }
}

impl RedisEventStore {
    /// A store on this connection: keys under `mcp:`, about 1,024 events
    /// per stream, kept 5 minutes after a stream's last event.
    pub fn new(redis: ConnectionManager) -> Self {
        RedisEventStore {
            redis,
            follow: None,
            prefix: DEFAULT_PREFIX.to_owned(),
            max_events_per_stream: 1024,
            max_age: Duration::from_secs(5 * 60),
        }
    }

    /// Feeds each session's standalone (GET) stream from the store, so
    /// that what any instance sends a session reaches the instance that
    /// holds its stream (see [`EventStore::follows`]): each open stream
    /// tails its Redis stream (`XREAD BLOCK`) on a connection of its own
    /// to `client`, as a blocking read would stall the shared one.
    pub fn follow_with(mut self, client: redis::Client) -> Self {
        self.follow = Some(client);
        self
    }

    /// Puts the keys under `prefix` (instances that share sessions must
    /// use the same one).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Sets about how many events each stream keeps (at least one).
    pub fn max_events_per_stream(mut self, n: usize) -> Self {
        self.max_events_per_stream = n.max(1);
        self
    }

    /// Sets how long a stream is kept after its last event.
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = age;
        self
    }

    /// The key of the index of `session`'s streams.
    pub fn session_key(&self, session: &str) -> String {
        format!("{}ev:{{{session}}}", self.prefix)
    }

    /// The key of stream `stream` of `session`.
    pub fn stream_key(&self, session: &str, stream: &str) -> String {
        format!("{}ev:{{{session}}}:{stream}", self.prefix)
    }
}

/// An event id's parts: its stream, its Redis entry id and its tag.
fn parse_event_id(id: &str) -> Option<(&str, (u64, u64), &str)> {
    let (stream, rest) = id.rsplit_once(':')?;
    let (entry, tag) = rest.rsplit_once('-')?;
    let (ms, seq) = entry.split_once('-')?;
    let number = |text: &str| {
        (!text.is_empty() && text.len() <= 20 && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse::<u64>().ok())
            .flatten()
    };
    let valid_tag = tag.len() == 16 && tag.bytes().all(|b| b.is_ascii_hexdigit());
    let valid_stream = !stream.is_empty()
        && stream.len() <= MAX_STREAM_ID
        && stream.bytes().all(|b| b.is_ascii_graphic());
    (valid_tag && valid_stream).then_some(())?;
    Some((stream, (number(ms)?, number(seq)?), tag))
}

/// A Redis entry id's parts.
fn parse_entry_id(id: &[u8]) -> Option<(u64, u64)> {
    let text = std::str::from_utf8(id).ok()?;
    let (ms, seq) = text.split_once('-')?;
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

/// The events of a replay's reply: `[[id, [field, value, ...]], ...]`,
/// priming events left out.
fn replayed_events(stream: &str, entries: Vec<Value>) -> Option<Vec<(EventId, Arc<str>)>> {
    let mut events = stored_events(stream, entries)?;
    events.retain(|(_, message)| !is_priming(message));
    Some(events)
}

/// The note of a stream whose first entry is `first` (`[[id, fields]]`,
/// or none), where it is a priming event with a note.
fn stream_note(stream: &str, first: Option<Value>) -> Option<Arc<str>> {
    let Some(Value::Array(first)) = first else {
        return None;
    };
    let (_, message) = stored_events(stream, first)?.into_iter().next()?;
    priming_note(&message).map(Arc::from)
}

/// The events of entries `[[id, [field, value, ...]], ...]`, as stored.
fn stored_events(stream: &str, entries: Vec<Value>) -> Option<Vec<(EventId, Arc<str>)>> {
    let mut events = Vec::with_capacity(entries.len());
    for entry in entries {
        let Value::Array(mut parts) = entry else {
            return None;
        };
        let (Some(Value::Array(fields)), Some(Value::BulkString(id))) = (parts.pop(), parts.pop())
        else {
            return None;
        };
        let id = String::from_utf8(id).ok()?;
        let mut tag = None;
        let mut message = None;
        let mut fields = fields.into_iter();
        while let (Some(Value::BulkString(name)), Some(Value::BulkString(value))) =
            (fields.next(), fields.next())
        {
            match name.as_slice() {
                b"t" => tag = Some(String::from_utf8(value).ok()?),
                b"m" => message = Some(String::from_utf8(value).ok()?),
                _ => {}
            }
        }
        let (tag, message) = (tag?, message?);
        events.push((format!("{stream}:{id}-{tag}"), Arc::from(message)));
    }
    Some(events)
}

impl EventStore for RedisEventStore {
    fn append(
        &self,
        session: &str,
        stream: &str,
        message: Arc<str>,
    ) -> BoxFuture<'_, Result<EventId, EventStoreError>> {
        let key = self.stream_key(session, stream);
        let index = self.session_key(session);
        let tag = format!("{:016x}", rand::random::<u64>());
        let stream = stream.to_owned();
        Box::pin(async move {
            let entry: String = APPEND
                .key(&key)
                .key(&index)
                .arg(self.max_events_per_stream)
                .arg(millis(self.max_age))
                .arg(&tag)
                .arg(message.as_bytes())
                .invoke_async(&mut self.redis.clone())
                .await
                .map_err(|e| EventStoreError::new(format!("Redis: {e}")))?;
            Ok(format!("{stream}:{entry}-{tag}"))
        })
    }

    fn replay_after(
        &self,
        session: &str,
        last_event_id: &str,
    ) -> BoxFuture<'_, Result<Replay, ReplayError>> {
        let Some((stream, entry, tag)) = parse_event_id(last_event_id) else {
            return Box::pin(std::future::ready(Err(ReplayError::UnknownEvent)));
        };
        let key = self.stream_key(session, stream);
        let stream = stream.to_owned();
        let entry_id = format!("{}-{}", entry.0, entry.1);
        let tag = tag.to_ascii_lowercase();
        Box::pin(async move {
            let reply: Value = REPLAY
                .key(&key)
                .arg(&entry_id)
                .arg(&tag)
                .invoke_async(&mut self.redis.clone())
                .await
                .map_err(|error| {
                    tracing::warn!(%error, "cannot replay events from Redis");
                    ReplayError::Unavailable
                })?;
            let Value::Array(mut parts) = reply else {
                return Err(ReplayError::UnknownEvent);
            };
            let third = (parts.len() > 2).then(|| parts.remove(2));
            let second = (parts.len() > 1).then(|| parts.remove(1));
            match (parts.first(), second) {
                (Some(Value::Int(1)), Some(Value::Array(entries))) => {
                    let events = replayed_events(&stream, entries).ok_or_else(|| {
                        tracing::warn!(%key, "unreadable events in Redis");
                        ReplayError::UnknownEvent
                    })?;
                    let note = stream_note(&stream, third);
                    Ok(Replay {
                        stream,
                        events,
                        note,
                    })
                }
                // The entry was trimmed away, and some after it too.
                (Some(Value::Int(-1)), Some(Value::BulkString(first)))
                    if parse_entry_id(&first).is_some_and(|first| entry < first) =>
                {
                    Err(ReplayError::Evicted)
                }
                _ => Err(ReplayError::UnknownEvent),
            }
        })
    }

    fn drop_session(&self, session: &str) -> BoxFuture<'_, ()> {
        let index = self.session_key(session);
        Box::pin(async move {
            let dropped: Result<i64, _> =
                DROP.key(&index).invoke_async(&mut self.redis.clone()).await;
            if let Err(error) = dropped {
                // They expire on their own.
                tracing::warn!(%error, %index, "cannot drop a session's events from Redis");
            }
        })
    }

    fn stats(&self) -> EventStoreStats {
        EventStoreStats::default()
    }

    fn follows(&self) -> bool {
        self.follow.is_some()
    }

    fn follow(&self, session: &str, stream: &str, after: Option<&str>) -> FollowStream {
        let Some(client) = self.follow.clone() else {
            return Box::pin(futures::stream::empty());
        };
        let start = match after {
            None => None,
            Some(id) => match parse_event_id(id) {
                Some((_, (ms, seq), _)) => Some(format!("{ms}-{seq}")),
                None => {
                    let error = EventStoreError::new(format!("cannot follow from event {id:?}"));
                    return Box::pin(futures::stream::once(std::future::ready(Err(error))));
                }
            },
        };
        let follower = Follower {
            client,
            connection: None,
            key: self.stream_key(session, stream),
            stream: stream.to_owned(),
            last: start,
        };
        Box::pin(futures::stream::unfold(Some(follower), |follower| async {
            let mut follower = follower?;
            match follower.next().await {
                Ok(batch) => Some((Ok(batch), Some(follower))),
                Err(error) => Some((Err(error), None)),
            }
        }))
    }
}

/// How long one `XREAD` blocks before the follower checks that its stream
/// is still read.
const FOLLOW_BLOCK: Duration = Duration::from_secs(1);

/// Most events one `XREAD` returns.
const FOLLOW_BATCH: usize = 512;

/// Tails one Redis stream on a connection of its own.
struct Follower {
    client: redis::Client,
    connection: Option<redis::aio::MultiplexedConnection>,
    key: String,
    stream: String,
    /// The last entry id read; `None` until the stream's end is known.
    last: Option<String>,
}

impl Follower {
    async fn connection(
        &mut self,
    ) -> Result<&mut redis::aio::MultiplexedConnection, EventStoreError> {
        if self.connection.is_none() {
            let config = redis::AsyncConnectionConfig::new()
                .set_connection_timeout(Some(Duration::from_secs(2)))
                .set_response_timeout(Some(FOLLOW_BLOCK + Duration::from_secs(5)));
            let connection = self
                .client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .map_err(|e| EventStoreError::new(format!("Redis: {e}")))?;
            self.connection = Some(connection);
        }
        Ok(self.connection.as_mut().unwrap_or_else(|| unreachable!()))
    }

    /// The next events, or none after blocking a while.
    async fn next(&mut self) -> Result<Vec<(EventId, Arc<str>)>, EventStoreError> {
        let redis_error = |e: redis::RedisError| EventStoreError::new(format!("Redis: {e}"));
        let key = self.key.clone();
        if self.last.is_none() {
            let connection = self.connection().await?;
            let newest: Value = redis::cmd("XREVRANGE")
                .arg(&key)
                .arg("+")
                .arg("-")
                .arg("COUNT")
                .arg(1)
                .query_async(connection)
                .await
                .map_err(redis_error)?;
            let newest = match newest {
                Value::Array(entries) => entries.into_iter().next().and_then(|entry| match entry {
                    Value::Array(mut parts) if !parts.is_empty() => match parts.swap_remove(0) {
                        Value::BulkString(id) => String::from_utf8(id).ok(),
                        _ => None,
                    },
                    _ => None,
                }),
                _ => None,
            };
            self.last = Some(newest.unwrap_or_else(|| "0-0".to_owned()));
        }
        let last = self.last.clone().unwrap_or_default();
        let connection = self.connection().await?;
        let reply: Value = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(FOLLOW_BATCH)
            .arg("BLOCK")
            .arg(millis(FOLLOW_BLOCK))
            .arg("STREAMS")
            .arg(&key)
            .arg(&last)
            .query_async(connection)
            .await
            .map_err(redis_error)?;
        let entries = match reply {
            Value::Nil => return Ok(Vec::new()),
            Value::Array(streams) => streams.into_iter().find_map(|stream| match stream {
                Value::Array(mut parts) if parts.len() == 2 => match parts.pop() {
                    Some(Value::Array(entries)) => Some(entries),
                    _ => None,
                },
                _ => None,
            }),
            _ => None,
        }
        .unwrap_or_default();
        if let Some(Value::Array(parts)) = entries.last()
            && let Some(Value::BulkString(id)) = parts.first()
        {
            self.last = Some(String::from_utf8_lossy(id).into_owned());
        }
        replayed_events(&self.stream, entries)
            .ok_or_else(|| EventStoreError::new(format!("unreadable events in Redis at {key}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_are_read_strictly() {
        assert_eq!(
            parse_event_id("7:1700000000000-3-00112233445566aa"),
            Some(("7", (1_700_000_000_000, 3), "00112233445566aa"))
        );
        assert_eq!(
            parse_event_id("a:b:1-0-00112233445566aa"),
            Some(("a:b", (1, 0), "00112233445566aa"))
        );
        let long_stream = format!("{}:1-0-00112233445566aa", "s".repeat(MAX_STREAM_ID + 1));
        for bad in [
            "",
            "7",
            "7:1-0",
            "7:1-0-0011",
            "7:1-0-0011223344556677zz",
            ":1-0-00112233445566aa",
            "7:x-0-00112233445566aa",
            "7:1--00112233445566aa",
            "7:-1-0-00112233445566aa",
            "7:99999999999999999999999-0-00112233445566aa",
            "a b:1-0-00112233445566aa",
            &long_stream,
        ] {
            assert_eq!(parse_event_id(bad), None, "{bad}");
        }
    }
}
