//! The outbound HTTP client: every request passes the SSRF guard (literal
//! hosts, resolved addresses, each redirect hop), carries the operator's
//! headers only to the API's own origin, has a time limit, and its
//! response body is read up to a size cap. Redirects are followed here
//! rather than by `reqwest`, so that the headers of a hop are decided per
//! hop. Nothing here ever writes a credential into a message: the
//! operator's header values are also blanked out of response bodies.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, LOCATION};
use reqwest::{Method, StatusCode};
use url::Url;

use super::guard::{Guard, GuardedResolver, Refusal, without_credentials};
use super::request::Outbound;

/// The most bytes read and thrown away past the cap to count how many a
/// body had (when it does not say its length).
const MAX_DRAIN: u64 = 8 << 20;

/// What replaces a credential found in a response.
const REDACTED: &str = "[redacted]";

/// How many bytes of a body were not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dropped {
    /// Bytes dropped (counted, or from `Content-Length`).
    pub bytes: u64,
    /// Whether there may have been more than `bytes` (the count stopped).
    pub at_least: bool,
}

/// A response, its body cut at the cap.
#[derive(Debug)]
pub struct Response {
    /// The status.
    pub status: StatusCode,
    /// The `Content-Type`, if any.
    pub content_type: Option<String>,
    /// The body's first bytes, credentials blanked out.
    pub body: Vec<u8>,
    /// What was dropped past the cap.
    pub dropped: Option<Dropped>,
    /// The URL that answered (after redirects).
    pub url: Url,
}

/// The HTTP side of the server: client, guard, base URL, credentials and
/// limits.
pub struct Api {
    client: reqwest::Client,
    guard: Guard,
    /// The URL operations' paths are appended to.
    pub base: Url,
    credentials: HeaderMap,
    secrets: Vec<String>,
    /// The most body bytes kept.
    pub max_response_bytes: usize,
    max_redirects: usize,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("base", &without_credentials(&self.base))
            .field("credentials", &self.credentials.len())
            .finish_non_exhaustive()
    }
}

/// The outbound client alone (also used to fetch the document): no proxy
/// (a proxy would resolve names past the guard), the guarded resolver, no
/// automatic redirects, time limits.
pub fn client(
    guard: &Guard,
    timeout: Duration,
    connect_timeout: Duration,
) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver(guard.clone())))
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .connect_timeout(connect_timeout)
        .user_agent(concat!("mcp-openapi/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Why a request got no response.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The guard refused a hop.
    #[error("{0}")]
    Refused(#[from] Refusal),
    /// The request failed (connection, timeout, protocol).
    #[error("{0}")]
    Failed(String),
}

/// A `reqwest` error with its causes, naming a guard refusal plainly.
fn explain(error: &reqwest::Error) -> SendError {
    let mut cause: Option<&dyn std::error::Error> = Some(error);
    let mut parts = Vec::new();
    while let Some(e) = cause {
        if let Some(refused) = e.downcast_ref::<Refusal>() {
            return SendError::Refused(refused.clone());
        }
        let text = e.to_string();
        if !parts.iter().any(|p: &String| p.contains(&text)) {
            parts.push(text);
        }
        cause = e.source();
    }
    if error.is_timeout() {
        parts.push("timed out".into());
    }
    SendError::Failed(parts.join(": "))
}

impl Api {
    /// The API at `base`, sending `credentials` to it.
    pub fn new(
        client: reqwest::Client,
        guard: Guard,
        base: Url,
        credentials: HeaderMap,
        max_response_bytes: usize,
        max_redirects: usize,
    ) -> Api {
        let mut secrets = Vec::new();
        for value in credentials.values() {
            let Ok(text) = value.to_str() else { continue };
            secrets.push(text.to_owned());
            // `Bearer TOKEN`: the token alone too.
            if let Some((_, token)) = text.split_once(' ') {
                secrets.push(token.trim().to_owned());
            }
        }
        secrets.retain(|s| s.len() >= 4);
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Api {
            client,
            guard,
            base,
            credentials,
            secrets,
            max_response_bytes,
            max_redirects,
        }
    }

    /// `text` with every credential value blanked out.
    pub fn redact(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), REDACTED);
            }
        }
        text
    }

    fn redact_bytes(&self, body: Vec<u8>) -> Vec<u8> {
        match String::from_utf8(body) {
            Ok(text) => self.redact(&text).into_bytes(),
            Err(e) => e.into_bytes(),
        }
    }

    /// Sends `request`, following redirects hop by hop, and reads the
    /// response up to the cap.
    pub async fn send(&self, request: Outbound) -> Result<Response, SendError> {
        let Outbound {
            mut method,
            mut url,
            headers,
            mut body,
        } = request;
        let mut hops: Vec<Url> = Vec::new();
        loop {
            self.guard.check_url(&url)?;
            let mut builder = self
                .client
                .request(method.clone(), url.clone())
                .header(ACCEPT, "application/json, */*;q=0.8")
                .headers(headers.clone());
            if url.origin() == self.base.origin() {
                builder = builder.headers(self.credentials.clone());
            }
            if let Some((bytes, media_type)) = &body {
                builder = builder
                    .header(CONTENT_TYPE, media_type.as_str())
                    .body(bytes.clone());
            }
            let response = builder.send().await.map_err(|e| explain(&e))?;
            let status = response.status();
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|l| l.to_str().ok())
                .map(str::to_owned);
            if status.is_redirection()
                && let Some(location) = location
            {
                let next = self
                    .guard
                    .check_hop(&url, &location, &hops, self.max_redirects)?;
                hops.push(std::mem::replace(&mut url, next));
                let keeps_method = matches!(
                    status,
                    StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
                );
                if !keeps_method && method != Method::HEAD {
                    method = Method::GET;
                    body = None;
                }
                continue;
            }
            return self.read(response, url).await;
        }
    }

    async fn read(&self, mut response: reqwest::Response, url: Url) -> Result<Response, SendError> {
        let status = response.status();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let declared = response.content_length();
        let cap = self.max_response_bytes;
        let mut body = Vec::new();
        let mut dropped: u64 = 0;
        let mut at_least = false;
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) => return Err(explain(&e)),
            };
            let room = cap - body.len();
            if chunk.len() <= room {
                body.extend_from_slice(&chunk);
                continue;
            }
            body.extend_from_slice(&chunk[..room]);
            dropped += (chunk.len() - room) as u64;
            if let Some(total) = declared {
                // The length is known: no need to read the rest.
                dropped = total.saturating_sub(cap as u64).max(dropped);
                break;
            }
            if dropped > MAX_DRAIN {
                at_least = true;
                break;
            }
        }
        let dropped = (dropped > 0).then_some(Dropped {
            bytes: dropped,
            at_least,
        });
        Ok(Response {
            status,
            content_type,
            body: self.redact_bytes(body),
            dropped,
            url,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{AUTHORIZATION, HeaderValue};

    #[test]
    fn credentials_and_their_tokens_are_redacted() {
        let mut credentials = HeaderMap::new();
        credentials.insert(
            AUTHORIZATION,
            HeaderValue::from_static("Bearer s3cr3t-token"),
        );
        credentials.insert("x-key", HeaderValue::from_static("abc"));
        let guard = Guard::default();
        let api = Api::new(
            client(&guard, Duration::from_secs(1), Duration::from_secs(1)).unwrap(),
            guard,
            Url::parse("https://api.example.com").unwrap(),
            credentials,
            100,
            5,
        );
        assert_eq!(
            api.redact("seen: Bearer s3cr3t-token; again s3cr3t-token"),
            "seen: [redacted]; again [redacted]"
        );
        // Too short to blank out without mangling everything.
        assert_eq!(api.redact("abc"), "abc");
        assert!(!format!("{api:?}").contains("s3cr3t"));
    }
}
