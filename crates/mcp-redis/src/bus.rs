//! Messages between the instances that share one Redis, on its pub/sub:
//! server-wide events every instance re-raises for its own clients.
//!
//! Channels (with the default prefix `mcp:`): `mcp:bus:server` carries
//! server-wide events, each prefixed by the id of the instance that raised
//! it (`ID payload`), so that instance does not raise it twice. One
//! dedicated pub/sub connection per instance receives; it reconnects and
//! subscribes again on its own after an outage (what was published
//! meanwhile is lost, as pub/sub keeps nothing). Publishing goes through
//! the shared [`ConnectionManager`], in order, from one task.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::StreamExt as _;
use redis::aio::ConnectionManager;
use tokio::sync::mpsc;

use crate::DEFAULT_PREFIX;

/// What an instance does with a server-wide event another one raised.
type EventHandler = Arc<dyn Fn(&str) + Send + Sync>;

/// This instance's end of the bus. Cheap to clone; the receiving task
/// ends when the last clone is dropped.
#[derive(Clone)]
pub struct RedisBus {
    inner: Arc<Inner>,
}

struct Inner {
    /// A random id, unique to this instance.
    instance: String,
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
        let channel = format!("{prefix}bus:server");
        let pubsub = subscribe(&client, &channel).await?;
        let on_event: Arc<OnceLock<EventHandler>> = Arc::default();
        let (stop, stopped) = tokio::sync::oneshot::channel();
        tokio::spawn(receive(
            client,
            channel.clone(),
            pubsub,
            instance.clone(),
            Arc::clone(&on_event),
            stopped,
        ));
        let (outgoing, queue) = mpsc::unbounded_channel();
        tokio::spawn(publish(redis, channel, instance.clone(), queue));
        Ok(RedisBus {
            inner: Arc::new(Inner {
                instance,
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
}

/// A pub/sub connection subscribed to `channel`.
async fn subscribe(
    client: &redis::Client,
    channel: &str,
) -> Result<redis::aio::PubSub, redis::RedisError> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(channel).await?;
    Ok(pubsub)
}

/// Receives server-wide events until stopped, reconnecting after an
/// outage.
async fn receive(
    client: redis::Client,
    channel: String,
    first: redis::aio::PubSub,
    instance: String,
    on_event: Arc<OnceLock<EventHandler>>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let mut pubsub = Some(first);
    let mut delay = Duration::from_millis(50);
    loop {
        let connection = match pubsub.take() {
            Some(connection) => connection,
            None => {
                let connected = tokio::select! {
                    connected = subscribe(&client, &channel) => connected,
                    _ = &mut stopped => return,
                };
                match connected {
                    Ok(connection) => {
                        tracing::info!(%channel, "subscribed again to the instances' bus");
                        connection
                    }
                    Err(error) => {
                        tracing::debug!(%error, "cannot reach Redis for the instances' bus");
                        tokio::select! {
                            () = tokio::time::sleep(delay) => {}
                            _ = &mut stopped => return,
                        }
                        delay = (delay * 2).min(Duration::from_secs(2));
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
                tracing::warn!(%channel, "lost the instances' bus; reconnecting");
                break;
            };
            let Ok(text) = std::str::from_utf8(message.get_payload_bytes()) else {
                continue;
            };
            let Some((from, payload)) = text.split_once(' ') else {
                continue;
            };
            if from == instance {
                continue;
            }
            if let Some(handler) = on_event.get() {
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
