//! Per-caller isolation through the gateway: a server marked
//! `per-caller` gets a connection of each caller's own (without OAuth,
//! each legacy session is a caller; 2026-07-28 requests without a token
//! are one, `anonymous`), whose `${caller}` names its memory file; at most
//! `max_callers` are open, the least recently used idle one giving way and
//! a new caller refused while all are in use; idle ones are closed. The
//! upstream is a stdio server shaped like the official memory server
//! (`tests/fixtures/memory_like.py`).

use std::path::Path;
use std::time::Duration;

use mcp_client::{Client, EraChoice};
use mcp_host::config::{HostConfig, Isolation, ServerConfig};
use mcp_host::{Host, HostOptions};
use mcp_schema::ProtocolVersion;
use serde_json::json;

mod support;
use support::{Scratch, gateway_client, within};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/memory_like.py"
);

async fn host(memories: &Path, options_of: impl FnOnce(&mut HostOptions)) -> Host {
    std::fs::create_dir_all(memories).unwrap();
    let file = format!("{}/memory-${{caller}}.json", memories.display());
    let server = ServerConfig::stdio("memory", "python3", vec![FIXTURE.into()])
        .env([("MEMORY_FILE_PATH".to_owned(), file)].into())
        .namespace("")
        .isolation(Isolation::PerCaller);
    let mut options = HostOptions::default();
    options_of(&mut options);
    let host = Host::start(
        HostConfig {
            servers: vec![server],
            problems: Vec::new(),
        },
        options,
    );
    host.wait_started(Duration::from_secs(20)).await;
    host
}

async fn client(host: &Host, era: ProtocolVersion) -> Client {
    gateway_client(
        host,
        Client::builder("isolation-tests", "1.0").era(EraChoice::Pinned(era)),
    )
    .await
}

async fn remember(client: &Client, name: &str) -> Result<(), String> {
    let entity = json!({"name": name, "entityType": "note", "observations": []});
    within(
        "create_entities",
        client.call_tool("create_entities", json!({"entities": [entity]})),
    )
    .await
    .map(|_| ())
    .map_err(|e| e.to_string())
}

async fn graph(client: &Client) -> String {
    let read = within("read_graph", client.call_tool("read_graph", json!({})))
        .await
        .unwrap();
    read.content[0].as_text().unwrap_or_default().to_owned()
}

fn callers(host: &Host) -> usize {
    host.status().servers.iter().map(|s| s.callers).sum()
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_legacy_session_is_a_caller_and_anonymous_modern_requests_are_one() {
    let scratch = Scratch::new("isolation");
    let memories = scratch.file("memories");
    let host = host(&memories, |_| {}).await;
    let first = client(&host, ProtocolVersion::V2025_11_25).await;
    let second = client(&host, ProtocolVersion::V2025_11_25).await;
    remember(&first, "first-note").await.unwrap();
    remember(&second, "second-note").await.unwrap();
    let (seen_first, seen_second) = (graph(&first).await, graph(&second).await);
    assert!(seen_first.contains("first-note") && !seen_first.contains("second-note"));
    assert!(seen_second.contains("second-note") && !seen_second.contains("first-note"));
    assert_eq!(callers(&host), 2);
    let names = files(&memories);
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.iter().all(|n| n.starts_with("memory-session-")),
        "{names:?}"
    );

    // 2026-07-28 requests without a token are one caller.
    let modern = client(&host, ProtocolVersion::V2026_07_28).await;
    let other = client(&host, ProtocolVersion::V2026_07_28).await;
    remember(&modern, "anonymous-note").await.unwrap();
    assert!(graph(&other).await.contains("anonymous-note"));
    assert!(!graph(&other).await.contains("first-note"));
    assert_eq!(callers(&host), 3);
    assert!(files(&memories).contains(&"memory-anonymous.json".to_owned()));
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_max_callers_are_open_and_idle_ones_close() {
    let scratch = Scratch::new("isolation-bounds");
    let memories = scratch.file("memories");
    let host = host(&memories, |options| {
        options.supervisor.max_callers = 1;
        options.supervisor.caller_idle = Duration::from_millis(300);
    })
    .await;
    let first = client(&host, ProtocolVersion::V2025_11_25).await;
    let second = client(&host, ProtocolVersion::V2025_11_25).await;
    remember(&first, "a").await.unwrap();
    assert_eq!(callers(&host), 1);

    // The first caller's connection is busy: the second is refused.
    let sleeping = {
        let first = first.clone();
        tokio::spawn(async move { first.call_tool("sleep", json!({"seconds": 3})).await })
    };
    // Its connection is up: the call reaches it within moments.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let refused = remember(&second, "b").await.unwrap_err();
    assert!(refused.contains("max_callers"), "{refused}");
    within("sleep", sleeping).await.unwrap().unwrap();

    // Idle, it gives way to the second caller.
    remember(&second, "b").await.unwrap();
    assert_eq!(callers(&host), 1);
    assert!(graph(&second).await.contains("\"b\""));

    // Unused for caller_idle, it is closed.
    tokio::time::timeout(Duration::from_secs(10), async {
        while callers(&host) != 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the idle connection closed");
    // And made again at the next call, on the same memory.
    assert!(graph(&second).await.contains("\"b\""));
    assert_eq!(callers(&host), 1);
    host.shutdown(Duration::from_secs(5)).await;
}

/// Signs every request in as the operator, and counts the connections it
/// was made for.
struct Operator;

impl mcp_http::client::Authorizer for Operator {
    fn credentials<'a>(
        &'a self,
        _method: &'a http::Method,
        _url: &'a str,
    ) -> mcp_http::client::AuthFuture<'a, Vec<(http::HeaderName, http::HeaderValue)>> {
        Box::pin(async {
            vec![(
                http::header::AUTHORIZATION,
                http::HeaderValue::from_static("Bearer operator"),
            )]
        })
    }

    fn challenged(
        &self,
        _challenge: mcp_http::client::Challenge,
    ) -> mcp_http::client::AuthFuture<'_, bool> {
        Box::pin(async { false })
    }
}

/// A caller's own connection to a remote server never carries the
/// credentials the host signed in with: the operator's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_connection_never_signs_in_as_the_operator() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let url = support::on_http(mcp_builtin::everything::server()).await;
    let made = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&made);
    let mut options = HostOptions::default();
    options.supervisor.authorizer = Some(mcp_host::upstream::AuthorizerFactory(
        std::sync::Arc::new(move |_url: String| {
            counted.fetch_add(1, Ordering::SeqCst);
            Box::pin(async {
                Ok(std::sync::Arc::new(Operator)
                    as std::sync::Arc<dyn mcp_http::client::Authorizer>)
            })
        }),
    ));
    let host = Host::start(
        HostConfig {
            servers: vec![
                ServerConfig::remote("remote", &url)
                    .namespace("")
                    .isolation(Isolation::PerCaller),
            ],
            problems: Vec::new(),
        },
        options,
    );
    host.wait_started(Duration::from_secs(20)).await;
    assert_eq!(
        made.load(Ordering::SeqCst),
        1,
        "the shared connection signs in"
    );
    for _ in 0..2 {
        let caller = client(&host, ProtocolVersion::V2025_11_25).await;
        let echoed = within("echo", caller.call_tool("echo", json!({"text": "own"})))
            .await
            .unwrap();
        assert_eq!(echoed.content[0].as_text(), Some("own"));
    }
    assert_eq!(callers(&host), 2);
    assert_eq!(
        made.load(Ordering::SeqCst),
        1,
        "no caller's connection signs in as the operator"
    );
    host.shutdown(Duration::from_secs(5)).await;
}
