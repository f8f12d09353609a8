//! `mcp` writing to a reader that goes away (`mcp tools 2>&1 | head -c
//! 10`): the output ends quietly, never with a panic.

mod support;

use std::io::Read as _;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use support::{MCP, RUN_WAIT, everything};

/// Runs `mcp ARGS` with stdout and stderr on one pipe whose reader takes
/// `keep` bytes (none: at once) and goes away; returns how `mcp` exited.
fn run_into_closing_pipe(args: &[&str], keep: usize) -> ExitStatus {
    let (mut reader, writer) = std::io::pipe().expect("a pipe");
    let mut child = Command::new(MCP)
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer.try_clone().expect("a second end"))
        .stderr(writer)
        .spawn()
        .expect("mcp ran");
    let mut kept = vec![0; keep];
    if keep > 0 {
        reader.read_exact(&mut kept).expect("the first bytes");
    }
    drop(reader);
    let deadline = Instant::now() + RUN_WAIT;
    loop {
        if let Some(status) = child.try_wait().expect("mcp is waited for") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{args:?} did not finish in time");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A panic exits with 101; a closed pipe must not bring one about, on
/// the way to a result or to an error, whether the reader left early or
/// after the first bytes, with the log on or off.
#[test]
fn a_reader_that_goes_away_ends_the_output_without_a_panic() {
    let server = everything();
    for round in 0..20 {
        let status = run_into_closing_pipe(&["tools", "--server", &server], 10);
        assert_ne!(status.code(), Some(101), "round {round}: {status:?}");
    }
    let runs: [(&[&str], bool); 5] = [
        (&["tools", "--server", &server], true),
        (&["--log", "debug", "tools", "--server", &server], true),
        (&["call", "--server", &server, "no/such/method"], false),
        (&["tool", "--server", &server, "no_such_tool"], false),
        (&["tool", "--server", "/nonexistent/server", "echo"], false),
    ];
    for (args, succeeds) in runs {
        for keep in [0, 10] {
            if keep > 0 && !succeeds {
                continue;
            }
            let status = run_into_closing_pipe(args, keep);
            assert_ne!(status.code(), Some(101), "{args:?}: a panic");
            assert_eq!(
                status.success(),
                succeeds,
                "{args:?} keep {keep}: {status:?}"
            );
        }
    }
}

/// With stderr still read, a closed stdout shows no panic message.
#[test]
fn a_closed_stdout_leaves_stderr_clean() {
    let server = everything();
    for args in [
        &["tools", "--server", &server][..],
        &["call", "--server", &server, "tools/list"],
        &["tool", "--server", &server, "echo", "text=hi"],
    ] {
        let mut child = Command::new(MCP)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mcp ran");
        drop(child.stdout.take());
        let output = child.wait_with_output().expect("mcp ran");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
