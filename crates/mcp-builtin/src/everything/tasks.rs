//! The task fixtures: `greet`, `slow_compute`, `failing_job`,
//! `protocol_error_job`.

use std::time::Duration;

use mcp_schema::{CallToolResult, ErrorObject};
use mcp_server::{Context, HandlerError, NoArguments, TaskSupport, ToolDef};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::support::{FilenameArgs, accepted, form, format_number, name_form, text_result};

#[derive(Deserialize, JsonSchema)]
pub(super) struct GreetArgs {
    /// Whom to greet.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct SlowComputeArgs {
    /// How long to compute, in seconds (at most 600).
    seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    label: Option<String>,
}

/// The fixtures of the tasks conformance scenarios (2025-11-25 tasks and
/// the 2026-07-28 tasks extension).
pub(super) fn task_tools() -> Vec<ToolDef> {
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
