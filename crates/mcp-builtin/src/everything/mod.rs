//! The `everything` server: one server exposing every feature of the
//! protocol, including the fixtures the official conformance suite calls,
//! an `echo` tool for benchmarks and interop, a few tools that show the
//! framework off (a calculator, a slow task with progress and cancellation,
//! typed structured output), and the task fixtures (`greet`,
//! `slow_compute`, `failing_job`, `protocol_error_job`).

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use mcp_server::{ResourceDef, Server};

mod catalog;
mod conformance;
mod input_required;
mod region;
mod showcase;
mod support;
mod tasks;

use catalog::{data_template, prompts, watched_resource};
use conformance::conformance_tools;
use input_required::input_required_tools;
use region::region_query;
use showcase::showcase_tools;
use tasks::task_tools;

pub use support::{PNG_BASE64, WAV_BASE64};

/// Builds the `everything` server.
pub fn server() -> Server {
    let watched = Arc::new(AtomicU64::new(0));
    let mut builder = Server::builder("mcp-everything", env!("CARGO_PKG_VERSION")).instructions(
        "Exercises every MCP feature. `echo` returns its text; `calculate` evaluates arithmetic.",
    );
    for tool in conformance_tools(Arc::clone(&watched))
        .into_iter()
        .chain(input_required_tools())
        .chain(showcase_tools())
        .chain(task_tools())
        .chain([region_query()])
    {
        builder = builder.tool(tool);
    }
    for prompt in prompts() {
        builder = builder.prompt(prompt);
    }
    builder
        .resource(
            ResourceDef::text(
                "test://static-text",
                "Static Text Resource",
                "text/plain",
                "This is the content of the static text resource.",
            )
            .description("A static text resource for testing"),
        )
        .resource(
            ResourceDef::blob(
                "test://static-binary",
                "Static Binary Resource",
                "image/png",
                PNG_BASE64,
            )
            .description("A static binary resource (image) for testing"),
        )
        .resource(watched_resource(watched))
        .template(data_template())
        .build()
}

#[cfg(test)]
mod tests;
