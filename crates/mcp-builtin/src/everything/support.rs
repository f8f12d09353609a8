//! What the `everything` server's tools share: results, forms, and a tool
//! whose schema is written out.

use mcp_schema::{
    CallToolResult, ElicitAction, ElicitRequestFormParams, ElicitRequestParams, ElicitResult, Tool,
};
use mcp_server::{Context, HandlerError, ToolDef};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// A 1x1 PNG image, base64.
pub const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A tiny WAV file, base64.
pub const WAV_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

pub(super) fn text_result(text: impl Into<String>) -> Result<CallToolResult, HandlerError> {
    Ok(CallToolResult::text(text))
}

/// A form asking `message`, its fields as `schema` (JSON text, so that
/// they go out in the order written here).
pub(super) fn ordered_form(message: &str, schema: &str) -> ElicitRequestParams {
    let schema = serde_json::from_str(schema)
        .unwrap_or_else(|e| panic!("fixture elicitation form is valid: {e}"));
    ElicitRequestFormParams::new(message, schema).into()
}

pub(super) fn form(message: &str, schema: Value) -> ElicitRequestParams {
    serde_json::from_value(json!({ "message": message, "requestedSchema": schema }))
        .unwrap_or_else(|e| panic!("fixture elicitation form is valid: {e}"))
}

/// A tool whose input schema is given verbatim.
pub(super) fn raw_tool<F, Fut>(name: &str, description: &str, schema: Value, handler: F) -> ToolDef
where
    F: Fn(mcp_schema::JsonObject, Context) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<CallToolResult, HandlerError>> + Send + 'static,
{
    ToolDef::from_parts(
        Tool::new(name, schema).with_description(description),
        handler,
    )
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct PromptArg {
    /// The prompt to send to the client's model.
    pub(super) prompt: String,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct MessageArg {
    /// The message shown to the user.
    pub(super) message: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct SlowArgs {
    /// How long to work, in milliseconds.
    pub(super) duration_ms: Option<u64>,
}

pub(super) fn sampled_text(result: &mcp_schema::CreateMessageResult) -> String {
    result
        .content
        .blocks()
        .iter()
        .filter_map(|b| b.as_text())
        .collect::<Vec<_>>()
        .join("")
}

pub(super) fn describe_elicitation(result: &ElicitResult) -> String {
    let action = match result.action {
        ElicitAction::Accept => "accept",
        ElicitAction::Decline => "decline",
        ElicitAction::Cancel => "cancel",
    };
    let content = result
        .content
        .as_ref()
        .map(|c| serde_json::to_string(c).unwrap_or_default());
    format!(
        "action={action}, content={}",
        content.unwrap_or_else(|| "none".into())
    )
}

pub(super) fn name_form(message: &str, field: &str) -> ElicitRequestParams {
    form(
        message,
        json!({"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}),
    )
}

pub(super) fn accepted(result: &ElicitResult, field: &str) -> Option<String> {
    if result.action != ElicitAction::Accept {
        return None;
    }
    let value = result.content.as_ref()?.get(field)?;
    Some(
        serde_json::to_value(value)
            .ok()?
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| serde_json::to_string(value).unwrap_or_default()),
    )
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct FilenameArgs {
    /// The file to delete.
    pub(super) filename: String,
}

pub(super) fn format_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}
