//! A framework for writing MCP servers: typed tools, resources, resource
//! templates, prompts, completions, logging, pagination and subscriptions,
//! on the session engine of [`mcp_core`], in every protocol revision.
//!
//! A tool is an async function with typed arguments; its JSON Schema comes
//! from the argument type. A tool may also run as a task the client polls
//! ([`ToolDef::task_support`]: the 2025-11-25 tasks and the 2026-07-28
//! tasks extension, limits in [`TaskConfig`]).
//!
//! A request meets, in order: the `Service` impl of [`Server`] in
//! `server/mod.rs`, which hands it to `server/handlers.rs` to dispatch by
//! method; the `Definitions` (tools, resources, templates, prompts, held
//! in `server/mod.rs`), which `server/catalog.rs` reads under a lock and
//! changes (each change announced, old cursors made stale); `cursor`,
//! which pages a list behind an HMAC-signed cursor (its [`Signer`] also
//! seals `requestState`); for a tool call, `tasks/era.rs`, which decides
//! by the revision whether it runs as a task; `context`, which makes the
//! [`Context`] a handler gets (the request, progress, logging, questions
//! to the client). The `Context` holds its server with the type erased,
//! since the server holds the handlers that name `Context`;
//! [`Context::server`], in `server/mod.rs`, gives it back typed, so
//! `context` and `server` do not import each other round. Then the
//! definition's own module: `tool` (arguments checked against the schema
//! before the handler runs), `resource` (a fixed URI, or a template
//! matched), `prompt`, or [`completion`] (the completer of a prompt's or
//! template's argument); and `compat`, which rewrites content in a tool
//! result or prompt message that an older revision does not know. A call
//! that runs as a task goes to `tasks` instead (the feature's two shapes,
//! one per era): `tasks/handlers.rs` starts it and answers the `tasks/*`
//! requests, `tasks/run.rs` runs the tool in the background, and
//! `tasks/store.rs` keeps the task for its time to live. What changes
//! goes back to clients through `server/notify.rs`: resource updates to
//! subscribers, list changes, and the `subscriptions/listen` streams.
//!
//! A server with a tool, a resource and a prompt:
//!
//! ```
//! use mcp_server::{Context, HandlerError, PromptDef, ResourceDef, Server, ToolDef};
//! use mcp_schema::GetPromptResult;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Greet {
//!     /// Whom to greet.
//!     name: String,
//! }
//!
//! let server = Server::builder("hello", "1.0.0")
//!     .tool(ToolDef::new("greet", "Says hello", |args: Greet, _ctx: Context| async move {
//!         Ok::<_, HandlerError>(format!("Hello, {}!", args.name))
//!     }))
//!     .resource(ResourceDef::text("memo://motd", "Message of the day", "text/plain", "Be kind."))
//!     .prompt(PromptDef::new("haiku", "A haiku about a topic", |args, _ctx| async move {
//!         let topic = args.get("topic").cloned().unwrap_or_default();
//!         Ok(GetPromptResult::new(vec![mcp_schema::PromptMessage::user_text(format!("Write a haiku about {topic}"))]))
//!     }).argument("topic", "What the haiku is about", true))
//!     .build();
//! // server.serve_stdio().await serves it on stdin/stdout.
//! # let _ = server;
//! ```

mod compat;
pub mod completion;
mod context;
mod cursor;
mod prompt;
mod resource;
mod server;
mod tasks;
mod tool;

pub use completion::Completer;
pub use context::{Context, HandlerError};
pub use cursor::Signer;
pub use mcp_schema::TaskSupport;
pub use prompt::{PromptArguments, PromptDef};
pub use resource::{ResourceDef, TemplateDef};
pub use server::{Server, ServerBuilder, ServerEvent};
pub use tasks::TaskConfig;
pub use tool::{IntoToolResult, NoArguments, ToolDef};
