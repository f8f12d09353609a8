//! A complete small MCP server: a typed tool, a resource and a prompt,
//! served over stdio. Run it with `cargo run -p mcp-server --example hello`.

use mcp_schema::{GetPromptResult, PromptMessage};
use mcp_server::{Context, HandlerError, PromptDef, ResourceDef, Server, ToolDef};

/// The arguments of `greet`; the doc comments become the JSON Schema's
/// descriptions.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    /// Whom to greet.
    name: String,
    /// How many exclamation marks.
    #[serde(default)]
    excitement: u8,
}

#[tokio::main]
async fn main() {
    let server = Server::builder("hello", "1.0.0")
        .tool(ToolDef::new(
            "greet",
            "Greets someone by name",
            |args: Greet, ctx: Context| async move {
                ctx.progress(1.0, Some(1.0), Some("composing")).await;
                let bangs = "!".repeat(usize::from(args.excitement.min(10)));
                Ok::<_, HandlerError>(format!("Hello, {}{bangs}", args.name))
            },
        ))
        .resource(ResourceDef::text(
            "memo://motd",
            "Message of the day",
            "text/plain",
            "Be kind.",
        ))
        .prompt(
            PromptDef::new(
                "haiku",
                "Asks for a haiku about a topic",
                |args, _ctx| async move {
                    let topic = args.get("topic").cloned().unwrap_or_default();
                    Ok(GetPromptResult::new(vec![PromptMessage::user_text(
                        format!("Write a haiku about {topic}."),
                    )]))
                },
            )
            .argument("topic", "What the haiku is about", true),
        )
        .build();
    server.serve_stdio().await;
}
