//! The JSON-RPC envelope: how fast one frame becomes a [`Message`] and a
//! result becomes a response frame.
//!
//! Each group holds the envelope path (`envelope`) and, as a baseline, a full
//! parse into (or serialization of) a `serde_json::Value` of the same text
//! (`value`), so the ratio between the two is visible in the report. The
//! envelope keeps `params` / `result` raw, so it should beat the baseline by
//! more the larger the payload.
//!
//! Run: `cargo bench -p mcp-schema --bench envelope`

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcp_schema::jsonrpc::{self, Frame, Message, RequestId};
use serde_json::Value;
use serde_json::value::RawValue;

/// A `tools/call` request whose `text` argument is `text`.
fn tools_call(id: i64, text: &str) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {
            "name": "echo",
            "arguments": {"text": text},
            "_meta": {"progressToken": id}
        }
    })
    .to_string()
}

/// A `tools/call` result holding one text block.
fn call_result(text: &str) -> Box<RawValue> {
    jsonrpc::to_raw(&serde_json::json!({
        "content": [{"type": "text", "text": text}],
        "isError": false
    }))
    .expect("result serializes")
}

/// About 4 KiB of text that needs some escaping, like real tool input.
fn four_kib() -> String {
    "line of \"quoted\" text with a tab\there\n".repeat(4096 / 40)
}

/// `text` as an envelope and as a `Value`, in one group named `name`.
fn parse_pair(c: &mut Criterion, name: &str, text: &str) {
    let mut group = c.benchmark_group(format!("parse/{name}"));
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("envelope", |b| {
        b.iter(|| Message::parse_frame(black_box(text)).expect("valid frame"))
    });
    group.bench_function("value", |b| {
        b.iter(|| serde_json::from_str::<Value>(black_box(text)).expect("valid JSON"))
    });
    group.finish();
}

fn parse(c: &mut Criterion) {
    parse_pair(c, "tools_call_small", &tools_call(7, "hello"));
    parse_pair(c, "tools_call_4k", &tools_call(7, &four_kib()));
    let response = jsonrpc::write_response(&RequestId::Number(7), &call_result("hello"));
    parse_pair(c, "response", &response);
    let notification = serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": 7, "progress": 50, "total": 100, "message": "halfway"}
    })
    .to_string();
    parse_pair(c, "notification", &notification);
    let batch = format!(
        "[{}]",
        (1..=10)
            .map(|id| tools_call(id, "hello"))
            .collect::<Vec<_>>()
            .join(",")
    );
    // Sanity: the batch really is ten requests.
    match Message::parse_frame(&batch) {
        Ok(Frame::Batch(items)) => assert_eq!(items.iter().filter(|m| m.is_ok()).count(), 10),
        other => panic!("not a batch: {other:?}"),
    }
    parse_pair(c, "batch_10", &batch);
    known_meta(c);
}

/// A stateless (2026-07-28) `tools/call` with the `_meta` a client repeats
/// in every request: read in full, and with that `_meta` recognised.
fn known_meta(c: &mut Criterion) {
    let meta = r#"{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}},"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"mcp","version":"0.1.0"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;
    let text = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"_meta":{meta},"arguments":{{"text":"hello"}},"name":"echo"}}}}"#
    );
    let meta: Box<RawValue> = serde_json::from_str(meta).expect("valid _meta");
    let mut group = c.benchmark_group("parse/stateless_tools_call");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("full", |b| {
        b.iter(|| Message::parse(black_box(&text)).expect("valid message"))
    });
    group.bench_function("known_meta", |b| {
        b.iter(|| {
            Message::parse_with_known_meta(black_box(&text), |_| Some(&*meta)).expect("recognised")
        })
    });
    group.finish();
}

fn serialize(c: &mut Criterion) {
    for (name, text) in [("small", "hello".to_owned()), ("4k", four_kib())] {
        let id = RequestId::Number(7);
        let result = call_result(&text);
        let as_value: Value =
            serde_json::from_str(&jsonrpc::write_response(&id, &result)).expect("response is JSON");
        let mut group = c.benchmark_group(format!("write_response/{name}"));
        group.throughput(Throughput::Bytes(result.get().len() as u64));
        group.bench_function("envelope", |b| {
            b.iter(|| jsonrpc::write_response(black_box(&id), black_box(&result)))
        });
        group.bench_function("value", |b| {
            b.iter(|| serde_json::to_string(black_box(&as_value)).expect("serializes"))
        });
        group.finish();
    }
}

criterion_group!(benches, parse, serialize);
criterion_main!(benches);
