//! A session its transport drives (`DirectSession`).

use super::*;

// ---------------------------------------------------------------------------
// A session its transport drives (DirectSession)
// ---------------------------------------------------------------------------

/// Keeps what a direct session sends.
#[derive(Default)]
struct Collected(std::sync::Mutex<Vec<OutboundFrame>>);

impl Collected {
    fn take(&self) -> Vec<OutboundFrame> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl FrameSink for Collected {
    fn send(&self, frame: OutboundFrame) -> BoxFuture<'_, Result<(), SinkClosed>> {
        self.0.lock().unwrap().push(frame);
        Box::pin(std::future::ready(Ok(())))
    }
}

/// A direct session made by `make`, what it sends, and the service's events.
type Direct = (
    DirectSession,
    Arc<Collected>,
    mpsc::UnboundedReceiver<String>,
);

fn direct_made_by(
    make: fn(Arc<dyn FrameSink>, Arc<dyn Service>, SessionConfig) -> DirectSession,
) -> Direct {
    let (events_tx, events) = mpsc::unbounded_channel();
    let sent = Arc::new(Collected::default());
    let session = make(
        Arc::clone(&sent) as Arc<dyn FrameSink>,
        Arc::new(TestService { events: events_tx }),
        SessionConfig::new(Role::Server(Arc::new(identity()))),
    );
    (session, sent, events)
}

fn direct() -> Direct {
    direct_made_by(DirectSession::new)
}

/// Waits for a request's task, which the session's close ends.
async fn ends_once_closed(running: tokio::task::JoinHandle<()>) {
    tokio::time::timeout(WAIT, running)
        .await
        .expect("the request ends once the session closes")
        .unwrap();
}

async fn next_event(events: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(WAIT, events.recv())
        .await
        .expect("an event in time")
        .expect("the service is alive")
}

fn text(value: Value) -> InboundFrame {
    InboundFrame::Text(value.to_string())
}

#[tokio::test]
async fn direct_session_answers_within_the_callers_future() {
    let (session, sent, _events) = direct();
    session
        .handle(text(modern_call(1, "echo", json!({ "a": 1 }))))
        .await;
    let frames = sent.take();
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0].kind, FrameKind::Response);
    assert_eq!(frames[0].related, Some(jsonrpc::RequestId::Number(1)));
    let response: Value = serde_json::from_str(&frames[0].text).unwrap();
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
    assert_eq!(response["result"]["echo"], json!({ "a": 1 }), "{response}");

    // A legacy handshake on the same kind of session, then a call.
    let init = json!({
        "jsonrpc": "2.0", "id": 2, "method": "initialize",
        "params": { "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": { "name": "t", "version": "1" } }
    });
    session.handle(text(init)).await;
    session
        .handle(text(
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        ))
        .await;
    session.handle(text(call(3, "echo", json!({})))).await;
    let ids: Vec<Value> = sent
        .take()
        .iter()
        .map(|f| serde_json::from_str::<Value>(&f.text).unwrap())
        .inspect(|r| assert!(r.get("result").is_some(), "{r}"))
        .map(|r| r["id"].clone())
        .collect();
    assert_eq!(ids, [json!(2), json!(3)]);
    assert_eq!(
        session.peer().negotiated().and_then(|n| n.revision),
        Some(ProtocolVersion::V2025_06_18)
    );
}

#[tokio::test]
async fn direct_session_abandons_dropped_requests_and_cancels_on_close() {
    let (session, sent, mut events) = direct();
    // A request whose future is dropped unfinished gets no response, and
    // its id is free again.
    let pending = session.handle(text(modern_call(7, "slow", json!({}))));
    assert!(futures::FutureExt::now_or_never(pending).is_none());
    assert_eq!(next_event(&mut events).await, "slow:started:7");
    session
        .handle(text(modern_call(7, "echo", json!({}))))
        .await;
    let frames = sent.take();
    assert_eq!(frames.len(), 1, "{frames:?}");
    let response: Value = serde_json::from_str(&frames[0].text).unwrap();
    assert_eq!(response["id"], 7);
    assert!(response.get("result").is_some(), "{response}");

    // Closing the session cancels what still runs; it is not answered.
    let running = tokio::spawn(session.handle(text(modern_call(8, "slow", json!({})))));
    loop {
        if next_event(&mut events).await == "slow:started:8" {
            break;
        }
    }
    session.close();
    ends_once_closed(running).await;
    assert_eq!(next_event(&mut events).await, "slow:cancelled:8");
    assert!(session.peer().is_closed());
    assert!(
        sent.take().iter().all(|f| f.kind == FrameKind::Ended),
        "a cancelled request is not answered"
    );
}

#[tokio::test]
async fn a_session_for_one_message_answers_one_request_and_cancels_it_on_close() {
    let responses = |sent: &Collected| -> Vec<Value> {
        sent.take()
            .iter()
            .filter(|f| f.kind == FrameKind::Response)
            .map(|f| serde_json::from_str(&f.text).unwrap())
            .collect()
    };
    let (session, sent, _events) = direct_made_by(DirectSession::for_one_message);
    session
        .handle(text(modern_call(1, "echo", json!({ "a": 1 }))))
        .await;
    let answered = responses(&sent);
    assert_eq!(answered.len(), 1, "{answered:?}");
    assert_eq!(answered[0]["result"]["echo"], json!({ "a": 1 }));
    session
        .handle(text(modern_call(2, "echo", json!({}))))
        .await;
    let refused = responses(&sent);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["id"], 2);
    assert_eq!(refused[0]["error"]["code"], -32600, "{refused:?}");

    // Its request is cancelled when the session closes, and not answered.
    let (session, sent, mut events) = direct_made_by(DirectSession::for_one_message);
    let running = tokio::spawn(session.handle(text(modern_call(3, "slow", json!({})))));
    assert_eq!(next_event(&mut events).await, "slow:started:3");
    session.close();
    ends_once_closed(running).await;
    assert_eq!(next_event(&mut events).await, "slow:cancelled:3");
    assert!(
        responses(&sent).is_empty(),
        "a cancelled request is not answered"
    );
}

#[tokio::test]
async fn a_frame_the_transport_parsed_is_handled_with_its_extensions() {
    let (to_server, inbound) = mpsc::channel(8);
    let (outbound, mut from_server) = mpsc::channel::<OutboundFrame>(8);
    let (events, _) = mpsc::unbounded_channel();
    let _session = serve(
        Transport {
            inbound: inbound.into(),
            outbound,
            flushed: None,
        },
        Arc::new(TestService { events }),
        SessionConfig::new(Role::Server(Arc::new(identity()))),
    );
    let send = |message: Value, extensions: Option<Arc<Extensions>>| {
        let frame = jsonrpc::Message::parse_frame(&message.to_string()).expect("a message");
        to_server.send(InboundFrame::Parsed(frame, extensions))
    };
    let mut recv = async || -> Value {
        let frame = tokio::time::timeout(WAIT, from_server.recv())
            .await
            .expect("an answer in time")
            .expect("the server is running");
        serde_json::from_str(&frame.text).expect("JSON")
    };
    let version = ProtocolVersion::V2025_06_18.as_str();
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "parsed", "version": "1"}}}),
        None,
    )
    .await
    .unwrap();
    assert_eq!(recv().await["result"]["protocolVersion"], version);
    send(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        None,
    )
    .await
    .unwrap();
    let extensions = Arc::new(Extensions::default());
    extensions.insert(Caller("legacy HTTP+SSE"));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "caller"}}),
        Some(extensions),
    )
    .await
    .unwrap();
    let answer = recv().await;
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["result"]["caller"], "legacy HTTP+SSE", "{answer}");
}
