//! Finding the authorization server: the protected resource metadata
//! (RFC 9728) of the MCP server, then the authorization server's metadata
//! (RFC 8414 or OpenID discovery), at the URLs the specification lists in
//! the order it lists them.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use url::Url;

use super::OAuthError;

pub use crate::resource::ProtectedResourceMetadata;

/// Authorization server metadata (RFC 8414 / OpenID discovery).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuthServerMetadata {
    /// The issuer identifier.
    pub issuer: String,
    /// Where the user authorizes.
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where codes become tokens.
    #[serde(default)]
    pub token_endpoint: Option<String>,
    /// Dynamic client registration (RFC 7591).
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// Scopes the server knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// PKCE methods.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Client authentication methods at the token endpoint.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Grant types.
    #[serde(default)]
    pub grant_types_supported: Option<Vec<String>>,
    /// Client ID metadata documents are accepted as `client_id`.
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
    /// Authorization responses carry `iss` (RFC 9207).
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// Where the server publishes its signing keys.
    #[serde(default)]
    pub jwks_uri: Option<String>,
    /// Algorithms accepted in DPoP proofs (RFC 9449).
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl AuthServerMetadata {
    /// The endpoints an authorization server without metadata has
    /// (the 2025-03-26 fallback): `/authorize`, `/token`, `/register` at
    /// `base`.
    pub fn default_endpoints(base: &Url) -> AuthServerMetadata {
        let at = |path: &str| base.join(path).map(|u| u.to_string()).ok();
        AuthServerMetadata {
            issuer: origin(base),
            authorization_endpoint: at("/authorize"),
            token_endpoint: at("/token"),
            registration_endpoint: at("/register"),
            ..Default::default()
        }
    }
}

/// `scheme://host[:port]` of a URL.
pub(crate) fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// The well-known URLs of `suffix` for `url` with its path appended, then
/// at the root (RFC 9728 §3.1, RFC 8414 §3.1).
fn well_known(url: &Url, suffix: &str) -> Vec<String> {
    let base = origin(url);
    let path = url.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(format!("{base}/.well-known/{suffix}{path}"));
    }
    urls.push(format!("{base}/.well-known/{suffix}"));
    urls
}

/// Where to look for the protected resource metadata of the MCP server
/// at `server`: the challenge's `resource_metadata` first, then the
/// well-known URLs.
pub fn resource_metadata_urls(server: &Url, from_challenge: Option<&str>) -> Vec<String> {
    let mut urls: Vec<String> = from_challenge.map(str::to_owned).into_iter().collect();
    urls.extend(well_known(server, "oauth-protected-resource"));
    urls
}

/// Where to look for an issuer's metadata, in the specification's order:
/// RFC 8414 with path insertion, OpenID with path insertion, OpenID with
/// the path appended (for an issuer without a path: RFC 8414, OpenID).
pub fn auth_server_metadata_urls(issuer: &Url) -> Vec<String> {
    let base = origin(issuer);
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        return vec![
            format!("{base}/.well-known/oauth-authorization-server"),
            format!("{base}/.well-known/openid-configuration"),
        ];
    }
    vec![
        format!("{base}/.well-known/oauth-authorization-server{path}"),
        format!("{base}/.well-known/openid-configuration{path}"),
        format!("{base}{path}/.well-known/openid-configuration"),
    ]
}

/// GETs `url` and reads it as JSON `T`; `None` when it is not there (or
/// not that JSON).
async fn fetch<T: for<'de> Deserialize<'de>>(
    http: &reqwest::Client,
    url: &str,
) -> Result<Option<T>, OAuthError> {
    let response = http
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| OAuthError::Http(format!("GET {url}: {e}")))?;
    if !response.status().is_success() {
        tracing::debug!(url, status = %response.status(), "no metadata");
        return Ok(None);
    }
    let value: Value = match response.json().await {
        Ok(v) => v,
        Err(_) => return Ok(None),
    };
    Ok(serde_json::from_value(value).ok())
}

/// The protected resource metadata, from the first URL that has it.
pub async fn discover_resource(
    http: &reqwest::Client,
    server: &Url,
    from_challenge: Option<&str>,
) -> Result<Option<ProtectedResourceMetadata>, OAuthError> {
    for url in resource_metadata_urls(server, from_challenge) {
        if let Some(found) = fetch::<ProtectedResourceMetadata>(http, &url).await? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// The issuer's metadata, from the first URL that has it; its `issuer`
/// must be the one asked for.
pub async fn discover_auth_server(
    http: &reqwest::Client,
    issuer: &str,
) -> Result<Option<AuthServerMetadata>, OAuthError> {
    let url =
        Url::parse(issuer).map_err(|e| OAuthError::Discovery(format!("issuer {issuer:?}: {e}")))?;
    for candidate in auth_server_metadata_urls(&url) {
        if let Some(found) = fetch::<AuthServerMetadata>(http, &candidate).await? {
            if found.issuer != issuer {
                return Err(OAuthError::Discovery(format!(
                    "the metadata at {candidate} names issuer {:?}, not {issuer:?}",
                    found.issuer
                )));
            }
            return Ok(Some(found));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_urls_in_order() {
        let server = Url::parse("https://mcp.example.com/public/mcp").unwrap();
        assert_eq!(
            resource_metadata_urls(&server, Some("https://x/prm")),
            [
                "https://x/prm",
                "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ]
        );
        let tenant = Url::parse("https://auth.example.com/tenant1").unwrap();
        assert_eq!(
            auth_server_metadata_urls(&tenant),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        let root = Url::parse("https://auth.example.com").unwrap();
        assert_eq!(auth_server_metadata_urls(&root).len(), 2);
        let fallback = AuthServerMetadata::default_endpoints(&server);
        assert_eq!(
            fallback.token_endpoint.as_deref(),
            Some("https://mcp.example.com/token")
        );
    }
}
