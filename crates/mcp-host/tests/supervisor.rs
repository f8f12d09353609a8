//! The supervisor with real child processes: a server that never starts
//! is restarted with backoff, again and again, and leaves no process
//! behind, not even one its child started itself.

#![cfg(target_os = "linux")]

use std::time::Duration;

use mcp_host::config::{HostConfig, ServerConfig};
use mcp_host::{Host, HostOptions, SupervisorOptions, UpstreamState};

/// Processes whose command line contains `marker` (zombies, which have
/// none, are not counted).
fn running(marker: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|cmdline| String::from_utf8_lossy(cmdline).contains(marker))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_process_is_left_after_a_hundred_restarts() {
    // A child that never speaks MCP, and starts a grandchild of its own.
    let marker = format!("86400.{}", std::process::id());
    let script = format!("sleep {marker} & exec sleep {marker}");
    let server = ServerConfig::stdio("mute", "sh", vec!["-c".into(), script]);
    let mut supervisor = SupervisorOptions::default();
    supervisor.connect_timeout = Duration::from_millis(60);
    supervisor.backoff_initial = Duration::from_millis(1);
    supervisor.backoff_max = Duration::from_millis(4);
    supervisor.shutdown_grace = Duration::from_millis(20);
    let mut options = HostOptions::default();
    options.supervisor = supervisor;
    let host = Host::start(
        HostConfig {
            servers: vec![server],
            problems: Vec::new(),
        },
        options,
    );
    let mut most = 0;
    let reached = tokio::time::timeout(Duration::from_secs(120), async {
        loop {
            most = most.max(running(&marker));
            let status = host.status().servers.remove(0);
            if status.restarts >= 100 {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("a hundred restarts within two minutes");
    assert_eq!(reached.state, UpstreamState::Restarting);
    assert!(
        reached
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("did not start within")),
        "{reached:?}"
    );
    // One attempt's child and grandchild, and perhaps the last attempt's
    // still dying on a loaded machine; never an accumulation.
    assert!(most <= 6, "processes accumulate: {most} at once");
    host.shutdown(Duration::from_secs(5)).await;
    let left = tokio::time::timeout(Duration::from_secs(5), async {
        while running(&marker) > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(left.is_ok(), "{} processes left behind", running(&marker));
}

/// `Host::restart`: a ready server's child is stopped and a new one
/// started at once (no backoff), counted as a restart; a name not in the
/// config is an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restarted_on_request_comes_back_as_a_new_process() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/one_era_server.py"
    );
    let server = ServerConfig::stdio(
        "era",
        "python3",
        vec![script.into(), "0".into(), "settle".into()],
    );
    let host = Host::start(
        HostConfig {
            servers: vec![server],
            problems: Vec::new(),
        },
        HostOptions::default(),
    );
    let ready = |host: &Host| {
        let status = host.status().servers.remove(0);
        (status.state == UpstreamState::Ready).then_some(status)
    };
    let first = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Some(status) = ready(&host) {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("ready within 30 s");
    assert_eq!(first.restarts, 0);
    assert!(host.restart("nobody").unwrap_err().contains("nobody"));
    host.restart("era").unwrap();
    let second = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Some(status) = ready(&host).filter(|s| s.restarts == 1) {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("ready again within 30 s, once restarted");
    assert_ne!(second.pid, first.pid, "a new child");
    assert!(second.pid.is_some());
    host.shutdown(Duration::from_secs(5)).await;
}
