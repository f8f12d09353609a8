//! Reading a POST: its Accept and Content-Type, its body (bounded in size
//! and time), and its JSON-RPC frame.

use std::task::Poll;
use std::time::Duration;

use axum::body::HttpBody as _;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::BytesMut;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use mcp_core::{ReadFrame, Service, SessionConfig};
use mcp_schema::jsonrpc::{self, ErrorObject, Frame, Message, RequestId};

use super::reply::{JSON_CONTENT, Refusal, bad_request, error_response, json_with_status};
use crate::authz::{ToolScopeGuard, check_tool_scopes};

/// The 400 answer to a batch that holds malformed elements and no
/// request, or `None` for any other frame: one -32600 (or -32700) error per
/// malformed element, in order, and nothing of the batch run, since the
/// server cannot accept it as the notifications and responses it must be.
pub(super) fn refuse_malformed_batch(frame: &Frame) -> Option<Response> {
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

/// Whether the Accept header admits every one of `mimes`: directly, by a
/// `type/*` range, or by `*/*`.
pub(super) fn accepts<const N: usize>(accept: Option<&HeaderValue>, mimes: [&str; N]) -> bool {
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
pub(super) const RESPONSE_TYPES: [&str; 2] = ["application/json", "text/event-stream"];

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
pub(super) fn request_ids(frame: &Frame) -> impl Iterator<Item = &RequestId> {
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

/// Polls `future` once, in the caller's task: whether it is done already.
pub(crate) async fn poll_once<F: std::future::Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(std::pin::Pin::new(&mut *future).poll(cx))).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderMap;
    use std::convert::Infallible;

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
