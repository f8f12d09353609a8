//! The guard's decisions shared by the instances of a host: a log of
//! entries (grants, pins approved, servers trusted), each appended by the
//! instance where a person decided and followed by every instance from
//! its start, so a grant made on one holds on all; and the approval
//! rounds waiting for a 2026-07-28 client's retry, which any instance may
//! take once. The entries are opaque text (the host's JSON): this crate
//! keeps and carries them.

use std::time::Duration;

use futures::Stream;
use redis::AsyncCommands as _;
use redis::aio::ConnectionManager;
use redis::streams::{StreamMaxlen, StreamReadOptions, StreamReadReply};

/// How many entries the log keeps at most (about; the oldest go first).
const MAX_ENTRIES: usize = 100_000;

/// How long one `XREAD` blocks.
const FOLLOW_BLOCK: Duration = Duration::from_secs(1);

/// The guard's log and waiting rounds in one Redis.
#[derive(Clone)]
pub struct RedisGuardLog {
    redis: ConnectionManager,
    client: redis::Client,
    prefix: String,
}

impl std::fmt::Debug for RedisGuardLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisGuardLog")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisGuardLog {
    /// The log at `url` (its connection `redis`), under keys starting
    /// `mcp:guard:`.
    pub fn new(url: &str, redis: ConnectionManager) -> Result<RedisGuardLog, String> {
        RedisGuardLog::with_prefix(url, redis, "mcp:guard:")
    }

    /// The log at `url`, under keys starting with `prefix`.
    pub fn with_prefix(
        url: &str,
        redis: ConnectionManager,
        prefix: &str,
    ) -> Result<RedisGuardLog, String> {
        let client = redis::Client::open(url).map_err(|e| format!("{url}: {e}"))?;
        Ok(RedisGuardLog {
            redis,
            client,
            prefix: prefix.to_owned(),
        })
    }

    fn log_key(&self) -> String {
        format!("{}log", self.prefix)
    }

    /// Appends `entry` for every instance.
    pub async fn append(&self, entry: &str) -> Result<(), String> {
        let mut redis = self.redis.clone();
        let _: String = redis
            .xadd_maxlen(
                self.log_key(),
                StreamMaxlen::Approx(MAX_ENTRIES),
                "*",
                &[("e", entry)],
            )
            .await
            .map_err(|e| format!("Redis: {e}"))?;
        Ok(())
    }

    /// Every entry of the log, from its first, then each as it is
    /// appended, for as long as the stream is read. An error ends it (the
    /// caller follows again).
    pub fn follow(&self) -> impl Stream<Item = Result<String, String>> + Send + 'static {
        let (client, key) = (self.client.clone(), self.log_key());
        let state = (
            client,
            key,
            None::<redis::aio::MultiplexedConnection>,
            "0".to_owned(),
            Vec::<String>::new(),
        );
        futures::stream::unfold(Some(state), |state| async move {
            let (client, key, mut connection, mut last, mut ready) = state?;
            loop {
                if let Some(entry) = ready.pop() {
                    return Some((Ok(entry), Some((client, key, connection, last, ready))));
                }
                let redis = match connection.as_mut() {
                    Some(redis) => redis,
                    None => {
                        let config = redis::AsyncConnectionConfig::new()
                            .set_connection_timeout(Some(Duration::from_secs(2)))
                            .set_response_timeout(Some(FOLLOW_BLOCK + Duration::from_secs(5)));
                        match client
                            .get_multiplexed_async_connection_with_config(&config)
                            .await
                        {
                            Ok(made) => connection.insert(made),
                            Err(e) => return Some((Err(format!("Redis: {e}")), None)),
                        }
                    }
                };
                let options = StreamReadOptions::default()
                    .block(FOLLOW_BLOCK.as_millis() as usize)
                    .count(512);
                let reply: Result<Option<StreamReadReply>, _> =
                    redis.xread_options(&[&key], &[&last], &options).await;
                let reply = match reply {
                    Ok(reply) => reply,
                    Err(e) => return Some((Err(format!("Redis: {e}")), None)),
                };
                for stream in reply.into_iter().flat_map(|r| r.keys) {
                    for entry in stream.ids {
                        last = entry.id.clone();
                        if let Some(text) = entry.get::<String>("e") {
                            ready.push(text);
                        }
                    }
                }
                // Popped from the end: in the order appended.
                ready.reverse();
            }
        })
    }

    /// Keeps `entry` under `token` for `ttl`, for whichever instance the
    /// retry reaches.
    pub async fn put_waiting(&self, token: &str, entry: &str, ttl: Duration) -> Result<(), String> {
        let mut redis = self.redis.clone();
        let key = format!("{}waiting:{token}", self.prefix);
        let _: () = redis
            .pset_ex(key, entry, ttl.as_millis() as u64)
            .await
            .map_err(|e| format!("Redis: {e}"))?;
        Ok(())
    }

    /// The entry kept under `token`, once: taken, no other instance gets
    /// it.
    pub async fn take_waiting(&self, token: &str) -> Result<Option<String>, String> {
        let mut redis = self.redis.clone();
        let key = format!("{}waiting:{token}", self.prefix);
        redis.get_del(key).await.map_err(|e| format!("Redis: {e}"))
    }
}
