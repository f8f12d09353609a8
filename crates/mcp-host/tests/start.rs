//! Servers that are slow to start, each a real child process
//! (`fixtures/one_era_server.py`): the host's era probe waits for them,
//! uses a late answer, and reaches a legacy server that never answers the
//! probe; none is restarted for being slow.

#![cfg(target_os = "linux")]

use std::time::Duration;

use mcp_host::config::{HostConfig, ServerConfig};
use mcp_host::{Host, HostOptions, SupervisorOptions, UpstreamState, UpstreamStatus};

mod support;

use support::Scratch;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/one_era_server.py"
);

/// A one-era server that reads nothing for `delay` seconds, in `mode`,
/// recording what it receives to `record`.
fn one_era(name: &str, delay: f64, mode: &str, record: &std::path::Path) -> ServerConfig {
    let args = vec![
        SCRIPT.to_owned(),
        delay.to_string(),
        mode.to_owned(),
        record.display().to_string(),
    ];
    ServerConfig::stdio(name, "python3", args)
}

/// Starts a host in front of `servers` whose probe waits `patience` alone,
/// and waits until each is ready (or 30 s have passed); their statuses.
async fn started(servers: Vec<ServerConfig>, patience: Duration) -> (Host, Vec<UpstreamStatus>) {
    let mut supervisor = SupervisorOptions::default();
    supervisor.connect_timeout = Duration::from_secs(20);
    supervisor.probe_patience = patience;
    supervisor.backoff_initial = Duration::from_millis(50);
    let mut options = HostOptions::default();
    options.supervisor = supervisor;
    let host = Host::start(
        HostConfig {
            servers,
            problems: Vec::new(),
        },
        options,
    );
    let _ = tokio::time::timeout(Duration::from_secs(30), async {
        while host
            .status()
            .servers
            .iter()
            .any(|s| s.state != UpstreamState::Ready)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let statuses = host.status().servers;
    (host, statuses)
}

fn received(record: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_to_the_probe_is_used() {
    // The server reads its first message two seconds after the host gave
    // up waiting for the probe alone and sent `initialize` too: it
    // settles on 2026-07-28 and refuses the handshake, and the host uses
    // the probe's answer rather than starting it again.
    let scratch = Scratch::new("late-probe");
    let record = scratch.file("record");
    let server = one_era("slow", 2.0, "settle", &record);
    let (host, statuses) = started(vec![server], Duration::from_millis(300)).await;
    let status = &statuses[0];
    assert_eq!(status.state, UpstreamState::Ready, "{status:?}");
    assert_eq!(status.revision.as_deref(), Some("2026-07-28"));
    assert_eq!(status.restarts, 0, "{status:?}");
    assert_eq!(status.tools, 1);
    let seen = received(&record);
    assert_eq!(&seen[..2], ["server/discover", "initialize"], "{seen:?}");
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_legacy_server_is_initialized_once() {
    // A legacy server that never answers the probe, slow to read too:
    // `initialize`, sent once the patience ran out, is answered when it
    // reads, and sent once.
    let scratch = Scratch::new("slow-legacy");
    let record = scratch.file("record");
    let server = one_era("slow", 1.5, "silent", &record);
    let (host, statuses) = started(vec![server], Duration::from_millis(300)).await;
    let status = &statuses[0];
    assert_eq!(status.state, UpstreamState::Ready, "{status:?}");
    assert_eq!(status.revision.as_deref(), Some("2025-11-25"));
    assert_eq!(status.restarts, 0, "{status:?}");
    let seen = received(&record);
    let initializes = seen.iter().filter(|m| *m == "initialize").count();
    assert_eq!(initializes, 1, "{seen:?}");
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_slower_than_the_old_probe_limit_comes_up_in_its_era() {
    // Twelve seconds: longer than the ten the probe used to be given.
    // Both eras' servers start, with the default patience, at once.
    let scratch = Scratch::new("slower");
    let modern = one_era("modern", 12.0, "settle", &scratch.file("modern"));
    let legacy = one_era("legacy", 12.0, "silent", &scratch.file("legacy"));
    let (host, statuses) = started(vec![modern, legacy], Duration::from_secs(10)).await;
    let revisions: Vec<_> = statuses
        .iter()
        .map(|s| (s.state, s.revision.as_deref(), s.restarts))
        .collect();
    assert_eq!(
        revisions,
        [
            (UpstreamState::Ready, Some("2026-07-28"), 0),
            (UpstreamState::Ready, Some("2025-11-25"), 0)
        ],
        "{statuses:?}"
    );
    host.shutdown(Duration::from_secs(5)).await;
}
