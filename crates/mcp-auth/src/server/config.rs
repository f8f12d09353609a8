//! Settings of the built-in authorization server: issuer, protected
//! resources, lifetimes, users, pre-registered clients, storage.

use std::time::Duration;

use argon2::password_hash::PasswordHash;
use serde::{Deserialize, Serialize};

use super::AuthServerError;
use super::limits::RateLimits;

/// How a client authenticates at the token endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TokenEndpointAuthMethod {
    /// A public client: no authentication, `client_id` in the body.
    None,
    /// HTTP Basic with the client id and secret.
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the form body.
    ClientSecretPost,
    /// A JWT signed with the client's own key (RFC 7523).
    PrivateKeyJwt,
}

impl TokenEndpointAuthMethod {
    /// The registered name of the method.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenEndpointAuthMethod::None => "none",
            TokenEndpointAuthMethod::ClientSecretBasic => "client_secret_basic",
            TokenEndpointAuthMethod::ClientSecretPost => "client_secret_post",
            TokenEndpointAuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// Parses a registered method name.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "none" => TokenEndpointAuthMethod::None,
            "client_secret_basic" => TokenEndpointAuthMethod::ClientSecretBasic,
            "client_secret_post" => TokenEndpointAuthMethod::ClientSecretPost,
            "private_key_jwt" => TokenEndpointAuthMethod::PrivateKeyJwt,
            _ => return None,
        })
    }

    /// Whether the method uses a shared secret.
    pub fn uses_secret(self) -> bool {
        matches!(
            self,
            TokenEndpointAuthMethod::ClientSecretBasic | TokenEndpointAuthMethod::ClientSecretPost
        )
    }
}

/// A user who can log in on the authorization page.
#[derive(Clone)]
pub struct UserAccount {
    pub(crate) name: String,
    pub(crate) password_hash: String,
}

impl std::fmt::Debug for UserAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserAccount")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl UserAccount {
    /// A user with a plaintext password, hashed here with Argon2id.
    pub fn with_password(name: impl Into<String>, password: &str) -> Result<Self, AuthServerError> {
        Ok(UserAccount {
            name: name.into(),
            password_hash: hash_password(password)?,
        })
    }

    /// A user with a password already hashed as a PHC string
    /// (`$argon2id$v=19$...`).
    pub fn with_password_hash(
        name: impl Into<String>,
        phc: impl Into<String>,
    ) -> Result<Self, AuthServerError> {
        let phc = phc.into();
        PasswordHash::new(&phc)
            .map_err(|e| AuthServerError::Config(format!("invalid password hash: {e}")))?;
        Ok(UserAccount {
            name: name.into(),
            password_hash: phc,
        })
    }

    /// The user name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Hashes `password` with Argon2id and a random salt into a PHC string.
pub fn hash_password(password: &str) -> Result<String, AuthServerError> {
    super::password::hash(password)
}

/// A client registered in the configuration.
#[derive(Clone)]
#[non_exhaustive]
pub struct ClientConfig {
    /// The client identifier.
    pub client_id: String,
    /// The secret of a confidential client using `client_secret_basic` or
    /// `client_secret_post`.
    pub client_secret: Option<String>,
    /// The exact redirect URIs the client may use.
    pub redirect_uris: Vec<String>,
    /// How the client authenticates at the token endpoint.
    pub auth_method: TokenEndpointAuthMethod,
    /// Grant types the client may use.
    pub grant_types: Vec<String>,
    /// The client's public keys (a JWK Set) for `private_key_jwt`.
    pub jwks: Option<serde_json::Value>,
    /// Where the client's JWK Set is published, for `private_key_jwt`.
    pub jwks_uri: Option<String>,
    /// A name shown on the consent page.
    pub client_name: Option<String>,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("client_id", &self.client_id)
            .field("redirect_uris", &self.redirect_uris)
            .field("auth_method", &self.auth_method)
            .finish_non_exhaustive()
    }
}

impl ClientConfig {
    /// A public client (`none`) with these redirect URIs, allowed the
    /// `authorization_code` and `refresh_token` grants.
    pub fn public(client_id: impl Into<String>, redirect_uris: Vec<String>) -> Self {
        ClientConfig {
            client_id: client_id.into(),
            client_secret: None,
            redirect_uris,
            auth_method: TokenEndpointAuthMethod::None,
            grant_types: vec!["authorization_code".into(), "refresh_token".into()],
            jwks: None,
            jwks_uri: None,
            client_name: None,
        }
    }

    /// A confidential client authenticating with `secret` by `method`
    /// (`client_secret_basic` or `client_secret_post`), allowed the
    /// `authorization_code`, `refresh_token` and `client_credentials` grants.
    pub fn confidential(
        client_id: impl Into<String>,
        secret: impl Into<String>,
        method: TokenEndpointAuthMethod,
        redirect_uris: Vec<String>,
    ) -> Self {
        ClientConfig {
            client_secret: Some(secret.into()),
            auth_method: method,
            grant_types: vec![
                "authorization_code".into(),
                "refresh_token".into(),
                "client_credentials".into(),
            ],
            ..ClientConfig::public(client_id, redirect_uris)
        }
    }

    /// A confidential client authenticating with `private_key_jwt`, its
    /// public keys given as a JWK Set.
    pub fn private_key_jwt(
        client_id: impl Into<String>,
        jwks: serde_json::Value,
        redirect_uris: Vec<String>,
    ) -> Self {
        ClientConfig {
            client_secret: None,
            auth_method: TokenEndpointAuthMethod::PrivateKeyJwt,
            jwks: Some(jwks),
            grant_types: vec![
                "authorization_code".into(),
                "refresh_token".into(),
                "client_credentials".into(),
            ],
            ..ClientConfig::public(client_id, redirect_uris)
        }
    }

    /// Sets the grant types.
    pub fn grant_types(mut self, grant_types: Vec<String>) -> Self {
        self.grant_types = grant_types;
        self
    }

    /// Sets the name shown on the consent page.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = Some(name.into());
        self
    }

    /// Sets the URL of the client's JWK Set.
    pub fn jwks_uri(mut self, uri: impl Into<String>) -> Self {
        self.jwks_uri = Some(uri.into());
        self
    }
}

/// Settings of an [`AuthorizationServer`](super::AuthorizationServer).
/// Build one with [`AuthServerConfig::builder`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AuthServerConfig {
    /// The issuer identifier, e.g. `http://127.0.0.1:8080`, no trailing slash.
    pub issuer: String,
    /// The protected resources tokens are issued for; the first is the
    /// audience when a request names none. Empty: any `resource` is
    /// accepted and the issuer is the default audience.
    pub resources: Vec<String>,
    /// Lifetime of access tokens.
    pub access_token_lifetime: Duration,
    /// Lifetime of refresh tokens (of a whole refresh-token family).
    pub refresh_token_lifetime: Duration,
    /// Lifetime of authorization codes.
    pub code_lifetime: Duration,
    /// How long a login page stays valid.
    pub login_lifetime: Duration,
    /// The users who can log in.
    pub users: Vec<UserAccount>,
    /// Pre-registered clients.
    pub clients: Vec<ClientConfig>,
    /// Scopes clients may ask for.
    pub scopes_supported: Vec<String>,
    /// The SQLite database file, or `:memory:`.
    pub storage_path: String,
    /// Whether dynamic client registration (RFC 7591) is open.
    pub dynamic_registration: bool,
    /// Whether `http://` loopback URLs are accepted as client ID metadata
    /// document URLs. For tests only; off by default.
    pub allow_loopback_client_id_documents_for_testing: bool,
    /// When set, `/authorize` skips the login and consent page and
    /// approves every valid request as this user. For automated
    /// conformance tests only; off by default.
    pub auto_approve_as_user_for_testing: Option<String>,
    /// Rate limits per client address and per user name.
    pub rate_limits: RateLimits,
    /// How long a dynamically registered client that has never been
    /// used (no authorization approved, no token issued) is kept.
    pub unused_client_lifetime: Duration,
    /// The most dynamically registered clients kept; registration beyond
    /// is refused (`503`, `temporarily_unavailable`) once the unused ones
    /// past their lifetime are gone.
    pub max_clients: usize,
    /// The most authorization requests waiting for a login at once.
    pub max_pending_requests: usize,
    /// How often expired codes, tokens, logins and unused clients are
    /// deleted, and the rate limiters' idle entries dropped.
    pub sweep_interval: Duration,
    /// The most password checks (19 MiB of Argon2 memory each) run at once;
    /// more wait.
    pub max_concurrent_password_checks: usize,
}

impl AuthServerConfig {
    /// A builder for a server whose issuer is `issuer`.
    pub fn builder(issuer: impl Into<String>) -> AuthServerConfigBuilder {
        AuthServerConfigBuilder {
            config: AuthServerConfig {
                issuer: issuer.into(),
                resources: Vec::new(),
                access_token_lifetime: Duration::from_secs(3600),
                refresh_token_lifetime: Duration::from_secs(30 * 24 * 3600),
                code_lifetime: Duration::from_secs(60),
                login_lifetime: Duration::from_secs(600),
                users: Vec::new(),
                clients: Vec::new(),
                scopes_supported: Vec::new(),
                storage_path: ":memory:".into(),
                dynamic_registration: true,
                allow_loopback_client_id_documents_for_testing: false,
                auto_approve_as_user_for_testing: None,
                rate_limits: RateLimits::default(),
                unused_client_lifetime: Duration::from_secs(24 * 3600),
                max_clients: 10_000,
                max_pending_requests: 10_000,
                sweep_interval: Duration::from_secs(60),
                max_concurrent_password_checks: 4,
            },
        }
    }
}

/// Builds an [`AuthServerConfig`]; defaults: no resources (audience = the
/// issuer), 1 h access tokens, 30 days refresh tokens, 60 s codes, 10 min
/// login pages, in-memory storage, dynamic registration open, the
/// [`RateLimits`] defaults, unused registered clients kept 24 h, at most
/// 10,000 registered clients and 10,000 waiting logins, a sweep every
/// minute, 4 password checks at once.
#[derive(Clone, Debug)]
pub struct AuthServerConfigBuilder {
    config: AuthServerConfig,
}

impl AuthServerConfigBuilder {
    /// Adds a protected resource (the first one is the default audience).
    pub fn resource(mut self, resource: impl Into<String>) -> Self {
        self.config.resources.push(resource.into());
        self
    }

    /// Sets the access-token lifetime.
    pub fn access_token_lifetime(mut self, d: Duration) -> Self {
        self.config.access_token_lifetime = d;
        self
    }

    /// Sets the refresh-token lifetime.
    pub fn refresh_token_lifetime(mut self, d: Duration) -> Self {
        self.config.refresh_token_lifetime = d;
        self
    }

    /// Sets the authorization-code lifetime.
    pub fn code_lifetime(mut self, d: Duration) -> Self {
        self.config.code_lifetime = d;
        self
    }

    /// Adds a user.
    pub fn user(mut self, user: UserAccount) -> Self {
        self.config.users.push(user);
        self
    }

    /// Adds a pre-registered client.
    pub fn client(mut self, client: ClientConfig) -> Self {
        self.config.clients.push(client);
        self
    }

    /// Sets the supported scopes.
    pub fn scopes_supported<S: Into<String>>(
        mut self,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.config.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the SQLite database path (`:memory:` for none).
    pub fn storage_path(mut self, path: impl Into<String>) -> Self {
        self.config.storage_path = path.into();
        self
    }

    /// Opens or closes dynamic client registration.
    pub fn dynamic_registration(mut self, open: bool) -> Self {
        self.config.dynamic_registration = open;
        self
    }

    /// Accepts `http://` loopback client ID metadata document URLs. Tests only.
    pub fn allow_loopback_client_id_documents_for_testing(mut self, allow: bool) -> Self {
        self.config.allow_loopback_client_id_documents_for_testing = allow;
        self
    }

    /// Approves every valid authorization request as `user` without a
    /// login page. Automated conformance tests only.
    pub fn auto_approve_as_user_for_testing(mut self, user: impl Into<String>) -> Self {
        self.config.auto_approve_as_user_for_testing = Some(user.into());
        self
    }

    /// Sets the rate limits.
    pub fn rate_limits(mut self, limits: RateLimits) -> Self {
        self.config.rate_limits = limits;
        self
    }

    /// Sets how long a registered client that was never used is kept.
    pub fn unused_client_lifetime(mut self, d: Duration) -> Self {
        self.config.unused_client_lifetime = d;
        self
    }

    /// Sets the most dynamically registered clients kept.
    pub fn max_clients(mut self, max: usize) -> Self {
        self.config.max_clients = max;
        self
    }

    /// Sets the most authorization requests waiting for a login at once.
    pub fn max_pending_requests(mut self, max: usize) -> Self {
        self.config.max_pending_requests = max;
        self
    }

    /// Sets how often expired state is swept.
    pub fn sweep_interval(mut self, d: Duration) -> Self {
        self.config.sweep_interval = d;
        self
    }

    /// Sets the most password checks run at once.
    pub fn max_concurrent_password_checks(mut self, max: usize) -> Self {
        self.config.max_concurrent_password_checks = max;
        self
    }

    /// Checks the settings and returns them.
    pub fn build(self) -> Result<AuthServerConfig, AuthServerError> {
        let c = self.config;
        let url = url::Url::parse(&c.issuer)
            .map_err(|e| AuthServerError::Config(format!("issuer: {e}")))?;
        if c.issuer.ends_with('/') || url.query().is_some() || url.fragment().is_some() {
            return Err(AuthServerError::Config(
                "issuer must have no trailing slash, query or fragment".into(),
            ));
        }
        if url.scheme() != "https" && !(url.scheme() == "http" && super::util::is_loopback(&url)) {
            return Err(AuthServerError::Config(
                "issuer must be https (or http on a loopback host)".into(),
            ));
        }
        for client in &c.clients {
            if client.auth_method.uses_secret() && client.client_secret.is_none() {
                return Err(AuthServerError::Config(format!(
                    "client {} needs a secret",
                    client.client_id
                )));
            }
            for uri in &client.redirect_uris {
                super::util::check_redirect_uri(uri).map_err(|e| {
                    AuthServerError::Config(format!("client {}: {e}", client.client_id))
                })?;
            }
        }
        c.rate_limits.check()?;
        if c.sweep_interval.is_zero() {
            return Err(AuthServerError::Config(
                "the sweep interval must not be zero".into(),
            ));
        }
        if c.max_concurrent_password_checks == 0 {
            return Err(AuthServerError::Config(
                "at least one password check must be allowed at once".into(),
            ));
        }
        if let Some(user) = &c.auto_approve_as_user_for_testing
            && !c.users.iter().any(|u| &u.name == user)
        {
            return Err(AuthServerError::Config(format!(
                "auto-approve user {user} is not a configured user"
            )));
        }
        Ok(c)
    }
}
