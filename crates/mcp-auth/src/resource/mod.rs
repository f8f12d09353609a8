//! The OAuth 2.1 resource-server side of MCP authorization: a tower layer
//! that demands a bearer token on every request to the MCP endpoint
//! ([`BearerAuthLayer`]), the OAuth 2.0 Protected Resource Metadata
//! document of RFC 9728 ([`protected_resource_router`]), and token
//! validation behind [`TokenValidator`] (JWT access tokens checked against
//! the authorization server's JWKS, [`JwtValidator`], or RFC 7662
//! introspection, [`IntrospectionValidator`]).
//!
//! The authenticated [`Principal`] reaches handlers through the request
//! context: `ctx.extension::<Principal>()` in an `mcp-server` handler, or
//! [`Principal::of`] on an [`mcp_core::RequestContext`].
//!
//! ```no_run
//! use std::sync::Arc;
//! use mcp_auth::resource::{BearerAuthLayer, JwtValidator, ResourceServerConfig, protected_resource_router};
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let validator = JwtValidator::new(
//!     mcp_auth::resource::JwtConfig::new(
//!         "https://auth.example.com",
//!         "https://auth.example.com/jwks.json",
//!         "https://mcp.example.com/mcp",
//!     ),
//! )?;
//! let config = ResourceServerConfig::new("https://mcp.example.com/mcp", Arc::new(validator))
//!     .authorization_server("https://auth.example.com")
//!     .scopes_supported(["files:read", "files:write"]);
//! let server = mcp_builtin::everything::server();
//! let endpoint = mcp_http::McpEndpoint::new(
//!     Arc::new(server.clone()),
//!     server.session_config(),
//!     mcp_http::HttpConfig::loopback(8080),
//! );
//! let app = endpoint
//!     .router()
//!     .layer(BearerAuthLayer::new(config.clone()))
//!     .merge(protected_resource_router(&config));
//! # drop(app);
//! # Ok(())
//! # }
//! ```

mod config;
mod introspection;
mod jwt;
mod layer;
mod metadata;
mod principal;

pub use config::{ConfigError, ResourceServerConfig};
pub use introspection::{IntrospectionConfig, IntrospectionValidator};
pub use jwt::{JwtConfig, JwtValidator};
pub use layer::{BearerAuth, BearerAuthLayer};
pub use metadata::{ProtectedResourceMetadata, protected_resource_router};
pub use principal::{Principal, TokenError, TokenValidator};

/// Whether `url` may be fetched for keys or introspection: `https`, or
/// `http` to a loopback host.
pub(crate) fn fetchable(url: &url::Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        },
        _ => false,
    }
}

/// The scopes in a space-separated `scope` value.
pub(crate) fn split_scopes(scope: &str) -> Vec<String> {
    scope.split_whitespace().map(str::to_owned).collect()
}
