//! `mcp host` with `[traces]`: a call that carries its caller's W3C
//! `traceparent` in `_meta` (or in its HTTP headers) becomes a span of
//! that trace, whose child, the hop to the server, is the parent the
//! server gets in its `_meta` (and, over HTTP, in its headers); both spans
//! reach an OTLP/HTTP collector (a loopback stand-in that decodes what it
//! is sent with the OTLP's own protobuf types).

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::MCP;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};

const VERSION: &str = "2025-11-25";

/// A span as the collector got it: ids in hex.
#[derive(Debug, Clone)]
struct Got {
    name: String,
    trace: String,
    id: String,
    parent: String,
    service: String,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An OTLP/HTTP collector's stand-in: each POST to /v1/traces decoded as
/// an `ExportTraceServiceRequest`, its spans kept.
async fn collector() -> (String, Arc<Mutex<Vec<Got>>>) {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let spans = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&spans);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let kept = Arc::clone(&kept);
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                loop {
                    let mut line = String::new();
                    if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    assert!(line.starts_with("POST /v1/traces "), "{line}");
                    let mut length = 0;
                    loop {
                        line.clear();
                        stream.read_line(&mut line).await.unwrap();
                        let header = line.trim_end().to_ascii_lowercase();
                        if header.is_empty() {
                            break;
                        }
                        if let Some(value) = header.strip_prefix("content-length:") {
                            length = value.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; length];
                    stream.read_exact(&mut body).await.unwrap();
                    let request = ExportTraceServiceRequest::decode(&body[..]).unwrap();
                    for resource in request.resource_spans {
                        let service = format!("{:?}", resource.resource);
                        for scope in resource.scope_spans {
                            for span in scope.spans {
                                kept.lock().unwrap().push(Got {
                                    name: span.name,
                                    trace: hex(&span.trace_id),
                                    id: hex(&span.span_id),
                                    parent: hex(&span.parent_span_id),
                                    service: service.clone(),
                                });
                            }
                        }
                    }
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    stream.get_mut().write_all(answer.as_bytes()).await.unwrap();
                }
            });
        }
    });
    (url, spans)
}

/// `mcp host` over HTTP with `[traces]` sending to `otlp`, its servers
/// `servers` (a config's `mcpServers`); the host and its endpoint.
async fn start_host(
    scratch: &tempfile::TempDir,
    otlp: &str,
    servers: Value,
) -> (tokio::process::Child, String) {
    let config = scratch.path().join("servers.json");
    std::fs::write(&config, json!({ "mcpServers": servers }).to_string()).unwrap();
    let settings = scratch.path().join("host.toml");
    std::fs::write(
        &settings,
        format!("[traces]\notlp = \"{otlp}\"\nservice_name = \"host-under-test\"\n"),
    )
    .unwrap();
    let mut host = tokio::process::Command::new(MCP)
        .args(["host", "--http", "127.0.0.1:0", "--config"])
        .arg(&config)
        .arg("--settings")
        .arg(&settings)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut out = BufReader::new(host.stdout.take().unwrap()).lines();
    let url = loop {
        let line = tokio::time::timeout(Duration::from_secs(30), out.next_line())
            .await
            .expect("the endpoint in time")
            .unwrap()
            .expect("a line");
        if let Some(url) = line.strip_prefix("MCP endpoint: ") {
            break url.to_owned();
        }
    };
    (host, url)
}

/// Calls `m__meta` through the host at `url` with `meta` as the call's
/// `_meta` and `headers` on the POST: what the server saw.
async fn call_meta(url: &str, meta: Value, headers: &[(&str, &str)]) -> Value {
    let session = support::open_session(url, VERSION).await;
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "m__meta", "arguments": {}, "_meta": meta}});
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", &session)
        .body(call.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = tokio::time::timeout(Duration::from_secs(30), request.send())
        .await
        .expect("answered in time")
        .unwrap();
    let text = response.text().await.unwrap();
    let data = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|d| d.contains("\"id\":9"))
        .unwrap_or(&text);
    let answer: Value = serde_json::from_str(data).unwrap();
    let text = answer["result"]["content"][0]["text"].as_str();
    serde_json::from_str(text.unwrap_or_else(|| panic!("{answer}"))).unwrap()
}

/// The request's span and the hop's, once both reached the collector.
async fn request_and_hop(spans: &Mutex<Vec<Got>>) -> (Got, Got) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = spans.lock().unwrap().clone();
        let named = |name: &str| found.iter().find(|s| s.name == name).cloned();
        // The request's span is named for its tool, the hop's for its server.
        if let (Some(request), Some(hop)) = (named("tools/call m__meta"), named("tools/call m")) {
            return (request, hop);
        }
        assert!(
            Instant::now() < deadline,
            "the spans did not arrive: {found:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The span id a `traceparent` names, once it is checked to be of trace
/// `trace` and sampled.
fn parent_of(traceparent: &Value, trace: &str) -> String {
    let traceparent = traceparent
        .as_str()
        .unwrap_or_else(|| panic!("{traceparent}"));
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(
        (parts[0], parts[1], parts[3]),
        ("00", trace, "01"),
        "{traceparent}"
    );
    parts[2].to_owned()
}

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER: &str = "00f067aa0ba902b7";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_a_span_of_its_callers_trace_and_the_server_gets_the_hops() {
    let (otlp, spans) = collector().await;
    let scratch = tempfile::tempdir().unwrap();
    let server = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/meta_server.py");
    let servers = json!({"m": {"command": "python3", "args": [server]}});
    let (mut host, url) = start_host(&scratch, &otlp, servers).await;
    let meta = json!({"traceparent": format!("00-{TRACE}-{CALLER}-01"), "tracestate": "vendor=1"});
    let seen = call_meta(&url, meta, &[]).await;
    // The server gets the same trace, with the host's hop as the parent.
    let hop_id = parent_of(&seen["traceparent"], TRACE);
    assert_ne!(hop_id, CALLER);
    assert_eq!(seen["tracestate"], "vendor=1");

    // Both spans reach the collector, one the other's child.
    let (request, hop) = request_and_hop(&spans).await;
    assert_eq!(request.trace, TRACE, "{request:?}");
    assert_eq!(request.parent, CALLER, "{request:?}");
    assert_eq!(hop.trace, TRACE, "{hop:?}");
    assert_eq!(hop.parent, request.id, "{hop:?}");
    assert_eq!(hop.id, hop_id, "{hop:?}");
    assert!(
        request.service.contains("host-under-test"),
        "{}",
        request.service
    );
    host.kill().await.unwrap();
}

/// Over HTTP both ways: the caller's trace context in the POST's headers
/// (none in `_meta`) is the request span's parent, and the HTTP server
/// gets the hop's context in its headers as in `_meta`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_context_of_http_headers_is_read_and_sent_on() {
    let (otlp, spans) = collector().await;
    let scratch = tempfile::tempdir().unwrap();
    let server = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/meta_server.py");
    let mut upstream = tokio::process::Command::new("python3")
        .args([server, "--http"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(upstream.stdout.take().unwrap()).lines();
    let port = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the server's port in time")
        .unwrap()
        .expect("a port");
    let servers = json!({"m": {"url": format!("http://127.0.0.1:{port}/mcp"), "era": "legacy"}});
    let (mut host, url) = start_host(&scratch, &otlp, servers).await;
    let traceparent = format!("00-{TRACE}-{CALLER}-01");
    let headers = [
        ("traceparent", traceparent.as_str()),
        ("tracestate", "vendor=2"),
    ];
    let seen = call_meta(&url, json!({}), &headers).await;
    let hop_id = parent_of(&seen["traceparent"], TRACE);
    assert_ne!(hop_id, CALLER);
    assert_eq!(seen["tracestate"], "vendor=2");
    assert_eq!(
        seen["headers"],
        json!({"traceparent": seen["traceparent"], "tracestate": "vendor=2"}),
        "the headers say what _meta says"
    );
    let (request, hop) = request_and_hop(&spans).await;
    assert_eq!(
        (request.trace.as_str(), request.parent.as_str()),
        (TRACE, CALLER)
    );
    assert_eq!(hop.parent, request.id, "{hop:?}");
    assert_eq!(hop.id, hop_id, "{hop:?}");
    host.kill().await.unwrap();
    upstream.kill().await.unwrap();
}
