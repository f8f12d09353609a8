//! Opaque tokens checked by RFC 7662 token introspection, with a cache
//! keyed by a SHA-256 digest of the token.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use mcp_core::BoxFuture;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::config::ConfigError;
use super::principal::{
    Principal, TokenError, TokenValidator, audience_contains, principal_from_claims,
};
use mcp_core::sync::MutexExt as _;

/// Settings of an [`IntrospectionValidator`].
#[derive(Clone)]
#[non_exhaustive]
pub struct IntrospectionConfig {
    /// The introspection endpoint.
    pub endpoint: String,
    /// This resource server's client id at the authorization server.
    pub client_id: String,
    /// Its client secret (sent with `client_secret_basic`).
    pub client_secret: String,
    /// The resource every token must be issued for (`aud`).
    pub resource: String,
    /// The issuer the response must name in `iss`, if set.
    pub issuer: Option<String>,
    /// Longest time an active result is reused (never past the token's `exp`).
    pub max_cache_ttl: Duration,
    /// How long an inactive result is reused.
    pub negative_cache_ttl: Duration,
    /// Most results cached at once.
    pub max_cache_entries: usize,
    /// Timeout of one introspection call.
    pub timeout: Duration,
}

impl std::fmt::Debug for IntrospectionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionConfig")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl IntrospectionConfig {
    /// Introspection at `endpoint` with these client credentials, for
    /// tokens of `resource`; results cached up to 5 minutes, inactive ones
    /// 10 seconds, 10 000 at most.
    pub fn new(
        endpoint: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
        resource: impl Into<String>,
    ) -> Self {
        IntrospectionConfig {
            endpoint: endpoint.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            resource: resource.into(),
            issuer: None,
            max_cache_ttl: Duration::from_secs(300),
            negative_cache_ttl: Duration::from_secs(10),
            max_cache_entries: 10_000,
            timeout: Duration::from_secs(10),
        }
    }

    /// Requires `iss` in responses to be `issuer`.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Sets the longest reuse of an active result.
    pub fn max_cache_ttl(mut self, ttl: Duration) -> Self {
        self.max_cache_ttl = ttl;
        self
    }

    /// Sets the reuse of an inactive result.
    pub fn negative_cache_ttl(mut self, ttl: Duration) -> Self {
        self.negative_cache_ttl = ttl;
        self
    }

    /// Sets how many results are cached at most.
    pub fn max_cache_entries(mut self, n: usize) -> Self {
        self.max_cache_entries = n;
        self
    }

    /// Sets the timeout of one call.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// Validates tokens by asking the authorization server (RFC 7662).
pub struct IntrospectionValidator {
    config: IntrospectionConfig,
    http: reqwest::Client,
    authorization: String,
    cache: Mutex<HashMap<[u8; 32], Cached>>,
}

impl std::fmt::Debug for IntrospectionValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionValidator")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

struct Cached {
    outcome: Result<Principal, TokenError>,
    until: Instant,
}

impl IntrospectionValidator {
    /// A validator for `config`. The endpoint must be `https` (or `http`
    /// on loopback).
    pub fn new(config: IntrospectionConfig) -> Result<Self, ConfigError> {
        let url = url::Url::parse(&config.endpoint).map_err(|_| ConfigError::BadUrl {
            what: "introspection endpoint",
            url: config.endpoint.clone(),
        })?;
        if !super::fetchable(&url) {
            return Err(ConfigError::Insecure {
                what: "introspection endpoint",
                url: config.endpoint.clone(),
            });
        }
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ConfigError::Client(e.to_string()))?;
        let authorization =
            crate::common::basic_credentials(&config.client_id, &config.client_secret);
        Ok(IntrospectionValidator {
            config,
            http,
            authorization,
            cache: Mutex::new(HashMap::new()),
        })
    }

    fn cached(&self, key: &[u8; 32]) -> Option<Result<Principal, TokenError>> {
        let cache = self.cache.locked();
        cache
            .get(key)
            .filter(|c| c.until > Instant::now())
            .map(|c| c.outcome.clone())
    }

    fn remember(&self, key: [u8; 32], outcome: &Result<Principal, TokenError>) {
        let ttl = match outcome {
            Ok(principal) => {
                let left = principal
                    .expires_at
                    .and_then(|exp| exp.duration_since(SystemTime::now()).ok())
                    .unwrap_or(self.config.max_cache_ttl);
                left.min(self.config.max_cache_ttl)
            }
            Err(TokenError::Unavailable(_)) => return,
            Err(_) => self.config.negative_cache_ttl,
        };
        if ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut cache = self.cache.locked();
        if cache.len() >= self.config.max_cache_entries {
            cache.retain(|_, c| c.until > now);
            if cache.len() >= self.config.max_cache_entries {
                cache.clear();
            }
        }
        cache.insert(
            key,
            Cached {
                outcome: outcome.clone(),
                until: now + ttl,
            },
        );
    }

    async fn introspect(&self, token: &str) -> Result<Principal, TokenError> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let response = self
            .http
            .post(&self.config.endpoint)
            .header(reqwest::header::AUTHORIZATION, &self.authorization)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| TokenError::Unavailable(format!("introspection: {e}")))?;
        if !response.status().is_success() {
            return Err(TokenError::Unavailable(format!(
                "introspection: HTTP {}",
                response.status()
            )));
        }
        let claims: Map<String, Value> = response
            .json()
            .await
            .map_err(|e| TokenError::Unavailable(format!("introspection response: {e}")))?;
        self.judge(claims)
    }

    fn judge(&self, claims: Map<String, Value>) -> Result<Principal, TokenError> {
        if claims.get("active") != Some(&Value::Bool(true)) {
            return Err(TokenError::Invalid("the token is not active".into()));
        }
        if let Some(issuer) = &self.config.issuer
            && claims.get("iss").and_then(Value::as_str) != Some(issuer.as_str())
        {
            return Err(TokenError::Invalid("unexpected issuer".into()));
        }
        let bound = audience_contains(claims.get("aud"), &self.config.resource)
            || audience_contains(claims.get("resource"), &self.config.resource);
        if !bound {
            return Err(TokenError::Invalid(
                "the token was issued for another resource".into(),
            ));
        }
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        if claims
            .get("exp")
            .and_then(Value::as_u64)
            .is_some_and(|exp| exp <= now)
            || claims
                .get("nbf")
                .and_then(Value::as_u64)
                .is_some_and(|nbf| nbf > now)
        {
            return Err(TokenError::Expired);
        }
        Ok(principal_from_claims(claims))
    }
}

impl TokenValidator for IntrospectionValidator {
    fn validate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, TokenError>> {
        Box::pin(async move {
            let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
            if let Some(outcome) = self.cached(&key) {
                tracing::debug!("introspection result from cache");
                return outcome;
            }
            let outcome = self.introspect(token).await;
            self.remember(key, &outcome);
            outcome
        })
    }
}
