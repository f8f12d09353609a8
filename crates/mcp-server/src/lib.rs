//! A framework for writing MCP servers: typed tools, resources, resource
//! templates, prompts, completions, logging, pagination and subscriptions,
//! on the session engine of [`mcp_core`], in every protocol revision.
//!
//! A tool is an async function with typed arguments; its JSON Schema comes
//! from the argument type. A tool may also run as a task the client polls
//! ([`ToolDef::task_support`]: the 2025-11-25 tasks and the 2026-07-28
//! tasks extension, limits in [`TaskConfig`]):
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
