//! What `mcp call`, `mcp tool` and `mcp tools` show of a server's
//! answers, run as real processes against `mcp serve everything`.

mod support;

use serde_json::Value;
use support::{everything, mcp, stderr, stdout};

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
