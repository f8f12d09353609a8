//! A small built-in OAuth 2.1 authorization server for MCP deployments that
//! have none: authorization code with PKCE (S256), refresh-token rotation,
//! client credentials, RFC 8414 metadata, RFC 7591 dynamic registration and
//! client ID metadata documents, RFC 8707 resource indicators, RFC 9207
//! `iss` in redirects, `private_key_jwt` (RFC 7523) and RFC 9068 JWT access
//! tokens signed with ES256 keys published as a JWK Set. State lives in
//! SQLite, so a restart loses nothing.
//!
//! It is meant to face the open network: registration, authorization,
//! token and login requests are rate limited per client address, failed
//! logins per user name as well ([`RateLimits`]); registered clients never
//! used are deleted after a day, and at most 10,000 are kept; expired
//! state is swept every minute ([`AuthorizationServer::sweep`]). All of it
//! is set in [`AuthServerConfig`].
//!
//! ```
//! use mcp_auth::server::{AuthServerConfig, AuthorizationServer, ClientConfig, UserAccount};
//!
//! # fn main() -> Result<(), mcp_auth::server::AuthServerError> {
//! let config = AuthServerConfig::builder("http://127.0.0.1:8080")
//!     .resource("http://127.0.0.1:8080/mcp")
//!     .scopes_supported(["mcp"])
//!     .user(UserAccount::with_password("alice", "correct horse")?)
//!     .client(ClientConfig::public("cli", vec!["http://127.0.0.1:9000/cb".into()]))
//!     .build()?;
//! let server = AuthorizationServer::new(config)?;
//! let app: axum::Router = server.router();
//! # let _ = app;
//! # Ok(())
//! # }
//! ```

mod authorize;
mod cimd;
mod client_auth;
mod config;
mod keys;
mod limits;
mod page;
mod password;
mod register;
mod store;
mod sweep;
mod token;
mod util;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, PRAGMA, WWW_AUTHENTICATE};
use http::{HeaderValue, StatusCode};

pub use config::{
    AuthServerConfig, AuthServerConfigBuilder, ClientConfig, TokenEndpointAuthMethod, UserAccount,
    hash_password,
};
pub use limits::{RateLimit, RateLimits};

use keys::SigningKey;
use mcp_core::sync::RwLockExt as _;
use store::{ClientRecord, Store};

/// Why the authorization server could not start or do an administrative
/// operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthServerError {
    /// Invalid settings.
    #[error("configuration: {0}")]
    Config(String),
    /// The SQLite database failed.
    #[error("storage: {0}")]
    Storage(String),
    /// Key generation, loading or signing failed.
    #[error("keys: {0}")]
    Key(String),
}

/// An OAuth error response: `{"error", "error_description"}` with a status.
#[derive(Debug)]
pub(crate) struct OAuthError {
    status: StatusCode,
    error: &'static str,
    description: String,
    basic_challenge: bool,
}

impl OAuthError {
    pub(crate) fn new(
        status: StatusCode,
        error: &'static str,
        description: impl Into<String>,
    ) -> Self {
        OAuthError {
            status,
            error,
            description: description.into(),
            basic_challenge: false,
        }
    }

    pub(crate) fn bad(error: &'static str, description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, error, description)
    }

    pub(crate) fn invalid_client(description: impl Into<String>, basic: bool) -> Self {
        OAuthError {
            basic_challenge: basic,
            ..Self::new(StatusCode::UNAUTHORIZED, "invalid_client", description)
        }
    }

    pub(crate) fn server(e: AuthServerError) -> Self {
        tracing::warn!("authorization server: {e}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "internal error",
        )
    }
}

impl From<AuthServerError> for OAuthError {
    fn from(e: AuthServerError) -> Self {
        OAuthError::server(e)
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({"error": self.error, "error_description": self.description});
        let mut resp = json_response(self.status, &body);
        if self.basic_challenge {
            resp.headers_mut().insert(
                WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"token\""),
            );
        }
        resp
    }
}

/// A JSON response that no cache keeps.
pub(crate) fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    let mut resp = (status, body.to_string()).into_response();
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(PRAGMA, HeaderValue::from_static("no-cache"));
    resp
}

struct Inner {
    config: AuthServerConfig,
    store: Store,
    /// Newest first; the first one signs.
    keys: RwLock<Vec<SigningKey>>,
    users: HashMap<String, String>,
    /// Verified when the user is unknown, so that both failures take as long.
    dummy_hash: String,
    http: reqwest::Client,
    /// Fetched client metadata documents, with the instant they go stale.
    cimd_cache: Mutex<HashMap<String, (Instant, ClientRecord)>>,
    /// Fetched client JWK Sets, with the instant they go stale.
    jwks_cache: Mutex<HashMap<String, (Instant, serde_json::Value)>>,
    /// The issuer's path ("" at the root).
    base_path: String,
    /// Rate limiters per client address and per user name.
    limits: limits::Limiters,
    /// Bounds the password checks (and their Argon2 memory) at once.
    password_checks: tokio::sync::Semaphore,
    /// Whether the periodic sweep runs.
    sweeping: std::sync::atomic::AtomicBool,
}

/// The built-in authorization server. Cheap to clone; every clone shares
/// the same state.
#[derive(Clone)]
pub struct AuthorizationServer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AuthorizationServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationServer")
            .field("issuer", &self.inner.config.issuer)
            .finish_non_exhaustive()
    }
}

impl AuthorizationServer {
    /// Opens the storage, registers the configured clients and loads (or
    /// creates) the signing key.
    pub fn new(config: AuthServerConfig) -> Result<Self, AuthServerError> {
        let store = Store::open(&config.storage_path)?;
        store.purge_expired()?;
        let limits = limits::Limiters::new(&config.rate_limits)?;
        for c in &config.clients {
            store.put_client(&ClientRecord {
                client_id: c.client_id.clone(),
                secret_digest: c.client_secret.as_deref().map(util::digest),
                redirect_uris: c.redirect_uris.clone(),
                auth_method: c.auth_method,
                grant_types: c.grant_types.clone(),
                jwks: c.jwks.clone(),
                jwks_uri: c.jwks_uri.clone(),
                client_name: c.client_name.clone(),
                scope: None,
                application_type: None,
                issued_at: util::now(),
            })?;
        }
        let mut keys = store
            .keys()?
            .into_iter()
            .map(|(kid, pkcs8)| SigningKey::from_pkcs8(Some(kid), pkcs8))
            .collect::<Result<Vec<_>, _>>()?;
        if keys.is_empty() {
            let key = SigningKey::generate()?;
            store.add_key(&key.kid, key.pkcs8())?;
            keys.push(key);
        }
        let users = config
            .users
            .iter()
            .map(|u| (u.name.clone(), u.password_hash.clone()))
            .collect();
        let dummy_hash = hash_password(&util::random_token())?;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(5))
            .connect_timeout(std::time::Duration::from_secs(3))
            .dns_resolver(Arc::new(cimd::GuardedResolver {
                allow_loopback: config.allow_loopback_client_id_documents_for_testing,
            }))
            .build()
            .map_err(|e| AuthServerError::Config(format!("HTTP client: {e}")))?;
        let config_max_checks = config.max_concurrent_password_checks.max(1);
        let base_path = url::Url::parse(&config.issuer)
            .map_err(|e| AuthServerError::Config(format!("issuer: {e}")))?
            .path()
            .trim_end_matches('/')
            .to_owned();
        Ok(AuthorizationServer {
            inner: Arc::new(Inner {
                config,
                store,
                keys: RwLock::new(keys),
                users,
                dummy_hash,
                http,
                cimd_cache: Mutex::new(HashMap::new()),
                jwks_cache: Mutex::new(HashMap::new()),
                base_path,
                limits,
                password_checks: tokio::sync::Semaphore::new(config_max_checks),
                sweeping: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }

    /// The issuer identifier.
    pub fn issuer(&self) -> &str {
        &self.inner.config.issuer
    }

    /// The settings.
    pub fn config(&self) -> &AuthServerConfig {
        &self.inner.config
    }

    /// Makes a new current signing key; the JWK Set keeps publishing the
    /// previous one so tokens it signed stay verifiable. Returns the new
    /// key id.
    pub fn rotate_keys(&self) -> Result<String, AuthServerError> {
        let key = SigningKey::generate()?;
        self.inner.store.add_key(&key.kid, key.pkcs8())?;
        let kid = key.kid.clone();
        let mut keys = self.inner.keys.write_locked();
        keys.insert(0, key);
        keys.truncate(2);
        tracing::info!(kid = %kid, "authorization server: signing key rotated");
        Ok(kid)
    }

    /// The key id that signs new tokens.
    pub fn current_kid(&self) -> String {
        self.inner.keys.read_locked()[0].kid.clone()
    }

    /// The published JWK Set: the current key and the previous one.
    pub fn jwks(&self) -> serde_json::Value {
        let keys = self.inner.keys.read_locked();
        serde_json::json!({"keys": keys.iter().map(SigningKey::public_jwk).collect::<Vec<_>>()})
    }

    /// The URL of the JWK Set.
    pub fn jwks_uri(&self) -> String {
        Self::jwks_uri_of(&self.inner.config.issuer)
    }

    /// Where the server of `issuer` publishes its keys.
    pub fn jwks_uri_of(issuer: &str) -> String {
        format!("{issuer}/jwks")
    }

    /// The token endpoint URL.
    pub fn token_endpoint(&self) -> String {
        format!("{}/token", self.inner.config.issuer)
    }

    /// The RFC 8414 metadata document.
    pub fn metadata(&self) -> serde_json::Value {
        let c = &self.inner.config;
        let iss = &c.issuer;
        let mut m = serde_json::json!({
            "issuer": iss,
            "authorization_endpoint": format!("{iss}/authorize"),
            "token_endpoint": format!("{iss}/token"),
            "jwks_uri": self.jwks_uri(),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"],
            "token_endpoint_auth_signing_alg_values_supported": client_auth::ASSERTION_ALGS_NAMES,
            "authorization_response_iss_parameter_supported": true,
            "client_id_metadata_document_supported": true,
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
        });
        if c.dynamic_registration {
            m["registration_endpoint"] = format!("{iss}/register").into();
        }
        if !c.scopes_supported.is_empty() {
            m["scopes_supported"] = c.scopes_supported.clone().into();
        }
        m
    }

    /// The axum router of every endpoint, to mount at the issuer's origin.
    ///
    /// Registration, authorization, token and login requests are rate
    /// limited per client address, which the router takes from axum's
    /// `ConnectInfo<SocketAddr>`: serve it with
    /// `into_make_service_with_connect_info::<SocketAddr>()` (as
    /// `mcp_http::serve_with` does), or every client shares one limit.
    /// Inside a Tokio runtime, this also starts the periodic
    /// [`sweep`](Self::sweep) (once per server; it ends with the server).
    pub fn router(&self) -> Router {
        self.start_sweeping();
        let base = &self.inner.base_path;
        let limited = |endpoint: limits::Endpoint| {
            axum::middleware::from_fn_with_state((self.clone(), endpoint), limits::limit)
        };
        let metadata = |s: axum::extract::State<AuthorizationServer>| async move {
            json_response(StatusCode::OK, &s.metadata())
        };
        let jwks = |s: axum::extract::State<AuthorizationServer>| async move {
            let mut resp = json_response(StatusCode::OK, &s.jwks());
            resp.headers_mut().insert(
                CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=300"),
            );
            resp.headers_mut().remove(PRAGMA);
            resp
        };
        let mut router = Router::new()
            .route(
                &format!("/.well-known/oauth-authorization-server{base}"),
                get(metadata),
            )
            .route(
                &format!("/.well-known/openid-configuration{base}"),
                get(metadata),
            )
            .route(&format!("{base}/jwks"), get(jwks))
            .route(&format!("{base}/.well-known/jwks.json"), get(jwks))
            .route(
                &format!("{base}/authorize"),
                get(authorize::get_authorize)
                    .layer(limited(limits::Endpoint::Authorize))
                    .merge(
                        axum::routing::post(authorize::post_authorize)
                            .layer(limited(limits::Endpoint::Login)),
                    ),
            )
            .route(
                &format!("{base}/token"),
                axum::routing::post(token::token).layer(limited(limits::Endpoint::Token)),
            );
        if !base.is_empty() {
            router = router.route(
                &format!("{base}/.well-known/openid-configuration"),
                get(metadata),
            );
        }
        if self.inner.config.dynamic_registration {
            router = router.route(
                &format!("{base}/register"),
                axum::routing::post(register::register)
                    .layer(limited(limits::Endpoint::Registration)),
            );
        }
        router
            .layer(axum::extract::DefaultBodyLimit::max(64 * 1024))
            .with_state(self.clone())
    }

    /// The audience of a token: the resource asked for, else the default.
    fn audience(&self, resource: Option<&str>) -> String {
        resource
            .map(str::to_owned)
            .or_else(|| self.inner.config.resources.first().cloned())
            .unwrap_or_else(|| self.inner.config.issuer.clone())
    }

    /// Checks an RFC 8707 `resource`: absolute, no fragment, and one of the
    /// configured resources when there are some.
    fn check_resource(&self, resource: &str) -> Result<(), OAuthError> {
        let ok = url::Url::parse(resource).is_ok_and(|u| u.fragment().is_none());
        let listed = self.inner.config.resources.is_empty()
            || self
                .inner
                .config
                .resources
                .iter()
                .any(|r| r.trim_end_matches('/') == resource.trim_end_matches('/'));
        if ok && listed {
            Ok(())
        } else {
            Err(OAuthError::bad(
                "invalid_target",
                "unknown or invalid resource",
            ))
        }
    }

    /// Splits and checks a `scope` parameter against the supported scopes.
    fn check_scope(&self, scope: Option<&str>) -> Result<Vec<String>, OAuthError> {
        let scopes: Vec<String> = scope
            .unwrap_or("")
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        let supported = &self.inner.config.scopes_supported;
        if !supported.is_empty()
            && let Some(bad) = scopes.iter().find(|s| !supported.contains(s))
        {
            return Err(OAuthError::bad(
                "invalid_scope",
                format!("unsupported scope {bad:?}"),
            ));
        }
        let mut out: Vec<String> = Vec::new();
        for s in scopes {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        Ok(out)
    }

    /// Signs an RFC 9068 access token.
    fn issue_access_token(
        &self,
        subject: &str,
        client_id: &str,
        scope: &[String],
        resource: Option<&str>,
    ) -> Result<String, AuthServerError> {
        let now = util::now();
        let mut claims = serde_json::json!({
            "iss": self.inner.config.issuer,
            "sub": subject,
            "aud": self.audience(resource),
            "client_id": client_id,
            "iat": now,
            "nbf": now,
            "exp": now + self.inner.config.access_token_lifetime.as_secs() as i64,
            "jti": util::random_token(),
        });
        if !scope.is_empty() {
            claims["scope"] = scope.join(" ").into();
        }
        let keys = self.inner.keys.read_locked();
        keys[0].sign("at+jwt", &claims)
    }
}
