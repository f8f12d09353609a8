//! Every Model Context Protocol type of every revision, as plain data.
//!
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope, parsed once with raw params.
//! - [`ProtocolVersion`]: the revisions and what differs between them.
//! - The protocol's types, one module per feature, re-exported at the root.
//!
//! ```
//! use mcp_schema::{jsonrpc::Message, ProtocolVersion};
//!
//! let msg = Message::parse(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
//! assert_eq!(msg.method(), Some("ping"));
//! assert!(ProtocolVersion::V2025_03_26.supports_batching());
//! ```

pub mod error_codes;
pub mod jsonrpc;
mod revision;

pub use revision::{Era, ProtocolVersion, UnknownVersion};
