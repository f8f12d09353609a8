//! Three server instances (endpoints on their own loopback ports, in this
//! process) sharing one real Redis, as behind a round-robin load balancer
//! without affinity: what any instance sends a session reaches the
//! instance that holds its stream, and server-wide events reach every
//! instance's clients.

mod support;

use std::collections::BTreeMap;

use mcp_core::BoxFuture;
use mcp_http::EventStore;
use mcp_schema::ResourceContents;
use mcp_server::{Context, HandlerError, NoArguments, ResourceDef, Server, ToolDef};
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{
    Events, Instance, Killable, Redis, call, client, initialize, listen, post, resume, within,
};

const WATCHED: &str = "test://watched";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Announce {
    /// Who announces (in each message).
    source: String,
    /// How many numbered messages to send.
    count: u64,
}

/// A server whose `announce` tool sends numbered log messages to the
/// session (its standalone stream), not to the call's stream, and whose
/// `touch` tool tells subscribers that `test://watched` changed.
fn server() -> Server {
    let resource = mcp_schema::Resource::new(WATCHED, "Watched");
    Server::builder("redis-delivery", "1.0")
        .tool(ToolDef::new(
            "announce",
            "Sends numbered log messages to the session",
            |args: Announce, ctx: Context| async move {
                for n in 0..args.count {
                    let params = json!({"level": "info", "data": {"source": args.source, "n": n}});
                    assert!(ctx.notify_session("notifications/message", &params).await);
                }
                Ok::<_, HandlerError>("announced".to_owned())
            },
        ))
        .tool(ToolDef::new(
            "touch",
            "Changes test://watched",
            |_: NoArguments, ctx: Context| async move {
                ctx.server().notify_resource_updated(WATCHED);
                Ok::<_, HandlerError>("touched".to_owned())
            },
        ))
        .tool(ToolDef::new(
            "ask",
            "Asks the user's name (elicitation) and answers with it",
            |_: NoArguments, ctx: Context| async move {
                let params = serde_json::from_value(json!({
                    "message": "Your name?",
                    "requestedSchema": {"type": "object",
                        "properties": {"name": {"type": "string"}}, "required": ["name"]},
                }))
                .expect("a form");
                let answer = ctx.elicit("name", params).await?;
                Ok::<_, HandlerError>(format!(
                    "hello {}",
                    serde_json::to_value(&answer.content).expect("JSON")["name"]
                ))
            },
        ))
        .tool(ToolDef::new(
            "stall",
            "Logs three numbered messages on the call's stream, then never answers",
            |_: NoArguments, ctx: Context| async move {
                for n in 0..3 {
                    ctx.log(mcp_schema::LoggingLevel::Info, None, json!({"n": n}))
                        .await;
                }
                std::future::pending::<()>().await;
                Ok::<_, HandlerError>("never".to_owned())
            },
        ))
        .resource(ResourceDef::dynamic(resource, |_| async {
            Ok(vec![ResourceContents::text(WATCHED, None, "watched")])
        }))
        .build()
}

fn tool_call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
}

/// Sends the session the log message from source `end` (on its standalone
/// stream), through the instance at `url`: what comes before it came
/// before.
async fn send_end_marker(http: &reqwest::Client, url: &str, session: &str, id: i64) {
    let marker = tool_call(id, "announce", json!({"source": "end", "count": 1}));
    let (status, body) = support::reply(post(http, url, Some(session), &marker).await).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// What a client read of its standalone stream, over its connections.
#[derive(Default)]
struct Received {
    /// The numbers announced by each source, in arrival order.
    by_source: BTreeMap<String, Vec<u64>>,
    /// Resource updates, by URI.
    updated: Vec<String>,
    last_id: Option<String>,
}

impl Received {
    fn take(&mut self, event: mcp_http::sse::SseEvent) {
        if event.id.is_some() {
            self.last_id = event.id;
        }
        if event.data.is_empty() {
            return;
        }
        let message: Value = serde_json::from_str(&event.data).expect("JSON event");
        match message["method"].as_str() {
            Some("notifications/message") => {
                let data = &message["params"]["data"];
                self.by_source
                    .entry(data["source"].as_str().expect("source").to_owned())
                    .or_default()
                    .push(data["n"].as_u64().expect("numbered"));
            }
            Some("notifications/resources/updated") => self
                .updated
                .push(message["params"]["uri"].as_str().expect("uri").to_owned()),
            _ => panic!("unexpected on the standalone stream: {message}"),
        }
    }

    fn count(&self) -> usize {
        self.by_source.values().map(Vec::len).sum()
    }
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursors_from_one_instance_are_accepted_by_another_with_the_same_key() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let mut conn = redis.connect().await;
    let paged = || Server::builder("paged", "1.0").page_size(1);
    let paged = |key: &[u8]| {
        let server = paged()
            .tool(ToolDef::new(
                "one",
                "First",
                |_: NoArguments, _: Context| async { Ok::<_, HandlerError>("1".to_owned()) },
            ))
            .tool(ToolDef::new(
                "two",
                "Second",
                |_: NoArguments, _: Context| async { Ok::<_, HandlerError>("2".to_owned()) },
            ))
            .build();
        server.set_state_key(key);
        server
    };
    // The key every instance on this Redis shares, made by the first.
    let shared = mcp_redis::shared_state_key(&mut conn).await.expect("key");
    assert_eq!(shared.len(), 64);
    assert_eq!(
        mcp_redis::shared_state_key(&mut conn).await.expect("key"),
        shared,
        "the second instance gets the first one's key"
    );
    let a = Instance::start(paged(&shared), &conn, |c| c).await;
    let b = Instance::start(paged(&shared), &conn, |c| c).await;
    let c = Instance::start(paged(b"another key, not the shared one"), &conn, |c| c).await;
    let http = client();
    let session = initialize(&http, &a.url).await;

    let (status, first) = call(&http, &a.url, &session, 1, "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["result"]["tools"][0]["name"], "one", "{first}");
    let cursor = first["result"]["nextCursor"]
        .as_str()
        .expect("a cursor")
        .to_owned();

    let (status, second) = call(
        &http,
        &b.url,
        &session,
        2,
        "tools/list",
        json!({"cursor": cursor}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["result"]["tools"][0]["name"], "two", "{second}");

    let (_, refused) = call(
        &http,
        &c.url,
        &session,
        3,
        "tools/list",
        json!({"cursor": cursor}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().expect("a message");
    assert!(message.contains("cursor"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_posted_to_another_instance_reaches_the_request() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let a = Instance::start_delivering(server(), &redis, &conn).await;
    let b = Instance::start_delivering(server(), &redis, &conn).await;
    let http = client();
    // A client that can answer elicitations.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": support::VERSION,
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "redis-test", "version": "1.0"},
    }});
    let response = post(&http, &a.url, None, &init).await;
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .expect("ASCII")
        .to_owned();
    assert_eq!(support::reply(response).await.0, StatusCode::OK);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        post(&http, &a.url, Some(&session), &initialized)
            .await
            .status(),
        StatusCode::ACCEPTED
    );

    // The call runs on A, which asks the client on the call's stream.
    let response = post(
        &http,
        &a.url,
        Some(&session),
        &tool_call(1, "ask", json!({})),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut call = Events::new(response);
    let question = loop {
        let event = call.next().await.expect("the question");
        if !event.data.is_empty() {
            break serde_json::from_str::<Value>(&event.data).expect("JSON");
        }
    };
    assert_eq!(question["method"], "elicitation/create", "{question}");

    // An answer to a request nobody sent is handled as before, on B.
    let stray = json!({"jsonrpc": "2.0", "id": 987_654, "result": {"action": "cancel"}});
    let response = post(&http, &b.url, Some(&session), &stray).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);

    // The answer goes to B, which hands it to A.
    let answer = json!({"jsonrpc": "2.0", "id": question["id"],
        "result": {"action": "accept", "content": {"name": "Ada"}}});
    let response = post(&http, &b.url, Some(&session), &answer).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let result = loop {
        let event = call.next().await.expect("the call's response");
        if !event.data.is_empty() {
            let message: Value = serde_json::from_str(&event.data).expect("JSON");
            if message["id"] == 1 {
                break message;
            }
        }
    };
    assert_eq!(
        result["result"]["content"][0]["text"], "hello \"Ada\"",
        "{result}"
    );
}

/// A client that answers nothing (it declares no capabilities).
struct Nothing;

impl mcp_core::Service for Nothing {
    fn handle_request(
        &self,
        request: mcp_core::IncomingRequest,
        _: mcp_core::RequestContext,
    ) -> mcp_core::BoxFuture<'static, mcp_core::HandlerResult> {
        Box::pin(async move { Err(mcp_schema::ErrorObject::method_not_found(&request.method)) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_on_an_instance_that_dies_ends_with_an_error_and_its_stream_resumes_elsewhere() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let mut a = Killable::start(&redis, server);
    let b = Instance::start_delivering(server(), &redis, &conn).await;

    // Our own client, on A.
    let connected = within(
        "connect",
        mcp_http::client::connect(mcp_http::client::HttpClientConfig::new(&a.url)),
    )
    .await
    .expect("connect");
    let (transport, _handle) = connected.into_parts();
    let identity = mcp_core::ClientIdentity::new(
        mcp_schema::Implementation::new("redis-test", "1.0"),
        Default::default(),
    );
    let engine = mcp_core::serve(
        transport,
        std::sync::Arc::new(Nothing),
        mcp_core::SessionConfig::new(mcp_core::Role::Client(std::sync::Arc::new(identity)))
            .request_timeout(std::time::Duration::from_secs(600)),
    );
    let peer = engine.peer().clone();
    let init: Value = within(
        "initialize",
        peer.request(
            "initialize",
            &json!({"protocolVersion": support::VERSION, "capabilities": {},
                "clientInfo": {"name": "redis-test", "version": "1.0"}}),
            mcp_core::RequestOptions::new(),
        ),
    )
    .await
    .expect("initialize");
    assert_eq!(init["protocolVersion"], support::VERSION);
    peer.notify("notifications/initialized", &json!({}))
        .await
        .expect("initialized");

    // A call that A never answers, and a raw look at its stream.
    let call = tokio::spawn({
        let peer = peer.clone();
        async move {
            peer.request::<_, Value>(
                "tools/call",
                &json!({"name": "stall", "arguments": {}}),
                mcp_core::RequestOptions::new(),
            )
            .await
        }
    });
    // The same call in a session of raw HTTP, to look at its stream.
    let http = client();
    let session = initialize(&http, &a.url).await;
    let response = post(
        &http,
        &a.url,
        Some(&session),
        &tool_call(50, "stall", json!({})),
    )
    .await;
    let mut events = Events::new(response);
    let mut seen = Vec::new();
    let mut first_id = None;
    while seen.len() < 3 {
        let event = events.next().await.expect("the call's stream");
        if !event.data.is_empty() {
            let message: Value = serde_json::from_str(&event.data).expect("JSON");
            seen.push(message["params"]["data"]["n"].as_u64().expect("numbered"));
            if first_id.is_none() {
                first_id = event.id.clone();
            }
        }
    }
    let first_id = first_id.expect("event ids");

    a.kill();

    // The client's call ends with an error, not a hang.
    let outcome = within("the call after the instance died", call)
        .await
        .expect("the call's task");
    assert!(
        outcome.is_err(),
        "a call on a dead instance answered {outcome:?}"
    );
    // The raw stream breaks too.
    while events.next().await.is_some() {}

    // Resumed on B from the first message: the two stored after it, once;
    // then, as no instance runs the call any more, an error answering it,
    // and the stream ends.
    let response = resume(&http, &b.url, &session, &first_id).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut resumed = Events::new(response);
    let mut again = Vec::new();
    let mut answers = Vec::new();
    while let Some(event) = resumed.next().await {
        if !event.data.is_empty() {
            let message: Value = serde_json::from_str(&event.data).expect("JSON");
            match message.get("id") {
                Some(_) => answers.push(message),
                None => again.push(message["params"]["data"]["n"].as_u64().expect("numbered")),
            }
        }
    }
    assert_eq!(seen, [0, 1, 2]);
    assert_eq!(
        again,
        [1, 2],
        "what was stored after the first message, once"
    );
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["id"], 50, "{answers:?}");
    let message = answers[0]["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("stopped before answering"), "{answers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_without_priming_events_is_fed_from_the_start() {
    const OLDER: &str = "2025-06-18";
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let a = Instance::start_delivering(server(), &redis, &conn).await;
    let b = Instance::start_delivering(server(), &redis, &conn).await;
    let http = client();
    let with = |request: reqwest::RequestBuilder, session: Option<&str>| {
        let request = request
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", OLDER);
        match session {
            Some(session) => request.header("mcp-session-id", session),
            None => request,
        }
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": OLDER, "capabilities": {},
        "clientInfo": {"name": "redis-test", "version": "1.0"}}});
    let response = within(
        "initialize",
        with(http.post(&a.url), None).body(init.to_string()).send(),
    )
    .await
    .expect("POST");
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .expect("ASCII")
        .to_owned();
    assert_eq!(support::reply(response).await.0, StatusCode::OK);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = within(
        "initialized",
        with(http.post(&a.url), Some(&session))
            .body(initialized.to_string())
            .send(),
    )
    .await
    .expect("POST");
    assert_eq!(response.status(), StatusCode::ACCEPTED);

    let response = within("GET", with(http.get(&a.url), Some(&session)).send())
        .await
        .expect("GET");
    assert_eq!(response.status(), StatusCode::OK);
    let mut events = Events::new(response);
    // Sent as soon as the stream is open: none is lost.
    let body = tool_call(1, "announce", json!({"source": "B", "count": 50}));
    let response = within(
        "announce",
        with(http.post(&b.url), Some(&session))
            .body(body.to_string())
            .send(),
    )
    .await
    .expect("POST");
    assert_eq!(support::reply(response).await.0, StatusCode::OK);
    let mut got = Received::default();
    while got.count() < 50 {
        let event = events.next().await.expect("the stream goes on");
        assert!(!event.data.is_empty(), "no priming event in {OLDER}");
        got.take(event);
    }
    assert_eq!(got.by_source["B"], (0..50).collect::<Vec<u64>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_stream_ends_when_replaced_or_when_its_session_ends() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let a = Instance::start_delivering(server(), &redis, &conn).await;
    let http = client();
    let session = initialize(&http, &a.url).await;
    let response = listen(&http, &a.url, &session).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut first = Events::new(response);
    let priming = first.next().await.expect("priming event");
    let from = priming.id.expect("an id");

    // Resumed on a second connection: the first one ends.
    let response = resume(&http, &a.url, &session, &from).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut second = Events::new(response);
    assert!(first.next().await.is_none(), "the replaced stream goes on");

    // The session ends: so does its stream.
    let deleted = within(
        "DELETE",
        http.delete(&a.url)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", support::VERSION)
            .send(),
    )
    .await
    .expect("DELETE");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    while let Some(event) = second.next().await {
        assert!(event.data.is_empty(), "unexpected: {event:?}");
    }
}

/// A 2026-07-28 `tools/call` of `name` on `url`, with these extra params;
/// the status and the JSON body.
async fn modern_call(
    http: &reqwest::Client,
    url: &str,
    name: &str,
    extra: Value,
) -> (StatusCode, Value) {
    let mut params = json!({"name": name, "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "redis-test", "version": "1.0"},
    }});
    if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
        params.extend(extra);
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .body(body.to_string());
    support::reply(within("POST", request.send()).await.expect("POST")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_state_from_one_instance_is_accepted_by_another_with_the_same_key() {
    const TOOL: &str = "test_input_required_result_elicitation";
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let keyed = |key: &[u8]| {
        let server = mcp_builtin::everything::server();
        server.set_state_key(key);
        server
    };
    let shared = b"the key every instance of this deployment has";
    let a = Instance::start(keyed(shared), &conn, |c| c).await;
    let b = Instance::start(keyed(shared), &conn, |c| c).await;
    let c = Instance::start(keyed(b"some other instance's own key"), &conn, |c| c).await;
    let http = client();

    let (status, first) = modern_call(&http, &a.url, TOOL, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let retry = json!({
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": first["result"]["requestState"],
    });

    let (status, done) = modern_call(&http, &b.url, TOOL, retry.clone()).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Ada!",
        "{done}"
    );

    let (_, refused) = modern_call(&http, &c.url, TOOL, retry).await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("requestState"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bus_comes_back_after_a_redis_outage() {
    let Some(mut redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let a = Instance::start_delivering(server(), &redis, &conn).await;
    let b = Instance::start_delivering(server(), &redis, &conn).await;
    let http = client();

    // A 2026-07-28 listen stream on A, for test://watched.
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "redis-test", "version": "1.0"},
    });
    let body = json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {"notifications": {"resourceSubscriptions": [WATCHED]}, "_meta": meta}});
    let request = http
        .post(&a.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(body.to_string());
    let response = within("listen POST", request.send()).await.expect("POST");
    assert_eq!(response.status(), StatusCode::OK);
    let mut listen = Events::new(response);

    redis.restart();

    // Changes made on B reach A again once both are back on Redis.
    let mut attempts = 0;
    loop {
        attempts += 1;
        assert!(attempts <= 100, "no update reached A after the outage");
        let (status, body) = modern_call(&http, &b.url, "touch", json!({})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let mut updated = false;
        while let Ok(event) =
            tokio::time::timeout(std::time::Duration::from_millis(200), listen.next()).await
        {
            let event = event.expect("the listen stream goes on");
            updated |= event.data.contains("notifications/resources/updated");
        }
        if updated {
            break;
        }
    }
}
