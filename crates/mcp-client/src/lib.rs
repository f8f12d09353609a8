//! The MCP client: one connection to one server over any transport.
//!
//! - [`ClientBuilder`]: the client's identity, the handlers for what a
//!   server may ask (sampling, elicitation, roots), the era, then
//!   [`connect`](ClientBuilder::connect) over an `mcp_core::Transport`
//!   (stdio child, Streamable HTTP, WebSocket, in memory).
//! - [`Client`]: a typed call for every server feature, list helpers that
//!   walk every page and honour the server's cache hints, per-call timeouts,
//!   progress callbacks and cancellation (drop the future).
//!
//! Both eras look the same to the caller: with a legacy server the client
//! runs `initialize` and answers the server's requests; with a 2026-07-28
//! server it sends the per-request `_meta` and answers `input_required`
//! results with the same handlers, round after round, until the result.
//!
//! A connection and its calls meet, in order: `client`, which holds the
//! builder and the client; on [`connect`](ClientBuilder::connect), an
//! `mcp_core` session whose service is `handlers`, and `handshake`, which
//! settles the era (`server/discover`, `initialize`, or both raced),
//! learns what the server offers and makes the 2026-07-28 per-request
//! `_meta`. A call then leaves `client` with that `_meta` merged into its
//! params; a list is walked page by page through `listing` and kept in
//! `cache` while the server's hint allows; an `input_required` result, like
//! a legacy server's own request, is answered by `handlers`, which also
//! see every notification (a list change empties `cache`); `error` says
//! why a call failed.
//!
//! ```
//! # async fn run() -> Result<(), mcp_client::ClientError> {
//! use std::sync::Arc;
//! use serde_json::json;
//!
//! let server = mcp_builtin::everything::server();
//! let (server_side, client_side) = mcp_core::Transport::pair();
//! let _running = mcp_core::serve(server_side, Arc::new(server.clone()), server.session_config());
//!
//! let client = mcp_client::Client::builder("example", "1.0").connect(client_side).await?;
//! let result = client.call_tool("echo", json!({"text": "hi"})).await?;
//! assert_eq!(result.content.len(), 1);
//! client.close().await;
//! # Ok(())
//! # }
//! # tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap();
//! ```

#![warn(missing_docs)]

mod cache;
mod client;
mod error;
mod handlers;
mod handshake;
mod listing;

pub use client::{Client, ClientBuilder, EraChoice};
pub use error::ClientError;
pub use mcp_core::RequestOptions;
