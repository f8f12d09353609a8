//! The host's limits on the request path: a rate limit refuses the call
//! past its budget with an error naming the rule and when to retry (the
//! budget is the caller's across both eras; other tools are not counted),
//! the refusal is counted as `limited`; and a server's slots
//! (`max_in_flight`) make a call wait at most `max_wait`, behind at most
//! `max_waiting` others. The upstream is `mcp_builtin::everything` over
//! loopback HTTP.

use std::time::Duration;

use mcp_client::{Client, ClientError, EraChoice};
use mcp_host::config::{HostConfig, ServerConfig};
use mcp_host::limits::LIMITED;
use mcp_host::{Host, HostSettings};
use mcp_schema::ProtocolVersion;
use serde_json::{Value, json};

mod support;
use support::{gateway_client, on_http, within};

async fn host_with(settings: &str) -> Host {
    let url = on_http(mcp_builtin::everything::server()).await;
    let mut options = HostSettings::parse(settings).unwrap().options().unwrap();
    options.metrics = true;
    let host = Host::start(
        HostConfig {
            servers: vec![ServerConfig::remote("everything", &url).namespace("")],
            problems: Vec::new(),
        },
        options,
    );
    host.wait_started(Duration::from_secs(20)).await;
    host
}

/// The JSON-RPC error a call got.
fn refused(result: Result<mcp_schema::CallToolResult, ClientError>) -> mcp_schema::ErrorObject {
    match result {
        Err(error) => error
            .rpc()
            .cloned()
            .unwrap_or_else(|| panic!("a JSON-RPC error, not {error}")),
        Ok(result) => panic!("expected an error, got {result:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_refuses_past_its_budget_saying_which_and_when() {
    let host = host_with(
        r#"
        [[limits]]
        server = "every*"
        tool = "echo"
        rate = "3/minute"
        name = "echoes"

        [[limits]]
        preset = "read"
        "#,
    )
    .await;
    let legacy = gateway_client(
        &host,
        Client::builder("limits", "1.0").era(EraChoice::Pinned(ProtocolVersion::V2025_11_25)),
    )
    .await;
    let modern = gateway_client(
        &host,
        Client::builder("limits", "1.0").era(EraChoice::Pinned(ProtocolVersion::V2026_07_28)),
    )
    .await;
    let echo = |client: &Client, text: &str| {
        let (client, arguments) = (client.clone(), json!({ "text": text }));
        async move { within("echo", client.call_tool("echo", arguments)).await }
    };
    echo(&legacy, "1").await.expect("within the budget");
    echo(&legacy, "2").await.expect("within the budget");
    echo(&modern, "3").await.expect("the same caller's budget");
    let error = refused(echo(&modern, "4").await);
    assert_eq!(error.code, LIMITED);
    assert!(error.message.contains("\"echoes\""), "{}", error.message);
    let data = error.data.clone().unwrap_or(Value::Null);
    assert_eq!(data["limit"], "echoes");
    assert_eq!(data["rate"], "3/minute");
    let retry = data["retryAfterSeconds"].as_f64().unwrap_or_default();
    assert!(retry > 0.0 && retry <= 20.0, "{data}");
    assert_eq!(refused(echo(&legacy, "5").await).code, LIMITED);
    // Another tool is not counted by that rule.
    let added = within("add", legacy.call_tool("add", json!({"a": 1, "b": 2}))).await;
    assert!(added.is_ok(), "{added:?}");

    let status = host.status();
    let requests = serde_json::to_value(&status.servers[0].requests).unwrap();
    let count = |outcome: &str| {
        requests
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["method"] == "tools/call" && t["outcome"] == outcome)
            .map(|t| t["count"].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(count("limited"), 2, "{requests}");
    assert_eq!(count("ok"), 4, "{requests}");
    let text = host.metrics().encode();
    assert!(
        text.contains(r#"tool="echo",outcome="limited"} 2"#),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_server_makes_calls_wait_a_bounded_time_in_a_bounded_queue() {
    let host = host_with(
        r#"
        [servers]
        max_in_flight = 1
        max_waiting = 1
        max_wait = 0.5
        "#,
    )
    .await;
    let client = gateway_client(&host, Client::builder("busy", "1.0")).await;
    let slow = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .call_tool("test_tool_slow", json!({"durationMs": 4000}))
                .await
        })
    };
    // The slow call holds the one slot.
    within("the slow call to start", async {
        while host.status().servers[0].in_flight == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let waiting = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("test_tool_fast", json!({})).await })
    };
    within("a call to wait", async {
        while host.status().servers[0].waiting == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    // The queue holds one: another is refused at once.
    let error = refused(within("refused", client.call_tool("test_tool_fast", json!({}))).await);
    assert_eq!(error.code, LIMITED);
    assert!(error.message.contains("max_waiting"), "{}", error.message);
    // The waiting one gives up after max_wait.
    let error = refused(within("waited", waiting).await.unwrap());
    assert!(error.message.contains("max_wait"), "{}", error.message);
    assert_eq!(error.data.unwrap()["limit"], "max_in_flight");
    assert!(within("the slow call", slow).await.unwrap().is_ok());
    assert_eq!(host.status().servers[0].waiting, 0);
    // With the slot free again, a call goes through.
    assert!(
        within("fast", client.call_tool("test_tool_fast", json!({})))
            .await
            .is_ok()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_retry_is_not_counted_twice() {
    // One call a minute, each asked about first: a 2026-07-28 client's
    // call is an approval round and then its retry, one call.
    let host = host_with(
        r#"
        [[limits]]
        tool = "echo"
        rate = "1/minute"
        per = "server"
        name = "one echo"

        [[policy]]
        decision = "ask"
        tool = "echo"
        name = "echo asks"
        "#,
    )
    .await;
    let builder = Client::builder("approving", "1.0")
        .era(EraChoice::Pinned(ProtocolVersion::V2026_07_28))
        .on_elicitation(|_| async {
            let mut content = std::collections::BTreeMap::new();
            content.insert(
                "decision".to_owned(),
                mcp_schema::ElicitValue::String("allow-once".into()),
            );
            Ok(mcp_schema::ElicitResult::accept(content))
        });
    let client = gateway_client(&host, builder).await;
    let first = within(
        "the approved call",
        client.call_tool("echo", json!({"text": "a"})),
    )
    .await
    .unwrap_or_else(|e| panic!("the retry that brings the approval was refused: {e}"));
    assert_eq!(first.content[0].as_text(), Some("a"));
    // The budget is spent: the next call is refused before anyone is asked.
    let error = refused(
        within(
            "past the budget",
            client.call_tool("echo", json!({"text": "b"})),
        )
        .await,
    );
    assert_eq!(error.code, LIMITED, "{}", error.message);
    host.shutdown(Duration::from_secs(5)).await;
}
