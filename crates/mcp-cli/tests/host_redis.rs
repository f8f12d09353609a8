//! `mcp host --http ADDR --redis URL`: two real hosts sharing a real
//! `redis-server`, each with its own `mcp serve everything` child over
//! stdio. A legacy client's answer to an elicitation the first host asked
//! it, posted to the second host, reaches the first, and the call ends
//! with the answer. A resource update raised by the upstream of one host
//! reaches a subscriber whose stream is open on another, also through a
//! host started after the subscription was made (legacy or 2026-07-28).
//! A task started through one host is followed, awaited and listed
//! through the other. A person's grant for the session, made through one
//! host, holds for the same session on the other.

#![cfg(unix)]

mod support;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use support::{MCP, Redis};

/// The legacy revision the client speaks.
const LEGACY: &str = "2025-11-25";

/// A config file in a folder of its own, removed at the end.
struct ConfigDir(PathBuf);

impl ConfigDir {
    /// `mcp serve everything` over stdio, its names as they are.
    fn everything(name: &str) -> ConfigDir {
        Self::everything_in_era(name, "auto")
    }

    /// [`ConfigDir::everything`], spoken to in protocol era `era`.
    fn everything_in_era(name: &str, era: &str) -> ConfigDir {
        let dir = std::env::temp_dir().join(format!("mcp-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = json!({"mcpServers": {"everything": {
            "command": MCP, "args": ["serve", "everything"], "namespace": "", "era": era}}});
        std::fs::write(dir.join("servers.json"), config.to_string()).unwrap();
        ConfigDir(dir)
    }

    fn file(&self) -> PathBuf {
        self.0.join("servers.json")
    }
}

impl Drop for ConfigDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `mcp host --config FILE --http 127.0.0.1:0 --redis URL`, killed (with
/// its children, which see their stdin close) when dropped; the child and
/// its endpoint URL.
async fn host(config: &ConfigDir, redis: &str) -> (tokio::process::Child, String) {
    support::spawn_endpoint(
        tokio::process::Command::new(MCP)
            .args(["host", "--config"])
            .arg(config.file())
            .args(["--http", "127.0.0.1:0", "--redis", redis]),
    )
    .await
}

async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} took more than 30 s"))
}

async fn post(url: &str, session: Option<&str>, body: Value) -> reqwest::Response {
    support::post_rpc(url, session, LEGACY, &body).await
}

/// The JSON-RPC messages of an SSE response, one at a time.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    fn new(response: reqwest::Response) -> Self {
        Events {
            response,
            buffer: String::new(),
        }
    }

    /// The next message with data; `None` when the stream ends.
    async fn next(&mut self) -> Option<Value> {
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if !data.is_empty() && data.iter().any(|d| !d.is_empty()) {
                    return Some(serde_json::from_str(&data.join("\n")).expect("JSON data"));
                }
            }
            let chunk = self.response.chunk().await.expect("the stream reads")?;
            self.buffer
                .push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
        }
    }
}

#[tokio::test]
async fn an_answer_posted_to_another_host_reaches_the_host_that_asked() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let config = ConfigDir::everything("host-redis-relay");
    let (_a, a) = host(&config, &redis.url).await;
    let (_b, b) = host(&config, &redis.url).await;

    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "cli-test", "version": "1"}}});
    let response = post(&a, None, initialize).await;
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&a, Some(&session), initialized).await.status(), 202);

    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "test_elicitation", "arguments": {"message": "who are you?"}}});
    let response = post(&a, Some(&session), call).await;
    assert_eq!(response.status(), 200);
    let mut events = Events::new(response);
    let ask = within("the elicitation", events.next())
        .await
        .expect("an elicitation on the call's stream");
    assert_eq!(ask["method"], "elicitation/create", "{ask}");

    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {
        "action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}});
    let posted = post(&b, Some(&session), answer).await;
    assert_eq!(posted.status(), 202, "the answer posted to host B");

    let result = within("the tool's result", events.next())
        .await
        .expect("the result on the call's stream");
    assert_eq!(result["id"], 2, "{result}");
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {result}"));
    assert!(
        text.contains("accept") && text.contains("ada") && text.contains("ada@example.com"),
        "{text}"
    );
}

/// Initializes a legacy session on the host at `url`: its id.
async fn open_session(url: &str) -> String {
    support::open_session(url, LEGACY).await
}

/// Calls `update_watched_resource` through `url` until `stream` gets the
/// resource's update (the other hosts hear of a subscription through
/// Redis, not at once), at most 40 times.
async fn update_until_heard(url: &str, session: &str, stream: &mut Events) -> Value {
    for id in 100..140 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "update_watched_resource", "arguments": {}}});
        let response = post(url, Some(session), call).await;
        assert_eq!(response.status(), 200);
        let _ = response.bytes().await;
        if let Ok(update) = tokio::time::timeout(Duration::from_millis(500), stream.next()).await {
            return update.expect("the subscriber's stream goes on");
        }
    }
    panic!("no resources/updated reached the subscriber's stream after 40 changes");
}

#[tokio::test]
async fn an_update_through_any_host_reaches_a_subscriber_on_another() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let config = ConfigDir::everything("host-redis-updates");
    let (_a, a) = host(&config, &redis.url).await;
    let (_b, b) = host(&config, &redis.url).await;

    // Subscribed through A, its stream open on A.
    let subscriber = open_session(&a).await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
        "params": {"uri": "test://watched-resource"}});
    let response = post(&a, Some(&subscriber), subscribe).await;
    assert_eq!(response.status(), 200);
    let request = reqwest::Client::new()
        .get(&a)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", LEGACY)
        .header("mcp-session-id", &subscriber);
    let response = within("the GET stream", request.send()).await.expect("GET");
    assert_eq!(response.status(), 200);
    let mut stream = Events::new(response);

    // Changed through B, whose own upstream raises the update.
    let producer = open_session(&b).await;
    let update = update_until_heard(&b, &producer, &mut stream).await;
    assert_eq!(
        update["method"], "notifications/resources/updated",
        "{update}"
    );
    assert_eq!(
        update["params"]["uri"], "test://watched-resource",
        "{update}"
    );

    // A host started now subscribes its upstream to what is subscribed.
    let (_c, c) = host(&config, &redis.url).await;
    let update = update_until_heard(&c, &producer, &mut stream).await;
    assert_eq!(
        update["method"], "notifications/resources/updated",
        "{update}"
    );

    // A 2026-07-28 listen stream on A hears of a change made through B.
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "cli-test", "version": "1"},
    });
    let listen = json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {"notifications": {"resourceSubscriptions": ["test://watched-resource"]},
            "_meta": meta}});
    let request = reqwest::Client::new()
        .post(&a)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(listen.to_string());
    let response = within("the listen POST", request.send())
        .await
        .expect("POST");
    assert_eq!(response.status(), 200);
    let mut modern = Events::new(response);
    let ack = within("the acknowledgement", modern.next())
        .await
        .expect("an acknowledgement");
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    let update = update_until_heard(&b, &producer, &mut modern).await;
    assert_eq!(
        update["method"], "notifications/resources/updated",
        "{update}"
    );
    assert_eq!(
        update["params"]["uri"], "test://watched-resource",
        "{update}"
    );
    assert_eq!(
        update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1",
        "{update}"
    );

    // A host started after the listen stream subscribes its upstream to
    // what the stream asked for (the legacy subscription is gone first,
    // so that it is not what the new host finds).
    let unsubscribe = json!({"jsonrpc": "2.0", "id": 7, "method": "resources/unsubscribe",
        "params": {"uri": "test://watched-resource"}});
    let gone = answer(&a, &subscriber, unsubscribe).await;
    assert!(gone.get("result").is_some(), "{gone}");
    let (_d, d) = host(&config, &redis.url).await;
    let update = update_until_heard(&d, &producer, &mut modern).await;
    assert_eq!(
        update["params"]["uri"], "test://watched-resource",
        "{update}"
    );
}

/// The answer to a request posted in `session` to the host at `url`.
async fn answer(url: &str, session: &str, body: Value) -> Value {
    let response = post(url, Some(session), body).await;
    assert_eq!(response.status(), 200);
    let streamed = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !streamed {
        return within("a JSON answer", response.json())
            .await
            .expect("JSON");
    }
    let mut events = Events::new(response);
    loop {
        let message = within("an answer", events.next())
            .await
            .expect("the answer on the stream");
        if message.get("id").is_some() {
            return message;
        }
    }
}

#[tokio::test]
async fn a_task_started_through_one_host_is_followed_through_another() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    // The upstream speaks 2026-07-28: each host bridges the legacy
    // client's task to the upstream's.
    let config = ConfigDir::everything("host-redis-tasks");
    let (_a, a) = host(&config, &redis.url).await;
    let (_b, b) = host(&config, &redis.url).await;
    let session = open_session(&a).await;

    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "slow_compute", "arguments": {"seconds": 1, "label": "hosted"},
        "task": {"ttl": 60000}}});
    let started = answer(&a, &session, call).await;
    let task = started["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {started}"))
        .to_owned();

    let get = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get",
        "params": {"taskId": task}});
    let got = answer(&b, &session, get).await;
    assert_eq!(got["result"]["taskId"], task.as_str(), "{got}");
    let result = json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/result",
        "params": {"taskId": task}});
    let done = answer(&b, &session, result).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "hosted: computed in 1 s",
        "{done}"
    );
    let list = json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/list", "params": {}});
    let listed = answer(&b, &session, list).await;
    let ids: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("no list: {listed}"))
        .iter()
        .filter_map(|t| t["taskId"].as_str())
        .collect();
    assert_eq!(ids, [task.as_str()], "{listed}");
}

/// `mcp host --redis` with a policy that asks before `echo`, the client
/// the only approver, and a guard store of its own in `config`'s folder.
async fn asking_host(
    config: &ConfigDir,
    redis: &str,
    store: &str,
) -> (tokio::process::Child, String) {
    let settings = config.0.join(format!("{store}.toml"));
    std::fs::write(
        &settings,
        format!(
            "[guard]\napprovers = [\"client\"]\nstore = \"{store}.db\"\n\
             [[policy]]\ndecision = \"ask\"\ntool = \"echo\"\n"
        ),
    )
    .unwrap();
    support::spawn_endpoint(
        tokio::process::Command::new(MCP)
            .args(["host", "--config"])
            .arg(config.file())
            .arg("--settings")
            .arg(&settings)
            .args(["--http", "127.0.0.1:0", "--redis", redis]),
    )
    .await
}

/// Calls `echo` on the session through `url`; answers an approval form
/// with `decision` (posted to `url`): the call's final answer, and
/// whether a form was asked.
async fn echo_answering(url: &str, session: &str, id: u64, decision: &str) -> (Value, bool) {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "hi"}}});
    let response = post(url, Some(session), call).await;
    assert_eq!(response.status(), 200);
    let streamed = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !streamed {
        let answer: Value = within("a JSON answer", response.json())
            .await
            .expect("JSON");
        return (answer, false);
    }
    let mut events = Events::new(response);
    let mut asked = false;
    loop {
        let message = within("the call's stream", events.next())
            .await
            .expect("the call's answer");
        if message["method"] == "elicitation/create" {
            asked = true;
            let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                "action": "accept", "content": {"decision": decision}}});
            assert_eq!(post(url, Some(session), answer).await.status(), 202);
        } else if message["id"] == id {
            return (message, asked);
        }
    }
}

#[tokio::test]
async fn a_grant_for_the_session_made_through_one_host_holds_on_another() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let config = ConfigDir::everything("host-redis-grants");
    let (_a, a) = asking_host(&config, &redis.url, "a").await;
    let (_b, b) = asking_host(&config, &redis.url, "b").await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "cli-test", "version": "1"}}});
    let response = post(&a, None, initialize).await;
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&a, Some(&session), initialized).await.status(), 202);

    let (done, asked) = echo_answering(&a, &session, 2, "allow-session").await;
    assert!(asked, "the person is asked first: {done}");
    assert_eq!(done["result"]["content"][0]["text"], "hi", "{done}");
    // Through the other host, once the grant reached it: not asked.
    for id in 3..40 {
        let (done, asked) = echo_answering(&b, &session, id, "deny").await;
        if !asked {
            assert_eq!(done["result"]["content"][0]["text"], "hi", "{done}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the grant for the session never reached the other host");
}
