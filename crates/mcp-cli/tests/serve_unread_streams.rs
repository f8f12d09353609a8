//! `mcp serve everything --http` with legacy sessions whose standalone
//! (GET) streams are opened and never read, while every session is
//! flooded with `notifications/tools/list_changed`: the server's memory
//! stays within what its configured limits allow, and comes back once the
//! sessions are deleted. A real process on loopback, its anonymous memory
//! read from `/proc` (the code pages of its executable are not counted).

#![cfg(target_os = "linux")]

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::serve_everything_http;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// Sessions with an unread standalone stream.
const STREAMS: u64 = 20;
/// Rounds of the flood, and the list changes of each.
const ROUNDS: usize = 4;
const CHANGES_PER_ROUND: usize = 20_000;
/// Tool calls per POST (a 2025-03-26 batch), and the POSTs sent at once.
const BATCH: usize = 500;
const DRIVERS: usize = 2;

/// What a connection buffers on its way out besides its stream's queue
/// (mcp-http's `CONNECTION_BUFFER`, hyper's `max_buf_size`).
const CONNECTION_BUFFER: u64 = 64 * 1024;
/// What one queued message costs besides its text, at most: its slot in
/// the queue and its event id, and in the chunk handed to the socket its
/// `id:` line and SSE framing.
const PER_MESSAGE: u64 = 256;
/// Everything else a busy server holds: a batch of calls and its answers
/// in flight, the runtime's and the allocator's per-thread caches, page
/// granularity.
const SLACK: u64 = 16 << 20;
/// What may stay once the sessions are gone: what the runtime keeps sized
/// for the peak. The allocator's free pages go back as its workers go idle,
/// the last ones at most two seconds after the last request (a worker that
/// owes a collection is woken for it a second later).
const KEPT: u64 = 4 << 20;
/// How long the memory has to come back after the sessions are deleted.
const SETTLE: Duration = Duration::from_secs(10);

/// The most the server may grow by under the flood, from its limits: each
/// unread stream holds at most its queue (`max_queued_bytes` of text and
/// `max_queued_messages` entries), the connection's buffer, and the chunk
/// being written (at most the queue, framed); each session's stored events
/// are at most `max_events_per_session`, each a message and
/// `EVENT_OVERHEAD` of bookkeeping.
fn peak_allowance(message: u64) -> u64 {
    let config = mcp_http::HttpConfig::loopback(0);
    let queued = config.max_queued_bytes as u64 + config.max_queued_messages as u64 * PER_MESSAGE;
    let per_stream = 2 * queued + CONNECTION_BUFFER;
    let events = mcp_http::EventStoreLimits::default().max_events_per_session as u64;
    let per_session = events * (message + mcp_http::EVENT_OVERHEAD as u64);
    // The flooded sessions, the one sending the changes and the first.
    STREAMS * per_stream + (STREAMS + 2) * per_session + SLACK
}

/// The memory of process `pid` that a leak or a queue would show, in
/// bytes: `RssAnon` (its anonymous pages; `RssFile`, the executable's code
/// paged in as new paths run, is left out), and an upper bound of its peak,
/// `VmHWM` less the file pages resident at `file_at_start` (file pages are
/// only added while the test runs, so the peak's were at least those).
struct Memory {
    anonymous: u64,
    peak_anonymous: u64,
    file: u64,
}

fn memory(pid: u32, file_at_start: Option<u64>) -> Memory {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server runs");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().strip_suffix(" kB"))
            .and_then(|kib| kib.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{name} in /proc/{pid}/status"))
            * 1024
    };
    let file = field("RssFile:");
    Memory {
        anonymous: field("RssAnon:"),
        peak_anonymous: field("VmHWM:").saturating_sub(file_at_start.unwrap_or(file)),
        file,
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    version: &str,
    body: &Value,
) -> reqwest::Response {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version)
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    tokio::time::timeout(Duration::from_secs(60), request.send())
        .await
        .expect("answered in time")
        .expect("POST sent")
}

/// Opens the standalone stream of `session` and reads its response head,
/// then nothing more.
async fn open_unread_stream(address: &str, session: &str) -> TcpStream {
    let mut socket = TcpStream::connect(address).await.expect("connected");
    let request = format!(
        "GET /mcp HTTP/1.1\r\nHost: {address}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
    );
    socket.write_all(request.as_bytes()).await.expect("sent");
    let mut head = Vec::new();
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut byte))
            .await
            .expect("the stream's head in time")
            .expect("read");
        assert_eq!(read, 1, "the stream ended before its head");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    socket
}

/// `CHANGES_PER_ROUND` calls of `test_trigger_tool_change` (each adds or
/// removes a tool: a list change told to every session), in batches.
async fn flood(url: &str, session: &str, round: usize) {
    let drivers = (0..DRIVERS).map(|driver| {
        let (url, session) = (url.to_owned(), session.to_owned());
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            for post_index in 0..CHANGES_PER_ROUND / BATCH / DRIVERS {
                let batch: Vec<Value> = (0..BATCH)
                    .map(|call| {
                        let id = ((round * DRIVERS + driver) * 1_000 + post_index) * BATCH + call;
                        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                               "params": {"name": "test_trigger_tool_change", "arguments": {}}})
                    })
                    .collect();
                let response =
                    post(&client, &url, Some(&session), "2025-03-26", &json!(batch)).await;
                assert_eq!(response.status(), 200);
                let answers: Vec<Value> = response.json().await.expect("a JSON array");
                assert_eq!(answers.len(), BATCH);
            }
        })
    });
    let drivers: Vec<_> = drivers.collect();
    for driver in drivers {
        driver.await.expect("the driver ran");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_streams_under_a_flood_stay_within_the_limits_and_memory_comes_back() {
    tokio::time::timeout(Duration::from_secs(300), run())
        .await
        .expect("the test ends within 5 minutes");
}

async fn run() {
    let (child, address) = serve_everything_http("127.0.0.1:0").await;
    let pid = child.id().expect("the server runs");
    let url = format!("http://{address}/mcp");
    let client = reqwest::Client::new();
    // A first session and a call warm the server up before it is measured.
    let warm = support::open_session(&url, "2025-11-25").await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    post(&client, &url, Some(&warm), "2025-11-25", &ping).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let at_start = memory(pid, None);
    let start = at_start.anonymous;

    let mut sessions = Vec::new();
    let mut streams = Vec::new();
    for _ in 0..STREAMS {
        let session = support::open_session(&url, "2025-11-25").await;
        streams.push(open_unread_stream(&address, &session).await);
        sessions.push(session);
    }
    let driver = support::open_session(&url, "2025-03-26").await;
    for round in 0..ROUNDS {
        flood(&url, &driver, round).await;
    }
    let after_flood = memory(pid, Some(at_start.file));
    let (during, peak) = (after_flood.anonymous, after_flood.peak_anonymous);
    let message = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}"#;
    let allowance = peak_allowance(message.len() as u64);
    eprintln!(
        "anonymous RSS at start {}, after the flood {}, peak at most {} (allowed: start + {})",
        mib(start),
        mib(during),
        mib(peak),
        mib(allowance)
    );
    assert!(
        peak <= start + allowance,
        "peak anonymous RSS {} exceeds the start {} by more than the limits allow ({})",
        mib(peak),
        mib(start),
        mib(allowance)
    );

    for session in sessions.iter().chain([&driver, &warm]) {
        let response = tokio::time::timeout(
            Duration::from_secs(10),
            client
                .delete(&url)
                .header("mcp-session-id", session.as_str())
                .header("mcp-protocol-version", "2025-11-25")
                .send(),
        )
        .await
        .expect("answered in time")
        .expect("DELETE sent");
        assert_eq!(response.status(), 204);
    }
    drop(streams);
    let deadline = Instant::now() + SETTLE;
    let after = loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = memory(pid, None).anonymous;
        if now <= start + KEPT || Instant::now() >= deadline {
            break now;
        }
    };
    eprintln!(
        "anonymous RSS after the sessions were deleted {} (allowed: start + {})",
        mib(after),
        mib(KEPT)
    );
    assert!(
        after <= start + KEPT,
        "anonymous RSS {} after the sessions were deleted is more than {} above the start {}",
        mib(after),
        mib(KEPT),
        mib(start)
    );
}
