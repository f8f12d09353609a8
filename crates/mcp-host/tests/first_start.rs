//! What a new user's first config meets, with real servers: long server
//! names that share a start, a server that exits at start, one killed
//! later, a URL nothing listens on, and unknown keys in an entry.

#![cfg(target_os = "linux")]

use std::path::Path;
use std::time::Duration;

use mcp_host::config::{HostConfig, ServerConfig, Variables};
use mcp_host::{Host, HostOptions, SupervisorOptions, UpstreamStatus};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/bad_server.py");

/// A well-behaved server (`bad_server.py good`, one tool: `poke`).
fn good(name: &str) -> ServerConfig {
    let args = vec![SCRIPT.to_owned(), "good".to_owned()];
    ServerConfig::stdio(name, "python3", args)
        .era("2025-11-25")
        .unwrap()
}

/// A host in front of `config`, restarting failed servers slowly enough
/// for a test to read why they failed.
fn start(config: HostConfig) -> Host {
    let mut supervisor = SupervisorOptions::default();
    supervisor.connect_timeout = Duration::from_secs(10);
    supervisor.backoff_initial = Duration::from_millis(200);
    supervisor.backoff_max = Duration::from_millis(500);
    supervisor.shutdown_grace = Duration::from_millis(300);
    let mut options = HostOptions::default();
    options.supervisor = supervisor;
    Host::start(config, options)
}

fn servers(servers: Vec<ServerConfig>) -> HostConfig {
    HostConfig {
        servers,
        problems: Vec::new(),
    }
}

/// Waits (30 s at most) until the status of server `name` satisfies `done`.
async fn until(host: &Host, name: &str, done: impl Fn(&UpstreamStatus) -> bool) -> UpstreamStatus {
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let status = host.status().servers.into_iter().find(|s| s.name == name);
            if let Some(status) = status.filter(|s| done(s)) {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    waited.unwrap_or_else(|_| panic!("{name}: {:?}", host.status().servers))
}

fn last_error(status: &UpstreamStatus) -> &str {
    status.last_error.as_deref().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_names_that_share_a_start_both_keep_their_tools() {
    let shared = "github-enterprise-server-for-the-platform-team";
    let (one, two) = (format!("{shared}-staging"), format!("{shared}-production"));
    let host = start(servers(vec![good(&one), good(&two)]));
    host.wait_started(Duration::from_secs(20)).await;
    let status = host.status();
    assert!(status.collisions.is_empty(), "{:?}", status.collisions);
    let tools: Vec<String> = host
        .catalog()
        .tools()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tools.len(), 2, "{tools:?}");
    assert_ne!(tools[0], tools[1]);
    for tool in &tools {
        let valid = (1..=64).contains(&tool.len())
            && tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        assert!(valid, "{tool}");
        assert!(tool.starts_with("github-enterprise-"), "{tool}");
        assert!(tool.ends_with("__poke"), "{tool}");
    }
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_at_start_tells_its_status_and_stderr() {
    let script = "echo starting >&2; echo boom >&2; exit 3";
    let boom = ServerConfig::stdio("boom", "sh", vec!["-c".into(), script.into()]);
    let host = start(servers(vec![boom]));
    let status = until(&host, "boom", |s| s.last_error.is_some()).await;
    let error = last_error(&status);
    assert!(error.contains("exit status: 3"), "{error}");
    assert!(error.contains("starting | boom"), "{error}");
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_still_tells_the_signal() {
    let host = start(servers(vec![good("victim")]));
    let status = until(&host, "victim", |s| s.pid.is_some()).await;
    let pid = status.pid.unwrap();
    // SAFETY: kill(2) on a process this test's host started.
    unsafe {
        libc::kill(pid as i32, libc::SIGKILL);
    }
    let status = until(&host, "victim", |s| s.last_error.is_some()).await;
    let error = last_error(&status);
    assert!(error.contains("signal: 9 (SIGKILL)"), "{error}");
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_nothing_listens_on_is_told_as_refused() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let text = format!(r#"{{"mcpServers": {{"sse": {{"type": "sse", "url": "{url}"}}}}}}"#);
    let mut config =
        mcp_host::config::parse(&text, Path::new("mcp.json"), &Variables::from_process()).unwrap();
    config.servers.insert(0, ServerConfig::remote("web", &url));
    let host = start(config);
    let status = until(&host, "web", |s| s.last_error.is_some()).await;
    assert_eq!(
        last_error(&status),
        format!("cannot connect to {url}: the connection was refused")
    );
    let status = until(&host, "sse", |s| s.last_error.is_some()).await;
    assert_eq!(
        last_error(&status),
        format!("cannot connect to {url}: opening the HTTP+SSE stream: the connection was refused")
    );
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_keys_show_in_the_status() {
    let text = format!(
        r#"{{"mcpServers": {{"typo": {{"command": "python3", "args": ["{SCRIPT}", "good"],
              "era": "2025-11-25", "envs": {{"A": "1"}}}}}}}}"#
    );
    let config =
        mcp_host::config::parse(&text, Path::new("mcp.json"), &Variables::from_process()).unwrap();
    let host = start(config);
    let status = until(&host, "typo", |_| true).await;
    let shown = serde_json::to_value(&status).unwrap();
    assert_eq!(
        shown["hints"],
        serde_json::json!(["unknown key \"envs\" is ignored; did you mean \"env\"?"]),
        "{shown}"
    );
    host.shutdown(Duration::from_secs(5)).await;
}
