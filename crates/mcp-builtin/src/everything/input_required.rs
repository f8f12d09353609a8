//! The tools that ask the client for input inside their result
//! (2026-07-28 `input_required` rounds, and their legacy equivalents).

use mcp_schema::{CallToolResult, CreateMessageRequestParams, SamplingMessage};
use mcp_server::{Context, HandlerError, NoArguments, ToolDef};
use serde_json::json;

use super::support::{accepted, describe_elicitation, form, name_form, sampled_text, text_result};

/// Tools that need the client's input: in the modern era they answer
/// `input_required` and finish on the client's retry.
pub(super) fn input_required_tools() -> Vec<ToolDef> {
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

pub(super) async fn confirm_with_state(
    _: NoArguments,
    ctx: Context,
) -> Result<CallToolResult, HandlerError> {
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
