//! Settings of the HTTP client transport.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

/// Which wire protocol the client speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpTransportKind {
    /// Streamable HTTP, falling back to the legacy HTTP+SSE transport
    /// (2024-11-05) when the first POST is refused the way an old server
    /// refuses it.
    #[default]
    Auto,
    /// Streamable HTTP only.
    StreamableHttp,
    /// The legacy HTTP+SSE transport only.
    LegacySse,
}

/// Settings of the HTTP client transport.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpClientConfig {
    /// The MCP endpoint (Streamable HTTP) or the SSE endpoint (HTTP+SSE).
    pub url: String,
    /// Headers sent with every HTTP request (e.g. `Authorization`).
    pub headers: HeaderMap,
    /// How long establishing a connection may take.
    pub connect_timeout: Duration,
    /// Which wire protocol to speak.
    pub transport: HttpTransportKind,
    /// How many times in a row a dropped SSE stream is reconnected.
    pub max_reconnect_attempts: u32,
    /// The longest wait between two reconnection attempts, whatever the
    /// server's `retry` says.
    pub max_retry_delay: Duration,
    /// A client to use instead of one built from these settings.
    pub http_client: Option<reqwest::Client>,
    /// Supplies credentials and answers authorization challenges.
    pub authorizer: Option<std::sync::Arc<dyn super::auth::Authorizer>>,
}

impl std::fmt::Debug for HttpClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClientConfig")
            .field("url", &self.url)
            .field("transport", &self.transport)
            .field("connect_timeout", &self.connect_timeout)
            .field("authorizer", &self.authorizer.is_some())
            .finish_non_exhaustive()
    }
}

impl HttpClientConfig {
    /// Defaults for `url`: no extra headers, 10 s connect timeout, automatic
    /// transport choice, 5 reconnection attempts at most 30 s apart.
    pub fn new(url: impl Into<String>) -> Self {
        HttpClientConfig {
            url: url.into(),
            headers: HeaderMap::new(),
            connect_timeout: Duration::from_secs(10),
            transport: HttpTransportKind::Auto,
            max_reconnect_attempts: 5,
            max_retry_delay: Duration::from_secs(30),
            http_client: None,
            authorizer: None,
        }
    }

    /// Sets who supplies credentials (e.g. an OAuth client).
    pub fn authorizer(mut self, authorizer: std::sync::Arc<dyn super::auth::Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// Adds a header sent with every HTTP request.
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.insert(name, value);
        self
    }

    /// Sets how long establishing a connection may take.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets which wire protocol to speak.
    pub fn transport(mut self, kind: HttpTransportKind) -> Self {
        self.transport = kind;
        self
    }

    /// Sets how many times in a row a dropped SSE stream is reconnected.
    pub fn max_reconnect_attempts(mut self, attempts: u32) -> Self {
        self.max_reconnect_attempts = attempts;
        self
    }

    /// Sets the longest wait between two reconnection attempts.
    pub fn max_retry_delay(mut self, delay: Duration) -> Self {
        self.max_retry_delay = delay;
        self
    }

    /// Uses `client` for every HTTP request instead of building one.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http_client = Some(client);
        self
    }

    /// The client to use: the override, or a new one with connection
    /// reuse, TCP_NODELAY and no overall timeout (SSE bodies live long).
    pub(crate) fn build_client(&self) -> Result<reqwest::Client, reqwest::Error> {
        if let Some(client) = &self.http_client {
            return Ok(client.clone());
        }
        reqwest::Client::builder()
            .tcp_nodelay(true)
            .connect_timeout(self.connect_timeout)
            .build()
    }
}
