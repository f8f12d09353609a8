//! A server that logs on its own and keeps running when its stdin closes
//! (`fixtures/chatty_server.py`, a real child process): its messages reach
//! a legacy client that never chose a level, as they would on a direct
//! connection; none counts as dropped, not even while the host stops; and
//! the host's shutdown signals it rather than waiting on its output and
//! abandoning it.

#![cfg(target_os = "linux")]

use std::sync::Arc;
use std::time::Duration;

use mcp_client::{Client, EraChoice};
use mcp_host::config::{HostConfig, ServerConfig};
use mcp_host::{Host, HostOptions, SupervisorOptions, UpstreamState};
use mcp_schema::ProtocolVersion;
use tokio::sync::mpsc;

mod support;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/chatty_server.py"
);

async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} took more than 30 s"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chatty_server_is_heard_and_stopped() {
    let mut supervisor = SupervisorOptions::default();
    supervisor.shutdown_grace = Duration::from_millis(300);
    let mut options = HostOptions::default();
    options.supervisor = supervisor;
    let server = ServerConfig::stdio("chatty", "python3", vec![SCRIPT.to_owned()]);
    let host = Host::start(
        HostConfig {
            servers: vec![server],
            problems: Vec::new(),
        },
        options,
    );
    host.wait_started(Duration::from_secs(20)).await;
    let upstream = Arc::clone(&host.upstreams()[0]);
    assert_eq!(upstream.status().state, UpstreamState::Ready);

    let (heard, mut messages) = mpsc::unbounded_channel();
    let builder = Client::builder("chatty-test", "1.0")
        .era(EraChoice::Pinned(ProtocolVersion::V2025_11_25))
        .on_notification(move |n| {
            if n.method == "notifications/message" {
                let _ = heard.send(());
            }
        });
    let client = support::gateway_client(&host, builder).await;
    // No call in flight, no level chosen: the messages come all the same.
    within("three log messages", async {
        for _ in 0..3 {
            messages.recv().await.unwrap();
        }
    })
    .await;

    within("the host to stop", host.shutdown(Duration::from_secs(60))).await;
    // Its supervisor finished (an abandoned one never says stopped), and
    // what the server said while stopping is no flood.
    let status = upstream.status();
    assert_eq!(status.state, UpstreamState::Stopped, "{status:?}");
    assert_eq!(status.dropped_notifications, 0, "{status:?}");
    client.close().await;
}
