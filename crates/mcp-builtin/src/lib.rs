//! The servers built into `mcp` (`mcp serve NAME`, and the host's
//! built-in servers), written with the [`mcp_server`] framework: not to
//! be confused with that framework, whose crate is `mcp-server`.
//!
//! - [`everything`]: every protocol feature, including the fixtures of the
//!   official conformance suite; used by tests, benchmarks and interop.
//! - [`sqlite`]: one SQLite database: its schema and rows as resources,
//!   read-only queries enforced by SQLite itself, and (with `--write`)
//!   tools that change it.
//! - [`prompts`]: a versioned library of prompt templates (Markdown files
//!   with YAML front matter and Handlebars bodies), from a watched
//!   directory or the built-in default library.
//! - [`filesystem`]: the operator's directories as tools and resources,
//!   read-only unless writing is allowed, contained by directory handles.
//! - [`openapi`]: an HTTP API described by an OpenAPI 3.0 or 3.1 document,
//!   one tool per operation and its GET operations as resources, behind an
//!   SSRF guard.
//!
//! ```
//! let server = mcp_builtin::everything::server();
//! assert_eq!(server.identity().info().name, "mcp-everything");
//! ```

mod calculator;
pub mod everything;
pub mod filesystem;
pub mod openapi;
pub mod prompts;
pub mod sqlite;
