//! 2026-07-28 request metadata headers on the client side: `Mcp-Method`,
//! `Mcp-Name` and `Mcp-Param-*`, with the tools' `x-mcp-header`
//! annotations learnt from the `tools/list` results that pass by.

use std::collections::HashMap;
use std::sync::Mutex;

use mcp_schema::header_params::{HeaderParam, encode_header_value, header_params};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::endpoint::names::{METHOD, NAME};

/// The `x-mcp-header` annotations of the tools seen in `tools/list`
/// results, by tool name.
#[derive(Debug, Default)]
pub(crate) struct ToolHeaders {
    tools: Mutex<HashMap<String, Vec<HeaderParam>>>,
}

impl ToolHeaders {
    /// Learns the annotations of the tools in a `tools/list` response and
    /// removes the tools whose annotations are invalid; `None` when the
    /// frame stays as it is.
    pub fn learn(&self, response: &str) -> Option<String> {
        if !response.contains("\"tools\"") {
            return None;
        }
        let mut value: Value = serde_json::from_str(response).ok()?;
        let tools = value.get_mut("result")?.get_mut("tools")?.as_array_mut()?;
        let mut learnt = Vec::with_capacity(tools.len());
        let before = tools.len();
        tools.retain(|tool| {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                return true;
            };
            let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
            match header_params(schema) {
                Ok(params) => {
                    learnt.push((name.to_owned(), params));
                    true
                }
                Err(e) => {
                    tracing::warn!(
                        tool = name,
                        location = %e.location,
                        reason = %e.reason,
                        "tool dropped: invalid x-mcp-header annotation"
                    );
                    false
                }
            }
        });
        let removed = tools.len() != before;
        if let Ok(mut known) = self.tools.lock() {
            for (name, params) in learnt {
                if params.is_empty() {
                    known.remove(&name);
                } else {
                    known.insert(name, params);
                }
            }
        }
        removed.then(|| value.to_string())
    }

    /// The `Mcp-Param-*` headers of a call to `tool` with `arguments`.
    fn param_headers(&self, tool: &str, arguments: Option<&RawValue>, headers: &mut HeaderMap) {
        let Ok(known) = self.tools.lock() else { return };
        let Some(params) = known.get(tool) else {
            return;
        };
        // Only a tool with mirrored arguments has its arguments read.
        let arguments: serde_json::Map<String, Value> = arguments
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_default();
        let arguments = &arguments;
        for param in params {
            let Some(value) = param.header_value(arguments) else {
                continue;
            };
            if let (Ok(name), Ok(value)) = (
                HeaderName::try_from(param.header_name()),
                HeaderValue::try_from(value),
            ) {
                headers.insert(name, value);
            }
        }
    }
}

/// Inserts `value` (encoded when it is not header-safe) under `name`.
fn insert_encoded(headers: &mut HeaderMap, name: HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::try_from(encode_header_value(value).as_ref()) {
        headers.insert(name, v);
    }
}

/// The metadata headers of a 2026-07-28 message with `method` and `params`.
pub(crate) fn request_headers(
    method: &str,
    params: Option<&RawValue>,
    tools: &ToolHeaders,
    headers: &mut HeaderMap,
) {
    /// The members the headers mirror; the arguments stay raw.
    #[derive(Deserialize, Default)]
    struct NameProbe {
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        uri: Option<String>,
        #[serde(rename = "taskId", default)]
        task_id: Option<String>,
        #[serde(default)]
        arguments: Option<Box<RawValue>>,
    }
    insert_encoded(headers, METHOD, method);
    let named = matches!(
        method,
        "tools/call"
            | "prompts/get"
            | "resources/read"
            | "tasks/get"
            | "tasks/update"
            | "tasks/cancel"
    );
    if !named {
        return;
    }
    let probe: NameProbe = params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or_default();
    let name = match method {
        "tools/call" | "prompts/get" => probe.name,
        "resources/read" => probe.uri,
        _ => probe.task_id,
    };
    if let Some(name) = name {
        insert_encoded(headers, NAME, &name);
        if method == "tools/call" {
            tools.param_headers(&name, probe.arguments.as_deref(), headers);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotations_are_learnt_and_bad_tools_dropped() {
        let tools = ToolHeaders::default();
        let list = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "good", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}}}},
            {"name": "bad", "inputSchema": {"type": "object", "properties": {
                "n": {"type": "number", "x-mcp-header": "N"}}}},
        ]}});
        let rewritten = tools.learn(&list.to_string()).expect("rewritten");
        let v: Value = serde_json::from_str(&rewritten).unwrap();
        assert_eq!(v["result"]["tools"].as_array().unwrap().len(), 1);
        assert_eq!(v["result"]["tools"][0]["name"], "good");

        let mut headers = HeaderMap::new();
        let params = json!({"name": "good", "arguments": {"region": "Hello, 世界"}});
        let params = serde_json::value::to_raw_value(&params).unwrap();
        request_headers("tools/call", Some(&params), &tools, &mut headers);
        assert_eq!(headers["mcp-method"], "tools/call");
        assert_eq!(headers["mcp-name"], "good");
        assert_eq!(
            headers["mcp-param-region"],
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
    }

    #[test]
    fn valid_lists_pass_unchanged() {
        let tools = ToolHeaders::default();
        let list = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "plain", "inputSchema": {"type": "object"}}]}});
        assert!(tools.learn(&list.to_string()).is_none());
    }
}
