//! What the resource server announces and enforces.

use std::sync::Arc;

use super::principal::TokenValidator;

/// A configuration that cannot work.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A URL does not parse.
    #[error("{what} is not a URL: {url}")]
    BadUrl {
        /// Which setting.
        what: &'static str,
        /// The value given.
        url: String,
    },
    /// A URL to fetch from is neither `https` nor `http` on loopback.
    #[error("{what} must be https (or http on a loopback address): {url}")]
    Insecure {
        /// Which setting.
        what: &'static str,
        /// The value given.
        url: String,
    },
    /// The HTTP client could not be built.
    #[error("HTTP client: {0}")]
    Client(String),
}

/// The protected resource: its canonical URI, who issues its tokens, its
/// scopes, and how tokens are checked.
#[derive(Clone)]
#[non_exhaustive]
pub struct ResourceServerConfig {
    /// The canonical resource URI of the MCP endpoint
    /// (`https://mcp.example.com/mcp`), announced exactly as given.
    pub resource: String,
    /// Issuer URLs of the authorization servers that issue tokens for it.
    pub authorization_servers: Vec<String>,
    /// Scopes announced in the metadata.
    pub scopes_supported: Vec<String>,
    /// Scopes every request needs; a token without them gets a `403`.
    pub required_scopes: Vec<String>,
    /// A human-readable name for the metadata.
    pub resource_name: Option<String>,
    /// Where the metadata is announced, if not derived from `resource`.
    pub metadata_url: Option<String>,
    /// The other endpoints of the same server (HTTP+SSE, WebSocket), each
    /// a protected resource of its own: its metadata is served at its own
    /// well-known path and named in the refusals of requests to its path.
    pub endpoints: Vec<String>,
    /// Checks the tokens.
    pub validator: Arc<dyn TokenValidator>,
}

impl std::fmt::Debug for ResourceServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServerConfig")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("scopes_supported", &self.scopes_supported)
            .field("required_scopes", &self.required_scopes)
            .finish_non_exhaustive()
    }
}

impl ResourceServerConfig {
    /// A resource at `resource` whose tokens `validator` checks.
    pub fn new(resource: impl Into<String>, validator: Arc<dyn TokenValidator>) -> Self {
        ResourceServerConfig {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            required_scopes: Vec::new(),
            resource_name: None,
            metadata_url: None,
            endpoints: Vec::new(),
            validator,
        }
    }

    /// Adds an authorization server (its issuer URL).
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// Sets the scopes announced in the metadata.
    pub fn scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the scopes every request needs.
    pub fn required_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the human-readable name.
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// Announces the metadata at this URL instead of the one derived from
    /// the resource (behind a proxy that rewrites paths, say).
    pub fn metadata_url(mut self, url: impl Into<String>) -> Self {
        self.metadata_url = Some(url.into());
        self
    }

    /// Adds another endpoint of the same server (`http://host/sse`, say)
    /// with its own resource identifier; its tokens must be taken by the
    /// validator too.
    pub fn endpoint(mut self, resource: impl Into<String>) -> Self {
        self.endpoints.push(resource.into());
        self
    }

    /// The metadata URL of each other endpoint, by the path of its
    /// requests: `(path, metadata URL)`.
    pub fn endpoint_metadata_urls(&self) -> Vec<(String, String)> {
        self.endpoints
            .iter()
            .filter_map(|resource| {
                let url = url::Url::parse(resource).ok()?;
                let path = url.path().trim_end_matches('/');
                let origin = url.origin().ascii_serialization();
                Some((path.to_owned(), format!("{origin}{WELL_KNOWN}{path}")))
            })
            .collect()
    }

    /// The URL of the metadata document, for `resource_metadata` in
    /// challenges: the well-known path with the resource's path appended
    /// (RFC 9728, section 3.1).
    pub fn resource_metadata_url(&self) -> String {
        if let Some(url) = &self.metadata_url {
            return url.clone();
        }
        match url::Url::parse(&self.resource) {
            Ok(url) => {
                let origin = url.origin().ascii_serialization();
                format!("{origin}{}", self.metadata_paths()[0])
            }
            Err(_) => format!("{}{WELL_KNOWN}", self.resource.trim_end_matches('/')),
        }
    }

    /// The paths the metadata is served at: the path-appended form first,
    /// then the root form (the same when the resource has no path).
    pub fn metadata_paths(&self) -> Vec<String> {
        let path = url::Url::parse(&self.resource)
            .map(|u| u.path().trim_end_matches('/').to_owned())
            .unwrap_or_default();
        if path.is_empty() {
            vec![WELL_KNOWN.to_owned()]
        } else {
            vec![format!("{WELL_KNOWN}{path}"), WELL_KNOWN.to_owned()]
        }
    }

    /// The scopes named in a `401` challenge: those every request needs,
    /// or else those supported.
    pub(crate) fn challenge_scopes(&self) -> &[String] {
        if self.required_scopes.is_empty() {
            &self.scopes_supported
        } else {
            &self.required_scopes
        }
    }
}

/// The well-known path of protected resource metadata.
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
