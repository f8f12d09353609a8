//! Our client against our `everything` server over every transport we
//! have (stdio framing, Streamable HTTP in both response modes, the legacy
//! HTTP+SSE pair, WebSocket), in both eras and several legacy revisions:
//! the same calls, the same answers.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_client::{Client, EraChoice, RequestOptions};
use mcp_core::Transport;
use mcp_http::{HttpConfig, HttpTransportKind, McpEndpoint, ResponseMode};
use mcp_schema::{
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitValue, ProtocolVersion, Root,
};
use serde_json::json;

#[derive(Debug, Clone, Copy)]
enum Wire {
    Stdio,
    StreamableJson,
    StreamableSse,
    LegacySse,
    WebSocket,
}

/// One HTTP server (all transports mounted) per response mode.
struct Servers {
    auto: SocketAddr,
    always_sse: SocketAddr,
}

async fn http_server(mode: ResponseMode) -> SocketAddr {
    let server = mcp_builtin::everything::server();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = HttpConfig::loopback(addr.port()).response_mode(mode);
    let endpoint = McpEndpoint::new(Arc::new(server.clone()), server.session_config(), config);
    tokio::spawn(mcp_http::serve(listener, endpoint, std::future::pending()));
    addr
}

async fn transport(wire: Wire, servers: &Servers) -> Transport {
    let http = |addr: SocketAddr, path: &str, kind| {
        mcp_http::HttpClientConfig::new(format!("http://{addr}{path}")).transport(kind)
    };
    match wire {
        Wire::Stdio => {
            // The stdio framing on both sides, over an in-process pipe.
            let (client_end, server_end) = tokio::io::duplex(64 * 1024);
            let (server_read, server_write) = tokio::io::split(server_end);
            let server = mcp_builtin::everything::server();
            let server_side = mcp_core::stdio::from_streams(server_read, server_write);
            let _ = mcp_core::serve(
                server_side,
                Arc::new(server.clone()),
                server.session_config(),
            );
            let (client_read, client_write) = tokio::io::split(client_end);
            mcp_core::stdio::from_streams(client_read, client_write)
        }
        Wire::StreamableJson => mcp_http::client::connect(http(
            servers.auto,
            "/mcp",
            HttpTransportKind::StreamableHttp,
        ))
        .await
        .unwrap()
        .into_transport(),
        Wire::StreamableSse => mcp_http::client::connect(http(
            servers.always_sse,
            "/mcp",
            HttpTransportKind::StreamableHttp,
        ))
        .await
        .unwrap()
        .into_transport(),
        Wire::LegacySse => {
            mcp_http::client::connect(http(servers.auto, "/sse", HttpTransportKind::LegacySse))
                .await
                .unwrap()
                .into_transport()
        }
        Wire::WebSocket => mcp_http::ws::connect(
            &format!("ws://{}/ws", servers.auto),
            mcp_http::ws::WsOptions::new(),
        )
        .await
        .unwrap(),
    }
}

fn answer(params: ElicitRequestParams) -> ElicitResult {
    let ElicitRequestParams::Form(form) = params else {
        return ElicitResult::decline();
    };
    let content = form
        .requested_schema
        .properties
        .keys()
        .map(|field| (field.clone(), ElicitValue::String("Alice".into())))
        .collect::<BTreeMap<_, _>>();
    ElicitResult::accept(content)
}

fn text(result: &mcp_schema::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .collect::<Vec<_>>()
        .join("")
}

/// The calls every combination must answer the same way.
async fn exercise(client: &Client, label: &str) {
    let tools = client.list_all_tools().await.expect(label);
    assert!(tools.iter().any(|t| t.name == "echo"), "{label}");
    let echo = client
        .call_tool("echo", json!({"text": label}))
        .await
        .expect(label);
    assert_eq!(text(&echo), label);

    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let options = RequestOptions::new().on_progress(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let progressed = client
        .call_tool_with("test_tool_with_progress", json!({}), options)
        .await
        .expect(label);
    assert_eq!(text(&progressed), "Progress test completed", "{label}");
    assert_eq!(seen.load(Ordering::SeqCst), 3, "{label}: progress");

    // The server asks the client: sampling, elicitation and roots at once
    // (requests in the legacy era, one input_required round in the modern).
    if client.revision().has_elicitation() {
        let asked = client
            .call_tool("test_input_required_result_multiple_inputs", json!({}))
            .await
            .expect(label);
        assert_eq!(text(&asked), "Paris Alice (1 roots)", "{label}");
    }

    let read = client
        .read_resource("test://static-text")
        .await
        .expect(label);
    assert_eq!(read.contents.len(), 1, "{label}");
    let prompt = client
        .get_prompt("test_simple_prompt", BTreeMap::new())
        .await
        .expect(label);
    assert!(!prompt.messages.is_empty(), "{label}");
}

#[tokio::test]
async fn every_transport_in_every_era() {
    let servers = Servers {
        auto: http_server(ResponseMode::Auto).await,
        always_sse: http_server(ResponseMode::AlwaysSse).await,
    };
    let wires = [
        Wire::Stdio,
        Wire::StreamableJson,
        Wire::StreamableSse,
        Wire::LegacySse,
        Wire::WebSocket,
    ];
    let eras = [
        (EraChoice::Auto, ProtocolVersion::V2026_07_28),
        (
            EraChoice::Pinned(ProtocolVersion::V2025_11_25),
            ProtocolVersion::V2025_11_25,
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
    for wire in wires {
        for (era, revision) in eras {
            let label = format!("{wire:?} {revision}");
            let run = async {
                let client = Client::builder("matrix", "1.0.0")
                    .on_sampling(|_| async {
                        Ok(CreateMessageResult::assistant_text("test-model", "Paris"))
                    })
                    .on_elicitation(|p| async move { Ok(answer(p)) })
                    .roots(vec![Root::new("file:///tmp", None)])
                    .era(era)
                    .connect(transport(wire, &servers).await)
                    .await
                    .expect(&label);
                assert_eq!(client.revision(), revision, "{label}");
                exercise(&client, &label).await;
                client.close().await;
            };
            tokio::time::timeout(Duration::from_secs(20), run)
                .await
                .unwrap_or_else(|_| panic!("{label} took too long"));
        }
    }
}
