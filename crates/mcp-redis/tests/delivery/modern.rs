//! The modern era's request state across instances, and the bus after a
//! Redis outage.

use super::*;

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
