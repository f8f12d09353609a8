//! DNS-rebinding protection: the `Host` and `Origin` checks in front of the
//! MCP endpoint.
//!
//! A web page can make a browser send requests to `http://localhost:PORT`
//! through a DNS name it controls; the request then carries that name in
//! `Host` (and the page's origin in `Origin`). A server that only answers
//! requests whose `Host` and `Origin` it knows is safe from that.
//! [`OriginPolicy::check`] is the check; [`GuardLayer`] puts it in front of
//! any tower service (an axum router, say), and [`middleware`] is the same
//! for `axum::middleware::from_fn_with_state`:
//!
//! ```
//! use std::sync::Arc;
//! use mcp_http::{guard::GuardLayer, OriginPolicy};
//!
//! let port = 8080;
//! let router: axum::Router = axum::Router::new();
//! let app = router.layer(GuardLayer::new(Arc::new(OriginPolicy::loopback(port))));
//! # let _ = app;
//! ```

use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use futures::future::{Either, Ready, ready};
use http::header::{HOST, ORIGIN};
use http::{HeaderMap, HeaderValue, StatusCode};
use mcp_schema::{ErrorObject, error_codes};

/// Which `Host` and `Origin` values a server accepts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OriginPolicy {
    /// Accepted `Host` values, normalized (lowercase, no trailing dot), matched exactly.
    allowed_hosts: Vec<String>,
    /// Accepted `Origin` values, normalized the same way, matched exactly.
    allowed_origins: Vec<String>,
    /// Checks disabled.
    any: bool,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    /// No `Host` header (HTTP/1.1 requires one).
    #[error("missing Host header")]
    MissingHost,
    /// More than one `Host` header.
    #[error("more than one Host header")]
    MultipleHosts,
    /// A `Host` that is not a valid host name.
    #[error("invalid Host header")]
    InvalidHost,
    /// A `Host` the policy does not list.
    #[error("Host {0:?} is not allowed")]
    HostNotAllowed(String),
    /// `Origin: null` (sandboxed frames, `file:` pages...).
    #[error("Origin \"null\" is not allowed")]
    NullOrigin,
    /// More than one `Origin` header.
    #[error("more than one Origin header")]
    MultipleOrigins,
    /// An `Origin` that is not `scheme://host[:port]`.
    #[error("invalid Origin header")]
    InvalidOrigin,
    /// An `Origin` the policy does not list.
    #[error("Origin {0:?} is not allowed")]
    OriginNotAllowed(String),
}

/// The longest header value echoed back in an error message.
const MAX_ECHO: usize = 100;

fn echo(value: &str) -> String {
    match value.char_indices().nth(MAX_ECHO) {
        Some((i, _)) => format!("{}...", &value[..i]),
        None => value.to_owned(),
    }
}

/// Normalizes `host[:port]`: lowercase, a trailing dot of the host name removed.
/// `None` if it is not a plausible authority.
fn normalize_host(value: &str) -> Option<String> {
    let value = value.trim();
    if value.is_empty()
        || !value.bytes().all(|b| b.is_ascii_graphic())
        || value.contains(['/', '?', '#', '@', '\\'])
    {
        return None;
    }
    let lower = value.to_ascii_lowercase();
    let (name, port) = if lower.starts_with('[') {
        let end = lower.find(']')?;
        (&lower[..=end], &lower[end + 1..])
    } else {
        match lower.rfind(':') {
            Some(i) => (&lower[..i], &lower[i..]),
            None => (&lower[..], ""),
        }
    };
    if !port.is_empty() {
        let digits = port.strip_prefix(':')?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() || (name.contains(':') && !name.starts_with('[')) {
        return None;
    }
    Some(format!("{name}{port}"))
}

/// Normalizes `scheme://host[:port]`. `None` if it is not one.
fn normalize_origin(value: &str) -> Option<String> {
    let value = value.trim();
    let (scheme, authority) = value.split_once("://")?;
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
    {
        return None;
    }
    let authority = normalize_host(authority)?;
    Some(format!("{}://{authority}", scheme.to_ascii_lowercase()))
}

/// The single value of a header, `Ok(None)` if absent, `Err(())` if repeated.
fn single<'a>(
    headers: &'a HeaderMap,
    name: &http::HeaderName,
) -> Result<Option<&'a HeaderValue>, ()> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    if values.next().is_some() {
        Err(())
    } else {
        Ok(first)
    }
}

impl OriginPolicy {
    /// A policy that accepts nothing until hosts and origins are added.
    pub fn new() -> Self {
        Self::default()
    }

    /// A policy that accepts every request: for a server knowingly exposed to anything.
    pub fn any() -> Self {
        Self {
            any: true,
            ..Self::default()
        }
    }

    /// The policy for a server bound to loopback on `port`: `localhost`, `127.0.0.1` and `[::1]`.
    pub fn loopback(port: u16) -> Self {
        let mut policy = Self::new();
        for host in ["localhost", "127.0.0.1", "[::1]"] {
            let with_port = format!("{host}:{port}");
            for scheme in ["http", "https"] {
                policy = policy
                    .allow_origin(format!("{scheme}://{host}"))
                    .allow_origin(format!("{scheme}://{with_port}"));
            }
            policy = policy.allow_host(host).allow_host(with_port);
        }
        policy
    }

    /// Also accepts this `Host` value (`name` or `name:port`, matched exactly, case-insensitively).
    ///
    /// # Panics
    /// If `host` is not a valid `host[:port]`.
    pub fn allow_host(mut self, host: impl AsRef<str>) -> Self {
        let host = host.as_ref();
        let normalized = normalize_host(host).unwrap_or_else(|| panic!("invalid host {host:?}"));
        if !self.allowed_hosts.contains(&normalized) {
            self.allowed_hosts.push(normalized);
        }
        self
    }

    /// Also accepts this `Origin` value (`scheme://host[:port]`, matched exactly, case-insensitively).
    ///
    /// # Panics
    /// If `origin` is not a valid `scheme://host[:port]`.
    pub fn allow_origin(mut self, origin: impl AsRef<str>) -> Self {
        let origin = origin.as_ref();
        let normalized =
            normalize_origin(origin).unwrap_or_else(|| panic!("invalid origin {origin:?}"));
        if !self.allowed_origins.contains(&normalized) {
            self.allowed_origins.push(normalized);
        }
        self
    }

    /// Whether this policy accepts everything ([`OriginPolicy::any`]).
    pub fn is_any(&self) -> bool {
        self.any
    }

    /// Checks a request's `Host` (required) and `Origin` (optional; `null` refused).
    pub fn check(&self, headers: &HeaderMap) -> Result<(), GuardError> {
        self.check_request(&http::Uri::default(), headers)
    }

    /// Checks a request as [`OriginPolicy::check`] does, except that the
    /// host judged is the authority of `uri` where it has one: a request
    /// target in absolute form (`POST http://host/mcp`), whose authority
    /// RFC 9112 §3.2.2 puts before `Host`, or HTTP/2's `:authority`.
    pub fn check_request(&self, uri: &http::Uri, headers: &HeaderMap) -> Result<(), GuardError> {
        if self.any {
            return Ok(());
        }
        match uri.authority() {
            Some(authority) => self.check_host(authority.as_str())?,
            None => {
                let host = single(headers, &HOST)
                    .map_err(|()| GuardError::MultipleHosts)?
                    .ok_or(GuardError::MissingHost)?;
                self.check_host(host.to_str().map_err(|_| GuardError::InvalidHost)?)?;
            }
        }

        if let Some(origin) = single(headers, &ORIGIN).map_err(|()| GuardError::MultipleOrigins)? {
            let origin = origin.to_str().map_err(|_| GuardError::InvalidOrigin)?;
            if origin.trim().eq_ignore_ascii_case("null") {
                return Err(GuardError::NullOrigin);
            }
            let normalized = normalize_origin(origin).ok_or(GuardError::InvalidOrigin)?;
            if !self.allowed_origins.contains(&normalized) {
                return Err(GuardError::OriginNotAllowed(echo(origin)));
            }
        }
        Ok(())
    }

    /// Whether `host` (`name[:port]`) is an allowed host.
    fn check_host(&self, host: &str) -> Result<(), GuardError> {
        // A host already in normal form (what clients send) is looked up
        // as it is; normalizing an allowed value changes nothing.
        if !self.allowed_hosts.iter().any(|allowed| allowed == host) {
            let normalized = normalize_host(host).ok_or(GuardError::InvalidHost)?;
            if !self.allowed_hosts.contains(&normalized) {
                return Err(GuardError::HostNotAllowed(echo(host)));
            }
        }
        Ok(())
    }
}

impl OriginPolicy {
    /// The 403 answer to a request the policy refuses, or `None` to let it
    /// through.
    fn refusal(&self, uri: &http::Uri, headers: &HeaderMap) -> Option<Response> {
        let error = self.check_request(uri, headers).err()?;
        tracing::debug!(%error, "refused by the Host/Origin guard");
        Some(forbidden(&error))
    }

    /// What `answer` makes of `request`, or the 403 when the policy
    /// refuses it: the guard of [`Guarded`], and of a service that calls
    /// its inner one without owning it.
    pub(crate) fn guard<B, F, E>(
        &self,
        request: http::Request<B>,
        answer: impl FnOnce(http::Request<B>) -> F,
    ) -> Either<Ready<Result<Response, E>>, F> {
        match self.refusal(request.uri(), request.headers()) {
            None => Either::Right(answer(request)),
            Some(refused) => Either::Left(ready(Ok(refused))),
        }
    }
}

/// The 403 response for a refused request: a JSON-RPC error with a null id.
pub fn forbidden(error: &GuardError) -> Response {
    let error = ErrorObject::new(error_codes::INVALID_REQUEST, format!("Forbidden: {error}"));
    crate::endpoint::reply::error_response(StatusCode::FORBIDDEN, None, &error)
}

/// Axum middleware (use with `from_fn_with_state`) answering 403 to requests the policy refuses.
pub async fn middleware(
    State(policy): State<Arc<OriginPolicy>>,
    request: Request,
    next: Next,
) -> Response {
    match policy.refusal(request.uri(), request.headers()) {
        None => next.run(request).await,
        Some(refused) => refused,
    }
}

/// A tower layer answering 403 to the requests its policy refuses and
/// passing the others on, with no boxing or cloning per request.
#[derive(Debug, Clone)]
pub struct GuardLayer {
    policy: Arc<OriginPolicy>,
}

impl GuardLayer {
    /// A layer enforcing `policy`.
    pub fn new(policy: Arc<OriginPolicy>) -> Self {
        GuardLayer { policy }
    }
}

impl<S> tower::Layer<S> for GuardLayer {
    type Service = Guarded<S>;

    fn layer(&self, inner: S) -> Guarded<S> {
        Guarded {
            inner,
            policy: Arc::clone(&self.policy),
        }
    }
}

/// A service behind a [`GuardLayer`].
#[derive(Debug, Clone)]
pub struct Guarded<S> {
    inner: S,
    policy: Arc<OriginPolicy>,
}

impl<S, B> tower::Service<http::Request<B>> for Guarded<S>
where
    S: tower::Service<http::Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<Response, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let inner = &mut self.inner;
        self.policy.guard(request, |request| inner.call(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    fn check(policy: &OriginPolicy, pairs: &[(&str, &str)]) -> Result<(), GuardError> {
        policy.check(&headers(pairs))
    }

    #[test]
    fn loopback_hosts() {
        let policy = OriginPolicy::loopback(8080);
        for host in [
            "localhost",
            "localhost:8080",
            "LOCALHOST:8080",
            "localhost.:8080",
            "localhost.",
            "127.0.0.1",
            "127.0.0.1:8080",
            "[::1]",
            "[::1]:8080",
        ] {
            assert_eq!(check(&policy, &[("host", host)]), Ok(()), "{host}");
        }
    }

    #[test]
    fn refused_hosts() {
        let policy = OriginPolicy::loopback(8080);
        for host in [
            "evil.example.com",
            "evil.example.com:8080",
            "localhost:9999",
            "127.0.0.1:80",
            "[::1]:9999",
            "[::2]:8080",
            "127.0.0.2:8080",
            "localhost.evil.example.com",
            "0.0.0.0:8080",
        ] {
            assert!(
                matches!(
                    check(&policy, &[("host", host)]),
                    Err(GuardError::HostNotAllowed(_))
                ),
                "{host}"
            );
        }
        for host in [
            "",
            "localhost:",
            "localhost:80a",
            "::1",
            "user@localhost",
            "localhost/x",
            "[::1",
        ] {
            assert_eq!(
                check(&policy, &[("host", host)]),
                Err(GuardError::InvalidHost),
                "{host:?}"
            );
        }
        assert_eq!(check(&policy, &[]), Err(GuardError::MissingHost));
        assert_eq!(
            check(&policy, &[("origin", "http://localhost:8080")]),
            Err(GuardError::MissingHost)
        );
        assert_eq!(
            check(
                &policy,
                &[("host", "localhost"), ("host", "evil.example.com")]
            ),
            Err(GuardError::MultipleHosts)
        );
    }

    #[test]
    fn origins() {
        let policy = OriginPolicy::loopback(8080);
        let host = ("host", "localhost:8080");
        for origin in [
            "http://localhost:8080",
            "https://localhost:8080",
            "http://localhost",
            "HTTP://LocalHost:8080",
            "http://127.0.0.1:8080",
            "https://[::1]:8080",
            "http://[::1]",
        ] {
            assert_eq!(
                check(&policy, &[host, ("origin", origin)]),
                Ok(()),
                "{origin}"
            );
        }
        for origin in [
            "http://evil.example.com",
            "http://localhost:9999",
            "http://localhost.evil.example.com:8080",
            "ftp://localhost:8080",
            "http://[::1]:9999",
        ] {
            assert!(
                matches!(
                    check(&policy, &[host, ("origin", origin)]),
                    Err(GuardError::OriginNotAllowed(_))
                ),
                "{origin}"
            );
        }
        assert_eq!(
            check(&policy, &[host, ("origin", "null")]),
            Err(GuardError::NullOrigin)
        );
        assert_eq!(
            check(&policy, &[host, ("origin", "localhost")]),
            Err(GuardError::InvalidOrigin)
        );
        assert_eq!(
            check(
                &policy,
                &[
                    host,
                    ("origin", "http://localhost:8080"),
                    ("origin", "http://evil.example.com")
                ]
            ),
            Err(GuardError::MultipleOrigins)
        );
        // No Origin (a non-browser client) is fine.
        assert_eq!(check(&policy, &[host]), Ok(()));
    }

    #[test]
    fn custom_and_any() {
        let policy = OriginPolicy::new()
            .allow_host("mcp.Example.com")
            .allow_origin("https://app.example.com");
        assert_eq!(check(&policy, &[("host", "MCP.example.com.")]), Ok(()));
        assert_eq!(
            check(
                &policy,
                &[
                    ("host", "mcp.example.com"),
                    ("origin", "https://app.example.com")
                ]
            ),
            Ok(())
        );
        assert!(check(&policy, &[("host", "mcp.example.com:8443")]).is_err());
        assert!(check(&policy, &[("host", "localhost")]).is_err());
        assert!(
            check(
                &policy,
                &[
                    ("host", "mcp.example.com"),
                    ("origin", "http://app.example.com")
                ]
            )
            .is_err()
        );

        let any = OriginPolicy::any();
        assert!(any.is_any());
        assert_eq!(check(&any, &[]), Ok(()));
        assert_eq!(
            check(&any, &[("host", "evil.example.com"), ("origin", "null")]),
            Ok(())
        );
    }

    #[test]
    fn long_values_are_truncated_in_errors() {
        let policy = OriginPolicy::loopback(1);
        let long = format!("{}.example.com", "a".repeat(500));
        let Err(GuardError::HostNotAllowed(echoed)) = check(&policy, &[("host", &long)]) else {
            panic!("expected HostNotAllowed");
        };
        assert!(echoed.len() < 110);
    }

    #[tokio::test]
    async fn layer_and_middleware_answer_403_json_rpc() {
        use axum::Router;
        use axum::routing::post;

        let policy = Arc::new(OriginPolicy::loopback(3000));
        let routes = || Router::new().route("/mcp", post(|| async { "ok" }));
        let with_layer = routes().layer(GuardLayer::new(Arc::clone(&policy)));
        let with_middleware = routes().layer(axum::middleware::from_fn_with_state(
            Arc::clone(&policy),
            middleware,
        ));
        for app in [with_layer, with_middleware] {
            answers_403_json_rpc(app).await;
        }
    }

    async fn answers_403_json_rpc(app: axum::Router) {
        use tower::ServiceExt;

        let request = |host: &str| {
            http::Request::post("/mcp")
                .header("host", host)
                .body(axum::body::Body::empty())
                .unwrap()
        };
        for host in ["localhost:3000", "LOCALHOST:3000", "127.0.0.1:3000"] {
            let response = app.clone().oneshot(request(host)).await.unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{host}");
        }

        let response = app.oneshot(request("evil.example.com")).await.unwrap();
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            response.headers()[http::header::CONTENT_TYPE],
            "application/json"
        );
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["jsonrpc"], "2.0");
        assert!(json["id"].is_null());
        assert_eq!(json["error"]["code"], -32600);
        let message = json["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("Forbidden: Host"), "{message}");
    }
}
