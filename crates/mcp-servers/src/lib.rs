//! Ready MCP servers built on [`mcp_server`].
//!
//! - [`everything`]: every protocol feature, including the fixtures of the
//!   official conformance suite; used by tests, benchmarks and interop.
//! - [`filesystem`]: the operator's directories as tools and resources,
//!   read-only unless writing is allowed, contained by directory handles.
//!
//! ```
//! let server = mcp_servers::everything::server();
//! assert_eq!(server.identity().info().name, "mcp-everything");
//! ```

mod calculator;
pub mod everything;
pub mod filesystem;
