//! Two engines talking to each other in memory, a client role and a server
//! role: outgoing requests with timeouts that progress extends up to a hard
//! maximum, cancellation when the caller gives up, and progress rate limits.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::{
    BoxFuture, ClientIdentity, HandlerResult, IncomingRequest, Negotiated, Peer, RequestContext,
    RequestError, RequestOptions, Role, ServerIdentity, Service, SessionConfig, Transport, serve,
};
use mcp_schema::jsonrpc::{self, Notification};
use mcp_schema::{
    ClientCapabilities, ErrorObject, Implementation, InitializeResult, ListChangedCapability,
    ProtocolVersion, ServerCapabilities,
};
use serde_json::{Value, json};

/// A server whose `work` tool runs `steps` steps of `step_ms`, reporting
/// progress after each, and whose `burst` tool reports `n` times at once.
struct Worker {
    cancelled: Arc<AtomicUsize>,
    sent_bursts: Arc<Mutex<Vec<bool>>>,
}

impl Service for Worker {
    fn handle_request(
        &self,
        request: IncomingRequest,
        ctx: RequestContext,
    ) -> BoxFuture<'static, HandlerResult> {
        let cancelled = Arc::clone(&self.cancelled);
        let bursts = Arc::clone(&self.sent_bursts);
        Box::pin(async move {
            let args: Value = jsonrpc::from_params(request.params.as_deref())?;
            match args["name"].as_str() {
                Some("work") => {
                    let steps = args["arguments"]["steps"].as_u64().unwrap_or(1);
                    let step =
                        Duration::from_millis(args["arguments"]["step_ms"].as_u64().unwrap_or(10));
                    // Counts the handler as cancelled if it ends early, whether
                    // it noticed the token or the engine dropped it.
                    let mut unfinished = Unfinished {
                        cancelled,
                        finished: false,
                    };
                    for done in 1..=steps {
                        tokio::select! {
                            _ = tokio::time::sleep(step) => {}
                            _ = ctx.cancellation.cancelled() => return Err(ErrorObject::internal("cancelled")),
                        }
                        ctx.progress
                            .report(done as f64, Some(steps as f64), None)
                            .await;
                    }
                    unfinished.finished = true;
                    jsonrpc::to_raw(&json!({"content": [], "done": steps}))
                        .map_err(ErrorObject::internal)
                }
                Some("burst") => {
                    let n = args["arguments"]["n"].as_u64().unwrap_or(1);
                    let mut sent = Vec::new();
                    for i in 1..=n {
                        sent.push(ctx.progress.report(i as f64, None, None).await);
                    }
                    *bursts.lock().unwrap() = sent;
                    jsonrpc::to_raw(&json!({"content": []})).map_err(ErrorObject::internal)
                }
                _ => Err(ErrorObject::invalid_params("unknown tool")),
            }
        })
    }
}

struct Unfinished {
    cancelled: Arc<AtomicUsize>,
    finished: bool,
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if !self.finished {
            self.cancelled.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// A client with no features of its own.
struct Nothing;

impl Service for Nothing {
    fn handle_request(
        &self,
        request: IncomingRequest,
        _: RequestContext,
    ) -> BoxFuture<'static, HandlerResult> {
        Box::pin(async move { Err(ErrorObject::method_not_found(&request.method)) })
    }

    fn handle_notification(&self, _: Notification, _: Peer) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

struct Pair {
    client: Peer,
    cancelled: Arc<AtomicUsize>,
    bursts: Arc<Mutex<Vec<bool>>>,
}

/// A server and a client engine wired together, with the legacy handshake
/// done through the client's peer.
async fn connect(client_config: impl FnOnce(SessionConfig) -> SessionConfig) -> Pair {
    let (server_side, client_side) = Transport::pair();
    let cancelled = Arc::new(AtomicUsize::new(0));
    let bursts = Arc::new(Mutex::new(Vec::new()));
    let capabilities = ServerCapabilities {
        tools: Some(ListChangedCapability::default()),
        ..Default::default()
    };
    let server_identity = ServerIdentity::new(Implementation::new("worker", "1"), capabilities);
    let worker = Worker {
        cancelled: Arc::clone(&cancelled),
        sent_bursts: Arc::clone(&bursts),
    };
    let server = serve(
        server_side,
        Arc::new(worker),
        SessionConfig::new(Role::Server(Arc::new(server_identity))),
    );
    // The server session lives as long as the transport does.
    tokio::spawn(server.wait());

    let client_identity = ClientIdentity::new(
        Implementation::new("client", "1"),
        ClientCapabilities::default(),
    );
    let config = client_config(SessionConfig::new(Role::Client(Arc::new(
        client_identity.clone(),
    ))));
    let client = serve(client_side, Arc::new(Nothing), config);
    let peer = client.peer().clone();
    let init: InitializeResult = peer
        .request(
            "initialize",
            &json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "client", "version": "1"}}),
            RequestOptions::new(),
        )
        .await
        .expect("initialize");
    peer.set_negotiated(Negotiated::from_initialize(
        ProtocolVersion::V2025_11_25,
        &client_identity,
        &init,
    ));
    peer.notify("notifications/initialized", &json!({}))
        .await
        .unwrap();
    Pair {
        client: peer,
        cancelled,
        bursts,
    }
}

fn work(steps: u64, step_ms: u64) -> Value {
    json!({"name": "work", "arguments": {"steps": steps, "step_ms": step_ms}})
}

#[tokio::test]
async fn progress_extends_the_timeout() {
    let pair = connect(|c| c).await;
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let options = RequestOptions::new()
        .timeout(Duration::from_millis(300))
        .on_progress(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        });
    // Six steps of 100 ms: 600 ms in all, never 300 ms without progress.
    let result: Value = pair
        .client
        .request("tools/call", &work(6, 100), options)
        .await
        .expect("progress kept it alive");
    assert_eq!(result["done"], 6);
    assert_eq!(
        seen.load(Ordering::SeqCst),
        6,
        "every progress update reached the callback"
    );
}

#[tokio::test]
async fn without_progress_the_timeout_fires_and_the_server_is_told() {
    let pair = connect(|c| c).await;
    let options = RequestOptions::new().timeout(Duration::from_millis(200));
    let err = pair
        .client
        .request::<_, Value>("tools/call", &work(10, 100), options)
        .await
        .unwrap_err();
    assert_eq!(err, RequestError::Timeout);
    wait_for(
        || pair.cancelled.load(Ordering::SeqCst) == 1,
        "the server's handler to be cancelled",
    )
    .await;
}

#[tokio::test]
async fn the_hard_maximum_holds_whatever_the_progress() {
    let pair = connect(|c| c).await;
    let options = RequestOptions::new()
        .timeout(Duration::from_millis(300))
        .max_total_timeout(Duration::from_millis(400))
        .on_progress(|_| {});
    let started = tokio::time::Instant::now();
    let err = pair
        .client
        .request::<_, Value>("tools/call", &work(20, 100), options)
        .await
        .unwrap_err();
    assert_eq!(err, RequestError::Timeout);
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "gave up near the maximum"
    );
    wait_for(
        || pair.cancelled.load(Ordering::SeqCst) == 1,
        "the server's handler to be cancelled",
    )
    .await;
}

#[tokio::test]
async fn session_default_timeout_applies() {
    let pair = connect(|c| c.request_timeout(Duration::from_millis(150))).await;
    let err = pair
        .client
        .request::<_, Value>("tools/call", &work(10, 100), RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err, RequestError::Timeout);
}

#[tokio::test]
async fn dropping_the_call_cancels_it_on_the_server() {
    let pair = connect(|c| c).await;
    let params = work(50, 100);
    let call = pair
        .client
        .request::<_, Value>("tools/call", &params, RequestOptions::new());
    // Give up after a while: the future is dropped mid-flight.
    assert!(
        tokio::time::timeout(Duration::from_millis(150), call)
            .await
            .is_err()
    );
    wait_for(
        || pair.cancelled.load(Ordering::SeqCst) == 1,
        "the server's handler to be cancelled",
    )
    .await;
    // The session goes on.
    let ok: Value = pair
        .client
        .request("tools/call", &work(1, 1), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(ok["done"], 1);
}

#[tokio::test]
async fn progress_floods_are_thinned_out() {
    let pair = connect(|c| c).await;
    let received = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&received);
    let options = RequestOptions::new().on_progress(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let _: Value = pair
        .client
        .request(
            "tools/call",
            &json!({"name": "burst", "arguments": {"n": 500}}),
            options,
        )
        .await
        .unwrap();
    let sent = pair.bursts.lock().unwrap().clone();
    let sent_count = sent.iter().filter(|s| **s).count();
    assert!(sent[0], "the first update always goes out");
    assert!(
        sent_count < 100,
        "a burst of 500 is thinned out, {sent_count} were sent"
    );
    assert_eq!(
        received.load(Ordering::SeqCst),
        sent_count,
        "what was sent arrived, before the response"
    );
}

#[tokio::test]
async fn closing_fails_what_is_pending() {
    let pair = connect(|c| c).await;
    let client = pair.client.clone();
    let pending = tokio::spawn(async move {
        client
            .request::<_, Value>("tools/call", &work(50, 100), RequestOptions::new())
            .await
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    pair.client.close();
    let result = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .expect("ended")
        .unwrap();
    assert_eq!(result.unwrap_err(), RequestError::ConnectionClosed);
    let after = pair
        .client
        .request::<_, Value>("tools/call", &work(1, 1), RequestOptions::new())
        .await;
    assert_eq!(after.unwrap_err(), RequestError::ConnectionClosed);
}

async fn wait_for(condition: impl Fn() -> bool, what: &str) {
    for _ in 0..250 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}
