//! `mcp host` answering a server's sampling with a real model
//! (llama-cpp-python's server with SmolLM2-135M) for a client that
//! declares no sampling, reviewed at the host's terminal (a
//! pseudo-terminal here): the person sees the request, edits it, sends
//! it, sees the reply and gives it to the server, whose tool answers the
//! client; or refuses. Both upstream eras: this program's everything
//! server pinned to 2025-11-25 (a `sampling/createMessage` request) and
//! in 2026-07-28 (a question of an `input_required` round).
#![cfg(target_os = "linux")]

mod support;

use serde_json::{Value, json};
use support::MCP;
use support::local_model::{LocalModel, MODEL, MODEL_NAME};
use support::pty::Terminal;

/// The protocol of the client's session.
const VERSION: &str = "2025-11-25";

/// A tool call on a legacy session: its JSON-RPC answer.
async fn call(url: String, session: String, tool: String, prompt: &str) -> Value {
    support::call_tool(&url, &session, VERSION, 7, &tool, json!({"prompt": prompt})).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_terminal_reviews_sampling_that_the_local_model_answers() {
    if !MODEL.met() {
        return;
    }
    let model = tokio::task::spawn_blocking(LocalModel::start)
        .await
        .unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let config = scratch.path().join("servers.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {
            "old": {"command": MCP, "args": ["serve", "everything"], "era": "legacy"},
            "new": {"command": MCP, "args": ["serve", "everything"], "era": "modern"},
        }})
        .to_string(),
    )
    .unwrap();
    let settings = scratch.path().join("host.toml");
    std::fs::write(
        &settings,
        format!(
            "[model]\nbase_url = \"{}\"\nmodel = \"{MODEL_NAME}\"\n\n[sampling]\napprove = \"ask\"\n",
            model.base_url
        ),
    )
    .unwrap();
    let mut terminal = Terminal::run_controlling(
        &[
            "host",
            "--http",
            "127.0.0.1:0",
            "--config",
            config.to_str().unwrap(),
            "--settings",
            settings.to_str().unwrap(),
        ],
        &[],
    );
    let (url, end) = terminal.endpoint();
    assert!(
        terminal
            .seen()
            .contains("sampling: the calling client answers, else the host's model"),
        "{}",
        terminal.seen()
    );
    let session = support::open_session(&url, VERSION).await;
    let mut from = end;
    for server in ["old", "new"] {
        // Sent, edited, and the reply given to the server.
        let pending = tokio::spawn(call(
            url.clone(),
            session.clone(),
            format!("{server}__test_sampling"),
            "Say hi",
        ));
        let asked = terminal.wait_for("Send it to the model?", from);
        let shown = terminal.seen()[from..asked].to_owned();
        for part in [
            format!("Server {server:?}"),
            format!("model {MODEL_NAME:?}"),
            "at most 100 tokens".into(),
            "user: Say hi".into(),
        ] {
            assert!(shown.contains(&part), "{part} in {shown}");
        }
        terminal.type_keys("e\n");
        let edit = terminal.wait_for("The last message, on one line: ", asked);
        terminal.type_keys("Say hello\n");
        let asked = terminal.wait_for("Send it to the model?", edit);
        assert!(terminal.seen()[edit..asked].contains("Now: Say hello"));
        terminal.type_keys("y\n");
        let review = terminal.wait_for("Give this reply to the server?", asked);
        let shown = terminal.seen()[asked..review].to_owned();
        assert!(
            shown.contains(&format!(
                "The model {MODEL_NAME} answered server {server:?}"
            )),
            "{shown}"
        );
        terminal.type_keys("y\n");
        let answer = pending.await.unwrap();
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.starts_with("LLM response: "), "{server}: {answer}");
        assert_ne!(answer["result"]["isError"], true, "{server}: {answer}");

        // Refused: the model is never asked, and the tool says so.
        let pending = tokio::spawn(call(
            url.clone(),
            session.clone(),
            format!("{server}__test_sampling"),
            "Say bye",
        ));
        let asked = terminal.wait_for("Send it to the model?", review);
        terminal.type_keys("n\n");
        let answer = pending.await.unwrap();
        let said = answer.to_string();
        assert!(
            said.contains("refused the sampling request"),
            "{server}: {said}"
        );
        from = asked + 1;
    }
}
