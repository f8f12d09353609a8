//! How `mcp` reaches a server, run as a real process: the wait for a
//! server that never answers, and what is shown of a server that fails
//! to start.

mod support;

use std::time::{Duration, Instant};

use support::{MCP, mcp, stderr, stdout};

/// A server that takes connections and never says a word, and a child
/// that never speaks: every client command gives up after `--timeout`,
/// saying what it waited for.
#[tokio::test]
async fn the_timeout_bounds_connecting_to_a_silent_server() {
    // The kernel completes the connections; nobody ever reads them.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("its address"));
    for server in [url.as_str(), "sleep 30"] {
        let runs: [&[&str]; 3] = [
            &["tools"],
            &["call", "tools/list"],
            &["tool", "echo", "text=hi"],
        ];
        for run in runs {
            let mut args = vec![run[0], "--timeout", "1", "--server", server];
            args.extend_from_slice(&run[1..]);
            let started = Instant::now();
            let output = mcp(&args).await;
            let took = started.elapsed();
            assert!(!output.status.success(), "{args:?}");
            assert!(took < Duration::from_secs(10), "{args:?} took {took:?}");
            let said = stderr(&output);
            assert!(
                said.contains("did not answer the MCP handshake")
                    && said.contains("within 1s (--timeout)"),
                "{args:?}: {said}"
            );
        }
    }
    let output = mcp(&["tools", "--era", "legacy", "--timeout", "1", "-s", &url]).await;
    assert!(
        stderr(&output).contains("handshake (initialize)"),
        "{}",
        stderr(&output)
    );
    drop(listener);
}

/// A child that fails before the session starts: its exit status and the
/// last lines of its stderr (no more than the last twenty) are shown.
#[tokio::test]
async fn a_server_that_fails_to_start_shows_its_stderr_and_exit_status() {
    let output = mcp(&["tools", "--server", "sh -c 'echo boom >&2; exit 3'"]).await;
    assert!(!output.status.success());
    let said = stderr(&output);
    assert!(said.contains("exit status: 3"), "{said}");
    assert!(said.contains("\n  boom\n"), "{said}");

    let chatty = "sh -c 'for i in $(seq 1 30); do echo line $i >&2; done; exit 1'";
    let output = mcp(&["call", "--server", chatty, "tools/list"]).await;
    let said = stderr(&output);
    assert!(said.contains("  line 30\n"), "{said}");
    assert!(said.contains("  line 11\n"), "{said}");
    assert!(!said.contains("  line 10\n"), "{said}");

    // A child killed while waited for says it was stopped.
    let output = mcp(&["tools", "--timeout", "1", "--server", "sleep 30"]).await;
    assert!(
        stderr(&output).contains("`sleep 30` was stopped; it wrote nothing on stderr"),
        "{}",
        stderr(&output)
    );
}

/// A server that works: its stderr stays in the log (shown with
/// `--log info`), as before.
#[tokio::test]
async fn a_working_server_keeps_its_stderr_in_the_log() {
    let server = format!("sh -c 'echo chatter >&2; exec {MCP} serve everything'");
    let output = mcp(&["tool", "--server", &server, "echo", "text=hi"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "hi\n");
    assert!(!stderr(&output).contains("chatter"), "{}", stderr(&output));

    let output = mcp(&[
        "--log", "info", "tool", "--server", &server, "echo", "text=hi",
    ])
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("chatter"), "{}", stderr(&output));
}

/// `--http` takes a bare port or `localhost:PORT` (on 127.0.0.1), and
/// `--server` takes `HOST:PORT` without a scheme (the endpoint /mcp).
#[tokio::test]
async fn bare_ports_and_addresses_without_a_scheme() {
    for spec in ["0", "localhost:0", "127.0.0.1:0"] {
        let (_server, address) = support::serve_everything_http(spec).await;
        assert!(address.starts_with("127.0.0.1:"), "{spec}: {address}");
        let output = mcp(&["tool", "--server", &address, "echo", "text=bare"]).await;
        assert!(output.status.success(), "{address}: {}", stderr(&output));
        assert_eq!(stdout(&output), "bare\n");
    }
    let output = mcp(&["serve", "everything", "--http", "somewhere:80"]).await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("localhost:PORT, or a port"),
        "{}",
        stderr(&output)
    );
}

/// A wrong path on an HTTP server says so, with the URL, rather than an
/// empty reason.
#[tokio::test]
async fn a_wrong_path_is_told_with_a_hint() {
    let (_server, address) = support::serve_everything_http("0").await;
    let url = format!("http://{address}/wrong");
    let output = mcp(&["tools", "--server", &url]).await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains(&format!(
            "HTTP 404 Not Found at {url}: is the path right? MCP endpoints are usually /mcp"
        )),
        "{}",
        stderr(&output)
    );
}

/// A stdio server that stays up (its stdout open) after its stdin is
/// closed does not hold `mcp` once the call is done (which would outlast
/// the run's time limit): it is stopped after a short grace, and the
/// result stands.
#[tokio::test]
async fn a_server_that_outlives_its_stdin_is_stopped() {
    let server = format!("sh -c '{MCP} serve everything; sleep 120'");
    let output = mcp(&["tool", "-s", &server, "echo", "text=still-here"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("still-here"),
        "{}",
        stdout(&output)
    );
}
