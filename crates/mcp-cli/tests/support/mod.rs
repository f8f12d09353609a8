//! What the command-line tests share: running the real `mcp` binary with
//! a bound on its time, reading its output.

#![allow(dead_code)]

/// A real model server: llama-cpp-python's, with SmolLM2-135M.
#[path = "../../../mcp-host/tests/support/local_model.rs"]
pub mod local_model;
/// Tests that need what the machine may lack: the same rule as
/// mcp-redis's tests.
#[path = "../../../mcp-redis/tests/support/needs.rs"]
pub mod needs;
#[cfg(target_os = "linux")]
pub mod pty;

use std::process::Output;
use std::time::Duration;

/// The `mcp` binary under test.
pub const MCP: &str = env!("CARGO_BIN_EXE_mcp");

/// How long one run of `mcp` may take.
pub const RUN_WAIT: Duration = Duration::from_secs(30);

/// Runs `mcp ARGS` with stdin closed (not a terminal), bounded in time.
pub async fn mcp(args: &[&str]) -> Output {
    mcp_with(args, &[]).await
}

/// Runs `mcp ARGS` with `env` added to its environment, stdin closed,
/// bounded in time.
pub async fn mcp_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    let child = tokio::process::Command::new(MCP)
        .args(args)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(RUN_WAIT, child)
        .await
        .expect("mcp finished in time")
        .expect("mcp ran")
}

/// `mcp serve everything`, as a `--server` command line.
pub fn everything() -> String {
    format!("{MCP} serve everything")
}

/// What the run wrote on stdout.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What the run wrote on stderr.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Serves `tools` over Streamable HTTP on a free loopback port, in this
/// process, until the test ends; returns the endpoint's URL.
pub async fn serve_tools(tools: Vec<mcp_server::ToolDef>) -> String {
    let mut builder = mcp_server::Server::builder("test-tools", "1.0.0");
    for tool in tools {
        builder = builder.tool(tool);
    }
    let server = builder.build();
    let config = server.session_config();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    let endpoint = mcp_http::McpEndpoint::new(
        std::sync::Arc::new(server),
        config,
        mcp_http::HttpConfig::loopback(port),
    );
    tokio::spawn(mcp_http::serve(
        listener,
        endpoint,
        std::future::pending::<()>(),
    ));
    format!("http://127.0.0.1:{port}/mcp")
}

/// `mcp serve everything --http SPEC`, killed when dropped; the child and
/// the address it listens on (`127.0.0.1:PORT`), from the endpoint URL it
/// prints first.
pub async fn serve_everything_http(spec: &str) -> (tokio::process::Child, String) {
    serve_everything_http_with(spec, &[]).await
}

/// [`serve_everything_http`] with more options (`--redis URL`, say).
pub async fn serve_everything_http_with(
    spec: &str,
    options: &[&str],
) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt as _;
    let mut child = tokio::process::Command::new(MCP)
        .args(["serve", "everything", "--http", spec])
        .args(options)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the HTTP server");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the server printed its URL in time")
        .expect("stdout")
        .expect("a line");
    let address = line
        .strip_prefix("MCP endpoint: http://")
        .and_then(|u| u.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    (child, address)
}

/// Starts `command` (an `mcp` that serves HTTP), stdin closed, stdout
/// read, killed when dropped; the child and the endpoint URL it prints
/// (`MCP endpoint: URL`), within 30 s.
pub async fn spawn_endpoint(
    command: &mut tokio::process::Command,
) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt as _;
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("mcp runs");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.expect("stdout") {
            if let Some(url) = line.strip_prefix("MCP endpoint: ") {
                return url.to_owned();
            }
        }
        panic!("mcp exited without printing its endpoint");
    })
    .await
    .expect("mcp printed its endpoint within 30 s");
    (child, url)
}

/// A loopback port free now, below the kernel's ephemeral range: the
/// ports other processes get for binding port 0, or for their outgoing
/// connections, come from that range, so none of them can take this one
/// before the server started on it binds it.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher as _, Hasher as _};
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768)
        .max(12000);
    for _ in 0..500 {
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let port = 10000 + (random % u64::from(low - 10000)) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port below the ephemeral range")
}

/// A `redis-server` of this test's own, killed when dropped.
pub struct Redis {
    child: std::process::Child,
    /// Its URL, `redis://127.0.0.1:PORT/`.
    pub url: String,
}

impl Redis {
    /// Starts one on a free port and waits until it listens; `None` where
    /// the machine has no `redis-server` and the test is skipped (see
    /// [`needs`]).
    #[track_caller]
    pub fn start_or_skip() -> Option<Redis> {
        if !needs::REDIS.met() {
            return None;
        }
        let port = free_port();
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start redis-server: {e}"));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Redis {
            child,
            url: format!("redis://127.0.0.1:{port}/"),
        })
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// POSTs the JSON-RPC `body` to the MCP endpoint `url` as a client of
/// protocol `version` (in `session`, where given), within 30 s.
pub async fn post_rpc(
    url: &str,
    session: Option<&str>,
    version: &str,
    body: &serde_json::Value,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version)
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    tokio::time::timeout(Duration::from_secs(30), request.send())
        .await
        .expect("answered in time")
        .expect("POST sent")
}

/// Initializes a legacy session of protocol `version` on the endpoint
/// `url`: its id.
pub async fn open_session(url: &str, version: &str) -> String {
    let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "cli-test", "version": "1"}}});
    let response = post_rpc(url, None, version, &initialize).await;
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .expect("a visible ASCII id")
        .to_owned();
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = post_rpc(url, Some(&session), version, &initialized).await;
    assert_eq!(response.status(), 202);
    session
}

/// Calls tool `name` with `arguments` as request `id` on the legacy
/// session `session` of the endpoint `url`: the JSON-RPC answer, read
/// from the JSON body or from the SSE stream the server chose.
pub async fn call_tool(
    url: &str,
    session: &str,
    version: &str,
    id: u64,
    name: &str,
    arguments: serde_json::Value,
) -> serde_json::Value {
    let call = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}});
    let response = post_rpc(url, Some(session), version, &call).await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.expect("a body");
    let marker = format!("\"id\":{id}");
    let data = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|d| d.contains(&marker))
        .unwrap_or(&text);
    serde_json::from_str(data).expect("a JSON-RPC answer")
}
