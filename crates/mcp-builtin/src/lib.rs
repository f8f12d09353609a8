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
//! Each server's `mod.rs` holds its configuration and builds it; a request
//! then meets that server's own modules in this order:
//!
//! - [`filesystem`]: `tools` reads a tool's arguments, narrows the scope
//!   to the client's `roots` and runs the work off the async threads; the
//!   tool's module (`read`, `listing`, `search`, or `write` with `edit`
//!   for `edit_file`) does it, every path placed and opened by `scope`
//!   (directory handles, the deny-list). `resources` serves files and
//!   directories as resources, named by `uri`; `watch` turns changes on
//!   disk into notifications.
//! - [`sqlite`]: the tool in `tools` (`tools/reading.rs`, or
//!   `tools/writing.rs` with `--write`) or a resource in `resources`;
//!   `worker`, the thread of the connection the job is handed to; `engine`,
//!   what SQLite enforces on that connection; then `schema` (names checked
//!   against the schema), `statements` (parameters bound, rows read) and
//!   `values` (SQLite values to JSON and back).
//! - [`openapi`]: at start, `document` parses the document, `operations`
//!   maps each operation to a tool (named by `naming`, its schemas
//!   converted by `schema`); a call meets `tools`, `request` (the arguments
//!   as an HTTP request), `http` (the outbound client, every address
//!   checked by `guard`) and `tools` again for the result; `resources`
//!   reads GET operations.
//! - [`prompts`]: `library` reads the directory (or the built-in library),
//!   each file parsed by `file`, grouped by name into a `family` of
//!   versions served as one prompt; a `prompts/get` meets `render` (the
//!   version picked, the template rendered, split into messages); `watch`
//!   reads the directory again when it changes.
//! - [`everything`]: a call meets the module of its tool (`conformance`,
//!   `input_required`, `showcase`, `tasks` or `region`); `catalog` holds
//!   the prompts, the watched resource and the template, `support` what
//!   they share, and `tests` drives the task fixtures as the conformance
//!   suite does.
//!
//! Off every path, `calculator` is the expression evaluator behind the
//! `calculate` tool of `everything`'s `showcase`.
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
