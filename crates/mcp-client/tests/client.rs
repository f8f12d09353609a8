//! The client against the `everything` server over an in-memory transport,
//! in every revision: the handshake each era needs, typed calls, handlers
//! answering the server (legacy requests and modern `input_required`
//! rounds alike), progress, pagination and cache hints.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_client::{Client, ClientError, EraChoice, RequestOptions};
use mcp_schema::{
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitValue, ProtocolVersion, Root,
};
use mcp_server::{NoArguments, Server, ToolDef};
use serde_json::json;

/// The answers the test client gives: a name or a colour, whichever the
/// form asks for.
fn elicit(params: ElicitRequestParams) -> ElicitResult {
    let ElicitRequestParams::Form(form) = params else {
        return ElicitResult::decline();
    };
    let mut content = BTreeMap::new();
    for field in form.requested_schema.properties.keys() {
        let answer = if field == "color" { "blue" } else { "Alice" };
        content.insert(field.clone(), ElicitValue::String(answer.into()));
    }
    ElicitResult::accept(content)
}

async fn connect_to(server: &Server, era: EraChoice) -> Client {
    let (server_side, client_side) = mcp_core::Transport::pair();
    let _session = mcp_core::serve(
        server_side,
        Arc::new(server.clone()),
        server.session_config(),
    );
    tokio::time::timeout(
        Duration::from_secs(10),
        Client::builder("client-tests", "1.0.0")
            .on_sampling(|_| async {
                Ok(CreateMessageResult::assistant_text("test-model", "Paris"))
            })
            .on_elicitation(|params| async move { Ok(elicit(params)) })
            .roots(vec![
                Root::new("file:///tmp/a", Some("a".into())),
                Root::new("file:///tmp/b", None),
            ])
            .era(era)
            .connect(client_side),
    )
    .await
    .expect("connect in time")
    .expect("connect")
}

async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} took too long"))
}

fn text(result: &mcp_schema::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .collect::<Vec<_>>()
        .join("")
}

#[tokio::test]
async fn every_revision_offers_the_same_calls() {
    let server = mcp_builtin::everything::server();
    let eras = [
        (EraChoice::Auto, ProtocolVersion::V2026_07_28),
        (
            EraChoice::Pinned(ProtocolVersion::V2026_07_28),
            ProtocolVersion::V2026_07_28,
        ),
        (
            EraChoice::Pinned(ProtocolVersion::V2025_11_25),
            ProtocolVersion::V2025_11_25,
        ),
        (
            EraChoice::Pinned(ProtocolVersion::V2025_06_18),
            ProtocolVersion::V2025_06_18,
        ),
        (
            EraChoice::Pinned(ProtocolVersion::V2025_03_26),
            ProtocolVersion::V2025_03_26,
        ),
        (
            EraChoice::Pinned(ProtocolVersion::V2024_11_05),
            ProtocolVersion::V2024_11_05,
        ),
    ];
    for (era, revision) in eras {
        let client = connect_to(&server, era).await;
        assert_eq!(client.revision(), revision);
        assert_eq!(
            client.server_info().map(|i| i.name.as_str()),
            Some("mcp-everything")
        );
        assert!(client.server_capabilities().tools.is_some());
        within("ping", client.ping()).await.expect("ping");

        let tools = within("tools", client.list_all_tools()).await.unwrap();
        assert!(tools.iter().any(|t| t.name == "echo"), "{revision}");
        let echo = within("echo", client.call_tool("echo", json!({"text": "hi"})))
            .await
            .unwrap();
        assert_eq!(text(&echo), "hi", "{revision}");

        let read = within("read", client.read_resource("test://static-text"))
            .await
            .unwrap();
        assert_eq!(read.contents.len(), 1, "{revision}");
        let templates = within("templates", client.list_all_resource_templates())
            .await
            .unwrap();
        assert!(!templates.is_empty(), "{revision}");

        let mut arguments = BTreeMap::new();
        arguments.insert("arg1".to_owned(), "one".to_owned());
        arguments.insert("arg2".to_owned(), "two".to_owned());
        let prompt = within(
            "prompt",
            client.get_prompt("test_prompt_with_arguments", arguments),
        )
        .await
        .unwrap();
        assert!(!prompt.messages.is_empty(), "{revision}");

        // The handlers answer, whether the server sends requests (legacy)
        // or returns input_required (modern).
        let sampled = within(
            "sampling",
            client.call_tool("test_input_required_result_sampling", json!({})),
        )
        .await
        .unwrap();
        assert_eq!(text(&sampled), "The model said: Paris", "{revision}");
        let roots = within(
            "roots",
            client.call_tool("test_input_required_result_list_roots", json!({})),
        )
        .await
        .unwrap();
        assert!(
            text(&roots).contains("file:///tmp/b"),
            "{revision}: {}",
            text(&roots)
        );
        if revision.has_elicitation() {
            let rounds = within(
                "two rounds",
                client.call_tool("test_input_required_result_multi_round", json!({})),
            )
            .await
            .unwrap();
            assert_eq!(text(&rounds), "Alice likes blue", "{revision}");
            let all = within(
                "three questions",
                client.call_tool("test_input_required_result_multiple_inputs", json!({})),
            )
            .await
            .unwrap();
            assert_eq!(text(&all), "Paris Alice (2 roots)", "{revision}");
        }

        let seen = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&seen);
        let options = RequestOptions::new().on_progress(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        let progressed = within(
            "progress",
            client.call_tool_with("test_tool_with_progress", json!({}), options),
        )
        .await
        .unwrap();
        assert_eq!(text(&progressed), "Progress test completed");
        assert_eq!(seen.load(Ordering::SeqCst), 3, "{revision}");

        let unknown = within("unknown tool", client.call_tool("no_such_tool", json!({}))).await;
        assert!(
            unknown.as_ref().err().and_then(ClientError::rpc).is_some(),
            "{revision}: {unknown:?}"
        );
        client.close().await;
    }
}

/// A server with seven tools, three to a page.
fn paged_server() -> Server {
    let mut builder = Server::builder("paged", "1.0.0")
        .page_size(3)
        .cache_ttl(Duration::from_secs(60));
    for i in 0..7 {
        builder = builder.tool(ToolDef::new(
            format!("tool_{i}"),
            "A numbered tool",
            |_: NoArguments, _| async { Ok::<_, mcp_server::HandlerError>("done") },
        ));
    }
    builder.build()
}

#[tokio::test]
async fn lists_walk_every_page_and_honour_cache_hints() {
    let server = paged_server();
    let client = connect_to(&server, EraChoice::Auto).await;
    let first = client.list_tools(None).await.unwrap();
    assert_eq!(first.tools.len(), 3);
    assert!(first.next_cursor.is_some());
    let all = client.list_all_tools().await.unwrap();
    let names: Vec<_> = all.iter().map(|t| t.name.clone()).collect();
    assert_eq!(
        names,
        (0..7).map(|i| format!("tool_{i}")).collect::<Vec<_>>()
    );

    // The modern server said the list may be kept for a minute: a tool
    // added now shows only once the cache is dropped.
    server.add_tool(ToolDef::new(
        "tool_late",
        "Added later",
        |_: NoArguments, _| async { Ok::<_, mcp_server::HandlerError>("late") },
    ));
    assert_eq!(client.list_all_tools().await.unwrap().len(), 7);
    client.invalidate_cache();
    assert_eq!(client.list_all_tools().await.unwrap().len(), 8);
    client.close().await;
}

#[tokio::test]
async fn legacy_list_changed_reaches_the_application() {
    let server = paged_server();
    let changes = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&changes);
    let (server_side, client_side) = mcp_core::Transport::pair();
    let _session = mcp_core::serve(
        server_side,
        Arc::new(server.clone()),
        server.session_config(),
    );
    let client = Client::builder("client-tests", "1.0.0")
        .era(EraChoice::Pinned(ProtocolVersion::V2025_11_25))
        .on_notification(move |n| {
            if n.method == "notifications/tools/list_changed" {
                counter.fetch_add(1, Ordering::SeqCst);
            }
        })
        .connect(client_side)
        .await
        .unwrap();
    assert_eq!(client.list_all_tools().await.unwrap().len(), 7);
    server.add_tool(ToolDef::new(
        "tool_late",
        "Added later",
        |_: NoArguments, _| async { Ok::<_, mcp_server::HandlerError>("late") },
    ));
    within("list_changed", async {
        while changes.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(client.list_all_tools().await.unwrap().len(), 8);
    client.close().await;
}

#[tokio::test]
async fn too_many_rounds_give_up() {
    let server = mcp_builtin::everything::server();
    let (server_side, client_side) = mcp_core::Transport::pair();
    let _session = mcp_core::serve(
        server_side,
        Arc::new(server.clone()),
        server.session_config(),
    );
    let client = Client::builder("client-tests", "1.0.0")
        .on_elicitation(|params| async move { Ok(elicit(params)) })
        .max_input_rounds(1)
        .connect(client_side)
        .await
        .unwrap();
    let outcome = client
        .call_tool("test_input_required_result_multi_round", json!({}))
        .await;
    assert!(
        matches!(outcome, Err(ClientError::TooManyRounds { rounds: 1, .. })),
        "{outcome:?}"
    );
    client.close().await;
}

#[tokio::test]
async fn listen_streams_what_was_asked_for() {
    let server = paged_server();
    let (server_side, client_side) = mcp_core::Transport::pair();
    let _session = mcp_core::serve(
        server_side,
        Arc::new(server.clone()),
        server.session_config(),
    );
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = Arc::clone(&seen);
    let client = Client::builder("client-tests", "1.0.0")
        .on_notification(move |n| log.lock().unwrap().push(n.method.clone()))
        .connect(client_side)
        .await
        .unwrap();
    assert_eq!(client.revision(), ProtocolVersion::V2026_07_28);
    let filter = mcp_schema::SubscriptionFilter {
        tools_list_changed: Some(true),
        ..Default::default()
    };
    let listening = tokio::spawn({
        let client = client.clone();
        async move { client.listen(filter).await }
    });
    let has = |method: &'static str| {
        let seen = Arc::clone(&seen);
        async move {
            while !seen.lock().unwrap().iter().any(|m| m == method) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    within(
        "acknowledged",
        has("notifications/subscriptions/acknowledged"),
    )
    .await;
    server.add_tool(ToolDef::new(
        "tool_late",
        "Added later",
        |_: NoArguments, _| async { Ok::<_, mcp_server::HandlerError>("late") },
    ));
    within("list_changed", has("notifications/tools/list_changed")).await;
    assert!(!listening.is_finished(), "the stream stays open");
    listening.abort();

    // The legacy era has no listen.
    let legacy = connect_to(&server, EraChoice::Pinned(ProtocolVersion::V2025_11_25)).await;
    let refused = legacy.listen(Default::default()).await;
    assert!(
        matches!(refused, Err(ClientError::Unsupported(_))),
        "{refused:?}"
    );
    client.close().await;
    legacy.close().await;
}
