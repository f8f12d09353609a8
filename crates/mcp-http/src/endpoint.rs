//! The Streamable HTTP endpoint: POST, GET and DELETE on one path, for
//! legacy sessions (`Mcp-Session-Id`) and stateless 2026-07-28 requests.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::outbound::{self, QueueLimits, StreamReceiver, StreamSender};
use axum::body::HttpBody as _;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use bytes::BytesMut;
use futures::{FutureExt as _, Stream};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use mcp_core::{
    BoxFuture, DirectSession, Extensions, FrameKind, FrameSink, OutboundFrame, Owner, ReadFrame,
    Service, SessionConfig, SinkClosed, box_future,
};
use mcp_schema::jsonrpc::{self, ErrorObject, Frame, Message, RequestId};
use mcp_schema::text_search::TextSearch;
use mcp_schema::{ProtocolVersion, error_codes, methods};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;
use tower::Layer;

use crate::authz::{MessageExtensions, ToolScopeGuard, check_tool_scopes};
use crate::config::{HttpConfig, ResponseMode};
use crate::guard::{GuardLayer, Guarded};
use crate::headers::{self, McpHeaders, check_headers};
use crate::legacy_sse::LegacySessions;
use crate::session::{
    Delivery, HttpSession, MessageText, Outlet, ResumeOutcome, RouteKey, SessionLimit,
    SessionManager, StreamGuard, StreamRefused,
};
use crate::{spare_headers, sse};

/// The session id header.
pub const SESSION_ID: &str = "mcp-session-id";
/// The protocol version header.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The 2026-07-28 method header.
pub const METHOD: &str = "mcp-method";
/// The 2026-07-28 name header (tool, prompt or resource of the request).
pub const NAME: &str = "mcp-name";
/// The resumption header.
pub const LAST_EVENT_ID: &str = "last-event-id";

/// `Content-Type: application/json`, made once.
const JSON_CONTENT: HeaderValue = HeaderValue::from_static("application/json");

/// The MCP headers as header names, found in a request without parsing
/// the name on every lookup.
pub(crate) mod names {
    use axum::http::HeaderName;

    pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static(super::SESSION_ID);
    pub(crate) const PROTOCOL_VERSION: HeaderName =
        HeaderName::from_static(super::PROTOCOL_VERSION);
    pub(crate) const METHOD: HeaderName = HeaderName::from_static(super::METHOD);
    pub(crate) const NAME: HeaderName = HeaderName::from_static(super::NAME);
    pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static(super::LAST_EVENT_ID);
}

/// An MCP endpoint over Streamable HTTP, ready to be mounted in an axum
/// router.
pub struct McpEndpoint {
    pub(crate) service: Arc<dyn Service>,
    /// Shared by every session and stateless request of the endpoint.
    pub(crate) session_config: Arc<SessionConfig>,
    pub(crate) config: HttpConfig,
    sessions: Arc<SessionManager>,
    pub(crate) legacy_sse: Arc<LegacySessions>,
    pub(crate) websockets: Arc<crate::ws::Connections>,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for McpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpEndpoint")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl McpEndpoint {
    /// An endpoint serving `service` with these engine and HTTP settings.
    pub fn new(
        service: Arc<dyn Service>,
        session_config: SessionConfig,
        config: HttpConfig,
    ) -> Arc<Self> {
        let sessions = SessionManager::new(&config);
        Arc::new(McpEndpoint {
            service,
            session_config: Arc::new(session_config),
            config,
            sessions,
            legacy_sse: Arc::default(),
            websockets: Arc::default(),
            shutdown: CancellationToken::new(),
        })
    }

    /// The axum router: the endpoint at its path, and (unless turned off)
    /// the legacy HTTP+SSE paths and the WebSocket path, each behind the
    /// Host/Origin guard; bodies are read within the limit.
    ///
    /// The guard wraps each route rather than the router, and the
    /// endpoint's own path is one service that picks the handler by method
    /// itself, so a call does not go through a boxed, cloned service per
    /// layer.
    pub fn router(self: &Arc<Self>) -> axum::Router {
        let guard = GuardLayer::new(Arc::clone(&self.config.origin_policy));
        let mut router = axum::Router::new().route_service(&self.config.path, self.path_service());
        let guarded =
            |route: MethodRouter<Arc<McpEndpoint>>| route.layer::<_, Infallible>(guard.clone());
        let mut taken = vec![self.config.path.as_str()];
        if let Some(sse_path) = &self.config.legacy_sse_path {
            let message_path = &self.config.legacy_message_path;
            if !taken.contains(&sse_path.as_str())
                && !taken.contains(&message_path.as_str())
                && sse_path != message_path
            {
                router = router
                    .route(sse_path, guarded(get(crate::legacy_sse::handle_sse)))
                    .route(
                        message_path,
                        guarded(post(crate::legacy_sse::handle_message)),
                    );
                taken.push(sse_path);
                taken.push(message_path);
            } else {
                tracing::warn!(
                    sse_path,
                    message_path,
                    "legacy SSE paths clash with another path; not mounted"
                );
            }
        }
        if let Some(ws_path) = &self.config.websocket_path {
            if taken.contains(&ws_path.as_str()) {
                tracing::warn!(
                    ws_path,
                    "WebSocket path clashes with another path; not mounted"
                );
            } else {
                router = router.route(ws_path, guarded(get(crate::ws::handle_upgrade)));
            }
        }
        router.with_state(Arc::clone(self))
    }

    /// What answers the endpoint's own path: the Host/Origin guard, then
    /// POST, GET or DELETE.
    pub(crate) fn path_service(self: &Arc<Self>) -> Guarded<Answer> {
        GuardLayer::new(Arc::clone(&self.config.origin_policy)).layer(Answer(Arc::clone(self)))
    }

    /// How many legacy sessions are live.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// How many legacy HTTP+SSE sessions are live.
    pub fn legacy_sse_session_count(&self) -> usize {
        self.legacy_sse.len()
    }

    /// How many WebSocket sessions are live.
    pub fn websocket_session_count(&self) -> usize {
        self.websockets.len()
    }

    /// The event store's figures: events and bytes held, events evicted.
    pub fn event_store_stats(&self) -> crate::event_store::EventStoreStats {
        self.config.event_store.stats()
    }

    /// Starts shutting down: open SSE streams end (their events stay
    /// stored, so clients can resume elsewhere); requests in flight go on.
    pub fn shutdown(&self) {
        self.shutdown.cancel();
    }

    /// Ends every session's engine (Streamable HTTP, legacy HTTP+SSE and
    /// WebSocket); the last step of a shutdown.
    pub fn close_sessions(&self) {
        self.sessions.close_all();
        self.legacy_sse.close_all();
        self.websockets.close_all();
    }

    /// Cancelled when the shutdown begins.
    pub(crate) fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Resolves when [`McpEndpoint::shutdown`] was called.
    pub async fn shutting_down(&self) {
        self.shutdown.cancelled().await
    }
}

/// A JSON-RPC error as an HTTP response.
pub(crate) fn error_response(
    status: StatusCode,
    id: Option<&RequestId>,
    error: &ErrorObject,
) -> Response {
    json_with_status(status, jsonrpc::write_error(id, error))
}

/// A response of `status` carrying `body` as JSON, built as it is sent (a
/// body converted into a response gets a content type of its own first).
fn json_with_status(status: StatusCode, body: impl Into<Body>) -> Response {
    let mut response = Response::new(body.into());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    *headers = spare_headers::take();
    headers.insert(header::CONTENT_TYPE, JSON_CONTENT);
    response
}

/// The 400 answer to a batch that holds malformed elements and no
/// request, or `None` for any other frame: one -32600 (or -32700) error per
/// malformed element, in order, and nothing of the batch run, since the
/// server cannot accept it as the notifications and responses it must be.
fn refuse_malformed_batch(frame: &Frame) -> Option<Response> {
    let Frame::Batch(items) = frame else {
        return None;
    };
    let errors: Vec<String> = items
        .iter()
        .filter_map(|item| item.as_ref().err())
        .map(|e| jsonrpc::write_error(e.id.as_ref(), &e.error))
        .collect();
    (!errors.is_empty())
        .then(|| json_with_status(StatusCode::BAD_REQUEST, format!("[{}]", errors.join(","))))
}

fn bad_request(message: impl std::fmt::Display) -> Response {
    error_response(
        StatusCode::BAD_REQUEST,
        None,
        &ErrorObject::new(error_codes::INVALID_REQUEST, message.to_string()),
    )
}

/// Whether the Accept header admits every one of `mimes`: directly, by a
/// `type/*` range, or by `*/*`.
fn accepts<const N: usize>(accept: Option<&HeaderValue>, mimes: [&str; N]) -> bool {
    let Some(accept) = accept.map(HeaderValue::as_bytes) else {
        return false;
    };
    // What MCP clients send is known without reading its ranges.
    if accept == USUAL_ACCEPT && mimes.iter().all(|mime| RESPONSE_TYPES.contains(mime)) {
        return true;
    }
    accepts_ranges(accept, mimes)
}

/// The types a POST's response may take, each of which its Accept header
/// must admit.
const RESPONSE_TYPES: [&str; 2] = ["application/json", "text/event-stream"];

/// The Accept value MCP clients send with every POST (and GET): it admits
/// exactly the [`RESPONSE_TYPES`].
const USUAL_ACCEPT: &[u8] = b"application/json, text/event-stream";

/// Whether the ranges of an Accept value admit every one of `mimes`.
fn accepts_ranges<const N: usize>(accept: &[u8], mimes: [&str; N]) -> bool {
    // One pass over the ranges, marking the types each admits; on bytes,
    // as the value is short and ASCII where it matters.
    let mut admitted = [false; N];
    for part in accept.split(|&b| b == b',') {
        let range = media_type(part);
        for (mime, admitted) in mimes.iter().zip(&mut admitted) {
            let mime = mime.as_bytes();
            *admitted = *admitted
                || range == b"*/*"
                || range.eq_ignore_ascii_case(mime)
                || range
                    .strip_suffix(b"*")
                    .is_some_and(|prefix| prefix.ends_with(b"/") && mime.starts_with(prefix));
        }
    }
    admitted.iter().all(|&a| a)
}

/// A media type or range without its parameters (`; q=0.5` ...), trimmed.
fn media_type(value: &[u8]) -> &[u8] {
    let end = value.iter().position(|&b| b == b';').unwrap_or(value.len());
    value[..end].trim_ascii()
}

/// The ids of the requests in a frame, read in place.
fn request_ids(frame: &Frame) -> impl Iterator<Item = &RequestId> {
    let (single, batch) = match frame {
        Frame::Single(m) => (Some(m), &[][..]),
        Frame::Batch(items) => (None, items.as_slice()),
    };
    fn id(m: &Message) -> Option<&RequestId> {
        match m {
            Message::Request(r) => Some(&r.id),
            _ => None,
        }
    }
    single
        .and_then(id)
        .into_iter()
        .chain(batch.iter().filter_map(|i| i.as_ref().ok().and_then(id)))
}

/// Whether the MCP-Protocol-Version header names a stateless-era revision.
fn names_modern_version(header: Option<&HeaderValue>) -> bool {
    modern_version_named(header).is_some()
}

/// The stateless-era revision the MCP-Protocol-Version header names, if
/// it names one.
fn modern_version_named(header: Option<&HeaderValue>) -> Option<ProtocolVersion> {
    headers::text(header)
        .and_then(|v| v.parse::<ProtocolVersion>().ok())
        .filter(|v| !v.is_legacy())
}

/// The -32601 error (404) for a request, sent without a session under a
/// header naming a stateless-era revision, whose method that revision does
/// not have: `initialize` and `ping` among them, with or without `_meta`.
/// The header names the revision requested, so it is judged by it.
fn refuse_method_outside_revision(header: Option<&HeaderValue>, frame: &Frame) -> Option<Response> {
    let Frame::Single(Message::Request(request)) = frame else {
        return None;
    };
    let revision = modern_version_named(header)?;
    if revision.defines_client_request(&request.method) {
        return None;
    }
    let method = &request.method;
    let hint = if method == methods::INITIALIZE {
        "; a legacy client sends initialize without that header"
    } else {
        ""
    };
    let error = ErrorObject::method_not_found(method).with_data(serde_json::json!({
        "reason": format!(
            "{method} is not part of protocol revision {revision} (named by MCP-Protocol-Version){hint}"
        ),
    }));
    Some(error_response(
        StatusCode::NOT_FOUND,
        Some(&request.id),
        &error,
    ))
}

fn is_initialize(frame: &Frame) -> bool {
    matches!(frame, Frame::Single(Message::Request(r)) if r.method == methods::INITIALIZE)
}

/// The response refusing a request before it reaches a session (boxed:
/// refusals are the rare path).
pub(crate) type Refusal = Box<Response>;

/// 415 unless the body is declared `application/json` (by `content_type`,
/// the Content-Type header).
pub(crate) fn check_json_content(content_type: Option<&HeaderValue>) -> Result<(), Refusal> {
    // As clients send it, or with parameters or in other case.
    let json_content = content_type.is_some_and(|ct| {
        *ct == JSON_CONTENT
            || media_type(ct.as_bytes()).eq_ignore_ascii_case(JSON_CONTENT.as_bytes())
    });
    if json_content {
        Ok(())
    } else {
        let error = ErrorObject::invalid_request("Content-Type must be application/json");
        Err(Box::new(error_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            &error,
        )))
    }
}

/// The body's parsed frame, or its refusal: a 400 with the parse error,
/// or the step-up answer of `scope_guard` when the frame calls a tool the
/// caller lacks scopes for. Parsed in place, without a copy; by
/// `stateless` where given, which reads a `_meta` that stateless clients
/// repeat without parsing it again.
pub(crate) fn read_message(
    body: Bytes,
    stateless: Option<&SessionConfig>,
    service: &dyn Service,
    scope_guard: Option<&ToolScopeGuard>,
) -> Result<ReadFrame, Refusal> {
    let Ok(text) = std::str::from_utf8(&body) else {
        let error = ErrorObject::parse_error("body is not UTF-8");
        return Err(Box::new(error_response(
            StatusCode::BAD_REQUEST,
            None,
            &error,
        )));
    };
    let parsed = match stateless {
        Some(config) => config.read_frame(text),
        None => Message::parse_frame(text).map(ReadFrame::from),
    };
    let read = parsed.map_err(|e| {
        Box::new(error_response(
            StatusCode::BAD_REQUEST,
            e.id.as_ref(),
            &e.error,
        ))
    })?;
    if let Some(guard) = scope_guard
        && let Some(refusal) = check_tool_scopes(read.frame(), service, guard)
    {
        return Err(Box::new(refusal));
    }
    Ok(read)
}

/// The endpoint's path (past the guard) as a service: POST, GET or
/// DELETE, each request's future boxed on its own (see [`Answer::respond`]).
#[derive(Clone)]
pub(crate) struct Answer(Arc<McpEndpoint>);

impl Answer {
    /// The response to `request`. A request's future is large, and would
    /// be copied on every move; it is made here, in place of an async
    /// wrapper, so that it holds neither the whole request nor the futures
    /// of the other methods.
    pub(crate) fn respond(
        endpoint: &Arc<McpEndpoint>,
        request: Request,
    ) -> BoxFuture<'static, Result<Response, Infallible>> {
        let endpoint = Arc::clone(endpoint);
        match *request.method() {
            Method::POST => {
                let (parts, body) = request.into_parts();
                box_future(move || {
                    handle_post(endpoint, parts.headers, parts.extensions, body).map(Ok)
                })
            }
            Method::GET => Box::pin(async move {
                let owner = request.extensions().get::<Owner>();
                Ok(handle_get(&endpoint, request.headers(), owner).await)
            }),
            Method::DELETE => Box::pin(async move {
                let owner = request.extensions().get::<Owner>();
                Ok(handle_delete(&endpoint, request.headers(), owner).await)
            }),
            _ => {
                let refusal = (
                    StatusCode::METHOD_NOT_ALLOWED,
                    [(header::ALLOW, "GET,POST,DELETE")],
                );
                Box::pin(std::future::ready(Ok(refusal.into_response())))
            }
        }
    }
}

impl tower::Service<Request> for Answer {
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        Answer::respond(&self.0, request)
    }
}

/// The whole body, or its refusal: 413 past `limit` bytes, 400 when it
/// cannot be read; either with a JSON-RPC error body.
pub(crate) async fn read_body(
    body: Body,
    limit: usize,
    deadline: Duration,
) -> Result<Bytes, Refusal> {
    let mut reading = std::pin::pin!(read_limited(Limited::new(body, limit)));
    // Most bodies have come with their headers: no timer for them.
    let read = match poll_once(&mut reading).await {
        Poll::Ready(read) => read,
        Poll::Pending => match tokio::time::timeout(deadline, reading).await {
            Ok(read) => read,
            Err(_) => {
                let error = ErrorObject::invalid_request(format!(
                    "the request body did not arrive within {} s",
                    deadline.as_secs_f64()
                ));
                let mut response = error_response(StatusCode::REQUEST_TIMEOUT, None, &error);
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                return Err(Box::new(response));
            }
        },
    };
    match read {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.is::<LengthLimitError>() => {
            let error =
                ErrorObject::invalid_request(format!("request body larger than {limit} bytes"));
            Err(Box::new(error_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                None,
                &error,
            )))
        }
        Err(e) => Err(Box::new(bad_request(format_args!(
            "failed to read the request body: {e}"
        )))),
    }
}

/// The data of `body`. A body that comes in one frame (most do) is kept as
/// it came, with no buffer gathered around it.
async fn read_limited(mut body: Limited<Body>) -> Result<Bytes, axum::BoxError> {
    let mut first = Bytes::new();
    let mut more: Option<BytesMut> = None;
    while !body.is_end_stream() {
        let Some(frame) = body.frame().await.transpose()? else {
            break;
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if let Some(more) = &mut more {
            more.extend_from_slice(&data);
        } else if first.is_empty() {
            first = data;
        } else {
            let mut gathered = BytesMut::with_capacity(first.len() + data.len());
            gathered.extend_from_slice(&first);
            gathered.extend_from_slice(&data);
            more = Some(gathered);
        }
    }
    Ok(more.map_or(first, BytesMut::freeze))
}

/// A POST: its headers, the extensions the layers before set, and its body.
/// Its header map is kept for a later response.
async fn handle_post(
    endpoint: Arc<McpEndpoint>,
    headers: HeaderMap,
    request_extensions: http::Extensions,
    body: Body,
) -> Response {
    let response = answer_post(&endpoint, &headers, request_extensions, body).await;
    spare_headers::give_back(headers);
    response
}

/// The response to a POST.
async fn answer_post(
    endpoint: &Arc<McpEndpoint>,
    headers: &HeaderMap,
    request_extensions: http::Extensions,
    body: Body,
) -> Response {
    let scope_guard = request_extensions.get::<ToolScopeGuard>().cloned();
    let extensions = request_extensions.get::<MessageExtensions>().cloned();
    let owner = request_extensions.get::<Owner>().cloned();
    drop(request_extensions);
    let config = &endpoint.config;
    let body = match read_body(body, config.max_body_bytes, config.body_read_timeout).await {
        Ok(body) => body,
        Err(refusal) => return *refusal,
    };
    let found = McpHeaders::read(headers);
    if let Err(refusal) = check_json_content(found.content_type) {
        return *refusal;
    }
    if !accepts(found.accept, RESPONSE_TYPES) {
        let error =
            ErrorObject::invalid_request("Accept must list application/json and text/event-stream");
        return error_response(StatusCode::NOT_ACCEPTABLE, None, &error);
    }
    let session_id = match headers::session_id(found.session_id) {
        Ok(id) => id,
        Err(why) => return bad_request(why),
    };
    let stateless = session_id
        .is_none()
        .then_some(endpoint.session_config.as_ref());
    let service = endpoint.service.as_ref();
    let read = match read_message(body, stateless, service, scope_guard.as_ref()) {
        Ok(read) => read,
        Err(refusal) => return *refusal,
    };
    let extensions = extensions.map(|e| e.0);
    if session_id.is_none() && matches!(read.frame(), Frame::Batch(_)) {
        // Neither a new legacy session (initialize comes alone) nor a
        // 2026-07-28 request takes a batch.
        return bad_request("JSON-RPC batches are accepted only within a 2025-03-26 session");
    }
    match session_id {
        Some(id) => {
            let version = found.protocol_version;
            let owner = owner.as_ref();
            post_to_session(endpoint, id, owner, version, read.into_frame(), extensions).await
        }
        None if is_initialize(read.frame()) && !names_modern_version(found.protocol_version) => {
            // Boxed, as the other rare paths: the future of every POST is
            // as large as its largest path.
            Box::pin(post_initialize(
                endpoint,
                owner,
                read.into_frame(),
                extensions,
            ))
            .await
        }
        None => post_stateless(endpoint, &found, read, extensions).await,
    }
}

/// A new legacy session, belonging to `owner`.
async fn post_initialize(
    endpoint: &Arc<McpEndpoint>,
    owner: Option<Owner>,
    frame: Frame,
    extensions: Option<Arc<Extensions>>,
) -> Response {
    let session = match endpoint.sessions.create(
        owner.clone(),
        Arc::clone(&endpoint.service),
        Arc::clone(&endpoint.session_config),
    ) {
        Ok(session) => session,
        Err(SessionLimit::Full) => {
            let error = ErrorObject::internal("too many sessions; try again later");
            return error_response(StatusCode::SERVICE_UNAVAILABLE, None, &error);
        }
    };
    let opened = (request_ids(&frame).next().cloned()).map(|id| (session.open_request(&id), id));
    let Some((Ok(stream), request)) = opened else {
        return error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            None,
            &ErrorObject::internal("session ended"),
        );
    };
    // The engine answers initialize itself, right away.
    let mut response = answer_request(
        endpoint,
        Arc::clone(&session),
        stream,
        request,
        frame,
        extensions,
    )
    .await;
    if session.revision().is_none() {
        // initialize failed (bad params): no session was established.
        endpoint.sessions.remove(&session.id, owner.as_ref()).await;
        return response;
    }
    if let Ok(value) = HeaderValue::from_str(&session.id) {
        response.headers_mut().insert(names::SESSION_ID, value);
    }
    response
}

/// A message for an existing legacy session of `owner`'s.
async fn post_to_session(
    endpoint: &Arc<McpEndpoint>,
    id: &str,
    owner: Option<&Owner>,
    protocol_version: Option<&HeaderValue>,
    frame: Frame,
    extensions: Option<Arc<Extensions>>,
) -> Response {
    let Some(session) = endpoint.sessions.get(id, owner) else {
        let error = ErrorObject::invalid_request(
            "unknown or expired session; start a new one with initialize",
        );
        return error_response(StatusCode::NOT_FOUND, None, &error);
    };
    if let Some(version) = headers::text(protocol_version)
        && version.parse::<ProtocolVersion>().is_err()
    {
        return bad_request(format!("unsupported MCP-Protocol-Version {version:?}"));
    }
    session.touch();
    if matches!(frame, Frame::Batch(_))
        && !session
            .revision()
            .is_some_and(ProtocolVersion::supports_batching)
    {
        return bad_request("JSON-RPC batches are not part of this session's protocol revision");
    }
    let ended = || {
        error_response(
            StatusCode::NOT_FOUND,
            None,
            &ErrorObject::invalid_request("session ended"),
        )
    };
    if let Frame::Single(Message::Request(request)) = &frame {
        let request = request.id.clone();
        return match session.open_request(&request) {
            Ok(stream) => {
                answer_request(endpoint, session, stream, request, frame, extensions).await
            }
            Err(StreamRefused::Ended) => ended(),
            // Answered here, as the engine would answer it: the engine's
            // answer would be routed to the first request's stream.
            Err(StreamRefused::InUse(id)) => {
                error_response(StatusCode::OK, Some(&id), &mcp_core::request_id_in_use(&id))
            }
        };
    }
    // A batch with requests in it, or notifications and responses only.
    let ids: Vec<RequestId> = request_ids(&frame).cloned().collect();
    if ids.is_empty() {
        if let Some(refusal) = refuse_malformed_batch(&frame) {
            return refusal;
        }
        // Notifications and responses only.
        if session.is_closed() {
            return ended();
        }
        Box::pin(session.handle(frame, extensions)).await;
        return StatusCode::ACCEPTED.into_response();
    }
    let receiver = match session.open_stream(ids) {
        Ok(receiver) => receiver,
        Err(StreamRefused::Ended) => return ended(),
        // Nothing of the batch runs.
        Err(StreamRefused::InUse(id)) => {
            let error = mcp_core::request_id_in_use(&id);
            return error_response(StatusCode::BAD_REQUEST, None, &error);
        }
    };
    let guard = session.stream_opened();
    // A client that disconnects does not cancel its request in this era,
    // and may resume the stream to read the response.
    let handling =
        Handling::finished_if_dropped(Box::pin(session.handle(frame, extensions).map(|()| None)));
    respond(endpoint, receiver, Some(guard), Era::Legacy, Some(handling)).await
}

/// A single request of a legacy session, run in this task while nothing
/// but its response comes: a plain call is answered in JSON with no
/// channel and no stored event. A request that sends something first or
/// is not answered on its first poll gets a connection to its stream,
/// where its response follows what came before.
async fn answer_request(
    endpoint: &Arc<McpEndpoint>,
    session: Arc<HttpSession>,
    stream: RouteKey,
    request: RequestId,
    frame: Frame,
    extensions: Option<Arc<Extensions>>,
) -> Response {
    let mut answering = box_future(|| session.answer(frame, extensions));
    let first_poll = match poll_once(&mut answering).await {
        Poll::Ready(Some(text)) if !text.is_empty() => {
            match session.take_json_reply(stream, text) {
                Ok(text) => return json_response(MessageText::Owned(text), Era::Legacy),
                // Behind what the handler sent first, or streamed anyway.
                Err(text) => Poll::Ready(Some(text)),
            }
        }
        other => other,
    };
    let receiver = session.attach(stream);
    let guard = session.stream_opened();
    // A client that disconnects does not cancel its request in this era,
    // and may resume the stream to read the response.
    let handling = Handling::finished_if_dropped(Box::pin(async move {
        let answer = match first_poll {
            Poll::Ready(answer) => answer,
            Poll::Pending => answering.await,
        };
        // Nothing sent on the stream yet: the response goes back as the
        // POST's plain reply, and is not stored, as nobody could resume
        // a stream that has no event.
        let answer = match answer.filter(|text| !text.is_empty()) {
            Some(text) => match session.take_json_reply(stream, text) {
                Ok(text) => return Some(text),
                Err(text) => Some(text),
            },
            None => None,
        };
        session.route_answer(request, answer).await;
        None
    }));
    respond(endpoint, receiver, Some(guard), Era::Legacy, Some(handling)).await
}

/// Polls `future` once, in the caller's task: whether it is done already.
async fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *future).poll(cx))).await
}

/// A stateless (2026-07-28) request: a session of its own for this one
/// message, run in this task while nothing but the response comes, so a
/// plain call costs no task and no channel; a stream is set up only for a
/// request that sends something first or is not answered on its first
/// poll.
async fn post_stateless(
    endpoint: &Arc<McpEndpoint>,
    headers: &McpHeaders<'_>,
    read: ReadFrame,
    extensions: Option<Arc<Extensions>>,
) -> Response {
    if let Some(refusal) = refuse_method_outside_revision(headers.protocol_version, read.frame()) {
        return refusal;
    }
    if let Err(error) = check_headers(headers, &read, endpoint.service.as_ref()) {
        let id = request_ids(read.frame()).next();
        return error_response(StatusCode::BAD_REQUEST, id, &error);
    }
    let sink = Arc::new(ResponseSink::new(endpoint.config.queue_limits()));
    let session = DirectSession::for_one_message(
        Arc::clone(&sink) as Arc<dyn FrameSink>,
        Arc::clone(&endpoint.service),
        Arc::clone(&endpoint.session_config),
    );
    let notifications_only = request_ids(read.frame()).next().is_none();
    // The response comes back from the handling, not through the sink.
    let mut answering = box_future(|| session.answer_parsed(read, extensions));
    let closing = CloseOnDrop(session);
    if notifications_only {
        answering.await;
        return StatusCode::ACCEPTED.into_response();
    }
    // Most requests are answered on their first poll, having sent nothing
    // before: their response is the JSON answer, and no stream is set up.
    if let Poll::Ready(answer) = poll_once(&mut answering).await {
        drop(closing);
        return match answer {
            Some(answer)
                if !answer.is_empty()
                    && endpoint.config.response_mode == ResponseMode::Auto
                    && sink.holds_nothing() =>
            {
                json_response(MessageText::Owned(answer), Era::Modern)
            }
            // Behind what the handler sent first, or streamed anyway.
            answer => {
                let (sender, receiver) = sink.open();
                queue_answer(Some(sender), answer);
                respond(endpoint, receiver, None, Era::Modern, None).await
            }
        };
    }
    let (sender, receiver) = sink.open();
    let response_gone = sender.clone();
    let work = async move {
        // However the request ends (answered, abandoned, or this future
        // dropped with its connection), its session closes.
        let _closing = closing;
        tokio::select! {
            // The handling first: a request answered now sets up no wait
            // for the response's end.
            biased;
            answer = answering => answer,
            // The client closed the response: in 2026-07-28 that cancels
            // the request.
            () = response_gone.closed() => None,
        }
    };
    let handling = Handling::abandoned_if_dropped(work, sender);
    respond(endpoint, receiver, None, Era::Modern, Some(handling)).await
}

/// Closes a request's own session when dropped.
struct CloseOnDrop(DirectSession);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// The handling of a POSTed message, which its response drives until the
/// first message comes (so a plain call needs no task of its own). Its
/// work may end with the response's text, which the response then carries.
struct Handling {
    work: Option<Work>,
}

/// The future of a [`Handling`], kept in the box it was made in: a
/// request's future is large, and each move of it is a copy.
enum Work {
    /// Sends everything through the session, and goes on when the
    /// response is dropped unfinished, as the client may resume its
    /// stream. Ends with the response's text only when nothing was sent on
    /// the stream before it, so that it goes out as the plain reply.
    Sending(BoxFuture<'static, Option<String>>),
    /// Ends with the response's text (empty when it has none), which goes
    /// to the sender once the response is already streaming, behind what
    /// came before it (a stateless request). Stops when the response is
    /// dropped unfinished: the client went away, which cancels it.
    Answering(BoxFuture<'static, Option<String>>, StreamSender),
}

impl Work {
    /// Where the text this work ends with goes once the response streams.
    fn answer_to(self) -> Option<StreamSender> {
        match self {
            Work::Sending(_) => None,
            Work::Answering(_, answer_to) => Some(answer_to),
        }
    }
}

impl Future for Work {
    type Output = Option<String>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<String>> {
        match self.get_mut() {
            Work::Sending(work) => work.as_mut().poll(cx),
            Work::Answering(work, _) => work.as_mut().poll(cx),
        }
    }
}

impl Handling {
    /// Work that sends everything, its response too, through the session.
    fn finished_if_dropped(work: BoxFuture<'static, Option<String>>) -> Self {
        Handling {
            work: Some(Work::Sending(work)),
        }
    }

    /// Work that ends with the response's text (empty when it has none).
    fn abandoned_if_dropped(
        work: impl Future<Output = Option<String>> + Send + 'static,
        answer_to: StreamSender,
    ) -> Self {
        Handling {
            work: Some(Work::Answering(Box::pin(work), answer_to)),
        }
    }

    /// Runs the rest of the work on a task of its own, unless it finishes
    /// right now; its response follows the deliveries.
    fn detach(mut self) {
        let Some(mut work) = self.work.take() else {
            return;
        };
        // Polled as it is first: most work ends here, and needs no task.
        match futures::FutureExt::now_or_never(&mut work) {
            Some(answer) => queue_answer(work.answer_to(), answer),
            None => {
                tokio::spawn(async move {
                    let answer = (&mut work).await;
                    queue_answer(work.answer_to(), answer);
                });
            }
        }
    }
}

/// The delivery of a response text a handling ended with; none for the
/// empty text of a request that was cancelled.
fn answer_delivery(text: String) -> Option<Delivery> {
    (!text.is_empty()).then_some(Delivery {
        text: MessageText::Owned(text),
        event_id: None,
        last: true,
    })
}

/// Puts the response a handling ended with behind the deliveries already
/// sent to its response.
fn queue_answer(to: Option<StreamSender>, answer: Option<String>) {
    if let (Some(to), Some(delivery)) = (to, answer.and_then(answer_delivery)) {
        let _ = to.send(delivery);
    }
}

impl Drop for Handling {
    fn drop(&mut self) {
        if let Some(work @ Work::Sending(_)) = self.work.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                work.await;
            });
        }
    }
}

/// The frames a stateless request's handler sends before its response.
/// They are held until the response opens its stream (most requests send
/// none, and no channel is made for them); from then on they go straight
/// onto that stream.
struct ResponseSink {
    outlet: std::sync::Mutex<Outlet>,
    /// How far the response's reader may fall behind.
    limits: QueueLimits,
}

impl ResponseSink {
    fn new(limits: QueueLimits) -> Self {
        ResponseSink {
            outlet: std::sync::Mutex::default(),
            limits,
        }
    }

    fn outlet(&self) -> std::sync::MutexGuard<'_, Outlet> {
        self.outlet.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether nothing has been sent yet.
    fn holds_nothing(&self) -> bool {
        self.outlet().holds_nothing()
    }

    /// The response's stream, with what was held already in it. Takes the
    /// caller's handle, so that the stream ends once the session lets go
    /// of the sink and the returned sender is dropped.
    fn open(self: Arc<Self>) -> (StreamSender, StreamReceiver) {
        let opened = self.outlet().open(self.limits);
        debug_assert!(opened.is_some(), "opened twice");
        opened.unwrap_or_else(|| outbound::channel(self.limits))
    }
}

impl FrameSink for ResponseSink {
    fn send(&self, frame: OutboundFrame) -> BoxFuture<'_, Result<(), SinkClosed>> {
        let sent = match frame.kind {
            // Cancelled: the response ends when the session closes.
            FrameKind::Ended => Ok(()),
            kind => self.outlet().send(Delivery {
                text: MessageText::Owned(frame.text),
                event_id: None,
                last: kind == FrameKind::Response,
            }),
        };
        Box::pin(std::future::ready(sent))
    }
}

/// Which era a response belongs to, for its status code.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Era {
    Legacy,
    Modern,
}

/// The HTTP status of a JSON response carrying `text`.
fn status_of(text: &str, era: Era) -> StatusCode {
    #[derive(Deserialize)]
    struct ErrorProbe {
        #[serde(default)]
        id: Option<serde_json::Value>,
        error: Option<ErrorObject>,
    }
    static ERROR: TextSearch = TextSearch::new("\"error\"");
    if is_plain_result(text) || !ERROR.is_in(text) {
        return StatusCode::OK;
    }
    let Ok(ErrorProbe {
        id,
        error: Some(error),
    }) = serde_json::from_str::<ErrorProbe>(text)
    else {
        return StatusCode::OK;
    };
    let no_id = id.is_none_or(|v| v.is_null());
    match (era, error.code) {
        (_, error_codes::PARSE_ERROR | error_codes::INVALID_REQUEST) if no_id => {
            StatusCode::BAD_REQUEST
        }
        (Era::Modern, error_codes::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        (
            Era::Modern,
            error_codes::INVALID_PARAMS
            | error_codes::INVALID_REQUEST
            | error_codes::PARSE_ERROR
            | error_codes::HEADER_MISMATCH
            | error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY
            | error_codes::UNSUPPORTED_PROTOCOL_VERSION,
        ) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// Answers a POST from its deliveries: plain JSON when the first message is
/// the response (and the endpoint allows it), an SSE stream otherwise.
/// The handling of the message runs here until the first message comes,
/// and goes on on a task of its own if it is not done by then.
async fn respond(
    endpoint: &Arc<McpEndpoint>,
    mut receiver: StreamReceiver,
    guard: Option<StreamGuard>,
    era: Era,
    mut handling: Option<Handling>,
) -> Response {
    /// What came first: a delivery, or the end of the work.
    enum Next {
        Delivery(Option<Delivery>),
        Done(Option<String>),
    }
    let mut priming = None;
    let first = loop {
        let next = match handling.as_mut().and_then(|h| h.work.as_mut()) {
            Some(working) => tokio::select! {
                biased;
                delivery = receiver.recv() => Next::Delivery(delivery),
                answer = working => Next::Done(answer),
            },
            None => Next::Delivery(receiver.recv().await),
        };
        match next {
            // The work is done (and must not be polled again).
            Next::Done(answer) => {
                if let Some(handling) = &mut handling {
                    // Its sender taken, so that the deliveries end once the
                    // session lets go of its sink.
                    let answer_to = handling.work.take().and_then(Work::answer_to);
                    if priming.is_none() && receiver.is_empty() {
                        // Nothing came before the response: it is the first.
                        if let Some(answer) = answer.and_then(answer_delivery) {
                            break Some(answer);
                        }
                    } else {
                        queue_answer(answer_to, answer);
                    }
                }
            }
            Next::Delivery(Some(d)) if d.text.is_empty() => priming = Some(d),
            Next::Delivery(other) => break other,
        }
    };
    if let Some(handling) = handling {
        handling.detach();
    }
    let Some(first) = first else {
        // The request ended without a response (cancelled, or the session
        // closed): a stream that ends with no message says so.
        return sse_response(endpoint, priming.into_iter().collect(), receiver, None);
    };
    if first.last && endpoint.config.response_mode == ResponseMode::Auto {
        return json_response(first.text, era);
    }
    let opening: Vec<Delivery> = priming.into_iter().chain(std::iter::once(first)).collect();
    sse_response(endpoint, opening, receiver, guard)
}

/// Whether `text` opens as a result response to a numeric id, as this
/// crate's writer lays one out (`{"jsonrpc":"2.0","id":7,"result":`): told
/// from its first bytes, where an error would otherwise be searched for.
fn is_plain_result(text: &str) -> bool {
    text.strip_prefix(r#"{"jsonrpc":"2.0","id":"#)
        .map(|rest| rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == '-'))
        .is_some_and(|rest| rest.starts_with(r#","result":"#))
}

/// A response carrying one JSON message.
fn json_response(text: MessageText, era: Era) -> Response {
    let status = status_of(&text, era);
    json_with_status(status, text.into_body())
}

/// An SSE response: `opening` deliveries in one write, then the rest as
/// they come, keep-alive comments while idle, and the end when the last
/// delivery is written or the server shuts down.
fn sse_response(
    endpoint: &Arc<McpEndpoint>,
    opening: Vec<Delivery>,
    receiver: StreamReceiver,
    guard: Option<StreamGuard>,
) -> Response {
    let retry = endpoint.config.retry;
    let first_chunk = sse::concat(
        &opening
            .iter()
            .map(|d| frame_event(d, retry))
            .collect::<Vec<_>>(),
    );
    let ended = opening.iter().any(|d| d.last);
    let body = Body::from_stream(sse_stream(
        (!first_chunk.is_empty()).then_some(first_chunk),
        ended,
        receiver,
        StreamTiming {
            keep_alive: endpoint.config.keep_alive,
            retry,
        },
        endpoint.shutdown.clone(),
        guard,
    ));
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        // Reverse proxies must not hold events back.
        .header("x-accel-buffering", "no")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// One delivery as SSE bytes: a priming event for an empty text.
fn frame_event(delivery: &Delivery, retry: Duration) -> Bytes {
    match (&delivery.event_id, delivery.text.is_empty()) {
        (Some(id), true) => sse::priming(id, Some(retry)),
        (id, _) => sse::event(id.as_deref(), &delivery.text),
    }
}

/// The timing of an SSE stream.
#[derive(Clone, Copy)]
struct StreamTiming {
    keep_alive: Duration,
    retry: Duration,
}

struct StreamState {
    first: Option<Bytes>,
    retry: Duration,
    ended: bool,
    receiver: StreamReceiver,
    keep_alive: tokio::time::Interval,
    shutdown: CancellationToken,
    _guard: Option<StreamGuard>,
}

fn sse_stream(
    first: Option<Bytes>,
    ended: bool,
    receiver: StreamReceiver,
    timing: StreamTiming,
    shutdown: CancellationToken,
    guard: Option<StreamGuard>,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let keep_alive = timing.keep_alive;
    let mut interval =
        tokio::time::interval_at(tokio::time::Instant::now() + keep_alive, keep_alive);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let state = StreamState {
        first,
        retry: timing.retry,
        ended,
        receiver,
        keep_alive: interval,
        shutdown,
        _guard: guard,
    };
    futures::stream::unfold(state, |mut state| async move {
        if let Some(first) = state.first.take() {
            return Some((Ok(first), state));
        }
        if state.ended {
            return None;
        }
        tokio::select! {
            delivery = state.receiver.recv() => {
                let delivery = delivery?;
                // Write everything already waiting in one chunk.
                let mut chunks = vec![frame_event(&delivery, state.retry)];
                state.ended = delivery.last;
                while !state.ended {
                    match state.receiver.try_recv() {
                        Ok(next) => {
                            state.ended = next.last;
                            chunks.push(frame_event(&next, state.retry));
                        }
                        Err(_) => break,
                    }
                }
                state.keep_alive.reset();
                Some((Ok(sse::concat(&chunks)), state))
            }
            _ = state.keep_alive.tick() => Some((Ok(sse::comment("keep-alive")), state)),
            _ = state.shutdown.cancelled() => None,
        }
    })
}

async fn handle_get(
    endpoint: &Arc<McpEndpoint>,
    headers: &HeaderMap,
    owner: Option<&Owner>,
) -> Response {
    let headers = McpHeaders::read(headers);
    if !accepts(headers.accept, ["text/event-stream"]) {
        let error = ErrorObject::invalid_request("Accept must list text/event-stream");
        return error_response(StatusCode::NOT_ACCEPTABLE, None, &error);
    }
    let id = match headers::session_id(headers.session_id) {
        Ok(id) => id,
        Err(why) => return bad_request(why),
    };
    let Some(id) = id else {
        // No standalone stream outside a legacy session: 2026-07-28 clients
        // use subscriptions/listen.
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response();
    };
    let Some(session) = endpoint.sessions.get(id, owner) else {
        let error = ErrorObject::invalid_request("unknown or expired session");
        return error_response(StatusCode::NOT_FOUND, None, &error);
    };
    session.touch();
    let guard = session.stream_opened();
    if let Some(last_event_id) = headers::text(headers.last_event_id) {
        let (outcome, receiver) = session.resume(last_event_id.to_owned()).await;
        if outcome == ResumeOutcome::Unknown {
            let error = ErrorObject::invalid_request("unknown or expired Last-Event-ID");
            return error_response(StatusCode::NOT_FOUND, None, &error);
        }
        return sse_response(endpoint, Vec::new(), receiver, Some(guard));
    }
    match session.open_standalone().await {
        Some(receiver) => sse_response(endpoint, Vec::new(), receiver, Some(guard)),
        None => {
            let error =
                ErrorObject::invalid_request("this session already has a standalone stream");
            error_response(StatusCode::CONFLICT, None, &error)
        }
    }
}

async fn handle_delete(
    endpoint: &Arc<McpEndpoint>,
    headers: &HeaderMap,
    owner: Option<&Owner>,
) -> Response {
    let id = match headers::session_id(headers.get(names::SESSION_ID)) {
        Ok(id) => id,
        Err(why) => return bad_request(why),
    };
    let Some(id) = id else {
        return bad_request("Mcp-Session-Id header is required");
    };
    if endpoint.sessions.remove(id, owner).await {
        StatusCode::NO_CONTENT.into_response()
    } else {
        let error = ErrorObject::invalid_request("unknown or expired session");
        error_response(StatusCode::NOT_FOUND, None, &error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_is_told_from_its_opening_and_an_error_by_its_code() {
        let result = jsonrpc::write_response(
            &RequestId::Number(-12),
            &serde_json::value::RawValue::from_string(r#"{"text":"\"error\""}"#.to_owned())
                .unwrap(),
        );
        assert!(is_plain_result(&result), "{result}");
        assert_eq!(status_of(&result, Era::Modern), StatusCode::OK);
        for not_plain in [
            r#"{"jsonrpc":"2.0","id":"a","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m"}}"#,
            r#"{"id":1,"jsonrpc":"2.0","result":{}}"#,
        ] {
            assert!(!is_plain_result(not_plain), "{not_plain}");
        }
        let invalid_params = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m"}}"#;
        assert_eq!(
            status_of(invalid_params, Era::Modern),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(status_of(invalid_params, Era::Legacy), StatusCode::OK);
    }

    fn body_of(chunks: &[&'static str]) -> Body {
        let chunks: Vec<Result<Bytes, Infallible>> = chunks
            .iter()
            .map(|c| Ok(Bytes::from_static(c.as_bytes())))
            .collect();
        Body::from_stream(futures::stream::iter(chunks))
    }

    #[tokio::test]
    async fn bodies_are_read_whole_from_any_number_of_frames_up_to_the_limit() {
        let read =
            |chunks: &[&'static str], limit| read_limited(Limited::new(body_of(chunks), limit));
        assert_eq!(read(&[], 10).await.unwrap(), "");
        assert_eq!(read(&["", "abc"], 10).await.unwrap(), "abc");
        assert_eq!(read(&["abc"], 10).await.unwrap(), "abc");
        assert_eq!(read(&["ab", "", "cd", "e"], 10).await.unwrap(), "abcde");
        assert_eq!(read(&["ab", "cd"], 4).await.unwrap(), "abcd");
        let over = read(&["ab", "cd", "e"], 4).await.unwrap_err();
        assert!(over.is::<LengthLimitError>(), "{over}");
        let whole = Body::from(Bytes::from_static(b"{}"));
        let read = read_limited(Limited::new(whole, 2)).await.unwrap();
        assert_eq!(read, "{}");
        let refused = read_body(Body::from("abcdef"), 5, Duration::from_secs(1))
            .await
            .unwrap_err();
        assert_eq!(refused.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[test]
    fn accept_lists_every_type_asked_for() {
        fn accepts_with<const N: usize>(accept: &str, mimes: [&str; N]) -> bool {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT, HeaderValue::from_str(accept).unwrap());
            accepts(headers.get(header::ACCEPT), mimes)
        }
        let both = RESPONSE_TYPES;
        assert!(accepts_with("application/json, text/event-stream", both));
        assert!(accepts_with(
            "TEXT/event-stream;q=0.5 , Application/JSON",
            both
        ));
        assert!(accepts_with("*/*", both));
        assert!(accepts_with("application/*, text/*", both));
        assert!(!accepts_with("application/json", both));
        assert!(!accepts_with("text/event-stream", both));
        assert!(!accepts_with("application/jsonx, text/event-stream", both));
        assert!(!accepts_with("app*, text/event-stream", both));
        assert!(accepts_with("text/event-stream", ["text/event-stream"]));
        assert!(!accepts(None, ["text/event-stream"]));
    }

    #[test]
    fn json_content_is_told_by_its_media_type() {
        let checked =
            |value: &'static str| check_json_content(Some(&HeaderValue::from_static(value)));
        for json in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON",
        ] {
            assert!(checked(json).is_ok(), "{json}");
        }
        for other in ["text/plain", "application/jsonx", "application/json-seq"] {
            let refused = checked(other).unwrap_err();
            assert_eq!(
                refused.status(),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{other}"
            );
        }
        assert!(check_json_content(None).is_err());
    }

    #[test]
    fn the_usual_accept_admits_what_its_ranges_admit() {
        let usual = std::str::from_utf8(USUAL_ACCEPT).unwrap();
        for mime in [
            "application/json",
            "text/event-stream",
            "text/html",
            "application/*",
        ] {
            let header = HeaderValue::from_static(usual);
            assert_eq!(
                accepts(Some(&header), [mime]),
                accepts_ranges(USUAL_ACCEPT, [mime]),
                "{mime}"
            );
        }
        let header = HeaderValue::from_static(usual);
        assert!(accepts(Some(&header), RESPONSE_TYPES));
        assert!(!accepts(Some(&header), ["application/json", "text/html"]));
    }
}

/// Every POST's future is boxed, and held for as long as the request
/// runs; these hold it to its size, since a rare path awaited inline, or a
/// temporary held across an await, grows every request's future.
#[cfg(test)]
mod future_sizes {
    use super::*;

    /// The size of the future an async function returns, from the
    /// function alone.
    trait FutureSize<Args> {
        fn future_size(&self) -> usize;
    }

    macro_rules! future_size_for {
        ($($arg:ident),*) => {
            impl<F, R, $($arg),*> FutureSize<($($arg,)*)> for F
            where
                F: Fn($($arg),*) -> R,
            {
                fn future_size(&self) -> usize {
                    std::mem::size_of::<R>()
                }
            }
        };
    }
    future_size_for!(A, B, C);
    future_size_for!(A, B, C, D);

    #[test]
    fn a_posts_futures_stay_small() {
        // 1176 and 1240 bytes with rustc 1.95: the bound leaves room for
        // another compiler's layout, not for another path held inline.
        let post = handle_post.future_size();
        let answer = HttpSession::answer.future_size();
        assert!(post <= 1536, "a POST's future is {post} bytes");
        assert!(answer <= 1536, "a request's handling is {answer} bytes");
    }
}
