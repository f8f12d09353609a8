//! Every Model Context Protocol type of every revision, as plain data.
//!
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope, parsed once with raw params.
//! - [`ProtocolVersion`]: the revisions and what differs between them.
//! - The protocol's types, one module per feature, re-exported at the root:
//!   one Rust type per schema type, covering every revision (fields that only
//!   some revisions have are `Option`s).
//! - [`methods`] and [`meta`]: method names and reserved `_meta` keys.
//! - [`envelope`]: typed JSON-RPC envelopes for building whole messages.
//! - [`header_params`]: tool arguments mirrored into HTTP headers.
//! - `validation` (feature `validation`): checks JSON against the official
//!   schema of a revision.
//!
//! A message is read and typed in this order: [`jsonrpc`] parses the frame
//! once into a [`jsonrpc::Message`], params and result left raw, reading
//! each envelope member through `wire_member` (an id as `request_id`
//! defines it) and naming what is wrong with an [`error_codes`] code;
//! [`leading_meta`] instead skips a `_meta` already known that opens a
//! stateless request's params. [`methods`] names the method,
//! [`ProtocolVersion`] (`revision`) says what the revision supports, and
//! [`meta`] reads the reserved `_meta` keys. The params or the result
//! are then typed by the feature's module: [`lifecycle`], [`tools`],
//! [`resources`], [`prompts`], [`completion`], [`logging`], [`sampling`],
//! [`elicitation`], [`roots`], [`subscriptions`], [`tasks`], [`input`]
//! (the 2026-07-28 `input_required` rounds), [`notifications`] (progress
//! and cancellation) and [`pagination`]; they share [`content`] blocks,
//! [`result`] (`resultType` and the cache hints), `tags` (single-value
//! strings such as `"type": "object"`) and `num` (numbers written back as
//! they were read). An error's typed `data` is in [`errors`]. Where typing
//! would cost too much, the raw text is read instead: [`text_search`]
//! tests for a fixed piece of it (as [`leading_meta`] does) and
//! [`json_scan`] finds an object's top-level members (the one or two a
//! gateway reads or changes). Off that path, [`envelope`] builds whole
//! typed messages, [`header_params`] mirrors tool arguments into HTTP
//! headers, and `validation` checks a message against the official schema
//! of its revision.
//!
//! ```
//! use mcp_schema::{jsonrpc::Message, ProtocolVersion};
//!
//! let msg = Message::parse(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
//! assert_eq!(msg.method(), Some("ping"));
//! assert!(ProtocolVersion::V2025_03_26.supports_batching());
//! ```

#![warn(missing_docs)]

pub mod completion;
pub mod content;
pub mod elicitation;
pub mod envelope;
pub mod error_codes;
pub mod errors;
pub mod header_params;
pub mod input;
pub mod jsonrpc;
pub mod leading_meta;
pub mod lifecycle;
pub mod logging;
pub mod meta;
pub mod methods;
pub mod notifications;
mod num;
pub mod pagination;
pub mod prompts;
mod request_id;
pub mod resources;
pub mod result;
mod revision;
pub mod roots;
pub mod sampling;
pub mod subscriptions;
#[macro_use]
mod tags;
pub mod json_scan;
pub mod tasks;
pub mod text_search;
pub mod tools;
#[cfg(feature = "validation")]
pub mod validation;
mod wire_member;

pub use completion::*;
pub use content::*;
pub use elicitation::*;
pub use envelope::*;
pub use errors::*;
pub use input::*;
pub use jsonrpc::{ErrorObject, RequestId};
pub use lifecycle::*;
pub use logging::*;
pub use meta::*;
pub use methods::*;
pub use notifications::*;
pub use pagination::*;
pub use prompts::*;
pub use resources::*;
pub use result::*;
pub use revision::{Era, ProtocolVersion, UnknownVersion};
pub use roots::*;
pub use sampling::*;
pub use subscriptions::*;
pub use tags::*;
pub use tasks::*;
pub use tools::*;
#[cfg(feature = "validation")]
pub use validation::SchemaValidator;
