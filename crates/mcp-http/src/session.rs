//! Legacy-era HTTP sessions: one engine session per `Mcp-Session-Id`, and a
//! router task that puts each outgoing message on exactly one stream.
//!
//! The router task owns the map from requests to streams, so registering a
//! stream, attaching a resumed connection and delivering a message happen in
//! one order: every message is stored (for resumption) before it is sent,
//! and a resumed connection gets what it missed, then what follows, with
//! nothing lost or repeated.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::{
    FrameKind, InboundFrame, OutboundFrame, Peer, RunningSession, Service, SessionConfig, Transport,
};
use mcp_schema::ProtocolVersion;
use mcp_schema::jsonrpc::RequestId;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::event_store::{EventId, EventStore, StreamId};

/// One message on its way to an HTTP response stream.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    /// The JSON-RPC message.
    pub(crate) text: Arc<str>,
    /// Its SSE event id, where the session is resumable.
    pub(crate) event_id: Option<EventId>,
    /// The response that ends the stream.
    pub(crate) last: bool,
}

/// The id of the standalone (GET) stream of a session.
const STANDALONE: &str = "0";

/// Instructions to a session's router task.
enum Control {
    /// Messages about these requests go to a new stream, which starts with
    /// a priming event when `priming` is set.
    Open {
        requests: Vec<RequestId>,
        stream: StreamId,
        sink: mpsc::UnboundedSender<Delivery>,
        priming: bool,
    },
    /// A connection for the standalone stream.
    OpenStandalone {
        sink: mpsc::UnboundedSender<Delivery>,
        priming: bool,
        taken: oneshot::Sender<bool>,
    },
    /// A connection resuming after `last_event_id`.
    Resume {
        last_event_id: String,
        sink: mpsc::UnboundedSender<Delivery>,
        done: oneshot::Sender<ResumeOutcome>,
    },
}

/// What became of a resumption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResumeOutcome {
    /// Missed events were sent and the stream goes on live.
    Live,
    /// Missed events were sent; the stream had already ended.
    Ended,
    /// The event id is unknown or too old.
    Unknown,
}

/// A live legacy session.
pub(crate) struct HttpSession {
    pub(crate) id: Arc<str>,
    inbound: mpsc::Sender<InboundFrame>,
    control: mpsc::UnboundedSender<Control>,
    pub(crate) peer: Peer,
    last_active: Mutex<Instant>,
    open_streams: AtomicUsize,
    next_stream: AtomicU64,
    store: Arc<dyn EventStore>,
}

impl HttpSession {
    /// Starts the engine session and its router.
    fn start(
        id: Arc<str>,
        service: Arc<dyn Service>,
        config: SessionConfig,
        store: Arc<dyn EventStore>,
    ) -> (Arc<HttpSession>, RunningSession) {
        let (in_tx, in_rx) = mpsc::channel(mcp_core::DEFAULT_CHANNEL_CAPACITY);
        let (out_tx, out_rx) = mpsc::channel(mcp_core::DEFAULT_CHANNEL_CAPACITY);
        let running = mcp_core::serve(
            Transport {
                inbound: in_rx,
                outbound: out_tx,
                flushed: None,
            },
            service,
            config,
        );
        let (control_tx, control_rx) = mpsc::unbounded_channel();
        let session = Arc::new(HttpSession {
            id: Arc::clone(&id),
            inbound: in_tx,
            control: control_tx,
            peer: running.peer().clone(),
            last_active: Mutex::new(Instant::now()),
            open_streams: AtomicUsize::new(0),
            next_stream: AtomicU64::new(1),
            store: Arc::clone(&store),
        });
        tokio::spawn(
            Router {
                session: id,
                store,
                streams: HashMap::new(),
                by_request: HashMap::new(),
            }
            .run(out_rx, control_rx),
        );
        (session, running)
    }

    /// Marks the session as used now.
    pub(crate) fn touch(&self) {
        *self.last_active.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    fn idle_for(&self) -> Duration {
        self.last_active
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .elapsed()
    }

    /// The revision negotiated at `initialize`.
    pub(crate) fn revision(&self) -> Option<ProtocolVersion> {
        self.peer.negotiated().and_then(|n| n.revision)
    }

    /// Hands a frame to the engine.
    pub(crate) async fn feed(
        &self,
        text: String,
        extensions: Option<Arc<mcp_core::Extensions>>,
    ) -> bool {
        self.inbound
            .send(InboundFrame::new(text, extensions))
            .await
            .is_ok()
    }

    /// Opens a stream for the responses to `requests`; deliveries arrive on
    /// the returned receiver. Call before feeding the requests.
    pub(crate) fn open_stream(
        &self,
        requests: Vec<RequestId>,
    ) -> mpsc::UnboundedReceiver<Delivery> {
        let (sink, rx) = mpsc::unbounded_channel();
        let stream = self.next_stream.fetch_add(1, Ordering::Relaxed).to_string();
        let priming = self.primes_streams();
        let _ = self.control.send(Control::Open {
            requests,
            stream,
            sink,
            priming,
        });
        rx
    }

    /// Streams start with a priming event from 2025-11-25 on (SEP-1699):
    /// older clients may not expect an event without data.
    fn primes_streams(&self) -> bool {
        self.revision()
            .is_some_and(|v| v >= ProtocolVersion::V2025_11_25)
    }

    /// Opens the standalone stream; `None` if one is already open.
    pub(crate) async fn open_standalone(&self) -> Option<mpsc::UnboundedReceiver<Delivery>> {
        let (sink, rx) = mpsc::unbounded_channel();
        let (taken, answer) = oneshot::channel();
        let priming = self.primes_streams();
        self.control
            .send(Control::OpenStandalone {
                sink,
                priming,
                taken,
            })
            .ok()?;
        answer.await.ok().filter(|ok| *ok).map(|_| rx)
    }

    /// Resumes the stream of `last_event_id` on a new connection.
    pub(crate) async fn resume(
        &self,
        last_event_id: String,
    ) -> (ResumeOutcome, mpsc::UnboundedReceiver<Delivery>) {
        let (sink, rx) = mpsc::unbounded_channel();
        let (done, answer) = oneshot::channel();
        let _ = self.control.send(Control::Resume {
            last_event_id,
            sink,
            done,
        });
        (answer.await.unwrap_or(ResumeOutcome::Unknown), rx)
    }

    /// Counts an open SSE connection; the session does not expire while it lasts.
    pub(crate) fn stream_opened(self: &Arc<Self>) -> StreamGuard {
        self.open_streams.fetch_add(1, Ordering::Relaxed);
        StreamGuard(Arc::clone(self))
    }

    /// Ends the session: the engine stops, streams end, stored events go.
    pub(crate) async fn close(&self) {
        self.peer.close();
        self.store.drop_session(&self.id).await;
    }
}

/// Keeps a session alive while an SSE connection is open.
pub(crate) struct StreamGuard(Arc<HttpSession>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

/// The per-session task that decides where each outgoing message goes.
struct Router {
    session: Arc<str>,
    store: Arc<dyn EventStore>,
    /// Live connections by stream.
    streams: HashMap<StreamId, mpsc::UnboundedSender<Delivery>>,
    /// Which stream carries the messages about a request.
    by_request: HashMap<RequestId, StreamId>,
}

impl Router {
    async fn run(
        mut self,
        mut outbound: mpsc::Receiver<OutboundFrame>,
        mut control: mpsc::UnboundedReceiver<Control>,
    ) {
        loop {
            tokio::select! {
                // Instructions first: a stream is registered before the engine
                // can answer the request it is for.
                biased;
                Some(instruction) = control.recv() => self.on_control(instruction).await,
                frame = outbound.recv() => match frame {
                    Some(frame) => self.deliver(frame).await,
                    None => break,
                },
            }
        }
    }

    async fn on_control(&mut self, instruction: Control) {
        match instruction {
            Control::Open {
                requests,
                stream,
                sink,
                priming,
            } => {
                for id in requests {
                    self.by_request.insert(id, stream.clone());
                }
                if priming {
                    self.prime(&stream, &sink).await;
                }
                self.streams.insert(stream, sink);
            }
            Control::OpenStandalone {
                sink,
                priming,
                taken,
            } => {
                let busy = self.streams.get(STANDALONE).is_some_and(|s| !s.is_closed());
                if !busy {
                    if priming {
                        self.prime(STANDALONE, &sink).await;
                    }
                    self.streams.insert(STANDALONE.to_owned(), sink);
                }
                let _ = taken.send(!busy);
            }
            Control::Resume {
                last_event_id,
                sink,
                done,
            } => {
                let outcome = match self.store.replay_after(&self.session, &last_event_id).await {
                    Ok(replay) => {
                        for (id, text) in replay
                            .events
                            .into_iter()
                            .filter(|(_, text)| !text.is_empty())
                        {
                            let _ = sink.send(Delivery {
                                text,
                                event_id: Some(id),
                                last: false,
                            });
                        }
                        let live = replay.stream == STANDALONE
                            || self.by_request.values().any(|s| *s == replay.stream);
                        if live {
                            self.streams.insert(replay.stream, sink);
                            ResumeOutcome::Live
                        } else {
                            ResumeOutcome::Ended
                        }
                    }
                    Err(_) => ResumeOutcome::Unknown,
                };
                let _ = done.send(outcome);
            }
        }
    }

    /// Stores an empty event at the start of `stream` and sends it, so the
    /// client has an id to resume from before any message arrives.
    async fn prime(&self, stream: &str, sink: &mpsc::UnboundedSender<Delivery>) {
        let id = self
            .store
            .append(&self.session, stream, Arc::from(""))
            .await;
        let _ = sink.send(Delivery {
            text: Arc::from(""),
            event_id: Some(id),
            last: false,
        });
    }

    async fn deliver(&mut self, frame: OutboundFrame) {
        if frame.kind == FrameKind::Ended {
            return self.request_ended(frame.related.as_ref());
        }
        let stream = frame
            .related
            .as_ref()
            .and_then(|id| self.by_request.get(id))
            .cloned()
            .unwrap_or_else(|| STANDALONE.to_owned());
        let text: Arc<str> = Arc::from(frame.text);
        let event_id = Some(
            self.store
                .append(&self.session, &stream, Arc::clone(&text))
                .await,
        );
        let last = frame.kind == FrameKind::Response && stream != STANDALONE;
        if let Some(sink) = self.streams.get(&stream) {
            // A dropped connection is not a cancellation: the message stays
            // in the store for a resuming client.
            let _ = sink.send(Delivery {
                text,
                event_id,
                last,
            });
        }
        if last {
            self.streams.remove(&stream);
            self.by_request.retain(|_, s| *s != stream);
        }
    }

    /// A request ended without a response (cancelled): its stream ends
    /// once no other request of it is pending.
    fn request_ended(&mut self, id: Option<&RequestId>) {
        let Some(stream) = id.and_then(|id| self.by_request.remove(id)) else {
            return;
        };
        if !self.by_request.values().any(|s| *s == stream) {
            self.streams.remove(&stream);
        }
    }
}

/// Why a new session could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionLimit {
    /// The cap on live sessions is reached.
    Full,
}

/// All live legacy sessions of an endpoint.
pub(crate) struct SessionManager {
    sessions: Mutex<HashMap<Arc<str>, Arc<HttpSession>>>,
    max: usize,
    idle_timeout: Duration,
    store: Arc<dyn EventStore>,
}

impl SessionManager {
    pub(crate) fn new(max: usize, idle_timeout: Duration, store: Arc<dyn EventStore>) -> Arc<Self> {
        let manager = Arc::new(SessionManager {
            sessions: Mutex::new(HashMap::new()),
            max,
            idle_timeout,
            store,
        });
        let weak = Arc::downgrade(&manager);
        let every = (idle_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            loop {
                ticks.tick().await;
                let Some(manager) = weak.upgrade() else { break };
                manager.expire().await;
            }
        });
        manager
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Arc<HttpSession>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new session with a fresh random id.
    pub(crate) fn create(
        &self,
        service: Arc<dyn Service>,
        config: SessionConfig,
    ) -> Result<Arc<HttpSession>, SessionLimit> {
        if self.map().len() >= self.max {
            return Err(SessionLimit::Full);
        }
        let id: Arc<str> = Arc::from(new_session_id());
        let (session, running) =
            HttpSession::start(Arc::clone(&id), service, config, Arc::clone(&self.store));
        tokio::spawn(running.wait());
        self.map().insert(id, Arc::clone(&session));
        Ok(session)
    }

    /// The live session with this id.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.map().get(id).cloned()
    }

    /// Ends and forgets a session; whether it existed.
    pub(crate) async fn remove(&self, id: &str) -> bool {
        let session = self.map().remove(id);
        match session {
            Some(session) => {
                session.close().await;
                true
            }
            None => false,
        }
    }

    /// How many sessions are live.
    pub(crate) fn len(&self) -> usize {
        self.map().len()
    }

    /// Ends sessions idle for longer than the timeout (an open stream
    /// counts as use).
    async fn expire(&self) {
        let expired: Vec<Arc<HttpSession>> = {
            let mut map = self.map();
            let ids: Vec<Arc<str>> = map
                .values()
                .filter(|s| {
                    s.open_streams.load(Ordering::Relaxed) == 0 && s.idle_for() > self.idle_timeout
                })
                .map(|s| Arc::clone(&s.id))
                .collect();
            ids.iter().filter_map(|id| map.remove(id)).collect()
        };
        for session in expired {
            tracing::debug!(session = %session.id, "session expired");
            session.close().await;
        }
    }

    /// Ends every session (server shutdown). Stored events stay, so that a
    /// store shared with other instances still lets clients resume there.
    pub(crate) fn close_all(&self) {
        let all: Vec<Arc<HttpSession>> = self.map().drain().map(|(_, s)| s).collect();
        for session in all {
            session.peer.close();
        }
    }
}

/// 128 random bits, URL-safe base64: visible ASCII only, as the
/// specification asks of session ids.
pub(crate) fn new_session_id() -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 16]>())
}
