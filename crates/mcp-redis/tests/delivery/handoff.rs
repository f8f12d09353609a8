//! What one instance hands another: cursors, answers, a dying instance's
//! calls, and streams fed from the start or ended.

use super::*;

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
