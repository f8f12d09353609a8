//! The bearer-token layer: every request must carry a valid access token
//! in the `Authorization` header; refusals carry the `WWW-Authenticate`
//! challenge that sends the client to the protected resource metadata.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{HeaderValue, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcp_core::BoxFuture;
use mcp_http::{MessageExtensions, ToolScopeCheck, ToolScopeGuard};

use super::config::ResourceServerConfig;
use super::principal::TokenError;

/// Wraps an MCP router so that every request needs a bearer token.
#[derive(Clone, Debug)]
pub struct BearerAuthLayer {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    config: ResourceServerConfig,
    /// The `resource_metadata` URL, quoted for a challenge.
    metadata_url: String,
    /// The other endpoints' `resource_metadata` URLs, quoted, by path.
    endpoint_metadata_urls: Vec<(String, String)>,
}

impl BearerAuthLayer {
    /// A layer enforcing `config`.
    pub fn new(config: ResourceServerConfig) -> Self {
        let metadata_url = quoted(&config.resource_metadata_url());
        let endpoint_metadata_urls = config
            .endpoint_metadata_urls()
            .into_iter()
            .map(|(path, url)| (path, quoted(&url)))
            .collect();
        BearerAuthLayer {
            shared: Arc::new(Shared {
                config,
                metadata_url,
                endpoint_metadata_urls,
            }),
        }
    }
}

impl<S> tower::Layer<S> for BearerAuthLayer {
    type Service = BearerAuth<S>;

    fn layer(&self, inner: S) -> Self::Service {
        BearerAuth {
            inner,
            shared: Arc::clone(&self.shared),
        }
    }
}

/// The service [`BearerAuthLayer`] wraps around a router.
#[derive(Clone, Debug)]
pub struct BearerAuth<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S> tower::Service<Request<Body>> for BearerAuth<S>
where
    S: tower::Service<Request<Body>, Response = Response, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<Body>) -> Self::Future {
        // The service that was polled ready handles this request; a fresh
        // clone takes its place.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let metadata = shared.metadata_for(request.uri().path()).to_owned();
            let token = match bearer_token(&request) {
                Ok(Some(token)) => token,
                Ok(None) => return Ok(shared.unauthorized(&metadata, None)),
                Err(why) => return Ok(shared.bad_request(&metadata, why)),
            };
            let principal = match shared.config.validator.validate(&token).await {
                Ok(principal) => principal,
                Err(TokenError::Unavailable(why)) => {
                    tracing::warn!("token validation unavailable: {why}");
                    return Ok(unavailable());
                }
                Err(error) => {
                    tracing::debug!("token refused: {error}");
                    return Ok(shared.unauthorized(&metadata, Some(&error)));
                }
            };
            if !principal.has_scopes(&shared.config.required_scopes) {
                let response = shared.insufficient_scope(&metadata, &shared.config.required_scopes);
                return Ok(response);
            }
            tracing::debug!(subject = ?principal.subject, "bearer token accepted");
            let extensions = request.extensions_mut();
            let message_extensions = extensions
                .get::<MessageExtensions>()
                .cloned()
                .unwrap_or_default();
            let owner = principal.owner();
            message_extensions.0.insert(principal.clone());
            message_extensions.0.insert(owner.clone());
            extensions.insert(message_extensions);
            extensions.insert(owner);
            extensions.insert(ToolScopeGuard(Arc::new(ScopeChallenge {
                shared: Arc::clone(&shared),
                granted: principal.scopes.clone(),
                metadata,
            })));
            extensions.insert(principal);
            inner.call(request).await
        })
    }
}

/// The bearer token of a request: `Ok(None)` when there is none, `Err`
/// when the request is malformed (a token in the query string, several
/// `Authorization` headers).
fn bearer_token(request: &Request<Body>) -> Result<Option<String>, &'static str> {
    if let Some(query) = request.uri().query()
        && url::form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == "access_token")
    {
        return Err("access tokens are accepted only in the Authorization header");
    }
    let mut values = request.headers().get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err("more than one Authorization header");
    }
    let Ok(value) = value.to_str() else {
        return Ok(None);
    };
    let Some((scheme, token)) = value.trim().split_once(' ') else {
        return Ok(None);
    };
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Ok(None);
    }
    Ok(Some(token.to_owned()))
}

impl Shared {
    /// The quoted `resource_metadata` URL for a request to `path`: its
    /// endpoint's, else the resource's.
    fn metadata_for(&self, path: &str) -> &str {
        let path = path.trim_end_matches('/');
        self.endpoint_metadata_urls
            .iter()
            .find(|(endpoint, _)| endpoint == path)
            .map_or(&self.metadata_url, |(_, url)| url)
    }

    /// `401`: no token (`error` is `None`) or a token that was refused.
    fn unauthorized(&self, metadata: &str, error: Option<&TokenError>) -> Response {
        let mut challenge = format!("Bearer resource_metadata={metadata}");
        let scopes = self.config.challenge_scopes();
        if !scopes.is_empty() {
            challenge.push_str(&format!(", scope={}", quoted(&scopes.join(" "))));
        }
        let body = match error {
            Some(error) => {
                let description = error.to_string();
                challenge.push_str(&format!(
                    ", error=\"invalid_token\", error_description={}",
                    quoted(&description)
                ));
                error_body("invalid_token", &description)
            }
            None => error_body("unauthorized", "a bearer access token is required"),
        };
        challenged(StatusCode::UNAUTHORIZED, challenge, body)
    }

    /// `400 invalid_request`.
    fn bad_request(&self, metadata: &str, why: &str) -> Response {
        let challenge = format!(
            "Bearer resource_metadata={metadata}, error=\"invalid_request\", error_description={}",
            quoted(why)
        );
        challenged(
            StatusCode::BAD_REQUEST,
            challenge,
            error_body("invalid_request", why),
        )
    }

    /// `403 insufficient_scope`: the step-up challenge naming `needed`
    /// (with the scopes every request needs).
    fn insufficient_scope(&self, metadata: &str, needed: &[String]) -> Response {
        let mut scopes: Vec<&str> = self
            .config
            .required_scopes
            .iter()
            .map(String::as_str)
            .collect();
        for scope in needed {
            if !scopes.contains(&scope.as_str()) {
                scopes.push(scope);
            }
        }
        let scope = scopes.join(" ");
        let description = format!("this request needs scope {scope}");
        let challenge = format!(
            "Bearer error=\"insufficient_scope\", scope={}, resource_metadata={metadata}, error_description={}",
            quoted(&scope),
            quoted(&description)
        );
        challenged(
            StatusCode::FORBIDDEN,
            challenge,
            error_body("insufficient_scope", &description),
        )
    }
}

/// Refuses tool calls whose required scopes were not granted, with the
/// step-up challenge.
struct ScopeChallenge {
    shared: Arc<Shared>,
    granted: Vec<String>,
    /// The quoted `resource_metadata` URL of the request's endpoint.
    metadata: String,
}

impl ToolScopeCheck for ScopeChallenge {
    fn check(&self, tool: &str, required: &[String]) -> Option<Response> {
        let missing = required.iter().any(|r| !self.granted.contains(r));
        if !missing {
            return None;
        }
        tracing::debug!(tool, "tool needs more scope than the token grants");
        Some(self.shared.insufficient_scope(&self.metadata, required))
    }
}

fn unavailable() -> Response {
    let mut response = (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::CONTENT_TYPE, "application/json")],
        error_body(
            "temporarily_unavailable",
            "the access token cannot be checked now",
        ),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

fn challenged(status: StatusCode, challenge: String, body: String) -> Response {
    let mut response = (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

fn error_body(error: &str, description: &str) -> String {
    serde_json::json!({ "error": error, "error_description": description }).to_string()
}

/// A quoted-string for a challenge parameter, keeping only the characters
/// RFC 6750 allows there (no quote, no backslash, printable ASCII).
fn quoted(value: &str) -> String {
    let clean: String = value
        .chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c == ' ' || c.is_ascii_graphic() => c,
            _ => '?',
        })
        .collect();
    format!("\"{clean}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(uri: &str, auth: &[&str]) -> Request<Body> {
        let mut builder = Request::builder().uri(uri);
        for a in auth {
            builder = builder.header(header::AUTHORIZATION, *a);
        }
        builder.body(Body::empty()).expect("request")
    }

    #[test]
    fn tokens_come_only_from_one_authorization_header() {
        assert_eq!(
            bearer_token(&request("/mcp", &["Bearer abc"])),
            Ok(Some("abc".into()))
        );
        assert_eq!(
            bearer_token(&request("/mcp", &["bearer  abc "])),
            Ok(Some("abc".into()))
        );
        assert_eq!(bearer_token(&request("/mcp", &["Basic abc"])), Ok(None));
        assert_eq!(bearer_token(&request("/mcp", &[])), Ok(None));
        assert!(bearer_token(&request("/mcp?access_token=abc", &[])).is_err());
        assert!(bearer_token(&request("/mcp", &["Bearer a", "Bearer b"])).is_err());
    }

    #[test]
    fn quoted_strings_stay_legal() {
        assert_eq!(quoted("a \"b\"\n"), "\"a 'b'?\"");
    }
}
