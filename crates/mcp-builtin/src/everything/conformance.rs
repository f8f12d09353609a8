//! The tools the official conformance suite calls, by their exact names.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_schema::{
    CallToolResult, ContentBlock, CreateMessageRequestParams, ErrorObject, GetPromptResult,
    LoggingLevel, PromptMessage, ResourceContents, SamplingMessage, error_codes,
};
use mcp_server::{Context, HandlerError, NoArguments, PromptDef, ToolDef};
use serde_json::{Value, json};

use super::support::{
    MessageArg, PNG_BASE64, PromptArg, SlowArgs, WAV_BASE64, describe_elicitation, form,
    ordered_form, raw_tool, sampled_text, text_result,
};

/// The tools the conformance suite calls, by their exact names.
pub(super) fn conformance_tools(watched: Arc<AtomicU64>) -> Vec<ToolDef> {
    vec![
        ToolDef::new(
            "test_simple_text",
            "Returns a simple text response",
            |_: NoArguments, _| async {
                text_result("This is a simple text response for testing.")
            },
        ),
        ToolDef::new(
            "test_image_content",
            "Returns an image",
            |_: NoArguments, _| async {
                Ok(CallToolResult::success(vec![ContentBlock::image(
                    PNG_BASE64,
                    "image/png",
                )]))
            },
        ),
        ToolDef::new(
            "test_audio_content",
            "Returns audio",
            |_: NoArguments, _| async {
                Ok(CallToolResult::success(vec![ContentBlock::audio(
                    WAV_BASE64,
                    "audio/wav",
                )]))
            },
        ),
        ToolDef::new(
            "test_embedded_resource",
            "Returns an embedded resource",
            |_: NoArguments, _| async {
                Ok(CallToolResult::success(vec![ContentBlock::embedded(
                    ResourceContents::text(
                        "test://embedded-resource",
                        Some("text/plain".into()),
                        "This is an embedded resource content.",
                    ),
                )]))
            },
        ),
        ToolDef::new(
            "test_multiple_content_types",
            "Returns text, an image and a resource",
            |_: NoArguments, _| async {
                Ok(CallToolResult::success(vec![
                    ContentBlock::text("Multiple content types test:"),
                    ContentBlock::image(PNG_BASE64, "image/png"),
                    ContentBlock::embedded(ResourceContents::text(
                        "test://mixed-content-resource",
                        Some("application/json".into()),
                        r#"{"test":"data","value":123}"#,
                    )),
                ]))
            },
        ),
        ToolDef::new(
            "test_error_handling",
            "Always fails, as a tool error",
            |_: NoArguments, _| async {
                Ok(CallToolResult::error(
                    "This tool intentionally returns an error for testing",
                ))
            },
        ),
        ToolDef::new(
            "test_tool_with_progress",
            "Reports progress 0, 50, 100",
            |_: NoArguments, ctx: Context| async move {
                for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    ctx.progress(
                        step,
                        Some(100.0),
                        Some(&format!("Completed step {step} of 100")),
                    )
                    .await;
                }
                text_result("Progress test completed")
            },
        ),
        ToolDef::new(
            "test_tool_with_logging",
            "Sends three log messages",
            |_: NoArguments, ctx: Context| async move {
                for (i, message) in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ]
                .into_iter()
                .enumerate()
                {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    ctx.log(LoggingLevel::Info, None, message).await;
                }
                text_result("Logging test completed")
            },
        ),
        ToolDef::new(
            "test_logging_tool",
            "Logs at several levels (as the request's log level allows)",
            |_: NoArguments, ctx: Context| async move {
                for level in [
                    LoggingLevel::Debug,
                    LoggingLevel::Info,
                    LoggingLevel::Warning,
                    LoggingLevel::Error,
                ] {
                    ctx.log(level, Some("everything"), format!("a {level:?} message"))
                        .await;
                }
                text_result("Logged")
            },
        ),
        ToolDef::new(
            "test_sampling",
            "Asks the client's LLM",
            |args: PromptArg, ctx: Context| async move {
                let params = CreateMessageRequestParams::new(
                    vec![SamplingMessage::user_text(args.prompt)],
                    100,
                );
                let result = ctx.create_message("sampling", params).await?;
                text_result(format!("LLM response: {}", sampled_text(&result)))
            },
        ),
        ToolDef::new(
            "test_elicitation",
            "Asks the user for a username and email",
            |args: MessageArg, ctx: Context| async move {
                let schema = r#"{
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"}
                    },
                    "required": ["username", "email"]
                }"#;
                let result = ctx
                    .elicit("user_info", ordered_form(&args.message, schema))
                    .await?;
                text_result(format!("User response: {}", describe_elicitation(&result)))
            },
        ),
        ToolDef::new(
            "test_elicitation_sep1034_defaults",
            "Elicits a form whose fields have defaults",
            |_: NoArguments, ctx: Context| async move {
                let schema = r#"{
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "User name", "default": "John Doe"},
                        "age": {"type": "integer", "description": "User age", "default": 30},
                        "score": {"type": "number", "description": "User score", "default": 95.5},
                        "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
                        "verified": {"type": "boolean", "description": "Verification status", "default": true}
                    },
                    "required": []
                }"#;
                let result = ctx
                    .elicit(
                        "defaults",
                        ordered_form(
                            "Please review and update the form fields with defaults",
                            schema,
                        ),
                    )
                    .await?;
                text_result(format!(
                    "Elicitation completed: {}",
                    describe_elicitation(&result)
                ))
            },
        ),
        ToolDef::new(
            "test_elicitation_sep1330_enums",
            "Elicits every kind of enum field",
            |_: NoArguments, ctx: Context| async move {
                let schema = r#"{
                    "type": "object",
                    "properties": {
                        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                        "titledSingle": {"type": "string", "oneOf": [
                            {"const": "value1", "title": "First Option"},
                            {"const": "value2", "title": "Second Option"},
                            {"const": "value3", "title": "Third Option"}]},
                        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                            "enumNames": ["Option One", "Option Two", "Option Three"]},
                        "untitledMulti": {"type": "array", "minItems": 1, "maxItems": 3,
                            "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                        "titledMulti": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"}]}}
                    },
                    "required": []
                }"#;
                let result = ctx
                    .elicit(
                        "enums",
                        ordered_form("Please select options from the enum fields", schema),
                    )
                    .await?;
                text_result(format!(
                    "Elicitation completed: {}",
                    describe_elicitation(&result)
                ))
            },
        ),
        raw_tool(
            "json_schema_2020_12_tool",
            "Takes arguments described with JSON Schema 2020-12 keywords",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }),
            |args, _| async move { text_result(format!("Received: {}", Value::Object(args))) },
        ),
        ToolDef::new(
            "test_missing_capability",
            "Needs the client's sampling capability",
            |_: NoArguments, ctx: Context| async move {
                if ctx.client_capabilities().sampling.is_none() {
                    return Err(HandlerError::Protocol(
                        ErrorObject::new(
                            error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                            "This tool requires the sampling capability",
                        )
                        .with_data(json!({"requiredCapabilities": {"sampling": {}}})),
                    ));
                }
                text_result("Success")
            },
        ),
        ToolDef::new(
            "test_streaming_elicitation",
            "Asks for confirmation",
            |_: NoArguments, ctx: Context| async move {
                let result = ctx
                    .elicit(
                        "confirm",
                        form(
                            "Continue?",
                            json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
                        ),
                    )
                    .await?;
                text_result(format!(
                    "Streaming complete: {}",
                    describe_elicitation(&result)
                ))
            },
        ),
        ToolDef::new(
            "test_trigger_tool_change",
            "Adds or removes a tool, so the tool list changes",
            |_: NoArguments, ctx: Context| async move {
                let server = ctx.server();
                if !server.remove_tool("test_dynamic_tool") {
                    server.add_tool(ToolDef::new(
                        "test_dynamic_tool",
                        "Added at run time",
                        |_: NoArguments, _| async { text_result("dynamic") },
                    ));
                }
                text_result("Tool list changed")
            },
        ),
        ToolDef::new(
            "test_trigger_prompt_change",
            "Adds or removes a prompt, so the prompt list changes",
            |_: NoArguments, ctx: Context| async move {
                let server = ctx.server();
                if !server.remove_prompt("test_dynamic_prompt") {
                    server.add_prompt(PromptDef::new(
                        "test_dynamic_prompt",
                        "Added at run time",
                        |_, _| async {
                            Ok(GetPromptResult::new(vec![PromptMessage::user_text(
                                "dynamic",
                            )]))
                        },
                    ));
                }
                text_result("Prompt list changed")
            },
        ),
        ToolDef::new(
            "test_tool_fast",
            "Answers at once",
            |_: NoArguments, _| async { text_result("fast") },
        ),
        ToolDef::new(
            "test_tool_slow",
            "Works for durationMs milliseconds (default 5000), honouring cancellation; \
             reports progress 0 at the start when asked (a progress token)",
            |args: SlowArgs, ctx: Context| async move {
                let duration = Duration::from_millis(args.duration_ms.unwrap_or(5000).min(600_000));
                ctx.log(LoggingLevel::Info, None, "slow tool started").await;
                ctx.progress(0.0, None, Some("started")).await;
                tokio::select! {
                    _ = tokio::time::sleep(duration) => text_result("slow done"),
                    _ = ctx.cancelled() => Err(HandlerError::failed("cancelled")),
                }
            },
        ),
        ToolDef::new(
            "update_watched_resource",
            "Changes test://watched-resource and notifies subscribers",
            move |_: NoArguments, ctx: Context| {
                let watched = Arc::clone(&watched);
                async move {
                    let version = watched.fetch_add(1, Ordering::Relaxed) + 1;
                    ctx.server()
                        .notify_resource_updated("test://watched-resource");
                    text_result(format!("watched resource is now at version {version}"))
                }
            },
        ),
    ]
}
