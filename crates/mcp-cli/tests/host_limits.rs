//! `mcp host` with a rate limit in its settings file, over real HTTP: the
//! call past the budget is answered with the JSON-RPC error that names
//! the limit, and the HTTP response says `Retry-After`; the calls within
//! the budget, and other tools, go through. Two hosts on one Redis spend
//! one budget.

use serde_json::{Value, json};

mod support;

use support::{MCP, Redis};

/// The protocol the tests' sessions speak.
const VERSION: &str = "2025-11-25";

/// A tool call's HTTP response: its `Retry-After`, and its JSON-RPC
/// message.
async fn call(url: &str, session: &str, id: u64, tool: &str) -> (Option<String>, Value) {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": {"text": "hi"}}});
    let response = support::post_rpc(url, Some(session), VERSION, &call).await;
    assert_eq!(response.status(), 200);
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    let text = response.text().await.unwrap();
    let message = if kind.starts_with("text/event-stream") {
        let data = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .rfind(|d| d.contains("\"id\""))
            .expect("the answer in the stream");
        serde_json::from_str(data).unwrap()
    } else {
        serde_json::from_str(&text).unwrap()
    };
    (retry_after, message)
}

/// A config of one server, `e` (this program's everything server), and
/// settings limiting its echo to `rate`.
fn files(rate: &str) -> tempfile::TempDir {
    let scratch = tempfile::tempdir().unwrap();
    std::fs::write(
        scratch.path().join("servers.json"),
        json!({"mcpServers": {"e": {"command": MCP, "args": ["serve", "everything"]}}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        scratch.path().join("host.toml"),
        format!(
            "[[limits]]\nserver = \"e\"\ntool = \"echo\"\nper = \"server\"\nrate = \"{rate}\"\nname = \"echoes\"\n"
        ),
    )
    .unwrap();
    scratch
}

/// `mcp host` on `files`, with `more` flags; its endpoint URL.
async fn host(files: &tempfile::TempDir, more: &[&str]) -> (tokio::process::Child, String) {
    let mut command = tokio::process::Command::new(MCP);
    command
        .args(["host", "--http", "127.0.0.1:0", "--config"])
        .arg(files.path().join("servers.json"))
        .arg("--settings")
        .arg(files.path().join("host.toml"))
        .args(more)
        .stderr(std::process::Stdio::null());
    support::spawn_endpoint(&mut command).await
}

#[tokio::test]
async fn the_call_past_a_rate_limit_gets_its_error_and_retry_after() {
    let files = files("2/hour");
    let (_host, url) = host(&files, &[]).await;
    let session = support::open_session(&url, VERSION).await;
    for id in 1..=2 {
        let (retry_after, answer) = call(&url, &session, id, "e__echo").await;
        assert_eq!(retry_after, None);
        assert!(answer["result"].is_object(), "{answer}");
    }
    let (retry_after, answer) = call(&url, &session, 3, "e__echo").await;
    assert_eq!(answer["error"]["code"], -32029, "{answer}");
    assert_eq!(answer["error"]["data"]["limit"], "echoes", "{answer}");
    // One more every half hour: about 1,800 s to wait.
    let seconds: u64 = retry_after.expect("Retry-After").parse().unwrap();
    assert!((1_700..=1_800).contains(&seconds), "{seconds}");
    let (retry_after, answer) = call(&url, &session, 4, "e__test_tool_fast").await;
    assert_eq!(retry_after, None);
    assert!(answer["result"].is_object(), "{answer}");
}

#[tokio::test]
async fn two_hosts_on_one_redis_spend_one_budget() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let files = files("3/hour");
    let (_first, first) = host(&files, &["--redis", &redis.url]).await;
    let (_second, second) = host(&files, &["--redis", &redis.url]).await;
    let sessions = [
        support::open_session(&first, VERSION).await,
        support::open_session(&second, VERSION).await,
    ];
    let urls = [&first, &second];
    // Three calls, spread over both hosts, spend the budget.
    for id in 0..3 {
        let host = id as usize % 2;
        let (_, answer) = call(urls[host], &sessions[host], id, "e__echo").await;
        assert!(answer["result"].is_object(), "{answer}");
    }
    // Either host refuses the next.
    for host in [0, 1] {
        let (retry_after, answer) = call(urls[host], &sessions[host], 10, "e__echo").await;
        assert_eq!(answer["error"]["code"], -32029, "{answer}");
        assert!(retry_after.is_some());
    }
}
