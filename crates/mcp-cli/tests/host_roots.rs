//! `mcp host` offering the roots of its settings file (`[roots] paths`)
//! to a server that asks, and offering new ones as soon as the file
//! changes.
#![cfg(target_os = "linux")]

mod support;

use serde_json::json;
use support::MCP;
use support::pty::Terminal;

const VERSION: &str = "2025-11-25";

async fn roots(url: &str, session: &str) -> String {
    let tool = "e__test_input_required_result_list_roots";
    let answer = support::call_tool(url, session, VERSION, 5, tool, json!({})).await;
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_roots_of_the_settings_file_reach_servers_and_follow_its_changes() {
    let scratch = tempfile::tempdir().unwrap();
    let (first, second) = (scratch.path().join("first"), scratch.path().join("second"));
    std::fs::create_dir_all(&first).unwrap();
    std::fs::create_dir_all(&second).unwrap();
    let config = scratch.path().join("servers.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"e": {"command": MCP, "args": ["serve", "everything"], "era": "legacy"}}})
            .to_string(),
    )
    .unwrap();
    let settings = scratch.path().join("host.toml");
    // Relative to the settings file's folder.
    std::fs::write(&settings, "[roots]\npaths = [\"first\"]\n").unwrap();
    let terminal = Terminal::run(&[
        "host",
        "--http",
        "127.0.0.1:0",
        "--config",
        config.to_str().unwrap(),
        "--settings",
        settings.to_str().unwrap(),
    ]);
    let (url, end) = terminal.endpoint();
    let uri = |dir: &std::path::Path| format!("file://{}/", dir.canonicalize().unwrap().display());
    assert!(
        terminal.seen().contains(&format!("roots: {}", uri(&first))),
        "{}",
        terminal.seen()
    );
    let session = support::open_session(&url, VERSION).await;
    assert_eq!(
        roots(&url, &session).await,
        format!("Roots: {}", uri(&first))
    );

    std::fs::write(&settings, "[roots]\npaths = [\"second\"]\n").unwrap();
    terminal.wait_for(&format!("roots changed: {}", uri(&second)), end);
    assert_eq!(
        roots(&url, &session).await,
        format!("Roots: {}", uri(&second))
    );
}
