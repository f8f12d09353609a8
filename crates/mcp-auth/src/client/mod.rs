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

mod challenge;
mod discovery;
mod dpop;
mod pkce;
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

use crate::common::now_secs;

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

    /// Discovery, registration and a grant; the tokens end up in the
    /// session and the store.
    async fn run_flow(
        &self,
        session: &mut Session,
        challenge: &BearerChallenge,
        scopes: Option<Vec<String>>,
    ) -> Result<(), OAuthError> {
        self.discover(session, challenge).await?;
        let issuer = session.issuer.clone().unwrap_or_default();
        let server = session.server.clone().unwrap_or_default();
        if session.credentials.registration.is_none() {
            let stored = self.config.store.load(&issuer)?;
            session.credentials = stored;
        }
        if session.credentials.registration.is_none() {
            let registration = self.register(&server).await?;
            session.credentials.registration = Some(registration);
            self.config.store.save(&issuer, &session.credentials)?;
        } else if self.registered_elsewhere(session) {
            // Registered for another redirect URI (an earlier run's
            // listener on another port): register again for this one,
            // keeping the old registration if that fails.
            match self.register(&server).await {
                Ok(registration) => {
                    tracing::debug!("registered again for a new redirect URI");
                    session.credentials.registration = Some(registration);
                    self.config.store.save(&issuer, &session.credentials)?;
                }
                Err(e) => tracing::warn!("could not register for a new redirect URI: {e}"),
            }
        }
        // The specification's strategy: the challenge's scope, else the
        // resource's scopes_supported, else none; plus offline_access where
        // the authorization server offers it (a refresh token).
        let mut scopes = self
            .config
            .scopes
            .clone()
            .or(scopes)
            .or_else(|| (!challenge.scopes().is_empty()).then(|| challenge.scopes()))
            .or_else(|| {
                session
                    .resource
                    .as_ref()
                    .map(|r| r.scopes_supported.clone())
                    .filter(|scopes| !scopes.is_empty())
            })
            .unwrap_or_default();
        let offers_offline = server
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|s| s == OFFLINE_ACCESS));
        if self.config.grant == Grant::AuthorizationCode
            && offers_offline
            && !scopes.iter().any(|s| s == OFFLINE_ACCESS)
        {
            scopes.push(OFFLINE_ACCESS.to_owned());
        }
        session.requested = scopes.clone();
        let resource = self.resource_parameter(session);
        let tokens = match &self.config.grant {
            Grant::AuthorizationCode => {
                self.authorization_code(session, &server, &scopes, resource.as_deref())
                    .await?
            }
            Grant::ClientCredentials => {
                let mut form = vec![("grant_type", "client_credentials".to_owned())];
                if !scopes.is_empty() {
                    form.push(("scope", scopes.join(" ")));
                }
                if let Some(resource) = &resource {
                    form.push(("resource", resource.clone()));
                }
                self.token_request(session, &server, form).await?
            }
            Grant::JwtBearer { assertion } => {
                let mut form = vec![
                    ("grant_type", JWT_BEARER.to_owned()),
                    ("assertion", assertion.clone()),
                ];
                if let Some(resource) = &resource {
                    form.push(("resource", resource.clone()));
                }
                self.token_request(session, &server, form).await?
            }
            Grant::IdentityAssertion {
                idp_token_endpoint,
                id_token,
                idp_client_id,
            } => {
                let assertion = self
                    .identity_assertion(
                        idp_token_endpoint,
                        id_token,
                        idp_client_id.as_deref(),
                        &issuer,
                        resource.as_deref(),
                        &scopes,
                    )
                    .await?;
                let form = vec![
                    ("grant_type", JWT_BEARER.to_owned()),
                    ("assertion", assertion),
                ];
                self.token_request(session, &server, form).await?
            }
        };
        session.credentials.tokens = Some(tokens);
        self.config.store.save(&issuer, &session.credentials)?;
        Ok(())
    }

    /// Whether the registration held was made for a redirect URI other
    /// than the user agent's (only dynamic registrations for the
    /// authorization code grant are made again).
    fn registered_elsewhere(&self, session: &Session) -> bool {
        let Some(registration) = &session.credentials.registration else {
            return false;
        };
        self.config.registration.is_none()
            && self.config.grant == Grant::AuthorizationCode
            && Some(&registration.client_id) != self.config.client_metadata_url.as_ref()
            && !registration.fits_redirect_uri(&self.config.user_agent.redirect_uri())
    }

    /// The `resource` parameter: the protected resource metadata's
    /// identifier verbatim, else the server URL.
    fn resource_parameter(&self, session: &Session) -> Option<String> {
        match &session.resource {
            Some(prm) => Some(prm.resource.clone()),
            None => Some(self.server_url.to_string()),
        }
    }

    /// Finds the protected resource and authorization server metadata.
    async fn discover(
        &self,
        session: &mut Session,
        challenge: &BearerChallenge,
    ) -> Result<(), OAuthError> {
        let resource = discover_resource(
            &self.http,
            &self.server_url,
            challenge.resource_metadata.as_deref(),
        )
        .await?;
        let (issuer, server) = match &resource {
            Some(prm) => {
                check_resource(&self.server_url, &prm.resource)?;
                let issuer = prm.authorization_servers.first().cloned().ok_or_else(|| {
                    OAuthError::Discovery("the resource names no authorization server".into())
                })?;
                let server = match discover_auth_server(&self.http, &issuer).await? {
                    Some(found) => found,
                    None => {
                        let base = Url::parse(&issuer)
                            .map_err(|e| OAuthError::Discovery(format!("{issuer:?}: {e}")))?;
                        AuthServerMetadata::default_endpoints(&base)
                    }
                };
                (issuer, server)
            }
            // 2025-03-26: the MCP server's origin is the authorization
            // server, with metadata or the default endpoints.
            None => {
                let base = discovery::origin(&self.server_url);
                let server = match discover_auth_server(&self.http, &base).await? {
                    Some(found) => found,
                    None => AuthServerMetadata::default_endpoints(&self.server_url),
                };
                (base, server)
            }
        };
        if session.issuer.as_deref().is_some_and(|old| old != issuer) {
            // The resource moved to another authorization server.
            session.credentials = Credentials::default();
        }
        session.resource = resource;
        session.issuer = Some(issuer);
        session.server = Some(server);
        Ok(())
    }

    /// Registers: a registration given beforehand, a client metadata
    /// document, or dynamic registration, in that order.
    async fn register(&self, server: &AuthServerMetadata) -> Result<Registration, OAuthError> {
        if let Some(registration) = &self.config.registration {
            return Ok(registration.clone());
        }
        if let Some(url) = &self.config.client_metadata_url
            && server.client_id_metadata_document_supported == Some(true)
        {
            return Ok(Registration::new(url.clone(), None, "none"));
        }
        let Some(endpoint) = &server.registration_endpoint else {
            return Err(OAuthError::Registration(
                "the authorization server offers no registration and no client is configured"
                    .into(),
            ));
        };
        let grant_types = match self.config.grant {
            Grant::AuthorizationCode => vec!["authorization_code", "refresh_token"],
            Grant::ClientCredentials => vec!["client_credentials"],
            Grant::JwtBearer { .. } | Grant::IdentityAssertion { .. } => vec![JWT_BEARER],
        };
        let redirect_uri = self.config.user_agent.redirect_uri();
        let body = serde_json::json!({
            "client_name": self.config.client_name,
            "redirect_uris": [&redirect_uri],
            "grant_types": grant_types,
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": "native",
        });
        let response = self
            .http
            .post(endpoint)
            .json(&body)
            .send()
            .await
            .map_err(|e| OAuthError::Http(format!("POST {endpoint}: {e}")))?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            return Err(OAuthError::Registration(format!("HTTP {status}: {text}")));
        }
        let registered: RegistrationResponse = response
            .json()
            .await
            .map_err(|e| OAuthError::Registration(e.to_string()))?;
        let method = registered.token_endpoint_auth_method.unwrap_or_else(|| {
            if registered.client_secret.is_some() {
                "client_secret_basic".to_owned()
            } else {
                "none".to_owned()
            }
        });
        let redirect_uris = match grant_types.contains(&"authorization_code") {
            true => vec![redirect_uri],
            false => Vec::new(),
        };
        Ok(
            Registration::new(registered.client_id, registered.client_secret, method)
                .with_redirect_uris(redirect_uris),
        )
    }

    /// Authorization code with PKCE: the user agent visits the
    /// authorization URL; the code becomes tokens.
    async fn authorization_code(
        &self,
        session: &Session,
        server: &AuthServerMetadata,
        scopes: &[String],
        resource: Option<&str>,
    ) -> Result<Tokens, OAuthError> {
        let endpoint = server
            .authorization_endpoint
            .as_deref()
            .ok_or_else(|| OAuthError::Discovery("no authorization endpoint".into()))?;
        let client_id = session
            .credentials
            .registration
            .as_ref()
            .map(|r| r.client_id.clone())
            .unwrap_or_default();
        let pkce = pkce::Pkce::new();
        let state = pkce::random_token();
        let redirect_uri = self.config.user_agent.redirect_uri();
        let mut url = Url::parse(endpoint)
            .map_err(|e| OAuthError::Discovery(format!("authorization endpoint: {e}")))?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state);
            if !scopes.is_empty() {
                query.append_pair("scope", &scopes.join(" "));
            }
            if let Some(resource) = resource {
                query.append_pair("resource", resource);
            }
        }
        let callback = self.config.user_agent.authorize(url).await?;
        if let Some(error) = callback.get("error") {
            let description = callback
                .get("error_description")
                .cloned()
                .unwrap_or_default();
            return Err(OAuthError::Authorization(format!("{error} {description}")));
        }
        if callback.get("state") != Some(&state) {
            return Err(OAuthError::Authorization("the state does not match".into()));
        }
        check_iss(server, callback.get("iss").map(String::as_str))?;
        let code = callback
            .get("code")
            .cloned()
            .ok_or_else(|| OAuthError::Authorization("no code in the redirect".into()))?;
        let mut form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", pkce.verifier),
        ];
        if let Some(resource) = resource {
            form.push(("resource", resource.to_owned()));
        }
        self.token_request(session, server, form).await
    }

    /// Exchanges the identity provider's ID token there for an identity
    /// assertion (ID-JAG) addressed to `issuer` for `resource` (RFC 8693).
    async fn identity_assertion(
        &self,
        endpoint: &str,
        id_token: &str,
        idp_client_id: Option<&str>,
        issuer: &str,
        resource: Option<&str>,
        scopes: &[String],
    ) -> Result<String, OAuthError> {
        let mut form = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange".to_owned(),
            ),
            ("subject_token", id_token.to_owned()),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token".to_owned(),
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag".to_owned(),
            ),
            ("audience", issuer.to_owned()),
        ];
        if let Some(resource) = resource {
            form.push(("resource", resource.to_owned()));
        }
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        if let Some(client_id) = idp_client_id {
            form.push(("client_id", client_id.to_owned()));
        }
        let response = self
            .http
            .post(endpoint)
            .form(&form)
            .send()
            .await
            .map_err(|e| OAuthError::Http(format!("POST {endpoint}: {e}")))?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            return Err(OAuthError::Token(format!(
                "identity provider: HTTP {status}: {text}"
            )));
        }
        let answer: TokenResponse = response
            .json()
            .await
            .map_err(|e| OAuthError::Token(format!("identity provider: {e}")))?;
        Ok(answer.access_token)
    }

    /// A signed client assertion (RFC 7523) for `private_key_jwt`.
    fn client_assertion(&self, client_id: &str, audience: &str) -> Result<String, OAuthError> {
        let key =
            self.config.client_key.as_ref().ok_or_else(|| {
                OAuthError::Registration("private_key_jwt needs a client key".into())
            })?;
        let (algorithm, encoding) = match key.algorithm.as_str() {
            "ES256" => (
                jsonwebtoken::Algorithm::ES256,
                jsonwebtoken::EncodingKey::from_ec_pem(key.pem.as_bytes()),
            ),
            "RS256" => (
                jsonwebtoken::Algorithm::RS256,
                jsonwebtoken::EncodingKey::from_rsa_pem(key.pem.as_bytes()),
            ),
            other => {
                return Err(OAuthError::Registration(format!(
                    "unsupported client key algorithm {other}"
                )));
            }
        };
        let encoding =
            encoding.map_err(|e| OAuthError::Registration(format!("client key: {e}")))?;
        let now = now_secs();
        let claims = serde_json::json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + 60,
            "jti": pkce::random_token(),
        });
        jsonwebtoken::encode(&jsonwebtoken::Header::new(algorithm), &claims, &encoding)
            .map_err(|e| OAuthError::Registration(format!("signing the client assertion: {e}")))
    }

    /// A token endpoint request with the client's authentication.
    async fn token_request(
        &self,
        session: &Session,
        server: &AuthServerMetadata,
        mut form: Vec<(&'static str, String)>,
    ) -> Result<Tokens, OAuthError> {
        let endpoint = server
            .token_endpoint
            .as_deref()
            .ok_or_else(|| OAuthError::Discovery("no token endpoint".into()))?;
        let registration = session
            .credentials
            .registration
            .clone()
            .ok_or_else(|| OAuthError::Registration("not registered".into()))?;
        let mut request = self.http.post(endpoint);
        match (
            registration.auth_method.as_str(),
            &registration.client_secret,
        ) {
            ("client_secret_basic", Some(secret)) => {
                let value = crate::common::basic_credentials(&registration.client_id, secret);
                request = request.header(reqwest::header::AUTHORIZATION, value);
            }
            ("client_secret_post", Some(secret)) => {
                form.push(("client_id", registration.client_id.clone()));
                form.push(("client_secret", secret.clone()));
            }
            ("private_key_jwt", _) => {
                let assertion = self.client_assertion(&registration.client_id, &server.issuer)?;
                form.push(("client_id", registration.client_id.clone()));
                form.push(("client_assertion_type", CLIENT_ASSERTION_TYPE.to_owned()));
                form.push(("client_assertion", assertion));
            }
            _ => form.push(("client_id", registration.client_id.clone())),
        }
        let resource = form
            .iter()
            .find(|(k, _)| *k == "resource")
            .map(|(_, v)| v.clone());
        let dpop = self.dpop_key(server)?;
        let mut nonce_retried = false;
        let answer: TokenResponse = loop {
            let mut attempt = request
                .try_clone()
                .ok_or_else(|| OAuthError::Token("the token request cannot be repeated".into()))?
                .form(&form);
            if let Some(key) = &dpop {
                let nonce = self.nonces().server.clone();
                let proof = key.proof("POST", endpoint, None, nonce.as_deref())?;
                attempt = attempt.header(dpop::DPOP_HEADER, proof);
            }
            let response = attempt
                .send()
                .await
                .map_err(|e| OAuthError::Http(format!("POST {endpoint}: {e}")))?;
            let status = response.status();
            if status.is_success() {
                break response
                    .json()
                    .await
                    .map_err(|e| OAuthError::Token(e.to_string()))?;
            }
            let nonce = response
                .headers()
                .get(dpop::NONCE_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let text = response.text().await.unwrap_or_default();
            // The authorization server wants its nonce in the proof: once.
            if let (Some(nonce), Some(_), false) = (nonce, &dpop, nonce_retried)
                && text.contains("use_dpop_nonce")
            {
                self.nonces().server = Some(nonce);
                nonce_retried = true;
                continue;
            }
            return Err(OAuthError::Token(format!("HTTP {status}: {text}")));
        };
        let token_type = answer.token_type.clone().unwrap_or_else(|| "Bearer".into());
        let acceptable = token_type.eq_ignore_ascii_case("bearer")
            || (dpop.is_some() && token_type.eq_ignore_ascii_case("dpop"));
        if !acceptable {
            return Err(OAuthError::Token(format!(
                "unsupported token type {token_type:?}"
            )));
        }
        let previous_refresh = session
            .credentials
            .tokens
            .as_ref()
            .and_then(|t| t.refresh_token.clone());
        Ok(Tokens {
            access_token: answer.access_token,
            // A refresh that returns no new refresh token keeps the old one.
            refresh_token: answer.refresh_token.or(previous_refresh),
            expires_at: answer.expires_in.map(|s| now_secs() + s),
            scope: answer.scope,
            resource,
            token_type: Some(token_type),
        })
    }

    /// The DPoP key, made when first needed, where the authorization
    /// server binds tokens to keys (it lists ES256 for DPoP).
    fn dpop_key(&self, server: &AuthServerMetadata) -> Result<Option<Arc<DpopKey>>, OAuthError> {
        let offers = server
            .dpop_signing_alg_values_supported
            .as_ref()
            .is_some_and(|algs| algs.iter().any(|a| a == "ES256"));
        if !offers {
            return Ok(None);
        }
        let mut slot = self.dpop.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(Arc::new(DpopKey::generate()?));
        }
        Ok(slot.clone())
    }

    fn nonces(&self) -> std::sync::MutexGuard<'_, Nonces> {
        self.nonces.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Trades the refresh token for new tokens.
    async fn refresh(&self, session: &mut Session) -> Result<(), OAuthError> {
        let tokens = session
            .credentials
            .tokens
            .clone()
            .ok_or_else(|| OAuthError::Token("nothing to refresh".into()))?;
        let refresh_token = tokens
            .refresh_token
            .clone()
            .ok_or_else(|| OAuthError::Token("no refresh token".into()))?;
        let server = session.server.clone().unwrap_or_default();
        let mut form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token),
        ];
        if let Some(resource) = tokens.resource.clone() {
            form.push(("resource", resource));
        }
        let fresh = self.token_request(session, &server, form).await?;
        session.credentials.tokens = Some(fresh);
        let issuer = session.issuer.clone().unwrap_or_default();
        self.config.store.save(&issuer, &session.credentials)
    }

    /// The headers that authorize a request: `Authorization` with the
    /// token, and for a DPoP-bound token a fresh proof for this request.
    async fn request_credentials(
        &self,
        method: &reqwest::Method,
        url: &str,
    ) -> Vec<(reqwest::header::HeaderName, HeaderValue)> {
        let mut session = self.session.lock().await;
        let Some(tokens) = &session.credentials.tokens else {
            return Vec::new();
        };
        let expiring = tokens
            .expires_at
            .is_some_and(|at| at <= now_secs() + self.config.refresh_margin.as_secs());
        if expiring
            && tokens.refresh_token.is_some()
            && session.server.is_some()
            && let Err(e) = self.refresh(&mut session).await
        {
            tracing::debug!("refresh before expiry failed: {e}");
        }
        let Some(tokens) = &session.credentials.tokens else {
            return Vec::new();
        };
        let bound = tokens
            .token_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("dpop"));
        let key = self.dpop.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let access = &tokens.access_token;
        match (bound, key) {
            (true, Some(key)) => {
                let nonce = self.nonces().resource.clone();
                let proof = key.proof(method.as_str(), url, Some(access), nonce.as_deref());
                let header = HeaderValue::from_str(&format!("DPoP {access}"));
                match (proof.map(|p| HeaderValue::from_str(&p)), header) {
                    (Ok(Ok(proof)), Ok(header)) => vec![
                        (reqwest::header::AUTHORIZATION, header),
                        (reqwest::header::HeaderName::from_static("dpop"), proof),
                    ],
                    _ => Vec::new(),
                }
            }
            _ => HeaderValue::from_str(&format!("Bearer {access}"))
                .map(|bearer| vec![(reqwest::header::AUTHORIZATION, bearer)])
                .unwrap_or_default(),
        }
    }

    /// Takes the stored credentials of this server's issuer when their
    /// tokens are for this resource and still valid (or refreshable).
    async fn adopt_stored(&self, session: &mut Session, bearer: &BearerChallenge) -> bool {
        if let Err(e) = self.discover(session, bearer).await {
            tracing::debug!("discovery failed: {e}");
            return false;
        }
        let issuer = session.issuer.clone().unwrap_or_default();
        let Ok(stored) = self.config.store.load(&issuer) else {
            return false;
        };
        let resource = self.resource_parameter(session);
        let usable = stored.tokens.as_ref().is_some_and(|t| {
            let fresh = t.expires_at.is_none_or(|at| at > now_secs());
            t.resource == resource && (fresh || t.refresh_token.is_some())
        });
        if usable {
            tracing::debug!(issuer, "using stored credentials");
            session.credentials = stored;
        }
        usable
    }

    async fn answer_challenge(&self, challenge: Challenge) -> bool {
        let refused = Refusal {
            insufficient_scope: challenge.is_insufficient_scope(),
            www_authenticate: challenge.www_authenticate.as_deref(),
            headers: &challenge.headers,
        };
        match self.answer(refused).await {
            Ok(again) => again,
            Err(e) => {
                tracing::warn!("authorization failed: {e}");
                false
            }
        }
    }

    /// Makes sure the client holds credentials the server takes before
    /// anything else is sent: POSTs a JSON-RPC `ping` to the server with
    /// the credentials held, and answers a refusal the way a refused MCP
    /// request is answered (stored tokens, a refresh, or a sign-in),
    /// until the server takes them. A server that cannot be reached, or
    /// that asks for no authorization, leaves the client as it was.
    pub async fn prepare(&self) -> Result<(), OAuthError> {
        for _ in 0..3 {
            let response = match self.ping(true).await {
                Ok(response) => response,
                Err(e) => {
                    tracing::debug!("the server did not answer before signing in: {e}");
                    return Ok(());
                }
            };
            let www_authenticate = response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok());
            let insufficient_scope = response.status() == reqwest::StatusCode::FORBIDDEN
                && www_authenticate.is_some_and(|h| h.contains("insufficient_scope"));
            if response.status() != reqwest::StatusCode::UNAUTHORIZED && !insufficient_scope {
                return Ok(());
            }
            let refused = Refusal {
                insufficient_scope,
                www_authenticate,
                headers: response.headers(),
            };
            if !self.answer(refused).await? {
                return Err(OAuthError::Authorization(format!(
                    "{} refuses the credentials (HTTP {})",
                    self.server_url,
                    response.status()
                )));
            }
        }
        Ok(())
    }

    /// POSTs a JSON-RPC `ping` to the server, with the credentials held
    /// when `authorized`.
    async fn ping(&self, authorized: bool) -> Result<reqwest::Response, reqwest::Error> {
        const PING: &str = r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#;
        let mut request = self
            .http
            .post(self.server_url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .body(PING);
        for (name, value) in &self.config.server_headers {
            request = request.header(name, value);
        }
        if authorized {
            let credentials = self
                .request_credentials(&reqwest::Method::POST, self.server_url.as_str())
                .await;
            for (name, value) in credentials {
                request = request.header(name, value);
            }
        }
        request.send().await
    }

    /// The challenge the server answers a request without credentials
    /// with; `None` when it asks for none.
    async fn unauthorized_challenge(&self) -> Result<Option<BearerChallenge>, OAuthError> {
        let response = self
            .ping(false)
            .await
            .map_err(|e| OAuthError::Http(format!("POST {}: {e}", self.server_url)))?;
        if response.status() != reqwest::StatusCode::UNAUTHORIZED {
            return Ok(None);
        }
        Ok(Some(
            response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .and_then(BearerChallenge::parse)
                .unwrap_or_default(),
        ))
    }

    /// Signs in now, whatever is stored: the server is asked what it
    /// demands, and a new grant's tokens replace the stored ones.
    /// `Ok(false)` when the server asks for no authorization.
    pub async fn sign_in(&self) -> Result<bool, OAuthError> {
        let Some(challenge) = self.unauthorized_challenge().await? else {
            return Ok(false);
        };
        let mut session = self.session.lock().await;
        session.tried_store = true;
        session.credentials.tokens = None;
        self.run_flow(&mut session, &challenge, None).await?;
        Ok(true)
    }

    /// The issuer of the server's authorization server, found through its
    /// metadata.
    pub async fn issuer(&self) -> Result<String, OAuthError> {
        let challenge = self.unauthorized_challenge().await?.unwrap_or_default();
        let mut session = self.session.lock().await;
        self.discover(&mut session, &challenge).await?;
        Ok(session.issuer.clone().unwrap_or_default())
    }

    /// Forgets the tokens and registration kept for this server: those of
    /// its issuer, else (when the server cannot tell its issuer) those
    /// whose tokens are for it. The issuers forgotten.
    pub async fn forget(&self) -> Result<Vec<String>, OAuthError> {
        let issuers = match self.issuer().await {
            Ok(issuer) => vec![issuer],
            Err(e) => {
                tracing::debug!("no issuer for {}: {e}", self.server_url);
                self.config
                    .store
                    .list()?
                    .into_iter()
                    .filter(|(_, kept)| {
                        kept.tokens
                            .as_ref()
                            .and_then(|t| t.resource.as_deref())
                            .is_some_and(|r| check_resource(&self.server_url, r).is_ok())
                    })
                    .map(|(issuer, _)| issuer)
                    .collect()
            }
        };
        let mut forgotten = Vec::new();
        for issuer in issuers {
            if self.config.store.remove(&issuer)? {
                forgotten.push(issuer);
            }
        }
        self.session.lock().await.credentials = Credentials::default();
        Ok(forgotten)
    }

    /// Answers a refusal: `Ok(true)` when the request should be sent
    /// again with the credentials now held, `Ok(false)` when asking
    /// again is futile.
    async fn answer(&self, challenge: Refusal<'_>) -> Result<bool, OAuthError> {
        // The resource server wants its nonce in the proofs: send again.
        let nonce = challenge
            .headers
            .get(dpop::NONCE_HEADER)
            .and_then(|v| v.to_str().ok());
        let asks_nonce = challenge
            .www_authenticate
            .is_some_and(|h| h.contains("use_dpop_nonce"));
        if let (Some(nonce), true) = (nonce, asks_nonce) {
            let mut nonces = self.nonces();
            if nonces.resource.as_deref() != Some(nonce) {
                nonces.resource = Some(nonce.to_owned());
                return Ok(true);
            }
        }
        let bearer = challenge
            .www_authenticate
            .and_then(BearerChallenge::parse)
            .unwrap_or_default();
        let mut session = self.session.lock().await;
        let scopes = if challenge.insufficient_scope {
            session.step_ups += 1;
            if session.step_ups > self.config.max_step_ups {
                tracing::warn!(
                    "still refused for scope after {} step-ups",
                    self.config.max_step_ups
                );
                return Ok(false);
            }
            // What was granted (or asked for), plus what the server asks
            // for now; nothing new to ask for means asking again is futile.
            let mut scopes: Vec<String> = session
                .credentials
                .tokens
                .as_ref()
                .and_then(|t| t.scope.clone())
                .map(|s| s.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_else(|| session.requested.clone());
            let wanted = bearer.scopes();
            if !wanted.is_empty() && wanted.iter().all(|s| scopes.contains(s)) {
                tracing::warn!(
                    "refused for scope {:?}, which was already granted",
                    bearer.scope
                );
                return Ok(false);
            }
            for scope in wanted {
                if !scopes.contains(&scope) {
                    scopes.push(scope);
                }
            }
            Some(scopes)
        } else {
            // Tokens kept from an earlier run, for this resource and not
            // expired: try them first (once).
            if session.credentials.tokens.is_none() && !session.tried_store {
                session.tried_store = true;
                if self.adopt_stored(&mut session, &bearer).await {
                    return Ok(true);
                }
            }
            let has_refresh = session
                .credentials
                .tokens
                .as_ref()
                .is_some_and(|t| t.refresh_token.is_some());
            if has_refresh && session.server.is_some() {
                match self.refresh(&mut session).await {
                    Ok(()) => return Ok(true),
                    Err(e) => tracing::debug!("refresh failed, authorizing again: {e}"),
                }
            }
            session.credentials.tokens = None;
            None
        };
        self.run_flow(&mut session, &bearer, scopes).await?;
        Ok(true)
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
