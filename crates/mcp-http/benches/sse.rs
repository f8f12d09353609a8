//! Server-Sent Events, both directions, as the Streamable HTTP transport
//! uses them.
//!
//! - `sse/event`: [`sse::event`] framing one JSON-RPC response with an event
//!   id, for a 200-byte and a 4 KiB payload (one line each, as compact JSON
//!   is).
//! - `sse/concat`: [`sse::concat`] joining a priming event and a response
//!   event into the one buffer that goes out in one write.
//! - `sse/parse`: [`SseParser::feed`] reading a stream of 100 such events
//!   delivered in odd-sized chunks (13 bytes: every line split many times;
//!   1021 bytes: a few splits per event) and in one piece.
//!
//! Run: `cargo bench -p mcp-http --bench sse`

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcp_http::sse::{self, SseParser};

/// A JSON-RPC response of about `len` bytes (compact JSON, one line).
fn response_of(len: usize) -> String {
    let head = r#"{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":""#;
    let tail = r#""}],"isError":false}}"#;
    let fill = len.saturating_sub(head.len() + tail.len());
    format!("{head}{}{tail}", "x".repeat(fill))
}

/// An event id as the endpoint writes them: stream id, then a counter.
const EVENT_ID: &str = "3f2a9c1e-7b44-4d0e-9a51-0c6e2b8d1f37:17";

fn framing(c: &mut Criterion) {
    let mut group = c.benchmark_group("sse/event");
    for (name, len) in [("200B", 200), ("4KiB", 4096)] {
        let data = response_of(len);
        group.throughput(Throughput::Bytes(data.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| sse::event(black_box(Some(EVENT_ID)), black_box(&data)))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("sse/concat");
    let priming = sse::priming(EVENT_ID, Some(Duration::from_secs(1)));
    for (name, len) in [("200B", 200), ("4KiB", 4096)] {
        let parts = [
            priming.clone(),
            sse::event(Some(EVENT_ID), &response_of(len)),
        ];
        group.throughput(Throughput::Bytes(
            parts.iter().map(|p| p.len() as u64).sum(),
        ));
        group.bench_function(format!("priming+{name}"), |b| {
            b.iter(|| sse::concat(black_box(&parts)))
        });
    }
    group.finish();
}

fn parsing(c: &mut Criterion) {
    // 100 events of 200 bytes, as a POST's SSE answer or a GET stream carries them.
    let data = response_of(200);
    let stream: Vec<u8> = (0..100)
        .flat_map(|i| sse::event(Some(&format!("stream-1:{i}")), &data))
        .collect();
    let mut group = c.benchmark_group("sse/parse");
    group.throughput(Throughput::Bytes(stream.len() as u64));
    for chunk in [13, 1021, stream.len()] {
        let name = if chunk == stream.len() {
            "100_events/whole".to_owned()
        } else {
            format!("100_events/chunks_of_{chunk}")
        };
        // Sanity: every event comes out, whatever the chunking.
        assert_eq!(parse(&stream, chunk), 100, "{name}");
        group.bench_function(name, |b| b.iter(|| parse(black_box(&stream), chunk)));
    }
    group.finish();
}

/// Feeds `stream` to a fresh parser `chunk` bytes at a time; how many events came out.
fn parse(stream: &[u8], chunk: usize) -> usize {
    let mut parser = SseParser::new();
    stream
        .chunks(chunk)
        .map(|piece| black_box(parser.feed(piece)).len())
        .sum()
}

criterion_group!(benches, framing, parsing);
criterion_main!(benches);
