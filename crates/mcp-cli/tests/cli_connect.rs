//! How `mcp` reaches a server, run as a real process: the wait for a
//! server that never answers.

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
