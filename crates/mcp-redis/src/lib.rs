//! MCP sessions and resumable SSE streams on Redis, so that several server
//! instances behind one load balancer (without affinity) serve the same
//! legacy sessions, and what any instance sends a client reaches it
//! wherever its stream is open. Beside them, what several hosts share:
//! the guard's decisions and the rate limits' budgets.
//!
//! What goes through Redis, and why:
//!
//! - **Sessions** ([`RedisSessionStore`]): what a session must carry to
//!   continue on an instance that never saw it (revision, client info and
//!   capabilities, log level, subscriptions, owner). An instance that gets
//!   an unknown session id loads it rather than answer 404. An instance
//!   that changes a session's settings says so on the bus
//!   (`mcp:bus:session`), and every other instance holding a copy of the
//!   session reloads them: a `resources/subscribe` posted to one instance
//!   counts on the instance that holds the session's stream.
//! - **Events** ([`RedisEventStore`]): one Redis stream per SSE stream of a
//!   session, so a client resumes a stream on any instance with
//!   `Last-Event-ID`. With [`RedisEventStore::follow_with`], a session's
//!   standalone (GET) stream is fed from its Redis stream: whichever
//!   instance sends the session a message meant for that stream (a log
//!   message or progress outside a request, a request to the client, a
//!   resource update) appends it there, and the instance holding the GET
//!   stream tails it (`XREAD BLOCK`, on a connection of its own per stream,
//!   as a blocking read would stall the shared one). Events are ordered by
//!   their Redis entry ids; a cut stream resumed anywhere continues after
//!   its last event id, so nothing is lost or repeated.
//! - **Server-wide events** ([`RedisBus`], pub/sub): a resource update or a
//!   list change raised on one instance (`Server::notify_resource_updated`,
//!   a catalog change) is published on `mcp:bus:server`; every other
//!   instance re-raises it for its own clients without publishing it
//!   again: its `subscriptions/listen` streams, and its legacy sessions
//!   subscribed to it. A resource update is stored for legacy sessions by
//!   the instance where it happened alone ([`mcp_http::fanout`]): on the
//!   standalone stream of every session the session store's index
//!   (`mcp:subs:URI`) lists as subscribed, whether or not any instance
//!   holds that stream now, so a client that resumes after its instance
//!   died gets every update, once. A list change is stored by the
//!   instance where the session's standalone stream is open (a session
//!   with no open standalone stream anywhere does not get it). The
//!   catalog change itself is each instance's own: make it on every
//!   instance.
//! - **Answers to server-to-client requests** ([`RedisBus`] as an
//!   [`mcp_http::relay::ResponseRelay`]): an instance records each request
//!   it sends a client (elicitation, sampling, roots) under
//!   `mcp:req:{SESSION}:ID`; an instance that receives the answer but did
//!   not send the request publishes it on the sender's own channel, and
//!   the sender completes the call. If the sender is gone, the answer is
//!   handled as any unknown answer.
//! - **Tasks** ([`RedisBus`] as an [`mcp_http::task_relay::TaskRelay`]):
//!   a task runs where the call that started it arrived, which records
//!   itself as the task's runner (`mcp:task:ID`, for the task's time to
//!   live) and as one of the runners of the session's (or caller's) tasks
//!   (`mcp:task-runners:SCOPE`). Another instance receiving a request
//!   about the task relays it on the runner's channel and answers with
//!   the runner's answer; `tasks/list` asks every runner. A runner that
//!   left the bus (it died) ends such a request with an error.
//! - **The guard's decisions** ([`RedisGuardLog`]): a host's grants for
//!   always and for a 2026-07-28 caller's session, pins a person approved
//!   and servers trusted, appended to one stream (`mcp:guard:log`) that
//!   every instance follows from its start; and the approval rounds
//!   waiting for a client's retry (`mcp:guard:waiting:TOKEN`), taken once
//!   by whichever instance the retry reaches.
//! - **Rate-limit budgets** ([`RedisBudgets`]): a host's rate limits spend
//!   one budget per key (`mcp:budget:KEY`) for every host sharing the
//!   Redis, counted (GCRA) by one script on Redis's clock.
//! - **The state key** ([`shared_state_key`]): cursors and 2026-07-28
//!   `requestState` must be accepted by every instance; without a key
//!   given to each (`mcp serve --state-key-file`, `MCP_STATE_KEY`), the
//!   first instance stores a random one in Redis for the others.
//!
//! The stores share one [`ConnectionManager`], which reconnects on its own
//! after an outage: meanwhile the stores fail, and the endpoint answers its
//! clients with clear errors (503, or a stream that ends with an error).
//! The bus's receiving connection subscribes again on its own (what was
//! published during the outage is lost).
//!
//! A request to an instance's endpoint meets, in order: `session_store`,
//! where the endpoint finds a legacy session it does not hold (and saves
//! what changed in one); `bus`, which forwards a client's answer to the
//! instance that sent the request, relays a request about a task to the
//! instance running it, and carries server-wide events and session
//! changes between instances; `event_store`, where what the engine sends
//! on a stream is appended, tailed by the instance holding a standalone
//! stream, and replayed on resumption. A host's calls meet `budget` (its
//! rate limits) and `guard_log` (its consent decisions and approval
//! rounds). This file holds [`connect`], which makes the shared
//! connection, [`shared_state_key`], and the stores' helpers `repeatable`
//! (a command sent once more after a dropped connection) and `millis` (a
//! duration as Redis expects it).
//!
//! ```no_run
//! use std::sync::Arc;
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let url = "redis://127.0.0.1:6379/";
//! let redis = mcp_redis::connect(url).await?;
//! let client = mcp_redis::Client::open(url)?;
//! let bus = mcp_redis::RedisBus::join(client.clone(), redis.clone()).await?;
//! let events = mcp_redis::RedisEventStore::new(redis.clone()).follow_with(client);
//! let config = mcp_http::HttpConfig::loopback(8080)
//!     .event_store(Arc::new(events))
//!     .session_store(Arc::new(mcp_redis::RedisSessionStore::new(redis)))
//!     .response_relay(Arc::new(bus.clone()))
//!     .task_relay(Arc::new(bus.clone()));
//! # let _ = config;
//! # Ok(())
//! # }
//! ```

mod budget;
mod bus;
mod event_store;
mod guard_log;
mod session_store;

use std::time::Duration;

use redis::Value;

pub use budget::RedisBudgets;
pub use bus::RedisBus;
pub use event_store::RedisEventStore;
pub use guard_log::RedisGuardLog;
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

/// Runs `command` on `redis`, and once more if the connection had dropped
/// (as after a Redis restart: the manager reconnects meanwhile), for
/// commands that do the same when repeated. Without this, the first
/// command each instance sends after an outage fails.
pub(crate) async fn repeatable<T, F>(
    redis: &ConnectionManager,
    command: impl Fn(ConnectionManager) -> F,
) -> redis::RedisResult<T>
where
    F: Future<Output = redis::RedisResult<T>>,
{
    match command(redis.clone()).await {
        Err(error) if error.is_connection_dropped() || error.is_io_error() => {
            command(redis.clone()).await
        }
        done => done,
    }
}

/// A duration in whole milliseconds, at least one (Redis refuses a zero
/// expiry).
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}
