//! `mcp call`, `mcp tools` and `mcp tool` run as real processes against
//! `mcp serve everything`, itself a child of theirs over stdio.

mod support;

use std::process::Output;
use std::time::Duration;

use serde_json::Value;

const MCP: &str = env!("CARGO_BIN_EXE_mcp");

/// Runs `mcp ARGS` with stdin closed (not a terminal), bounded in time.
async fn mcp(args: &[&str]) -> Output {
    let child = tokio::process::Command::new(MCP)
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(Duration::from_secs(30), child)
        .await
        .expect("mcp finished in time")
        .expect("mcp ran")
}

fn server() -> String {
    format!("{MCP} serve everything")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn call_prints_the_json_result() {
    let server = server();
    for era in ["auto", "legacy", "2025-03-26", "modern"] {
        let output = mcp(&[
            "call",
            "--server",
            &server,
            "--era",
            era,
            "tools/call",
            "echo",
            r#"{"text":"hi"}"#,
        ])
        .await;
        assert!(output.status.success(), "{era}: {}", stderr(&output));
        let result: Value = serde_json::from_str(&stdout(&output)).expect("JSON on stdout");
        assert_eq!(result["content"][0]["text"], "hi", "{era}");
    }

    let output = mcp(&[
        "call",
        "-s",
        &server,
        "resources/read",
        r#"{"uri":"test://static-text"}"#,
    ])
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(result["contents"][0]["uri"], "test://static-text");
}

#[tokio::test]
async fn errors_go_to_stderr_with_a_failing_exit() {
    let server = server();
    let output = mcp(&["call", "-s", &server, "no/such/method"]).await;
    assert!(!output.status.success());
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));
    assert!(stderr(&output).contains("-32601"), "{}", stderr(&output));

    let output = mcp(&["call", "-s", &server, "tools/list", "not json"]).await;
    assert!(!output.status.success());
    assert!(stderr(&output).contains("not JSON"), "{}", stderr(&output));

    let output = mcp(&["call", "-s", "/nonexistent/server", "tools/list"]).await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("cannot run"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn tools_prints_a_table() {
    let output = mcp(&["tools", "-s", &server()]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let table = stdout(&output);
    let mut lines = table.lines();
    assert!(lines.next().unwrap().starts_with("NAME"), "{table}");
    let echo = table
        .lines()
        .find(|l| l.starts_with("echo "))
        .expect("echo is listed");
    assert!(echo.contains("text*"), "{echo}");
}

#[tokio::test]
async fn tool_takes_key_value_arguments() {
    let server = server();
    let output = mcp(&["tool", "-s", &server, "add", "a=2", "b=3.5"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("5.5"), "{}", stdout(&output));

    let output = mcp(&["tool", "-s", &server, "no_such_tool"]).await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("has no tool"),
        "{}",
        stderr(&output)
    );

    // Asking the user needs a terminal; the server hears a clear refusal.
    let output = mcp(&["tool", "-s", &server, "test_elicitation", "message=Who?"]).await;
    assert!(!output.status.success(), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("needs a person at a terminal, and stdin is not one"),
        "{}",
        stderr(&output)
    );
}

/// `mcp serve everything --http` on a free port; the child and its base
/// URL (`http://127.0.0.1:PORT`).
async fn http_server() -> (tokio::process::Child, String) {
    let (child, address) = support::serve_everything_http("127.0.0.1:0").await;
    (child, format!("http://{address}"))
}

#[tokio::test]
async fn urls_pick_the_network_transport() {
    let (_server, base) = http_server().await;
    let urls = [
        format!("{base}/mcp"),
        // The legacy HTTP+SSE endpoint: found by the fallback probe.
        format!("{base}/sse"),
        base.replacen("http://", "ws://", 1) + "/ws",
    ];
    for url in &urls {
        for era in ["auto", "2025-06-18", "2024-11-05"] {
            let args = [
                "tool",
                "-s",
                url,
                "--era",
                era,
                "echo",
                "text=over the network",
            ];
            let output = mcp(&args).await;
            assert!(output.status.success(), "{url} {era}: {}", stderr(&output));
            assert_eq!(stdout(&output), "over the network\n", "{url} {era}");
        }
    }
}

/// The JSON report of `mcp bench` with `args` (after a short warm-up).
async fn bench_report(args: &[&str]) -> Value {
    let mut all = vec!["bench", "--warmup", "0.1", "--json"];
    all.extend_from_slice(args);
    let output = mcp(&all).await;
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_str(&stdout(&output)).expect("a JSON report")
}

#[tokio::test]
async fn bench_measures_a_short_run() {
    let (server, base) = http_server().await;
    let pid = server.id().expect("server pid").to_string();
    let url = format!("{base}/mcp");
    let args = [
        "bench", "-s", &url, "-c", "2", "-d", "1", "--warmup", "0.2", "--json", "--pid", &pid,
    ];
    let output = mcp(&args).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).expect("a JSON report");
    assert!(
        report["requests"].as_u64().is_some_and(|n| n > 0),
        "{report}"
    );
    assert_eq!(report["errors"], 0, "{report}");
    assert!(
        report["latency_ms"]["p50"]
            .as_f64()
            .is_some_and(|ms| ms > 0.0),
        "{report}"
    );
    let replies = &report["replies"];
    assert!(replies["json"].as_u64().unwrap_or(0) + replies["sse"].as_u64().unwrap_or(0) > 0);
    assert!(
        report["server_process"]["rss_kib"]
            .as_u64()
            .is_some_and(|kib| kib > 0)
    );
    // The server here has no child processes; the machine's time is split
    // into shares that make up the whole of it.
    assert_eq!(
        report["server_process"]["children_cpu_percent"], 0.0,
        "{report}"
    );
    let machine = &report["machine"];
    assert!(
        machine["cores"].as_u64().is_some_and(|n| n >= 1),
        "{report}"
    );
    let shares: f64 = ["busy_percent", "idle_percent", "steal_percent"]
        .iter()
        .map(|k| machine[k].as_f64().unwrap_or(-1.0))
        .sum();
    assert!((shares - 100.0).abs() < 0.01, "{report}");
    assert!(
        machine["busy_percent"].as_f64().is_some_and(|b| b > 0.0),
        "{report}"
    );

    assert_eq!(report["sender"], "lanes", "{report}");

    // In both eras the lanes' calls are answered with results (a JSON-RPC
    // error counts as an error), as plain JSON or as SSE streams.
    for era in ["legacy", "modern"] {
        let report = bench_report(&["-s", &url, "--era", era, "-d", "0.5"]).await;
        assert_eq!(report["sender"], "lanes", "{report}");
        assert_eq!(report["errors"], 0, "{report}");
        assert!(
            report["replies"]["json"].as_u64().unwrap_or(0) > 0,
            "{report}"
        );
    }
    let streamed = [
        "-s",
        &url,
        "--era",
        "legacy",
        "-d",
        "0.3",
        "--tool",
        "test_tool_with_logging",
        "--args",
        "{}",
    ];
    let report = bench_report(&streamed).await;
    assert_eq!(report["sender"], "lanes", "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    assert!(report["requests"].as_u64().unwrap_or(0) > 0, "{report}");
    assert!(
        report["replies"]["sse"].as_u64().unwrap_or(0) > 0,
        "{report}"
    );
    let ping = [
        "-s", &url, "--era", "legacy", "-d", "0.3", "--method", "ping",
    ];
    let report = bench_report(&ping).await;
    assert_eq!(report["request"], "ping", "{report}");
    assert_eq!(report["sender"], "lanes", "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    assert!(report["requests"].as_u64().unwrap_or(0) > 0, "{report}");
    let via_client = ["-s", &url, "-d", "0.3", "--via-client"];
    let report = bench_report(&via_client).await;
    assert_eq!(report["sender"], "client", "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    assert!(report["requests"].as_u64().unwrap_or(0) > 0, "{report}");

    // Idle sessions: opened, measured and deleted, round after round (each
    // initialize must yield a session id and each DELETE succeed).
    let args = [
        "bench",
        "-s",
        &url,
        "--sessions",
        "40",
        "--cycles",
        "2",
        "--json",
        "--pid",
        &pid,
    ];
    let output = mcp(&args).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).expect("a JSON report");
    assert_eq!(report["sessions"], 40, "{report}");
    let cycles = report["cycles"].as_array().expect("rounds");
    assert_eq!(cycles.len(), 2, "{report}");
    assert!(
        cycles
            .iter()
            .all(|c| c["rss_kib_open"].as_u64().is_some_and(|kib| kib > 0)),
        "{report}"
    );
    // The growth figures are those of the rounds reported: with two
    // rounds the open trend is the step between them.
    let kib = |round: usize, key: &str| cycles[round][key].as_f64().expect("KiB");
    let growth = |key: &str| (kib(1, key) - kib(0, key)) * 100.0 / kib(0, key);
    let close = |figure: &Value, expected: f64| {
        figure.as_f64().is_some_and(|f| (f - expected).abs() < 1e-6)
    };
    assert!(
        close(&report["open_growth_percent"], growth("rss_kib_open")),
        "{report}"
    );
    assert!(
        close(&report["growth_percent"], growth("rss_kib_closed")),
        "{report}"
    );
    assert!(
        close(
            &report["open_kib_per_round"],
            kib(1, "rss_kib_open") - kib(0, "rss_kib_open")
        ),
        "{report}"
    );

    // A tool the server does not have fails the run at once.
    let output = mcp(&["bench", "-s", &url, "-d", "1", "--tool", "no_such_tool"]).await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("tools/call failed"),
        "{}",
        stderr(&output)
    );
}

/// A server that never answers holds a run no longer than
/// `--setup-timeout`: over HTTP (a listener that takes connections and
/// says nothing) and over stdio (a child that never reads).
#[tokio::test]
async fn bench_set_up_is_bounded() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("its address"));
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    for server in [url.as_str(), "sleep 60"] {
        let args = ["bench", "-s", server, "-c", "2", "--setup-timeout", "1"];
        let output = mcp(&args).await;
        assert!(!output.status.success(), "{server}");
        assert!(
            stderr(&output).contains("not set up within 1s (--setup-timeout)"),
            "{server}: {}",
            stderr(&output)
        );
    }
    silent.abort();
    let output = mcp(&["bench", "-s", &url, "--setup-timeout", "0"]).await;
    assert!(stderr(&output).contains("--setup-timeout must be positive"));
}

/// A report whose reader went away (`mcp bench | head -1`) ends the run
/// cleanly: no panic, a successful exit. The load report, in text and
/// JSON, and the idle-sessions report.
#[tokio::test]
async fn bench_report_to_a_closed_pipe_is_not_an_error() {
    let (server, base) = http_server().await;
    let url = format!("{base}/mcp");
    let pid = server.id().expect("the server runs").to_string();
    let load = ["bench", "-s", &url, "-d", "0.3", "--warmup", "0"];
    let load_json = [&load[..], &["--json"]].concat();
    let sessions = ["bench", "-s", &url, "--sessions", "5", "--pid", &pid];
    for args in [&load[..], &load_json, &sessions] {
        let mut child = tokio::process::Command::new(MCP)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("mcp ran");
        // The reader is gone before the report is written.
        drop(child.stdout.take());
        let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
            .await
            .expect("mcp finished in time")
            .expect("mcp ran");
        assert!(
            output.status.success(),
            "{args:?}: {:?}\n{}",
            output.status,
            stderr(&output)
        );
        assert!(!stderr(&output).contains("panicked"), "{}", stderr(&output));
    }
}
