//! The routing table of a session: which stream each outgoing message
//! goes to, stored first for resumption, handed to the stream's
//! connection in one order with a resumed connection attaching.

use std::sync::{Arc, Mutex};

use crate::outbound::{self, QueueLimits, StreamReceiver, StreamSender};
use foldhash::HashMap;
use mcp_core::{BoxFuture, FrameKind, FrameSink, OutboundFrame, SinkClosed};
use mcp_schema::jsonrpc::RequestId;
use smallvec::SmallVec;

use super::*;
use crate::event_store::{EventStore, EventStoreError};
use mcp_core::sync::MutexExt as _;

/// Where a session's outgoing messages go: its event store and the live
/// connection of each stream.
pub(super) struct Routes {
    pub(super) session: Arc<str>,
    pub(super) store: Arc<dyn EventStore>,
    /// A response that is the first message of its stream goes out as a
    /// plain JSON reply (`ResponseMode::Auto`), so it is not stored.
    pub(super) json_replies: bool,
    /// How far a stream's reader may fall behind.
    pub(super) limits: QueueLimits,
    /// The standalone stream is fed from the store (shared by several
    /// instances), not directly (see [`EventStore::follows`]).
    pub(super) follows: bool,
    /// Where the requests sent to the client are recorded, so that an
    /// answer posted to another instance comes back here.
    pub(super) relay: Option<Arc<dyn crate::relay::ResponseRelay>>,
    /// Held while a message is stored and handed on, and while a resumed
    /// connection is given what it missed and attached: so each stream
    /// gets its messages in the order they are stored, none twice.
    pub(super) order: tokio::sync::Mutex<()>,
    /// The streams; locked briefly, never across a wait.
    pub(super) table: Mutex<RouteTable>,
}

/// The session's streams.
/// A request stream's route lasts exactly while one of its requests is
/// pending; an id is pending on at most one stream (a POST reusing it
/// meanwhile is refused), so a route's `requests` are exactly the ids
/// routed to it.
#[derive(Default)]
pub(super) struct RouteTable {
    /// Live connections by stream.
    pub(super) streams: HashMap<RouteKey, StreamRoute>,
    /// Which stream carries the messages about a request.
    pub(super) by_request: HashMap<RequestId, RouteKey>,
    /// The requests this instance sent the client that are not answered
    /// yet, where a relay is set (answers may reach other instances).
    pub(super) sent: foldhash::HashSet<RequestId>,
    /// The task feeding the standalone stream from the store, where it
    /// follows the store: stopped when replaced or forgotten, which ends
    /// its connection.
    pub(super) follower: Option<Follower>,
}

/// A standalone stream's follower task, stopped when dropped.
pub(super) struct Follower(tokio::task::AbortHandle);

impl Drop for Follower {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The requests of a stream: one, inline, for all but a batch's.
pub(super) type RequestIds = SmallVec<[RequestId; 1]>;

/// A stream: where its messages go, and what it carries.
pub(super) struct StreamRoute {
    pub(super) outlet: Outlet,
    /// The pending requests whose messages it carries.
    pub(super) requests: RequestIds,
    /// Nothing was sent on it yet: it becomes an event stream (primed,
    /// where `priming`) only when a message other than its response comes
    /// first.
    pub(super) fresh: bool,
    pub(super) priming: bool,
    /// Its event store failed and its client was told: what else comes
    /// for its requests is dropped, and it ends with their response.
    pub(super) failed: bool,
}

impl StreamRoute {
    /// A route for a connection whose stream is already under way.
    pub(super) fn started(sink: StreamSender) -> Self {
        StreamRoute {
            outlet: Outlet::Open(sink),
            requests: RequestIds::new(),
            fresh: false,
            priming: false,
            failed: false,
        }
    }
}

/// Where the messages of a response stream go: kept until a connection
/// reads the stream (most requests are answered at once, and need none),
/// then sent to it.
#[derive(Debug)]
pub(crate) enum Outlet {
    /// Kept, until a connection reads the stream.
    Held(Vec<Delivery>),
    /// Sent to the connection reading the stream.
    Open(StreamSender),
}

impl Default for Outlet {
    fn default() -> Self {
        Outlet::Held(Vec::new())
    }
}

impl Outlet {
    /// Sends or keeps `delivery`; refused once the reading connection is
    /// gone.
    pub(crate) fn send(&mut self, delivery: Delivery) -> Result<(), SinkClosed> {
        match self {
            Outlet::Held(held) => {
                held.push(delivery);
                Ok(())
            }
            Outlet::Open(sink) => sink.send(delivery).map_err(|_| SinkClosed),
        }
    }

    /// Whether nothing was kept or sent yet.
    pub(crate) fn holds_nothing(&self) -> bool {
        matches!(self, Outlet::Held(held) if held.is_empty())
    }

    /// The connection that reads the stream from now on, with what was
    /// kept already in it: its sender and receiver. `None` if one reads it
    /// already.
    pub(crate) fn open(&mut self, limits: QueueLimits) -> Option<(StreamSender, StreamReceiver)> {
        let Outlet::Held(held) = self else {
            return None;
        };
        let (sender, receiver) = outbound::channel(limits);
        for delivery in held.drain(..) {
            let _ = sender.send(delivery);
        }
        *self = Outlet::Open(sender.clone());
        Some((sender, receiver))
    }

    /// Whether the connection reading the stream is gone.
    pub(super) fn is_closed(&self) -> bool {
        matches!(self, Outlet::Open(sink) if sink.is_closed())
    }
}

impl FrameSink for Routes {
    fn send(&self, frame: OutboundFrame) -> BoxFuture<'_, Result<(), SinkClosed>> {
        Box::pin(async move {
            if let Err(frame) = self.reply_in_json(frame) {
                self.deliver(frame).await;
            }
            Ok(())
        })
    }
}

impl Routes {
    /// Stores an empty event at the start of `stream`, and gives it to be
    /// sent first, so the client has an id to resume from before any
    /// message arrives. Where instances share the session, the stored
    /// event notes the stream's `requests` and this instance
    /// ([`StreamNote`]).
    pub(super) async fn prime(
        &self,
        stream: RouteKey,
        requests: &[RequestId],
    ) -> Result<Delivery, EventStoreError> {
        let stored = match self.relay.as_ref().and_then(|relay| relay.instance()) {
            Some(instance) if !requests.is_empty() => StreamNote::new(instance, requests).stored(),
            _ => Arc::from(""),
        };
        let id = self
            .store
            .append(&self.session, &stream.to_string(), stored)
            .await?;
        Ok(Delivery::new(
            MessageText::Owned(String::new()),
            Some(id),
            false,
        ))
    }

    /// Records a request to the client, so that its answer comes back
    /// here from any instance; forgets one the engine gave up on
    /// (`notifications/cancelled`).
    async fn record_sent(&self, relay: &dyn crate::relay::ResponseRelay, frame: &OutboundFrame) {
        use mcp_schema::jsonrpc::Message;
        match frame.kind {
            FrameKind::Request => {
                if let Ok(Message::Request(request)) = Message::parse(&frame.text) {
                    self.table().sent.insert(request.id.clone());
                    relay.sent(&self.session, &request.id).await;
                }
            }
            FrameKind::Notification if frame.text.contains("\"notifications/cancelled\"") => {
                #[derive(serde::Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct Cancelled {
                    request_id: RequestId,
                }
                if let Ok(Message::Notification(notification)) = Message::parse(&frame.text)
                    && let Some(params) = notification.params
                    && let Ok(cancelled) = serde_json::from_str::<Cancelled>(params.get())
                {
                    self.table().sent.remove(&cancelled.request_id);
                }
            }
            _ => {}
        }
    }

    /// The routing table.
    pub(super) fn table(&self) -> std::sync::MutexGuard<'_, RouteTable> {
        self.table.locked()
    }

    /// Stores `frame` and hands it to its stream's connection, in order
    /// with every other such delivery.
    pub(super) async fn deliver(&self, frame: OutboundFrame) {
        if let Some(relay) = &self.relay {
            self.record_sent(relay.as_ref(), &frame).await;
        }
        let _order = self.order.lock().await;
        let (stream, last, priming) = {
            let mut table = self.table();
            if frame.kind == FrameKind::Ended {
                return table.request_ended(frame.related.as_ref());
            }
            let stream = table
                .request_stream(frame.related.as_ref())
                .unwrap_or(STANDALONE);
            if self.follows
                && stream == STANDALONE
                && frame.kind == FrameKind::Notification
                && match server_wide(&frame.text) {
                    // The instance where the update happened stored it for
                    // every subscribed session (`crate::fanout`).
                    Some(ServerWide::ResourceUpdated) => true,
                    // Every instance raises a list change for the sessions
                    // it holds; the one with the session's standalone
                    // stream open stores it, so it arrives once.
                    Some(ServerWide::ListChanged) => table
                        .streams
                        .get(&STANDALONE)
                        .is_none_or(|route| route.outlet.is_closed()),
                    None => false,
                }
            {
                return;
            }
            let last = frame.kind == FrameKind::Response && stream != STANDALONE;
            if table.streams.get(&stream).is_some_and(|route| route.failed) {
                // Its client was told it failed.
                if last {
                    table.stream_done(stream);
                }
                return;
            }
            // The first message of a stream that is not a plain reply
            // makes it an event stream, primed where that is due.
            let priming = match table.streams.get_mut(&stream) {
                Some(route) if route.fresh && route.priming => {
                    route.fresh = false;
                    Some(route.requests.clone())
                }
                Some(route) => {
                    route.fresh = false;
                    None
                }
                None => None,
            };
            (stream, last, priming)
        };
        if let Some(requests) = priming {
            match self.prime(stream, &requests).await {
                Ok(primed) => {
                    if let Some(route) = self.table().streams.get_mut(&stream) {
                        let _ = route.outlet.send(primed);
                    }
                }
                Err(error) => return self.fail_stream(stream, last, &error),
            }
        }
        let text: Arc<str> = Arc::from(frame.text);
        let stored = self
            .store
            .append(&self.session, &stream.to_string(), Arc::clone(&text))
            .await;
        let event_id = match stored {
            Ok(id) => Some(id),
            Err(error) => return self.fail_stream(stream, last, &error),
        };
        if self.follows && stream == STANDALONE {
            // The stream's follower reads it from the store.
            return;
        }
        let mut table = self.table();
        if let Some(route) = table.streams.get_mut(&stream) {
            // A dropped connection is not a cancellation: the message stays
            // in the store for a resuming client.
            let _ = route
                .outlet
                .send(Delivery::new(MessageText::Shared(text), event_id, last));
        }
        if last {
            table.stream_done(stream);
        }
    }

    /// A message for `stream` could not be stored: the stream ends with an
    /// error, which answers its pending requests (a POST that has not
    /// started streaming gets it as a 503), and what else comes for them
    /// is dropped. The standalone stream ends with an error without an id.
    /// `done`: the message was the stream's response.
    pub(super) fn fail_stream(&self, stream: RouteKey, done: bool, error: &EventStoreError) {
        tracing::warn!(session = %self.session, stream, %error, "closing a stream: its message cannot be stored");
        let mut table = self.table();
        let Some(route) = table.streams.get_mut(&stream) else {
            return;
        };
        let error = mcp_schema::jsonrpc::ErrorObject::internal(format!(
            "{error}; the stream is closed and messages may be lost"
        ));
        let text = match route.requests.as_slice() {
            [] => mcp_schema::jsonrpc::write_error(None, &error),
            [one] => mcp_schema::jsonrpc::write_error(Some(one), &error),
            many => {
                let errors: Vec<String> = many
                    .iter()
                    .map(|id| mcp_schema::jsonrpc::write_error(Some(id), &error))
                    .collect();
                format!("[{}]", errors.join(","))
            }
        };
        let _ = route.outlet.send(Delivery {
            text: MessageText::Owned(text),
            event_id: None,
            last: true,
            failed: true,
        });
        route.failed = true;
        route.fresh = false;
        if done || stream == STANDALONE {
            table.stream_done(stream);
        }
    }

    /// Sends a response that comes through the sink (the array answering
    /// a batch) as a plain JSON reply (`ResponseMode::Auto`) when it is
    /// the first message of its stream: nothing to resume, nothing to
    /// store, nothing sent before it to wait for. Hands back any other
    /// frame. A single request's response comes back to its POST instead
    /// (see [`HttpSession::take_json_reply`]).
    pub(super) fn reply_in_json(&self, frame: OutboundFrame) -> Result<(), OutboundFrame> {
        if !self.json_replies || frame.kind != FrameKind::Response {
            return Err(frame);
        }
        let mut table = self.table();
        let Some(stream) = table.request_stream(frame.related.as_ref()) else {
            return Err(frame);
        };
        let Some(mut route) = table.take_fresh(stream) else {
            return Err(frame);
        };
        let _ = route
            .outlet
            .send(Delivery::new(MessageText::Owned(frame.text), None, true));
        Ok(())
    }
}

/// A notification a server raises for every session concerned rather
/// than for one alone.
enum ServerWide {
    /// `notifications/resources/updated`.
    ResourceUpdated,
    /// A `list_changed` notification.
    ListChanged,
}

/// Which server-wide notification `text` is, if it is one.
fn server_wide(text: &str) -> Option<ServerWide> {
    const LIST_CHANGES: [&str; 3] = [
        "\"notifications/tools/list_changed\"",
        "\"notifications/resources/list_changed\"",
        "\"notifications/prompts/list_changed\"",
    ];
    if text.contains("\"notifications/resources/updated\"") {
        Some(ServerWide::ResourceUpdated)
    } else if LIST_CHANGES.iter().any(|method| text.contains(method)) {
        Some(ServerWide::ListChanged)
    } else {
        None
    }
}

/// Feeds a standalone stream from the event store: the events appended
/// after `after` by any instance, until the stream's reader goes. An
/// error of the store ends the stream with it.
pub(super) fn spawn_follower(
    store: Arc<dyn EventStore>,
    session: Arc<str>,
    after: Option<String>,
    sink: StreamSender,
) -> Follower {
    use futures::StreamExt as _;
    let task = tokio::spawn(async move {
        let mut events = store.follow(&session, &STANDALONE.to_string(), after.as_deref());
        loop {
            let batch = tokio::select! {
                batch = events.next() => batch,
                () = sink.closed() => return,
            };
            match batch {
                Some(Ok(batch)) => {
                    for (id, text) in batch {
                        let delivery = Delivery::new(MessageText::Shared(text), Some(id), false);
                        if sink.send(delivery).is_err() {
                            return;
                        }
                    }
                }
                Some(Err(error)) => {
                    tracing::warn!(session = %session, %error, "a standalone stream cannot follow its events");
                    let error = mcp_schema::jsonrpc::ErrorObject::internal(format!(
                        "{error}; the stream is closed and messages may be lost"
                    ));
                    let _ = sink.send(Delivery {
                        text: MessageText::Owned(mcp_schema::jsonrpc::write_error(None, &error)),
                        event_id: None,
                        last: true,
                        failed: true,
                    });
                    return;
                }
                None => return,
            }
        }
    });
    Follower(task.abort_handle())
}

impl RouteTable {
    /// The stream of a pending request: never the standalone one, as
    /// request streams are numbered from 1.
    pub(super) fn request_stream(&self, request: Option<&RequestId>) -> Option<RouteKey> {
        request.and_then(|id| self.by_request.get(id)).copied()
    }

    /// The stream's response went out: it and its requests are done.
    pub(super) fn stream_done(&mut self, stream: RouteKey) {
        if let Some(route) = self.streams.remove(&stream) {
            self.forget_requests(&route);
        }
    }

    /// The route of `stream` if nothing was sent on it yet, taken out with
    /// its requests: its response is going out as a plain reply.
    pub(super) fn take_fresh(&mut self, stream: RouteKey) -> Option<StreamRoute> {
        if !self.streams.get(&stream).is_some_and(|route| route.fresh) {
            return None;
        }
        let route = self.streams.remove(&stream)?;
        self.forget_requests(&route);
        Some(route)
    }

    pub(super) fn forget_requests(&mut self, route: &StreamRoute) {
        for id in &route.requests {
            self.by_request.remove(id);
        }
    }

    /// Forgets every stream: their connections end.
    pub(super) fn clear(&mut self) {
        self.streams.clear();
        self.by_request.clear();
        self.sent.clear();
        self.follower = None;
    }

    /// A request ended without a response (cancelled): its stream ends
    /// once no other request of it is pending.
    pub(super) fn request_ended(&mut self, id: Option<&RequestId>) {
        let Some((id, stream)) = id.and_then(|id| self.by_request.remove_entry(id)) else {
            return;
        };
        if let Some(route) = self.streams.get_mut(&stream) {
            route.requests.retain(|pending| *pending != id);
            if route.requests.is_empty() {
                self.streams.remove(&stream);
            }
        }
    }
}
