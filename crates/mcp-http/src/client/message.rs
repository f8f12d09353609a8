//! What the client transport needs to know about the messages it carries:
//! ids, methods and revisions of outgoing frames, ids of incoming ones, and
//! JSON-RPC errors it makes up when HTTP fails.

use mcp_core::{FrameKind, OutboundFrame};
use mcp_schema::error_codes;
use mcp_schema::meta::META_PROTOCOL_VERSION;
use serde::Deserialize;

use crate::trace_context::TraceContext;
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// A JSON-RPC id in its JSON text form (`1`, `"abc"`), usable as a map key.
pub(crate) type IdKey = String;

/// An outgoing frame with what was learnt from it.
#[derive(Debug)]
pub(crate) struct Outgoing {
    /// The JSON text as the engine wrote it.
    pub text: String,
    /// What the engine said the frame is.
    pub kind: FrameKind,
    /// The request's id (requests only).
    pub id: Option<Value>,
    /// The method (requests and notifications).
    pub method: Option<String>,
    /// The revision named in `params._meta` when it is a stateless one.
    pub modern_version: Option<String>,
    /// The request params, kept raw.
    pub params: Option<Box<RawValue>>,
    /// The trace context in `params._meta`, sent as headers too.
    pub trace: Option<TraceContext>,
}

#[derive(Deserialize)]
struct OutProbe {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct MetaProbe {
    #[serde(rename = "_meta", default)]
    meta: Option<VersionProbe>,
}

#[derive(Deserialize)]
struct VersionProbe {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default)]
    version: Option<String>,
}

impl Outgoing {
    /// Reads what matters of `frame`; a frame that is not a JSON object
    /// (a batch) is carried as is.
    pub fn parse(frame: OutboundFrame) -> Outgoing {
        let probe = serde_json::from_str::<OutProbe>(&frame.text).ok();
        let (id, method, params) = match probe {
            Some(p) => (p.id, p.method, p.params),
            None => (None, None, None),
        };
        let id = if frame.kind == FrameKind::Request {
            id.filter(|v| !v.is_null())
        } else {
            None
        };
        let modern_version = params
            .as_deref()
            .filter(|p| p.get().contains(META_PROTOCOL_VERSION))
            .and_then(|p| serde_json::from_str::<MetaProbe>(p.get()).ok())
            .and_then(|m| m.meta)
            .and_then(|m| m.version)
            .filter(|v| is_modern_version(v));
        let trace = TraceContext::from_params(params.as_deref());
        Outgoing {
            trace,
            text: frame.text,
            kind: frame.kind,
            id,
            method,
            modern_version,
            params,
        }
    }

    /// The request id as a map key.
    pub fn id_key(&self) -> Option<IdKey> {
        self.id.as_ref().map(Value::to_string)
    }

    /// Whether this is a request with `method`.
    pub fn is_request(&self, method: &str) -> bool {
        self.id.is_some() && self.method.as_deref() == Some(method)
    }

    /// Whether this is the notification `method`.
    pub fn is_notification(&self, method: &str) -> bool {
        self.kind == FrameKind::Notification && self.method.as_deref() == Some(method)
    }

    /// The params parsed, `Null` when absent or unreadable.
    pub fn params_value(&self) -> Value {
        self.params
            .as_deref()
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or(Value::Null)
    }
}

/// An error with its causes (`error sending request: tcp connect: refused`),
/// which is what a person needs to see.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Why a request to `url` that reached no server failed, in words
/// (`cannot connect to URL: ` and [`connect_failure`]); `None` for a
/// request that got as far as a server.
pub(crate) fn unreached(url: &reqwest::Url, error: &reqwest::Error) -> Option<String> {
    connect_failure(url, error).map(|why| format!("cannot connect to {url}: {why}"))
}

/// Why connecting to `url` failed, when it did: the connection was
/// refused, its host could not be resolved, or connecting timed out.
pub(crate) fn connect_failure(url: &reqwest::Url, error: &reqwest::Error) -> Option<String> {
    use std::error::Error as _;
    if !error.is_connect() {
        return None;
    }
    let mut causes: Vec<&dyn std::error::Error> = Vec::new();
    let mut cause = error.source();
    while let Some(e) = cause {
        causes.push(e);
        cause = e.source();
    }
    let refused = causes.iter().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
    });
    // hyper-util's resolver failure has no type of its own.
    let unresolved = causes
        .iter()
        .any(|e| e.to_string().starts_with("dns error"));
    let why = if error.is_timeout() {
        "connecting timed out".to_owned()
    } else if refused {
        "the connection was refused".to_owned()
    } else if unresolved {
        format!(
            "the host {:?} could not be resolved",
            url.host_str().unwrap_or_default()
        )
    } else {
        match causes.last() {
            Some(cause) => cause.to_string(),
            None => error.to_string(),
        }
    };
    Some(why)
}

/// The error answering request `id` that reached no server, `message`
/// saying why (see [`unreached`]): its `data` marks it as the client's
/// own, so that [`is_unreached`] tells it from anything a server says.
pub(crate) fn unreached_error(id: &Value, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": error_codes::CONNECTION_CLOSED,
        "message": message,
        "data": {UNREACHED: true},
    }})
    .to_string()
}

/// The member of an error's `data` that marks it as [`unreached_error`].
const UNREACHED: &str = "unreachedServer";

/// Whether `error` is the HTTP client's own answer to a request that
/// reached no server (the connection was refused, the host could not be
/// resolved, connecting timed out), not anything a server said; its
/// message says which, and names the URL.
pub fn is_unreached(error: &mcp_schema::ErrorObject) -> bool {
    error.code == error_codes::CONNECTION_CLOSED
        && error
            .data
            .as_ref()
            .and_then(|data| data.get(UNREACHED))
            .and_then(Value::as_bool)
            == Some(true)
}

/// Whether `version` names a stateless-era revision (anything newer than
/// the last legacy one).
pub(crate) fn is_modern_version(version: &str) -> bool {
    version
        .parse::<mcp_schema::ProtocolVersion>()
        .map(|v| !v.is_legacy())
        .unwrap_or(version > "2025-11-25")
}

/// The parts of an incoming message the transport looks at.
#[derive(Deserialize, Default)]
pub(crate) struct InProbe {
    #[serde(default)]
    pub id: Option<Value>,
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub result: Option<Box<RawValue>>,
    #[serde(default)]
    pub error: Option<Value>,
}

impl InProbe {
    /// Reads `text`; anything unreadable (or a batch) gives an empty probe.
    pub fn parse(text: &str) -> InProbe {
        serde_json::from_str(text).unwrap_or_default()
    }

    /// Whether this is a response (result or error) to the request `id`.
    pub fn answers(&self, id: &Value) -> bool {
        self.method.is_none()
            && (self.result.is_some() || self.error.is_some())
            && self.id.as_ref() == Some(id)
    }
}

/// A JSON-RPC error response to `id`, for a failure the server never
/// answered in JSON-RPC.
pub(crate) fn error_response(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// The error for an HTTP failure: -32000 when the connection failed,
/// -32603 for a reply that is not JSON-RPC.
pub(crate) fn http_error(id: &Value, connection: bool, message: &str) -> String {
    let code = if connection {
        error_codes::CONNECTION_CLOSED
    } else {
        error_codes::INTERNAL_ERROR
    };
    error_response(id, code, message)
}

/// Whether a body is a JSON-RPC error response (and not, say, an OAuth
/// error such as `{"error": "invalid_token"}`).
fn is_jsonrpc_error(body: &str) -> bool {
    /// Read only to check the shape: `code` and `message` must be there.
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct ErrorBody {
        jsonrpc: String,
        error: ErrorObject,
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct ErrorObject {
        code: i64,
        message: String,
    }
    serde_json::from_str::<ErrorBody>(body).is_ok_and(|b| b.jsonrpc == "2.0")
}

/// Whether a non-2xx body is a JSON-RPC error response a Streamable HTTP
/// server would send (so the server is not a legacy HTTP+SSE one).
pub(crate) fn is_modern_jsonrpc_error(body: &str) -> bool {
    #[derive(Deserialize)]
    struct ErrorBody {
        jsonrpc: String,
        error: ErrorCode,
    }
    #[derive(Deserialize)]
    struct ErrorCode {
        code: i64,
        #[allow(dead_code)]
        message: String,
    }
    serde_json::from_str::<ErrorBody>(body).is_ok_and(|b| {
        b.jsonrpc == "2.0"
            && matches!(
                b.error.code,
                error_codes::METHOD_NOT_FOUND
                    | error_codes::INVALID_PARAMS
                    | error_codes::HEADER_MISMATCH
                    | error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY
                    | error_codes::UNSUPPORTED_PROTOCOL_VERSION
            )
    })
}

/// The body of a non-2xx reply to a request, as what the caller gets: the
/// server's own JSON-RPC error when it answers this request (or has no id),
/// a made-up one otherwise.
pub(crate) fn error_for_reply(id: &Value, status: reqwest::StatusCode, body: &str) -> String {
    let probe = InProbe::parse(body);
    if probe.error.is_some() && probe.method.is_none() && is_jsonrpc_error(body) {
        match &probe.id {
            Some(got) if got == id => return body.to_owned(),
            None | Some(Value::Null) => {
                // The server's error without an id: keep its code and message.
                let mut value: Value = match serde_json::from_str(body) {
                    Ok(v) => v,
                    Err(_) => Value::Null,
                };
                if let Some(obj) = value.as_object_mut() {
                    obj.insert("id".to_owned(), id.clone());
                    return value.to_string();
                }
            }
            Some(_) => {}
        }
    }
    let reason = status.canonical_reason().unwrap_or("");
    let snippet: String = body.chars().take(200).collect();
    http_error(
        id,
        false,
        &format!("HTTP {} {reason}: {}", status.as_u16(), snippet.trim()),
    )
}

/// The media type of a response, without parameters, lower-cased.
pub(crate) fn media_type(response: &reqwest::Response) -> String {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oauth_error_body_is_not_passed_on_as_json_rpc() {
        let id = json!(7);
        let body =
            r#"{"error":"invalid_token","error_description":"Missing Authorization header"}"#;
        let text = error_for_reply(&id, reqwest::StatusCode::UNAUTHORIZED, body);
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["jsonrpc"], "2.0");
        assert_eq!(value["id"], 7);
        assert_eq!(value["error"]["code"], error_codes::INTERNAL_ERROR);
        assert!(
            value["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("HTTP 401")
        );
    }
    use mcp_schema::jsonrpc::RequestId;

    fn frame(text: &str, kind: FrameKind) -> OutboundFrame {
        OutboundFrame {
            text: text.to_owned(),
            related: None::<RequestId>,
            kind,
        }
    }

    #[test]
    fn outgoing_requests_are_read() {
        let out = Outgoing::parse(frame(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            FrameKind::Request,
        ));
        assert_eq!(out.id_key().as_deref(), Some("3"));
        assert!(out.is_request("tools/call"));
        assert_eq!(out.modern_version.as_deref(), Some("2026-07-28"));
        let legacy = Outgoing::parse(frame(
            r#"{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
            FrameKind::Request,
        ));
        assert_eq!(legacy.modern_version, None);
        assert_eq!(legacy.id_key().as_deref(), Some("\"a\""));
    }

    #[test]
    fn replies_become_errors_for_the_request() {
        let id = json!(7);
        let html = error_for_reply(
            &id,
            reqwest::StatusCode::INTERNAL_SERVER_ERROR,
            "<html>boom</html>",
        );
        let v: Value = serde_json::from_str(&html).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["error"]["code"], -32603);
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("HTTP 500")
        );
        let own = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad"}}"#;
        assert_eq!(
            error_for_reply(&id, reqwest::StatusCode::BAD_REQUEST, own),
            own
        );
        let no_id = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}}"#;
        let v: Value = serde_json::from_str(&error_for_reply(
            &id,
            reqwest::StatusCode::BAD_REQUEST,
            no_id,
        ))
        .unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["error"]["code"], -32600);
    }

    #[test]
    fn modern_errors_are_recognised() {
        assert!(is_modern_jsonrpc_error(
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}"#
        ));
        assert!(!is_modern_jsonrpc_error("Not Found"));
        assert!(!is_modern_jsonrpc_error(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}"#
        ));
    }
}
