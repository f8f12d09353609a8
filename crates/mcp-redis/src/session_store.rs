//! Legacy sessions on Redis: one JSON record per session, which expires
//! when the session has been unused for its idle timeout, and an index of
//! the sessions subscribed to each resource.
//!
//! Keys (with the default prefix `mcp:`): the record of session `ID` is
//! the string `mcp:session:ID`; the sessions subscribed to resource `URI`
//! are the set `mcp:subs:URI`. Saving and removing a record update the
//! index in the same script; a session that expired unused leaves its
//! entries behind until [`SessionStore::subscribers`] finds them and
//! drops them. The resources 2026-07-28 listen streams asked for (they
//! have no session) are the sorted set `mcp:listened`, scored by when
//! each note expires. The scripts name the index keys themselves, so the store
//! wants one Redis (not a cluster).

use std::sync::LazyLock;
use std::time::Duration;

use mcp_core::BoxFuture;
use mcp_http::session_store::{SessionRecord, SessionStore, SessionStoreError};
use redis::Script;
use redis::aio::ConnectionManager;

use crate::{DEFAULT_PREFIX, millis, repeatable};

/// Writes a record and brings the subscription index up to it: the
/// session is added to the set of each resource it is subscribed to, and
/// taken out of those it was and is no longer.
///
/// KEYS: the record. ARGV: the record, its expiry (ms), the index prefix,
/// the session id, then the subscribed URIs.
static SAVE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local old = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local kept = {}
for i = 5, #ARGV do
  kept[ARGV[i]] = true
  redis.call('SADD', ARGV[3] .. ARGV[i], ARGV[4])
end
if old then
  local ok, record = pcall(cjson.decode, old)
  if ok and type(record) == 'table' and type(record.subscriptions) == 'table' then
    for _, uri in ipairs(record.subscriptions) do
      if not kept[uri] then redis.call('SREM', ARGV[3] .. uri, ARGV[4]) end
    end
  end
end
return 1
",
    )
});

/// Deletes a record and its entries in the subscription index.
///
/// KEYS: the record. ARGV: the index prefix, the session id.
static REMOVE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local old = redis.call('GET', KEYS[1])
redis.call('DEL', KEYS[1])
if old then
  local ok, record = pcall(cjson.decode, old)
  if ok and type(record) == 'table' and type(record.subscriptions) == 'table' then
    for _, uri in ipairs(record.subscriptions) do redis.call('SREM', ARGV[1] .. uri, ARGV[2]) end
  end
end
return 1
",
    )
});

/// The sessions of a resource's index whose records are still there; the
/// others (expired unused) are taken out of it.
///
/// KEYS: the index set. ARGV: the record key prefix.
static SUBSCRIBERS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local live = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[1] .. id) == 1 then
    table.insert(live, id)
  else
    redis.call('SREM', KEYS[1], id)
  end
end
return live
",
    )
});

/// A [`SessionStore`] on Redis: the record of session `ID` is the string
/// at `{prefix}session:ID`, its expiry renewed on each use.
#[derive(Clone)]
pub struct RedisSessionStore {
    redis: ConnectionManager,
    prefix: String,
}

impl std::fmt::Debug for RedisSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSessionStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisSessionStore {
    /// A store on this connection, with keys under `mcp:`.
    pub fn new(redis: ConnectionManager) -> Self {
        RedisSessionStore {
            redis,
            prefix: DEFAULT_PREFIX.to_owned(),
        }
    }

    /// Puts the keys under `prefix` (instances that share sessions must
    /// use the same one).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The key of session `id`'s record.
    pub fn key(&self, id: &str) -> String {
        format!("{}session:{id}", self.prefix)
    }

    /// The resources session `id` is subscribed to (none if it has no
    /// record), without renewing its record.
    pub async fn subscriptions(
        &self,
        id: &str,
    ) -> Result<std::collections::BTreeSet<String>, SessionStoreError> {
        let command = redis::cmd("GET").arg(self.key(id)).clone();
        let text: Option<String> = repeatable(&self.redis, |mut redis| {
            let command = &command;
            async move { command.query_async(&mut redis).await }
        })
        .await
        .map_err(unavailable)?;
        let Some(text) = text else {
            return Ok(Default::default());
        };
        let record: SessionRecord = serde_json::from_str(&text).map_err(|e| {
            SessionStoreError::new(format!("the record of session {id} is unreadable: {e}"))
        })?;
        Ok(record.subscriptions)
    }

    /// Notes that a stream without a session (a 2026-07-28
    /// `subscriptions/listen`) asked for resource `uri`, so that an
    /// instance starting later finds it among
    /// [`RedisSessionStore::subscribed_resources`]. Kept a day from the
    /// last note; the notes that expired go at each note.
    pub async fn note_listened(&self, uri: &str) -> Result<(), SessionStoreError> {
        let key = self.listened_key();
        let now = now_millis();
        redis::pipe()
            .cmd("ZADD")
            .arg(&key)
            .arg(now + LISTENED_FOR.as_millis() as u64)
            .arg(uri)
            .ignore()
            .cmd("ZREMRANGEBYSCORE")
            .arg(&key)
            .arg("-inf")
            .arg(now)
            .ignore()
            .query_async::<()>(&mut self.redis.clone())
            .await
            .map_err(unavailable)
    }

    /// The resources some session is subscribed to (or was, where its
    /// record expired since), or a listen stream asked for in the last
    /// day, for an instance that starts after the subscriptions were made.
    pub async fn subscribed_resources(&self) -> Result<Vec<String>, SessionStoreError> {
        let prefix = self.subscribers_key("");
        let pattern = format!("{prefix}*");
        let mut redis = self.redis.clone();
        let mut cursor: u64 = 0;
        let mut uris: Vec<String> = redis::cmd("ZRANGEBYSCORE")
            .arg(self.listened_key())
            .arg(now_millis())
            .arg("+inf")
            .query_async(&mut redis)
            .await
            .map_err(unavailable)?;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut redis)
                .await
                .map_err(unavailable)?;
            uris.extend(
                keys.iter()
                    .filter_map(|key| key.strip_prefix(&prefix).map(str::to_owned)),
            );
            if next == 0 {
                break;
            }
            cursor = next;
        }
        uris.sort();
        uris.dedup();
        Ok(uris)
    }

    /// The key of the resources listen streams asked for, scored by when
    /// the note expires.
    fn listened_key(&self) -> String {
        format!("{}listened", self.prefix)
    }

    /// The key of the set of sessions subscribed to resource `uri`.
    pub fn subscribers_key(&self, uri: &str) -> String {
        format!("{}subs:{uri}", self.prefix)
    }
}

fn unavailable(error: redis::RedisError) -> SessionStoreError {
    SessionStoreError::new(format!("Redis: {error}"))
}

impl SessionStore for RedisSessionStore {
    fn is_shared(&self) -> bool {
        true
    }

    fn save<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), SessionStoreError>> {
        Box::pin(async move {
            let text = serde_json::to_string(record)
                .map_err(|e| SessionStoreError::new(format!("cannot write the record: {e}")))?;
            let mut script = SAVE.key(self.key(id));
            script
                .arg(text)
                .arg(millis(ttl))
                .arg(self.subscribers_key(""))
                .arg(id);
            for uri in &record.subscriptions {
                script.arg(uri);
            }
            repeatable(&self.redis, |mut redis| {
                let script = &script;
                async move { script.invoke_async::<()>(&mut redis).await }
            })
            .await
            .map_err(unavailable)
        })
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, SessionStoreError>> {
        Box::pin(async move {
            let command = redis::cmd("GETEX")
                .arg(self.key(id))
                .arg("PX")
                .arg(millis(ttl))
                .clone();
            let text: Option<String> = repeatable(&self.redis, |mut redis| {
                let command = &command;
                async move { command.query_async(&mut redis).await }
            })
            .await
            .map_err(unavailable)?;
            text.map(|text| {
                serde_json::from_str(&text).map_err(|e| {
                    SessionStoreError::new(format!("the record of session {id} is unreadable: {e}"))
                })
            })
            .transpose()
        })
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, SessionStoreError>> {
        Box::pin(async move {
            let command = redis::cmd("PEXPIRE")
                .arg(self.key(id))
                .arg(millis(ttl))
                .clone();
            let renewed: i64 = repeatable(&self.redis, |mut redis| {
                let command = &command;
                async move { command.query_async(&mut redis).await }
            })
            .await
            .map_err(unavailable)?;
            Ok(renewed == 1)
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), SessionStoreError>> {
        Box::pin(async move {
            let mut script = REMOVE.key(self.key(id));
            script.arg(self.subscribers_key("")).arg(id);
            repeatable(&self.redis, |mut redis| {
                let script = &script;
                async move { script.invoke_async::<()>(&mut redis).await }
            })
            .await
            .map_err(unavailable)
        })
    }

    fn subscribers<'a>(
        &'a self,
        uri: &'a str,
    ) -> BoxFuture<'a, Result<Vec<String>, SessionStoreError>> {
        Box::pin(async move {
            let mut script = SUBSCRIBERS.key(self.subscribers_key(uri));
            script.arg(self.key(""));
            repeatable(&self.redis, |mut redis| {
                let script = &script;
                async move { script.invoke_async(&mut redis).await }
            })
            .await
            .map_err(unavailable)
        })
    }
}

/// How long a listen stream's resource is noted for instances starting
/// later.
const LISTENED_FOR: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// Milliseconds since the Unix epoch.
fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
