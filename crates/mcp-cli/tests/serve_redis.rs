//! `mcp serve … --http ADDR --redis URL`: two real `mcp` processes sharing
//! a real `redis-server`, and a clear error when Redis cannot be reached.

mod support;

use serde_json::{Value, json};
use support::{Redis, free_port, mcp, serve_everything_http_with, stderr};

/// `mcp serve everything --http 127.0.0.1:0 --redis URL`, killed when
/// dropped; the child and its endpoint URL.
async fn serve(redis: &str) -> (tokio::process::Child, String) {
    let (child, address) = serve_everything_http_with("127.0.0.1:0", &["--redis", redis]).await;
    (child, format!("http://{address}/mcp"))
}

async fn post(url: &str, session: Option<&str>, body: Value) -> reqwest::Response {
    support::post_rpc(url, session, "2025-06-18", &body).await
}

#[tokio::test]
async fn two_instances_on_one_redis_serve_the_same_session() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let (_a, a) = serve(&redis.url).await;
    let (_b, b) = serve(&redis.url).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "cli-test", "version": "1"}}});
    let response = post(&a, None, initialize).await;
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&a, Some(&session), initialized).await.status(), 202);

    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "from b"}}});
    let response = post(&b, Some(&session), call).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["result"]["content"][0]["text"], "from b", "{body}");
}

#[tokio::test]
async fn an_unreachable_redis_is_a_clear_error_at_start() {
    let url = format!("redis://127.0.0.1:{}/", free_port());
    let output = mcp(&[
        "serve",
        "everything",
        "--http",
        "127.0.0.1:0",
        "--redis",
        &url,
    ])
    .await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("cannot reach Redis at"),
        "{}",
        stderr(&output)
    );
    let output = mcp(&[
        "serve",
        "everything",
        "--http",
        "127.0.0.1:0",
        "--redis",
        "nonsense",
    ])
    .await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("is not a Redis URL"),
        "{}",
        stderr(&output)
    );
}
