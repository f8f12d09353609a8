//! Shared helpers of the Redis tests: a real `redis-server` child on a
//! free loopback port, server instances sharing it, and a small HTTP
//! client for legacy sessions and their SSE streams.

#![allow(dead_code)]

pub mod needs;

use std::future::Future;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use mcp_http::sse::{SseEvent, SseParser};
use mcp_http::{HttpConfig, McpEndpoint};
use mcp_redis::{ConnectionManager, RedisEventStore, RedisSessionStore};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// The bound of every single wait in these tests.
pub const WAIT: Duration = Duration::from_secs(20);

/// `fut`, or a panic naming `what` after [`WAIT`].
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out after {WAIT:?}: {what}"))
}

/// A loopback port free now, below the kernel's ephemeral range: the
/// ports other processes get for binding port 0, or for their outgoing
/// connections, come from that range, so none of them can take this one
/// before the server started on it binds it.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher as _, Hasher as _};
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768)
        .max(12000);
    for _ in 0..500 {
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let port = 10000 + (random % u64::from(low - 10000)) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port below the ephemeral range")
}

/// A `redis-server` of this test's own, killed when dropped.
pub struct Redis {
    pub port: u16,
    child: Option<Child>,
}

impl Redis {
    /// Starts one on a free port and waits until it answers PING; `None`
    /// where the machine has no `redis-server` and the test is skipped
    /// (see [`needs`]).
    #[track_caller]
    pub fn start_or_skip() -> Option<Redis> {
        if !needs::REDIS.met() {
            return None;
        }
        let port = free_port();
        let mut redis = Redis { port, child: None };
        redis.launch();
        Some(redis)
    }

    fn launch(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start redis-server: {e}"));
        self.child = Some(child);
        let deadline = Instant::now() + WAIT;
        while !self.answers_ping() {
            assert!(
                Instant::now() < deadline,
                "redis-server on port {} did not answer PING",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn answers_ping(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let mut reply = [0u8; 7];
        stream.write_all(b"PING\r\n").is_ok()
            && stream.read_exact(&mut reply).is_ok()
            && &reply == b"+PONG\r\n"
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Kills it (an outage).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port, empty.
    pub fn restart(&mut self) {
        self.kill();
        self.launch();
    }

    /// A connection for the test itself.
    pub async fn connect(&self) -> ConnectionManager {
        mcp_redis::connect(&self.url()).await.expect("connect")
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One server instance on its own loopback port, with both stores on
/// Redis.
pub struct Instance {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    pub endpoint: Arc<McpEndpoint>,
    shutdown: Option<oneshot::Sender<()>>,
    /// Its end of the instances' bus, where it has one.
    pub bus: Option<mcp_redis::RedisBus>,
}

impl Instance {
    /// Serves `server` as `mcp serve --redis` does: standalone streams
    /// follow the shared event store, and server-wide events go to every
    /// instance through the bus.
    pub async fn start_delivering(
        server: mcp_server::Server,
        redis: &Redis,
        conn: &ConnectionManager,
    ) -> Instance {
        Self::start_delivering_at(server, &redis.url(), conn).await
    }

    /// [`Instance::start_delivering`] on the Redis at `url`.
    pub async fn start_delivering_at(
        server: mcp_server::Server,
        url: &str,
        conn: &ConnectionManager,
    ) -> Instance {
        Self::start_delivering_tweaked(server, url, conn, |c| c).await
    }

    /// [`Instance::start_delivering_at`] with the loopback defaults
    /// changed by `tweak`.
    pub async fn start_delivering_tweaked(
        server: mcp_server::Server,
        url: &str,
        conn: &ConnectionManager,
        tweak: impl FnOnce(HttpConfig) -> HttpConfig,
    ) -> Instance {
        Self::start_delivering_with(server, url, conn, tweak, |events| events).await
    }

    /// [`Instance::start_delivering_tweaked`], storing the resource
    /// updates raised here in the event store as `wrap` changes it.
    pub async fn start_delivering_with(
        server: mcp_server::Server,
        url: &str,
        conn: &ConnectionManager,
        tweak: impl FnOnce(HttpConfig) -> HttpConfig,
        wrap: impl FnOnce(Arc<dyn mcp_http::EventStore>) -> Arc<dyn mcp_http::EventStore>,
    ) -> Instance {
        let client = mcp_redis::Client::open(url).expect("Redis URL");
        let bus = mcp_redis::RedisBus::join(client.clone(), conn.clone())
            .await
            .expect("join the bus");
        let events: Arc<dyn mcp_http::EventStore> =
            Arc::new(RedisEventStore::new(conn.clone()).follow_with(client));
        let updates = mcp_http::fanout::UpdateQueue::start(
            wrap(Arc::clone(&events)),
            Arc::new(RedisSessionStore::new(conn.clone())),
        );
        let answers_wait_for = updates.clone();
        let publisher = bus.clone();
        server.set_broadcast(move |event| {
            if let mcp_server::ServerEvent::ResourceUpdated { uri } = event {
                updates.push(uri);
            }
            publisher.publish_event(serde_json::to_string(event).expect("event as JSON"))
        });
        let receiver = server.clone();
        bus.on_event(move |text| {
            if let Ok(event) = serde_json::from_str(text) {
                receiver.raise_here(&event);
            }
        });
        let relay = Arc::new(bus.clone());
        let tasks = Arc::new(bus.clone());
        let mut instance = Instance::start(server, conn, move |c| {
            tweak(
                c.event_store(events)
                    .response_relay(relay)
                    .task_relay(tasks)
                    .stored_updates(answers_wait_for),
            )
        })
        .await;
        bus.answer_tasks_with(&instance.endpoint);
        let endpoint = Arc::clone(&instance.endpoint);
        bus.on_forwarded(move |session, message| {
            let (endpoint, session, message) = (
                Arc::clone(&endpoint),
                session.to_owned(),
                message.to_owned(),
            );
            tokio::spawn(async move { endpoint.take_forwarded(&session, &message).await });
        });
        let endpoint = Arc::clone(&instance.endpoint);
        bus.on_session_changed(move |session| {
            let (endpoint, session) = (Arc::clone(&endpoint), session.to_owned());
            tokio::spawn(async move { endpoint.refresh_session(&session).await });
        });
        instance.bus = Some(bus);
        instance
    }

    /// Serves `server`, with the loopback defaults changed by `tweak`,
    /// sharing sessions and events through `redis`.
    pub async fn start(
        server: mcp_server::Server,
        redis: &ConnectionManager,
        tweak: impl FnOnce(HttpConfig) -> HttpConfig,
    ) -> Instance {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("address").port();
        let config = HttpConfig::loopback(port)
            .event_store(Arc::new(RedisEventStore::new(redis.clone())))
            .session_store(Arc::new(RedisSessionStore::new(redis.clone())));
        let config = tweak(config);
        let endpoint = McpEndpoint::new(Arc::new(server.clone()), server.session_config(), config);
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(mcp_http::serve(
            listener,
            Arc::clone(&endpoint),
            async move {
                let _ = rx.await;
            },
        ));
        Instance {
            url: format!("http://127.0.0.1:{port}/mcp"),
            endpoint,
            shutdown: Some(tx),
            bus: None,
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// A plain HTTP client (no proxies, no overall timeout: SSE bodies are
/// long-lived; every wait is bounded by the tests).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(WAIT)
        .build()
        .expect("client")
}

/// The revision the sessions of these tests speak.
pub const VERSION: &str = "2025-11-25";

/// A POST of `body` to `url`, in `session` if given.
pub async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
) -> reqwest::Response {
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    within("POST", request.send()).await.expect("POST sent")
}

/// The status and JSON body of a plain reply (or the last message of an
/// SSE reply).
pub async fn reply(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let is_sse = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let text = within("body", response.text()).await.expect("body");
    if is_sse {
        let events = SseParser::new().feed(text.as_bytes());
        let last = events
            .iter()
            .rev()
            .find(|e| !e.data.is_empty())
            .unwrap_or_else(|| panic!("an SSE reply with no message: {text}"));
        return (
            status,
            serde_json::from_str(&last.data).expect("JSON event"),
        );
    }
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
    };
    (status, body)
}

/// A request in `session`, answered.
pub async fn call(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    id: i64,
    method: &str,
    params: Value,
) -> (StatusCode, Value) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    reply(post(http, url, Some(session), &body).await).await
}

/// Starts a legacy session on `url`: initialize, then
/// notifications/initialized; its id.
pub async fn initialize(http: &reqwest::Client, url: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION,
        "capabilities": {},
        "clientInfo": {"name": "redis-test", "version": "1.0"},
    }});
    let response = post(http, url, None, &body).await;
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().expect("ASCII").to_owned());
    let (status, body) = reply(response).await;
    assert_eq!(status, StatusCode::OK, "initialize: {body}");
    let session = session.expect("initialize answer has Mcp-Session-Id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = post(http, url, Some(&session), &initialized).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    session
}

/// An SSE response read event by event.
pub struct Events {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    parser: SseParser,
    ready: std::collections::VecDeque<SseEvent>,
}

impl Events {
    pub fn new(response: reqwest::Response) -> Events {
        Events {
            body: response.bytes_stream().boxed(),
            parser: SseParser::new(),
            ready: Default::default(),
        }
    }

    /// The next event; `None` when the stream ends (or breaks).
    pub async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            match within("an SSE event", self.body.next()).await {
                Some(Ok(chunk)) => self.ready.extend(self.parser.feed(&chunk)),
                _ => return None,
            }
        }
    }
}

/// A GET opening `session`'s standalone stream.
pub async fn listen(http: &reqwest::Client, url: &str, session: &str) -> reqwest::Response {
    let request = http
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", session);
    within("GET", request.send()).await.expect("GET sent")
}

/// A GET resuming `session`'s stream after `last_event_id`.
pub async fn resume(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    last_event_id: &str,
) -> reqwest::Response {
    let request = http
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", session)
        .header("last-event-id", last_event_id);
    within("GET", request.send()).await.expect("GET sent")
}

/// Polls `check` (every 50 ms, for at most [`WAIT`]) until it holds.
pub async fn eventually<F: Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not within {WAIT:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An instance on a runtime of its own, in a thread: [`Killable::kill`]
/// drops the runtime, which ends every task and closes every socket of
/// the instance at once, as a killed process would.
pub struct Killable {
    pub url: String,
    kill: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Killable {
    /// Starts one serving what `make` builds, delivering through `redis`.
    pub fn start(redis: &Redis, make: fn() -> mcp_server::Server) -> Killable {
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (kill, killed) = std::sync::mpsc::channel::<()>();
        let redis_url = redis.url();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("runtime");
            let instance = runtime.block_on(async {
                let conn = mcp_redis::connect(&redis_url).await.expect("connect");
                Instance::start_delivering_at(make(), &redis_url, &conn).await
            });
            url_tx.send(instance.url.clone()).expect("URL sent");
            let _ = killed.recv();
            std::mem::forget(instance);
            runtime.shutdown_background();
        });
        let url = url_rx.recv().expect("the instance started");
        Killable {
            url,
            kill: Some(kill),
            thread: Some(thread),
        }
    }

    /// Kills it.
    pub fn kill(&mut self) {
        drop(self.kill.take());
        if let Some(thread) = self.thread.take() {
            thread.join().expect("the instance's thread");
        }
    }
}
