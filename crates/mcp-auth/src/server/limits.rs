//! Rate limits of the authorization server: per client address on
//! registration, authorization, token and login requests, and per user
//! name on failed logins. Counted with GCRA (`governor`); the keyed
//! states that have fully replenished are dropped by the periodic sweep
//! ([`Limiters::retain_recent`]), so the maps hold only the addresses and
//! names seen within about one period.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::middleware::StateInformationMiddleware;
use governor::{DefaultKeyedRateLimiter, Quota};
use http::header::RETRY_AFTER;
use http::{HeaderValue, StatusCode};

use super::{AuthServerError, AuthorizationServer, OAuthError};
use mcp_core::sync::MutexExt as _;

/// A rate: `count` requests per `period`, in bursts of at most `burst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateLimit {
    /// Requests allowed per period, on average.
    pub count: u32,
    /// The period.
    pub period: Duration,
    /// Requests allowed at once after a quiet spell.
    pub burst: u32,
}

impl RateLimit {
    /// `count` per `period`, in bursts of at most `count`.
    pub fn new(count: u32, period: Duration) -> Self {
        RateLimit {
            count,
            period,
            burst: count,
        }
    }

    /// `count` per minute, in bursts of at most `count`.
    pub fn per_minute(count: u32) -> Self {
        Self::new(count, Duration::from_secs(60))
    }

    /// Sets the burst.
    pub fn burst(mut self, burst: u32) -> Self {
        self.burst = burst;
        self
    }

    /// The GCRA quota: one request replenished every `period / count`.
    pub(crate) fn quota(&self) -> Result<Quota, AuthServerError> {
        let bad = || AuthServerError::Config(format!("invalid rate limit {self:?}"));
        let count = NonZeroU32::new(self.count).ok_or_else(bad)?;
        let burst = NonZeroU32::new(self.burst).ok_or_else(bad)?;
        Quota::with_period(self.period / count.get())
            .map(|q| q.allow_burst(burst))
            .ok_or_else(bad)
    }
}

/// The rate limits of the authorization server; `None` turns one off.
/// Requests are counted per client address (IPv6 addresses per /64
/// network), failed logins per user name as well.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateLimits {
    /// `POST /register` per address. Default: 10 a minute, bursts of 20.
    pub registration: Option<RateLimit>,
    /// `GET /authorize` per address. Default: 60 a minute.
    pub authorize: Option<RateLimit>,
    /// `POST /token` per address. Default: 60 a minute.
    pub token: Option<RateLimit>,
    /// Login form posts (`POST /authorize`) per address. Default: 10 a
    /// minute.
    pub login: Option<RateLimit>,
    /// Failed logins per user name, known or not. When they are used up
    /// the name is refused, right password or not, until one is
    /// replenished. Default: 5 per 15 minutes (then one every 3 minutes).
    pub failed_logins_per_user: Option<RateLimit>,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            registration: Some(RateLimit::per_minute(10).burst(20)),
            authorize: Some(RateLimit::per_minute(60)),
            token: Some(RateLimit::per_minute(60)),
            login: Some(RateLimit::per_minute(10)),
            failed_logins_per_user: Some(RateLimit::new(5, Duration::from_secs(15 * 60))),
        }
    }
}

impl RateLimits {
    /// No limit at all.
    pub fn none() -> Self {
        RateLimits {
            registration: None,
            authorize: None,
            token: None,
            login: None,
            failed_logins_per_user: None,
        }
    }

    /// Sets the limit of `POST /register` per address.
    pub fn registration(mut self, limit: Option<RateLimit>) -> Self {
        self.registration = limit;
        self
    }

    /// Sets the limit of `GET /authorize` per address.
    pub fn authorize(mut self, limit: Option<RateLimit>) -> Self {
        self.authorize = limit;
        self
    }

    /// Sets the limit of `POST /token` per address.
    pub fn token(mut self, limit: Option<RateLimit>) -> Self {
        self.token = limit;
        self
    }

    /// Sets the limit of login form posts per address.
    pub fn login(mut self, limit: Option<RateLimit>) -> Self {
        self.login = limit;
        self
    }

    /// Sets the limit of failed logins per user name.
    pub fn failed_logins_per_user(mut self, limit: Option<RateLimit>) -> Self {
        self.failed_logins_per_user = limit;
        self
    }

    /// Checks every limit.
    pub(crate) fn check(&self) -> Result<(), AuthServerError> {
        for limit in [
            self.registration,
            self.authorize,
            self.token,
            self.login,
            self.failed_logins_per_user,
        ]
        .into_iter()
        .flatten()
        {
            limit.quota()?;
        }
        Ok(())
    }
}

/// The rate-limited endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Registration,
    Authorize,
    Token,
    Login,
}

type Keyed = DefaultKeyedRateLimiter<IpAddr>;

/// The limiters of one server.
pub(crate) struct Limiters {
    registration: Option<Keyed>,
    authorize: Option<Keyed>,
    token: Option<Keyed>,
    login: Option<Keyed>,
    failed_logins: Option<FailedLogins>,
    warned_no_address: AtomicBool,
}

impl Limiters {
    /// Limiters for `limits` (already checked).
    pub fn new(limits: &RateLimits) -> Result<Self, AuthServerError> {
        let keyed = |l: Option<RateLimit>| -> Result<Option<Keyed>, AuthServerError> {
            l.map(|l| l.quota().map(Keyed::keyed)).transpose()
        };
        Ok(Limiters {
            registration: keyed(limits.registration)?,
            authorize: keyed(limits.authorize)?,
            token: keyed(limits.token)?,
            login: keyed(limits.login)?,
            failed_logins: limits
                .failed_logins_per_user
                .map(|l| l.quota().map(FailedLogins::new))
                .transpose()?,
            warned_no_address: AtomicBool::new(false),
        })
    }

    /// Counts a request to `endpoint` from `ip`; the wait before the next
    /// one is allowed when it is refused.
    pub fn check(&self, endpoint: Endpoint, ip: IpAddr) -> Result<(), Duration> {
        let limiter = match endpoint {
            Endpoint::Registration => &self.registration,
            Endpoint::Authorize => &self.authorize,
            Endpoint::Token => &self.token,
            Endpoint::Login => &self.login,
        };
        let Some(limiter) = limiter else {
            return Ok(());
        };
        limiter
            .check_key(&address_key(ip))
            .map_err(|not_until| not_until.wait_time_from(Instant::now()))
    }

    /// How long `user` is refused for failed logins, if it is.
    pub fn user_locked(&self, user: &str) -> Option<Duration> {
        self.failed_logins.as_ref()?.locked(user)
    }

    /// Counts a failed login of `user`.
    pub fn login_failed(&self, user: &str) {
        if let Some(f) = &self.failed_logins {
            f.failed(user);
        }
    }

    /// Drops the states of addresses and names whose limits have fully
    /// replenished (they are as good as new), and the memory they took.
    pub fn retain_recent(&self) {
        for limiter in [
            &self.registration,
            &self.authorize,
            &self.token,
            &self.login,
        ]
        .into_iter()
        .flatten()
        {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        if let Some(f) = &self.failed_logins {
            f.retain_recent();
        }
    }

    /// The addresses and names tracked, in all.
    #[cfg(test)]
    pub fn tracked(&self) -> usize {
        [
            &self.registration,
            &self.authorize,
            &self.token,
            &self.login,
        ]
        .into_iter()
        .flatten()
        .map(|l| l.len())
        .sum::<usize>()
            + self.failed_logins.as_ref().map_or(0, |f| f.limiter.len())
    }
}

/// The key of a client address: an IPv4 address (IPv4-mapped IPv6 ones
/// too) as it is, an IPv6 address by its /64 network, which one host
/// usually has whole.
fn address_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(bits))
        }
        v4 => v4,
    }
}

/// Failed logins per user name, and the names refused until a failure is
/// replenished.
struct FailedLogins {
    limiter: governor::RateLimiter<
        String,
        governor::state::keyed::DefaultKeyedStateStore<String>,
        governor::clock::DefaultClock,
        StateInformationMiddleware,
    >,
    /// Names whose failures are used up, and until when.
    locked: Mutex<HashMap<String, Instant>>,
}

impl FailedLogins {
    fn new(quota: Quota) -> Self {
        FailedLogins {
            limiter: governor::RateLimiter::keyed(quota)
                .with_middleware::<StateInformationMiddleware>(),
            locked: Mutex::new(HashMap::new()),
        }
    }

    /// Names are kept as digests: a name of any length costs the same.
    fn key(user: &str) -> String {
        super::util::digest(user)
    }

    fn locked_map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.locked.locked()
    }

    fn locked(&self, user: &str) -> Option<Duration> {
        let until = *self.locked_map().get(&Self::key(user))?;
        until
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    }

    fn failed(&self, user: &str) {
        let key = Self::key(user);
        let until = match self.limiter.check_key(&key) {
            Ok(state) if state.remaining_burst_capacity() > 0 => return,
            // That was the last one: refused until the next is replenished
            // (a refused check changes nothing, and says when).
            Ok(_) => match self.limiter.check_key(&key) {
                Err(not_until) => not_until.earliest_possible(),
                Ok(_) => return,
            },
            Err(not_until) => not_until.earliest_possible(),
        };
        tracing::info!("authorization server: failed logins used up for a user name");
        self.locked_map().insert(key, until);
    }

    fn retain_recent(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
        let now = Instant::now();
        let mut locked = self.locked_map();
        locked.retain(|_, until| *until > now);
        locked.shrink_to_fit();
    }
}

/// Whole seconds to wait, at least one.
pub(crate) fn retry_after_secs(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

/// A wait in words: "42 seconds", "3 minutes".
pub(crate) fn in_words(wait: Duration) -> String {
    let secs = retry_after_secs(wait);
    if secs < 120 {
        format!("{secs} seconds")
    } else {
        format!("{} minutes", secs.div_ceil(60))
    }
}

/// Adds `Retry-After`.
pub(crate) fn with_retry_after(mut resp: Response, wait: Duration) -> Response {
    resp.headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(retry_after_secs(wait)));
    resp
}

/// The middleware of one rate-limited endpoint.
pub(crate) async fn limit(
    State((server, endpoint)): State<(AuthorizationServer, Endpoint)>,
    request: Request,
    next: Next,
) -> Response {
    let limits = &server.inner.limits;
    let ip = match request.extensions().get::<ConnectInfo<SocketAddr>>() {
        Some(ConnectInfo(peer)) => peer.ip(),
        None => {
            if !limits.warned_no_address.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "authorization server: the client address is unknown (serve the router \
                     with connect info); all clients share one rate limit"
                );
            }
            IpAddr::from([0, 0, 0, 0])
        }
    };
    match limits.check(endpoint, ip) {
        Ok(()) => next.run(request).await,
        Err(wait) => {
            tracing::debug!(%ip, ?endpoint, "authorization server: rate limited");
            too_many(endpoint, wait)
        }
    }
}

/// The answer to a refused request: 429 with `Retry-After`; an OAuth
/// error (`temporarily_unavailable` at the authorization endpoint, the one
/// RFC 6749 defines there; `slow_down`, RFC 8628's, elsewhere), a page for
/// the login form.
fn too_many(endpoint: Endpoint, wait: Duration) -> Response {
    let resp = match endpoint {
        Endpoint::Login => super::page::error_page(
            StatusCode::TOO_MANY_REQUESTS,
            &format!(
                "Too many sign-in attempts from your address. Wait {} and try again.",
                in_words(wait)
            ),
        ),
        Endpoint::Authorize => OAuthError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "temporarily_unavailable",
            format!(
                "too many authorization requests from this address; retry in {}",
                in_words(wait)
            ),
        )
        .into_response(),
        Endpoint::Registration | Endpoint::Token => OAuthError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "slow_down",
            format!(
                "too many requests from this address; retry in {}",
                in_words(wait)
            ),
        )
        .into_response(),
    };
    with_retry_after(resp, wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_keys() {
        let v6: IpAddr = "2001:db8:1:2:aaaa:bbbb:cccc:dddd".parse().unwrap();
        assert_eq!(address_key(v6), "2001:db8:1:2::".parse::<IpAddr>().unwrap());
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(address_key(mapped), "192.0.2.7".parse::<IpAddr>().unwrap());
        let v4: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(address_key(v4), v4);
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(10)), 1);
        assert_eq!(retry_after_secs(Duration::from_secs(3)), 3);
        assert_eq!(retry_after_secs(Duration::from_millis(3001)), 4);
        assert_eq!(in_words(Duration::from_secs(179)), "3 minutes");
        assert_eq!(in_words(Duration::from_secs(42)), "42 seconds");
    }

    #[test]
    fn per_address_limits_refuse_after_the_burst() {
        let limits = RateLimits {
            registration: Some(RateLimit::per_minute(1).burst(3)),
            ..RateLimits::none()
        };
        let l = Limiters::new(&limits).unwrap();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        for _ in 0..3 {
            assert!(l.check(Endpoint::Registration, a).is_ok());
        }
        let wait = l.check(Endpoint::Registration, a).unwrap_err();
        assert!(wait > Duration::from_secs(50) && wait <= Duration::from_secs(60));
        assert!(l.check(Endpoint::Registration, b).is_ok());
        // Unlimited endpoints are not counted.
        assert!(l.check(Endpoint::Token, a).is_ok());
        assert_eq!(l.tracked(), 2);
    }

    #[test]
    fn failed_logins_lock_a_name_after_the_burst() {
        let limits = RateLimits {
            failed_logins_per_user: Some(RateLimit::new(3, Duration::from_secs(900))),
            ..RateLimits::none()
        };
        let l = Limiters::new(&limits).unwrap();
        for _ in 0..2 {
            l.login_failed("alice");
            assert_eq!(l.user_locked("alice"), None);
        }
        l.login_failed("alice");
        let wait = l.user_locked("alice").unwrap();
        assert!(wait > Duration::from_secs(290) && wait <= Duration::from_secs(300));
        assert_eq!(l.user_locked("bob"), None);
        // Sweeping keeps a lock that still runs.
        l.retain_recent();
        assert!(l.user_locked("alice").is_some());
    }

    #[test]
    fn replenished_entries_are_dropped() {
        let limits = RateLimits::none()
            .token(Some(RateLimit::new(1000, Duration::from_secs(1))))
            .failed_logins_per_user(Some(RateLimit::new(1000, Duration::from_secs(1))));
        let l = Limiters::new(&limits).unwrap();
        for i in 0..50u8 {
            assert!(
                l.check(Endpoint::Token, IpAddr::from([192, 0, 2, i]))
                    .is_ok()
            );
        }
        l.login_failed("alice");
        assert_eq!(l.tracked(), 51);
        // Each entry is whole again after one replenish interval (1 ms).
        std::thread::sleep(Duration::from_millis(20));
        l.retain_recent();
        assert_eq!(l.tracked(), 0);
    }

    #[test]
    fn invalid_limits_are_refused() {
        assert!(RateLimit::per_minute(0).quota().is_err());
        assert!(RateLimit::per_minute(5).burst(0).quota().is_err());
        assert!(RateLimit::new(1, Duration::ZERO).quota().is_err());
        assert!(RateLimits::default().check().is_ok());
    }
}
