//! Three server instances (endpoints on their own loopback ports, in this
//! process) sharing one real Redis, as behind a round-robin load balancer
//! without affinity: what any instance sends a session reaches the
//! instance that holds its stream, and server-wide events reach every
//! instance's clients.

mod handoff;
mod modern;
mod streams;

#[path = "../support/mod.rs"]
mod support;

use std::collections::BTreeMap;

use mcp_core::BoxFuture;
use mcp_http::EventStore;
use mcp_schema::ResourceContents;
use mcp_server::{Context, HandlerError, NoArguments, ResourceDef, Server, ToolDef};
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{
    Events, Instance, Killable, Redis, call, client, initialize, listen, post, resume, within,
};

const WATCHED: &str = "test://watched";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Announce {
    /// Who announces (in each message).
    source: String,
    /// How many numbered messages to send.
    count: u64,
}

/// A server whose `announce` tool sends numbered log messages to the
/// session (its standalone stream), not to the call's stream, and whose
/// `touch` tool tells subscribers that `test://watched` changed.
fn server() -> Server {
    let resource = mcp_schema::Resource::new(WATCHED, "Watched");
    Server::builder("redis-delivery", "1.0")
        .tool(ToolDef::new(
            "announce",
            "Sends numbered log messages to the session",
            |args: Announce, ctx: Context| async move {
                for n in 0..args.count {
                    let params = json!({"level": "info", "data": {"source": args.source, "n": n}});
                    assert!(ctx.notify_session("notifications/message", &params).await);
                }
                Ok::<_, HandlerError>("announced".to_owned())
            },
        ))
        .tool(ToolDef::new(
            "touch",
            "Changes test://watched",
            |_: NoArguments, ctx: Context| async move {
                ctx.server().notify_resource_updated(WATCHED);
                Ok::<_, HandlerError>("touched".to_owned())
            },
        ))
        .tool(ToolDef::new(
            "ask",
            "Asks the user's name (elicitation) and answers with it",
            |_: NoArguments, ctx: Context| async move {
                let params = serde_json::from_value(json!({
                    "message": "Your name?",
                    "requestedSchema": {"type": "object",
                        "properties": {"name": {"type": "string"}}, "required": ["name"]},
                }))
                .expect("a form");
                let answer = ctx.elicit("name", params).await?;
                Ok::<_, HandlerError>(format!(
                    "hello {}",
                    serde_json::to_value(&answer.content).expect("JSON")["name"]
                ))
            },
        ))
        .tool(ToolDef::new(
            "stall",
            "Logs three numbered messages on the call's stream, then never answers",
            |_: NoArguments, ctx: Context| async move {
                for n in 0..3 {
                    ctx.log(mcp_schema::LoggingLevel::Info, None, json!({"n": n}))
                        .await;
                }
                std::future::pending::<()>().await;
                Ok::<_, HandlerError>("never".to_owned())
            },
        ))
        .resource(ResourceDef::dynamic(resource, |_| async {
            Ok(vec![ResourceContents::text(WATCHED, None, "watched")])
        }))
        .build()
}

fn tool_call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
}

/// Sends the session the log message from source `end` (on its standalone
/// stream), through the instance at `url`: what comes before it came
/// before.
async fn send_end_marker(http: &reqwest::Client, url: &str, session: &str, id: i64) {
    let marker = tool_call(id, "announce", json!({"source": "end", "count": 1}));
    let (status, body) = support::reply(post(http, url, Some(session), &marker).await).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// What a client read of its standalone stream, over its connections.
#[derive(Default)]
struct Received {
    /// The numbers announced by each source, in arrival order.
    by_source: BTreeMap<String, Vec<u64>>,
    /// Resource updates, by URI.
    updated: Vec<String>,
    last_id: Option<String>,
}

impl Received {
    fn take(&mut self, event: mcp_http::sse::SseEvent) {
        if event.id.is_some() {
            self.last_id = event.id;
        }
        if event.data.is_empty() {
            return;
        }
        let message: Value = serde_json::from_str(&event.data).expect("JSON event");
        match message["method"].as_str() {
            Some("notifications/message") => {
                let data = &message["params"]["data"];
                self.by_source
                    .entry(data["source"].as_str().expect("source").to_owned())
                    .or_default()
                    .push(data["n"].as_u64().expect("numbered"));
            }
            Some("notifications/resources/updated") => self
                .updated
                .push(message["params"]["uri"].as_str().expect("uri").to_owned()),
            _ => panic!("unexpected on the standalone stream: {message}"),
        }
    }

    fn count(&self) -> usize {
        self.by_source.values().map(Vec::len).sum()
    }
}
