//! The MCP host: many servers, supervised, presented as one.
//!
//! A [`Host`] reads the servers users already configured (Claude Desktop,
//! Cursor, VS Code and Zed files, see [`config`]), keeps one supervised
//! connection to each (stdio children, Streamable HTTP, HTTP+SSE,
//! WebSocket; either protocol era), and merges what they offer into one
//! [`Catalog`] with namespaced names. A [`Gateway`] serves that catalog as
//! one MCP server on any transport, routing every request to its upstream
//! and back.
//!
//! A request meets, in order: the [`views`] filter where the gateway
//! serves a view (`gateway/discovery.rs`, which also answers a discovery
//! view's own tools); the target it names, resolved once from the catalog
//! (`gateway/target.rs`); the [`policy`] (`gateway/guard.rs`: allow, deny,
//! or ask, which also holds definitions changed since they were pinned;
//! rules may read the call's arguments); the rate [`limits`]; [`consent`]
//! for `ask` (`gateway/consent.rs`: a grant, or a person asked through
//! the client, the console, the terminal or an operator's endpoint); the
//! guard [`hooks`] before the call (`gateway/hooked.rs`); the connection
//! it goes over, the shared one or for a per-caller server the caller's
//! own ([`isolation`]); a slot on its upstream (`max_in_flight`, bounded
//! waits) and the upstream itself (`gateway/forward.rs`, with the eras
//! bridged there and in `gateway/task_bridge.rs`); the hooks after it and
//! the [`secrets`] scan of its result; and around all of it the [`audit`]
//! record (`gateway/audited.rs`) and the [`metrics`] count
//! (`gateway/measured.rs`). Each upstream is supervised in [`upstream`],
//! which reads its lists, flags text aimed at the model ([`suspicious`])
//! and checks the pins; a server the operator did not vouch for waits for
//! a person's [`trust`] before it runs. What a server asks back
//! (sampling, elicitation) goes only to the client whose call caused it;
//! sampling may be answered by the host's own [`model`] instead, as the
//! [`sampler`] decides, with a person reviewing it.
//!
//! ```no_run
//! use std::time::Duration;
//! use mcp_host::{Gateway, Host, HostOptions, config::{HostConfig, ServerConfig}};
//!
//! # async fn run() {
//! let config = HostConfig {
//!     servers: vec![ServerConfig::stdio("time", "uvx", vec!["mcp-server-time".into()])],
//!     ..Default::default()
//! };
//! let host = Host::start(config, HostOptions::default());
//! host.wait_started(Duration::from_secs(10)).await;
//! for tool in host.catalog().tools() {
//!     println!("{}", tool["name"]); // time__get_current_time, ...
//! }
//! let gateway = Gateway::new(host.clone(), "my-host", "1.0");
//! // Serve it: mcp_core::serve(transport, Arc::new(gateway.clone()), gateway.session_config())
//! host.shutdown(Duration::from_secs(5)).await;
//! # }
//! ```

pub mod audit;
pub mod catalog;
pub mod config;
pub mod consent;
mod downstream;
pub mod elicit;
mod expiring;
mod gateway;
mod glob;
pub mod hooks;
mod host;
pub mod isolation;
pub mod limits;
pub mod metrics;
pub mod model;
pub mod names;
mod params;
pub mod policy;
pub mod roots;
mod rounds;
pub mod sampler;
pub mod secrets;
pub mod settings;
pub mod suspicious;
mod tasks;
pub mod traces;
pub mod trust;
pub mod upstream;
mod upstream_meta;
pub mod views;
mod webhook;

pub use audit::{AuditLog, AuditSettings};
pub use catalog::Catalog;
pub use downstream::ListKind;
pub use gateway::{Decided, DecisionObserver, Gateway, ListOf};
pub use host::{Host, HostEvent, HostOptions, HostStatus, Reloaded};
pub use policy::{Caller, Decision, Policy};
pub use settings::HostSettings;
pub use upstream::{AuthorizerFactory, SupervisorOptions, UpstreamState, UpstreamStatus};
