//! `mcp host` with `[traces]`: a call that carries its caller's W3C
//! `traceparent` in `_meta` becomes a span of that trace, whose child, the
//! hop to the server, is the parent the server gets in its `_meta`; both
//! spans reach an OTLP/HTTP collector (a loopback stand-in that decodes
//! what it is sent with the OTLP's own protobuf types).

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_a_span_of_its_callers_trace_and_the_server_gets_the_hops() {
    let (otlp, bodies) = collector().await;
    let scratch = tempfile::tempdir().unwrap();
    let server = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/meta_server.py");
    let config = scratch.path().join("servers.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"m": {"command": "python3", "args": [server]}}}).to_string(),
    )
    .unwrap();
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
    let session = support::open_session(&url, VERSION).await;
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller = "00f067aa0ba902b7";
    let meta = json!({"traceparent": format!("00-{trace}-{caller}-01"), "tracestate": "vendor=1"});
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "m__meta", "arguments": {}, "_meta": meta}});
    let response = support::post_rpc(&url, Some(&session), VERSION, &call).await;
    let text = response.text().await.unwrap();
    let data = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|d| d.contains("\"id\":9"))
        .unwrap_or(&text);
    let answer: Value = serde_json::from_str(data).unwrap();
    let seen: Value =
        serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    // The server gets the same trace, with the host's hop as the parent.
    let traceparent = seen["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("{seen}"));
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(
        (parts[0], parts[1], parts[3]),
        ("00", trace, "01"),
        "{traceparent}"
    );
    let hop_id = parts[2].to_owned();
    assert_ne!(hop_id, caller);
    assert_eq!(seen["tracestate"], "vendor=1");

    // Both spans reach the collector, one the other's child.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (request, hop) = loop {
        let found = bodies.lock().unwrap().clone();
        let named = |name: &str| found.iter().find(|s| s.name == name).cloned();
        // The request's span is named for its tool, the hop's for its server.
        if let (Some(request), Some(hop)) = (named("tools/call m__meta"), named("tools/call m")) {
            break (request, hop);
        }
        assert!(
            Instant::now() < deadline,
            "the spans did not arrive: {found:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(request.trace, trace, "{request:?}");
    assert_eq!(request.parent, caller, "{request:?}");
    assert_eq!(hop.trace, trace, "{hop:?}");
    assert_eq!(hop.parent, request.id, "{hop:?}");
    assert_eq!(hop.id, hop_id, "{hop:?}");
    assert!(
        request.service.contains("host-under-test"),
        "{}",
        request.service
    );
    host.kill().await.unwrap();
}
