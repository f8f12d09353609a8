//! JWT access tokens (RFC 9068) checked against the authorization
//! server's JSON Web Key Set.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind};
use mcp_core::BoxFuture;
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::config::ConfigError;
use super::principal::{Principal, TokenError, TokenValidator, principal_from_claims};
use mcp_core::sync::RwLockExt as _;

/// Settings of a [`JwtValidator`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct JwtConfig {
    /// The `iss` every token must carry (the authorization server's issuer).
    pub issuer: String,
    /// Where the authorization server publishes its keys.
    pub jwks_url: String,
    /// The resource every token must name in `aud`.
    pub audience: String,
    /// Other resources a token may name in `aud` instead (the other
    /// endpoints of the same server).
    pub other_audiences: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
    /// An unknown `kid` re-fetches the key set at most this often.
    pub min_refetch_interval: Duration,
    /// Keys older than this are re-fetched before use.
    pub keys_max_age: Duration,
    /// Timeout of a key-set fetch.
    pub fetch_timeout: Duration,
}

impl JwtConfig {
    /// Tokens of `issuer`, keys from `jwks_url`, for `audience`; 30 s
    /// leeway, re-fetch at most every 10 s, keys kept at most an hour.
    pub fn new(
        issuer: impl Into<String>,
        jwks_url: impl Into<String>,
        audience: impl Into<String>,
    ) -> Self {
        JwtConfig {
            issuer: issuer.into(),
            jwks_url: jwks_url.into(),
            audience: audience.into(),
            other_audiences: Vec::new(),
            leeway: Duration::from_secs(30),
            min_refetch_interval: Duration::from_secs(10),
            keys_max_age: Duration::from_secs(3600),
            fetch_timeout: Duration::from_secs(10),
        }
    }

    /// Takes tokens for `audience` too.
    pub fn other_audience(mut self, audience: impl Into<String>) -> Self {
        self.other_audiences.push(audience.into());
        self
    }

    /// Sets the clock skew allowed.
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// Sets how often an unknown `kid` may re-fetch the key set.
    pub fn min_refetch_interval(mut self, interval: Duration) -> Self {
        self.min_refetch_interval = interval;
        self
    }

    /// Sets how long fetched keys are used.
    pub fn keys_max_age(mut self, age: Duration) -> Self {
        self.keys_max_age = age;
        self
    }

    /// Sets the fetch timeout.
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.fetch_timeout = timeout;
        self
    }
}

/// Validates JWT access tokens signed with ES256 or RS256.
pub struct JwtValidator {
    config: JwtConfig,
    http: reqwest::Client,
    keys: RwLock<Arc<KeySet>>,
    /// Serializes fetches; holds when the last one was made.
    fetch: tokio::sync::Mutex<Option<Instant>>,
}

impl std::fmt::Debug for JwtValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtValidator")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct KeySet {
    keys: Vec<Key>,
    fetched: Option<Instant>,
}

struct Key {
    kid: Option<String>,
    family: Family,
    key: DecodingKey,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    Ec,
    Rsa,
}

impl JwtValidator {
    /// A validator for `config`. The key-set URL must be `https` (or
    /// `http` on loopback).
    pub fn new(config: JwtConfig) -> Result<Self, ConfigError> {
        let url = url::Url::parse(&config.jwks_url).map_err(|_| ConfigError::BadUrl {
            what: "jwks_url",
            url: config.jwks_url.clone(),
        })?;
        if !super::fetchable(&url) {
            return Err(ConfigError::Insecure {
                what: "jwks_url",
                url: config.jwks_url.clone(),
            });
        }
        let http = reqwest::Client::builder()
            .timeout(config.fetch_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ConfigError::Client(e.to_string()))?;
        Ok(JwtValidator {
            config,
            http,
            keys: RwLock::default(),
            fetch: tokio::sync::Mutex::new(None),
        })
    }

    fn snapshot(&self) -> Arc<KeySet> {
        Arc::clone(&self.keys.read_locked())
    }

    /// The keys to try for a token with `kid` and `family`, fetching the
    /// key set when it is missing, stale, or lacks `kid`.
    async fn keys_for(&self, kid: Option<&str>, family: Family) -> Result<Arc<KeySet>, TokenError> {
        let fits = |set: &KeySet| set.keys.iter().any(|k| k.matches(kid, family));
        let fresh = |set: &KeySet| {
            set.fetched
                .is_some_and(|t| t.elapsed() < self.config.keys_max_age)
        };
        let set = self.snapshot();
        if fresh(&set) && fits(&set) {
            return Ok(set);
        }
        let mut last = self.fetch.lock().await;
        let set = self.snapshot();
        if fresh(&set) && fits(&set) {
            return Ok(set);
        }
        let allowed =
            last.is_none_or(|t| t.elapsed() >= self.config.min_refetch_interval) || !fresh(&set);
        if !allowed {
            return Ok(set);
        }
        *last = Some(Instant::now());
        match self.fetch_keys().await {
            Ok(keys) => {
                tracing::debug!(count = keys.len(), url = %self.config.jwks_url, "fetched JWKS");
                let set = Arc::new(KeySet {
                    keys,
                    fetched: Some(Instant::now()),
                });
                *self.keys.write_locked() = Arc::clone(&set);
                Ok(set)
            }
            // Stale keys are better than none while the server is down.
            Err(e) if !set.keys.is_empty() => {
                tracing::warn!("JWKS fetch failed, using the keys held: {e}");
                Ok(set)
            }
            Err(e) => Err(TokenError::Unavailable(e)),
        }
    }

    async fn fetch_keys(&self) -> Result<Vec<Key>, String> {
        const MAX_BYTES: usize = 1 << 20;
        let response = self
            .http
            .get(&self.config.jwks_url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("JWKS: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("JWKS: HTTP {}", response.status()));
        }
        let body = response.bytes().await.map_err(|e| format!("JWKS: {e}"))?;
        if body.len() > MAX_BYTES {
            return Err("JWKS: document too large".into());
        }
        #[derive(serde::Deserialize)]
        struct RawSet {
            keys: Vec<Value>,
        }
        let raw: RawSet = serde_json::from_slice(&body).map_err(|e| format!("JWKS: {e}"))?;
        Ok(raw.keys.into_iter().filter_map(Key::from_value).collect())
    }

    fn check(&self, token: &str, key: &Key, alg: Algorithm) -> Result<Principal, TokenError> {
        let mut validation = Validation::new(alg);
        validation.leeway = self.config.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.config.issuer]);
        let mut audiences = vec![self.config.audience.as_str()];
        audiences.extend(self.config.other_audiences.iter().map(String::as_str));
        validation.set_audience(&audiences);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|e| match e.kind() {
                ErrorKind::ExpiredSignature | ErrorKind::ImmatureSignature => TokenError::Expired,
                ErrorKind::InvalidAudience => {
                    TokenError::Invalid("the token was issued for another resource".into())
                }
                ErrorKind::InvalidIssuer => TokenError::Invalid("unexpected issuer".into()),
                ErrorKind::InvalidSignature => TokenError::Invalid("bad signature".into()),
                ErrorKind::MissingRequiredClaim(claim) => {
                    TokenError::Invalid(format!("missing claim {claim}"))
                }
                _ => TokenError::Invalid(format!("{e}")),
            })?;
        Ok(principal_from_claims(data.claims))
    }
}

impl Key {
    fn from_value(value: Value) -> Option<Key> {
        if value
            .get("use")
            .and_then(Value::as_str)
            .is_some_and(|u| u != "sig")
        {
            return None;
        }
        let jwk: Jwk = serde_json::from_value(value).ok()?;
        let family = match &jwk.algorithm {
            AlgorithmParameters::EllipticCurve(_) => Family::Ec,
            AlgorithmParameters::RSA(_) => Family::Rsa,
            _ => return None,
        };
        let key = DecodingKey::from_jwk(&jwk).ok()?;
        Some(Key {
            kid: jwk.common.key_id.clone(),
            family,
            key,
        })
    }

    fn matches(&self, kid: Option<&str>, family: Family) -> bool {
        self.family == family && kid.is_none_or(|kid| self.kid.as_deref() == Some(kid))
    }
}

impl TokenValidator for JwtValidator {
    fn validate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, TokenError>> {
        Box::pin(async move {
            let header = jsonwebtoken::decode_header(token)
                .map_err(|e| TokenError::Invalid(format!("not a JWT: {e}")))?;
            let family = match header.alg {
                Algorithm::ES256 => Family::Ec,
                Algorithm::RS256 => Family::Rsa,
                other => {
                    return Err(TokenError::Invalid(format!(
                        "algorithm {other:?} is not accepted"
                    )));
                }
            };
            if let Some(typ) = &header.typ {
                let typ = typ.to_ascii_lowercase();
                if !matches!(typ.as_str(), "at+jwt" | "application/at+jwt" | "jwt") {
                    return Err(TokenError::Invalid(format!(
                        "token type {typ} is not an access token"
                    )));
                }
            }
            let kid = header.kid.as_deref();
            let set = self.keys_for(kid, family).await?;
            let mut last = TokenError::Invalid("no key of the authorization server fits".into());
            for key in set.keys.iter().filter(|k| k.matches(kid, family)) {
                match self.check(token, key, header.alg) {
                    Ok(principal) => return Ok(principal),
                    Err(e) => last = e,
                }
            }
            Err(last)
        })
    }
}
