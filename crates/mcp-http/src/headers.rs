//! The headers a POST is checked by, and, in 2026-07-28, the request
//! metadata headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`,
//! `Mcp-Param-*`) that must agree with the body; a disagreement is answered
//! 400 with -32020 (`HeaderMismatch`).

use axum::http::{HeaderMap, HeaderValue};
use mcp_core::{ReadFrame, Service};
use mcp_schema::header_params::decode_header_value;
use mcp_schema::jsonrpc::{ErrorObject, Frame, Message};
use mcp_schema::{JsonObject, error_codes, methods};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

use crate::endpoint::{LAST_EVENT_ID, METHOD, NAME, PROTOCOL_VERSION, SESSION_ID};
use crate::trace_context::{TRACEPARENT, TRACESTATE};

/// The headers of a request that the endpoint reads, found in one pass
/// over them instead of one hash lookup each. Each is its first value, as
/// [`HeaderMap::get`] gives it.
#[derive(Clone, Copy)]
pub(crate) struct McpHeaders<'a> {
    /// Every header, for those looked up by a name known only later.
    pub(crate) all: &'a HeaderMap,
    pub(crate) content_type: Option<&'a HeaderValue>,
    pub(crate) accept: Option<&'a HeaderValue>,
    pub(crate) session_id: Option<&'a HeaderValue>,
    pub(crate) protocol_version: Option<&'a HeaderValue>,
    pub(crate) method: Option<&'a HeaderValue>,
    pub(crate) name: Option<&'a HeaderValue>,
    pub(crate) last_event_id: Option<&'a HeaderValue>,
    pub(crate) traceparent: Option<&'a HeaderValue>,
    pub(crate) tracestate: Option<&'a HeaderValue>,
}

impl<'a> McpHeaders<'a> {
    /// Finds the headers the endpoint reads among `all`.
    pub(crate) fn read(all: &'a HeaderMap) -> Self {
        let mut found = McpHeaders {
            all,
            content_type: None,
            accept: None,
            session_id: None,
            protocol_version: None,
            method: None,
            name: None,
            last_event_id: None,
            traceparent: None,
            tracestate: None,
        };
        for (name, value) in all {
            let slot = match name.as_str() {
                "content-type" => &mut found.content_type,
                "accept" => &mut found.accept,
                SESSION_ID => &mut found.session_id,
                PROTOCOL_VERSION => &mut found.protocol_version,
                METHOD => &mut found.method,
                NAME => &mut found.name,
                LAST_EVENT_ID => &mut found.last_event_id,
                TRACEPARENT => &mut found.traceparent,
                TRACESTATE => &mut found.tracestate,
                _ => continue,
            };
            slot.get_or_insert(value);
        }
        found
    }
}

/// A header's value as text, if it is visible ASCII.
pub(crate) fn text(value: Option<&HeaderValue>) -> Option<&str> {
    value.and_then(|v| v.to_str().ok())
}

/// The session a request names in `Mcp-Session-Id`, if any. A header that
/// is there but cannot be a session id (empty, or not all visible ASCII
/// 0x21 to 0x7E, as the specification requires of session ids) is an
/// error: such a request must not pass for one without a session.
pub(crate) fn session_id(value: Option<&HeaderValue>) -> Result<Option<&str>, String> {
    let Some(value) = value else {
        return Ok(None);
    };
    let bytes = value.as_bytes();
    if bytes.is_empty() || !bytes.iter().all(|b| (0x21..=0x7e).contains(b)) {
        return Err("Mcp-Session-Id must be visible ASCII characters (0x21 to 0x7E)".to_owned());
    }
    // Visible ASCII is valid UTF-8.
    Ok(value.to_str().ok())
}

/// The part of 2026-07-28 request params checked against the headers,
/// borrowed from the body: values are read only where a header needs them.
#[derive(Deserialize, Default)]
struct HeaderProbe<'a> {
    #[serde(rename = "_meta", default, borrow)]
    meta: Option<MetaProbe<'a>>,
    #[serde(default, borrow)]
    name: Option<&'a RawValue>,
    #[serde(default, borrow)]
    uri: Option<&'a RawValue>,
    #[serde(rename = "taskId", default, borrow)]
    task_id: Option<&'a RawValue>,
    /// Parsed only for a tool with header-mirrored arguments.
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct MetaProbe<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default, borrow)]
    protocol_version: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", default)]
    /// Only its presence matters here: skipped, not built.
    client_capabilities: Option<serde::de::IgnoredAny>,
}

/// A raw JSON value as a string, if it is one (unescaped when needed).
fn as_string(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    // A valid JSON string without escapes is its text between the quotes.
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"'))
        && !inner.contains('\\')
    {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(text).map(Cow::Owned).ok()
}

fn mismatch(what: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(
        error_codes::HEADER_MISMATCH,
        format!("Header mismatch: {what}"),
    )
}

/// Checks a 2026-07-28 request's headers against its body. Requests whose
/// per-request `_meta` is incomplete are left to the engine, which answers
/// them with -32602 first, as the specification orders the checks.
pub(crate) fn check_headers(
    headers: &McpHeaders,
    read: &ReadFrame,
    service: &dyn Service,
) -> Result<(), ErrorObject> {
    let Frame::Single(Message::Request(request)) = read.frame() else {
        return Ok(());
    };
    let params = request.params.as_deref().map(RawValue::get);
    // A `_meta` the server has read before is not read again: only the
    // other members are.
    let known = read.known_meta();
    let probed = match &known {
        Some(known) => Some(known.members.as_ref()),
        None => params,
    };
    let probe: HeaderProbe = probed
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default();
    // The version `_meta` names, where it also declares the client's
    // capabilities (without them the engine refuses the request first).
    let body_version = match &known {
        Some(known) => known
            .meta
            .client_capabilities
            .as_ref()
            .and(known.meta.protocol_version.as_deref())
            .map(Cow::Borrowed),
        // A version that is not a string is malformed `_meta`, which the
        // engine answers (-32602), not a mismatch with the header.
        None => probe
            .meta
            .and_then(|meta| meta.client_capabilities.and(meta.protocol_version))
            .and_then(as_string),
    };
    let Some(body_version) = body_version else {
        return Ok(());
    };
    match text(headers.protocol_version) {
        Some(h) if h == body_version.as_ref() => {}
        Some(h) => {
            return Err(mismatch(format!(
                "MCP-Protocol-Version {h:?} does not match _meta {body_version:?}"
            )));
        }
        None => return Err(mismatch("MCP-Protocol-Version header is missing")),
    }
    match text(headers.method) {
        Some(h) if h == request.method => {}
        Some(h) => {
            return Err(mismatch(format!(
                "Mcp-Method {h:?} does not match body method {:?}",
                request.method
            )));
        }
        None => return Err(mismatch("Mcp-Method header is missing")),
    }
    let named = match request.method.as_str() {
        methods::TOOLS_CALL | methods::PROMPTS_GET => probe.name,
        methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL => probe.task_id,
        methods::RESOURCES_READ => probe.uri,
        _ => None,
    };
    if let Some(name) = named.and_then(as_string) {
        check_name(headers.name, &name)?;
        if request.method == methods::TOOLS_CALL {
            check_params(headers.all, service, &name, probe.arguments)?;
        }
    }
    Ok(())
}

/// `Mcp-Name` against the body's name, URI or task id (decoded first when
/// it is Base64).
fn check_name(header: Option<&HeaderValue>, name: &str) -> Result<(), ErrorObject> {
    let Some(raw) = header else {
        return Err(mismatch("Mcp-Name header is missing"));
    };
    let header = raw
        .to_str()
        .map_err(|_| mismatch("Mcp-Name contains invalid characters"))
        .and_then(|h| decode_header_value(h).map_err(|e| mismatch(format!("Mcp-Name: {e}"))))?;
    if header != name {
        return Err(mismatch(format!(
            "Mcp-Name {:?} does not match body value {name:?}",
            header.as_ref()
        )));
    }
    Ok(())
}

/// The tool's `Mcp-Param-*` headers against its arguments.
fn check_params(
    headers: &HeaderMap,
    service: &dyn Service,
    tool: &str,
    arguments: Option<&RawValue>,
) -> Result<(), ErrorObject> {
    let Some(params) = service.tool_header_params(tool) else {
        return Ok(());
    };
    // Arguments that are not an object are the engine's to refuse.
    let arguments: JsonObject = arguments
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default();
    for param in params.iter() {
        let header = match headers.get(param.header_name()) {
            None => None,
            Some(value) => Some(value.to_str().map_err(|_| {
                mismatch(format!(
                    "{} contains invalid characters",
                    param.header_name()
                ))
            })?),
        };
        param.check(header, &arguments).map_err(mismatch)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pass_finds_what_lookups_by_name_find() {
        let mut all = HeaderMap::new();
        for (name, value) in [
            ("Content-Type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("Mcp-Method", "tools/call"),
            ("mcp-name", "first"),
            ("MCP-NAME", "second"),
            ("x-other", "1"),
            ("mcp-protocol-version", "2026-07-28"),
        ] {
            all.append(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_static(value),
            );
        }
        let found = McpHeaders::read(&all);
        for (name, value) in [
            ("content-type", found.content_type),
            ("accept", found.accept),
            (SESSION_ID, found.session_id),
            (PROTOCOL_VERSION, found.protocol_version),
            (METHOD, found.method),
            (NAME, found.name),
            (LAST_EVENT_ID, found.last_event_id),
        ] {
            assert_eq!(value, all.get(name), "{name}");
        }
        assert_eq!(text(found.name), Some("first"));
        assert_eq!(text(found.session_id), None);
    }

    #[test]
    fn strings_are_read_from_raw_values_with_and_without_escapes() {
        let read = |text: &str| {
            let raw: &RawValue = serde_json::from_str(text).unwrap();
            as_string(raw).map(Cow::into_owned)
        };
        assert_eq!(read(r#""echo""#).as_deref(), Some("echo"));
        assert_eq!(read(r#""""#).as_deref(), Some(""));
        assert_eq!(read(r#""a\"b\\c\u00e9""#).as_deref(), Some("a\"b\\cé"));
        assert_eq!(read("7"), None);
        assert_eq!(read(r#"["echo"]"#), None);
    }
}
