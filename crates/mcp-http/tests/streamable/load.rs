//! Sessions isolated from each other under load, and graceful shutdown.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn isolation_under_load() {
    const SESSIONS: usize = 300;
    const CALLS: usize = 3;
    let server = std::sync::Arc::new(TestServer::start(|c| c).await);
    let start = Instant::now();
    let run = async {
        let tasks: Vec<_> = (0..SESSIONS)
            .map(|i| {
                let server = std::sync::Arc::clone(&server);
                tokio::spawn(async move {
                    let session = server.initialize(V11).await;
                    let mut texts = Vec::new();
                    for k in 0..CALLS {
                        let text = format!("session {i} call {k} {}", session.id);
                        let result = server
                            .call_tool(&session, "echo", json!({"text": text}))
                            .await;
                        texts.push((text, result["content"][0]["text"].clone()));
                    }
                    (session, texts)
                })
            })
            .collect();
        let mut sessions = Vec::new();
        for task in tasks {
            let (session, texts) = task.await.expect("session task panicked");
            for (sent, got) in texts {
                assert_eq!(got, json!(sent), "a session got someone else's answer");
            }
            sessions.push(session);
        }
        sessions
    };
    let sessions = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("300 sessions took more than 60 s");
    let mut ids: Vec<_> = sessions.iter().map(|s| s.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), SESSIONS, "session ids repeat");
    assert_eq!(server.endpoint.session_count(), SESSIONS);

    let deletes = futures::future::join_all(sessions.iter().map(|s| server.delete(&s.id))).await;
    assert!(
        deletes.iter().all(|s| *s == StatusCode::NO_CONTENT),
        "{deletes:?}"
    );
    assert_eq!(server.endpoint.session_count(), 0);
    assert!(start.elapsed() < Duration::from_secs(60));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown() {
    let mut server = TestServer::start(|c| c).await;
    let session = server.initialize(V11).await;

    let response = within("GET", session.headers(server.get()).send())
        .await
        .expect("GET");
    let mut standalone = SseStream::new(response);
    standalone.next().await.expect("priming event");

    // An in-flight slow request (about 5 s) on an SSE stream...
    let response = within(
        "POST",
        session
            .headers(server.post())
            .body(
                json!({"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": {
                    "name": "slow_task", "arguments": {"steps": 50, "step_ms": 100},
                    "_meta": {"progressToken": 1}}})
                .to_string(),
            )
            .send(),
    )
    .await
    .expect("POST");
    let mut slow = SseStream::new(response);
    slow.next_message().await.expect("first progress");
    // ...and one (about 1 s) waiting for a plain JSON answer.
    let pending = tokio::spawn({
        let request = session.headers(server.post()).body(
            json!({"jsonrpc": "2.0", "id": 78, "method": "tools/call", "params": {
                "name": "slow_task", "arguments": {"steps": 10, "step_ms": 100}}})
            .to_string(),
        );
        async move { request.send().await.map(|r| r.status()) }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;

    // serve() returns once the request in flight has finished, well before
    // the shutdown deadline.
    let result = server.shutdown(Duration::from_secs(8)).await;
    assert!(result.is_ok(), "serve() failed: {result:?}");

    // The standalone stream ended.
    let end = standalone
        .next_within(Duration::from_secs(2))
        .await
        .expect("the standalone stream did not end at shutdown");
    assert_eq!(end, None, "an event instead of the end");
    // The slow request's stream ended (maybe after a few more events).
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match slow.next_within(left).await {
            Ok(None) => break,
            Ok(Some(_)) => continue,
            Err(_) => panic!("the slow request's stream did not end at shutdown"),
        }
    }
    // The JSON request was answered or cut off, not left hanging.
    // The JSON request in flight was let finish: answered, not cut off.
    let outcome = tokio::time::timeout(Duration::from_secs(2), pending)
        .await
        .expect("the pending JSON request hangs after shutdown");
    let status = outcome.expect("request task panicked").expect("answered");
    assert_eq!(status, StatusCode::OK);
    // The bodies ended cleanly, not with a transport error.
    assert_eq!(standalone.error, None, "standalone stream");
    assert_eq!(slow.error, None, "slow request stream");
}
