//! What `mcp call`, `mcp tool` and `mcp tools` show of a server's
//! answers, run as real processes against `mcp serve everything`.

mod support;

use mcp_schema::{CallToolResult, LoggingLevel, Tool};
use mcp_server::ToolDef;
use serde_json::{Value, json};
use support::{everything, mcp, serve_tools, stderr, stdout};

/// A tool's error result is printed like any result, and the command
/// fails with exit status 1, as `mcp tool` does.
#[tokio::test]
async fn a_tool_error_result_is_printed_and_fails_the_call() {
    let server = everything();
    let calls: [&[&str]; 2] = [
        &["tools/call", "test_error_handling"],
        &["tools/call", "add", r#"{"a":"x"}"#],
    ];
    for call in calls {
        let mut args = vec!["call", "--server", &server];
        args.extend_from_slice(call);
        let output = mcp(&args).await;
        assert_eq!(
            output.status.code(),
            Some(1),
            "{call:?}: {}",
            stderr(&output)
        );
        let result: Value = serde_json::from_str(&stdout(&output)).expect("the result on stdout");
        assert_eq!(result["isError"], true, "{result}");
        assert!(stderr(&output).contains("isError"), "{}", stderr(&output));
    }
    let output = mcp(&["tool", "--server", &server, "test_error_handling"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));

    let output = mcp(&[
        "call",
        "-s",
        &server,
        "tools/call",
        "echo",
        r#"{"text":"hi"}"#,
    ])
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
}

/// The server's log messages show on stderr as `[level] logger: data`,
/// from `--server-log` up (default info), in either era; the result stays
/// alone on stdout.
#[tokio::test]
async fn server_log_messages_show_on_stderr_by_level() {
    let server = everything();
    for era in ["legacy", "modern"] {
        let output = mcp(&["tool", "-s", &server, "--era", era, "test_logging_tool"]).await;
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(stdout(&output), "Logged\n");
        let said = stderr(&output);
        assert!(
            said.contains("[info] everything: a Info message\n"),
            "{era}: {said}"
        );
        assert!(
            said.contains("[warning] everything: a Warning message\n"),
            "{era}: {said}"
        );
        assert!(
            said.contains("[error] everything: a Error message\n"),
            "{era}: {said}"
        );
        assert!(!said.contains("[debug]"), "{era}: {said}");

        let args = [
            "tool",
            "-s",
            &server,
            "--era",
            era,
            "--server-log",
            "error",
            "test_logging_tool",
        ];
        let said = stderr(&mcp(&args).await);
        assert!(
            said.contains("[error] everything: a Error message"),
            "{era}: {said}"
        );
        assert!(!said.contains("[warning]"), "{era}: {said}");

        let args = [
            "call",
            "-s",
            &server,
            "--era",
            era,
            "--server-log",
            "off",
            "tools/call",
            "test_logging_tool",
        ];
        let output = mcp(&args).await;
        assert!(output.status.success(), "{}", stderr(&output));
        assert!(
            !stderr(&output).contains("everything:"),
            "{}",
            stderr(&output)
        );
    }
    let output = mcp(&["tools", "-s", &server, "--server-log", "loud"]).await;
    assert!(!output.status.success());
}

/// A tool that says whether the server would send a debug message now.
fn debug_probe() -> ToolDef {
    ToolDef::from_parts(
        Tool::new("debug_probe", json!({"type": "object"})),
        |_, ctx| async move {
            let sent = ctx
                .log(LoggingLevel::Debug, Some("probe"), "a debug message")
                .await;
            Ok(CallToolResult::text(format!("debug sent: {sent}")))
        },
    )
}

/// A server that declares logging is asked for the chosen level
/// (`logging/setLevel` in the legacy era): it sends less.
#[tokio::test]
async fn the_server_is_asked_for_the_level() {
    let url = serve_tools(vec![debug_probe()]).await;
    for era in ["legacy", "modern"] {
        let output = mcp(&["tool", "-s", &url, "--era", era, "debug_probe"]).await;
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(stdout(&output), "debug sent: false\n", "{era}");

        let args = [
            "tool",
            "-s",
            &url,
            "--era",
            era,
            "--server-log",
            "debug",
            "debug_probe",
        ];
        let output = mcp(&args).await;
        assert_eq!(stdout(&output), "debug sent: true\n", "{era}");
        assert!(
            stderr(&output).contains("[debug] probe: a debug message"),
            "{}",
            stderr(&output)
        );
    }
}
