//! The standalone stream and resource updates across instances, and answers
//! that wait for the updates raised before them.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_stream_gets_what_every_instance_sends_once_and_in_order() {
    const EACH: u64 = 600;
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let a = Instance::start_delivering(server(), &redis, &conn).await;
    let b = Instance::start_delivering(server(), &redis, &conn).await;
    let c = Instance::start_delivering(server(), &redis, &conn).await;
    let http = client();
    let session = initialize(&http, &a.url).await;

    let response = listen(&http, &a.url, &session).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut events = Events::new(response);
    let mut got = Received::default();
    // The priming event: an id to resume from.
    got.take(events.next().await.expect("priming event"));
    assert!(got.last_id.is_some());

    // Announcements through POSTs on B and C at once.
    let announce = |url: String, source: &'static str, id: i64| {
        let (http, session) = (http.clone(), session.clone());
        tokio::spawn(async move {
            let body = tool_call(id, "announce", json!({"source": source, "count": EACH}));
            let (status, body) =
                support::reply(post(&http, &url, Some(&session), &body).await).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body["result"]["content"][0]["text"], "announced", "{body}");
        })
    };
    let on_b = announce(b.url.clone(), "B", 1);
    let on_c = announce(c.url.clone(), "C", 2);

    // Part on A, then the connection is cut.
    while got.count() < 300 {
        got.take(events.next().await.expect("the stream goes on"));
    }
    drop(events);
    within("announce on B", on_b).await.expect("B announced");
    within("announce on C", on_c).await.expect("C announced");

    // Resumed on C, which holds no stream of the session and sent some of it.
    let from = got.last_id.clone().expect("an event id");
    let response = resume(&http, &c.url, &session, &from).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut events = Events::new(response);
    while got.count() < 2 * EACH as usize {
        got.take(events.next().await.expect("the resumed stream goes on"));
    }

    // One more, from B, arrives live on C's stream: nothing after it.
    send_end_marker(&http, &b.url, &session, 3).await;
    while !got.by_source.contains_key("end") {
        got.take(events.next().await.expect("the resumed stream goes on"));
    }
    let expected: Vec<u64> = (0..EACH).collect();
    assert_eq!(
        got.by_source["B"], expected,
        "B's messages lost, repeated or reordered"
    );
    assert_eq!(
        got.by_source["C"], expected,
        "C's messages lost, repeated or reordered"
    );
    assert_eq!(got.by_source["end"], [0]);
    assert!(got.updated.is_empty());
    drop((a, b, c));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_update_on_one_instance_reaches_subscribers_on_the_others() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let a = Instance::start_delivering(server(), &redis, &conn).await;
    let b = Instance::start_delivering(server(), &redis, &conn).await;
    let c = Instance::start_delivering(server(), &redis, &conn).await;
    let http = client();

    // A legacy session with its stream open on A; B holds the session too
    // (it served a request of it); it subscribes through C.
    let session = initialize(&http, &a.url).await;
    let response = listen(&http, &a.url, &session).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = Events::new(response);
    let mut got = Received::default();
    got.take(stream.next().await.expect("priming event"));
    let (status, body) = call(&http, &b.url, &session, 1, "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = call(
        &http,
        &c.url,
        &session,
        2,
        "resources/subscribe",
        json!({"uri": WATCHED}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // A hears of the subscription (through the bus, so not at once): a
    // change made on C then reaches the stream on A.
    let other = initialize(&http, &c.url).await;
    let mut attempts = 0;
    loop {
        attempts += 1;
        assert!(
            attempts <= 100,
            "A never followed the subscription made on C"
        );
        let (status, body) = call(
            &http,
            &c.url,
            &other,
            9,
            "tools/call",
            json!({"name": "touch", "arguments": {}}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let before = got.updated.len();
        while let Ok(event) =
            tokio::time::timeout(std::time::Duration::from_millis(200), stream.next()).await
        {
            got.take(event.expect("the stream goes on"));
        }
        if got.updated.len() > before {
            break;
        }
    }
    let followed = got.updated.len();

    // A 2026-07-28 listen stream on B.
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "redis-test", "version": "1.0"},
    });
    let body = json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {"notifications": {"resourceSubscriptions": [WATCHED]}, "_meta": meta}});
    let request = http
        .post(&b.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(body.to_string());
    let response = within("listen POST", request.send()).await.expect("POST");
    assert_eq!(response.status(), StatusCode::OK);
    let mut modern = Events::new(response);
    let ack = loop {
        let event = modern.next().await.expect("acknowledgement");
        if !event.data.is_empty() {
            break serde_json::from_str::<Value>(&event.data).expect("JSON");
        }
    };
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );

    // The change, in another session, on C; then another on B.
    for (url, id) in [(&c.url, 3), (&b.url, 4)] {
        let (status, body) = call(
            &http,
            url,
            &other,
            id,
            "tools/call",
            json!({"name": "touch", "arguments": {}}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    for _ in 0..2 {
        let update = loop {
            let event = modern.next().await.expect("an update on the listen stream");
            if !event.data.is_empty() {
                break serde_json::from_str::<Value>(&event.data).expect("JSON");
            }
        };
        assert_eq!(
            update["method"], "notifications/resources/updated",
            "{update}"
        );
        assert_eq!(update["params"]["uri"], WATCHED, "{update}");
        assert_eq!(
            update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1",
            "{update}"
        );
    }
    while got.updated.len() < followed + 2 {
        got.take(stream.next().await.expect("an update on the legacy stream"));
    }

    // A marker sent after both: no copy of either update came meanwhile.
    send_end_marker(&http, &b.url, &session, 5).await;
    while !got.by_source.contains_key("end") {
        got.take(stream.next().await.expect("the stream goes on"));
    }
    assert_eq!(got.updated.len(), followed + 2, "each update once");
    assert!(got.updated.iter().all(|uri| uri == WATCHED));
    drop((a, b, c));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_updates_raised_while_no_instance_holds_the_stream_wait_for_its_resume() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let a = Instance::start_delivering(server(), &redis, &conn).await;
    let b = Instance::start_delivering(server(), &redis, &conn).await;
    let c = Instance::start_delivering(server(), &redis, &conn).await;
    let http = client();
    let touch = |url: String, session: String, id: i64| {
        let http = http.clone();
        async move {
            let arguments = json!({"name": "touch", "arguments": {}});
            let (status, body) = call(&http, &url, &session, id, "tools/call", arguments).await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    };

    // Subscribed on A, its stream open on A; one update made on B arrives.
    let session = initialize(&http, &a.url).await;
    let subscribe = json!({"uri": WATCHED});
    let (status, body) = call(&http, &a.url, &session, 1, "resources/subscribe", subscribe).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut stream = Events::new(listen(&http, &a.url, &session).await);
    let mut got = Received::default();
    got.take(stream.next().await.expect("priming event"));
    let producer = initialize(&http, &b.url).await;
    touch(b.url.clone(), producer.clone(), 10).await;
    within("the first update", async {
        while got.updated.is_empty() {
            got.take(stream.next().await.expect("the first update"));
        }
    })
    .await;

    // A goes, and its stream with it: no instance holds the stream while
    // five more updates are made on B and C.
    drop(stream);
    drop(a);
    for id in 11..16 {
        let url = if id % 2 == 0 { &b.url } else { &c.url };
        touch(url.clone(), producer.clone(), id).await;
    }

    // Resumed on C: the five, then one made while it is open, each once.
    let last_id = got.last_id.clone().expect("an event id");
    let response = resume(&http, &c.url, &session, &last_id).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = Events::new(response);
    within(
        "the updates made while no instance held the stream",
        async {
            while got.updated.len() < 6 {
                got.take(stream.next().await.expect("the updates made meanwhile"));
            }
        },
    )
    .await;
    touch(b.url.clone(), producer.clone(), 16).await;
    within("the update made after the resume", async {
        while got.updated.len() < 7 {
            got.take(
                stream
                    .next()
                    .await
                    .expect("the update made after the resume"),
            );
        }
    })
    .await;

    // Unsubscribed (on B): a later update is not stored for the session,
    // and the index forgets it.
    let unsubscribe = json!({"uri": WATCHED});
    let (status, body) = call(
        &http,
        &b.url,
        &session,
        2,
        "resources/unsubscribe",
        unsubscribe,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    touch(c.url.clone(), producer.clone(), 17).await;
    send_end_marker(&http, &c.url, &session, 3).await;
    within("the marker", async {
        while !got.by_source.contains_key("end") {
            got.take(stream.next().await.expect("the stream goes on"));
        }
    })
    .await;
    assert_eq!(
        got.updated.len(),
        7,
        "each update once, none after unsubscribing"
    );
    let index: Vec<String> = redis::cmd("SMEMBERS")
        .arg(format!("mcp:subs:{WATCHED}"))
        .query_async(&mut conn.clone())
        .await
        .expect("SMEMBERS");
    assert!(index.is_empty(), "the index still lists {index:?}");
    drop((b, c));
}

/// An event store whose appends each take `delay` longer.
struct SlowAppends {
    inner: std::sync::Arc<dyn EventStore>,
    delay: std::time::Duration,
}

impl EventStore for SlowAppends {
    fn append(
        &self,
        session: &str,
        stream: &str,
        message: std::sync::Arc<str>,
    ) -> BoxFuture<'_, Result<mcp_http::EventId, mcp_http::EventStoreError>> {
        let (session, stream) = (session.to_owned(), stream.to_owned());
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.inner.append(&session, &stream, message).await
        })
    }

    fn replay_after(
        &self,
        session: &str,
        last_event_id: &str,
    ) -> BoxFuture<'_, Result<mcp_http::Replay, mcp_http::ReplayError>> {
        self.inner.replay_after(session, last_event_id)
    }

    fn drop_session(&self, session: &str) -> BoxFuture<'_, ()> {
        self.inner.drop_session(session)
    }

    fn stats(&self) -> mcp_http::EventStoreStats {
        self.inner.stats()
    }
}

/// The answer of a call that raised a resource update goes out only once
/// the update is stored for the subscribers: a client that has the answer
/// finds the update on any instance, even if the one that raised it died
/// at once. Here the store takes half a second longer for each update.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_waits_until_the_updates_raised_before_it_are_stored() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let slow = |events| {
        std::sync::Arc::new(SlowAppends {
            inner: events,
            delay: std::time::Duration::from_millis(500),
        }) as std::sync::Arc<dyn EventStore>
    };
    let a = Instance::start_delivering_with(server(), &redis.url(), &conn, |c| c, slow).await;
    let http = client();
    let subscriber = initialize(&http, &a.url).await;
    let subscribe = json!({"uri": WATCHED});
    let (status, body) = call(
        &http,
        &a.url,
        &subscriber,
        1,
        "resources/subscribe",
        subscribe,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut stream = Events::new(listen(&http, &a.url, &subscriber).await);
    let primed = stream
        .next()
        .await
        .expect("priming event")
        .id
        .expect("an id");

    let producer = initialize(&http, &a.url).await;
    for id in 10..13 {
        let arguments = json!({"name": "touch", "arguments": {}});
        let (status, body) = call(&http, &a.url, &producer, id, "tools/call", arguments).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let stored = mcp_redis::RedisEventStore::new(conn.clone())
            .replay_after(&subscriber, &primed)
            .await
            .expect("the subscriber's stream replays");
        let updates = stored
            .events
            .iter()
            .filter(|(_, text)| text.contains("notifications/resources/updated"))
            .count();
        assert_eq!(
            updates,
            (id - 9) as usize,
            "the answer of call {id} came before its update was stored"
        );
    }
}
