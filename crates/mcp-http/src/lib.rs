//! MCP over HTTP: the Streamable HTTP server endpoint (both eras), its
//! sessions and resumable SSE streams, and DNS-rebinding protection.
//! Beside it, the legacy HTTP+SSE transport of 2024-11-05
//! ([`legacy_sse`]) and MCP over WebSocket, server and client ([`ws`]).
//! The client side of HTTP ([`client`]): Streamable HTTP and legacy
//! HTTP+SSE as an [`mcp_core::Transport`].
//!
//! A request to the endpoint meets, in order: `serve` (the socket),
//! `guard` (Host and Origin), [`authz`] where a layer authorizes it, then
//! `endpoint`: `endpoint/read.rs` reads and checks the POST (`headers`
//! its headers), `endpoint/post.rs` and `endpoint/get_delete.rs` act by
//! method, `session` finds or starts the legacy session (`session_store`,
//! `persist` and [`relay`] where instances share them), `endpoint/handling.rs`
//! follows the request while its response is open, `outbound` and
//! `session/delivery.rs` carry what the engine sends, `endpoint/stream.rs`
//! and [`sse`] write it ([`event_store`] keeps it for resumption), and
//! `endpoint/reply.rs` answers errors. HTTP+SSE and WebSocket are mounted
//! beside it, taking from the endpoint what `serving` names. The client
//! side is in [`client`].
//!
//! ```no_run
//! use std::sync::Arc;
//! # async fn run() -> std::io::Result<()> {
//! let server = mcp_builtin::everything::server();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let config = mcp_http::HttpConfig::loopback(listener.local_addr()?.port());
//! let endpoint = mcp_http::McpEndpoint::new(Arc::new(server.clone()), server.session_config(), config);
//! mcp_http::serve(listener, endpoint, std::future::pending()).await
//! # }
//! ```

pub mod authz;
pub mod client;
mod config;
mod endpoint;
pub mod event_store;
pub mod fanout;
pub mod guard;
mod headers;
pub mod legacy_sse;
mod outbound;
mod persist;
pub mod relay;
mod serve;
mod serving;
mod session;
pub mod session_store;
mod spare_headers;
pub mod sse;
pub mod task_relay;
pub mod trace_context;
pub mod ws;

pub use authz::{MessageExtensions, ToolScopeCheck, ToolScopeGuard};
pub use client::{
    HttpClientConfig, HttpClientError, HttpClientHandle, HttpClientTransport, HttpTransportKind,
    ReplyKinds, WireProtocol,
};
pub use config::{HttpConfig, ResponseMode};
pub use endpoint::{LAST_EVENT_ID, METHOD, McpEndpoint, NAME, PROTOCOL_VERSION, SESSION_ID};
pub use event_store::{
    EVENT_OVERHEAD, EventId, EventStore, EventStoreError, EventStoreLimits, EventStoreStats,
    MemoryEventStore, Replay, ReplayError, StreamId,
};
pub use guard::{GuardError, OriginPolicy};
pub use serve::{serve, serve_with};
pub use session_store::{LocalSessionStore, SessionRecord, SessionStore, SessionStoreError};
pub use trace_context::TraceContext;
