//! Credentials for the HTTP client: an [`Authorizer`] supplies the
//! `Authorization` header of every request and, when the server refuses
//! one (401, or 403 `insufficient_scope`), gets new credentials so the
//! request can be sent again. The OAuth flow itself lives elsewhere
//! (`mcp-auth`); this is only the hook.

use std::future::Future;
use std::pin::Pin;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, WWW_AUTHENTICATE};
use reqwest::{Method, StatusCode};

/// A boxed, sendable future.
pub type AuthFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How often one request is sent again after a challenge (a step-up to
/// more scope can follow a first authorization).
const MAX_CHALLENGES: usize = 3;

/// What the server said when it refused a request.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Challenge {
    /// 401 or 403.
    pub status: StatusCode,
    /// The `WWW-Authenticate` header, if any.
    pub www_authenticate: Option<String>,
    /// The URL of the refused request.
    pub url: String,
    /// All the response's headers (`DPoP-Nonce`, say).
    pub headers: HeaderMap,
}

impl Challenge {
    /// Whether this is a 403 asking for more scope (step-up).
    pub fn is_insufficient_scope(&self) -> bool {
        self.status == StatusCode::FORBIDDEN
            && self
                .www_authenticate
                .as_deref()
                .is_some_and(|h| h.contains("insufficient_scope"))
    }
}

/// Supplies credentials to the HTTP client transport.
pub trait Authorizer: Send + Sync + 'static {
    /// The headers that authorize a request of `method` to `url`
    /// (`Authorization`, and for proof-of-possession schemes the proof);
    /// none when there are no credentials yet.
    fn credentials<'a>(
        &'a self,
        method: &'a Method,
        url: &'a str,
    ) -> AuthFuture<'a, Vec<(HeaderName, HeaderValue)>>;

    /// The server refused a request with `challenge`: obtain credentials
    /// that answer it. `true` when the request should be sent again.
    fn challenged(&self, challenge: Challenge) -> AuthFuture<'_, bool>;
}

/// Whether `response` is a challenge an authorizer may answer.
pub(crate) fn challenge_of(response: &reqwest::Response) -> Option<Challenge> {
    let status = response.status();
    let www_authenticate = response
        .headers()
        .get(WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let challenge = Challenge {
        status,
        www_authenticate,
        url: response.url().to_string(),
        headers: response.headers().clone(),
    };
    (status == StatusCode::UNAUTHORIZED || challenge.is_insufficient_scope()).then_some(challenge)
}

/// Sends the request `build` makes, with the authorizer's credentials;
/// when the server challenges them and the authorizer gets new ones, sends
/// it again (a few times at most).
pub(crate) async fn execute(
    authorizer: Option<&dyn Authorizer>,
    mut build: impl FnMut() -> reqwest::RequestBuilder,
) -> Result<reqwest::Response, reqwest::Error> {
    let Some(authorizer) = authorizer else {
        return build().send().await;
    };
    let mut challenges = 0;
    loop {
        let (client, request) = build().build_split();
        let mut request = request?;
        let credentials = authorizer
            .credentials(request.method(), request.url().as_str())
            .await;
        for (name, value) in credentials {
            request.headers_mut().insert(name, value);
        }
        let response = client.execute(request).await?;
        let Some(challenge) = challenge_of(&response) else {
            return Ok(response);
        };
        if challenges >= MAX_CHALLENGES {
            return Ok(response);
        }
        challenges += 1;
        tracing::debug!(status = %challenge.status, "authorization challenge");
        if !authorizer.challenged(challenge).await {
            return Ok(response);
        }
    }
}
