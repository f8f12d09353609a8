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

/// What a terminal shows of `output`: lines after carriage returns,
/// erased lines and cursor moves up (the sequences a progress bar uses;
/// other escape sequences change nothing on screen).
fn screen(output: &str) -> Vec<String> {
    let mut lines: Vec<Vec<char>> = vec![Vec::new()];
    let (mut row, mut col) = (0, 0);
    let mut chars = output.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => col = 0,
            '\n' => {
                row += 1;
                if row == lines.len() {
                    lines.push(Vec::new());
                }
            }
            '\u{1b}' if chars.peek() == Some(&'[') => {
                chars.next();
                let mut arguments = String::new();
                let mut command = ' ';
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        command = c;
                        break;
                    }
                    arguments.push(c);
                }
                let n: usize = arguments.parse().unwrap_or(1);
                match (command, arguments.as_str()) {
                    ('K', "2") => lines[row].clear(),
                    ('K', "" | "0") => lines[row].truncate(col),
                    ('A', _) => row = row.saturating_sub(n),
                    _ => {}
                }
            }
            c => {
                let line = &mut lines[row];
                while line.len() < col {
                    line.push(' ');
                }
                if col < line.len() {
                    line[col] = c;
                } else {
                    line.push(c);
                }
                col += 1;
            }
        }
    }
    lines
        .into_iter()
        .map(|l| l.into_iter().collect::<String>().trim_end().to_owned())
        .collect()
}

/// On a terminal the progress bar is drawn while the tool works, then
/// cleared: the result stands alone on its line.
#[cfg(target_os = "linux")]
#[test]
fn the_progress_bar_is_cleared_before_the_result() {
    let terminal = support::pty::Terminal::run(&[
        "tool",
        "-s",
        &everything(),
        "slow_task",
        "steps=5",
        "step_ms=150",
    ]);
    let (status, seen) = terminal.finish();
    assert!(status.success(), "{seen:?}");
    assert!(seen.contains("step "), "a bar was drawn: {seen:?}");
    let shown = screen(&seen);
    assert!(
        shown.iter().any(|l| l == "finished 5 steps"),
        "{shown:#?}\n{seen:?}"
    );
    assert!(
        !shown.iter().any(|l| l.contains("step 5 of 5")),
        "{shown:#?}"
    );
}

/// Off a terminal no bar is drawn: stderr has no control characters,
/// stdout only the result.
#[tokio::test]
async fn without_a_terminal_progress_leaves_no_trace() {
    let output = mcp(&[
        "tool",
        "-s",
        &everything(),
        "slow_task",
        "steps=5",
        "step_ms=20",
    ])
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "finished 5 steps\n");
    let said = stderr(&output);
    assert!(!said.contains(['\r', '\u{1b}']), "{said:?}");
}

/// Off a terminal the table of tools keeps each description's first line
/// whole, in columns that line up.
#[tokio::test]
async fn the_tool_table_keeps_descriptions_whole_off_a_terminal() {
    let output = mcp(&["tools", "-s", &everything()]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let table = stdout(&output);
    assert!(!table.contains('…'), "{table}");
    let confirm = table
        .lines()
        .find(|l| l.starts_with("confirm_delete "))
        .expect("confirm_delete is listed");
    assert!(
        confirm.ends_with("(may run as a task that waits for input)"),
        "{confirm}"
    );
    let header = table.lines().next().expect("a header");
    let column = header.find("DESCRIPTION").expect("a description column");
    assert!(
        confirm[column..].starts_with("Asks the user"),
        "{header}\n{confirm}"
    );
}

/// A tool that answers with its arguments, as JSON.
fn echo_arguments() -> ToolDef {
    let schema = json!({"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string"}},
        "sizes": {"type": "array", "items": {"type": "integer"}},
        "filter": {"type": "object"}}});
    ToolDef::from_parts(
        Tool::new("echo_arguments", schema),
        |arguments, _| async move { Ok(CallToolResult::text(Value::Object(arguments).to_string())) },
    )
}

/// `key=value` for an array-typed argument is its one item; a JSON array
/// stays as it is; a value that does not fit is told with good grammar.
#[tokio::test]
async fn key_value_arguments_fill_arrays() {
    let url = serve_tools(vec![echo_arguments()]).await;
    let cases = [
        (
            vec!["tags=a", "sizes=3"],
            json!({"tags": ["a"], "sizes": [3]}),
        ),
        (
            vec![r#"tags=["a","b"]"#, "sizes=[1,2]"],
            json!({"tags": ["a", "b"], "sizes": [1, 2]}),
        ),
    ];
    for (pairs, expected) in cases {
        let mut args = vec!["tool", "-s", &url, "echo_arguments"];
        args.extend(pairs);
        let output = mcp(&args).await;
        assert!(output.status.success(), "{}", stderr(&output));
        let got: Value = serde_json::from_str(&stdout(&output)).expect("the arguments");
        assert_eq!(got, expected);
    }
    let output = mcp(&["tool", "-s", &url, "echo_arguments", "filter=x"]).await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("filter (an object) is not JSON: x"),
        "{}",
        stderr(&output)
    );
}

/// What this program refuses for want of a terminal is told as its own
/// refusal, not as an error the server answered with, in every era.
#[tokio::test]
async fn refusals_are_told_as_this_programs_own() {
    let server = everything();
    for era in ["legacy", "modern"] {
        for (tool, arg) in [
            ("test_elicitation", "message=Who?"),
            ("test_sampling", "prompt=hi"),
        ] {
            for command in ["tool", "call"] {
                let mut args = vec![command, "-s", &server, "--era", era];
                if command == "call" {
                    args.push("tools/call");
                }
                args.push(tool);
                if command == "tool" {
                    args.push(arg);
                } else if tool == "test_elicitation" {
                    args.push(r#"{"message":"Who?"}"#);
                } else {
                    args.push(r#"{"prompt":"hi"}"#);
                }
                let output = mcp(&args).await;
                let said = stderr(&output);
                assert!(!output.status.success(), "{args:?}");
                assert!(
                    said.contains("which needs a person at a terminal, and stdin is not one, so mcp refused it"),
                    "{args:?}: {said}"
                );
                assert!(
                    !said.contains("the server answered with error"),
                    "{args:?}: {said}"
                );
            }
        }
    }
}
