//! MCP sessions and resumable SSE streams on Redis, so that several server
//! instances behind one load balancer (without affinity) serve the same
//! legacy sessions: [`RedisEventStore`] keeps each session's SSE events
//! (a client resumes its stream on any instance with `Last-Event-ID`),
//! [`RedisSessionStore`] keeps what a session must carry to continue on an
//! instance that never saw it.
//!
//! Both share one [`ConnectionManager`], which reconnects on its own after
//! an outage: meanwhile the stores fail, and the endpoint answers its
//! clients with clear errors (503, or a stream that ends with an error).
//!
//! ```no_run
//! use std::sync::Arc;
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let redis = mcp_redis::connect("redis://127.0.0.1:6379/").await?;
//! let config = mcp_http::HttpConfig::loopback(8080)
//!     .event_store(Arc::new(mcp_redis::RedisEventStore::new(redis.clone())))
//!     .session_store(Arc::new(mcp_redis::RedisSessionStore::new(redis)));
//! # let _ = config;
//! # Ok(())
//! # }
//! ```

mod bus;
mod event_store;
mod session_store;

use std::time::Duration;

use redis::Value;

pub use bus::RedisBus;
pub use event_store::RedisEventStore;
pub use redis::Client;
pub use redis::aio::ConnectionManager;
pub use session_store::RedisSessionStore;

/// The key prefix both stores use unless told otherwise.
pub const DEFAULT_PREFIX: &str = "mcp:";

/// Why [`connect`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The URL is not a Redis URL.
    #[error("{url:?} is not a Redis URL (redis://HOST:PORT/DB): {source}")]
    BadUrl {
        /// The URL given.
        url: String,
        /// What the client said.
        source: redis::RedisError,
    },
    /// Redis did not answer.
    #[error("cannot reach Redis at {url}: {source}")]
    Unreachable {
        /// The URL given.
        url: String,
        /// What the client said.
        source: redis::RedisError,
    },
}

/// Connects to the Redis at `url` (`redis://HOST:PORT/DB`), checking that
/// it answers. The connection is re-established on its own after an
/// outage; while Redis is down, commands fail within about a second
/// rather than wait for it.
pub async fn connect(url: &str) -> Result<ConnectionManager, ConnectError> {
    let client = redis::Client::open(url).map_err(|source| ConnectError::BadUrl {
        url: url.to_owned(),
        source,
    })?;
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(1)))
        .set_response_timeout(Some(Duration::from_secs(2)))
        .set_number_of_retries(2)
        .set_min_delay(Duration::from_millis(50))
        .set_max_delay(Duration::from_millis(500));
    let unreachable = |source| ConnectError::Unreachable {
        url: url.to_owned(),
        source,
    };
    let mut manager = ConnectionManager::new_with_config(client, config)
        .await
        .map_err(unreachable)?;
    redis::cmd("PING")
        .query_async::<()>(&mut manager)
        .await
        .map_err(unreachable)?;
    Ok(manager)
}

/// The secret that signs cursors and `requestState` on every instance
/// sharing this Redis, for instances given none: 32 random bytes (hex)
/// under `mcp:state-key`, made by the first instance that asks (`SET NX`)
/// and read by the others. Anyone who can read this Redis can read it; a
/// key given to each instance instead (`mcp serve --state-key-file`)
/// keeps it out of Redis.
pub async fn shared_state_key(redis: &mut ConnectionManager) -> Result<Vec<u8>, redis::RedisError> {
    let key = format!("{DEFAULT_PREFIX}state-key");
    let fresh: String = rand::random::<[u8; 32]>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let _: Value = redis::cmd("SET")
        .arg(&key)
        .arg(&fresh)
        .arg("NX")
        .query_async(redis)
        .await?;
    let stored: Vec<u8> = redis::cmd("GET").arg(&key).query_async(redis).await?;
    Ok(stored)
}

/// A duration in whole milliseconds, at least one (Redis refuses a zero
/// expiry).
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}
