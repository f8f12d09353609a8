//! `mcp chat` with a real model (llama-cpp-python's server with
//! SmolLM2-135M): `--print --json` with the embedded default catalog
//! calling a tool through the host; a tool call refused where no one can
//! be asked; and a conversation in a pseudo-terminal: a prompt, the tool
//! call approved at the terminal, and Ctrl-C during it, which cancels it
//! at the server. The tests check what was called and how it ended, never
//! the wording of a tiny model's answer.
#![cfg(target_os = "linux")]

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::local_model::{LocalModel, MODEL, MODEL_NAME};
use support::pty::Terminal;
use support::{mcp_with, stdout};

/// A settings file naming the local model.
fn settings_for(dir: &std::path::Path, model: &LocalModel) -> String {
    let path = dir.join("chat.toml");
    std::fs::write(
        &path,
        format!(
            "[model]\nbase_url = \"{}\"\nmodel = \"{MODEL_NAME}\"\n",
            model.base_url
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

/// `mcp chat --print --json` asked for a simple text with the tool that
/// gives one, and `extra` flags: the turn it prints.
async fn simple_text(settings: &str, state: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "chat",
        "--settings",
        settings,
        "--print",
        "Give me a simple text.",
        "--tool",
        "everything__test_simple_text",
        "--json",
    ];
    args.extend_from_slice(extra);
    let output = mcp_with(&args, &[("XDG_STATE_HOME", state)]).await;
    assert!(output.status.success(), "{output:?}");
    serde_json::from_str(&stdout(&output)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_calls_a_tool_of_the_default_catalog_and_answers_in_json() {
    if !MODEL.met() {
        return;
    }
    let model = tokio::task::spawn_blocking(LocalModel::start)
        .await
        .unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let settings = settings_for(scratch.path(), &model);
    let state = scratch.path().to_str().unwrap();
    let turn = simple_text(&settings, state, &["--yes"]).await;
    let call = &turn["toolCalls"][0];
    assert_eq!(call["name"], "everything__test_simple_text", "{turn}");
    assert_eq!(call["isError"], false, "{turn}");
    assert_eq!(
        call["result"],
        "This is a simple text response for testing."
    );
    assert_eq!(turn["toolCalls"].as_array().unwrap().len(), 1, "{turn}");
    assert_eq!(turn["model"], MODEL_NAME);
    assert!(
        ["endTurn", "maxTokens"].contains(&turn["stopReason"].as_str().unwrap()),
        "{turn}"
    );
    assert!(
        turn["usage"]["outputTokens"].as_u64().unwrap() > 0,
        "{turn}"
    );

    // Without --yes and with no terminal to ask at, the call is refused,
    // and the model is told why.
    let turn = simple_text(&settings, state, &[]).await;
    let call = &turn["toolCalls"][0];
    assert_eq!(call["isError"], true, "{turn}");
    assert!(call["result"].as_str().unwrap().contains("--yes"), "{turn}");

    // No model at all: said so, before any server starts.
    let output = mcp_with(&["chat", "--print", "hi"], &[("XDG_STATE_HOME", state)]).await;
    assert!(!output.status.success());
    assert!(support::stderr(&output).contains("no model"), "{output:?}");
}

/// Waits until `file` holds a line starting with `prefix`; that line.
fn line_in(file: &std::path::Path, prefix: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.starts_with(prefix)) {
            return line.to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "no {prefix:?} line in {}: {text:?}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_conversation_approves_a_tool_call_and_ctrl_c_cancels_it_at_the_server() {
    if !MODEL.met() {
        return;
    }
    let model = LocalModel::start();
    let scratch = tempfile::tempdir().unwrap();
    let settings = settings_for(scratch.path(), &model);
    let record = scratch.path().join("calls.txt");
    let server = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/waiting_server.py"
    );
    let config = scratch.path().join("servers.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"waiting": {"command": "python3", "args": [server, record]}}})
            .to_string(),
    )
    .unwrap();
    let state = scratch.path().to_str().unwrap();
    let mut terminal = Terminal::run_controlling(
        &[
            "chat",
            "--config",
            config.to_str().unwrap(),
            "--settings",
            &settings,
            "--tool",
            "waiting__wait",
        ],
        &[("XDG_STATE_HOME", state)],
    );
    let ready = terminal.wait_for(&format!("mcp chat: model {MODEL_NAME}; tools: 1;"), 0);
    let prompt = terminal.wait_for("> ", ready);
    terminal.type_keys("Please wait for me.\r");
    let asked = terminal.wait_for("Run waiting__wait with", prompt);
    terminal.type_keys("y\r");
    let called = line_in(&record, "called ");
    // Ctrl-C while the call is in flight: the step stops, and the server
    // is told the call is cancelled.
    terminal.type_keys("\x03");
    let stopped = terminal.wait_for("(stopped)", asked);
    let cancelled = line_in(&record, "cancelled ");
    assert_eq!(
        cancelled.strip_prefix("cancelled "),
        called.strip_prefix("called "),
        "the cancel names the call"
    );
    // The conversation goes on, and ends at /quit; it was kept.
    terminal.wait_for("> ", stopped);
    terminal.type_keys("/quit\r");
    let (status, shown) = terminal.finish();
    assert!(status.success(), "{shown}");
    let kept = std::fs::read_dir(scratch.path().join("mcp/chats"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .count();
    assert_eq!(kept, 1, "{shown}");
    drop(model);
}
