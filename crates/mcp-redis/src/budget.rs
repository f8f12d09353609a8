//! Rate-limit budgets kept in Redis, so that the instances behind one load
//! balancer spend one budget rather than one each. GCRA, as the limits
//! counted in memory are: a budget allowing a burst of N and one more each
//! `interval` keeps, per key, the time at which it is full again; one
//! script reads and moves it, on Redis's clock, so instances whose clocks
//! differ agree.

use std::time::Duration;

use redis::aio::ConnectionManager;

/// Spends one unit of `KEYS[1]`: `ARGV[1]` the interval and `ARGV[2]` the
/// burst's tolerance (interval × (burst − 1)), in microseconds. Returns -1
/// when spent, else the microseconds until a unit is free.
const SPEND: &str = r"
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local full_at = tonumber(redis.call('GET', KEYS[1]))
if (not full_at) or full_at < now then full_at = now end
local allowed_at = full_at - tolerance
if now < allowed_at then return allowed_at - now end
local next_full_at = full_at + interval
redis.call('SET', KEYS[1], string.format('%.0f', next_full_at), 'PX', math.floor((next_full_at - now) / 1000) + 1)
return -1
";

/// Budgets in one Redis, under keys of one prefix.
#[derive(Clone)]
pub struct RedisBudgets {
    redis: ConnectionManager,
    script: std::sync::Arc<redis::Script>,
    prefix: String,
}

impl std::fmt::Debug for RedisBudgets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBudgets")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisBudgets {
    /// Budgets on `redis`, under keys starting `mcp:budget:`.
    pub fn new(redis: ConnectionManager) -> RedisBudgets {
        RedisBudgets::with_prefix(redis, "mcp:budget:")
    }

    /// Budgets on `redis`, under keys starting with `prefix`.
    pub fn with_prefix(redis: ConnectionManager, prefix: &str) -> RedisBudgets {
        RedisBudgets {
            redis,
            script: std::sync::Arc::new(redis::Script::new(SPEND)),
            prefix: prefix.to_owned(),
        }
    }

    /// Spends one unit of budget `key`, which allows a burst of `burst` and
    /// one more each `interval`: `None` when spent, else how long until a
    /// unit is free (nothing is spent then).
    pub async fn spend(
        &self,
        key: &str,
        interval: Duration,
        burst: u32,
    ) -> Result<Option<Duration>, redis::RedisError> {
        let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let tolerance = interval.saturating_mul(burst.saturating_sub(1));
        let wait: i64 = self
            .script
            .key(format!("{}{key}", self.prefix))
            .arg(micros(interval))
            .arg(micros(tolerance))
            .invoke_async(&mut self.redis.clone())
            .await?;
        Ok(u64::try_from(wait).ok().map(Duration::from_micros))
    }
}
