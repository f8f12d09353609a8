//! `mcp host --admin`: a real host, with a real `mcp serve everything`
//! child, serves `/metrics` on an address of its own, beside an HTTP
//! endpoint and beside `--stdio`. The scrape is parsed as a Prometheus
//! scraper parses it, and its counters match the calls made, by era and
//! outcome; the listener wants its token on everything but `/healthz`,
//! and checks Host as the MCP endpoint does.

use std::collections::HashMap;
use std::time::Duration;

use mcp_client::{Client, EraChoice};
use mcp_schema::ProtocolVersion;
use serde_json::json;

mod support;

use support::{MCP, free_port};

const TOKEN: &str = "metrics-test-token";

async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} took more than 60 s"))
}

/// A config naming one server, `e`: this program's everything server.
fn config() -> tempfile::TempDir {
    let scratch = tempfile::tempdir().unwrap();
    std::fs::write(
        scratch.path().join("servers.json"),
        json!({"mcpServers": {"e": {"command": MCP, "args": ["serve", "everything"]}}}).to_string(),
    )
    .unwrap();
    scratch
}

/// One sample of a scrape: its metric name and labels, and its value.
type Samples = Vec<(String, HashMap<String, String>, f64)>;

/// Scrapes `base/metrics` with the token and parses it as Prometheus does.
async fn scrape(base: &str) -> Samples {
    let response = reqwest::Client::new()
        .get(format!("{base}/metrics"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("metrics answer");
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    let text = response.text().await.unwrap();
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("a Prometheus text scrape");
    scrape
        .samples
        .into_iter()
        .map(|sample| {
            let value = match sample.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                prometheus_parse::Value::Histogram(buckets) => {
                    buckets.last().map_or(0.0, |b| b.count)
                }
                prometheus_parse::Value::Summary(_) => f64::NAN,
            };
            let labels = sample
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            (sample.metric, labels, value)
        })
        .collect()
}

/// The value of `metric` with (at least) `labels`, summed over the
/// samples that have them.
fn value(samples: &Samples, metric: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|(name, have, _)| {
            name == metric
                && labels
                    .iter()
                    .all(|(k, v)| have.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|(_, _, v)| v)
        .sum()
}

/// Waits until the admin listener at `base` answers `/healthz` with 200.
async fn healthy(base: &str) {
    within("the admin listener", async {
        loop {
            if let Ok(response) = reqwest::get(format!("{base}/healthz")).await
                && response.status() == 200
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
}

async fn echo(client: &Client, n: usize) {
    let text = format!("call {n}");
    let result = within("echo", client.call_tool("e__echo", json!({ "text": text })))
        .await
        .expect("the call is answered");
    assert_eq!(
        serde_json::to_value(&result.content).unwrap()[0]["text"],
        text
    );
}

async fn connect_http(url: &str, version: ProtocolVersion) -> Client {
    let transport = mcp_http::client::connect(mcp_http::HttpClientConfig::new(url.to_owned()))
        .await
        .unwrap()
        .into_transport();
    within(
        "connect",
        Client::builder("metrics-test", "1.0")
            .era(EraChoice::Pinned(version))
            .connect(transport),
    )
    .await
    .expect("connect")
}

#[tokio::test]
async fn metrics_over_http_count_the_calls_of_both_eras_behind_a_token() {
    let scratch = config();
    let admin_port = free_port();
    let base = format!("http://127.0.0.1:{admin_port}");
    let mut command = tokio::process::Command::new(MCP);
    command
        .args(["host", "--config"])
        .arg(scratch.path().join("servers.json"))
        .args(["--http", "127.0.0.1:0", "--admin"])
        .arg(format!("127.0.0.1:{admin_port}"))
        .env("MCP_ADMIN_TOKEN", TOKEN)
        .stderr(std::process::Stdio::null());
    let (_host, url) = support::spawn_endpoint(&mut command).await;
    healthy(&base).await;

    let legacy = connect_http(&url, ProtocolVersion::V2025_11_25).await;
    let modern = connect_http(&url, ProtocolVersion::V2026_07_28).await;
    for n in 0..3 {
        echo(&legacy, n).await;
    }
    for n in 0..2 {
        echo(&modern, n).await;
    }
    let unknown = legacy.call_tool("e__no_such_tool", json!({})).await;
    assert!(unknown.is_err(), "{unknown:?}");

    // Without the token, or with another Host: refused.
    let client = reqwest::Client::new();
    let bare = client.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(bare.status(), 401);
    assert_eq!(bare.headers()["www-authenticate"], "Bearer");
    let wrong = client
        .get(format!("{base}/status"))
        .bearer_auth("not-the-token")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    // The scheme's case does not matter (RFC 9110).
    let lower = client
        .get(format!("{base}/healthz"))
        .header("authorization", format!("bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(lower.status(), 200);
    let lower = client
        .get(format!("{base}/status"))
        .header("authorization", format!("bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(lower.status(), 200);
    let rebound = client
        .get(format!("{base}/metrics"))
        .bearer_auth(TOKEN)
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 403);

    let samples = scrape(&base).await;
    let calls = |era: &str| {
        value(
            &samples,
            "mcp_host_requests_total",
            &[
                ("server", "e"),
                ("method", "tools/call"),
                ("era", era),
                ("outcome", "ok"),
            ],
        )
    };
    assert_eq!(calls("legacy"), 3.0);
    assert_eq!(calls("modern"), 2.0);
    let at_host = |outcome: &str| {
        value(
            &samples,
            "mcp_host_requests_total",
            &[
                ("server", ""),
                ("method", "tools/call"),
                ("outcome", outcome),
            ],
        )
    };
    assert_eq!(at_host("error"), 1.0, "the unknown tool");
    assert_eq!(
        value(
            &samples,
            "mcp_host_tool_calls_total",
            &[("server", "e"), ("tool", "e__echo"), ("outcome", "ok")]
        ),
        5.0
    );
    assert_eq!(
        value(
            &samples,
            "mcp_host_upstream_state",
            &[("server", "e"), ("state", "ready")]
        ),
        1.0
    );
    assert_eq!(
        value(&samples, "mcp_host_sessions", &[]),
        1.0,
        "the legacy client"
    );
    assert!(value(&samples, "mcp_host_upstream_up_seconds", &[("server", "e")]) > 0.0);
    assert!(value(&samples, "mcp_host_catalog_items", &[("kind", "tools")]) >= 1.0);
    // The histogram's +Inf bucket counts every call.
    let histogram = samples
        .iter()
        .find(|(name, labels, _)| {
            name == "mcp_host_request_duration_seconds"
                && labels.get("server").map(String::as_str) == Some("e")
                && labels.get("method").map(String::as_str) == Some("tools/call")
        })
        .expect("the calls' latency");
    assert_eq!(histogram.2, 5.0);

    // The same counters in the status.
    let status: serde_json::Value = client
        .get(format!("{base}/status"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let requests = &status["servers"][0]["requests"];
    assert!(
        requests.as_array().unwrap().contains(&json!({
            "method": "tools/call", "era": "modern", "outcome": "ok", "count": 2
        })),
        "{status}"
    );
    legacy.close().await;
    modern.close().await;
}

#[tokio::test]
async fn metrics_are_served_beside_a_stdio_host() {
    let scratch = config();
    let admin_port = free_port();
    let base = format!("http://127.0.0.1:{admin_port}");
    let mut command = tokio::process::Command::new(MCP);
    command
        .args(["host", "--stdio", "--config"])
        .arg(scratch.path().join("servers.json"))
        .arg("--admin")
        .arg(format!("127.0.0.1:{admin_port}"))
        .env("MCP_ADMIN_TOKEN", TOKEN);
    let (child, transport) = mcp_core::child::ChildProcess::spawn(command).unwrap();
    let client = within(
        "connect over stdio",
        Client::builder("metrics-stdio", "1.0")
            .era(EraChoice::Pinned(ProtocolVersion::V2026_07_28))
            .connect(transport),
    )
    .await
    .expect("connect");
    healthy(&base).await;
    for n in 0..4 {
        echo(&client, n).await;
    }
    let samples = scrape(&base).await;
    assert_eq!(
        value(
            &samples,
            "mcp_host_requests_total",
            &[
                ("server", "e"),
                ("method", "tools/call"),
                ("era", "modern"),
                ("outcome", "ok"),
            ],
        ),
        4.0
    );
    assert_eq!(
        value(&samples, "mcp_host_sessions", &[]),
        0.0,
        "a 2026-07-28 client has none"
    );
    // `mcp host status` reads the admin listener with the token.
    let port = admin_port.to_string();
    let status = support::mcp_with(
        &["host", "status", "--json", "--url", &port],
        &[("MCP_ADMIN_TOKEN", TOKEN)],
    )
    .await;
    assert!(status.status.success(), "{}", support::stderr(&status));
    let status: serde_json::Value = serde_json::from_str(&support::stdout(&status)).unwrap();
    assert_eq!(status["servers"][0]["requests"][0]["count"], 4, "{status}");
    let refused = support::mcp(&["host", "status", "--url", &port]).await;
    assert!(!refused.status.success());
    assert!(
        support::stderr(&refused).contains("401"),
        "{}",
        support::stderr(&refused)
    );
    // `mcp host restart` too: the server comes back, counted as a restart.
    let token = [("MCP_ADMIN_TOKEN", TOKEN)];
    let unknown = support::mcp_with(&["host", "restart", "nobody", "--url", &port], &token).await;
    assert!(!unknown.status.success());
    assert!(
        support::stderr(&unknown).contains("no server \"nobody\""),
        "{}",
        support::stderr(&unknown)
    );
    let restarted = support::mcp_with(&["host", "restart", "e", "--url", &port], &token).await;
    assert!(
        restarted.status.success(),
        "{}",
        support::stderr(&restarted)
    );
    within("the server to come back", async {
        loop {
            let status =
                support::mcp_with(&["host", "status", "--json", "--url", &port], &token).await;
            let status: serde_json::Value =
                serde_json::from_str(&support::stdout(&status)).unwrap_or_default();
            let server = &status["servers"][0];
            if server["restarts"] == 1 && server["state"] == "ready" {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    echo(&client, 4).await;
    client.close().await;
    let _ = within("the host to exit", child.shutdown()).await;
}
