//! How a connection to a server is made beyond its address: the headers of
//! every HTTP request, a child's environment and folder, and the HTTP
//! transport to speak.

use std::collections::BTreeMap;
use std::path::PathBuf;

use http::{HeaderName, HeaderValue};
use mcp_http::HttpTransportKind;

/// How a connection is made beyond the target's address.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// Headers sent with every HTTP request (and the WebSocket handshake).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Variables added to a child's environment.
    pub env: BTreeMap<String, String>,
    /// Whether a child starts from the minimal environment `mcp host`
    /// gives its servers rather than this program's.
    pub minimal_env: bool,
    /// The folder a child starts in.
    pub cwd: Option<PathBuf>,
    /// Which HTTP transport to speak.
    pub http_kind: HttpTransportKind,
}

impl Setup {
    /// The command that runs `words` as a child.
    pub fn command(&self, words: &[String]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&words[0]);
        command.args(&words[1..]);
        if self.minimal_env {
            mcp_host::upstream::minimal_env(&mut command);
        }
        command.envs(&self.env);
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        command
    }

    /// The HTTP client settings for `url`, with the headers and transport.
    pub fn http_config(&self, url: &str) -> mcp_http::HttpClientConfig {
        let mut config = mcp_http::HttpClientConfig::new(url).transport(self.http_kind);
        for (name, value) in &self.headers {
            config = config.header(name.clone(), value.clone());
        }
        config
    }

    /// The WebSocket settings, with the headers.
    pub fn ws_options(&self) -> mcp_http::ws::WsOptions {
        let mut options = mcp_http::ws::WsOptions::new();
        for (name, value) in &self.headers {
            options = options.header(
                name.as_str(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            );
        }
        options
    }

    /// Whether an `Authorization` header is set (then no sign-in is
    /// attempted).
    pub fn authorized(&self) -> bool {
        self.headers
            .iter()
            .any(|(name, _)| name == http::header::AUTHORIZATION)
    }
}
