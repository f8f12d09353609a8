//! GET (a legacy session's standalone stream, or its resumption) and
//! DELETE (ending a legacy session).

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcp_core::Owner;
use mcp_schema::jsonrpc::ErrorObject;

use super::read::accepts;
use super::reply::{bad_request, error_response, lookup_failed, store_unavailable};
use super::stream::sse_response;
use super::{McpEndpoint, names};
use crate::headers::{self, McpHeaders};
use crate::session::{Lookup, ResumeOutcome};

pub(super) async fn handle_get(
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
    let session = match endpoint.sessions.find(id, owner).await {
        Lookup::Found(session) => session,
        Lookup::Unknown => {
            let error = ErrorObject::invalid_request("unknown or expired session");
            return error_response(StatusCode::NOT_FOUND, None, &error);
        }
        other => return lookup_failed(other),
    };
    session.touch();
    let guard = session.stream_opened();
    if let Some(last_event_id) = headers::text(headers.last_event_id) {
        let (outcome, receiver) = session.resume(last_event_id.to_owned()).await;
        match outcome {
            ResumeOutcome::Unknown => {
                let error = ErrorObject::invalid_request("unknown or expired Last-Event-ID");
                return error_response(StatusCode::NOT_FOUND, None, &error);
            }
            ResumeOutcome::Unavailable => {
                let error =
                    ErrorObject::internal("the event store is unavailable; resume again later");
                return error_response(StatusCode::SERVICE_UNAVAILABLE, None, &error);
            }
            ResumeOutcome::Live | ResumeOutcome::Ended => {}
        }
        return sse_response(endpoint, Vec::new(), receiver, Some(guard));
    }
    match session.open_standalone().await {
        Ok(Some(receiver)) => sse_response(endpoint, Vec::new(), receiver, Some(guard)),
        Err(error) => {
            let error = ErrorObject::internal(format!("{error}; try again later"));
            error_response(StatusCode::SERVICE_UNAVAILABLE, None, &error)
        }
        Ok(None) => {
            let error =
                ErrorObject::invalid_request("this session already has a standalone stream");
            error_response(StatusCode::CONFLICT, None, &error)
        }
    }
}

pub(super) async fn handle_delete(
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
    match endpoint.sessions.remove(id, owner).await {
        Ok(true) => StatusCode::NO_CONTENT.into_response(),
        Ok(false) => {
            let error = ErrorObject::invalid_request("unknown or expired session");
            error_response(StatusCode::NOT_FOUND, None, &error)
        }
        Err(error) => store_unavailable(&error),
    }
}
