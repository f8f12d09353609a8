//! The MCP session engine: transports, request correlation, cancellation,
//! progress, timeouts, lifecycle and era negotiation, capability checks.
//!
//! A [`Transport`] moves whole frames; [`serve`] runs a session over it,
//! answering what the protocol itself defines and handing every other
//! request to the role's [`Service`]. A [`Peer`] sends requests and
//! notifications back. Where every message arrives on its own (HTTP), a
//! [`DirectSession`] is driven by the transport instead, in the tasks that
//! carry the messages, and sends through a [`FrameSink`]: an idle session
//! then holds no task and no channel.
//!
//! A message meets the modules in this order: `transport` carries its
//! `frame` (`stdio` and `stdio_pipes` over byte streams, whose lines
//! `line_reader` reads); `session` reads it and admits it
//! (lifecycle, revision, capabilities), with `request_meta` reading a
//! request's `_meta` and `identity` knowing both sides and what they
//! negotiated (and the stateless clients a server has seen); `replies`
//! answers what the protocol itself defines; `in_flight` correlates
//! requests and responses; `context` and `service` hand a request to the
//! role's handler (`future` boxes what handlers return); `peer` and
//! `outbox` send back; `error` says why a request failed. A legacy
//! session's lasting choices (log level, subscriptions) are in
//! `session_choices`.
//!
//! ```
//! use std::sync::Arc;
//! use mcp_core::{serve, BoxFuture, HandlerResult, IncomingRequest, RequestContext, Role, ServerIdentity,
//!     Service, SessionConfig, Transport};
//! use mcp_schema::{Implementation, ServerCapabilities};
//!
//! struct Nothing;
//! impl Service for Nothing {
//!     fn handle_request(&self, req: IncomingRequest, _: RequestContext) -> BoxFuture<'static, HandlerResult> {
//!         Box::pin(async move { Err(mcp_schema::ErrorObject::method_not_found(&req.method)) })
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let (server_side, _client_side) = Transport::pair();
//! let identity = ServerIdentity::new(Implementation::new("demo", "1.0"), ServerCapabilities::default());
//! let session = serve(server_side, Arc::new(Nothing), SessionConfig::new(Role::Server(Arc::new(identity))));
//! session.peer().close();
//! # });
//! ```

pub mod child;
mod context;
mod error;
mod extensions;
mod frame;
mod future;
mod identity;
mod in_flight;
mod line_reader;
mod outbox;
mod peer;
mod read_spin;
mod replies;
mod request_meta;
mod service;
mod session;
mod session_choices;
pub mod stdio;
#[cfg(unix)]
mod stdio_pipes;
pub mod sync;
mod task_scope;
mod transport;

pub use context::{Progress, RequestContext};
pub use error::RequestError;
pub use error::{request_id_in_use, unsupported_version};
pub use extensions::{ContinuesElsewhere, Extensions, Owner, SessionName};
pub use future::{BoxFuture, box_future};
pub use identity::{ClientIdentity, Negotiated, Role, ServerIdentity, SessionConfig};
pub use outbox::Outbox;
pub use peer::{Peer, ProgressCallback, RequestOptions};
pub use request_meta::KnownMeta;
pub use service::{HandlerResult, IncomingRequest, Service};
pub use session::{DirectSession, ReadFrame, RunningSession, serve};
pub use session_choices::{ResourceSubscriptions, SessionLogLevel};
pub use task_scope::TaskScope;
pub use transport::{
    DEFAULT_CHANNEL_CAPACITY, FrameKind, FrameSink, Inbound, InboundFrame, OutboundFrame,
    SinkClosed, Transport,
};
