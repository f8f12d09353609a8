//! Who a valid token speaks for, and the validator trait.

use std::sync::Arc;
use std::time::SystemTime;

use mcp_core::BoxFuture;
use serde_json::{Map, Value};

/// The caller an access token was issued to, as the validator found it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Principal {
    /// The resource owner (`sub`), if the token names one.
    pub subject: Option<String>,
    /// The OAuth client the token was issued to (`client_id`, or `azp`).
    pub client_id: Option<String>,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// When the token expires (`exp`).
    pub expires_at: Option<SystemTime>,
    /// Every claim of the token (JWT payload or introspection response).
    pub claims: Map<String, Value>,
}

impl Principal {
    /// A principal with these scopes and nothing else.
    pub fn new(scopes: Vec<String>) -> Self {
        Principal {
            subject: None,
            client_id: None,
            scopes,
            expires_at: None,
            claims: Map::new(),
        }
    }

    /// Sets the subject.
    pub fn with_subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }

    /// Sets the client id.
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// Whether every scope of `required` was granted.
    pub fn has_scopes<S: AsRef<str>>(&self, required: &[S]) -> bool {
        required
            .iter()
            .all(|r| self.scopes.iter().any(|s| s == r.as_ref()))
    }

    /// Who this principal is as an owner of sessions and tasks: the
    /// token's issuer (`iss`), subject and client together, so that two
    /// users, or one user through two clients, never share them.
    pub fn owner(&self) -> mcp_core::Owner {
        let issuer = self.claims.get("iss").and_then(Value::as_str);
        let key = serde_json::json!([issuer, self.subject, self.client_id]).to_string();
        mcp_core::Owner::new(key)
    }

    /// The principal the HTTP layer authenticated for this request, if any.
    pub fn of(ctx: &mcp_core::RequestContext) -> Option<Arc<Principal>> {
        ctx.extensions().get::<Principal>()
    }
}

/// Why a token was not accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Malformed, badly signed, revoked, for another resource or issuer...
    #[error("invalid token: {0}")]
    Invalid(String),
    /// Past its expiry (or not valid yet).
    #[error("token expired or not yet valid")]
    Expired,
    /// The token could not be checked now (the key set or introspection
    /// endpoint is unreachable); the client may retry later.
    #[error("cannot validate the token now: {0}")]
    Unavailable(String),
}

/// Checks a bearer token and says who it speaks for.
pub trait TokenValidator: Send + Sync + 'static {
    /// Validates `token` for this resource.
    fn validate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, TokenError>>;
}

impl<T: TokenValidator + ?Sized> TokenValidator for Arc<T> {
    fn validate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, TokenError>> {
        (**self).validate(token)
    }
}

/// Reads the standard claims of a JWT payload or introspection response.
pub(crate) fn principal_from_claims(claims: Map<String, Value>) -> Principal {
    let scopes = match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) => super::split_scopes(s),
        (_, Some(Value::Array(items))) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        (_, Some(Value::String(s))) => super::split_scopes(s),
        _ => Vec::new(),
    };
    let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
    let expires_at = claims
        .get("exp")
        .and_then(Value::as_u64)
        .map(|exp| SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(exp));
    Principal {
        subject: text("sub"),
        client_id: text("client_id").or_else(|| text("azp")),
        scopes,
        expires_at,
        claims,
    }
}

/// Whether the `aud` claim (a string or an array) names `resource`.
pub(crate) fn audience_contains(aud: Option<&Value>, resource: &str) -> bool {
    let same = |a: &str| a == resource || a.trim_end_matches('/') == resource.trim_end_matches('/');
    match aud {
        Some(Value::String(a)) => same(a),
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).any(same),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_come_from_scope_or_scp() {
        let claims = |v: Value| v.as_object().cloned().unwrap_or_default();
        let p = principal_from_claims(claims(serde_json::json!({"scope": "a b", "sub": "u"})));
        assert_eq!(p.scopes, ["a", "b"]);
        assert_eq!(p.subject.as_deref(), Some("u"));
        let p = principal_from_claims(claims(serde_json::json!({"scp": ["x"], "azp": "c"})));
        assert_eq!(p.scopes, ["x"]);
        assert_eq!(p.client_id.as_deref(), Some("c"));
        assert!(p.has_scopes(&["x"]) && !p.has_scopes(&["x", "y"]));
    }

    #[test]
    fn audience_may_be_string_or_array() {
        let r = "https://mcp.example.com/mcp";
        assert!(audience_contains(Some(&Value::from(r)), r));
        assert!(audience_contains(Some(&serde_json::json!(["o", r])), r));
        assert!(!audience_contains(Some(&Value::from("https://other")), r));
        assert!(!audience_contains(None, r));
    }
}
