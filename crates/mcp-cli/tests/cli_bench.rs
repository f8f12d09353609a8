//! `mcp bench` against calls that fail: JSON-RPC errors and tool errors
//! (`isError: true`) are counted apart from the calls that succeed.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_schema::{CallToolResult, ErrorObject, Tool};
use mcp_server::{HandlerError, ToolDef};
use serde_json::{Value, json};
use support::{everything, mcp, serve_tools, stderr, stdout};

/// A tool whose every second call answers with a tool error.
fn flaky() -> ToolDef {
    let calls = Arc::new(AtomicU64::new(0));
    ToolDef::from_parts(
        Tool::new("flaky", json!({"type": "object"})),
        move |_, _| {
            let n = calls.fetch_add(1, Ordering::Relaxed);
            async move {
                Ok(if n % 2 == 1 {
                    CallToolResult::error("flaky failed")
                } else {
                    CallToolResult::text("fine")
                })
            }
        },
    )
}

/// A tool that answers its first two calls, then only JSON-RPC errors.
fn breaking() -> ToolDef {
    let calls = Arc::new(AtomicU64::new(0));
    ToolDef::from_parts(
        Tool::new("breaking", json!({"type": "object"})),
        move |_, _| {
            let n = calls.fetch_add(1, Ordering::Relaxed);
            async move {
                if n < 2 {
                    Ok(CallToolResult::text("fine"))
                } else {
                    Err(HandlerError::Protocol(ErrorObject::internal("broken")))
                }
            }
        },
    )
}

fn report(output: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(output)).expect("a JSON report")
}

/// `mcp bench --json ARGS` against a fresh server of the test tools (each
/// run counts its calls from the first).
async fn bench(args: &[&str]) -> std::process::Output {
    let url = serve_tools(vec![flaky(), breaking()]).await;
    let mut all = vec!["bench", "-s", &url, "--warmup", "0"];
    all.extend_from_slice(args);
    mcp(&all).await
}

#[tokio::test]
async fn tool_errors_and_json_rpc_errors_are_counted_apart() {
    let flaky = ["-d", "0.5", "--json", "--tool", "flaky", "--args", "{}"];
    for extra in [&[][..], &["--via-client"]] {
        let output = bench(&[&flaky[..], extra].concat()).await;
        assert!(output.status.success(), "{extra:?}: {}", stderr(&output));
        let report = report(&output);
        assert!(report["requests"].as_u64().unwrap_or(0) > 0, "{report}");
        assert!(report["tool_errors"].as_u64().unwrap_or(0) > 0, "{report}");
        assert_eq!(report["errors"], 0, "{report}");
        assert!(
            report["first_error"]
                .as_str()
                .is_some_and(|e| e.contains("flaky failed")),
            "{report}"
        );
    }

    // Every measured call fails: the report says so, and the run fails.
    let output = bench(&["-d", "0.5", "--json", "--tool", "breaking", "--args", "{}"]).await;
    assert!(!output.status.success(), "{}", stdout(&output));
    let report = report(&output);
    assert_eq!(report["requests"], 0, "{report}");
    assert!(report["errors"].as_u64().unwrap_or(0) > 0, "{report}");
    assert!(
        stderr(&output).contains("every call failed"),
        "{}",
        stderr(&output)
    );

    // In text too.
    let output = bench(&["-d", "0.3", "--tool", "flaky", "--args", "{}"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("tool errors (isError)"),
        "{}",
        stdout(&output)
    );
}

/// A tool that fails from the first call (a tool error, wrong arguments)
/// fails the run at once, saying why.
#[tokio::test]
async fn a_tool_that_fails_at_once_fails_the_run() {
    let server = everything();
    for (tool, args, why) in [
        (
            "test_error_handling",
            "{}",
            "answered with an error (isError)",
        ),
        ("add", r#"{"a":"x"}"#, "invalid arguments"),
    ] {
        let output = mcp(&[
            "bench", "-s", &server, "-d", "5", "--tool", tool, "--args", args,
        ])
        .await;
        assert!(!output.status.success(), "{tool}: {}", stdout(&output));
        assert!(stderr(&output).contains(why), "{tool}: {}", stderr(&output));
    }
}
