//! The JSON-RPC 2.0 envelope: requests, notifications, responses and errors.
//!
//! A frame is parsed once into a [`Message`]; `params` and `result` stay raw
//! JSON ([`RawValue`]) until a handler asks for a typed value, so a gateway can
//! forward them without re-parsing.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error_codes;
pub use crate::request_id::RequestId;
use crate::wire_member::{IdMember, MethodMember, VersionMember};

/// A request: expects exactly one response with the same id.
#[derive(Debug, Clone)]
pub struct Request {
    /// Correlates the response.
    pub id: RequestId,
    /// The method name, such as `tools/call`.
    pub method: String,
    /// The parameters, untouched.
    pub params: Option<Box<RawValue>>,
}

/// A notification: no id, no response.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method name, such as `notifications/progress`.
    pub method: String,
    /// The parameters, untouched.
    pub params: Option<Box<RawValue>>,
}

/// A successful response.
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result, untouched.
    pub result: Box<RawValue>,
}

/// An error response. The id is absent (serialized as null) when the request's
/// id could not be read, for example after a parse error.
#[derive(Debug, Clone)]
pub struct ErrorResponse {
    /// The id of the request this answers, if known.
    pub id: Option<RequestId>,
    /// What went wrong.
    pub error: ErrorObject,
}

/// The `error` member of an error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// A JSON-RPC or MCP error code, see [`error_codes`].
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Extra detail defined by the sender.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with a code and a message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32700: the frame is not valid JSON.
    pub fn parse_error(detail: impl fmt::Display) -> Self {
        Self::new(error_codes::PARSE_ERROR, format!("Parse error: {detail}"))
    }

    /// -32600: valid JSON, but not a valid request.
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        Self::new(
            error_codes::INVALID_REQUEST,
            format!("Invalid request: {detail}"),
        )
    }

    /// -32601: nobody answers this method here.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            error_codes::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    /// -32602: the parameters are wrong; the message says how.
    pub fn invalid_params(detail: impl fmt::Display) -> Self {
        Self::new(
            error_codes::INVALID_PARAMS,
            format!("Invalid params: {detail}"),
        )
    }

    /// -32603: the receiver failed.
    pub fn internal(detail: impl fmt::Display) -> Self {
        Self::new(
            error_codes::INTERNAL_ERROR,
            format!("Internal error: {detail}"),
        )
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

/// Any one JSON-RPC message.
#[derive(Debug, Clone)]
pub enum Message {
    /// Expects a response.
    Request(Request),
    /// Expects nothing.
    Notification(Notification),
    /// Answers a request.
    Response(Response),
    /// Answers a request with an error.
    Error(ErrorResponse),
}

/// What one transport frame held: one message or a batch (an array).
#[derive(Debug)]
pub enum Frame {
    /// A single message.
    Single(Message),
    /// A batch; each element parsed on its own, so one bad element does not
    /// spoil the others.
    Batch(Vec<Result<Message, ErrorResponse>>),
}

/// The wire shape of any message, every member optional, so that one parse
/// tells us what we have and what is wrong with it. The id, method and
/// version are read in that parse; `params` and `result` are kept raw
/// (borrowed from the text, so where they lie in it is known); an error is
/// read only when the message is one.
#[derive(Deserialize)]
pub(crate) struct Envelope<'a> {
    #[serde(default, deserialize_with = "present")]
    jsonrpc: Option<VersionMember>,
    #[serde(default, deserialize_with = "present")]
    id: Option<IdMember>,
    #[serde(default, deserialize_with = "present")]
    method: Option<MethodMember>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// Keeps a present member, even `null`, as `Some(raw)`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

impl Message {
    /// Parses one frame of text: a message or a batch. Invalid JSON yields a
    /// -32700 error response with a null id; JSON that is not a message yields
    /// -32600 with the id when it could be read.
    pub fn parse_frame(text: &str) -> Result<Frame, ErrorResponse> {
        let trimmed = text.trim_start();
        if trimmed.starts_with('[') {
            let items: Vec<Box<RawValue>> =
                serde_json::from_str(text).map_err(|e| ErrorResponse {
                    id: None,
                    error: if e.is_syntax() || e.is_eof() {
                        ErrorObject::parse_error(e)
                    } else {
                        ErrorObject::invalid_request(e)
                    },
                })?;
            if items.is_empty() {
                return Err(ErrorResponse {
                    id: None,
                    error: ErrorObject::invalid_request("empty batch"),
                });
            }
            Ok(Frame::Batch(
                items
                    .iter()
                    .map(|raw| Self::from_envelope_text(raw.get()))
                    .collect(),
            ))
        } else {
            Self::from_envelope_text(text).map(Frame::Single)
        }
    }

    /// Parses exactly one message (no batch).
    pub fn parse(text: &str) -> Result<Message, ErrorResponse> {
        Self::from_envelope_text(text)
    }

    fn from_envelope_text(text: &str) -> Result<Message, ErrorResponse> {
        let env: Envelope = match serde_json::from_str(text) {
            Ok(env) => env,
            Err(e) if e.is_syntax() || e.is_eof() => {
                return Err(ErrorResponse {
                    id: None,
                    error: ErrorObject::parse_error(e),
                });
            }
            Err(_) => {
                return Err(ErrorResponse {
                    id: None,
                    error: ErrorObject::invalid_request("a message must be a JSON object"),
                });
            }
        };
        let params = env.params.map(RawValue::to_owned);
        Self::from_envelope(env, params)
    }

    /// The message an envelope holds, with `params` as its params (the
    /// envelope's own, owned).
    pub(crate) fn from_envelope(
        env: Envelope,
        params: Option<Box<RawValue>>,
    ) -> Result<Message, ErrorResponse> {
        let id = match env.id {
            None => None,
            Some(IdMember::Id(id)) => Some(id),
            Some(IdMember::Null) if env.error.is_some() => None,
            Some(IdMember::Null | IdMember::Invalid) => {
                return Err(ErrorResponse {
                    id: None,
                    error: ErrorObject::invalid_request("id must be a string or an integer"),
                });
            }
        };
        let fail = |detail: &str| ErrorResponse {
            id: id.clone(),
            error: ErrorObject::invalid_request(detail),
        };
        if env.jsonrpc != Some(VersionMember(true)) {
            return Err(fail("jsonrpc must be \"2.0\""));
        }
        if let Some(params) = &params {
            let first = params.get().trim_start().as_bytes().first().copied();
            if !matches!(first, Some(b'{') | Some(b'[')) {
                return Err(fail("params must be an object"));
            }
        }
        match (env.method, env.result, env.error) {
            (Some(MethodMember(method)), None, None) => {
                let method = method.ok_or_else(|| fail("method must be a string"))?;
                match id {
                    Some(id) => Ok(Message::Request(Request { id, method, params })),
                    None => Ok(Message::Notification(Notification { method, params })),
                }
            }
            (None, Some(result), None) => match id {
                Some(id) => Ok(Message::Response(Response {
                    id,
                    result: result.to_owned(),
                })),
                None => Err(fail("a response needs an id")),
            },
            (None, None, Some(error)) => {
                let error: ErrorObject = serde_json::from_str(error.get())
                    .map_err(|_| fail("error must have a code and a message"))?;
                Ok(Message::Error(ErrorResponse { id, error }))
            }
            _ => Err(fail("a message has exactly one of method, result or error")),
        }
    }

    /// Serializes the message to compact JSON text (one line).
    pub fn to_json(&self) -> String {
        match self {
            Message::Request(r) => write_request(&r.id, &r.method, r.params.as_deref()),
            Message::Notification(n) => write_notification(&n.method, n.params.as_deref()),
            Message::Response(r) => write_response(&r.id, &r.result),
            Message::Error(e) => write_error(e.id.as_ref(), &e.error),
        }
    }

    /// The method name, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            _ => None,
        }
    }
}

#[derive(Serialize)]
struct WireError<'a> {
    jsonrpc: &'static str,
    id: Option<&'a RequestId>,
    error: &'a ErrorObject,
}

fn to_text<T: Serialize>(value: &T) -> String {
    // Serializing these plain structs cannot fail: every member is already
    // valid JSON or a string.
    serde_json::to_string(value).unwrap_or_default()
}

/// Writes a request without building a [`Message`]: the text serde
/// would write, in a buffer of its final size.
pub fn write_request(id: &RequestId, method: &str, params: Option<&RawValue>) -> String {
    let mut text = String::with_capacity(message_size(method, params) + 32);
    text.push_str(r#"{"jsonrpc":"2.0","id":"#);
    push_id(&mut text, id);
    push_method_and_params(&mut text, method, params);
    text
}

/// Writes a notification without building a [`Message`] (as
/// [`write_request`]).
pub fn write_notification(method: &str, params: Option<&RawValue>) -> String {
    let mut text = String::with_capacity(message_size(method, params));
    text.push_str(r#"{"jsonrpc":"2.0""#);
    push_method_and_params(&mut text, method, params);
    text
}

/// The size of a message without its id, when `method` needs no escapes.
fn message_size(method: &str, params: Option<&RawValue>) -> usize {
    const FIXED: usize = r#"{"jsonrpc":"2.0","method":"","params":}"#.len();
    FIXED + method.len() + params.map_or(0, |p| p.get().len())
}

/// Writes `,"method":...` and `,"params":...` (when there are params),
/// and closes the message.
fn push_method_and_params(text: &mut String, method: &str, params: Option<&RawValue>) {
    text.push_str(r#","method":"#);
    push_string(text, method);
    if let Some(params) = params {
        text.push_str(r#","params":"#);
        text.push_str(params.get());
    }
    text.push('}');
}

/// Writes `s` as a JSON string, escaped as serde escapes it.
fn push_string(text: &mut String, s: &str) {
    // serde escapes only control characters, quotes and backslashes.
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        text.push('"');
        text.push_str(s);
        text.push('"');
    } else {
        text.push_str(&to_text(&s));
    }
}

fn push_id(text: &mut String, id: &RequestId) {
    match id {
        RequestId::Number(n) => text.push_str(itoa::Buffer::new().format(*n)),
        RequestId::String(s) => push_string(text, s),
    }
}

/// Writes a successful response without building a [`Message`].
pub fn write_response(id: &RequestId, result: &RawValue) -> String {
    let mut text = response_head(id, result.get().len());
    text.push_str(result.get());
    text.push('}');
    text
}

/// Writes a successful response whose result is the object `result` with
/// `members` placed before its own, without parsing `result` again. Each
/// member is the text of one `"key":value` pair, valid JSON the caller has
/// made. `None` when `result` is not an object.
pub fn write_response_prepending(
    id: &RequestId,
    members: &[&str],
    result: &RawValue,
) -> Option<String> {
    let own = result.get().trim_start().strip_prefix('{')?.trim_start();
    let added: usize = members.iter().map(|m| m.len() + 1).sum();
    let mut text = response_head(id, 2 + added + own.len());
    text.push('{');
    for member in members {
        text.push_str(member);
        text.push(',');
    }
    if !members.is_empty() && own.starts_with('}') {
        // No members of its own: no comma after the last one added.
        text.pop();
    }
    text.push_str(own);
    text.push('}');
    Some(text)
}

/// `{"jsonrpc":"2.0","id":ID,"result":`, with room for `more` bytes after it.
fn response_head(id: &RequestId, more: usize) -> String {
    const HEAD: &str = r#"{"jsonrpc":"2.0","id":"#;
    const RESULT: &str = r#","result":"#;
    let mut text = String::with_capacity(HEAD.len() + 24 + RESULT.len() + more + 1);
    text.push_str(HEAD);
    push_id(&mut text, id);
    text.push_str(RESULT);
    text
}

/// Writes an error response without building a [`Message`].
pub fn write_error(id: Option<&RequestId>, error: &ErrorObject) -> String {
    to_text(&WireError {
        jsonrpc: "2.0",
        id,
        error,
    })
}

/// Serializes any value to a raw JSON value.
pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, serde_json::Error> {
    serde_json::value::to_raw_value(value)
}

/// [`to_raw`] into a buffer of `size` bytes to begin with: for a value
/// whose size is known about, so the text is not copied as it grows.
pub fn to_raw_sized<T: Serialize + ?Sized>(
    value: &T,
    size: usize,
) -> Result<Box<RawValue>, serde_json::Error> {
    let mut text = Vec::with_capacity(size);
    serde_json::to_writer(&mut text, value)?;
    let text = String::from_utf8(text).map_err(serde::ser::Error::custom)?;
    // SAFETY: serde_json's own serializer wrote `text`: one well-formed
    // JSON value without surrounding whitespace.
    Ok(unsafe { RawValue::from_string_unchecked(text) })
}

/// Deserializes raw params into a typed value; absent params read as `{}`.
/// The error is a -32602 that says what is wrong.
pub fn from_params<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, ErrorObject> {
    from_params_text(params.map(RawValue::get))
}

/// [`from_params`] for params as text (known to be JSON); what is read may
/// borrow from it.
pub fn from_params_text<'p, T: Deserialize<'p>>(params: Option<&'p str>) -> Result<T, ErrorObject> {
    serde_json::from_str(params.unwrap_or("{}")).map_err(ErrorObject::invalid_params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct SerdeRequest<'a> {
        jsonrpc: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a RequestId>,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a RawValue>,
    }

    #[test]
    fn requests_and_notifications_are_written_as_serde_would() {
        let params =
            RawValue::from_string(r#"{"name":"t", "arguments":{"a":[1]}}"#.into()).unwrap();
        let ids = [
            RequestId::Number(0),
            RequestId::Number(-7),
            RequestId::Number(i64::MAX),
            RequestId::String("a\"b".into()),
            RequestId::String("a\\b\u{1}".into()),
            RequestId::String("".into()),
        ];
        // Each character serde escapes alone, and those it does not.
        let methods = [
            "tools/call",
            "",
            "a\"b",
            "a\\b",
            "a\nb",
            "\u{1f}",
            "\u{7f}\u{e9}\u{1F600}",
        ];
        for method in methods {
            for params in [None, Some(&*params)] {
                let serde = |id| {
                    serde_json::to_string(&SerdeRequest {
                        jsonrpc: "2.0",
                        id,
                        method,
                        params,
                    })
                    .unwrap()
                };
                assert_eq!(write_notification(method, params), serde(None));
                for id in &ids {
                    assert_eq!(write_request(id, method, params), serde(Some(id)));
                }
            }
        }
    }

    #[test]
    fn a_sized_raw_value_is_the_plain_one() {
        let value = serde_json::json!({"a": [1, "\u{e9}\"", null], "b": {"c": 1.5}});
        for size in [0, 4, 1000] {
            assert_eq!(
                to_raw_sized(&value, size).unwrap().get(),
                to_raw(&value).unwrap().get()
            );
        }
    }

    #[test]
    fn responses_are_written_as_serde_would() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        for id in [RequestId::Number(-7), RequestId::String("a\"b\\c".into())] {
            let text = write_response(&id, &raw(r#"{"a":[1,{"b":null}]}"#));
            let expected = serde_json::json!({
                "jsonrpc": "2.0", "id": id, "result": { "a": [1, { "b": null }] }
            });
            assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), expected);
            assert!(text.starts_with(r#"{"jsonrpc":"2.0","id":"#), "{text}");

            let members = [r#""resultType":"complete""#, r#""k":{"x":1}"#];
            let text = write_response_prepending(&id, &members, &raw(r#"{ "a":1 }"#)).unwrap();
            assert!(
                text.ends_with(r#""result":{"resultType":"complete","k":{"x":1},"a":1 }}"#),
                "{text}"
            );
            let parsed: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(parsed["id"], serde_json::to_value(&id).unwrap());
            let text = write_response_prepending(&id, &members[..1], &raw("{ }")).unwrap();
            assert!(
                text.ends_with(r#""result":{"resultType":"complete"}}"#),
                "{text}"
            );
            let text = write_response_prepending(&id, &[], &raw(r#"{"a":1}"#)).unwrap();
            assert_eq!(text, write_response(&id, &raw(r#"{"a":1}"#)));
            assert!(write_response_prepending(&id, &members, &raw("[1]")).is_none());
        }
    }

    fn parse(text: &str) -> Result<Message, ErrorResponse> {
        Message::parse(text)
    }

    #[test]
    fn request_ids_read_alone_follow_the_envelope_rule() {
        let read = |text: &str| serde_json::from_str::<RequestId>(text).ok();
        assert_eq!(read("7"), Some(RequestId::Number(7)));
        assert_eq!(read(r#""a\"b""#), Some(RequestId::String("a\"b".into())));
        for invalid in ["null", "1.5", "18446744073709551615", "true", "[1]", "{}"] {
            assert_eq!(read(invalid), None, "{invalid}");
        }
        let from_value = |value: Value| serde_json::from_value::<RequestId>(value).ok();
        assert_eq!(
            from_value(serde_json::json!(-3)),
            Some(RequestId::Number(-3))
        );
        assert_eq!(
            from_value(serde_json::json!("x")),
            Some(RequestId::from("x"))
        );
        assert_eq!(from_value(serde_json::json!({"id": 1})), None);
    }

    #[test]
    fn request_keeps_params_raw() {
        let m = parse(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x", "arguments":{}}}"#)
            .unwrap();
        let Message::Request(r) = m else {
            panic!("not a request")
        };
        assert_eq!(r.id, RequestId::Number(7));
        assert_eq!(r.method, "tools/call");
        assert_eq!(r.params.unwrap().get(), r#"{"name":"x", "arguments":{}}"#);
    }

    #[test]
    fn notification_has_no_id() {
        let m = parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(m, Message::Notification(n) if n.method == "notifications/initialized"));
    }

    #[test]
    fn malformed_json_is_parse_error_with_null_id() {
        let e = parse(r#"{"jsonrpc":"2.0","id":1,"#).unwrap_err();
        assert_eq!(e.error.code, error_codes::PARSE_ERROR);
        assert_eq!(e.id, None);
        assert!(write_error(e.id.as_ref(), &e.error).contains(r#""id":null"#));
    }

    #[test]
    fn invalid_requests_keep_their_id() {
        for (text, id) in [
            (
                r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
                Some(RequestId::Number(3)),
            ),
            (
                r#"{"jsonrpc":"2.0","id":"a","method":5}"#,
                Some(RequestId::from("a")),
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":3}"#,
                Some(RequestId::Number(4)),
            ),
            (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, None),
            (r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, None),
            (r#"{"jsonrpc":"2.0","id":5}"#, Some(RequestId::Number(5))),
            (r#"[1]"#, None),
            (r#"42"#, None),
        ] {
            let err = match Message::parse_frame(text) {
                Err(e) => e,
                Ok(Frame::Batch(items)) => items.into_iter().next().unwrap().unwrap_err(),
                Ok(other) => panic!("{text} parsed as {other:?}"),
            };
            assert_eq!(err.error.code, error_codes::INVALID_REQUEST, "{text}");
            assert_eq!(err.id, id, "{text}");
        }
    }

    #[test]
    fn batch_parses_each_element() {
        let Frame::Batch(items) = Message::parse_frame(
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"bad":true},{"jsonrpc":"2.0","method":"x"}]"#,
        )
        .unwrap() else {
            panic!("not a batch")
        };
        assert_eq!(items.len(), 3);
        assert!(matches!(items[0], Ok(Message::Request(_))));
        assert!(items[1].is_err());
        assert!(matches!(items[2], Ok(Message::Notification(_))));
        assert_eq!(
            Message::parse_frame("[]").unwrap_err().error.code,
            error_codes::INVALID_REQUEST
        );
    }

    #[test]
    fn error_response_with_null_id() {
        let m =
            parse(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#).unwrap();
        assert!(matches!(m, Message::Error(ErrorResponse { id: None, .. })));
    }

    #[test]
    fn round_trip_text() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"x","result":{"a":[1,2]}}"#,
            r#"{"jsonrpc":"2.0","method":"n","params":{"k":"v"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"m","data":{"d":1}}}"#,
        ] {
            assert_eq!(parse(text).unwrap().to_json(), text);
        }
    }
}
