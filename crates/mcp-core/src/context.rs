//! What a handler gets with each incoming request: who asked, in which
//! revision, a cancellation token, a progress reporter and a handle back to
//! the peer.

use std::sync::{Arc, Mutex};

use mcp_schema::jsonrpc::RequestId;
use mcp_schema::{
    ClientCapabilities, ProgressNotificationParams, ProgressToken, ProtocolVersion,
    RequestMetaObject, methods,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::extensions::Extensions;
use crate::identity::Negotiated;
use crate::peer::Peer;
use crate::sync::MutexExt as _;

/// The context of one incoming request.
#[derive(Clone, Debug)]
pub struct RequestContext {
    /// The request's id.
    pub id: RequestId,
    /// The revision this request is handled under.
    pub revision: ProtocolVersion,
    /// Who the peer is and what it declared (per session in the legacy era,
    /// per request in the modern era).
    pub negotiated: Arc<Negotiated>,
    /// The request's `_meta`, typed.
    pub meta: Arc<RequestMetaObject>,
    /// Cancelled when the peer cancels the request or the session ends.
    pub cancellation: CancellationToken,
    /// Reports progress, if the peer asked for it.
    pub progress: Progress,
    /// Sends requests and notifications to the peer, tied to this request.
    pub peer: Peer,
    /// What the transport attached to the message (see
    /// [`RequestContext::extensions`]).
    pub(crate) extensions: Option<Arc<Extensions>>,
}

impl RequestContext {
    /// The client's capabilities as they apply to this request.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.negotiated.client_capabilities
    }

    /// Whether the request has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation.is_cancelled()
    }

    /// Values the transport attached to the message that carried this
    /// request, such as the principal an HTTP layer authenticated; empty
    /// when there are none.
    pub fn extensions(&self) -> &Extensions {
        static EMPTY: std::sync::OnceLock<Extensions> = std::sync::OnceLock::new();
        match &self.extensions {
            Some(extensions) => extensions,
            None => EMPTY.get_or_init(Extensions::default),
        }
    }

    /// Replaces the values attached to this request (for roles that build
    /// a context themselves, such as a gateway forwarding a request).
    pub fn with_extensions(mut self, extensions: Arc<Extensions>) -> Self {
        self.extensions = Some(extensions);
        self
    }
}

/// Reports progress of one incoming request to the peer.
///
/// Values must strictly increase (others are ignored); bursts are allowed
/// but a sustained flood is thinned out; nothing is sent once the request
/// has completed.
#[derive(Clone, Debug)]
pub struct Progress {
    inner: Option<Arc<ProgressInner>>,
}

#[derive(Debug)]
struct ProgressInner {
    token: ProgressToken,
    peer: Peer,
    state: Mutex<ProgressState>,
}

#[derive(Debug)]
struct ProgressState {
    last: Option<f64>,
    tokens: f64,
    refilled: Instant,
    finished: bool,
}

/// How many updates may be sent back to back.
const PROGRESS_BURST: f64 = 20.0;
/// How many updates per second are sent after a burst.
const PROGRESS_RATE: f64 = 50.0;

impl Progress {
    /// A reporter that sends nothing (the peer asked for no progress).
    pub fn disabled() -> Self {
        Progress { inner: None }
    }

    /// A reporter for `token` (none: disabled), sending through `peer`,
    /// which is held only when there is a token.
    pub(crate) fn new(token: Option<ProgressToken>, peer: &Peer) -> Self {
        Progress {
            inner: token.map(|token| {
                Arc::new(ProgressInner {
                    token,
                    peer: peer.clone(),
                    state: Mutex::new(ProgressState {
                        last: None,
                        tokens: PROGRESS_BURST,
                        refilled: Instant::now(),
                        finished: false,
                    }),
                })
            }),
        }
    }

    /// Whether the peer asked for progress.
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// Sends a progress notification. Returns whether it was sent: not when
    /// progress is disabled, the value does not increase, the rate limit
    /// holds it back, or the request has completed.
    pub async fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        let Some(inner) = &self.inner else {
            return false;
        };
        {
            let mut state = inner.state.locked();
            if state.finished
                || state.last.is_some_and(|last| progress <= last)
                || !progress.is_finite()
            {
                return false;
            }
            let now = Instant::now();
            let elapsed = now.duration_since(state.refilled).as_secs_f64();
            state.tokens = (state.tokens + elapsed * PROGRESS_RATE).min(PROGRESS_BURST);
            state.refilled = now;
            if state.tokens < 1.0 {
                return false;
            }
            state.tokens -= 1.0;
            state.last = Some(progress);
        }
        let mut params = ProgressNotificationParams::new(inner.token.clone(), progress, total);
        params.message = message.map(str::to_owned);
        inner
            .peer
            .notify(methods::NOTIFICATION_PROGRESS, &params)
            .await
            .is_ok()
    }

    /// Stops all further reports; called when the request completes.
    pub(crate) fn finish(&self) {
        if let Some(inner) = &self.inner {
            inner.state.locked().finished = true;
        }
    }
}
