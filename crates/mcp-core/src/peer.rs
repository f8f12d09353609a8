//! The handle to the other side of a session: send requests and
//! notifications, wait for responses with timeouts, cancel on drop.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use foldhash::{HashMap, HashMapExt as _};
use mcp_schema::jsonrpc::{self, RequestId};
use mcp_schema::{
    CancelledNotificationParams, ErrorObject, ProgressNotificationParams, ProgressToken, methods,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::RequestError;
use crate::extensions::Extensions;
use crate::identity::{Negotiated, Role, SessionConfig};
use crate::in_flight::InFlight;
use crate::sync::{MutexExt as _, RwLockExt as _};
use crate::transport::{FrameKind, FrameSink, OutboundFrame};

/// Called with each progress notification the peer sends for a request.
pub type ProgressCallback = Arc<dyn Fn(ProgressNotificationParams) + Send + Sync>;

/// Options for one outgoing request.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct RequestOptions {
    /// How long to wait for the response; the session's default if unset.
    pub timeout: Option<Duration>,
    /// Progress notifications restart the timeout, up to this total; the
    /// session's hard maximum if unset.
    pub max_total_timeout: Option<Duration>,
    /// Receives progress; asking for it adds a `progressToken` to `_meta`.
    pub on_progress: Option<ProgressCallback>,
}

impl RequestOptions {
    /// Default options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits at most `timeout` between progress updates.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Waits at most `max` in total, however much progress arrives.
    pub fn max_total_timeout(mut self, max: Duration) -> Self {
        self.max_total_timeout = Some(max);
        self
    }

    /// Asks for progress notifications and hands them to `callback`.
    pub fn on_progress(
        mut self,
        callback: impl Fn(ProgressNotificationParams) + Send + Sync + 'static,
    ) -> Self {
        self.on_progress = Some(Arc::new(callback));
        self
    }
}

impl std::fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("max_total_timeout", &self.max_total_timeout)
            .field("on_progress", &self.on_progress.is_some())
            .finish()
    }
}

type Reply = Result<Box<RawValue>, ErrorObject>;

struct Pending {
    reply: oneshot::Sender<Reply>,
    progress: Option<mpsc::UnboundedSender<ProgressNotificationParams>>,
}

/// Where a session is in its lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// No `initialize` yet: only modern-era requests (or `initialize`).
    Fresh,
    /// `initialize` answered, `notifications/initialized` not yet received.
    Initializing,
    /// Legacy session fully established.
    Ready,
}

pub(crate) struct SessionState {
    pub(crate) phase: Phase,
    pub(crate) negotiated: Option<Arc<Negotiated>>,
}

/// Where a session's frames go: the channel of a transport task, or a sink
/// the transport drives in the sending task.
#[derive(Clone)]
pub(crate) enum Outbound {
    Channel(mpsc::Sender<OutboundFrame>),
    Sink(Arc<dyn FrameSink>),
}

impl Outbound {
    async fn send(self, frame: OutboundFrame) -> Result<(), RequestError> {
        match self {
            Outbound::Channel(sender) => sender
                .send(frame)
                .await
                .map_err(|_| RequestError::ConnectionClosed),
            Outbound::Sink(sink) => sink
                .send(frame)
                .await
                .map_err(|_| RequestError::ConnectionClosed),
        }
    }

    /// Sends without making the caller wait: best effort, for drop paths.
    fn send_detached(self, frame: OutboundFrame) {
        match self {
            Outbound::Channel(sender) => {
                let _ = sender.try_send(frame);
            }
            Outbound::Sink(sink) => {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move {
                        let _ = sink.send(frame).await;
                    });
                }
            }
        }
    }
}

/// Everything a session's handles share.
pub(crate) struct Shared {
    /// Taken (dropped) when the session closes, which ends the transport.
    outbound: std::sync::RwLock<Option<Outbound>>,
    pending: Mutex<HashMap<RequestId, Pending>>,
    next_id: AtomicI64,
    pub(crate) config: Arc<SessionConfig>,
    pub(crate) state: Mutex<SessionState>,
    pub(crate) extensions: Extensions,
    pub(crate) closed: CancellationToken,
    /// The peer's requests being handled.
    pub(crate) in_flight: InFlight,
}

impl Shared {
    pub(crate) fn new(outbound: Outbound, config: Arc<SessionConfig>, in_flight: InFlight) -> Self {
        Shared {
            outbound: std::sync::RwLock::new(Some(outbound)),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(config.first_request_id),
            config,
            state: Mutex::new(SessionState {
                phase: Phase::Fresh,
                negotiated: None,
            }),
            extensions: Extensions::default(),
            closed: CancellationToken::new(),
            in_flight,
        }
    }

    pub(crate) fn state(&self) -> std::sync::MutexGuard<'_, SessionState> {
        self.state.locked()
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Pending>> {
        self.pending.locked()
    }

    /// Delivers a response to whoever waits for it; unknown ids (late
    /// answers to cancelled or timed-out requests) are dropped.
    pub(crate) fn complete(&self, id: &RequestId, reply: Reply) {
        match self.pending().remove(id) {
            Some(p) => {
                let _ = p.reply.send(reply);
            }
            None => tracing::debug!(%id, "dropping a response nobody waits for"),
        }
    }

    /// Routes a progress notification to the request it belongs to.
    pub(crate) fn progress(&self, params: ProgressNotificationParams) {
        let id = match &params.progress_token {
            ProgressToken::Number(n) => RequestId::Number(*n),
            ProgressToken::String(s) => RequestId::String(s.clone()),
        };
        if let Some(tx) = self.pending().get(&id).and_then(|p| p.progress.as_ref()) {
            let _ = tx.send(params);
        }
    }

    /// Fails every waiting request and lets the transport finish: the
    /// session is over.
    pub(crate) fn close(&self) {
        self.closed.cancel();
        self.in_flight.cancel_all();
        self.pending().clear();
        self.outbound.write_locked().take();
    }

    /// The way to the transport, unless the session has closed.
    pub(crate) fn sender(&self) -> Option<Outbound> {
        self.outbound.read_locked().clone()
    }
}

/// A handle to the peer of one session. Cheap to clone. A handle obtained
/// from a request's context is tied to that request: what it sends travels
/// with the request's response (on Streamable HTTP, on the same stream).
#[derive(Clone)]
pub struct Peer {
    pub(crate) shared: Arc<Shared>,
    pub(crate) related: Option<RequestId>,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("related", &self.related)
            .finish()
    }
}

impl Peer {
    /// The same peer, with messages tied to the incoming request `id`.
    pub fn related_to(&self, id: Option<RequestId>) -> Peer {
        Peer {
            shared: Arc::clone(&self.shared),
            related: id,
        }
    }

    /// A number that tells sessions apart while they live.
    pub fn session_key(&self) -> usize {
        Arc::as_ptr(&self.shared) as usize
    }

    /// The incoming request this handle's messages are tied to.
    pub fn related(&self) -> Option<&RequestId> {
        self.related.as_ref()
    }

    /// Per-session storage shared by every handle of this session.
    pub fn extensions(&self) -> &Extensions {
        &self.shared.extensions
    }

    /// What was negotiated with the peer, once a legacy handshake completed.
    pub fn negotiated(&self) -> Option<Arc<Negotiated>> {
        self.shared.state().negotiated.clone()
    }

    /// Records the outcome of a handshake this side drove (the client role),
    /// so that capability checks and revision rules apply from now on.
    pub fn set_negotiated(&self, negotiated: Negotiated) {
        let mut state = self.shared.state();
        state.negotiated = Some(Arc::new(negotiated));
        state.phase = Phase::Ready;
    }

    /// Ends the session from this side: pending requests fail, the
    /// transport is closed (a child server sees EOF on its stdin).
    pub fn close(&self) {
        self.shared.close();
    }

    /// Resolves when the session has ended.
    pub async fn closed(&self) {
        self.shared.closed.cancelled().await
    }

    /// Whether the session has ended.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.is_cancelled()
    }

    /// Sends a notification.
    pub async fn notify<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<(), RequestError> {
        let params = jsonrpc::to_raw(params).map_err(|e| RequestError::Invalid(e.to_string()))?;
        self.notify_raw(method, Some(&params)).await
    }

    /// Sends a notification whose params are already JSON.
    pub async fn notify_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), RequestError> {
        self.check_may_send(method, false)?;
        self.send(
            jsonrpc::write_notification(method, params),
            FrameKind::Notification,
        )
        .await
    }

    /// Sends a notification without waiting for the transport, from
    /// synchronous code (a resource or a list changed): it goes out before
    /// anything this session sends after it whenever the transport takes
    /// it at once (a queue with room), and from a task of its own
    /// otherwise, so that the answer of the request that raised it follows
    /// it rather than overtaking it. `held` is kept until the transport has
    /// taken the notification (or it is dropped): a guard that marks it as
    /// still waiting to go out. Dropped, as [`Peer::notify_raw`] would
    /// refuse it, when the session may not send it or has closed.
    pub fn notify_detached_holding<G: Send + 'static>(
        &self,
        method: &str,
        params: Option<&RawValue>,
        held: G,
    ) {
        if self.check_may_send(method, false).is_err() {
            return;
        }
        let Some(sender) = self.shared.sender() else {
            return;
        };
        let frame = OutboundFrame {
            text: jsonrpc::write_notification(method, params),
            related: self.related.clone(),
            kind: FrameKind::Notification,
        };
        let mut sending: futures::future::BoxFuture<'static, ()> = match sender {
            Outbound::Channel(queue) => match queue.try_send(frame) {
                Err(mpsc::error::TrySendError::Full(frame)) => Box::pin(async move {
                    let _ = queue.send(frame).await;
                    drop(held);
                }),
                Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => return,
            },
            Outbound::Sink(sink) => Box::pin(async move {
                let _ = sink.send(frame).await;
                drop(held);
            }),
        };
        // Tried once here; a transport that must wait finishes in a task.
        let mut tried = std::task::Context::from_waker(std::task::Waker::noop());
        if sending.as_mut().poll(&mut tried).is_pending()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(sending);
        }
    }

    /// Sends a request and deserializes its result.
    pub async fn request<P, R>(
        &self,
        method: &str,
        params: &P,
        options: RequestOptions,
    ) -> Result<R, RequestError>
    where
        P: Serialize + ?Sized,
        R: DeserializeOwned,
    {
        let params = jsonrpc::to_raw(params).map_err(|e| RequestError::Invalid(e.to_string()))?;
        let raw = self.request_raw(method, Some(params), options).await?;
        serde_json::from_str(raw.get())
            .map_err(|e| RequestError::Invalid(format!("result of {method}: {e}")))
    }

    /// Sends a request whose params are already JSON and returns the raw
    /// result. Dropping the future before the response comes sends
    /// `notifications/cancelled` (except for `initialize`).
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        options: RequestOptions,
    ) -> Result<Box<RawValue>, RequestError> {
        self.check_may_send(method, true)?;
        let id = RequestId::Number(self.shared.next_id.fetch_add(1, Ordering::Relaxed));
        let (progress_tx, mut progress_rx) = match &options.on_progress {
            Some(_) => {
                let (tx, rx) = mpsc::unbounded_channel();
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        let params = match (&options.on_progress, &id) {
            (Some(_), RequestId::Number(n)) => Some(with_progress_token(params.as_deref(), *n)?),
            _ => params,
        };
        let (reply_tx, mut reply_rx) = oneshot::channel();
        self.shared.pending().insert(
            id.clone(),
            Pending {
                reply: reply_tx,
                progress: progress_tx,
            },
        );
        // Closing the session clears `pending` after marking it closed:
        // a request entered after that is failed here, one entered before
        // sees its reply dropped, so the wait below needs no watch on the
        // session's end.
        if self.shared.closed.is_cancelled() {
            self.shared.pending().remove(&id);
            return Err(RequestError::ConnectionClosed);
        }
        let mut guard = CancelOnDrop {
            peer: self,
            id: &id,
            armed: method != methods::INITIALIZE,
        };
        let frame = jsonrpc::write_request(&id, method, params.as_deref());
        if let Err(e) = self.send(frame, FrameKind::Request).await {
            guard.armed = false;
            self.shared.pending().remove(&id);
            return Err(e);
        }

        let config = &self.shared.config;
        let step = options.timeout.unwrap_or(config.request_timeout);
        let start = Instant::now();
        let hard_limit = start
            + options
                .max_total_timeout
                .unwrap_or(config.max_request_timeout)
                .max(step);
        let mut deadline = (start + step).min(hard_limit);
        loop {
            tokio::select! {
                reply = &mut reply_rx => {
                    guard.armed = false;
                    // Progress sent before the response is delivered before it.
                    if let (Some(callback), Some(rx)) = (&options.on_progress, progress_rx.as_mut()) {
                        while let Ok(progress) = rx.try_recv() {
                            callback(progress);
                        }
                    }
                    return match reply {
                        Ok(Ok(result)) => Ok(result),
                        Ok(Err(error)) => Err(RequestError::Rpc(error)),
                        Err(_) => Err(RequestError::ConnectionClosed),
                    };
                }
                Some(progress) = recv_progress(&mut progress_rx) => {
                    if let Some(callback) = &options.on_progress {
                        callback(progress);
                    }
                    deadline = (Instant::now() + step).min(hard_limit);
                }
                _ = tokio::time::sleep_until(deadline) => {
                    return Err(RequestError::Timeout);
                }
            }
        }
    }

    /// Sends a frame, tagged with the request this handle is tied to.
    pub(crate) async fn send(&self, text: String, kind: FrameKind) -> Result<(), RequestError> {
        self.send_about(self.related.clone(), text, kind).await
    }

    /// Sends a frame tagged with the request `related`.
    pub(crate) async fn send_about(
        &self,
        related: Option<RequestId>,
        text: String,
        kind: FrameKind,
    ) -> Result<(), RequestError> {
        let frame = OutboundFrame {
            text,
            related,
            kind,
        };
        let sender = self.shared.sender().ok_or(RequestError::ConnectionClosed)?;
        sender.send(frame).await
    }

    /// Lifecycle and capability rules for what this side may send.
    fn check_may_send(&self, method: &str, is_request: bool) -> Result<(), RequestError> {
        let state = self.shared.state();
        let Role::Server(_) = &self.shared.config.role else {
            return Ok(());
        };
        if is_request && method == methods::PING {
            return Ok(());
        }
        match state.phase {
            Phase::Ready => {}
            Phase::Initializing if !is_request && method == methods::NOTIFICATION_MESSAGE => {
                return Ok(());
            }
            Phase::Fresh if !is_request => return Ok(()),
            Phase::Fresh => {
                return Err(RequestError::NotAllowed(format!(
                    "{method}: a stateless (2026-07-28) server cannot send requests; return input_required"
                )));
            }
            Phase::Initializing => {
                return Err(RequestError::NotAllowed(format!(
                    "{method}: the client has not sent notifications/initialized yet"
                )));
            }
        }
        if !is_request {
            return Ok(());
        }
        let caps = state.negotiated.as_ref().map(|n| &n.client_capabilities);
        let declared = match method {
            methods::SAMPLING_CREATE_MESSAGE => caps.is_some_and(|c| c.sampling.is_some()),
            methods::ROOTS_LIST => caps.is_some_and(|c| c.roots.is_some()),
            methods::ELICITATION_CREATE => caps.is_some_and(|c| c.elicitation.is_some()),
            _ => true,
        };
        if declared {
            Ok(())
        } else {
            Err(RequestError::NotAllowed(format!(
                "{method}: the client did not declare this capability"
            )))
        }
    }
}

async fn recv_progress(
    rx: &mut Option<mpsc::UnboundedReceiver<ProgressNotificationParams>>,
) -> Option<ProgressNotificationParams> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// Adds `_meta.progressToken` to request params.
fn with_progress_token(
    params: Option<&RawValue>,
    token: i64,
) -> Result<Box<RawValue>, RequestError> {
    let invalid = |e: serde_json::Error| RequestError::Invalid(e.to_string());
    let mut object: Map<String, Value> = match params {
        Some(raw) => serde_json::from_str(raw.get()).map_err(invalid)?,
        None => Map::new(),
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(mcp_schema::META_PROGRESS_TOKEN.into(), Value::from(token));
    }
    jsonrpc::to_raw(&object).map_err(invalid)
}

/// Sends `notifications/cancelled` if the request is abandoned (timeout or
/// the caller dropped the future) before its response came.
struct CancelOnDrop<'a> {
    peer: &'a Peer,
    id: &'a RequestId,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.peer.shared.pending().remove(self.id);
        let params = CancelledNotificationParams::new(
            self.id.clone(),
            Some("request abandoned by the sender".into()),
        );
        if let Ok(raw) = jsonrpc::to_raw(&params) {
            let text = jsonrpc::write_notification(methods::NOTIFICATION_CANCELLED, Some(&raw));
            let frame = OutboundFrame {
                text,
                related: self.peer.related.clone(),
                kind: FrameKind::Notification,
            };
            // Best effort: a full queue or a closed session means the peer
            // will not process the request anyway.
            if let Some(sender) = self.peer.shared.sender() {
                sender.send_detached(frame);
            }
        }
    }
}
