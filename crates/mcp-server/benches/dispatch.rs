//! A `tools/call` of the `everything` server's `echo` tool through the whole
//! engine, in process: [`mcp_core::serve`] over [`Transport::pair`], with
//! this benchmark as the client writing request frames and reading the
//! response frames. Nothing is mocked: the frame is parsed, admitted
//! (lifecycle, revision, capabilities), dispatched to the tool with typed
//! arguments, and the result serialized and sent back.
//!
//! Two eras: `legacy` (a 2025-11-25 session, initialized once before
//! measuring) and `modern` (2026-07-28: no session, every request carries
//! its revision, client info and capabilities in `params._meta`). Each is
//! measured one call at a time (`1`: latency of a round trip) and with 64
//! calls pipelined (`pipelined_64`: throughput; the report's elements/s are
//! calls per second).
//!
//! Run: `cargo bench -p mcp-server --bench dispatch`

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcp_core::{FrameKind, InboundFrame, OutboundFrame, RunningSession, Transport};
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use tokio::sync::mpsc;

/// How many calls are in flight at once in the pipelined case.
const PIPELINE: usize = 64;

/// The two ways a client talks to a server.
#[derive(Clone, Copy, Debug)]
enum Era {
    /// 2025-11-25: `initialize` once, then plain requests in the session.
    Legacy,
    /// 2026-07-28: stateless, a full `_meta` on every request.
    Modern,
}

impl Era {
    fn name(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

/// The client end of an in-memory session with the `everything` server.
struct Client {
    outbound: mpsc::Sender<OutboundFrame>,
    inbound: mcp_core::Inbound,
    /// Everything of a `tools/call echo` frame after its id.
    request_tail: String,
    next_id: i64,
    _session: RunningSession,
}

impl Client {
    /// Starts the server on its own task and, for the legacy era, runs the
    /// handshake. Must run inside the runtime (the pair spawns tasks).
    async fn start(era: Era) -> Client {
        let server = mcp_builtin::everything::server();
        let (server_side, client_side) = Transport::pair();
        let session = mcp_core::serve(
            server_side,
            Arc::new(server.clone()),
            server.session_config(),
        );
        let mut params = json!({"name": "echo", "arguments": {"text": "hello, benchmark"}});
        if let Era::Modern = era {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "mcp-bench", "version": "1.0.0"},
            });
        }
        let mut client = Client {
            outbound: client_side.outbound,
            inbound: client_side.inbound,
            request_tail: format!(r#","method":"tools/call","params":{params}}}"#),
            next_id: 1,
            _session: session,
        };
        if let Era::Legacy = era {
            client
                .send(
                    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "mcp-bench", "version": "1.0.0"},
                    }})
                    .to_string(),
                )
                .await;
            let reply = client.recv().await;
            assert!(
                reply.contains(r#""protocolVersion":"2025-11-25""#),
                "{reply}"
            );
            client
                .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned())
                .await;
        }
        // Check once, outside the measurements, that the call really works.
        let reply: Value = serde_json::from_str(&client.recv_after_call().await).expect("JSON");
        assert_eq!(
            reply["result"]["content"][0]["text"], "hello, benchmark",
            "{reply}"
        );
        client
    }

    async fn send(&self, text: String) {
        let frame = OutboundFrame {
            text,
            related: None,
            kind: FrameKind::Request,
        };
        self.outbound.send(frame).await.expect("server is running");
    }

    async fn recv(&mut self) -> String {
        match self.inbound.recv().await.expect("server is running") {
            InboundFrame::Text(text) | InboundFrame::WithExtensions(text, _) => text,
            InboundFrame::Unreadable(why) => panic!("unreadable frame: {why}"),
            InboundFrame::Parsed(..) => panic!("a parsed frame, not text"),
        }
    }

    /// Sends `n` `tools/call echo` requests, each with a fresh id, without
    /// waiting for answers.
    async fn call(&mut self, n: usize) {
        for _ in 0..n {
            let id = self.next_id;
            self.next_id += 1;
            self.send(format!(
                r#"{{"jsonrpc":"2.0","id":{id}{}"#,
                self.request_tail
            ))
            .await;
        }
    }

    /// A call, then its response.
    async fn recv_after_call(&mut self) -> String {
        self.call(1).await;
        self.recv().await
    }

    /// `n` calls in flight at once; returns when every response is in.
    async fn round_trips(&mut self, n: usize) {
        self.call(n).await;
        for _ in 0..n {
            black_box(self.recv().await);
        }
    }
}

fn dispatch(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut group = c.benchmark_group("dispatch/echo");
    for era in [Era::Legacy, Era::Modern] {
        let mut client = runtime.block_on(Client::start(era));
        for (label, in_flight) in [("1", 1), ("pipelined_64", PIPELINE)] {
            group.throughput(Throughput::Elements(in_flight as u64));
            group.bench_function(format!("{}/{label}", era.name()), |b| {
                b.iter_custom(|iters| measure(&runtime, &mut client, iters, in_flight))
            });
        }
    }
    group.finish();
}

/// Runs `iters` rounds of `in_flight` calls on `runtime`; the time they took.
fn measure(runtime: &Runtime, client: &mut Client, iters: u64, in_flight: usize) -> Duration {
    runtime.block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            client.round_trips(in_flight).await;
        }
        start.elapsed()
    })
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
