//! The legacy HTTP+SSE transport of protocol revision 2024-11-05.
//!
//! A client opens an event stream with GET on the SSE path; that starts a
//! session whose first event, `endpoint`, carries the URL to POST messages
//! to (`<message path>?sessionId=<id>`). Every message of the server
//! follows as a `message` event on that one stream; each POSTed message is
//! answered `202 Accepted`. The session lives as long as the stream: when
//! the client disconnects, the engine session ends and its state is freed.
//!
//! Servers that want to keep serving older clients host these two paths
//! beside the Streamable HTTP endpoint, as the specification's backwards
//! compatibility section describes; [`crate::McpEndpoint::router`] does so
//! unless [`crate::HttpConfig::without_legacy_sse`] turns it off.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use mcp_core::{FrameKind, InboundFrame, OutboundFrame, Owner, Peer, Transport};
use mcp_schema::jsonrpc::ErrorObject;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::authz::{MessageExtensions, ToolScopeGuard};
use crate::endpoint::read::{check_json_content, read_body, read_message};
use crate::endpoint::reply::error_response;
use crate::serving::Serving;
use crate::sse;
use crate::trace_context;
use mcp_core::sync::MutexExt as _;

/// The query parameter naming the session on the message path.
pub const SESSION_ID_PARAM: &str = "sessionId";

/// One live legacy SSE session.
struct LegacySession {
    inbound: mpsc::Sender<InboundFrame>,
    peer: Peer,
    /// Who opened it (where an authorization layer said); only they may
    /// post to it.
    owner: Option<Owner>,
}

/// An endpoint the HTTP+SSE paths are mounted on, with its sessions.
pub(crate) trait LegacyHost: Serving {
    /// The live HTTP+SSE sessions.
    fn legacy_sessions(&self) -> &Arc<LegacySessions>;
}

/// The live legacy SSE sessions of an endpoint.
#[derive(Default)]
pub(crate) struct LegacySessions {
    map: Mutex<HashMap<Arc<str>, LegacySession>>,
}

impl LegacySessions {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, LegacySession>> {
        self.map.locked()
    }

    /// How many sessions are live.
    pub(crate) fn len(&self) -> usize {
        self.map().len()
    }

    /// Where the messages of `owner`'s session `id` go; to anyone else the
    /// session does not exist.
    fn inbound(&self, id: &str, owner: Option<&Owner>) -> Option<mpsc::Sender<InboundFrame>> {
        self.map()
            .get(id)
            .filter(|s| s.owner.as_ref() == owner)
            .map(|s| s.inbound.clone())
    }

    fn remove(&self, id: &str) {
        let removed = self.map().remove(id);
        if let Some(session) = removed {
            session.peer.close();
            tracing::debug!(session = %id, "legacy SSE session ended");
        }
    }

    /// Ends every session's engine.
    pub(crate) fn close_all(&self) {
        let all: Vec<LegacySession> = self.map().drain().map(|(_, s)| s).collect();
        for session in all {
            session.peer.close();
        }
    }
}

/// Removes the session when its stream goes away (the client disconnected,
/// the engine ended or the server shuts down).
struct SessionGuard {
    id: Arc<str>,
    sessions: Arc<LegacySessions>,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.sessions.remove(&self.id);
    }
}

/// A named SSE event: `event: <name>` then the data lines.
fn named_event(name: &str, data: &str) -> Bytes {
    sse::concat(&[
        Bytes::from(format!("event: {name}\n")),
        sse::event(None, data),
    ])
}

/// GET on the SSE path: a new session and its event stream.
pub(crate) async fn handle_sse<E: LegacyHost>(
    State(endpoint): State<Arc<E>>,
    owner: Option<Extension<Owner>>,
) -> Response {
    let sessions = Arc::clone(endpoint.legacy_sessions());
    if sessions.len() >= endpoint.config().max_sessions {
        let error = ErrorObject::internal("too many sessions; try again later");
        return error_response(StatusCode::SERVICE_UNAVAILABLE, None, &error);
    }
    let id: Arc<str> = Arc::from(crate::session::new_session_id());
    let (in_tx, in_rx) = mpsc::channel(mcp_core::DEFAULT_CHANNEL_CAPACITY);
    let (out_tx, out_rx) = mpsc::channel(mcp_core::DEFAULT_CHANNEL_CAPACITY);
    let running = mcp_core::serve(
        Transport {
            inbound: in_rx.into(),
            outbound: out_tx,
            flushed: None,
        },
        Arc::clone(endpoint.service()),
        mcp_core::SessionConfig::clone(endpoint.session_config()),
    );
    let peer = running.peer().clone();
    tokio::spawn(running.wait());
    sessions.map().insert(
        Arc::clone(&id),
        LegacySession {
            inbound: in_tx,
            peer,
            owner: owner.map(|Extension(owner)| owner),
        },
    );
    tracing::debug!(session = %id, "legacy SSE session started");
    let url = format!(
        "{}?{SESSION_ID_PARAM}={id}",
        endpoint.config().legacy_message_path
    );
    let state = StreamState {
        first: Some(named_event("endpoint", &url)),
        outbound: out_rx,
        keep_alive: keep_alive_interval(endpoint.config().keep_alive),
        shutdown: endpoint.shutdown_token(),
        _guard: SessionGuard { id, sessions },
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .header("x-accel-buffering", "no")
        .body(Body::from_stream(event_stream(state)))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn keep_alive_interval(every: Duration) -> tokio::time::Interval {
    let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    interval
}

struct StreamState {
    first: Option<Bytes>,
    outbound: mpsc::Receiver<OutboundFrame>,
    keep_alive: tokio::time::Interval,
    shutdown: CancellationToken,
    _guard: SessionGuard,
}

/// The session's frames as `message` events, keep-alive comments while
/// idle; everything already queued goes out in one write.
fn event_stream(state: StreamState) -> impl Stream<Item = Result<Bytes, Infallible>> + Send {
    futures::stream::unfold(state, |mut state| async move {
        if let Some(first) = state.first.take() {
            return Some((Ok(first), state));
        }
        loop {
            tokio::select! {
                frame = state.outbound.recv() => {
                    let frame = frame?;
                    let mut chunks = Vec::new();
                    if frame.kind != FrameKind::Ended {
                        chunks.push(named_event("message", &frame.text));
                    }
                    while let Ok(next) = state.outbound.try_recv() {
                        if next.kind != FrameKind::Ended {
                            chunks.push(named_event("message", &next.text));
                        }
                    }
                    if chunks.is_empty() {
                        continue;
                    }
                    state.keep_alive.reset();
                    return Some((Ok(sse::concat(&chunks)), state));
                }
                _ = state.keep_alive.tick() => return Some((Ok(sse::comment("keep-alive")), state)),
                _ = state.shutdown.cancelled() => return None,
            }
        }
    })
}

/// The `sessionId` of a query string, decoded as a form value (`%XX`
/// escapes and `+`).
fn session_param(query: Option<&str>) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(key, value)| key == SESSION_ID_PARAM && !value.is_empty())
        .map(|(_, value)| value.into_owned())
}

/// POST on the message path: one message (or batch) for a session.
pub(crate) async fn handle_message<E: LegacyHost>(
    State(endpoint): State<Arc<E>>,
    RawQuery(query): RawQuery,
    extensions: Option<Extension<MessageExtensions>>,
    scope_guard: Option<Extension<ToolScopeGuard>>,
    owner: Option<Extension<Owner>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let config = endpoint.config();
    let body = match read_body(body, config.max_body_bytes, config.body_read_timeout).await {
        Ok(body) => body,
        Err(refusal) => return *refusal,
    };
    let Some(id) = session_param(query.as_deref()) else {
        let error = ErrorObject::invalid_request("the sessionId query parameter is required");
        return error_response(StatusCode::BAD_REQUEST, None, &error);
    };
    if let Err(refusal) = check_json_content(headers.get(axum::http::header::CONTENT_TYPE)) {
        return *refusal;
    }
    let Some(inbound) = endpoint
        .legacy_sessions()
        .inbound(&id, owner.as_ref().map(|Extension(owner)| owner))
    else {
        let error = ErrorObject::invalid_request("unknown or ended session");
        return error_response(StatusCode::NOT_FOUND, None, &error);
    };
    let guard = scope_guard.as_ref().map(|Extension(g)| g);
    tracing::debug!(session = %id, bytes = body.len(), "legacy SSE message");
    let frame = match read_message(body, None, endpoint.service().as_ref(), guard) {
        Ok(read) => read.into_frame(),
        Err(refusal) => return *refusal,
    };
    let extensions = extensions.map(|Extension(e)| e.0);
    let extensions = trace_context::attach(
        headers.get(trace_context::TRACEPARENT),
        headers.get(trace_context::TRACESTATE),
        extensions,
    );
    if inbound
        .send(InboundFrame::Parsed(frame, extensions))
        .await
        .is_err()
    {
        let error = ErrorObject::invalid_request("session ended");
        return error_response(StatusCode::NOT_FOUND, None, &error);
    }
    StatusCode::ACCEPTED.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_param_is_found_and_decoded() {
        assert_eq!(session_param(Some("sessionId=abc")).as_deref(), Some("abc"));
        assert_eq!(
            session_param(Some("x=1&sessionId=a%2Db+c")).as_deref(),
            Some("a-b c")
        );
        assert_eq!(
            session_param(Some("sessionId=%zz%")).as_deref(),
            Some("%zz%")
        );
        // An escape at the very end is decoded too.
        assert_eq!(
            session_param(Some("sessionId=ab%41")).as_deref(),
            Some("abA")
        );
        assert_eq!(session_param(Some("sessionId=")), None);
        assert_eq!(session_param(Some("session=1")), None);
        assert_eq!(session_param(None), None);
    }

    #[test]
    fn named_events_frame_their_data() {
        assert_eq!(
            &named_event("endpoint", "/message?sessionId=x")[..],
            b"event: endpoint\ndata: /message?sessionId=x\n\n"
        );
    }
}
