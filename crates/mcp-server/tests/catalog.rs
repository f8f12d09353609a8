//! The catalog while a server runs: tools, resources and prompts added and
//! removed, `list_changed` notifications in both eras, pagination with
//! cursors that go stale when the list changes, resource subscriptions.

use std::time::Duration;

use mcp_core::{FrameKind, InboundFrame, OutboundFrame, Transport};
use mcp_schema::validation::SchemaValidator;
use mcp_schema::{GetPromptResult, PromptMessage, ProtocolVersion};
use mcp_server::{Context, HandlerError, NoArguments, PromptDef, ResourceDef, Server, ToolDef};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(5);

fn tool(name: &str) -> ToolDef {
    let reply = format!("{name} ran");
    ToolDef::new(
        name.to_owned(),
        format!("The {name} tool"),
        move |_: NoArguments, _: Context| {
            let reply = reply.clone();
            async move { Ok::<_, HandlerError>(reply) }
        },
    )
}

fn server(page_size: usize) -> Server {
    Server::builder("catalog-test", "0.0.1")
        .page_size(page_size)
        .tool(tool("a"))
        .tool(tool("b"))
        .tool(tool("c"))
        .resource(ResourceDef::text("memo://one", "One", "text/plain", "1"))
        .build()
}

/// The client side of an in-memory session, driven with raw JSON.
struct Client {
    transport: Transport,
    validator: std::sync::Arc<SchemaValidator>,
    next_id: i64,
}

impl Client {
    fn connect(server: &Server, revision: ProtocolVersion) -> Client {
        let (server_side, client_side) = Transport::pair();
        let server = server.clone();
        tokio::spawn(async move { server.serve(server_side).await });
        Client {
            transport: client_side,
            validator: SchemaValidator::for_revision(revision),
            next_id: 1,
        }
    }

    async fn send(&mut self, message: Value) {
        let frame = OutboundFrame {
            text: message.to_string(),
            related: None,
            kind: FrameKind::Request,
        };
        self.transport
            .outbound
            .send(frame)
            .await
            .expect("server is running");
    }

    async fn recv_within(&mut self, wait: Duration) -> Option<Value> {
        match tokio::time::timeout(wait, self.transport.inbound.recv()).await {
            Ok(Some(InboundFrame::Text(text))) => {
                let value: Value = serde_json::from_str(&text).expect("server sends JSON");
                if value.get("method").is_some() {
                    self.validator
                        .validate_message(&value)
                        .unwrap_or_else(|e| panic!("{value}: {e}"));
                }
                Some(value)
            }
            Ok(other) => panic!("unexpected end of session: {other:?}"),
            Err(_) => None,
        }
    }

    /// Sends a request; returns its response and what came before it.
    async fn request(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let mut before = Vec::new();
        loop {
            let message = self
                .recv_within(WAIT)
                .await
                .unwrap_or_else(|| panic!("no answer to {method}"));
            if message.get("method").is_none() && message["id"] == json!(id) {
                if message.get("result").is_some() {
                    self.validator
                        .validate_response(method, &message)
                        .unwrap_or_else(|e| panic!("{message}: {e}"));
                }
                return (message, before);
            }
            before.push(message);
        }
    }

    async fn result(&mut self, method: &str, params: Value) -> Value {
        let (response, _) = self.request(method, params).await;
        response
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {response}"))
    }

    async fn initialize(&mut self, revision: ProtocolVersion) {
        self.result(
            "initialize",
            json!({"protocolVersion": revision.as_str(), "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }

    /// The next notification called `method`, skipping others.
    async fn notification(&mut self, method: &str) -> Value {
        loop {
            let message = self
                .recv_within(WAIT)
                .await
                .unwrap_or_else(|| panic!("no {method} arrived"));
            if message["method"] == method {
                return message;
            }
        }
    }

    async fn expect_quiet(&mut self, wait: Duration) {
        if let Some(message) = self.recv_within(wait).await {
            panic!("expected nothing, got {message}");
        }
    }
}

fn names(result: &Value, list: &str, key: &str) -> Vec<String> {
    result[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t[key].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn pages_walk_the_whole_list_and_go_stale_when_it_changes() {
    let server = server(2);
    let mut client = Client::connect(&server, ProtocolVersion::V2025_11_25);
    client.initialize(ProtocolVersion::V2025_11_25).await;

    let first = client.result("tools/list", json!({})).await;
    assert_eq!(names(&first, "tools", "name"), ["a", "b"]);
    let cursor = first["nextCursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let second = client.result("tools/list", json!({"cursor": cursor})).await;
    assert_eq!(names(&second, "tools", "name"), ["c"]);
    assert!(second.get("nextCursor").is_none(), "{second}");

    let (forged, _) = client
        .request("tools/list", json!({"cursor": format!("{cursor}x")}))
        .await;
    assert_eq!(forged["error"]["code"], -32602, "{forged}");

    server.add_tool(tool("d"));
    let (stale, _) = client
        .request("tools/list", json!({"cursor": cursor}))
        .await;
    assert_eq!(stale["error"]["code"], -32602, "{stale}");
    assert!(
        stale["error"]["message"]
            .as_str()
            .unwrap()
            .contains("stale"),
        "{stale}"
    );
}

#[tokio::test]
async fn calls_find_their_tool_by_name_through_every_change() {
    let server = Server::builder("catalog-test", "0.0.1")
        .tool(tool("a"))
        .tool(tool("b"))
        .tool(ToolDef::new(
            "a",
            "A second a",
            |_: NoArguments, _: Context| async { Ok::<_, HandlerError>("second a ran") },
        ))
        .tool(tool("c"))
        .build();
    let mut client = Client::connect(&server, ProtocolVersion::V2025_06_18);
    client.initialize(ProtocolVersion::V2025_06_18).await;
    let mut call = async |name: &str| {
        let (reply, _) = client
            .request("tools/call", json!({"name": name, "arguments": {}}))
            .await;
        match reply["result"]["content"][0]["text"].as_str() {
            Some(text) => text.to_owned(),
            None => format!("error {}", reply["error"]["code"]),
        }
    };
    // Of two tools given one name, the first is called.
    assert_eq!(call("a").await, "a ran");
    assert_eq!(call("c").await, "c ran");
    // Removing a tool moves the ones after it.
    assert!(server.remove_tool("b"));
    assert_eq!(call("b").await, "error -32602");
    assert_eq!(call("c").await, "c ran");
    // Adding one of a name there is replaces it.
    server.add_tool(ToolDef::new(
        "c",
        "A new c",
        |_: NoArguments, _: Context| async { Ok::<_, HandlerError>("new c ran") },
    ));
    assert_eq!(call("c").await, "new c ran");
    server.add_tool(tool("d"));
    assert_eq!(call("d").await, "d ran");
    assert_eq!(call("unknown").await, "error -32602");
}

#[tokio::test]
async fn legacy_sessions_hear_of_every_change_and_nothing_else() {
    let server = server(100);
    let mut client = Client::connect(&server, ProtocolVersion::V2025_06_18);
    client.initialize(ProtocolVersion::V2025_06_18).await;
    client.result("tools/list", json!({})).await;

    server.add_tool(tool("late"));
    client
        .notification("notifications/tools/list_changed")
        .await;
    let tools = client.result("tools/list", json!({})).await;
    assert!(names(&tools, "tools", "name").contains(&"late".to_owned()));
    let called = client
        .result("tools/call", json!({"name": "late", "arguments": {}}))
        .await;
    assert_eq!(called["content"][0]["text"], "late ran");

    assert!(server.remove_tool("late"));
    client
        .notification("notifications/tools/list_changed")
        .await;
    let (gone, _) = client
        .request("tools/call", json!({"name": "late", "arguments": {}}))
        .await;
    assert_eq!(gone["error"]["code"], -32602, "{gone}");

    assert!(!server.remove_tool("never-there"), "nothing to remove");
    client.expect_quiet(Duration::from_millis(200)).await;

    server.add_prompt(PromptDef::new("p", "A prompt", |_, _| async {
        Ok(GetPromptResult::new(vec![PromptMessage::user_text("hi")]))
    }));
    client
        .notification("notifications/prompts/list_changed")
        .await;
    server.add_resource(ResourceDef::text("memo://two", "Two", "text/plain", "2"));
    client
        .notification("notifications/resources/list_changed")
        .await;
    let resources = client.result("resources/list", json!({})).await;
    assert_eq!(
        names(&resources, "resources", "uri"),
        ["memo://one", "memo://two"]
    );
}

#[tokio::test]
async fn a_flood_of_list_changes_waits_as_one_notification_per_client() {
    let server = server(100);
    let mut client = Client::connect(&server, ProtocolVersion::V2025_11_25);
    client.initialize(ProtocolVersion::V2025_11_25).await;
    client
        .result("resources/subscribe", json!({"uri": "memo://one"}))
        .await;

    // On this test's single thread, no notification goes out before the
    // flood ends: each list change finds the one before it still waiting.
    // Resource updates are each told (a subscriber may count them).
    for _ in 0..1_000 {
        if !server.remove_tool("late") {
            server.add_tool(tool("late"));
        }
    }
    for _ in 0..3 {
        server.notify_resource_updated("memo://one");
    }
    client
        .notification("notifications/tools/list_changed")
        .await;
    for _ in 0..3 {
        client.notification("notifications/resources/updated").await;
    }
    client.expect_quiet(Duration::from_millis(200)).await;

    // Sent: the next change has a notification of its own.
    server.add_tool(tool("later"));
    client
        .notification("notifications/tools/list_changed")
        .await;
    client.expect_quiet(Duration::from_millis(200)).await;
}

#[tokio::test]
async fn subscribers_hear_of_updates_to_their_resources_only() {
    let server = server(100);
    let mut subscriber = Client::connect(&server, ProtocolVersion::V2025_11_25);
    subscriber.initialize(ProtocolVersion::V2025_11_25).await;
    let mut bystander = Client::connect(&server, ProtocolVersion::V2025_11_25);
    bystander.initialize(ProtocolVersion::V2025_11_25).await;
    subscriber
        .result("resources/subscribe", json!({"uri": "memo://one"}))
        .await;
    bystander.result("ping", json!({})).await;

    server.notify_resource_updated("memo://one");
    let update = subscriber
        .notification("notifications/resources/updated")
        .await;
    assert_eq!(update["params"]["uri"], "memo://one");
    bystander.expect_quiet(Duration::from_millis(200)).await;

    subscriber
        .result("resources/unsubscribe", json!({"uri": "memo://one"}))
        .await;
    server.notify_resource_updated("memo://one");
    subscriber.expect_quiet(Duration::from_millis(200)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_a_call_raises_comes_before_its_answer() {
    let server = server(100);
    server.add_tool(ToolDef::new(
        "touch",
        "Changes memo://one",
        |_: NoArguments, ctx: Context| async move {
            ctx.server().notify_resource_updated("memo://one");
            Ok::<_, HandlerError>("touched")
        },
    ));
    let mut client = Client::connect(&server, ProtocolVersion::V2025_11_25);
    client.initialize(ProtocolVersion::V2025_11_25).await;
    client
        .result("resources/subscribe", json!({"uri": "memo://one"}))
        .await;
    client.expect_quiet(Duration::from_millis(100)).await;
    for n in 0..100 {
        let (_, before) = client
            .request("tools/call", json!({"name": "touch", "arguments": {}}))
            .await;
        let updates = before
            .iter()
            .filter(|m| m["method"] == "notifications/resources/updated")
            .count();
        assert_eq!(
            updates, 1,
            "call {n}: the update did not come before the answer: {before:?}"
        );
    }
}

fn modern_params(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    params
}

#[tokio::test]
async fn modern_listen_streams_get_what_they_asked_for() {
    let server = server(100);
    let mut client = Client::connect(&server, ProtocolVersion::V2026_07_28);
    let listen = modern_params(
        json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["memo://one"]}}),
    );
    client.send(json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen", "params": listen})).await;
    let ack = client
        .notification("notifications/subscriptions/acknowledged")
        .await;
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"]["toolsListChanged"], true,
        "{ack}"
    );

    server.add_tool(tool("late"));
    let changed = client
        .notification("notifications/tools/list_changed")
        .await;
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );

    server.add_prompt(PromptDef::new("p", "A prompt", |_, _| async {
        Ok(GetPromptResult::new(vec![PromptMessage::user_text("hi")]))
    }));
    client.expect_quiet(Duration::from_millis(200)).await; // prompts were not asked for
    server.notify_resource_updated("memo://one");
    let updated = client.notification("notifications/resources/updated").await;
    assert_eq!(updated["params"]["uri"], "memo://one");
    assert_eq!(
        updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );

    // Ending the stream: the client cancels it, and it hears nothing more.
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "listen-1"}}))
        .await;
    let tools = client.result("tools/list", modern_params(json!({}))).await;
    assert_eq!(tools["resultType"], "complete");
    server.add_tool(tool("later"));
    client.expect_quiet(Duration::from_millis(200)).await;
}
