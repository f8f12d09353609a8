//! Messages between the instances that share one Redis, on its pub/sub:
//! server-wide events every instance re-raises for its own clients, and
//! clients' answers to requests another instance sent.
//!
//! Channels (with the default prefix `mcp:`): `mcp:bus:server` carries
//! server-wide events, each prefixed by the id of the instance that raised
//! it (`ID payload`), so that instance does not raise it twice;
//! `mcp:bus:instance:ID` carries to instance `ID` the answers other
//! instances received to its requests (`SESSION`, a newline, the message). An instance
//! records each request it sends a client under `mcp:req:{SESSION}:REQ`
//! (its id, kept an hour), where the instance that gets the answer
//! finds where to forward it; `mcp:bus:session` carries the ids of
//! sessions whose settings (log level, subscriptions) an instance changed
//! (`ID session`), so the others holding a copy reload them.
//!
//! Tasks (see [`mcp_http::task_relay`]): `mcp:task:ID` names the instance
//! that runs task `ID` (kept for the task's time to live), and
//! `mcp:task-runners:SCOPE` the instances that run tasks of a session or
//! caller. A request about a task goes to its runner's channel as a JSON
//! envelope (`{"kind":"ask",...}`), and the answer comes back on the
//! asker's (`{"kind":"reply",...}`); the asker checks every two seconds
//! that the runner is still subscribed, so a request to an instance that
//! died ends with an error rather than waiting for ever. One
//! dedicated pub/sub connection per instance receives; it reconnects and
//! subscribes again on its own after an outage (what was published
//! meanwhile is lost, as pub/sub keeps nothing). Publishing goes through
//! the shared [`ConnectionManager`], in order, from one task.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::StreamExt as _;
use redis::aio::ConnectionManager;
use tokio::sync::{mpsc, oneshot};

use mcp_core::BoxFuture;
use mcp_http::relay::ResponseRelay;
use mcp_http::task_relay::{RelayedRequest, TaskRelay};
use mcp_schema::ErrorObject;
use mcp_schema::jsonrpc::RequestId;
use serde::{Deserialize, Serialize};

use crate::DEFAULT_PREFIX;
use mcp_core::sync::MutexExt as _;

/// What an instance does with a server-wide event another one raised.
type EventHandler = Arc<dyn Fn(&str) + Send + Sync>;

/// What an instance does with a session another one changed.
type SessionHandler = Arc<dyn Fn(&str) + Send + Sync>;

/// What an instance does with an answer forwarded to it: session, message.
type ForwardHandler = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// How an instance answers a request about a task it runs.
type TaskHandler = Arc<dyn Fn(RelayedRequest) -> BoxFuture<'static, String> + Send + Sync>;

/// The askers waiting for other instances' answers, by envelope id.
type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<String>>>>;

/// How many times, [`GONE_CHECK_INTERVAL`] apart, an instance must be off
/// the bus to be taken for gone: longer in all than the receiver's longest
/// wait before reconnecting ([`MAX_RECONNECT_DELAY`]).
const GONE_CHECKS: u32 = 3;
const GONE_CHECK_INTERVAL: Duration = Duration::from_millis(1500);

/// The longest wait of the receiver before it reconnects to the bus.
const MAX_RECONNECT_DELAY: Duration = Duration::from_secs(2);

/// How often an asker checks that the instance it waits on is alive.
const LIVENESS_CHECK: Duration = Duration::from_secs(2);

/// How long a request sent to a client is remembered for its answer.
const REQUEST_TTL: Duration = Duration::from_secs(60 * 60);

/// This instance's end of the bus. Cheap to clone; the receiving task
/// ends when the last clone is dropped.
#[derive(Clone)]
pub struct RedisBus {
    inner: Arc<Inner>,
}

struct Inner {
    /// A random id, unique to this instance.
    instance: String,
    redis: ConnectionManager,
    prefix: String,
    on_forward: Arc<OnceLock<ForwardHandler>>,
    on_session: Arc<OnceLock<SessionHandler>>,
    on_task: Arc<OnceLock<TaskHandler>>,
    waiting: Waiting,
    sessions_channel: String,
    /// Server-wide events to publish, in order.
    outgoing: mpsc::UnboundedSender<String>,
    on_event: Arc<OnceLock<EventHandler>>,
    /// Stops the receiving task.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl std::fmt::Debug for RedisBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBus")
            .field("instance", &self.inner.instance)
            .finish_non_exhaustive()
    }
}

impl RedisBus {
    /// Joins the bus of the instances using `client`'s Redis (keys under
    /// `mcp:`): publishes through `redis`, receives on a connection of its
    /// own, opened now (an error if Redis does not answer).
    pub async fn join(
        client: redis::Client,
        redis: ConnectionManager,
    ) -> Result<RedisBus, redis::RedisError> {
        Self::join_with_prefix(client, redis, DEFAULT_PREFIX).await
    }

    /// [`RedisBus::join`] with channels under `prefix` (instances that
    /// serve the same clients must use the same one).
    pub async fn join_with_prefix(
        client: redis::Client,
        redis: ConnectionManager,
        prefix: &str,
    ) -> Result<RedisBus, redis::RedisError> {
        let instance = format!("{:016x}", rand::random::<u64>());
        let channels = Channels {
            server: format!("{prefix}bus:server"),
            instance: instance_channel(prefix, &instance),
            sessions: format!("{prefix}bus:session"),
        };
        let sessions_channel = channels.sessions.clone();
        let on_session: Arc<OnceLock<SessionHandler>> = Arc::default();
        let pubsub = subscribe(&client, &channels).await?;
        let on_event: Arc<OnceLock<EventHandler>> = Arc::default();
        let on_forward: Arc<OnceLock<ForwardHandler>> = Arc::default();
        let on_task: Arc<OnceLock<TaskHandler>> = Arc::default();
        let waiting: Waiting = Arc::default();
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let (outgoing, queue) = mpsc::unbounded_channel();
        tokio::spawn(publish(
            redis.clone(),
            channels.server.clone(),
            instance.clone(),
            queue,
        ));
        tokio::spawn(receive(
            client,
            channels,
            pubsub,
            instance.clone(),
            Handlers {
                on_event: Arc::clone(&on_event),
                on_forward: Arc::clone(&on_forward),
                on_session: Arc::clone(&on_session),
                on_task: Arc::clone(&on_task),
                waiting: Arc::clone(&waiting),
                redis: redis.clone(),
                prefix: prefix.to_owned(),
            },
            stopped,
        ));
        Ok(RedisBus {
            inner: Arc::new(Inner {
                instance,
                redis,
                prefix: prefix.to_owned(),
                on_forward,
                on_session,
                on_task,
                waiting,
                sessions_channel,
                outgoing,
                on_event,
                _stop: stop,
            }),
        })
    }

    /// This instance's id on the bus.
    pub fn instance(&self) -> &str {
        &self.inner.instance
    }

    /// Publishes a server-wide event (its text) to the other instances.
    /// Never waits: events go out in order from a task of their own; one
    /// that Redis refuses (an outage) is logged and lost.
    pub fn publish_event(&self, payload: String) {
        let _ = self.inner.outgoing.send(payload);
    }

    /// Calls `handler` with each server-wide event another instance
    /// publishes. Set once; later calls are ignored.
    pub fn on_event(&self, handler: impl Fn(&str) + Send + Sync + 'static) {
        let _ = self.inner.on_event.set(Arc::new(handler));
    }

    /// Calls `handler` with each answer another instance forwards to this
    /// one: the session and the message (for
    /// [`mcp_http::McpEndpoint::take_forwarded`]). Set once; later calls
    /// are ignored.
    pub fn on_forwarded(&self, handler: impl Fn(&str, &str) + Send + Sync + 'static) {
        let _ = self.inner.on_forward.set(Arc::new(handler));
    }

    /// Calls `handler` with each session whose settings another instance
    /// changed (for [`mcp_http::McpEndpoint::refresh_session`]). Set once;
    /// later calls are ignored.
    pub fn on_session_changed(&self, handler: impl Fn(&str) + Send + Sync + 'static) {
        let _ = self.inner.on_session.set(Arc::new(handler));
    }

    /// Answers the requests about tasks this instance runs that other
    /// instances relay to it with `handler` (for
    /// [`mcp_http::McpEndpoint::answer_relayed`]). Set once; later calls
    /// are ignored.
    pub fn on_task_request(
        &self,
        handler: impl Fn(RelayedRequest) -> BoxFuture<'static, String> + Send + Sync + 'static,
    ) {
        let _ = self.inner.on_task.set(Arc::new(handler));
    }

    /// Has `endpoint` answer the requests about its tasks that other
    /// instances relay here ([`RedisBus::on_task_request`] with
    /// [`mcp_http::McpEndpoint::answer_relayed`]); held weakly, so the bus
    /// does not keep the endpoint alive.
    pub fn answer_tasks_with(&self, endpoint: &Arc<mcp_http::McpEndpoint>) {
        let runner = Arc::downgrade(endpoint);
        self.on_task_request(move |request| {
            let runner = runner.clone();
            Box::pin(async move {
                match runner.upgrade() {
                    Some(endpoint) => endpoint.answer_relayed(request).await,
                    None => String::new(),
                }
            })
        });
    }

    /// The key naming the instance that runs task `task`.
    fn task_key(&self, task: &str) -> String {
        format!("{}task:{task}", self.inner.prefix)
    }

    /// The key listing the instances that run tasks of `scope`.
    fn runners_key(&self, scope: &str) -> String {
        format!("{}task-runners:{scope}", self.inner.prefix)
    }

    /// Whether `instance` is still on the bus.
    async fn alive(&self, instance: &str) -> bool {
        let channel = instance_channel(&self.inner.prefix, instance);
        let counts: Result<(String, i64), _> = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(&channel)
            .query_async(&mut self.inner.redis.clone())
            .await;
        // When Redis cannot tell, the instance is given the benefit of the
        // doubt.
        counts.map(|(_, n)| n > 0).unwrap_or(true)
    }

    /// The key recording who sent request `id` to `session`'s client.
    fn request_key(&self, session: &str, id: &RequestId) -> String {
        format!("{}req:{{{session}}}:{id}", self.inner.prefix)
    }
}

impl ResponseRelay for RedisBus {
    fn instance(&self) -> Option<&str> {
        Some(&self.inner.instance)
    }

    /// Gone only when it stays off the bus past the longest wait of a bus
    /// reconnecting (after Redis restarted, every instance is off the bus
    /// for a moment).
    fn alive(&self, instance: &str) -> BoxFuture<'_, bool> {
        let instance = instance.to_owned();
        Box::pin(async move {
            for check in 0..GONE_CHECKS {
                if check > 0 {
                    tokio::time::sleep(GONE_CHECK_INTERVAL).await;
                }
                if RedisBus::alive(self, &instance).await {
                    return true;
                }
            }
            false
        })
    }

    fn session_changed(&self, session: &str) -> BoxFuture<'_, ()> {
        let payload = format!("{} {session}", self.inner.instance);
        Box::pin(async move {
            let published: Result<i64, _> = redis::cmd("PUBLISH")
                .arg(&self.inner.sessions_channel)
                .arg(payload)
                .query_async(&mut self.inner.redis.clone())
                .await;
            if let Err(error) = published {
                tracing::warn!(%error, "cannot tell the other instances of a session change");
            }
        })
    }

    fn sent(&self, session: &str, id: &RequestId) -> BoxFuture<'_, ()> {
        let key = self.request_key(session, id);
        Box::pin(async move {
            let recorded: Result<(), _> = redis::cmd("SET")
                .arg(&key)
                .arg(&self.inner.instance)
                .arg("PX")
                .arg(crate::millis(REQUEST_TTL))
                .query_async(&mut self.inner.redis.clone())
                .await;
            if let Err(error) = recorded {
                tracing::warn!(%error, %key, "cannot record a request for its answer");
            }
        })
    }

    fn forward(&self, session: &str, id: &RequestId, message: String) -> BoxFuture<'_, bool> {
        let key = self.request_key(session, id);
        let session = session.to_owned();
        Box::pin(async move {
            let mut redis = self.inner.redis.clone();
            let owner: Option<String> =
                match redis::cmd("GET").arg(&key).query_async(&mut redis).await {
                    Ok(owner) => owner,
                    Err(error) => {
                        tracing::warn!(%error, "cannot look up who sent a request");
                        return false;
                    }
                };
            let Some(owner) = owner.filter(|owner| *owner != self.inner.instance) else {
                return false;
            };
            let channel = instance_channel(&self.inner.prefix, &owner);
            let received: Result<i64, _> = redis::cmd("PUBLISH")
                .arg(&channel)
                .arg(format!("{session}\n{message}"))
                .query_async(&mut redis)
                .await;
            match received {
                Ok(n) if n > 0 => {
                    let _: Result<(), _> =
                        redis::cmd("DEL").arg(&key).query_async(&mut redis).await;
                    true
                }
                Ok(_) => {
                    tracing::debug!(%owner, "the instance that sent a request is gone");
                    false
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot forward an answer");
                    false
                }
            }
        })
    }
}

/// A request relayed to the instance running its task, or the answer.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Envelope {
    /// A request for the receiver to answer on `from`'s channel.
    Ask {
        id: u64,
        from: String,
        request: RelayedRequest,
    },
    /// The answer to the asker's request `id`.
    Reply { id: u64, response: String },
}

/// Forgets an asker's wait when it ends (answered, failed or dropped).
struct WaitGuard<'a> {
    waiting: &'a Waiting,
    id: u64,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        self.waiting.locked().remove(&self.id);
    }
}

/// The error of a task whose instance is gone.
fn runner_gone() -> ErrorObject {
    ErrorObject::internal(
        "the instance running this task is gone, and the task with it; start it again",
    )
}

impl TaskRelay for RedisBus {
    fn started(&self, scope: &str, task: &str, ttl: Duration) -> BoxFuture<'_, ()> {
        let (task_key, runners_key) = (self.task_key(task), self.runners_key(scope));
        let ttl = crate::millis(ttl);
        Box::pin(async move {
            let recorded: Result<(), _> = redis::pipe()
                .cmd("SET")
                .arg(&task_key)
                .arg(&self.inner.instance)
                .arg("PX")
                .arg(ttl)
                .ignore()
                .cmd("SADD")
                .arg(&runners_key)
                .arg(&self.inner.instance)
                .ignore()
                .cmd("PEXPIRE")
                .arg(&runners_key)
                .arg(crate::millis(mcp_http::task_relay::MAX_TASK_TTL))
                .ignore()
                .query_async(&mut self.inner.redis.clone())
                .await;
            if let Err(error) = recorded {
                tracing::warn!(%error, %task_key, "cannot record where a task runs; other instances will not find it");
            }
        })
    }

    fn runner(&self, task: &str) -> BoxFuture<'_, Result<Option<String>, ErrorObject>> {
        let key = self.task_key(task);
        Box::pin(async move {
            let runner: Option<String> = crate::repeatable(&self.inner.redis, |mut redis| {
                let key = key.clone();
                async move { redis::cmd("GET").arg(&key).query_async(&mut redis).await }
            })
            .await
            .map_err(|error| {
                ErrorObject::internal(format!("cannot find where the task runs: {error}"))
            })?;
            Ok(runner.filter(|runner| *runner != self.inner.instance))
        })
    }

    fn runners(&self, scope: &str) -> BoxFuture<'_, Vec<String>> {
        let key = self.runners_key(scope);
        Box::pin(async move {
            let members: Result<Vec<String>, _> = redis::cmd("SMEMBERS")
                .arg(&key)
                .query_async(&mut self.inner.redis.clone())
                .await;
            let mut others = Vec::new();
            for member in members.unwrap_or_default() {
                if member != self.inner.instance && self.alive(&member).await {
                    others.push(member);
                }
            }
            others
        })
    }

    fn ask(
        &self,
        instance: &str,
        request: RelayedRequest,
    ) -> BoxFuture<'_, Result<String, ErrorObject>> {
        let channel = instance_channel(&self.inner.prefix, instance);
        let instance = instance.to_owned();
        Box::pin(async move {
            let id = rand::random::<u64>();
            let envelope = Envelope::Ask {
                id,
                from: self.inner.instance.clone(),
                request,
            };
            let text = serde_json::to_string(&envelope)
                .map_err(|error| ErrorObject::internal(error.to_string()))?;
            let (answer, mut answered) = oneshot::channel();
            self.inner.waiting.locked().insert(id, answer);
            let _guard = WaitGuard {
                waiting: &self.inner.waiting,
                id,
            };
            let receivers: i64 = redis::cmd("PUBLISH")
                .arg(&channel)
                .arg(text)
                .query_async(&mut self.inner.redis.clone())
                .await
                .map_err(|error| {
                    ErrorObject::internal(format!(
                        "cannot reach the instance running the task: {error}"
                    ))
                })?;
            if receivers == 0 {
                return Err(runner_gone());
            }
            let mut checks = tokio::time::interval(LIVENESS_CHECK);
            checks.tick().await;
            loop {
                tokio::select! {
                    answer = &mut answered => {
                        return answer.map_err(|_| runner_gone());
                    }
                    _ = checks.tick() => {
                        if !self.alive(&instance).await {
                            return Err(runner_gone());
                        }
                    }
                }
            }
        })
    }
}

/// Answers a relayed request with this instance's handler, on the
/// asker's channel.
fn answer_relayed(handlers: &Handlers, id: u64, from: String, request: RelayedRequest) {
    let Some(handler) = handlers.on_task.get() else {
        return;
    };
    let answering = handler(request);
    let mut redis = handlers.redis.clone();
    let channel = instance_channel(&handlers.prefix, &from);
    tokio::spawn(async move {
        let response = answering.await;
        let Ok(text) = serde_json::to_string(&Envelope::Reply { id, response }) else {
            return;
        };
        let sent: Result<i64, _> = redis::cmd("PUBLISH")
            .arg(&channel)
            .arg(text)
            .query_async(&mut redis)
            .await;
        if let Err(error) = sent {
            tracing::warn!(%error, "cannot answer a relayed task request");
        }
    });
}

/// The channel of instance `instance`.
fn instance_channel(prefix: &str, instance: &str) -> String {
    format!("{prefix}bus:instance:{instance}")
}

/// The channels an instance listens on.
struct Channels {
    server: String,
    instance: String,
    sessions: String,
}

/// What the receiving task calls.
struct Handlers {
    on_event: Arc<OnceLock<EventHandler>>,
    on_forward: Arc<OnceLock<ForwardHandler>>,
    on_session: Arc<OnceLock<SessionHandler>>,
    on_task: Arc<OnceLock<TaskHandler>>,
    waiting: Waiting,
    /// Where relayed requests are answered.
    redis: ConnectionManager,
    prefix: String,
}

/// A pub/sub connection subscribed to `channels`.
async fn subscribe(
    client: &redis::Client,
    channels: &Channels,
) -> Result<redis::aio::PubSub, redis::RedisError> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(&channels.server).await?;
    pubsub.subscribe(&channels.instance).await?;
    pubsub.subscribe(&channels.sessions).await?;
    Ok(pubsub)
}

/// Receives server-wide events until stopped, reconnecting after an
/// outage.
async fn receive(
    client: redis::Client,
    channels: Channels,
    first: redis::aio::PubSub,
    instance: String,
    handlers: Handlers,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let mut pubsub = Some(first);
    let mut delay = Duration::from_millis(50);
    loop {
        let connection = match pubsub.take() {
            Some(connection) => connection,
            None => {
                let connected = tokio::select! {
                    connected = subscribe(&client, &channels) => connected,
                    _ = &mut stopped => return,
                };
                match connected {
                    Ok(connection) => {
                        tracing::info!(channel = %channels.server, "subscribed again to the instances' bus");
                        connection
                    }
                    Err(error) => {
                        tracing::debug!(%error, "cannot reach Redis for the instances' bus");
                        tokio::select! {
                            () = tokio::time::sleep(delay) => {}
                            _ = &mut stopped => return,
                        }
                        delay = (delay * 2).min(MAX_RECONNECT_DELAY);
                        continue;
                    }
                }
            }
        };
        delay = Duration::from_millis(50);
        let mut messages = connection.into_on_message();
        loop {
            let message = tokio::select! {
                message = messages.next() => message,
                _ = &mut stopped => return,
            };
            let Some(message) = message else {
                tracing::warn!(channel = %channels.server, "lost the instances' bus; reconnecting");
                break;
            };
            let Ok(text) = std::str::from_utf8(message.get_payload_bytes()) else {
                continue;
            };
            if message.get_channel_name() == channels.instance {
                // Session ids never start with `{`: this is an envelope.
                if text.starts_with('{') {
                    match serde_json::from_str(text) {
                        Ok(Envelope::Ask { id, from, request }) => {
                            answer_relayed(&handlers, id, from, request)
                        }
                        Ok(Envelope::Reply { id, response }) => {
                            if let Some(asker) = handlers.waiting.locked().remove(&id) {
                                let _ = asker.send(response);
                            }
                        }
                        Err(error) => tracing::debug!(%error, "an unreadable envelope on the bus"),
                    }
                    continue;
                }
                if let (Some((session, answer)), Some(handler)) =
                    (text.split_once('\n'), handlers.on_forward.get())
                {
                    handler(session, answer);
                }
                continue;
            }
            let Some((from, payload)) = text.split_once(' ') else {
                continue;
            };
            if from == instance {
                continue;
            }
            if message.get_channel_name() == channels.sessions {
                if let Some(handler) = handlers.on_session.get() {
                    handler(payload);
                }
                continue;
            }
            if let Some(handler) = handlers.on_event.get() {
                handler(payload);
            }
        }
    }
}

/// Publishes the queued events, in order, until every sender is gone.
async fn publish(
    mut redis: ConnectionManager,
    channel: String,
    instance: String,
    mut queue: mpsc::UnboundedReceiver<String>,
) {
    while let Some(payload) = queue.recv().await {
        let published: Result<i64, _> = redis::cmd("PUBLISH")
            .arg(&channel)
            .arg(format!("{instance} {payload}"))
            .query_async(&mut redis)
            .await;
        if let Err(error) = published {
            tracing::warn!(%error, "a server-wide event could not reach the other instances");
        }
    }
}
