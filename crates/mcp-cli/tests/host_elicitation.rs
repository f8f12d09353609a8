//! `mcp host` answering a server's elicitation at its own terminal (a
//! pseudo-terminal here) for a client that declares none: the form is
//! shown with the asking server's name, filled in, and the answer reaches
//! the server, whose tool answers the client; declined, the tool says so.
#![cfg(target_os = "linux")]

mod support;

use serde_json::{Value, json};
use support::MCP;
use support::pty::Terminal;

/// The protocol of the client's session.
const VERSION: &str = "2025-11-25";

async fn call(url: String, session: String, message: &str) -> Value {
    let arguments = json!({"message": message});
    support::call_tool(&url, &session, VERSION, 3, "e__test_elicitation", arguments).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_terminal_fills_in_a_servers_form() {
    let scratch = tempfile::tempdir().unwrap();
    let config = scratch.path().join("servers.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"e": {"command": MCP, "args": ["serve", "everything"], "era": "legacy"}}})
            .to_string(),
    )
    .unwrap();
    let mut terminal = Terminal::run_controlling(
        &[
            "host",
            "--http",
            "127.0.0.1:0",
            "--config",
            config.to_str().unwrap(),
        ],
        &[],
    );
    let (url, end) = terminal.endpoint();
    let session = support::open_session(&url, VERSION).await;

    let pending = tokio::spawn(call(url.clone(), session.clone(), "Who are you?"));
    let named = terminal.wait_for("Server \"e\" asks you:", end);
    let asked = terminal.wait_for("Answer it?", named);
    terminal.type_keys("\r");
    let username = terminal.wait_for("username", asked);
    terminal.type_keys("ada\r");
    let email = terminal.wait_for("email", username);
    terminal.type_keys("ada@example.org\r");
    let answer = pending.await.unwrap();
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("ada@example.org"), "{answer}");

    // Declined: the server hears it, and its tool says so.
    let pending = tokio::spawn(call(url.clone(), session.clone(), "Again?"));
    terminal.wait_for("Answer it?", email);
    terminal.type_keys("\x1b[B\r");
    let answer = pending.await.unwrap();
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.to_lowercase().contains("decline"), "{answer}");
}
