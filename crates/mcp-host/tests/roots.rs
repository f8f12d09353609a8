//! Roots the user gave the host (`[roots] paths`), offered to servers of
//! both eras when they ask (a `roots/list` request from a 2025-11-25
//! server, a question of a 2026-07-28 server's round), and changed while
//! the host runs.

use std::time::Duration;

use mcp_client::{Client, EraChoice};
use mcp_host::config::{HostConfig, ServerConfig};
use mcp_host::{Host, HostSettings};
use mcp_schema::ProtocolVersion;
use serde_json::json;

mod support;
use support::{Scratch, gateway_client, on_http, within};

async fn roots_seen(client: &Client, tool: &str) -> String {
    let result = within(tool, client.call_tool(tool, json!({})))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    let text = result.content[0].as_text().unwrap_or_default().to_owned();
    assert_ne!(result.is_error, Some(true), "{tool}: {text}");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_roots_reach_servers_of_both_eras_and_change_at_once() {
    let scratch = Scratch::new("roots");
    let first = scratch.file("first");
    let second = scratch.file("second");
    std::fs::create_dir_all(&first).unwrap();
    std::fs::create_dir_all(&second).unwrap();
    let settings = format!("[roots]\npaths = [{:?}]\n", first.display().to_string());
    let options = HostSettings::parse(&settings).unwrap().options().unwrap();
    let url = on_http(mcp_builtin::everything::server()).await;
    let host = Host::start(
        HostConfig {
            servers: vec![
                ServerConfig::remote("old", &url).era("legacy").unwrap(),
                ServerConfig::remote("new", &url).era("modern").unwrap(),
            ],
            problems: Vec::new(),
        },
        options,
    );
    host.wait_started(Duration::from_secs(20)).await;
    let uri = |dir: &std::path::Path| {
        format!("file://{}/", std::fs::canonicalize(dir).unwrap().display())
    };
    for era in [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28] {
        let client = gateway_client(
            &host,
            Client::builder("plain", "1.0").era(EraChoice::Pinned(era)),
        )
        .await;
        for server in ["old", "new"] {
            let seen = roots_seen(
                &client,
                &format!("{server}__test_input_required_result_list_roots"),
            )
            .await;
            assert_eq!(seen, format!("Roots: {}", uri(&first)), "{server}, {era}");
        }
    }
    let second_root = HostSettings::parse(&format!(
        "[roots]\npaths = [{:?}]\n",
        second.display().to_string()
    ))
    .unwrap()
    .roots
    .roots()
    .unwrap();
    assert!(host.set_roots(second_root.clone()).await);
    assert!(
        !host.set_roots(second_root).await,
        "the same roots are no change"
    );
    let client = gateway_client(&host, Client::builder("plain", "1.0")).await;
    for server in ["old", "new"] {
        let seen = roots_seen(
            &client,
            &format!("{server}__test_input_required_result_list_roots"),
        )
        .await;
        assert_eq!(seen, format!("Roots: {}", uri(&second)), "{server}");
    }
    let error = HostSettings::parse("[roots]\npaths = [\"/no/such/dir\"]\n").unwrap_err();
    assert!(error.contains("roots.paths: /no/such/dir"), "{error}");
    host.shutdown(Duration::from_secs(5)).await;
}
