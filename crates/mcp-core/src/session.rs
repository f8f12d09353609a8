//! The session engine: reads frames, answers what the protocol itself
//! defines (lifecycle, ping, discovery, cancellation, progress), enforces
//! lifecycle and capability rules, and runs every other request
//! concurrently through the role's [`Service`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_schema::jsonrpc::{self, ErrorResponse, Frame, Message, Notification, Request, RequestId};
use mcp_schema::leading_meta::META_FIRST;
use mcp_schema::{
    CancelledNotificationParams, ErrorObject, InitializeRequestParams, InitializeResult,
    ProgressNotificationParams, ProtocolVersion, RequestMetaObject, methods,
};
use serde_json::value::RawValue;
use tokio::task::JoinHandle;
use tokio_util::task::TaskTracker;

use crate::context::{Progress, RequestContext};
use crate::extensions::Extensions;
use crate::identity::{Negotiated, Role, ServerIdentity, SessionConfig, StatelessClient};
use crate::in_flight::InFlight;
use crate::peer::{Outbound, Peer, Phase, Shared};
use crate::replies::{discover, empty_result, modern_revision, response_text, server_declares};
use crate::request_meta::{KnownMeta, leading_meta_end, members_after, meta_text, read_meta};
use crate::service::{HandlerResult, IncomingRequest, Service};
use crate::sync::MutexExt as _;
use crate::transport::{FrameKind, FrameSink, Inbound, InboundFrame, Transport};

/// How long a closing session waits for its last frames to be written.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// A session running on its own task.
#[derive(Debug)]
pub struct RunningSession {
    peer: Peer,
    task: JoinHandle<()>,
}

impl RunningSession {
    /// The handle to the peer.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Waits until the peer hangs up (or [`Peer::close`] was called and the
    /// transport finished).
    pub async fn wait(self) {
        let _ = self.task.await;
    }
}

/// Starts a session over `transport` on a new task.
pub fn serve(
    transport: Transport,
    service: Arc<dyn Service>,
    config: SessionConfig,
) -> RunningSession {
    let Transport {
        inbound,
        outbound,
        flushed,
    } = transport;
    let in_flight = InFlight::many(config.max_concurrent_requests);
    let engine = Engine::new(
        Outbound::Channel(outbound),
        service,
        Arc::new(config),
        in_flight,
    );
    let peer = engine.peer.clone();
    let task = tokio::spawn(async move {
        engine.run(inbound).await;
        if let Some(flushed) = flushed {
            let _ = tokio::time::timeout(FLUSH_TIMEOUT, flushed).await;
        }
    });
    RunningSession { peer, task }
}

/// A frame as a session's config reads it ([`SessionConfig::read_frame`]):
/// for a stateless request whose params open with a `_meta` the server has
/// read before, also what that `_meta` was read as, so that nothing reads
/// it again.
#[derive(Debug)]
pub struct ReadFrame {
    frame: Frame,
    known: Option<Recognised>,
}

/// The client whose remembered `_meta` text opens a request's params.
#[derive(Debug)]
struct Recognised {
    client: Arc<StatelessClient>,
    /// The length of that text.
    meta_len: usize,
}

impl Recognised {
    /// The recognised `_meta` text in `params`, right after their opening
    /// `{"_meta":`.
    fn meta_in<'p>(&self, params: &'p str) -> Option<&'p str> {
        params.get(META_FIRST.len()..META_FIRST.len() + self.meta_len)
    }
}

impl From<Frame> for ReadFrame {
    fn from(frame: Frame) -> Self {
        ReadFrame { frame, known: None }
    }
}

impl ReadFrame {
    /// The frame.
    pub fn frame(&self) -> &Frame {
        &self.frame
    }

    /// The frame, without what its `_meta` was read as.
    pub fn into_frame(self) -> Frame {
        self.frame
    }

    /// The recognised `_meta` of a stateless request and the params' other
    /// members; `None` where nothing was recognised.
    pub fn known_meta(&self) -> Option<KnownMeta<'_>> {
        let known = self.known.as_ref()?;
        let Frame::Single(Message::Request(request)) = &self.frame else {
            return None;
        };
        let params = request.params.as_deref()?.get();
        let end = leading_meta_end(params, known.meta_in(params)?)?;
        Some(KnownMeta {
            meta: Arc::clone(&known.client.meta),
            members: members_after(params, end)?,
        })
    }
}

impl SessionConfig {
    /// Parses a frame as [`Message::parse_frame`] does; a server reads a
    /// stateless request whose params open with a `_meta` it has read
    /// before (the same text, as a client repeats it with every request)
    /// without parsing that `_meta` again, and the frame keeps what that
    /// `_meta` was read as.
    pub fn read_frame(&self, text: &str) -> Result<ReadFrame, ErrorResponse> {
        if let Role::Server(identity) = &self.role {
            let mut known = None;
            let message = Message::parse_with_known_meta(text, |rest| {
                let (text, client) = identity.stateless_clients().recent_meta_opening(rest)?;
                known = Some(Recognised {
                    client,
                    meta_len: text.get().len(),
                });
                Some(text)
            });
            // The text compared equal where the params open: the client is
            // the one of this request's `_meta`.
            if let Some(message) = message {
                return Ok(ReadFrame {
                    frame: Frame::Single(message),
                    known,
                });
            }
        }
        Message::parse_frame(text).map(ReadFrame::from)
    }
}

/// A session its transport drives message by message, in the transport's
/// own tasks, with frames going out through a [`FrameSink`]. It has no task
/// or channel of its own, so an idle session is only its state: the shape
/// for transports where every message arrives on its own (HTTP).
#[derive(Clone)]
pub struct DirectSession {
    engine: Arc<Engine>,
}

impl std::fmt::Debug for DirectSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectSession").finish_non_exhaustive()
    }
}

impl DirectSession {
    /// A session whose frames go to `sink`.
    /// `config` may be shared (an `Arc`) by the many short-lived sessions of
    /// one endpoint.
    pub fn new(
        sink: Arc<dyn FrameSink>,
        service: Arc<dyn Service>,
        config: impl Into<Arc<SessionConfig>>,
    ) -> Self {
        let config = config.into();
        let in_flight = InFlight::many(config.max_concurrent_requests);
        Self::with_requests(sink, service, config, in_flight)
    }

    /// A session for a single message, such as a stateless HTTP request:
    /// lighter than [`DirectSession::new`], as its request needs no record
    /// of the requests in flight, no limit on them and no tracking. Its
    /// request is cancelled when the session closes; a second request is
    /// refused (-32600).
    pub fn for_one_message(
        sink: Arc<dyn FrameSink>,
        service: Arc<dyn Service>,
        config: impl Into<Arc<SessionConfig>>,
    ) -> Self {
        Self::with_requests(sink, service, config.into(), InFlight::one())
    }

    fn with_requests(
        sink: Arc<dyn FrameSink>,
        service: Arc<dyn Service>,
        config: Arc<SessionConfig>,
        in_flight: InFlight,
    ) -> Self {
        let engine = Engine::new(Outbound::Sink(sink), service, config, in_flight);
        DirectSession {
            engine: Arc::new(engine),
        }
    }

    /// The handle to the peer.
    pub fn peer(&self) -> &Peer {
        &self.engine.peer
    }

    /// Handles one frame. A single request runs in the returned future,
    /// which resolves once its response has gone to the sink; dropping the
    /// future abandons the request (no response is sent). The requests of a
    /// batch run on tasks of their own, and the array goes to the sink when
    /// the last is answered.
    pub fn handle(&self, frame: InboundFrame) -> impl Future<Output = ()> + Send + 'static {
        let engine = Arc::clone(&self.engine);
        async move { engine.on_inbound(frame, Dispatch::Inline).await }
    }

    /// Like [`DirectSession::handle`], for a frame the transport has
    /// already parsed (to route it), so it is not parsed twice.
    pub fn handle_parsed(
        &self,
        frame: Frame,
        extensions: Option<Arc<Extensions>>,
    ) -> impl Future<Output = ()> + Send + 'static {
        let engine = Arc::clone(&self.engine);
        async move { engine.on_parsed(frame, extensions, Dispatch::Inline).await }
    }

    /// Like [`DirectSession::handle_parsed`], but the response to a single
    /// request is returned instead of sent to the sink: the text of the
    /// response, or an empty text when the request was cancelled and gets
    /// none. What the handler sends meanwhile still goes to the sink; other
    /// frames are handled as `handle_parsed` handles them, and give `None`.
    pub fn answer_parsed(
        &self,
        read: ReadFrame,
        extensions: Option<Arc<Extensions>>,
    ) -> impl Future<Output = Option<String>> + Send + 'static {
        let engine = Arc::clone(&self.engine);
        async move {
            engine
                .on_read(read, Reply::Caller, extensions, Dispatch::Inline)
                .await
        }
    }

    /// Ends the session: requests still running are cancelled, waiting
    /// outgoing requests fail, and the service hears that it closed.
    pub fn close(&self) {
        let engine = &self.engine;
        if engine.shared.closed.is_cancelled() {
            return;
        }
        engine.shared.in_flight.close();
        engine.service.session_closed(&engine.peer);
        engine.shared.close();
    }
}

struct Engine {
    shared: Arc<Shared>,
    service: Arc<dyn Service>,
    peer: Peer,
    /// The `_meta` member naming this server on modern-era results.
    server_meta: Option<Arc<str>>,
}

/// How a request's handler runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dispatch {
    /// On a task of its own unless it finishes on its first poll, so the
    /// reading loop goes on (a session task).
    Spawn,
    /// In the caller's future (a transport driving the session).
    Inline,
}

/// Where a request's response goes: straight to the peer, into the array
/// answering a batch, or back to the transport that handed the request in.
#[derive(Clone)]
enum Reply {
    Direct,
    Batch(Arc<BatchReply>),
    Caller,
}

struct BatchReply {
    remaining: AtomicUsize,
    responses: Mutex<Vec<String>>,
    /// The first request of the batch: the array of responses is tied to
    /// it, so a transport routes the array where that request came from.
    first: Option<RequestId>,
}

impl Engine {
    fn new(
        outbound: Outbound,
        service: Arc<dyn Service>,
        config: Arc<SessionConfig>,
        in_flight: InFlight,
    ) -> Self {
        let server_meta = match &config.role {
            Role::Server(identity) => identity.meta_member.clone(),
            Role::Client(_) => None,
        };
        let shared = Arc::new(Shared::new(outbound, config, in_flight));
        let peer = Peer {
            shared: Arc::clone(&shared),
            related: None,
        };
        Engine {
            server_meta,
            shared,
            service,
            peer,
        }
    }

    async fn run(self, mut inbound: Inbound) {
        while let Some(frame) = inbound.recv().await {
            self.on_inbound(frame, Dispatch::Spawn).await;
        }
        // The peer stopped sending: the requests in flight get a grace
        // period to answer (their responses may still be read), then what
        // is left is cancelled and the transport let go.
        self.shared.in_flight.close();
        let grace = self.shared.config.shutdown_grace;
        if tokio::time::timeout(grace, self.shared.in_flight.wait())
            .await
            .is_err()
        {
            self.shared.in_flight.cancel_all();
            self.shared.in_flight.wait().await;
        }
        self.service.session_closed(&self.peer);
        self.shared.close();
    }

    /// One frame from the transport, however it arrived.
    async fn on_inbound(&self, frame: InboundFrame, dispatch: Dispatch) {
        match frame {
            InboundFrame::Text(text) => self.on_frame(&text, None, dispatch).await,
            InboundFrame::WithExtensions(text, extensions) => {
                self.on_frame(&text, Some(extensions), dispatch).await
            }
            InboundFrame::Parsed(frame, extensions) => {
                self.on_parsed(frame, extensions, dispatch).await
            }
            InboundFrame::Unreadable(reason) => {
                self.send_error(None, ErrorObject::parse_error(reason))
                    .await;
            }
        }
    }

    async fn on_frame(&self, text: &str, extensions: Option<Arc<Extensions>>, dispatch: Dispatch) {
        match self.shared.config.read_frame(text) {
            Ok(read) => {
                self.on_read(read, Reply::Direct, extensions, dispatch)
                    .await;
            }
            Err(ErrorResponse { id, error }) => self.send_error(id, error).await,
        }
    }

    /// A frame its config read: a single request with what its `_meta`
    /// was read as, anything else as parsed. The response to a single
    /// request goes to `reply`.
    async fn on_read(
        &self,
        read: ReadFrame,
        reply: Reply,
        extensions: Option<Arc<Extensions>>,
        dispatch: Dispatch,
    ) -> Option<String> {
        match read.frame {
            Frame::Single(Message::Request(request)) => {
                self.on_request(request, read.known, reply, extensions, dispatch)
                    .await
            }
            // Boxed: a request's future would otherwise be as large as
            // this path's.
            frame => {
                Box::pin(self.on_parsed(frame, extensions, dispatch)).await;
                None
            }
        }
    }

    async fn on_parsed(
        &self,
        frame: Frame,
        extensions: Option<Arc<Extensions>>,
        dispatch: Dispatch,
    ) {
        match frame {
            Frame::Single(message) => {
                self.on_message(message, Reply::Direct, extensions, dispatch)
                    .await
            }
            Frame::Batch(items) => Box::pin(self.on_batch(items, extensions)).await,
        }
    }

    async fn on_batch(
        &self,
        items: Vec<Result<Message, ErrorResponse>>,
        extensions: Option<Arc<Extensions>>,
    ) {
        let revision = self
            .shared
            .state()
            .negotiated
            .as_ref()
            .and_then(|n| n.revision);
        if !revision.is_some_and(ProtocolVersion::supports_batching) {
            let why = match revision {
                Some(v) => format!("JSON-RPC batches are not part of protocol revision {v}"),
                None => "JSON-RPC batches need an initialized 2025-03-26 session".to_owned(),
            };
            return self
                .send_error(None, ErrorObject::invalid_request(why))
                .await;
        }
        // Every request and every malformed element gets one slot; the
        // array goes out when the last of them is answered.
        let expected = items
            .iter()
            .filter(|m| matches!(m, Ok(Message::Request(_)) | Err(_)))
            .count();
        let first = items.iter().find_map(|m| match m {
            Ok(Message::Request(r)) => Some(r.id.clone()),
            _ => None,
        });
        let batch = Arc::new(BatchReply {
            remaining: AtomicUsize::new(expected),
            responses: Mutex::new(Vec::new()),
            first,
        });
        for item in items {
            match item {
                Ok(Message::Request(req)) if req.method == methods::INITIALIZE => {
                    let error =
                        ErrorObject::invalid_request("initialize must not be part of a batch");
                    self.deliver(
                        &Reply::Batch(Arc::clone(&batch)),
                        jsonrpc::write_error(Some(&req.id), &error),
                        None,
                    )
                    .await;
                }
                // Spawned: the requests of a batch run side by side.
                Ok(message) => {
                    self.on_message(
                        message,
                        Reply::Batch(Arc::clone(&batch)),
                        extensions.clone(),
                        Dispatch::Spawn,
                    )
                    .await
                }
                Err(ErrorResponse { id, error }) => {
                    self.deliver(
                        &Reply::Batch(Arc::clone(&batch)),
                        jsonrpc::write_error(id.as_ref(), &error),
                        None,
                    )
                    .await;
                }
            }
        }
    }

    async fn on_message(
        &self,
        message: Message,
        reply: Reply,
        extensions: Option<Arc<Extensions>>,
        dispatch: Dispatch,
    ) {
        match message {
            Message::Request(req) => {
                self.on_request(req, None, reply, extensions, dispatch)
                    .await;
            }
            Message::Notification(n) => self.on_notification(n).await,
            Message::Response(r) => self.shared.complete(&r.id, Ok(r.result)),
            Message::Error(e) => match e.id {
                Some(id) => self.shared.complete(&id, Err(e.error)),
                None => tracing::warn!("peer reported an error: {}", e.error),
            },
        }
    }

    /// Handles a request; the response's text comes back for
    /// [`Reply::Caller`] (`None` for the other replies, which send it).
    async fn on_request(
        &self,
        req: Request,
        known: Option<Recognised>,
        reply: Reply,
        extensions: Option<Arc<Extensions>>,
        dispatch: Dispatch,
    ) -> Option<String> {
        // A spawned handler's response handed back would reach no one.
        debug_assert!(
            dispatch == Dispatch::Inline || !matches!(reply, Reply::Caller),
            "a caller's reply runs inline"
        );
        let Request { id, method, params } = req;
        let admitted = match self.admit(&method, params.as_deref(), known) {
            Ok(Admission::Answer(result, revision)) => {
                let text = response_text(&id, result, revision, self.server_meta.as_deref());
                return self.deliver(&reply, text, Some(&id)).await;
            }
            Ok(Admission::Handle(admitted)) => admitted,
            Err(error) => {
                return self
                    .deliver(&reply, jsonrpc::write_error(Some(&id), &error), Some(&id))
                    .await;
            }
        };
        let mut running = match self.shared.in_flight.start(&id, &self.shared.closed) {
            Ok(running) => running,
            Err(error) => {
                return self
                    .deliver(&reply, jsonrpc::write_error(Some(&id), &error), Some(&id))
                    .await;
            }
        };
        if !running.admitted().await {
            return None;
        }
        let peer = self.peer.related_to(Some(id.clone()));
        let progress = Progress::new(admitted.meta.progress_token.clone(), &peer);
        let ctx = RequestContext {
            id: id.clone(),
            revision: admitted.revision,
            negotiated: admitted.negotiated,
            meta: admitted.meta,
            cancellation: running.cancel.clone(),
            progress: progress.clone(),
            peer,
            extensions,
        };
        let request = IncomingRequest {
            method,
            params,
            leading_meta_end: admitted.leading_meta_end,
        };
        let handler = self.service.handle_request(request, ctx);
        let engine_peer = self.peer.clone();
        let server_meta = self.server_meta.clone();
        let work = async move {
            let outcome = tokio::select! {
                // The handler first: one that finishes at once (most do)
                // is answered without a wait for cancellation set up.
                // Cancellation still wins a tie: a cancelled request is
                // never answered.
                biased;
                result = handler => Some(result).filter(|_| !running.cancel.is_cancelled()),
                _ = running.cancel.cancelled() => None,
            };
            // The id is free again once its response goes out.
            drop(running);
            progress.finish();
            let text = match outcome {
                Some(result) => {
                    response_text(&id, result, Some(admitted.revision), server_meta.as_deref())
                }
                // Cancelled: the peer expects no response. A batch still
                // needs its slot released.
                None => String::new(),
            };
            deliver_to(&engine_peer, &reply, text, Some(&id)).await
        };
        match dispatch {
            Dispatch::Spawn => {
                self.shared.in_flight.run_aside(async move {
                    work.await;
                });
                None
            }
            Dispatch::Inline => {
                // One of the session's tasks while it runs; tracked by a
                // token rather than a wrapper, so `work` is not moved again.
                let _tracked = self.shared.in_flight.tracker().map(TaskTracker::token);
                work.await
            }
        }
    }

    /// Lifecycle, version and capability checks; answers what the engine
    /// itself owns.
    fn admit(
        &self,
        method: &str,
        params: Option<&RawValue>,
        known: Option<Recognised>,
    ) -> Result<Admission, ErrorObject> {
        match &self.shared.config.role {
            Role::Server(identity) => self.admit_server(identity, method, params, known),
            Role::Client(identity) => {
                let meta = read_meta(meta_text(params)?)?;
                if method == methods::PING {
                    return Ok(Admission::Answer(Ok(empty_result()), None));
                }
                let declared = match method {
                    methods::SAMPLING_CREATE_MESSAGE => identity.capabilities.sampling.is_some(),
                    methods::ROOTS_LIST => identity.capabilities.roots.is_some(),
                    methods::ELICITATION_CREATE => identity.capabilities.elicitation.is_some(),
                    _ => true,
                };
                if !declared {
                    return Err(ErrorObject::method_not_found(method));
                }
                let negotiated = self.shared.state().negotiated.clone().unwrap_or_default();
                Ok(Admission::Handle(Admitted {
                    revision: negotiated.revision_in_force(),
                    negotiated,
                    meta,
                    leading_meta_end: None,
                }))
            }
        }
    }

    fn admit_server(
        &self,
        identity: &ServerIdentity,
        method: &str,
        params: Option<&RawValue>,
        recognised: Option<Recognised>,
    ) -> Result<Admission, ErrorObject> {
        let clients = identity.stateless_clients();
        // Recognised when the frame was read, or now.
        let recognised = recognised
            .and_then(|r| Some((r.meta_in(params?.get())?, r.client)))
            .or_else(|| params.and_then(|p| clients.recognise(p.get())));
        let (meta_text, known) = match recognised {
            Some((text, client)) => (Some(text), Some(client)),
            None => {
                let text = meta_text(params)?;
                (text, text.and_then(|text| clients.get(text)))
            }
        };
        let meta = match &known {
            Some(client) => Arc::clone(&client.meta),
            None => read_meta(meta_text)?,
        };
        // A request that names a modern revision in `_meta` is served
        // statelessly; `initialize` does not exist there.
        let modern = known.is_some()
            || meta
                .protocol_version
                .as_deref()
                .and_then(|v| v.parse::<ProtocolVersion>().ok())
                .is_some_and(|v| !v.is_legacy());
        if method == methods::INITIALIZE && !modern {
            return self
                .initialize(identity, params)
                .map(|r| Admission::Answer(Ok(r), None));
        }
        let mut state = self.shared.state();
        let mut became_ready = false;
        let negotiated = match (state.phase, &state.negotiated) {
            (Phase::Ready, Some(negotiated)) => Arc::clone(negotiated),
            (Phase::Initializing, Some(negotiated)) => {
                let negotiated = Arc::clone(negotiated);
                // A client's request (a ping aside) says it is past its
                // handshake, whether or not its `notifications/initialized`
                // came first: over HTTP the two race on separate
                // connections, or reach different instances sharing the
                // session.
                if method != methods::PING {
                    state.phase = Phase::Ready;
                    became_ready = true;
                }
                negotiated
            }
            // Legacy clients may ping before initializing.
            _ if method == methods::PING && meta.protocol_version.is_none() => {
                return Ok(Admission::Answer(Ok(empty_result()), None));
            }
            _ => match known {
                Some(client) => Arc::clone(&client.negotiated),
                None => {
                    let revision = modern_revision(method, &meta)?;
                    let client =
                        Arc::new(StatelessClient::new(identity, Arc::clone(&meta), revision));
                    if let Some(text) = meta_text {
                        identity.stateless_clients().remember(text, &client);
                    }
                    Arc::clone(&client.negotiated)
                }
            },
        };
        drop(state);
        if became_ready {
            self.service.session_ready(&self.peer);
        }
        let revision = negotiated.revision_in_force();
        if !revision.defines_client_request(method) {
            return Err(
                ErrorObject::method_not_found(method).with_data(serde_json::json!({
                    "reason": format!("{method} is not part of protocol revision {revision}"),
                })),
            );
        }
        match method {
            methods::PING => Ok(Admission::Answer(Ok(empty_result()), Some(revision))),
            methods::SERVER_DISCOVER => Ok(Admission::Answer(
                discover(identity, revision),
                Some(revision),
            )),
            _ if !server_declares(&identity.capabilities, method) => {
                Err(ErrorObject::method_not_found(method))
            }
            _ => Ok(Admission::Handle(Admitted {
                revision,
                negotiated,
                meta,
                leading_meta_end: params
                    .zip(meta_text)
                    .and_then(|(params, text)| leading_meta_end(params.get(), text)),
            })),
        }
    }

    fn initialize(
        &self,
        identity: &ServerIdentity,
        params: Option<&RawValue>,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let params: InitializeRequestParams = jsonrpc::from_params(params)?;
        let mut state = self.shared.state();
        if state.phase != Phase::Fresh {
            return Err(ErrorObject::invalid_request(
                "the session is already initialized",
            ));
        }
        let revision = ProtocolVersion::negotiate_legacy(&params.protocol_version);
        let mut result = InitializeResult::new(
            revision.as_str(),
            revision.server_capabilities(&identity.capabilities),
            identity.info.clone(),
        );
        result.instructions = identity.instructions();
        state.negotiated = Some(Arc::new(Negotiated {
            revision: Some(revision),
            client_info: Some(params.client_info),
            client_capabilities: params.capabilities,
            server_info: Some(identity.info.clone()),
            server_capabilities: identity.capabilities.clone(),
        }));
        state.phase = Phase::Initializing;
        // Answered inline, so it is never in flight and a cancellation for
        // it finds nothing to cancel, as the specification requires.
        jsonrpc::to_raw(&result).map_err(ErrorObject::internal)
    }

    async fn on_notification(&self, n: Notification) {
        match n.method.as_str() {
            methods::NOTIFICATION_CANCELLED => {
                let Ok(params) =
                    jsonrpc::from_params::<CancelledNotificationParams>(n.params.as_deref())
                else {
                    return tracing::debug!("ignoring a malformed cancellation");
                };
                let Some(id) = params.request_id else { return };
                if !self.shared.in_flight.cancel(&id) {
                    tracing::debug!(%id, "cancellation for an unknown or finished request");
                }
            }
            methods::NOTIFICATION_PROGRESS => {
                match jsonrpc::from_params::<ProgressNotificationParams>(n.params.as_deref()) {
                    Ok(params) => self.shared.progress(params),
                    Err(e) => tracing::debug!("ignoring malformed progress: {e}"),
                }
            }
            methods::NOTIFICATION_INITIALIZED
                if matches!(self.shared.config.role, Role::Server(_)) =>
            {
                let became_ready = {
                    let mut state = self.shared.state();
                    let was = state.phase;
                    if was == Phase::Initializing {
                        state.phase = Phase::Ready;
                    }
                    was == Phase::Initializing
                };
                if became_ready {
                    self.service.session_ready(&self.peer);
                }
            }
            _ => self.service.handle_notification(n, self.peer.clone()).await,
        }
    }

    async fn send_error(&self, id: Option<RequestId>, error: ErrorObject) {
        let text = jsonrpc::write_error(id.as_ref(), &error);
        deliver_to(&self.peer, &Reply::Direct, text, id.as_ref()).await;
    }

    async fn deliver(&self, reply: &Reply, text: String, id: Option<&RequestId>) -> Option<String> {
        deliver_to(&self.peer, reply, text, id).await
    }
}

/// Sends a response, or files it in its batch and sends the batch when it
/// is complete, or hands it back for the caller to send. An empty `text`
/// releases a batch slot without a response. The sends are boxed: every
/// request's future holds this one, and most hand their text back.
async fn deliver_to(
    peer: &Peer,
    reply: &Reply,
    text: String,
    id: Option<&RequestId>,
) -> Option<String> {
    match reply {
        Reply::Caller => return Some(text),
        Reply::Direct => {
            // An empty text: the request was cancelled; the transport hears
            // that its exchange is over, and writes nothing.
            let kind = if text.is_empty() {
                FrameKind::Ended
            } else {
                FrameKind::Response
            };
            if !text.is_empty() || id.is_some() {
                let _ = Box::pin(peer.send_about(id.cloned(), text, kind)).await;
            }
        }
        Reply::Batch(batch) => {
            let ready = {
                let mut responses = batch.responses.locked();
                if !text.is_empty() {
                    responses.push(text);
                }
                if batch.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                    Some(std::mem::take(&mut *responses))
                } else {
                    None
                }
            };
            if let Some(responses) = ready.filter(|r| !r.is_empty()) {
                let array = format!("[{}]", responses.join(","));
                let sending = peer.send_about(batch.first.clone(), array, FrameKind::Response);
                let _ = Box::pin(sending).await;
            }
        }
    }
    None
}

enum Admission {
    /// The engine answers right away (initialize, ping, discover).
    Answer(HandlerResult, Option<ProtocolVersion>),
    /// The role's service handles it.
    Handle(Admitted),
}

struct Admitted {
    revision: ProtocolVersion,
    negotiated: Arc<Negotiated>,
    meta: Arc<RequestMetaObject>,
    /// Where the `_meta` member opening the params ends, if it does.
    leading_meta_end: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_type_is_added_once() {
        // The result as the response carries it, in the modern era.
        let completed = |result: &str, meta: Option<&str>| {
            let raw = RawValue::from_string(result.to_owned()).unwrap();
            let id = RequestId::Number(7);
            let text = response_text(&id, Ok(raw), Some(ProtocolVersion::LATEST), meta);
            let response: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
            assert_eq!(response["id"], 7);
            assert_eq!(response["jsonrpc"], "2.0");
            let prefix = r#"{"jsonrpc":"2.0","id":7,"result":"#;
            text.strip_prefix(prefix)
                .unwrap()
                .strip_suffix('}')
                .unwrap()
                .to_owned()
        };
        // Present after other members: kept as it is.
        let task = r#"{"_meta":{},"resultType":"task","taskId":"t"}"#;
        assert_eq!(completed(task, None), task);
        // Only mentioned inside a value: still added.
        assert_eq!(
            completed(r#"{"text":"\"resultType\""}"#, None),
            r#"{"resultType":"complete","text":"\"resultType\""}"#
        );
        let meta = r#""_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}"#;
        assert_eq!(
            completed(r#"{"a":1}"#, Some(meta)),
            format!(r#"{{"resultType":"complete",{meta},"a":1}}"#)
        );
        assert_eq!(
            completed(r#"{"_meta":{"k":1}}"#, Some(meta)),
            r#"{"resultType":"complete","_meta":{"k":1}}"#,
            "a result with its own _meta keeps it"
        );
        assert_eq!(completed("{}", None), r#"{"resultType":"complete"}"#);
        assert_eq!(completed(" { } ", None), r#"{"resultType":"complete"}"#);
        assert_eq!(
            completed(r#"{"a":1}"#, None),
            r#"{"resultType":"complete","a":1}"#
        );
        let input = r#"{"resultType":"input_required","requestState":"x"}"#;
        assert_eq!(completed(input, None), input);
        // A string id is written as JSON.
        let raw = RawValue::from_string("{}".to_owned()).unwrap();
        let text = response_text(
            &RequestId::String("a\"b".into()),
            Ok(raw),
            Some(ProtocolVersion::LATEST),
            None,
        );
        let response: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(response["id"], "a\"b");
        assert_eq!(response["result"]["resultType"], "complete");
    }
}
