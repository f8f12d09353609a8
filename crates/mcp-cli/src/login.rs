//! `mcp login`, `mcp logout` and `mcp credentials`: signing in to a
//! server ahead of time, forgetting what is kept for it, and listing what
//! is kept (never the secrets themselves).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result, anyhow, bail};
use mcp_auth::client::{Credentials, FileTokenStore, TokenStore as _};

use crate::stdout::print_out;
use crate::target::{SignIn, Target, credentials_file, oauth_client, sign_in_failed};

/// The flags of `mcp login`.
#[derive(clap::Args, Debug, Clone)]
pub struct LoginArgs {
    /// The server to sign in to: an http(s):// or ws(s):// URL, or
    /// HOST:PORT (meaning http://HOST:PORT/mcp).
    #[arg(
        long,
        short = 's',
        value_name = "URL",
        required_unless_present = "list"
    )]
    pub server: Option<String>,
    /// List the servers signed in to instead, as `mcp credentials` does.
    #[arg(long, conflicts_with = "server")]
    pub list: bool,
    /// Seconds the sign-in page waits for you before mcp gives up.
    #[arg(long, default_value_t = 300.0, value_name = "SECONDS")]
    pub sign_in_timeout: f64,
    /// Do not open a browser: show the address, and take the address the
    /// browser comes back to pasted on stdin.
    #[arg(long)]
    pub no_browser: bool,
}

/// The flags of `mcp logout`.
#[derive(clap::Args, Debug, Clone)]
pub struct LogoutArgs {
    /// The server whose tokens and client registration are forgotten.
    #[arg(long, short = 's', value_name = "URL")]
    pub server: String,
}

/// The URL of a server reached over the network.
fn server_url(spec: &str) -> Result<String> {
    match Target::parse(spec)? {
        Target::Http(url) | Target::WebSocket(url) => Ok(url),
        Target::Command(_) => {
            bail!("{spec:?} is not a URL: signing in is for servers reached over HTTP or WebSocket")
        }
    }
}

/// `mcp login`: signs in to the server now and keeps the credentials
/// (or, with `--list`, lists what is kept).
pub async fn login(args: &LoginArgs) -> Result<()> {
    let Some(spec) = args.server.as_deref().filter(|_| !args.list) else {
        return list();
    };
    let url = server_url(spec)?;
    let wait = Duration::try_from_secs_f64(args.sign_in_timeout)
        .ok()
        .filter(|d| !d.is_zero())
        .context("--sign-in-timeout must be a positive number of seconds")?;
    let sign_in = SignIn {
        wait,
        browser: !args.no_browser,
        ..SignIn::default()
    };
    let client = oauth_client(&url, &sign_in, &[]).await?;
    let signed_in = client
        .sign_in()
        .await
        .map_err(|e| sign_in_failed(&Target::Http(url.clone()), &e))?;
    if !signed_in {
        return print_out(&format!("{url} asks for no sign-in; nothing to keep.\n"));
    }
    let tokens = client.tokens().await;
    let scope = tokens
        .as_ref()
        .and_then(|t| t.scope.clone())
        .unwrap_or_default();
    let expires = tokens
        .as_ref()
        .map(|t| expiry(t.expires_at, t.refresh_token.is_some(), now()))
        .unwrap_or_default();
    print_out(&format!(
        "Signed in to {url} (scopes: {}; token expires {expires}).\nThe credentials are kept in {}.\n",
        if scope.is_empty() { "none" } else { &scope },
        credentials_file().display()
    ))
}

/// `mcp logout`: forgets the tokens and the client registration kept for
/// the server.
pub async fn logout(args: &LogoutArgs) -> Result<()> {
    let url = server_url(&args.server)?;
    let client = oauth_client(&url, &SignIn::background(), &[]).await?;
    let forgotten = client.forget().await.map_err(|e| anyhow!("{e}"))?;
    if forgotten.is_empty() {
        return print_out(&format!("Nothing was kept for {url}.\n"));
    }
    print_out(&format!(
        "Signed out of {url}: the tokens and client registration kept for {} are forgotten.\n",
        forgotten.join(", ")
    ))
}

/// `mcp credentials` (and `mcp login --list`): what is kept, by issuer:
/// the server the tokens are for, the client id, the scopes and when the
/// token expires. Tokens and secrets are never shown.
pub fn list() -> Result<()> {
    let file = credentials_file();
    let kept = FileTokenStore::new(&file)
        .list()
        .map_err(|e| anyhow!("{e}"))?;
    if kept.is_empty() {
        return print_out(&format!("No credentials are kept ({}).\n", file.display()));
    }
    print_out(&credentials_table(&kept, now()))
}

/// The listing of `kept`, one row per issuer, at `now` (Unix seconds).
fn credentials_table(kept: &[(String, Credentials)], now: u64) -> String {
    let mut rows = vec![[
        "ISSUER".to_owned(),
        "SERVER".to_owned(),
        "CLIENT ID".to_owned(),
        "SCOPES".to_owned(),
        "TOKEN EXPIRES".to_owned(),
    ]];
    for (issuer, credentials) in kept {
        let tokens = credentials.tokens.as_ref();
        let dash = || "-".to_owned();
        rows.push([
            issuer.clone(),
            tokens.and_then(|t| t.resource.clone()).unwrap_or_else(dash),
            credentials
                .registration
                .as_ref()
                .map(|r| r.client_id.clone())
                .unwrap_or_else(dash),
            tokens
                .and_then(|t| t.scope.clone())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(dash),
            tokens
                .map(|t| expiry(t.expires_at, t.refresh_token.is_some(), now))
                .unwrap_or_else(|| "not signed in".to_owned()),
        ]);
    }
    let mut widths = [0; 5];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:width$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// When a token expires, for people: `in 59m`, `2h ago`, `never`, with
/// `(refreshable)` when a refresh token is kept.
fn expiry(expires_at: Option<u64>, refreshable: bool, now: u64) -> String {
    let when = match expires_at {
        None => "never".to_owned(),
        Some(at) if at > now => format!("in {}", span(at - now)),
        Some(at) => format!("{} ago", span(now - at)),
    };
    match refreshable {
        true => format!("{when} (refreshable)"),
        false => when,
    }
}

/// A span of seconds in its largest unit.
fn span(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_shows_no_secrets() {
        let kept: Vec<(String, Credentials)> = serde_json::from_value(serde_json::json!([
            ["http://127.0.0.1:4000", {
                "registration": {"client_id": "c-1", "client_secret": "s3cret", "auth_method": "none"},
                "tokens": {"access_token": "at-123", "refresh_token": "rt-456",
                           "expires_at": 1_000_600, "scope": "mcp offline_access",
                           "resource": "http://127.0.0.1:4000/mcp"}
            }],
            ["https://auth.example", {"registration": {"client_id": "c-2", "auth_method": "none"}}]
        ]))
        .unwrap();
        let table = credentials_table(&kept, 1_000_000);
        assert!(table.starts_with("ISSUER"), "{table}");
        for shown in [
            "http://127.0.0.1:4000/mcp",
            "c-1",
            "mcp offline_access",
            "in 10m (refreshable)",
            "c-2",
            "not signed in",
        ] {
            assert!(table.contains(shown), "{shown}: {table}");
        }
        for secret in ["s3cret", "at-123", "rt-456"] {
            assert!(!table.contains(secret), "{table}");
        }
        assert_eq!(expiry(Some(10), false, 7210), "2h ago");
        assert_eq!(expiry(None, false, 0), "never");
    }
}
