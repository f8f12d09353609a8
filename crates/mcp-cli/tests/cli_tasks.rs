//! Tools that run as tasks (2025-11-25): created, followed to their end
//! with their status on stderr, their result printed; Ctrl-C cancels.

mod support;

use std::time::Instant;

use support::{MCP, RUN_WAIT, everything, mcp, stderr, stdout};

/// A tool that runs only as a task is called as one; its tool error is
/// told, with a failing exit status.
#[tokio::test]
async fn a_task_only_tool_runs_as_a_task() {
    let output = mcp(&[
        "tool",
        "-s",
        &everything(),
        "--era",
        "2025-11-25",
        "failing_job",
    ])
    .await;
    let err = stderr(&output);
    assert!(!output.status.success(), "{err}");
    assert!(err.contains("runs as task"), "{err}");
    assert!(err.contains("The job failed: nothing to process"), "{err}");
    assert!(!err.contains("must be called as a task"), "{err}");
}

/// `--task` runs a tool that allows it as a task, to its result.
#[tokio::test]
async fn a_tool_runs_as_a_task_when_asked() {
    let output = mcp(&[
        "tool",
        "-s",
        &everything(),
        "--era",
        "2025-11-25",
        "--task",
        "slow_compute",
        "seconds=0.3",
        "label=sum",
    ])
    .await;
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(err.contains("runs as task"), "{err}");
    assert!(
        stdout(&output).contains("sum: computed in 0.3 s"),
        "{}",
        stdout(&output)
    );
    // A tool that never runs as a task is refused as one, by mcp itself.
    let output = mcp(&[
        "tool",
        "-s",
        &everything(),
        "--era",
        "2025-11-25",
        "--task",
        "greet",
        "name=ada",
    ])
    .await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("greet does not run as a task"),
        "{}",
        stderr(&output)
    );
}

/// Ctrl-C while a task runs cancels it: the server is told, and the
/// command ends at once with a failing status.
#[test]
fn ctrl_c_cancels_a_running_task() {
    let mut child = std::process::Command::new(MCP)
        .args([
            "tool",
            "-s",
            &everything(),
            "--era",
            "2025-11-25",
            "--task",
            "slow_compute",
            "seconds=60",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("mcp ran");
    let pid = child.id();
    // Once the task's first status is shown, Ctrl-C.
    let mut err = std::io::BufReader::new(child.stderr.take().expect("stderr piped"));
    let mut seen = String::new();
    while !seen.contains(": working") {
        let read = std::io::BufRead::read_line(&mut err, &mut seen).expect("stderr read");
        assert!(read > 0, "mcp ended before its task ran: {seen}");
    }
    let interrupted = Instant::now();
    // SAFETY: kill(2) with the pid of the child spawned above, not yet waited for.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) }, 0);
    std::io::Read::read_to_string(&mut err, &mut seen).expect("stderr read");
    let status = child.wait().expect("mcp waited for");
    assert!(!status.success(), "{seen}");
    assert!(seen.contains("was cancelled (Ctrl-C)"), "{seen}");
    // The server took the cancellation (a refused tasks/cancel is told).
    assert!(!seen.contains("cancelling task"), "{seen}");
    assert!(interrupted.elapsed() < RUN_WAIT, "{seen}");
}
