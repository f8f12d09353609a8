//! The Streamable HTTP client: one POST per outgoing message, replies as
//! JSON or SSE, the legacy session (`Mcp-Session-Id`, the standalone GET
//! stream, resumption with `Last-Event-ID`, re-initialization when the
//! session expired) and the stateless 2026-07-28 era (metadata headers,
//! cancellation by closing the stream).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use mcp_core::{FrameKind, InboundFrame, OutboundFrame};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Response, StatusCode, Url};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinSet};

use super::config::{HttpClientConfig, HttpTransportKind};
use super::message::{
    IdKey, InProbe, Outgoing, error_for_reply, http_error, is_modern_jsonrpc_error, media_type,
    unreached, unreached_error, with_causes,
};
use super::modern::{ToolHeaders, request_headers};
use super::{WireProtocol, legacy_sse};
use crate::endpoint::names::{LAST_EVENT_ID, PROTOCOL_VERSION, SESSION_ID};
use crate::sse::SseParser;
use mcp_core::sync::MutexExt as _;

/// Both media types a Streamable HTTP client accepts.
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// How long closing waits for messages already handed over to be sent,
/// and then for the DELETE that ends the session.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// The reconnection delay when the server gave no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// How long later messages wait for the standalone stream to open after
/// `notifications/initialized` (so that what the server sends there
/// about them is not missed).
const GET_STREAM_OPEN_WAIT: Duration = Duration::from_secs(2);

/// What the connection knows, behind one lock.
#[derive(Debug, Default)]
struct State {
    /// The legacy session id.
    session_id: Option<String>,
    /// The revision `initialize` negotiated.
    protocol_version: Option<String>,
    /// The last stateless revision a request named.
    modern_version: Option<String>,
    /// The `initialize` request, replayed when the session expires.
    initialize: Option<String>,
    /// The wire protocol, once decided.
    wire: Option<WireProtocol>,
    /// Where HTTP+SSE messages are posted.
    legacy_endpoint: Option<Url>,
}

/// Everything the client's tasks share.
pub(crate) struct Inner {
    pub(crate) config: HttpClientConfig,
    pub(crate) url: Url,
    pub(crate) http: reqwest::Client,
    /// Taken when the transport closes, which ends the engine's inbound.
    inbound: Mutex<Option<mpsc::Sender<InboundFrame>>>,
    state: Mutex<State>,
    tools: ToolHeaders,
    /// Serializes session re-initialization.
    reinit: tokio::sync::Mutex<()>,
    /// The standalone GET stream's task (legacy era).
    get_stream: Mutex<Option<AbortHandle>>,
    /// The HTTP+SSE stream's task.
    pub(crate) legacy_stream: Mutex<Option<AbortHandle>>,
    /// Requests whose POST is still running, and whether each is stateless.
    in_flight: Mutex<HashMap<IdKey, (AbortHandle, bool)>>,
    next_internal_id: AtomicU64,
    json_replies: AtomicU64,
    sse_replies: AtomicU64,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("url", &self.url.as_str())
            .field("state", &*self.state.locked())
            .finish_non_exhaustive()
    }
}

/// One exchange: the request (if any) a reply answers.
#[derive(Debug, Default)]
struct Exchange {
    id: Option<Value>,
    method: Option<String>,
    modern: bool,
    /// The response is the transport's own (re-initialization): kept here
    /// instead of going to the engine.
    captured: Option<Mutex<Option<String>>>,
}

impl Exchange {
    fn of(out: &Outgoing) -> Exchange {
        Exchange {
            id: out.id.clone(),
            method: out.method.clone(),
            modern: out.modern_version.is_some(),
            captured: None,
        }
    }
}

/// Where an SSE stream is, across reconnections.
#[derive(Debug, Default)]
struct Cursor {
    last_event_id: Option<String>,
    retry: Option<Duration>,
}

/// How reading an SSE stream ended.
enum Pumped {
    /// The response to the exchange's request arrived.
    Answered,
    /// The stream ended; whether it carried anything.
    Ended { progressed: bool },
}

impl Inner {
    pub(crate) fn new(
        config: HttpClientConfig,
        url: Url,
        http: reqwest::Client,
        inbound: mpsc::Sender<InboundFrame>,
    ) -> Inner {
        let wire = (config.transport == HttpTransportKind::StreamableHttp)
            .then_some(WireProtocol::StreamableHttp);
        Inner {
            config,
            url,
            http,
            inbound: Mutex::new(Some(inbound)),
            state: Mutex::new(State {
                wire,
                ..State::default()
            }),
            tools: ToolHeaders::default(),
            reinit: tokio::sync::Mutex::new(()),
            get_stream: Mutex::new(None),
            legacy_stream: Mutex::new(None),
            in_flight: Mutex::new(HashMap::new()),
            next_internal_id: AtomicU64::new(1),
            json_replies: AtomicU64::new(0),
            sse_replies: AtomicU64::new(0),
        }
    }

    pub(crate) fn session_id(&self) -> Option<String> {
        self.state.locked().session_id.clone()
    }

    pub(crate) fn wire(&self) -> Option<WireProtocol> {
        self.state.locked().wire
    }

    pub(crate) fn reply_kinds(&self) -> super::ReplyKinds {
        super::ReplyKinds {
            json: self.json_replies.load(Ordering::Relaxed),
            sse: self.sse_replies.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn protocol_version(&self) -> Option<String> {
        self.state.locked().protocol_version.clone()
    }

    fn set_wire(&self, wire: WireProtocol) {
        self.state.locked().wire = Some(wire);
    }

    pub(crate) fn set_legacy_endpoint(&self, endpoint: Url) {
        let mut state = self.state.locked();
        state.legacy_endpoint = Some(endpoint);
        state.wire = Some(WireProtocol::LegacySse);
    }

    pub(crate) fn legacy_endpoint(&self) -> Option<Url> {
        self.state.locked().legacy_endpoint.clone()
    }

    /// Hands a message to the engine.
    pub(crate) async fn deliver(&self, text: String) {
        let tx = self.inbound.locked().clone();
        if let Some(tx) = tx
            && tx.send(InboundFrame::Text(text)).await.is_err()
        {
            tracing::debug!("engine gone; message dropped");
        }
    }

    /// Ends the engine's inbound channel (the connection is over).
    pub(crate) fn end_inbound(&self) {
        self.inbound.locked().take();
    }

    /// The default headers plus `Content-Type` and `Accept` of a POST.
    fn base_headers(&self) -> HeaderMap {
        let mut headers = self.config.headers.clone();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static(ACCEPT_BOTH));
        headers
    }

    /// Adds the session headers; the session id used, if any.
    fn session_headers(&self, headers: &mut HeaderMap) -> Option<String> {
        let state = self.state.locked();
        if let Some(v) = state
            .protocol_version
            .as_deref()
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            headers.insert(PROTOCOL_VERSION, v);
        }
        let id = state.session_id.clone()?;
        if let Ok(v) = HeaderValue::from_str(&id) {
            headers.insert(SESSION_ID, v);
        }
        Some(id)
    }

    /// The POST of `out`, and the session id it carries.
    fn post(&self, out: &Outgoing, body: Bytes) -> (reqwest::RequestBuilder, Option<String>) {
        let (headers, session) = self.post_headers(out);
        (
            self.http.post(self.url.clone()).headers(headers).body(body),
            session,
        )
    }

    /// The headers of the POST of `out`, and the session id they carry.
    pub(crate) fn post_headers(&self, out: &Outgoing) -> (HeaderMap, Option<String>) {
        let mut headers = self.base_headers();
        if let Some(trace) = &out.trace {
            trace.insert_into(&mut headers);
        }
        let mut session = None;
        if let Some(version) = &out.modern_version {
            if let Ok(v) = HeaderValue::from_str(version) {
                headers.insert(PROTOCOL_VERSION, v);
            }
            if let Some(method) = &out.method {
                request_headers(method, out.params.as_deref(), &self.tools, &mut headers);
            }
            self.state.locked().modern_version = Some(version.clone());
        } else if out.is_request("initialize") {
            // A new session: no session headers.
        } else {
            session = self.session_headers(&mut headers);
            if session.is_none() && !headers.contains_key(PROTOCOL_VERSION) {
                // A notification of the stateless era names its revision too.
                let modern = self.state.locked().modern_version.clone();
                if let Some(v) = modern.and_then(|v| HeaderValue::from_str(&v).ok()) {
                    headers.insert(PROTOCOL_VERSION, v);
                    if let Some(method) = &out.method {
                        request_headers(method, None, &self.tools, &mut headers);
                    }
                }
            }
        }
        (headers, session)
    }

    /// POSTs `out`; a 404 on a request of an expired session starts a new
    /// session and retries once.
    async fn send(
        self: &Arc<Self>,
        out: &Outgoing,
        body: &Bytes,
    ) -> Result<Response, reqwest::Error> {
        tracing::debug!(method = ?out.method, id = ?out.id, "POST");
        let mut session = None;
        let response = self
            .execute(|| {
                let (request, used) = self.post(out, body.clone());
                session = used;
                request
            })
            .await?;
        let Some(stale) = session else {
            return Ok(response);
        };
        if response.status() != StatusCode::NOT_FOUND {
            return Ok(response);
        }
        tracing::info!(session = %stale, "session expired; initializing a new one");
        if out.kind == FrameKind::Response {
            // An answer to a request of the old session means nothing to
            // the new one: start the new session, report the refusal.
            if !self.reinitialize(&stale).await {
                tracing::warn!("re-initialization failed");
            }
            return Ok(response);
        }
        drop(response);
        if !self.reinitialize(&stale).await {
            tracing::warn!("re-initialization failed");
        }
        self.execute(|| self.post(out, body.clone()).0).await
    }

    /// Sends a request with the authorizer's credentials, answering its
    /// challenges (see [`super::auth::execute`]).
    pub(crate) async fn execute(
        &self,
        build: impl FnMut() -> reqwest::RequestBuilder,
    ) -> Result<Response, reqwest::Error> {
        super::auth::execute(self.config.authorizer.as_deref(), build).await
    }

    /// Handles one message of a reply; whether it answered the exchange.
    async fn receive(&self, ex: &Exchange, text: String) -> bool {
        let probe = InProbe::parse(&text);
        let Some(id) = ex.id.as_ref().filter(|id| probe.answers(id)) else {
            self.deliver(text).await;
            return false;
        };
        tracing::debug!(%id, "response");
        let mut text = text;
        match ex.method.as_deref() {
            Some("initialize") if !ex.modern => self.adopt_version(probe.result.as_deref()),
            Some("tools/list") if ex.modern => {
                if let Some(rewritten) = self.tools.learn(&text) {
                    text = rewritten;
                }
            }
            _ => {}
        }
        match &ex.captured {
            Some(slot) => *slot.locked() = Some(text),
            None => self.deliver(text).await,
        }
        true
    }

    /// Remembers the revision an `initialize` result negotiated.
    fn adopt_version(&self, result: Option<&serde_json::value::RawValue>) {
        #[derive(Deserialize)]
        struct VersionProbe {
            #[serde(rename = "protocolVersion")]
            protocol_version: String,
        }
        if let Some(v) = result.and_then(|r| serde_json::from_str::<VersionProbe>(r.get()).ok()) {
            self.state.locked().protocol_version = Some(v.protocol_version);
        }
    }

    /// Answers the exchange's request with an error made up here.
    async fn fail(&self, ex: &Exchange, connection: bool, message: &str) {
        self.answer_failure(ex, message, |id| http_error(id, connection, message))
            .await
    }

    /// Answers `ex` for a request that could not be sent: plainly when it
    /// reached no server (see [`unreached`]).
    async fn request_failed(&self, ex: &Exchange, error: &reqwest::Error) {
        match unreached(&self.url, error) {
            Some(why) => {
                self.answer_failure(ex, &why, |id| unreached_error(id, &why))
                    .await
            }
            None => {
                let message = format!("HTTP request failed: {}", with_causes(error));
                self.fail(ex, true, &message).await
            }
        }
    }

    /// Answers `ex`, if it is a request, with the error `error` makes.
    async fn answer_failure(&self, ex: &Exchange, message: &str, error: impl Fn(&Value) -> String) {
        match &ex.id {
            Some(id) => {
                tracing::debug!(%id, message, "request failed");
                let text = error(id);
                match &ex.captured {
                    Some(slot) => *slot.locked() = Some(text),
                    None => self.deliver(text).await,
                }
            }
            None => tracing::warn!(method = ?ex.method, message, "message not delivered"),
        }
    }

    /// Handles the reply to a POST.
    async fn handle_reply(self: &Arc<Self>, out: &Outgoing, ex: &Exchange, response: Response) {
        let status = response.status();
        if out.is_request("initialize") && out.modern_version.is_none() && status.is_success() {
            let id = response
                .headers()
                .get(SESSION_ID)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let mut state = self.state.locked();
            state.session_id = id;
            state.initialize = Some(out.text.clone());
        }
        if status.is_success() && ex.id.is_none() {
            drop(response);
            if out.is_notification("notifications/initialized") && self.session_id().is_some() {
                let opened = self.open_get_stream();
                let _ = tokio::time::timeout(GET_STREAM_OPEN_WAIT, opened).await;
            }
            return;
        }
        if status == StatusCode::ACCEPTED {
            self.fail(ex, false, "HTTP 202 Accepted: no response to the request")
                .await;
            return;
        }
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            match &ex.id {
                Some(id) => {
                    let text = error_for_reply(id, status, &body);
                    match &ex.captured {
                        Some(slot) => *slot.locked() = Some(text),
                        None => self.deliver(text).await,
                    }
                }
                None => tracing::warn!(method = ?ex.method, %status, body, "message refused"),
            }
            return;
        }
        match media_type(&response).as_str() {
            "text/event-stream" => {
                self.sse_replies.fetch_add(1, Ordering::Relaxed);
                self.read_stream(ex, response).await
            }
            "application/json" => match response.text().await {
                Ok(text) if text.trim_start().starts_with('[') => {
                    self.json_replies.fetch_add(1, Ordering::Relaxed);
                    self.deliver(text).await
                }
                Ok(text) if text.trim().is_empty() => {
                    self.fail(ex, false, "empty response body").await
                }
                Ok(text) => {
                    self.json_replies.fetch_add(1, Ordering::Relaxed);
                    if !self.receive(ex, text).await {
                        self.fail(ex, false, "the reply did not answer the request")
                            .await;
                    }
                }
                Err(e) => {
                    self.fail(ex, true, &format!("reading the reply: {}", with_causes(&e)))
                        .await
                }
            },
            other => {
                let message = format!("HTTP {status}: unexpected Content-Type {other:?}");
                self.fail(ex, false, &message).await;
            }
        }
    }

    /// Reads a POST's SSE stream until the response, resuming it with
    /// `Last-Event-ID` when it drops first.
    async fn read_stream(&self, ex: &Exchange, response: Response) {
        let mut cursor = Cursor::default();
        let mut response = response;
        let mut idle = 0;
        loop {
            match self.pump(response, ex, &mut cursor).await {
                Pumped::Answered => return,
                Pumped::Ended { progressed } => {
                    idle = if progressed { 0 } else { idle + 1 };
                }
            }
            if ex.id.is_none() {
                return;
            }
            if idle >= self.config.max_reconnect_attempts {
                self.fail(
                    ex,
                    true,
                    "the stream ended again and again without the response",
                )
                .await;
                return;
            }
            response = match self.resume(&cursor).await {
                Ok(r) => r,
                Err(message) => {
                    self.fail(ex, true, &message).await;
                    return;
                }
            };
        }
    }

    /// Reads SSE events and hands their messages over until the stream
    /// ends or the exchange's response arrived.
    async fn pump(&self, mut response: Response, ex: &Exchange, cursor: &mut Cursor) -> Pumped {
        let mut parser = SseParser::new();
        let mut progressed = false;
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return Pumped::Ended { progressed },
                Err(e) => {
                    tracing::debug!(error = %e, "SSE stream dropped");
                    return Pumped::Ended { progressed };
                }
            };
            for event in parser.feed(&chunk) {
                progressed = true;
                if let Some(id) = event.id.as_deref() {
                    cursor.last_event_id = (!id.is_empty()).then(|| id.to_owned());
                }
                if let Some(ms) = event.retry {
                    cursor.retry = Some(Duration::from_millis(ms));
                }
                if event.data.is_empty() || event.event.as_deref().is_some_and(|e| e != "message") {
                    continue;
                }
                if self.receive(ex, event.data).await {
                    return Pumped::Answered;
                }
            }
            // A block without data still moves the cursor.
            if !parser.last_event_id().is_empty() {
                cursor.last_event_id = Some(parser.last_event_id().to_owned());
            }
            if let Some(ms) = parser.retry() {
                cursor.retry = Some(Duration::from_millis(ms));
            }
        }
    }

    /// The delay before reconnecting a stream.
    fn retry_delay(&self, cursor: &Cursor) -> Duration {
        cursor
            .retry
            .unwrap_or(DEFAULT_RETRY)
            .min(self.config.max_retry_delay)
    }

    /// A GET asking for an event stream, with the session headers.
    fn get(&self, last_event_id: Option<&str>) -> reqwest::RequestBuilder {
        let mut headers = self.config.headers.clone();
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        self.session_headers(&mut headers);
        if let Some(v) = last_event_id.and_then(|v| HeaderValue::from_str(v).ok()) {
            headers.insert(LAST_EVENT_ID, v);
        }
        self.http.get(self.url.clone()).headers(headers)
    }

    /// Reconnects a dropped stream after the server's `retry`, a bounded
    /// number of times.
    async fn resume(&self, cursor: &Cursor) -> Result<Response, String> {
        let Some(last) = cursor.last_event_id.as_deref() else {
            return Err("the stream ended before the response arrived".to_owned());
        };
        let mut last_error = String::new();
        for attempt in 1..=self.config.max_reconnect_attempts {
            tokio::time::sleep(self.retry_delay(cursor)).await;
            tracing::debug!(attempt, last_event_id = last, "resuming SSE stream");
            match self.execute(|| self.get(Some(last))).await {
                Ok(r) if r.status().is_success() && media_type(&r) == "text/event-stream" => {
                    return Ok(r);
                }
                Ok(r) => {
                    let status = r.status();
                    let body = r.text().await.unwrap_or_default();
                    last_error = format!("HTTP {status} resuming the stream: {}", body.trim());
                    if matches!(
                        status,
                        StatusCode::BAD_REQUEST
                            | StatusCode::NOT_FOUND
                            | StatusCode::METHOD_NOT_ALLOWED
                    ) {
                        break;
                    }
                }
                Err(e) => last_error = format!("resuming the stream: {}", with_causes(&e)),
            }
        }
        Err(last_error)
    }

    /// Starts (or restarts) the standalone GET stream; the receiver hears
    /// when the server has answered the first GET (or it failed).
    fn open_get_stream(self: &Arc<Self>) -> oneshot::Receiver<()> {
        let (opened_tx, opened) = oneshot::channel();
        let task = tokio::spawn(Arc::clone(self).run_get_stream(opened_tx));
        if let Some(old) = self.get_stream.locked().replace(task.abort_handle()) {
            old.abort();
        }
        opened
    }

    /// The standalone GET stream: server requests and notifications that
    /// belong to no request, reconnected (with `Last-Event-ID`) when it drops.
    async fn run_get_stream(self: Arc<Self>, opened: oneshot::Sender<()>) {
        let ex = Exchange::default();
        let mut cursor = Cursor::default();
        let mut failures = 0;
        let mut opened = Some(opened);
        loop {
            let reply = self
                .execute(|| self.get(cursor.last_event_id.as_deref()))
                .await;
            if let Some(opened) = opened.take() {
                let _ = opened.send(());
            }
            match reply {
                Ok(r) if r.status().is_success() && media_type(&r) == "text/event-stream" => {
                    match self.pump(r, &ex, &mut cursor).await {
                        Pumped::Ended { progressed: true } => failures = 0,
                        _ => failures += 1,
                    }
                }
                Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                    tracing::debug!("the server offers no standalone stream");
                    return;
                }
                Ok(r) if r.status() == StatusCode::NOT_FOUND => {
                    tracing::debug!("standalone stream: session gone");
                    return;
                }
                Ok(r) => {
                    tracing::debug!(status = %r.status(), "standalone stream refused");
                    failures += 1;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "standalone stream failed");
                    failures += 1;
                }
            }
            if failures >= self.config.max_reconnect_attempts {
                tracing::warn!("standalone stream given up after {failures} attempts");
                return;
            }
            tokio::time::sleep(self.retry_delay(&cursor)).await;
        }
    }

    /// Starts a new session after `stale` expired: replays `initialize`
    /// under an id of its own, adopts the new session id, sends
    /// `notifications/initialized` and reopens the standalone stream.
    async fn reinitialize(self: &Arc<Self>, stale: &str) -> bool {
        let _one_at_a_time = self.reinit.lock().await;
        let init = {
            let state = self.state.locked();
            if state.session_id.as_deref() != Some(stale) {
                // Someone else already did it.
                return state.session_id.is_some();
            }
            state.initialize.clone()
        };
        let Some(init) = init else { return false };
        let Ok(mut request) = serde_json::from_str::<Value>(&init) else {
            return false;
        };
        let n = self.next_internal_id.fetch_add(1, Ordering::Relaxed);
        let id = Value::String(format!("mcp-http-reinitialize-{n}"));
        request["id"] = id.clone();
        let body = request.to_string();
        let response = self
            .execute(|| {
                self.http
                    .post(self.url.clone())
                    .headers(self.base_headers())
                    .body(body.clone())
            })
            .await;
        let response = match response {
            Ok(r) if r.status().is_success() => r,
            Ok(r) => {
                tracing::warn!(status = %r.status(), "re-initialization refused");
                return false;
            }
            Err(e) => {
                tracing::warn!(error = %e, "re-initialization failed");
                return false;
            }
        };
        let Some(session) = response
            .headers()
            .get(SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
        else {
            return false;
        };
        let ex = Exchange {
            id: Some(id),
            method: Some("initialize".to_owned()),
            modern: false,
            captured: Some(Mutex::new(None)),
        };
        if media_type(&response) == "text/event-stream" {
            self.pump(response, &ex, &mut Cursor::default()).await;
        } else if let Ok(text) = response.text().await {
            self.receive(&ex, text).await;
        }
        let answer = ex.captured.as_ref().and_then(|slot| slot.locked().take());
        let ok = answer.is_some_and(|text| InProbe::parse(&text).result.is_some());
        if !ok {
            return false;
        }
        self.state.locked().session_id = Some(session);
        let mut headers = self.base_headers();
        self.session_headers(&mut headers);
        let initialized = self
            .execute(|| {
                self.http
                    .post(self.url.clone())
                    .headers(headers.clone())
                    .body(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            })
            .await;
        if let Err(e) = initialized {
            tracing::warn!(error = %e, "notifications/initialized failed");
        }
        let opened = self.open_get_stream();
        let _ = tokio::time::timeout(GET_STREAM_OPEN_WAIT, opened).await;
        true
    }

    /// One outgoing message over Streamable HTTP.
    async fn exchange(self: Arc<Self>, out: Outgoing) {
        let ex = Exchange::of(&out);
        let body = Bytes::from(out.text.clone());
        match self.send(&out, &body).await {
            Ok(response) => self.handle_reply(&out, &ex, response).await,
            Err(e) => self.request_failed(&ex, &e).await,
        }
    }

    /// The first message when the transport is not decided yet. A refusal
    /// the way an old server refuses it switches to HTTP+SSE. `decided`
    /// is told once later messages may go (dropped when nothing was
    /// decided: the next message probes again).
    async fn first_exchange(self: Arc<Self>, out: Outgoing, decided: oneshot::Sender<()>) {
        let ex = Exchange::of(&out);
        let body = Bytes::from(out.text.clone());
        let response = match self.send(&out, &body).await {
            Ok(r) => r,
            Err(e) => {
                drop(decided);
                self.request_failed(&ex, &e).await;
                return;
            }
        };
        let status = response.status();
        if !matches!(
            status,
            StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED
        ) {
            self.set_wire(WireProtocol::StreamableHttp);
            let _ = decided.send(());
            return self.handle_reply(&out, &ex, response).await;
        }
        let text = response.text().await.unwrap_or_default();
        if !is_modern_jsonrpc_error(&text) {
            match legacy_sse::open(&self).await {
                Ok(()) => {
                    tracing::info!("the server speaks HTTP+SSE (2024-11-05)");
                    legacy_sse::post(Arc::clone(&self), out).await;
                    let _ = decided.send(());
                    return;
                }
                Err(e) => tracing::debug!(error = %e, "no HTTP+SSE fallback"),
            }
        }
        self.set_wire(WireProtocol::StreamableHttp);
        let _ = decided.send(());
        match &ex.id {
            Some(id) => self.deliver(error_for_reply(id, status, &text)).await,
            None => tracing::warn!(method = ?ex.method, %status, "message refused"),
        }
    }

    /// Sends `out` on a task of its own; while the transport is undecided
    /// (the first message), the receiver that says when it is decided.
    fn dispatch(
        self: &Arc<Self>,
        tasks: &mut JoinSet<()>,
        out: Outgoing,
    ) -> Option<oneshot::Receiver<()>> {
        let key = out.id_key();
        let modern = out.modern_version.is_some();
        let (task, decided) = match self.wire() {
            Some(WireProtocol::LegacySse) => {
                tasks.spawn(legacy_sse::post(Arc::clone(self), out));
                return None;
            }
            // Later messages wait until the session is set up, standalone
            // stream included: a server may send requests about them there.
            Some(WireProtocol::StreamableHttp)
                if out.is_notification("notifications/initialized") =>
            {
                let (tx, rx) = oneshot::channel();
                let me = Arc::clone(self);
                tasks.spawn(async move {
                    me.exchange(out).await;
                    let _ = tx.send(());
                });
                return Some(rx);
            }
            Some(WireProtocol::StreamableHttp) => {
                (tasks.spawn(Arc::clone(self).exchange(out)), None)
            }
            None => {
                let (tx, rx) = oneshot::channel();
                let task = tasks.spawn(Arc::clone(self).first_exchange(out, tx));
                (task, Some(rx))
            }
        };
        if let Some(key) = key {
            self.track(key, modern, task);
        }
        decided
    }

    /// Handles `notifications/cancelled`: a stateless request still in
    /// flight is cancelled by closing its stream (the notification is not
    /// sent); a legacy one stops being read after the notification is sent.
    /// Whether the notification is to be sent.
    fn cancel_in_flight(&self, out: &Outgoing) -> bool {
        let key = out
            .params_value()
            .get("requestId")
            .map(Value::to_string)
            .unwrap_or_default();
        let entry = self.in_flight.locked().remove(&key);
        match entry {
            Some((task, modern)) if !task.is_finished() => {
                tracing::debug!(request = key, "request cancelled");
                task.abort();
                !modern
            }
            // Outside a session, the stateless era has no such notification.
            _ => {
                let state = self.state.locked();
                state.session_id.is_some() || state.modern_version.is_none()
            }
        }
    }

    /// Remembers a request's POST task, for cancellation.
    fn track(&self, key: IdKey, modern: bool, task: AbortHandle) {
        let mut in_flight = self.in_flight.locked();
        if in_flight.len() >= 64 {
            in_flight.retain(|_, (t, _)| !t.is_finished());
        }
        in_flight.insert(key, (task, modern));
    }

    /// Ends the connection: sends what was handed over, ends the session
    /// with DELETE, closes the streams and the engine's inbound.
    async fn close(&self, mut tasks: JoinSet<()>) {
        for (_, (task, _)) in self.in_flight.locked().drain() {
            task.abort();
        }
        let drained = tokio::time::timeout(CLOSE_GRACE, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tasks.abort_all();
        }
        if let Some(task) = self.get_stream.locked().take() {
            task.abort();
        }
        if let Some(task) = self.legacy_stream.locked().take() {
            task.abort();
        }
        let session = self.state.locked().session_id.take();
        if let Some(session) = session {
            let mut headers = self.config.headers.clone();
            self.session_headers(&mut headers);
            if let Ok(v) = HeaderValue::from_str(&session) {
                headers.insert(SESSION_ID, v);
            }
            let deleted = tokio::time::timeout(
                CLOSE_GRACE,
                self.execute(|| self.http.delete(self.url.clone()).headers(headers.clone())),
            )
            .await;
            match deleted {
                Ok(Ok(r)) => tracing::debug!(status = %r.status(), "session deleted"),
                Ok(Err(e)) => tracing::debug!(error = %e, "DELETE failed"),
                Err(_) => tracing::debug!("DELETE timed out"),
            }
        }
        self.end_inbound();
    }
}

/// The transport's main task: takes the engine's frames and sends each
/// on its own task, until the engine drops its sender. Until the first
/// exchange decided the wire protocol, later frames wait in order.
pub(crate) async fn drive(inner: Arc<Inner>, mut outbound: mpsc::Receiver<OutboundFrame>) {
    let mut tasks = JoinSet::new();
    let mut queue: VecDeque<Outgoing> = VecDeque::new();
    let mut deciding: Option<oneshot::Receiver<()>> = None;
    loop {
        let frame = tokio::select! {
            frame = outbound.recv() => match frame {
                Some(frame) => frame,
                None => break,
            },
            _ = decided(&mut deciding), if deciding.is_some() => {
                deciding = None;
                while deciding.is_none()
                    && let Some(out) = queue.pop_front()
                {
                    deciding = inner.dispatch(&mut tasks, out);
                }
                continue;
            }
        };
        if frame.kind == FrameKind::Ended {
            continue;
        }
        while tasks.try_join_next().is_some() {}
        let out = Outgoing::parse(frame);
        if out.is_notification("notifications/cancelled") && !inner.cancel_in_flight(&out) {
            continue;
        }
        if deciding.is_some() {
            queue.push_back(out);
            continue;
        }
        deciding = inner.dispatch(&mut tasks, out);
    }
    if let Some(rx) = deciding {
        let _ = tokio::time::timeout(CLOSE_GRACE, rx).await;
    }
    for out in queue {
        inner.dispatch(&mut tasks, out);
    }
    inner.close(tasks).await;
}

/// Resolves when the first exchange decided (or gave up).
async fn decided(deciding: &mut Option<oneshot::Receiver<()>>) {
    if let Some(rx) = deciding {
        let _ = rx.await;
    }
}

impl super::legacy_sse::Connection for Inner {
    fn config(&self) -> &HttpClientConfig {
        &self.config
    }

    fn url(&self) -> &Url {
        &self.url
    }

    fn http(&self) -> &reqwest::Client {
        &self.http
    }

    fn keep_stream(&self, task: AbortHandle) {
        *self.legacy_stream.locked() = Some(task);
    }

    fn set_endpoint(&self, endpoint: Url) {
        self.set_legacy_endpoint(endpoint);
    }

    fn endpoint(&self) -> Option<Url> {
        self.legacy_endpoint()
    }

    async fn deliver(&self, text: String) {
        Inner::deliver(self, text).await;
    }

    fn end_inbound(&self) {
        Inner::end_inbound(self);
    }
}
