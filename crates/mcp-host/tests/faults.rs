//! The host with misbehaving upstreams, each a real child process
//! (`fixtures/bad_server.py`): one that hangs, one that answers garbage,
//! one that dies mid-response, one that floods notifications, one that
//! sends a 100 MB message; and a downstream client that vanishes mid-call.
//! In each case a healthy upstream keeps serving two other clients, and
//! the failure shows in the host's status, events and audit log. (The
//! audit log's disk filling up is `mcp-cli`'s `host_audit` test: it needs
//! a real file system that fills, in a process of its own.)

#![cfg(target_os = "linux")]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_client::{Client, EraChoice};
use mcp_host::config::{HostConfig, ServerConfig};
use mcp_host::{
    AuditLog, AuditSettings, Gateway, Host, HostEvent, HostOptions, SupervisorOptions,
    UpstreamState, UpstreamStatus,
};
use mcp_schema::ProtocolVersion;
use serde_json::{Value, json};
use tokio::sync::broadcast;

mod support;

use support::{Scratch, gateway_client};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/bad_server.py");
const LEGACY: EraChoice = EraChoice::Pinned(ProtocolVersion::V2025_11_25);
const MODERN: EraChoice = EraChoice::Pinned(ProtocolVersion::V2026_07_28);

/// The outcome and error message of each `tools/call` to `server` that
/// the host's audit log holds, oldest first.
async fn audited(host: &Host, server: &str) -> Vec<(String, Option<String>)> {
    let audit = host.audit().expect("an audit log");
    audit.flush(Duration::from_secs(10)).await;
    let db = rusqlite::Connection::open(audit.path()).unwrap();
    let mut select = db
        .prepare(
            "SELECT outcome, error_message FROM audit \
             WHERE method = 'tools/call' AND server = ?1 ORDER BY id",
        )
        .unwrap();
    select
        .query_map([server], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// What a bad server recorded: one line per message it received.
fn recorded(record: &Path) -> Vec<String> {
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn count(record: &Path, what: &str) -> usize {
    recorded(record).iter().filter(|l| *l == what).count()
}

/// A bad server in `mode`, named `name`, recording to `record`; `marker`
/// finds its processes.
fn bad(name: &str, mode: &str, record: &Path, marker: &str) -> ServerConfig {
    let args = vec![
        SCRIPT.to_owned(),
        mode.to_owned(),
        record.display().to_string(),
        marker.to_owned(),
    ];
    ServerConfig::stdio(name, "python3", args)
        .era("2025-11-25")
        .unwrap()
}

fn supervisor() -> SupervisorOptions {
    let mut supervisor = SupervisorOptions::default();
    supervisor.connect_timeout = Duration::from_secs(10);
    supervisor.backoff_initial = Duration::from_millis(50);
    supervisor.backoff_max = Duration::from_millis(200);
    supervisor.shutdown_grace = Duration::from_millis(300);
    supervisor
}

/// A host in front of `servers`, recording its requests in `scratch`'s
/// `audit.db`.
async fn start(
    scratch: &Scratch,
    servers: Vec<ServerConfig>,
    supervisor: SupervisorOptions,
) -> Host {
    let mut options = HostOptions::default();
    options.supervisor = supervisor;
    let audit = AuditSettings::new(scratch.file("audit.db"));
    options.audit = Some(AuditLog::open(audit).unwrap());
    let host = Host::start(
        HostConfig {
            servers,
            problems: Vec::new(),
        },
        options,
    );
    host.wait_started(Duration::from_secs(20)).await;
    for server in host.status().servers {
        assert_eq!(server.state, UpstreamState::Ready, "{server:?}");
    }
    host
}

/// A client of `era` connected to the host's gateway in memory.
async fn client(host: &Host, era: EraChoice) -> Client {
    gateway_client(host, Client::builder("faults", "1.0").era(era)).await
}

async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} took more than 30 s"))
}

/// Waits until the status of server `name` satisfies `done`.
async fn until(host: &Host, name: &str, done: impl Fn(&UpstreamStatus) -> bool) -> UpstreamStatus {
    within(&format!("the status of {name}"), async {
        loop {
            let status = server(host, name);
            if done(&status) {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

fn server(host: &Host, name: &str) -> UpstreamStatus {
    host.status()
        .servers
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no server {name}"))
}

fn text(result: &mcp_schema::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Each client's call to the healthy upstream is answered.
async fn healthy(clients: &[&Client], tag: &str) {
    for (n, client) in clients.iter().enumerate() {
        let said = format!("{tag} {n}");
        let result = within(
            "a call to the healthy server",
            client.call_tool("good__poke", json!({ "text": said })),
        )
        .await
        .unwrap_or_else(|e| panic!("the healthy server failed ({tag}): {e}"));
        assert_eq!(text(&result), format!("good: {said}"));
    }
}

/// The faults of server `name` told in events so far.
fn faults(events: &mut broadcast::Receiver<HostEvent>, name: &str) -> Vec<String> {
    let mut found = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let HostEvent::UpstreamFault { server, error } = event
            && server == name
        {
            found.push(error);
        }
    }
    found
}

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

/// A field of this process's /proc/self/status, in KiB.
fn memory_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

fn marker(test: &str) -> String {
    format!("faults-{test}-{}", std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hangs_forever() {
    let scratch = Scratch::new("hangs");
    let record = scratch.file("hang");
    let marker = marker("hangs");
    let mut supervisor = supervisor();
    // Fewer slots than calls: a slot that is not given back would hold
    // the later calls forever.
    supervisor.max_in_flight = 3;
    let host = start(
        &scratch,
        vec![
            bad("good", "good", &scratch.file("good"), &marker),
            bad("hang", "hang", &record, &marker).timeout(Duration::from_millis(300)),
        ],
        supervisor,
    )
    .await;
    let mut events = host.events();
    let (a, b) = (client(&host, LEGACY).await, client(&host, MODERN).await);
    for round in 0..3 {
        let hanging: Vec<_> = (0..4)
            .map(|_| {
                let a = a.clone();
                tokio::spawn(async move { a.call_tool("hang__poke", json!({})).await })
            })
            .collect();
        // Meanwhile the healthy server answers both clients.
        healthy(&[&a, &b], &format!("during round {round}")).await;
        for call in hanging {
            let error = within("a hanging call", call).await.unwrap().unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains("server \"hang\" did not answer tools/call within 300ms"),
                "{error}"
            );
        }
    }
    healthy(&[&a, &b], "after").await;
    let status = server(&host, "hang");
    assert_eq!(status.in_flight, 0, "every slot given back: {status:?}");
    assert_eq!(status.failed_calls, 12, "{status:?}");
    assert!(
        status
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("did not answer")),
        "{status:?}"
    );
    // A server that hangs one call is not restarted: it still answers
    // pings, and each call it did not answer was cancelled there.
    assert_eq!(status.state, UpstreamState::Ready);
    assert_eq!(status.restarts, 0);
    within("the cancellations to arrive", async {
        while count(&record, "notifications/cancelled") < 12 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let told = faults(&mut events, "hang");
    assert_eq!(told.len(), 12, "{told:?}");
    assert!(faults(&mut events, "good").is_empty());
    let calls = audited(&host, "hang").await;
    assert_eq!(calls.len(), 12, "{calls:?}");
    for (outcome, message) in &calls {
        assert_eq!(outcome, "error");
        assert!(
            message
                .as_deref()
                .is_some_and(|m| m.contains("did not answer")),
            "{message:?}"
        );
    }
    assert!(
        audited(&host, "good").await.iter().all(|(o, _)| o == "ok"),
        "the healthy server's calls all went well"
    );
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_garbage() {
    let scratch = Scratch::new("garbage");
    let record = scratch.file("garbage");
    let marker = marker("garbage");
    let host = start(
        &scratch,
        vec![
            bad("good", "good", &scratch.file("good"), &marker),
            bad("garbage", "garbage", &record, &marker).timeout(Duration::from_secs(20)),
        ],
        supervisor(),
    )
    .await;
    let mut events = host.events();
    let (a, b) = (client(&host, LEGACY).await, client(&host, MODERN).await);
    // Lines that are not JSON, JSON that is not JSON-RPC and a response
    // to an id nobody sent are skipped; the answer, not a result, is
    // refused with a clear error at once.
    let error = within("the garbled call", a.call_tool("garbage__poke", json!({})))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains(
            "server \"garbage\" answered tools/call with a result that is not an object: \"not an object\""
        ),
        "{error}"
    );
    healthy(&[&a, &b], "after the garbage").await;
    // Then it said its tools changed, and listed them in the wrong shape:
    // the host keeps what it listed before and marks the server degraded.
    let status = until(&host, "garbage", |s| s.state == UpstreamState::Degraded).await;
    assert!(
        status
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("tools/list")),
        "{status:?}"
    );
    assert_eq!(status.failed_calls, 1);
    assert_eq!(status.restarts, 0, "kept: it still answers");
    assert_eq!(status.tools, 1, "what it listed before");
    assert!(host.catalog().tool("garbage__poke").is_some());
    // The host answered the two lines that were not messages as JSON-RPC
    // says (a parse error, an invalid request), and the call goes on
    // reaching the server.
    assert!(count(&record, "response") >= 2, "{:?}", recorded(&record));
    let again = within("a second call", b.call_tool("garbage__poke", json!({})))
        .await
        .unwrap_err();
    assert!(again.to_string().contains("not an object"), "{again}");
    healthy(&[&a, &b], "at the end").await;
    let told = faults(&mut events, "garbage");
    assert!(told.iter().any(|e| e.contains("not an object")), "{told:?}");
    let calls = audited(&host, "garbage").await;
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls.iter().all(|(outcome, message)| outcome == "error"
            && message
                .as_deref()
                .is_some_and(|m| m.contains("not an object"))),
        "{calls:?}"
    );
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closes_mid_response() {
    let scratch = Scratch::new("closes");
    let marker = marker("closes");
    let host = start(
        &scratch,
        vec![
            bad("good", "good", &scratch.file("good"), &marker),
            // A long timeout: the call must fail because the server went,
            // not because it took too long.
            bad("close", "close", &scratch.file("close"), &marker)
                .timeout(Duration::from_secs(120)),
        ],
        supervisor(),
    )
    .await;
    let mut events = host.events();
    let (a, b) = (client(&host, LEGACY).await, client(&host, MODERN).await);
    let mut most = 0;
    for round in 1..=3u64 {
        let before = server(&host, "close");
        let pid = before.pid.expect("a running child");
        let caller = if round % 2 == 0 { &a } else { &b };
        let error = within(
            "the cut-off call to fail",
            caller.call_tool("close__poke", json!({})),
        )
        .await
        .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("server \"close\" closed the connection during tools/call"),
            "{error}"
        );
        healthy(&[&a, &b], &format!("round {round}")).await;
        let after = until(&host, "close", |s| {
            s.state == UpstreamState::Ready && s.restarts == round
        })
        .await;
        most = most.max(running(&marker));
        assert_ne!(after.pid, Some(pid), "a new child");
        // The latest error is the child's exit or, when the caller's
        // failure is recorded after the restart, the cut-off call; the
        // exit status is checked in the events below.
        assert!(
            after
                .last_error
                .as_deref()
                .is_some_and(|e| (e.contains("the connection closed")
                    && e.contains("exit status: 3"))
                    || e.contains("closed the connection during tools/call")),
            "{after:?}"
        );
        assert_eq!(after.failed_calls, round);
        // The old child is gone, not left a zombie.
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} is still there"
        );
    }
    // The good server and the restarted one.
    assert!(most <= 2, "{most} processes at once");
    let told = faults(&mut events, "close");
    assert!(
        told.iter().filter(|e| e.contains("exit status: 3")).count() == 3,
        "{told:?}"
    );
    host.shutdown(Duration::from_secs(5)).await;
    within("the children to go", async {
        while running(&marker) > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floods_notifications() {
    let scratch = Scratch::new("floods");
    let record = scratch.file("flood");
    let marker = marker("floods");
    let host = start(
        &scratch,
        vec![
            bad("good", "good", &scratch.file("good"), &marker),
            bad("flood", "flood", &record, &marker),
        ],
        supervisor(),
    )
    .await;
    let mut events = host.events();
    // A legacy client that asked for log messages, counting what it gets.
    let list_changed = Arc::new(AtomicUsize::new(0));
    let messages = Arc::new(AtomicUsize::new(0));
    let (seen_changes, seen_messages) = (Arc::clone(&list_changed), Arc::clone(&messages));
    let builder = Client::builder("faults", "1.0")
        .era(LEGACY)
        .on_notification(move |n| match n.method.as_str() {
            "notifications/tools/list_changed" => {
                seen_changes.fetch_add(1, Ordering::Relaxed);
            }
            "notifications/message" => {
                seen_messages.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        });
    let a = gateway_client(&host, builder).await;
    a.set_logging_level(mcp_schema::LoggingLevel::Info)
        .await
        .unwrap();
    let b = client(&host, MODERN).await;
    let rss_before = memory_kib("VmRSS");
    let started = within("the flood to start", a.call_tool("flood__poke", json!({})))
        .await
        .unwrap();
    assert_eq!(text(&started), "flooding");
    // The healthy server answers both clients while the flood goes on.
    let mut calls = 0;
    within("the flood to end", async {
        loop {
            let done = count(&record, "flood-done") > 0;
            healthy(&[&a, &b], &format!("call {calls}")).await;
            calls += 1;
            if done {
                return;
            }
        }
    })
    .await;
    // The lists are read again after a pause, once for a burst of
    // changes: far fewer times than the server said they changed.
    until(&host, "flood", |s| s.tools > 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let listed = count(&record, "tools/list");
    assert!(
        (2..=1_000).contains(&listed),
        "100,000 changes read {listed} times"
    );
    let told = list_changed.load(Ordering::Relaxed);
    assert!(
        (1..=listed).contains(&told),
        "{told} list changes passed on for {listed} readings"
    );
    let got = messages.load(Ordering::Relaxed);
    assert!(got <= 100_000, "{got} messages");
    // What was dropped is counted and told.
    let status = server(&host, "flood");
    let rss_after = memory_kib("VmRSS");
    eprintln!(
        "flood: {calls} healthy calls, tools/list read {listed} times, {told} list changes \
         and {got} messages passed on, {} notifications dropped, RSS {rss_before} -> \
         {rss_after} KiB",
        status.dropped_notifications
    );
    assert_eq!(status.state, UpstreamState::Ready);
    assert_eq!(status.restarts, 0);
    if status.dropped_notifications > 0 {
        assert!(
            status
                .last_error
                .as_deref()
                .is_some_and(|e| e.contains("notifications dropped")),
            "{status:?}"
        );
        assert!(!faults(&mut events, "flood").is_empty());
    }
    // 200,000 notifications of ~100 bytes: kept, they alone would be
    // 20 MB, and more as parsed values.
    assert!(
        rss_after.saturating_sub(rss_before) < 64 * 1024,
        "RSS grew from {rss_before} to {rss_after} KiB"
    );
    healthy(&[&a, &b], "after the flood").await;
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_a_100_mb_message() {
    let scratch = Scratch::new("huge");
    let record = scratch.file("huge");
    let marker = marker("huge");
    let host = start(
        &scratch,
        vec![
            bad("good", "good", &scratch.file("good"), &marker),
            bad("huge", "huge", &record, &marker).timeout(Duration::from_secs(120)),
        ],
        supervisor(),
    )
    .await;
    let mut events = host.events();
    let (a, b) = (client(&host, LEGACY).await, client(&host, MODERN).await);
    let peak_before = memory_kib("VmHWM");
    for round in 1..=3u64 {
        let caller = if round % 2 == 0 { &a } else { &b };
        let error = within(
            "the huge answer to be refused",
            caller.call_tool("huge__poke", json!({})),
        )
        .await
        .unwrap_err();
        assert!(
            error.to_string().contains(
                "server \"huge\" was disconnected during tools/call: \
                 message longer than 16777216 bytes, the limit"
            ),
            "{error}"
        );
        healthy(&[&a, &b], &format!("round {round}")).await;
        let status = until(&host, "huge", |s| {
            s.state == UpstreamState::Ready && s.restarts == round
        })
        .await;
        assert!(
            status
                .last_error
                .as_deref()
                .is_some_and(|e| e.contains("message longer than 16777216 bytes")),
            "{status:?}"
        );
        assert_eq!(status.failed_calls, round);
    }
    let peak_after = memory_kib("VmHWM");
    eprintln!("100 MB messages: peak RSS {peak_before} -> {peak_after} KiB");
    // Three messages of 100 MB: at most the limit was held of each, once.
    assert!(
        peak_after.saturating_sub(peak_before) < 64 * 1024,
        "peak RSS grew from {peak_before} to {peak_after} KiB"
    );
    let told = faults(&mut events, "huge");
    assert!(told.iter().any(|e| e.contains("longer than")), "{told:?}");
    host.shutdown(Duration::from_secs(5)).await;
}

/// The host's gateway served over Streamable HTTP on a free loopback port;
/// a legacy session idle for 300 ms (no request, no open stream) ends.
async fn serve_http(host: &Host) -> String {
    let gateway = Gateway::new(host.clone(), "faults-host", "1.0");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = mcp_http::HttpConfig::loopback(port)
        .session_idle_timeout(Duration::from_millis(300))
        .keep_alive(Duration::from_millis(100));
    let endpoint =
        mcp_http::McpEndpoint::new(Arc::new(gateway.clone()), gateway.session_config(), config);
    tokio::spawn(mcp_http::serve(listener, endpoint, std::future::pending()));
    format!("http://127.0.0.1:{port}/mcp")
}

/// POSTs `body` with `headers`, and returns the response once its headers
/// came (its body unread).
async fn post(url: &str, headers: &[(&str, &str)], body: Value) -> reqwest::Response {
    within("a POST", request(url, headers, body).send())
        .await
        .unwrap()
}

/// A POST of a call that will not be answered: it runs on a task of its
/// own (the response's headers come with the first message of its stream),
/// and aborting the task drops its connection.
fn start_call(url: &str, headers: &[(&str, &str)], body: Value) -> tokio::task::JoinHandle<()> {
    let sent = request(url, headers, body).send();
    tokio::spawn(async move {
        let _ = sent.await;
        panic!("the call was answered");
    })
}

fn request(url: &str, headers: &[(&str, &str)], body: Value) -> reqwest::RequestBuilder {
    // A client of its own: its connections go when it does.
    let http = reqwest::Client::new();
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downstream_client_vanishes_mid_call() {
    let scratch = Scratch::new("vanishes");
    let record = scratch.file("slow");
    let marker = marker("vanishes");
    let host = start(
        &scratch,
        vec![
            bad("good", "good", &scratch.file("good"), &marker),
            bad("slow", "slow", &record, &marker),
        ],
        supervisor(),
    )
    .await;
    let url = serve_http(&host).await;
    let (a, b) = (client(&host, LEGACY).await, client(&host, MODERN).await);
    let call = json!({"name": "slow__poke", "arguments": {}});

    // A legacy session: its client calls, then goes without a word. The
    // legacy client above counts once its `notifications/initialized`,
    // which it does not wait for, has been handled.
    within("the legacy client's session to count", async {
        while host.status().sessions < 1 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let sessions = host.status().sessions;
    let init = post(
        &url,
        &[],
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "vanishing", "version": "1"}}}),
    )
    .await;
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    drop(init);
    let legacy = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let initialized = post(
        &url,
        &legacy,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(initialized.status(), 202);
    assert_eq!(host.status().sessions, sessions + 1);
    let calling = start_call(
        &url,
        &legacy,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}),
    );
    within("the call to reach the server", async {
        while count(&record, "tools/call") < 1 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(server(&host, "slow").in_flight, 1);
    calling.abort();
    healthy(&[&a, &b], "with a legacy client gone").await;
    // Its session ends once idle, which cancels its call upstream.
    within("the legacy call to be cancelled upstream", async {
        while count(&record, "notifications/cancelled") < 1 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let status = until(&host, "slow", |s| s.in_flight == 0).await;
    assert_eq!(status.state, UpstreamState::Ready);
    assert_eq!(host.status().sessions, sessions, "the session was let go");

    // A 2026-07-28 client: its request is cancelled by closing it.
    let mut call = call;
    call["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "vanishing", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let calling = start_call(
        &url,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "slow__poke"),
        ],
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}),
    );
    within("the call to reach the server", async {
        while count(&record, "tools/call") < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(server(&host, "slow").in_flight, 1);
    calling.abort();
    within("the modern call to be cancelled upstream", async {
        while count(&record, "notifications/cancelled") < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let status = until(&host, "slow", |s| s.in_flight == 0).await;
    assert_eq!(status.failed_calls, 0, "a client's going is not a fault");
    healthy(&[&a, &b], "with both clients gone").await;
    host.shutdown(Duration::from_secs(5)).await;
}
