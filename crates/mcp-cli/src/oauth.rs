//! `mcp serve --http ... --oauth`: the endpoint protected by bearer tokens
//! from the built-in authorization server on the same origin, or from an
//! external one (`--oauth-issuer`).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, Result, anyhow, bail};
use mcp_auth::resource::{JwtConfig, JwtValidator, protected_resource_router};
use mcp_auth::server::{ClientConfig, TokenEndpointAuthMethod, UserAccount};
use mcp_auth::{AuthServerConfig, AuthorizationServer, BearerAuthLayer, ResourceServerConfig};

/// The authorization flags of `mcp serve`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct OAuthArgs {
    /// Protect the HTTP endpoint with OAuth 2.1, issuing tokens from a
    /// built-in authorization server on the same origin.
    #[arg(long, requires = "http")]
    pub oauth: bool,
    /// Pre-register a client, `ID[:SECRET]@REDIRECT_URI` (repeatable; with
    /// a secret the client authenticates with HTTP Basic).
    #[arg(long, value_name = "ID[:SECRET]@REDIRECT_URI", requires = "oauth")]
    pub oauth_client: Vec<String>,
    /// Add a login, `NAME:PASSWORD` (repeatable; kept as an Argon2 hash).
    #[arg(long, value_name = "NAME:PASSWORD", requires = "oauth")]
    pub oauth_user: Vec<String>,
    /// Where the built-in authorization server keeps its state (SQLite;
    /// default: `$XDG_STATE_HOME/mcp/oauth.sqlite`).
    #[arg(long, value_name = "PATH", requires = "oauth")]
    pub oauth_db: Option<PathBuf>,
    /// Trust tokens from this external authorization server instead (its
    /// keys are found through its RFC 8414 metadata).
    #[arg(long, value_name = "URL", conflicts_with = "oauth", requires = "http")]
    pub oauth_issuer: Option<String>,
}

impl OAuthArgs {
    /// Whether the endpoint is to be protected.
    pub fn enabled(&self) -> bool {
        self.oauth || self.oauth_issuer.is_some()
    }
}

fn state_file() -> PathBuf {
    crate::target::xdg_dir("XDG_STATE_HOME", ".local/state").join("oauth.sqlite")
}

/// Reads `ID[:SECRET]@REDIRECT_URI`.
fn client(spec: &str) -> Result<ClientConfig> {
    let (credentials, redirect) = spec
        .rsplit_once('@')
        .ok_or_else(|| anyhow!("--oauth-client {spec:?}: expected ID[:SECRET]@REDIRECT_URI"))?;
    let redirect_uris = vec![redirect.to_owned()];
    Ok(match credentials.split_once(':') {
        Some((id, secret)) => ClientConfig::confidential(
            id,
            secret,
            TokenEndpointAuthMethod::ClientSecretBasic,
            redirect_uris,
        ),
        None => ClientConfig::public(credentials, redirect_uris),
    })
}

/// Reads `NAME:PASSWORD`.
fn user(spec: &str) -> Result<UserAccount> {
    let (name, password) = spec
        .split_once(':')
        .ok_or_else(|| anyhow!("--oauth-user: expected NAME:PASSWORD"))?;
    UserAccount::with_password(name, password).map_err(|e| anyhow!("--oauth-user {name}: {e}"))
}

/// Where external authorization server `issuer` publishes its keys (RFC
/// 8414 metadata).
async fn external_keys(issuer: &str) -> Result<String> {
    let http = reqwest::Client::new();
    let metadata = mcp_auth::client::discover_auth_server(&http, issuer)
        .await
        .map_err(|e| anyhow!("{e}"))?
        .ok_or_else(|| anyhow!("{issuer} publishes no authorization server metadata"))?;
    metadata
        .jwks_uri
        .ok_or_else(|| anyhow!("{issuer} publishes no jwks_uri"))
}

/// How people sign in to the console of a host whose MCP endpoint is
/// `resource` at `origin`, protected by `args`: through the same
/// authorization server, for a token the endpoint would take.
pub async fn console_sign_in(
    args: &OAuthArgs,
    origin: &str,
    resource: &str,
) -> Result<mcp_console::SignIn> {
    let (issuer, jwks) = match &args.oauth_issuer {
        Some(issuer) => (issuer.clone(), external_keys(issuer).await?),
        None => (origin.to_owned(), AuthorizationServer::jwks_uri_of(origin)),
    };
    let validator =
        JwtValidator::new(JwtConfig::new(issuer, jwks, resource)).map_err(|e| anyhow!("{e}"))?;
    Ok(mcp_console::SignIn::new(resource, Arc::new(validator)))
}

/// What wraps the endpoint's router: the bearer layer, the protected
/// resource metadata and, built in, the authorization server. `resource`
/// is the Streamable HTTP endpoint; `endpoints` are the server's other
/// endpoints (HTTP+SSE, WebSocket), each a protected resource of its own
/// whose tokens are taken at every endpoint.
pub async fn protect(
    args: &OAuthArgs,
    origin: &str,
    resource: &str,
    endpoints: &[String],
) -> Result<impl FnOnce(axum::Router) -> axum::Router> {
    let (issuer, jwks_url, server) = match &args.oauth_issuer {
        Some(issuer) => {
            let jwks = external_keys(issuer).await?;
            (issuer.clone(), jwks, None)
        }
        None => {
            let db = args.oauth_db.clone().unwrap_or_else(state_file);
            if let Some(dir) = db.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            let mut config = AuthServerConfig::builder(origin)
                .resource(resource)
                .storage_path(db.to_string_lossy().into_owned());
            for endpoint in endpoints {
                config = config.resource(endpoint);
            }
            for spec in &args.oauth_client {
                config = config.client(client(spec)?);
            }
            for spec in &args.oauth_user {
                config = config.user(user(spec)?);
            }
            if args.oauth_user.is_empty() {
                bail!("--oauth needs at least one --oauth-user NAME:PASSWORD to sign in with");
            }
            let config = config.build().map_err(|e| anyhow!("{e}"))?;
            let server = AuthorizationServer::new(config).map_err(|e| anyhow!("{e}"))?;
            (origin.to_owned(), server.jwks_uri(), Some(server))
        }
    };
    let mut jwt = JwtConfig::new(issuer.clone(), jwks_url, resource);
    for endpoint in endpoints {
        jwt = jwt.other_audience(endpoint);
    }
    let validator = JwtValidator::new(jwt).map_err(|e| anyhow!("{e}"))?;
    let mut resource_server =
        ResourceServerConfig::new(resource, Arc::new(validator)).authorization_server(issuer);
    for endpoint in endpoints {
        resource_server = resource_server.endpoint(endpoint);
    }
    Ok(move |router: axum::Router| {
        let mut app = router
            .layer(BearerAuthLayer::new(resource_server.clone()))
            .merge(protected_resource_router(&resource_server));
        if let Some(server) = server {
            app = app.merge(server.router());
        }
        app
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_and_user_specs() {
        assert!(client("app@http://127.0.0.1:9000/callback").is_ok());
        assert!(client("app:s3cret@http://127.0.0.1:9000/callback").is_ok());
        assert!(client("no-redirect").is_err());
        assert!(user("alice:wonderland").is_ok());
        assert!(user("alice").is_err());
    }
}
