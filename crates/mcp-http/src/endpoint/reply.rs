//! What the endpoint answers with: JSON-RPC errors as HTTP responses, the
//! status a response gets in each era, single JSON answers.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use mcp_schema::error_codes;
use mcp_schema::jsonrpc::{self, ErrorObject, RequestId};
use mcp_schema::text_search::TextSearch;
use serde::Deserialize;

use crate::session::MessageText;
use crate::spare_headers;

/// `Content-Type: application/json`, made once.
pub(super) const JSON_CONTENT: HeaderValue = HeaderValue::from_static("application/json");

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
pub(super) fn json_with_status(status: StatusCode, body: impl Into<Body>) -> Response {
    let mut response = Response::new(body.into());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    *headers = spare_headers::take();
    headers.insert(header::CONTENT_TYPE, JSON_CONTENT);
    response
}

/// The 503 for a session store that cannot be reached.
pub(super) fn store_unavailable(error: &crate::session_store::SessionStoreError) -> Response {
    let error = ErrorObject::internal(format!("{error}; try again later"));
    error_response(StatusCode::SERVICE_UNAVAILABLE, None, &error)
}

/// The 503 for a session that could not be found for want of its store,
/// or of room.
pub(super) fn lookup_failed(lookup: crate::session::Lookup) -> Response {
    match lookup {
        crate::session::Lookup::Unavailable(error) => store_unavailable(&error),
        _ => {
            let error = ErrorObject::internal("too many sessions; try again later");
            error_response(StatusCode::SERVICE_UNAVAILABLE, None, &error)
        }
    }
}

pub(super) fn bad_request(message: impl std::fmt::Display) -> Response {
    error_response(
        StatusCode::BAD_REQUEST,
        None,
        &ErrorObject::new(error_codes::INVALID_REQUEST, message.to_string()),
    )
}

/// The response refusing a request before it reaches a session (boxed:
/// refusals are the rare path).
pub(crate) type Refusal = Box<Response>;

/// Which era a response belongs to, for its status code.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Era {
    Legacy,
    Modern,
}

/// The HTTP status of a JSON response carrying `text`, and for an error
/// whose `data.retryAfterSeconds` says when to try again (a rate limit),
/// that many whole seconds (at least one) for `Retry-After`.
fn head_of(text: &str, era: Era) -> (StatusCode, Option<u64>) {
    #[derive(Deserialize)]
    struct ErrorProbe {
        #[serde(default)]
        id: Option<serde_json::Value>,
        error: Option<ErrorObject>,
    }
    static ERROR: TextSearch = TextSearch::new("\"error\"");
    if is_plain_result(text) || !ERROR.is_in(text) {
        return (StatusCode::OK, None);
    }
    let Ok(ErrorProbe {
        id,
        error: Some(error),
    }) = serde_json::from_str::<ErrorProbe>(text)
    else {
        return (StatusCode::OK, None);
    };
    let retry_after = error
        .data
        .as_ref()
        .and_then(|data| data.get("retryAfterSeconds")?.as_f64())
        .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
        .map(|seconds| (seconds.ceil() as u64).max(1));
    let no_id = id.is_none_or(|v| v.is_null());
    let status = match (era, error.code) {
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
    };
    (status, retry_after)
}

/// Whether `text` opens as a result response to a numeric id, as this
/// crate's writer lays one out (`{"jsonrpc":"2.0","id":7,"result":`): told
/// from its first bytes, where an error would otherwise be searched for.
fn is_plain_result(text: &str) -> bool {
    text.strip_prefix(r#"{"jsonrpc":"2.0","id":"#)
        .map(|rest| rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == '-'))
        .is_some_and(|rest| rest.starts_with(r#","result":"#))
}

/// A response carrying one JSON message; an error saying when to retry
/// (`data.retryAfterSeconds`) gets `Retry-After`.
pub(super) fn json_response(text: MessageText, era: Era) -> Response {
    let (status, retry_after) = head_of(&text, era);
    let mut response = json_with_status(status, text.into_body());
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
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
        assert_eq!(head_of(&result, Era::Modern).0, StatusCode::OK);
        for not_plain in [
            r#"{"jsonrpc":"2.0","id":"a","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m"}}"#,
            r#"{"id":1,"jsonrpc":"2.0","result":{}}"#,
        ] {
            assert!(!is_plain_result(not_plain), "{not_plain}");
        }
        let invalid_params = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m"}}"#;
        assert_eq!(
            head_of(invalid_params, Era::Modern).0,
            StatusCode::BAD_REQUEST
        );
        assert_eq!(head_of(invalid_params, Era::Legacy).0, StatusCode::OK);
    }

    #[test]
    fn an_error_saying_when_to_retry_gets_retry_after_in_whole_seconds() {
        let limited = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32029,"message":"m","data":{"retryAfterSeconds":2.2}}}"#;
        assert_eq!(head_of(limited, Era::Legacy), (StatusCode::OK, Some(3)));
        let soon = limited.replace("2.2", "0.01");
        assert_eq!(head_of(&soon, Era::Modern).1, Some(1));
        let other =
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32029,"message":"m","data":{"retry":2}}}"#;
        assert_eq!(head_of(other, Era::Legacy).1, None);
    }
}
