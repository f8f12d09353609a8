//! Legacy sessions on Redis: one JSON record per session, which expires
//! when the session has been unused for its idle timeout.

use std::time::Duration;

use mcp_core::BoxFuture;
use mcp_http::session_store::{SessionRecord, SessionStore, SessionStoreError};
use redis::aio::ConnectionManager;

use crate::{DEFAULT_PREFIX, millis};

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
            redis::cmd("SET")
                .arg(self.key(id))
                .arg(text)
                .arg("PX")
                .arg(millis(ttl))
                .query_async::<()>(&mut self.redis.clone())
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
            let text: Option<String> = redis::cmd("GETEX")
                .arg(self.key(id))
                .arg("PX")
                .arg(millis(ttl))
                .query_async(&mut self.redis.clone())
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
            let renewed: i64 = redis::cmd("PEXPIRE")
                .arg(self.key(id))
                .arg(millis(ttl))
                .query_async(&mut self.redis.clone())
                .await
                .map_err(unavailable)?;
            Ok(renewed == 1)
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), SessionStoreError>> {
        Box::pin(async move {
            redis::cmd("DEL")
                .arg(self.key(id))
                .query_async::<()>(&mut self.redis.clone())
                .await
                .map_err(unavailable)
        })
    }
}
