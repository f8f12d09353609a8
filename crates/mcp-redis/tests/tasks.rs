//! Tasks across instances on a real `redis-server`: a task runs where the
//! call that started it arrived, and is reached through every instance.

mod support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{Instance, Killable, Redis, call, client, initialize, within};

/// A legacy `tools/call` of `slow_compute` as a task; the task's id.
async fn start_task(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    id: i64,
    seconds: f64,
    label: &str,
) -> String {
    let (status, body) = call(
        http,
        url,
        session,
        id,
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": seconds, "label": label},
            "task": {"ttl": 60_000}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task created: {body}"))
        .to_owned()
}

/// `method` (`tasks/get`, `tasks/result`, `tasks/cancel`) about `task`,
/// posted to `url` in `session`: the JSON-RPC answer.
async fn about(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    id: i64,
    method: &str,
    task: &str,
) -> Value {
    call(http, url, session, id, method, json!({"taskId": task}))
        .await
        .1
}

/// The ids of the tasks a `tasks/list` answer lists.
fn listed(body: &Value) -> Vec<String> {
    body["result"]["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("no task list: {body}"))
        .iter()
        .map(|t| t["taskId"].as_str().expect("taskId").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_reached_through_any_instance_and_one_whose_instance_died_ends_with_an_error() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let everything = mcp_builtin::everything::server;
    let a = Instance::start_delivering(everything(), &redis, &conn).await;
    let b = Instance::start_delivering(everything(), &redis, &conn).await;
    let mut c = Killable::start(&redis, everything);
    let http = client();
    let session = initialize(&http, &a.url).await;

    // A task started on A, followed on B and C.
    let first = start_task(&http, &a.url, &session, 1, 1.0, "first").await;
    let got = about(&http, &b.url, &session, 2, "tasks/get", &first).await;
    assert_eq!(got["result"]["taskId"], first.as_str(), "{got}");
    let result = about(&http, &c.url, &session, 3, "tasks/result", &first).await;
    assert_eq!(
        result["result"]["content"][0]["text"], "first: computed in 1 s",
        "{result}"
    );
    let got = about(&http, &b.url, &session, 4, "tasks/get", &first).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");

    // A second on B, awaited through C meanwhile, cancelled through A;
    // the list, asked anywhere, has both.
    let second = start_task(&http, &b.url, &session, 5, 60.0, "second").await;
    let awaited = tokio::spawn({
        let (http, url, session, second) =
            (http.clone(), c.url.clone(), session.clone(), second.clone());
        async move { about(&http, &url, &session, 50, "tasks/result", &second).await }
    });
    let (_, list) = call(&http, &a.url, &session, 6, "tasks/list", json!({})).await;
    let mut ids = listed(&list);
    ids.sort();
    let mut both = vec![first.clone(), second.clone()];
    both.sort();
    assert_eq!(ids, both, "{list}");
    let cancelled = about(&http, &a.url, &session, 7, "tasks/cancel", &second).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let got = about(&http, &c.url, &session, 8, "tasks/get", &second).await;
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
    let ended = within("the awaited result of a cancelled task", awaited)
        .await
        .expect("the waiting call");
    assert!(ended.get("error").is_some(), "{ended}");

    // Another session sees none of them, wherever it asks.
    let other = initialize(&http, &b.url).await;
    let got = about(&http, &b.url, &other, 9, "tasks/get", &first).await;
    assert_eq!(got["error"]["code"], -32602, "{got}");
    let (_, list) = call(&http, &a.url, &other, 10, "tasks/list", json!({})).await;
    assert!(listed(&list).is_empty(), "{list}");

    // A third on C, whose instance dies: asking about it ends at once
    // with an error saying so, and the list goes on without it.
    let third = start_task(&http, &c.url, &session, 11, 60.0, "third").await;
    let waiting = tokio::spawn({
        let (http, url, session, third) =
            (http.clone(), a.url.clone(), session.clone(), third.clone());
        async move {
            call(
                &http,
                &url,
                &session,
                12,
                "tasks/result",
                json!({"taskId": third}),
            )
            .await
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    c.kill();
    let (_, ended) = within("tasks/result of a dead instance's task", waiting)
        .await
        .expect("the waiting call");
    let message = ended["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("gone"), "{ended}");
    let got = about(&http, &b.url, &session, 13, "tasks/get", &third).await;
    assert!(
        got["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("gone"),
        "{got}"
    );
    let (_, list) = call(&http, &b.url, &session, 14, "tasks/list", json!({})).await;
    let mut ids = listed(&list);
    ids.sort();
    assert_eq!(ids, both, "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_outlives_its_sessions_idle_copy_on_the_instance_running_it() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let idle = std::time::Duration::from_millis(300);
    let url = redis.url();
    let start = || {
        Instance::start_delivering_tweaked(
            mcp_builtin::everything::server(),
            &url,
            &conn,
            move |c| c.session_idle_timeout(idle),
        )
    };
    let a = start().await;
    let b = start().await;
    let http = client();
    let session = initialize(&http, &a.url).await;
    let task = start_task(&http, &a.url, &session, 1, 1.5, "patient").await;

    // The session is used on B only (pings), so its copy on A leaves A
    // while the task runs there.
    let mut id = 2;
    let deadline = tokio::time::Instant::now() + support::WAIT;
    while a.endpoint.session_count() > 0 {
        assert!(tokio::time::Instant::now() < deadline, "A kept its copy");
        let (_, pong) = call(&http, &b.url, &session, id, "ping", json!({})).await;
        assert!(pong.get("result").is_some(), "{pong}");
        id += 1;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let done = about(&http, &b.url, &session, 30, "tasks/result", &task).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "patient: computed in 1.5 s",
        "{done}"
    );
}

/// A 2026-07-28 request of `method` on `url`, declaring the tasks
/// extension; the JSON body.
async fn modern(http: &reqwest::Client, url: &str, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "redis-test", "version": "1.0"},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = params["name"].as_str().or(params["taskId"].as_str()) {
        request = request.header("mcp-name", name);
    }
    let response = within("POST", request.body(body.to_string()).send())
        .await
        .expect("POST");
    let (status, body) = support::reply(response).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_task_is_reached_through_any_instance() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let everything = mcp_builtin::everything::server;
    let a = Instance::start_delivering(everything(), &redis, &conn).await;
    let b = Instance::start_delivering(everything(), &redis, &conn).await;
    let http = client();

    let started = modern(
        &http,
        &a.url,
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 0.5, "label": "modern"}}),
    )
    .await;
    assert_eq!(started["result"]["resultType"], "task", "{started}");
    let task = started["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();

    let deadline = tokio::time::Instant::now() + support::WAIT;
    loop {
        let got = modern(&http, &b.url, "tasks/get", json!({"taskId": task})).await;
        assert_eq!(got["result"]["taskId"], task.as_str(), "{got}");
        if got["result"]["status"] == "completed" {
            let text = got["result"]["result"]["content"][0]["text"].clone();
            assert_eq!(text, "modern: computed in 0.5 s", "{got}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never completed: {got}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
