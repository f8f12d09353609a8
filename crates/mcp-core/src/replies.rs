//! What the engine answers and checks itself: the revision of a request
//! outside a session, whether the server declared a method's capability,
//! `server/discover`'s result, and the text of a response.

use mcp_schema::jsonrpc::{self, RequestId};
use mcp_schema::text_search::TextSearch;
use mcp_schema::{
    DiscoverResult, ErrorObject, ProtocolVersion, RequestMetaObject, ServerCapabilities, methods,
};
use serde_json::value::RawValue;

use crate::error::unsupported_version;
use crate::identity::ServerIdentity;
use crate::request_meta::META_KEY;
use crate::service::HandlerResult;

/// The revision of a request outside a legacy session, from its `_meta`.
/// In the order the specification checks: the per-request fields must be
/// there (-32602), then the version must be one we serve (-32022).
pub(crate) fn modern_revision(
    method: &str,
    meta: &RequestMetaObject,
) -> Result<ProtocolVersion, ErrorObject> {
    let Some(requested) = meta.protocol_version.as_deref() else {
        return Err(ErrorObject::invalid_params(format!(
            "{method}: _meta[\"{}\"] is required (or start a legacy session with initialize)",
            mcp_schema::META_PROTOCOL_VERSION
        )));
    };
    if meta.client_capabilities.is_none() {
        return Err(ErrorObject::invalid_params(format!(
            "{method}: _meta[\"{}\"] is required",
            mcp_schema::META_CLIENT_CAPABILITIES
        )));
    }
    match requested.parse::<ProtocolVersion>() {
        Ok(v) if !v.is_legacy() => Ok(v),
        Ok(v) => Err(ErrorObject::invalid_request(format!(
            "protocol version {v} starts with initialize; send initialize first"
        ))),
        Err(_) => Err(unsupported_version(requested)),
    }
}

/// Whether the server declared the capability `method` belongs to.
pub(crate) fn server_declares(caps: &ServerCapabilities, method: &str) -> bool {
    match method {
        methods::TOOLS_LIST | methods::TOOLS_CALL => caps.tools.is_some(),
        methods::RESOURCES_LIST | methods::RESOURCES_READ | methods::RESOURCES_TEMPLATES_LIST => {
            caps.resources.is_some()
        }
        methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => caps
            .resources
            .as_ref()
            .is_some_and(|r| r.subscribe == Some(true)),
        methods::PROMPTS_LIST | methods::PROMPTS_GET => caps.prompts.is_some(),
        methods::LOGGING_SET_LEVEL => caps.logging.is_some(),
        methods::COMPLETION_COMPLETE => caps.completions.is_some(),
        methods::TASKS_GET
        | methods::TASKS_RESULT
        | methods::TASKS_LIST
        | methods::TASKS_CANCEL
        | methods::TASKS_UPDATE => {
            caps.tasks.is_some()
                || caps
                    .extensions
                    .as_ref()
                    .is_some_and(|e| e.contains_key(mcp_schema::EXTENSION_TASKS))
        }
        _ => true,
    }
}

pub(crate) fn discover(identity: &ServerIdentity, revision: ProtocolVersion) -> HandlerResult {
    let supported = ProtocolVersion::supported_strings()
        .into_iter()
        .map(String::from)
        .collect();
    let mut result = DiscoverResult::new(
        supported,
        revision.server_capabilities(&identity.capabilities),
    );
    result.instructions = identity.instructions();
    let mut meta = mcp_schema::Meta::new();
    meta.insert(
        mcp_schema::META_SERVER_INFO.into(),
        serde_json::to_value(&identity.info).map_err(ErrorObject::internal)?,
    );
    result.meta = Some(meta);
    jsonrpc::to_raw(&result).map_err(ErrorObject::internal)
}

pub(crate) fn empty_result() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).unwrap_or_else(|_| unreachable!("{{}} is valid JSON"))
}

/// The response text for a handler's outcome. In the modern era a
/// successful result carries `resultType` and, where it has no `_meta` of
/// its own, the server's identity in `_meta` (`server_meta` is that member,
/// ready to insert). A handler that produced another kind of result
/// (`input_required`, `task`) wrote `resultType` first; that one is left
/// alone.
pub(crate) fn response_text(
    id: &RequestId,
    result: HandlerResult,
    revision: Option<ProtocolVersion>,
    server_meta: Option<&str>,
) -> String {
    match result {
        Ok(raw) if revision.is_some_and(ProtocolVersion::has_result_type) => {
            completed_response(id, &raw, server_meta)
                .unwrap_or_else(|| jsonrpc::write_response(id, &raw))
        }
        Ok(raw) => jsonrpc::write_response(id, &raw),
        Err(error) => jsonrpc::write_error(Some(id), &error),
    }
}

/// The response to `id` with `"resultType":"complete"` (and `server_meta`
/// where the result has no `_meta`) at the front of the result object.
/// `None` when the result is not an object or already says its type.
pub(crate) fn completed_response(
    id: &RequestId,
    result: &RawValue,
    server_meta: Option<&str>,
) -> Option<String> {
    static RESULT_TYPE: TextSearch = TextSearch::new("\"resultType\"");
    let text = result.get();
    let first_is_type = text
        .trim_start()
        .strip_prefix('{')
        .is_some_and(|rest| rest.trim_start().starts_with("\"resultType\""));
    if first_is_type
        // Elsewhere in the object? Only a text that mentions the key needs
        // the (slower) look at its top-level members.
        || (RESULT_TYPE.is_in(text) && has_result_type(text))
    {
        return None;
    }
    const COMPLETE: &str = r#""resultType":"complete""#;
    match server_meta.filter(|_| !META_KEY.is_in(text)) {
        Some(meta) => jsonrpc::write_response_prepending(id, &[COMPLETE, meta], result),
        None => jsonrpc::write_response_prepending(id, &[COMPLETE], result),
    }
}

/// Whether a result object has a top-level `resultType` member.
pub(crate) fn has_result_type(text: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "resultType", default)]
        result_type: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Probe>(text).is_ok_and(|p| p.result_type.is_some())
}
