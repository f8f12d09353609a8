//! The HTTP client transport: Streamable HTTP (both eras) and the legacy
//! HTTP+SSE transport of 2024-11-05, as an [`mcp_core::Transport`] a
//! client-role engine runs over unchanged.
//!
//! ```no_run
//! use std::sync::Arc;
//! use mcp_core::{ClientIdentity, Role, SessionConfig};
//! use mcp_http::client::{HttpClientConfig, connect};
//! # async fn run(service: Arc<dyn mcp_core::Service>, identity: ClientIdentity) -> Result<(), mcp_http::client::HttpClientError> {
//! let (transport, handle) = connect(HttpClientConfig::new("http://127.0.0.1:8080/mcp")).await?.into_parts();
//! let session = mcp_core::serve(transport, service, SessionConfig::new(Role::Client(Arc::new(identity))));
//! // ... initialize through session.peer(), then use it ...
//! println!("session {:?} over {:?}", handle.session_id(), handle.wire_protocol());
//! # Ok(()) }
//! ```

mod auth;
mod config;
mod legacy_sse;
mod message;
mod modern;
mod streamable;

use std::sync::Arc;

use mcp_core::{DEFAULT_CHANNEL_CAPACITY, Transport};
use tokio::sync::mpsc;

pub use auth::{AuthFuture, Authorizer, Challenge};
pub use config::{HttpClientConfig, HttpTransportKind};
pub use message::is_unreached;

use streamable::Inner;

/// The wire protocol a client ended up speaking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireProtocol {
    /// Streamable HTTP (2025-03-26 and later).
    StreamableHttp,
    /// The legacy HTTP+SSE transport (2024-11-05).
    LegacySse,
}

/// Why a client transport could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpClientError {
    /// The URL is not an absolute http(s) URL.
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The HTTP client could not be built.
    #[error("building the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    /// The legacy HTTP+SSE stream could not be opened.
    #[error("opening the HTTP+SSE stream: {0}")]
    Connect(String),
}

/// A connected client transport: the engine's [`Transport`] and a handle
/// that reports on the connection.
#[derive(Debug)]
pub struct HttpClientTransport {
    transport: Transport,
    handle: HttpClientHandle,
}

impl HttpClientTransport {
    /// The handle that reports on the connection.
    pub fn handle(&self) -> &HttpClientHandle {
        &self.handle
    }

    /// The transport for [`mcp_core::serve`], and the handle.
    pub fn into_parts(self) -> (Transport, HttpClientHandle) {
        (self.transport, self.handle)
    }

    /// The transport alone.
    pub fn into_transport(self) -> Transport {
        self.transport
    }
}

/// Reports on a client connection; cheap to clone.
#[derive(Clone, Debug)]
pub struct HttpClientHandle {
    inner: Arc<Inner>,
}

impl HttpClientHandle {
    /// The current `Mcp-Session-Id` (legacy-era Streamable HTTP), if any.
    pub fn session_id(&self) -> Option<String> {
        self.inner.session_id()
    }

    /// The wire protocol in use, once the first exchange decided it.
    pub fn wire_protocol(&self) -> Option<WireProtocol> {
        self.inner.wire()
    }

    /// The legacy revision negotiated by `initialize`, if any.
    pub fn protocol_version(&self) -> Option<String> {
        self.inner.protocol_version()
    }

    /// How many replies came as plain JSON and how many as SSE streams.
    pub fn reply_kinds(&self) -> ReplyKinds {
        self.inner.reply_kinds()
    }

    /// The headers this transport puts on the POST of the request `frame`
    /// (JSON-RPC text) now: content type, `Accept`, the session and
    /// revision headers, and the 2026-07-28 metadata headers; not the
    /// credentials, which the authorizer adds per request. For a caller
    /// that sends the same request itself many times, like a load
    /// generator.
    pub fn request_headers(&self, frame: &str) -> reqwest::header::HeaderMap {
        let out = message::Outgoing::parse(mcp_core::OutboundFrame {
            text: frame.to_owned(),
            related: None,
            kind: mcp_core::FrameKind::Request,
        });
        self.inner.post_headers(&out).0
    }
}

/// Counts of the kinds of reply a client received.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplyKinds {
    /// `application/json` replies.
    pub json: u64,
    /// `text/event-stream` replies.
    pub sse: u64,
}

/// Sets up a client transport for `config`. Streamable HTTP sends nothing
/// until the engine does; [`HttpTransportKind::LegacySse`] opens the SSE
/// stream and waits for its `endpoint` event first.
pub async fn connect(config: HttpClientConfig) -> Result<HttpClientTransport, HttpClientError> {
    let url = reqwest::Url::parse(&config.url).map_err(|e| HttpClientError::InvalidUrl {
        url: config.url.clone(),
        reason: e.to_string(),
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(HttpClientError::InvalidUrl {
            url: config.url.clone(),
            reason: "the scheme must be http or https".to_owned(),
        });
    }
    let http = config.build_client()?;
    let (in_tx, in_rx) = mpsc::channel(DEFAULT_CHANNEL_CAPACITY);
    let (out_tx, out_rx) = mpsc::channel(DEFAULT_CHANNEL_CAPACITY);
    let inner = Arc::new(Inner::new(config, url, http, in_tx));
    if inner.config.transport == HttpTransportKind::LegacySse {
        legacy_sse::open(&inner)
            .await
            .map_err(HttpClientError::Connect)?;
    }
    let driver = tokio::spawn(streamable::drive(Arc::clone(&inner), out_rx));
    Ok(HttpClientTransport {
        transport: Transport {
            inbound: in_rx.into(),
            outbound: out_tx,
            flushed: Some(driver),
        },
        handle: HttpClientHandle { inner },
    })
}
