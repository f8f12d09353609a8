//! POST: a new legacy session (`initialize`), a message to a session, or
//! a stateless 2026-07-28 request.

use std::sync::Arc;
use std::task::Poll;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::FutureExt as _;
use mcp_core::{DirectSession, Extensions, FrameSink, Owner, ReadFrame, box_future};
use mcp_schema::jsonrpc::{ErrorObject, Frame, Message, RequestId};
use mcp_schema::{ProtocolVersion, methods};

use super::handling::{CloseOnDrop, Handling, ResponseSink, queue_answer};
use super::read::{
    RESPONSE_TYPES, accepts, check_json_content, read_body, read_message, refuse_malformed_batch,
    request_ids,
};
use super::reply::{
    Era, bad_request, error_response, json_response, lookup_failed, store_unavailable,
};
use super::stream::respond;
use super::{McpEndpoint, names, poll_once};
use crate::authz::{MessageExtensions, ToolScopeGuard};
use crate::config::ResponseMode;
use crate::headers::{self, McpHeaders, check_headers};
use crate::session::{HttpSession, Lookup, MessageText, RouteKey, SessionLimit, StreamRefused};
use crate::spare_headers;
use crate::trace_context;

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

/// A POST: its headers, the extensions the layers before set, and its body.
/// Its header map is kept for a later response.
pub(super) async fn handle_post(
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
    // The trace context of the headers, for handlers that trace.
    let extensions = trace_context::attach(found.traceparent, found.tracestate, extensions);
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
    let session = match endpoint.sessions.create(owner.clone()) {
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
        let _ = endpoint.sessions.remove(&session.id, owner.as_ref()).await;
        return response;
    }
    if let Err(error) = endpoint.sessions.persist(&session).await {
        // Other instances could not continue it: no session.
        tracing::warn!(%error, "cannot store a new session");
        let _ = endpoint.sessions.remove(&session.id, owner.as_ref()).await;
        return store_unavailable(&error);
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
    let session = match endpoint.sessions.find(id, owner).await {
        Lookup::Found(session) => session,
        Lookup::Unknown => {
            let error = ErrorObject::invalid_request(
                "unknown or expired session; start a new one with initialize",
            );
            return error_response(StatusCode::NOT_FOUND, None, &error);
        }
        other => return lookup_failed(other),
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
        if let Some(relay) = &endpoint.config.response_relay
            && let Frame::Single(message) = &frame
            && let Some(id) = answered(message)
            && !session.take_sent(id)
            && relay.forward(&session.id, id, message.to_json()).await
        {
            // The instance that sent the request has its answer.
            return StatusCode::ACCEPTED.into_response();
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

/// The request a message answers, if it is an answer.
fn answered(message: &Message) -> Option<&RequestId> {
    match message {
        Message::Response(response) => Some(&response.id),
        Message::Error(error) => error.id.as_ref(),
        _ => None,
    }
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
