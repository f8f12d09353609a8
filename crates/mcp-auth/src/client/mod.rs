//! The client side of MCP authorization: when an MCP server over HTTP
//! answers 401, find its authorization server (protected resource
//! metadata, then authorization server metadata), register (pre-registered,
//! client ID metadata document, or dynamic registration), obtain tokens
//! (authorization code with PKCE through a [`UserAgent`], or client
//! credentials), keep them in a [`TokenStore`], refresh them before they
//! expire, and step up to more scope on 403 `insufficient_scope`.
//!
//! [`OAuthClient`] is an [`mcp_http::client::Authorizer`]: give it to the
//! HTTP client transport and the flow runs when the server demands it.

mod answer;
mod challenge;
mod challenges;
mod discovery;
mod dpop;
mod flow;
mod grants;
mod pkce;
mod registration;
mod store;
mod user_agent;

use std::sync::Arc;
use std::time::Duration;

use mcp_http::client::{AuthFuture, Authorizer, Challenge};
use reqwest::header::HeaderValue;
use serde::Deserialize;
use url::Url;

pub use challenge::BearerChallenge;
pub use discovery::{
    AuthServerMetadata, ProtectedResourceMetadata, auth_server_metadata_urls, discover_auth_server,
    discover_resource, resource_metadata_urls,
};
use dpop::DpopKey;
pub use store::{Credentials, FileTokenStore, MemoryTokenStore, Registration, TokenStore, Tokens};
pub use user_agent::{Callback, HeadlessUserAgent, LoopbackUserAgent, UserAgent, UserAgentFuture};

/// Why authorization failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// An HTTP request failed.
    #[error("{0}")]
    Http(String),
    /// The metadata could not be found or does not fit.
    #[error("discovery: {0}")]
    Discovery(String),
    /// The client could not register.
    #[error("registration: {0}")]
    Registration(String),
    /// The authorization step failed or was refused.
    #[error("authorization: {0}")]
    Authorization(String),
    /// The token endpoint refused.
    #[error("token: {0}")]
    Token(String),
    /// The token store failed.
    #[error("token store: {0}")]
    Store(String),
}

/// How the client obtains tokens.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Grant {
    /// Authorization code with PKCE, a user agent visiting the
    /// authorization URL.
    #[default]
    AuthorizationCode,
    /// Client credentials (a machine acting for itself; needs a
    /// pre-registered confidential client).
    ClientCredentials,
    /// A JWT the workload already holds, as an authorization grant
    /// (RFC 7523 `jwt-bearer`; workload identity federation).
    JwtBearer {
        /// The assertion.
        assertion: String,
    },
    /// Enterprise-managed authorization: the identity provider's ID token
    /// is exchanged there for an identity assertion (ID-JAG, RFC 8693),
    /// which the authorization server takes as a `jwt-bearer` grant.
    IdentityAssertion {
        /// The identity provider's token endpoint.
        idp_token_endpoint: String,
        /// The user's ID token from the identity provider.
        id_token: String,
        /// This client's id at the identity provider, if it has one.
        idp_client_id: Option<String>,
    },
}

/// The private key of a client that authenticates with `private_key_jwt`
/// (RFC 7523).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientKey {
    /// The key, PKCS#8 PEM.
    pub pem: String,
    /// `ES256` or `RS256`.
    pub algorithm: String,
}

impl ClientKey {
    /// A key in PKCS#8 PEM for `algorithm`.
    pub fn new(pem: impl Into<String>, algorithm: impl Into<String>) -> Self {
        ClientKey {
            pem: pem.into(),
            algorithm: algorithm.into(),
        }
    }
}

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const CLIENT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// Settings of an [`OAuthClient`].
#[derive(Clone)]
#[non_exhaustive]
pub struct OAuthClientConfig {
    /// The name shown to users and sent at registration.
    pub client_name: String,
    /// Who visits the authorization URL.
    pub user_agent: Arc<dyn UserAgent>,
    /// Where credentials are kept between runs.
    pub store: Arc<dyn TokenStore>,
    /// A registration made beforehand, used instead of registering.
    pub registration: Option<Registration>,
    /// This client's metadata document URL, used as its `client_id` where
    /// the authorization server accepts such documents.
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for instead of the ones the specification's strategy
    /// picks.
    pub scopes: Option<Vec<String>>,
    /// How tokens are obtained.
    pub grant: Grant,
    /// The key for `private_key_jwt` client authentication.
    pub client_key: Option<ClientKey>,
    /// How many 403 `insufficient_scope` step-ups in a row are tried.
    pub max_step_ups: usize,
    /// Tokens this close to expiring are refreshed first.
    pub refresh_margin: Duration,
    /// Headers of the caller's own (an API key, a gateway's routing
    /// header) sent with the requests this client makes to the MCP
    /// server itself, like the one that asks whether it wants a sign-in.
    pub server_headers: Vec<(reqwest::header::HeaderName, reqwest::header::HeaderValue)>,
}

impl std::fmt::Debug for OAuthClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClientConfig")
            .field("client_name", &self.client_name)
            .field("grant", &self.grant)
            .field(
                "registration",
                &self.registration.as_ref().map(|r| &r.client_id),
            )
            .finish_non_exhaustive()
    }
}

impl OAuthClientConfig {
    /// Authorization code with PKCE through `user_agent`, tokens kept in
    /// memory, dynamic registration where nothing else is configured.
    pub fn new(client_name: impl Into<String>, user_agent: Arc<dyn UserAgent>) -> Self {
        OAuthClientConfig {
            client_name: client_name.into(),
            user_agent,
            store: Arc::new(MemoryTokenStore::default()),
            registration: None,
            client_metadata_url: None,
            scopes: None,
            grant: Grant::AuthorizationCode,
            client_key: None,
            max_step_ups: 2,
            refresh_margin: Duration::from_secs(30),
            server_headers: Vec::new(),
        }
    }

    /// Sends `name: value` with this client's own requests to the MCP
    /// server.
    pub fn server_header(
        mut self,
        name: reqwest::header::HeaderName,
        value: reqwest::header::HeaderValue,
    ) -> Self {
        self.server_headers.push((name, value));
        self
    }

    /// Keeps credentials in `store`.
    pub fn store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.store = store;
        self
    }

    /// Uses a registration made beforehand.
    pub fn registration(mut self, registration: Registration) -> Self {
        self.registration = Some(registration);
        self
    }

    /// Presents this client metadata document URL as the client id.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Asks for exactly these scopes.
    pub fn scopes(mut self, scopes: Vec<String>) -> Self {
        self.scopes = Some(scopes);
        self
    }

    /// Obtains tokens with `grant`.
    pub fn grant(mut self, grant: Grant) -> Self {
        self.grant = grant;
        self
    }

    /// Authenticates with `private_key_jwt`, signing with `key`.
    pub fn client_key(mut self, key: ClientKey) -> Self {
        self.client_key = Some(key);
        self
    }
}

/// The scope that asks for a refresh token.
const OFFLINE_ACCESS: &str = "offline_access";

/// What the client learned and holds for its server.
#[derive(Default)]
struct Session {
    /// The scopes of the latest authorization request.
    requested: Vec<String>,
    /// Whether tokens kept from an earlier run were tried.
    tried_store: bool,
    resource: Option<ProtectedResourceMetadata>,
    server: Option<AuthServerMetadata>,
    issuer: Option<String>,
    credentials: Credentials,
    step_ups: usize,
}

/// The DPoP nonces the servers asked for.
#[derive(Default)]
struct Nonces {
    /// The authorization server's.
    server: Option<String>,
    /// The resource server's.
    resource: Option<String>,
}

/// Obtains and renews access tokens for one MCP server.
pub struct OAuthClient {
    server_url: Url,
    config: OAuthClientConfig,
    http: reqwest::Client,
    session: tokio::sync::Mutex<Session>,
    dpop: std::sync::Mutex<Option<Arc<DpopKey>>>,
    nonces: std::sync::Mutex<Nonces>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("server_url", &self.server_url.as_str())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The token endpoint's success answer.
#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

/// The dynamic registration answer.
#[derive(Deserialize)]
struct RegistrationResponse {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

impl OAuthClient {
    /// A client for the MCP server at `server_url`. A WebSocket URL
    /// (`ws://`, `wss://`) stands for the HTTP URL of its upgrade request
    /// (`http://`, `https://`), the resource it authorizes.
    pub fn new(server_url: &str, config: OAuthClientConfig) -> Result<Self, OAuthError> {
        let mut server_url = Url::parse(server_url)
            .map_err(|e| OAuthError::Discovery(format!("{server_url:?}: {e}")))?;
        let http_scheme = match server_url.scheme() {
            "ws" => Some("http"),
            "wss" => Some("https"),
            _ => None,
        };
        if let Some(scheme) = http_scheme {
            let text = format!(
                "{scheme}{}",
                &server_url.as_str()[server_url.scheme().len()..]
            );
            server_url =
                Url::parse(&text).map_err(|e| OAuthError::Discovery(format!("{text:?}: {e}")))?;
        }
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| OAuthError::Http(e.to_string()))?;
        Ok(OAuthClient {
            server_url,
            config,
            http,
            session: tokio::sync::Mutex::new(Session::default()),
            dpop: std::sync::Mutex::new(None),
            nonces: std::sync::Mutex::new(Nonces::default()),
        })
    }

    /// The tokens held now, if any.
    pub async fn tokens(&self) -> Option<Tokens> {
        self.session.lock().await.credentials.tokens.clone()
    }

    /// Runs the whole flow now (without waiting for a 401).
    pub async fn authorize(&self, scopes: Option<Vec<String>>) -> Result<(), OAuthError> {
        let mut session = self.session.lock().await;
        self.run_flow(&mut session, &BearerChallenge::default(), scopes)
            .await
    }
}

/// A refused request, as the authorizer sees it.
struct Refusal<'a> {
    /// A 403 asking for more scope (step-up).
    insufficient_scope: bool,
    /// The `WWW-Authenticate` header, if any.
    www_authenticate: Option<&'a str>,
    /// All the response's headers.
    headers: &'a reqwest::header::HeaderMap,
}

/// The protected resource's identifier must be the server the client
/// talks to (same origin, and its path a prefix of the server's path).
fn check_resource(server: &Url, resource: &str) -> Result<(), OAuthError> {
    let refuse = || {
        OAuthError::Discovery(format!(
            "the protected resource metadata is for {resource:?}, not {server}"
        ))
    };
    let resource_url = Url::parse(resource).map_err(|_| refuse())?;
    if resource_url.origin() != server.origin() {
        return Err(refuse());
    }
    let prefix = resource_url.path().trim_end_matches('/');
    let path = server.path();
    let within = path == prefix
        || path.trim_end_matches('/') == prefix
        || path.starts_with(&format!("{prefix}/"));
    if within { Ok(()) } else { Err(refuse()) }
}

/// RFC 9207: an `iss` in the redirect must name the issuer exactly; a
/// server that promises `iss` must send it.
fn check_iss(server: &AuthServerMetadata, iss: Option<&str>) -> Result<(), OAuthError> {
    match iss {
        Some(iss) if iss == server.issuer => Ok(()),
        Some(iss) => Err(OAuthError::Authorization(format!(
            "the redirect comes from issuer {iss:?}, not {:?}",
            server.issuer
        ))),
        None if server.authorization_response_iss_parameter_supported == Some(true) => Err(
            OAuthError::Authorization("the authorization server promised iss but sent none".into()),
        ),
        None => Ok(()),
    }
}

impl Authorizer for OAuthClient {
    fn credentials<'a>(
        &'a self,
        method: &'a reqwest::Method,
        url: &'a str,
    ) -> AuthFuture<'a, Vec<(reqwest::header::HeaderName, HeaderValue)>> {
        Box::pin(self.request_credentials(method, url))
    }

    fn challenged(&self, challenge: Challenge) -> AuthFuture<'_, bool> {
        Box::pin(self.answer_challenge(challenge))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_must_be_this_server() {
        let server = Url::parse("https://mcp.example.com/mcp").unwrap();
        assert!(check_resource(&server, "https://mcp.example.com/mcp").is_ok());
        assert!(check_resource(&server, "https://mcp.example.com").is_ok());
        assert!(check_resource(&server, "https://mcp.example.com/").is_ok());
        assert!(check_resource(&server, "https://other.example.com/mcp").is_err());
        assert!(check_resource(&server, "https://mcp.example.com/other").is_err());
        assert!(check_resource(&server, "https://mcp.example.com/mc").is_err());
    }

    #[test]
    fn iss_must_match_exactly() {
        let mut server = AuthServerMetadata {
            issuer: "https://auth.example.com".into(),
            ..Default::default()
        };
        assert!(check_iss(&server, None).is_ok());
        assert!(check_iss(&server, Some("https://auth.example.com")).is_ok());
        assert!(check_iss(&server, Some("https://auth.example.com/")).is_err());
        assert!(check_iss(&server, Some("https://evil.example.com")).is_err());
        server.authorization_response_iss_parameter_supported = Some(true);
        assert!(check_iss(&server, None).is_err());
    }
}
