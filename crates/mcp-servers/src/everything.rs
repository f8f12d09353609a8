//! The `everything` server: one server exposing every feature of the
//! protocol, including the fixtures the official conformance suite calls,
//! an `echo` tool for benchmarks and interop, a few tools that show the
//! framework off (a calculator, a slow task with progress and cancellation,
//! typed structured output), and the task fixtures (`greet`,
//! `slow_compute`, `failing_job`, `protocol_error_job`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_schema::{
    CallToolResult, ContentBlock, CreateMessageRequestParams, ElicitAction,
    ElicitRequestFormParams, ElicitRequestParams, ElicitResult, ErrorObject, GetPromptResult,
    LoggingLevel, PromptMessage, Resource, ResourceContents, SamplingMessage, Tool, error_codes,
};
use mcp_server::{
    Context, HandlerError, NoArguments, PromptDef, ResourceDef, Server, TaskSupport, TemplateDef,
    ToolDef, completion,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::calculator;

/// A 1x1 PNG image, base64.
pub const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A tiny WAV file, base64.
pub const WAV_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// Builds the `everything` server.
pub fn server() -> Server {
    let watched = Arc::new(AtomicU64::new(0));
    let mut builder = Server::builder("mcp-everything", env!("CARGO_PKG_VERSION")).instructions(
        "Exercises every MCP feature. `echo` returns its text; `calculate` evaluates arithmetic.",
    );
    for tool in conformance_tools(Arc::clone(&watched))
        .into_iter()
        .chain(input_required_tools())
        .chain(showcase_tools())
        .chain(task_tools())
        .chain([region_query()])
    {
        builder = builder.tool(tool);
    }
    for prompt in prompts() {
        builder = builder.prompt(prompt);
    }
    builder
        .resource(
            ResourceDef::text(
                "test://static-text",
                "Static Text Resource",
                "text/plain",
                "This is the content of the static text resource.",
            )
            .description("A static text resource for testing"),
        )
        .resource(
            ResourceDef::blob(
                "test://static-binary",
                "Static Binary Resource",
                "image/png",
                PNG_BASE64,
            )
            .description("A static binary resource (image) for testing"),
        )
        .resource(watched_resource(watched))
        .template(data_template())
        .build()
}

fn text_result(text: impl Into<String>) -> Result<CallToolResult, HandlerError> {
    Ok(CallToolResult::text(text))
}

/// A form asking `message`, its fields as `schema` (JSON text, so that
/// they go out in the order written here).
fn ordered_form(message: &str, schema: &str) -> ElicitRequestParams {
    let schema = serde_json::from_str(schema)
        .unwrap_or_else(|e| panic!("fixture elicitation form is valid: {e}"));
    ElicitRequestFormParams::new(message, schema).into()
}

fn form(message: &str, schema: Value) -> ElicitRequestParams {
    serde_json::from_value(json!({ "message": message, "requestedSchema": schema }))
        .unwrap_or_else(|e| panic!("fixture elicitation form is valid: {e}"))
}

/// A tool whose input schema is given verbatim.
fn raw_tool<F, Fut>(name: &str, description: &str, schema: Value, handler: F) -> ToolDef
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
struct PromptArg {
    /// The prompt to send to the client's model.
    prompt: String,
}

#[derive(Deserialize, JsonSchema)]
struct MessageArg {
    /// The message shown to the user.
    message: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct SlowArgs {
    /// How long to work, in milliseconds.
    duration_ms: Option<u64>,
}

fn sampled_text(result: &mcp_schema::CreateMessageResult) -> String {
    result
        .content
        .blocks()
        .iter()
        .filter_map(|b| b.as_text())
        .collect::<Vec<_>>()
        .join("")
}

fn describe_elicitation(result: &ElicitResult) -> String {
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

/// The tools the conformance suite calls, by their exact names.
fn conformance_tools(watched: Arc<AtomicU64>) -> Vec<ToolDef> {
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

fn name_form(message: &str, field: &str) -> ElicitRequestParams {
    form(
        message,
        json!({"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}),
    )
}

fn accepted(result: &ElicitResult, field: &str) -> Option<String> {
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

/// Tools that need the client's input: in the modern era they answer
/// `input_required` and finish on the client's retry.
fn input_required_tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new(
            "test_input_required_result_elicitation",
            "Asks the user's name",
            |_: NoArguments, ctx: Context| async move {
                let answer = ctx
                    .elicit("user_name", name_form("What is your name?", "name"))
                    .await?;
                let name = accepted(&answer, "name").unwrap_or_else(|| "stranger".into());
                text_result(format!("Hello, {name}!"))
            },
        ),
        ToolDef::new(
            "test_input_required_result_sampling",
            "Asks the client's model a question",
            |_: NoArguments, ctx: Context| async move {
                let params = CreateMessageRequestParams::new(
                    vec![SamplingMessage::user_text("What is the capital of France?")],
                    100,
                );
                let answer = ctx.create_message("capital_question", params).await?;
                text_result(format!("The model said: {}", sampled_text(&answer)))
            },
        ),
        ToolDef::new(
            "test_input_required_result_list_roots",
            "Asks for the client's roots",
            |_: NoArguments, ctx: Context| async move {
                let roots = ctx.list_roots("client_roots").await?;
                let uris: Vec<_> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
                text_result(format!("Roots: {}", uris.join(", ")))
            },
        ),
        ToolDef::new(
            "test_input_required_result_request_state",
            "Asks for confirmation, keeping state between rounds",
            confirm_with_state,
        ),
        ToolDef::new(
            "test_input_required_result_tampered_state",
            "Like the request-state tool; a tampered state is refused",
            confirm_with_state,
        ),
        ToolDef::new(
            "test_input_required_result_multiple_inputs",
            "Asks three questions in one round",
            |_: NoArguments, ctx: Context| async move {
                let greeting = CreateMessageRequestParams::new(
                    vec![SamplingMessage::user_text("Generate a greeting")],
                    50,
                );
                let (name, greeting, roots) = tokio::join!(
                    ctx.elicit("user_name", name_form("What is your name?", "name")),
                    ctx.create_message("greeting", greeting),
                    ctx.list_roots("client_roots"),
                );
                let (name, greeting, roots) = (name?, greeting?, roots?);
                text_result(format!(
                    "{} {} ({} roots)",
                    sampled_text(&greeting),
                    accepted(&name, "name").unwrap_or_default(),
                    roots.roots.len()
                ))
            },
        ),
        ToolDef::new(
            "test_input_required_result_multi_round",
            "Asks two questions, one round each",
            |_: NoArguments, ctx: Context| async move {
                let name = ctx
                    .elicit("step1", name_form("Step 1: What is your name?", "name"))
                    .await?;
                let color = ctx
                    .elicit(
                        "step2",
                        name_form("Step 2: What is your favorite color?", "color"),
                    )
                    .await?;
                text_result(format!(
                    "{} likes {}",
                    accepted(&name, "name").unwrap_or_default(),
                    accepted(&color, "color").unwrap_or_default()
                ))
            },
        ),
        ToolDef::new(
            "test_input_required_result_capabilities",
            "Asks only what the client can answer",
            |_: NoArguments, ctx: Context| async move {
                let caps = ctx.client_capabilities().clone();
                if caps.elicitation.is_some() {
                    let answer = ctx
                        .elicit("user_name", name_form("What is your name?", "name"))
                        .await?;
                    text_result(format!("Elicited: {}", describe_elicitation(&answer)))
                } else if caps.sampling.is_some() {
                    let params = CreateMessageRequestParams::new(
                        vec![SamplingMessage::user_text("Say hi")],
                        20,
                    );
                    let answer = ctx.create_message("say_hi", params).await?;
                    text_result(format!("Sampled: {}", sampled_text(&answer)))
                } else {
                    let roots = ctx.list_roots("client_roots").await?;
                    text_result(format!("{} roots", roots.roots.len()))
                }
            },
        ),
    ]
}

async fn confirm_with_state(_: NoArguments, ctx: Context) -> Result<CallToolResult, HandlerError> {
    let had_state = ctx.state().is_some();
    if !had_state {
        ctx.set_state(json!({"asked": "confirm"}));
    }
    let schema =
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
    let answer = ctx
        .elicit("confirm", form("Please confirm", schema))
        .await?;
    let confirmed = accepted(&answer, "ok").is_some_and(|v| v == "true");
    let state = if had_state {
        "state-ok"
    } else {
        "state-missing"
    };
    text_result(format!("{state}: confirmed={confirmed}"))
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct CalculateArgs {
    /// An arithmetic expression such as `2 * (3 + 4) ^ 2` or `sqrt(2) / pi`.
    expression: String,
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: f64,
    /// The second addend.
    b: f64,
}

/// The typed output of `add`.
#[derive(Serialize, JsonSchema)]
struct Sum {
    /// a + b.
    sum: f64,
}

#[derive(Deserialize, JsonSchema)]
struct SlowTaskArgs {
    /// How many steps to take (at most 1000).
    steps: u32,
    /// Milliseconds per step (at most 10000).
    #[serde(default = "default_step_ms")]
    step_ms: u64,
}

fn default_step_ms() -> u64 {
    100
}

/// Tools for people and benchmarks.
fn showcase_tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new(
            "echo",
            "Returns the text it is given",
            |args: EchoArgs, _| async move { Ok::<_, HandlerError>(args.text) },
        ),
        ToolDef::new(
            "calculate",
            "Evaluates an arithmetic expression",
            |args: CalculateArgs, _| async move {
                match calculator::evaluate(&args.expression) {
                    Ok(value) => text_result(format_number(value)),
                    Err(e) => Ok(CallToolResult::error(format!(
                        "cannot evaluate {:?}: {e}",
                        args.expression
                    ))),
                }
            },
        ),
        ToolDef::structured(
            "add",
            "Adds two numbers, with typed structured output",
            |args: AddArgs, _| async move {
                Ok(Sum {
                    sum: args.a + args.b,
                })
            },
        ),
        ToolDef::new(
            "slow_task",
            "Works step by step, reporting progress; stops when cancelled",
            |args: SlowTaskArgs, ctx: Context| async move {
                let steps = args.steps.min(1000);
                let step = Duration::from_millis(args.step_ms.min(10_000));
                for done in 1..=steps {
                    tokio::select! {
                        _ = tokio::time::sleep(step) => {}
                        _ = ctx.cancelled() => return Err(HandlerError::failed(format!("cancelled after {} of {steps} steps", done - 1))),
                    }
                    ctx.progress(
                        f64::from(done),
                        Some(f64::from(steps)),
                        Some(&format!("step {done} of {steps}")),
                    )
                    .await;
                }
                text_result(format!("finished {steps} steps"))
            },
        ),
    ]
}

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Whom to greet.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct SlowComputeArgs {
    /// How long to compute, in seconds (at most 600).
    seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    label: Option<String>,
}

/// The fixtures of the tasks conformance scenarios (2025-11-25 tasks and
/// the 2026-07-28 tasks extension).
fn task_tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new(
            "greet",
            "Greets someone (never runs as a task)",
            |args: GreetArgs, _| async move { Ok::<_, HandlerError>(format!("Hello, {}!", args.name)) },
        ),
        ToolDef::new(
            "slow_compute",
            "Computes for a while (may run as a task); stops when cancelled",
            |args: SlowComputeArgs, ctx: Context| async move {
                let seconds = if args.seconds.is_finite() {
                    args.seconds.clamp(0.0, 600.0)
                } else {
                    0.0
                };
                let label = args.label.unwrap_or_else(|| "computation".to_owned());
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs_f64(seconds)) => {}
                    _ = ctx.cancelled() => {
                        return Err(HandlerError::failed(format!("{label}: cancelled")));
                    }
                }
                text_result(format!("{label}: computed in {} s", format_number(seconds)))
            },
        )
        .task_support(TaskSupport::Optional),
        ToolDef::new(
            "failing_job",
            "A job that fails with a tool error (isError: true); runs only as a task",
            |_: NoArguments, _| async move {
                Ok::<_, HandlerError>(CallToolResult::error("The job failed: nothing to process"))
            },
        )
        .task_support(TaskSupport::Required),
        ToolDef::new(
            "protocol_error_job",
            "A job that fails with a JSON-RPC error (may run as a task)",
            |_: NoArguments, _| async move {
                Err::<CallToolResult, _>(HandlerError::Protocol(ErrorObject::internal(
                    "the job hit a protocol error",
                )))
            },
        )
        .task_support(TaskSupport::Optional),
        ToolDef::new(
            "confirm_delete",
            "Asks the user to confirm deleting a file (may run as a task that waits for input)",
            |args: FilenameArgs, ctx: Context| async move {
                let schema = json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]});
                let answer = ctx.elicit("confirm", form(&format!("Delete {}?", args.filename), schema)).await?;
                let confirmed = accepted(&answer, "confirm").is_some_and(|v| v == "true");
                text_result(if confirmed {
                    format!("Deleted {}", args.filename)
                } else {
                    format!("Kept {}", args.filename)
                })
            },
        )
        .task_support(TaskSupport::Optional),
        ToolDef::new(
            "multi_input",
            "Asks two questions at once (may run as a task that waits for input)",
            |_: NoArguments, ctx: Context| async move {
                let (first, second) = tokio::join!(
                    ctx.elicit("first", name_form("First value?", "value")),
                    ctx.elicit("second", name_form("Second value?", "value")),
                );
                let (first, second) = (first?, second?);
                text_result(format!(
                    "{} and {}",
                    accepted(&first, "value").unwrap_or_default(),
                    accepted(&second, "value").unwrap_or_default()
                ))
            },
        )
        .task_support(TaskSupport::Optional),
        ToolDef::new(
            "test_tool_with_task",
            "Asks for your name, then continues as a task that greets you (2026-07-28: the question comes first, synchronously)",
            |_: NoArguments, ctx: Context| async move {
                let answer = ctx.elicit("user_name", name_form("What is your name?", "name")).await?;
                ctx.continue_as_task()?;
                let name = accepted(&answer, "name").unwrap_or_else(|| "stranger".to_owned());
                text_result(format!("Hello, {name}!"))
            },
        )
        .task_support(TaskSupport::Required)
        .deferred_task(),
    ]
}

#[derive(Deserialize, JsonSchema)]
struct RegionArgs {
    /// Where the query runs; mirrored into the `Mcp-Param-Region` header.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
    /// Which shard; mirrored into the `Mcp-Param-Shard` header.
    #[serde(default)]
    #[schemars(extend("x-mcp-header" = "Shard"))]
    shard: Option<i64>,
    /// The query.
    #[serde(default)]
    query: Option<String>,
}

/// A tool with header-mirrored arguments (2026-07-28 `x-mcp-header`).
fn region_query() -> ToolDef {
    ToolDef::new(
        "region_query",
        "Runs a query in a region (region and shard travel in Mcp-Param-* headers over HTTP)",
        |args: RegionArgs, _| async move {
            let shard = args
                .shard
                .map(|s| format!(", shard {s}"))
                .unwrap_or_default();
            let query = args.query.unwrap_or_default();
            text_result(format!("region {}{shard}: {query}", args.region))
        },
    )
}

#[derive(Deserialize, JsonSchema)]
struct FilenameArgs {
    /// The file to delete.
    filename: String,
}

fn format_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

fn prompts() -> Vec<PromptDef> {
    vec![
        PromptDef::new(
            "test_simple_prompt",
            "A prompt without arguments",
            |_, _| async {
                Ok(GetPromptResult::new(vec![PromptMessage::user_text(
                    "This is a simple prompt for testing.",
                )]))
            },
        ),
        PromptDef::new(
            "test_prompt_with_arguments",
            "A prompt with two arguments",
            |args, _| async move {
                let arg = |k: &str| args.get(k).cloned().unwrap_or_default();
                Ok(GetPromptResult::new(vec![PromptMessage::user_text(
                    format!(
                        "Prompt with arguments: arg1='{}', arg2='{}'",
                        arg("arg1"),
                        arg("arg2")
                    ),
                )]))
            },
        )
        .argument("arg1", "First test argument", true)
        .argument("arg2", "Second test argument", true)
        .complete(
            "arg1",
            completion::from_values(["test", "testing", "tested", "value1"]),
        )
        .complete("arg2", completion::from_values(["test", "value2"])),
        PromptDef::new(
            "test_prompt_with_embedded_resource",
            "A prompt embedding a resource",
            |args, _| async move {
                let uri = args.get("resourceUri").cloned().unwrap_or_default();
                let resource = ResourceContents::text(
                    uri,
                    Some("text/plain".into()),
                    "Embedded resource content for testing.",
                );
                Ok(GetPromptResult::new(vec![
                    PromptMessage::new(mcp_schema::Role::User, ContentBlock::embedded(resource)),
                    PromptMessage::user_text("Please process the embedded resource above."),
                ]))
            },
        )
        .argument("resourceUri", "URI of the resource to embed", true),
        PromptDef::new(
            "test_prompt_with_image",
            "A prompt with an image",
            |_, _| async {
                Ok(GetPromptResult::new(vec![
                    PromptMessage::new(
                        mcp_schema::Role::User,
                        ContentBlock::image(PNG_BASE64, "image/png"),
                    ),
                    PromptMessage::user_text("Please analyze the image above."),
                ]))
            },
        ),
        PromptDef::new(
            "test_input_required_result_prompt",
            "A prompt that first asks for context",
            |_, ctx: Context| async move {
                let schema = json!({"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]});
                let answer = ctx
                    .elicit(
                        "user_context",
                        form("What context should the prompt use?", schema),
                    )
                    .await?;
                let context = accepted(&answer, "context").unwrap_or_default();
                Ok(GetPromptResult::new(vec![PromptMessage::user_text(
                    format!("Use this context: {context}"),
                )]))
            },
        ),
    ]
}

fn watched_resource(version: Arc<AtomicU64>) -> ResourceDef {
    let mut resource = Resource::new("test://watched-resource", "Watched Resource");
    resource.mime_type = Some("text/plain".into());
    resource.description =
        Some("Changes when update_watched_resource is called; subscribe to hear of it".into());
    ResourceDef::dynamic(resource, move |_| {
        let version = version.load(Ordering::Relaxed);
        async move {
            let text = if version == 0 {
                "Watched resource content".to_owned()
            } else {
                format!("Watched resource content, version {version}")
            };
            Ok(vec![ResourceContents::text(
                "test://watched-resource",
                Some("text/plain".into()),
                text,
            )])
        }
    })
}

fn data_template() -> TemplateDef {
    TemplateDef::new(
        "test://template/{id}/data",
        "Resource Template",
        |uri, vars: BTreeMap<String, String>, _| async move {
            let id = vars.get("id").cloned().unwrap_or_default();
            let body =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Ok(vec![ResourceContents::text(
                uri,
                Some("application/json".into()),
                body.to_string(),
            )])
        },
    )
    .unwrap_or_else(|e| panic!("fixture template is valid: {e}"))
    .description("A resource template with parameter substitution")
    .mime_type("application/json")
    .complete("id", completion::from_values(["1", "2", "3", "123"]))
}

#[cfg(test)]
mod tests {
    //! The task fixtures as the tasks conformance scenario drives them
    //! (2026-07-28, tasks extension declared on every request).

    use std::sync::Arc;

    use mcp_core::{FrameKind, InboundFrame, OutboundFrame, Transport};
    use serde_json::{Value, json};

    struct Client {
        outbound: tokio::sync::mpsc::Sender<OutboundFrame>,
        inbound: mcp_core::Inbound,
        next_id: i64,
    }

    impl Client {
        fn start() -> (Client, mcp_core::RunningSession) {
            let server = super::server();
            let (server_side, client_side) = Transport::pair();
            let session = mcp_core::serve(
                server_side,
                Arc::new(server.clone()),
                server.session_config(),
            );
            let client = Client {
                outbound: client_side.outbound,
                inbound: client_side.inbound,
                next_id: 1,
            };
            (client, session)
        }

        /// A modern request declaring the tasks extension; its response.
        async fn request(&mut self, method: &str, mut params: Value) -> Value {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities":
                    {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}
            });
            let id = self.next_id;
            self.next_id += 1;
            let text = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            let frame = OutboundFrame {
                text: text.to_string(),
                related: None,
                kind: FrameKind::Request,
            };
            self.outbound.send(frame).await.unwrap();
            loop {
                let next =
                    tokio::time::timeout(std::time::Duration::from_secs(5), self.inbound.recv());
                let Ok(Some(InboundFrame::Text(text))) = next.await else {
                    panic!("no response to {method}");
                };
                let message: Value = serde_json::from_str(&text).unwrap();
                if message["id"] == json!(id) {
                    return message;
                }
            }
        }

        async fn call(&mut self, tool: &str, arguments: Value) -> Value {
            let response = self
                .request("tools/call", json!({"name": tool, "arguments": arguments}))
                .await;
            response["result"].clone()
        }

        async fn poll(&mut self, id: &Value, status: &str) -> Value {
            for _ in 0..500 {
                let task = self.request("tasks/get", json!({"taskId": id})).await;
                if task["result"]["status"] == status {
                    return task["result"].clone();
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            panic!("task {id} never reached {status}");
        }
    }

    #[tokio::test]
    async fn task_fixtures() {
        let (mut client, _session) = Client::start();
        let tools = client.request("tools/list", json!({})).await;
        let names: Vec<&str> = tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names[0], "test_simple_text");
        assert_eq!(
            names[names.len() - 8..],
            [
                "greet",
                "slow_compute",
                "failing_job",
                "protocol_error_job",
                "confirm_delete",
                "multi_input",
                "test_tool_with_task",
                "region_query"
            ]
        );

        let greet = client.call("greet", json!({"name": "Ada"})).await;
        assert_eq!(greet["resultType"], "complete");
        assert_eq!(greet["content"][0]["text"], "Hello, Ada!");

        let quick = client
            .call("slow_compute", json!({"seconds": 0.01, "label": "sum"}))
            .await;
        assert_eq!(quick["resultType"], "task", "{quick}");
        let done = client.poll(&quick["taskId"], "completed").await;
        assert!(
            done["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("sum")
        );

        let long = client
            .call("slow_compute", json!({"seconds": 60, "label": "long"}))
            .await;
        let ack = client
            .request("tasks/cancel", json!({"taskId": long["taskId"]}))
            .await;
        assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
        assert_eq!(
            ack["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-everything",
            "{ack}"
        );
        client.poll(&long["taskId"], "cancelled").await;

        let failing = client.call("failing_job", json!({})).await;
        let done = client.poll(&failing["taskId"], "completed").await;
        assert_eq!(done["result"]["isError"], true);

        let broken = client.call("protocol_error_job", json!({})).await;
        let failed = client.poll(&broken["taskId"], "failed").await;
        assert!(failed["error"]["code"].is_i64() && failed.get("result").is_none());
    }

    /// A deferred task: the question is asked synchronously, the task only
    /// starts once it is answered, and its result uses the answer.
    #[tokio::test]
    async fn input_before_task() {
        let (mut client, _session) = Client::start();
        let asked = client.call("test_tool_with_task", json!({})).await;
        assert_eq!(asked["resultType"], "input_required", "{asked}");
        assert!(asked.get("taskId").is_none(), "{asked}");
        assert_eq!(
            asked["inputRequests"]["user_name"]["method"], "elicitation/create",
            "{asked}"
        );
        let answer = json!({"action": "accept", "content": {"name": "Alice"}});
        let params = json!({
            "name": "test_tool_with_task",
            "arguments": {},
            "inputResponses": {"user_name": answer},
            "requestState": asked["requestState"],
        });
        let created = client.request("tools/call", params.clone()).await["result"].clone();
        assert_eq!(created["resultType"], "task", "{created}");
        assert!(created.get("requestState").is_none(), "{created}");
        assert!(created.get("inputRequests").is_none(), "{created}");
        let done = client.poll(&created["taskId"], "completed").await;
        assert_eq!(
            done["result"]["content"][0]["text"], "Hello, Alice!",
            "{done}"
        );

        // A tampered state is refused before any task exists.
        let mut forged = params;
        forged["requestState"] = json!("forged");
        let refused = client.request("tools/call", forged).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
    }
}
