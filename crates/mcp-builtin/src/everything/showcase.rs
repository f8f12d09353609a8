//! The tools that show the framework off: `echo`, a calculator, typed
//! structured output, a slow task with progress and cancellation.

use std::time::Duration;

use mcp_schema::CallToolResult;
use mcp_server::{Context, HandlerError, ToolDef};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::calculator;

use super::support::{format_number, text_result};

#[derive(Deserialize, JsonSchema)]
pub(super) struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct CalculateArgs {
    /// An arithmetic expression such as `2 * (3 + 4) ^ 2` or `sqrt(2) / pi`.
    expression: String,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct AddArgs {
    /// The first addend.
    a: f64,
    /// The second addend.
    b: f64,
}

/// The typed output of `add`.
#[derive(Serialize, JsonSchema)]
pub(super) struct Sum {
    /// a + b.
    sum: f64,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct SlowTaskArgs {
    /// How many steps to take (at most 1000).
    steps: u32,
    /// Milliseconds per step (at most 10000).
    #[serde(default = "default_step_ms")]
    step_ms: u64,
}

pub(super) fn default_step_ms() -> u64 {
    100
}

/// Tools for people and benchmarks.
pub(super) fn showcase_tools() -> Vec<ToolDef> {
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
