//! Tools that run as tasks, in 2025-11-25 (asked for by the client) and in
//! 2026-07-28 (chosen by the server, for a client that declares the tasks
//! extension): created, followed to their end with their status on
//! stderr, their questions answered, their result printed; Ctrl-C cancels.

mod support;

use std::time::Instant;

use support::{MCP, RUN_WAIT, everything, mcp, stderr, stdout};

/// A tool that runs only as a task is called as one, in both eras that
/// have tasks; its tool error is told, with a failing exit status.
#[tokio::test]
async fn a_task_only_tool_runs_as_a_task() {
    for era in ["2025-11-25", "2026-07-28"] {
        let output = mcp(&["tool", "-s", &everything(), "--era", era, "failing_job"]).await;
        let err = stderr(&output);
        assert!(!output.status.success(), "{era}: {err}");
        assert!(err.contains("failing_job runs as task"), "{era}: {err}");
        if era == "2026-07-28" {
            // Polled to its end (in 2025-11-25 the result may come first).
            assert!(err.contains(": completed"), "{era}: {err}");
        }
        assert!(
            err.contains("The job failed: nothing to process"),
            "{era}: {err}"
        );
        assert!(!err.contains("must be called as a task"), "{era}: {err}");
        assert!(!err.contains("-32021"), "{era}: {err}");
    }
}

/// In 2026-07-28 the server chooses to run a tool that may be a task as
/// one (mcp declares the tasks extension); mcp follows it to its result,
/// and a task that fails with an error says which.
#[tokio::test]
async fn a_task_the_server_starts_is_followed_to_its_end() {
    let output = mcp(&[
        "tool",
        "-s",
        &everything(),
        "--era",
        "2026-07-28",
        "slow_compute",
        "seconds=0.3",
        "label=sum",
    ])
    .await;
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(err.contains("slow_compute runs as task"), "{err}");
    assert!(
        stdout(&output).contains("sum: computed in 0.3 s"),
        "{}",
        stdout(&output)
    );
    let output = mcp(&[
        "tool",
        "-s",
        &everything(),
        "--era",
        "2026-07-28",
        "protocol_error_job",
    ])
    .await;
    let err = stderr(&output);
    assert!(!output.status.success(), "{err}");
    assert!(err.contains(": failed"), "{err}");
    assert!(err.contains("failed: error -32603"), "{err}");
    assert!(err.contains("the job hit a protocol error"), "{err}");
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

/// Ctrl-C while a task runs cancels it, in both eras: the server is told,
/// and the command ends at once with a failing status.
#[test]
fn ctrl_c_cancels_a_running_task() {
    for (era, flag) in [("2025-11-25", "--task"), ("2026-07-28", "--timeout=90")] {
        ctrl_c_cancels(era, flag);
    }
}

fn ctrl_c_cancels(era: &str, flag: &str) {
    let mut child = std::process::Command::new(MCP)
        .args([
            "tool",
            "-s",
            &everything(),
            "--era",
            era,
            flag,
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
        assert!(read > 0, "{era}: mcp ended before its task ran: {seen}");
    }
    let interrupted = Instant::now();
    // SAFETY: kill(2) with the pid of the child spawned above, not yet waited for.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) }, 0);
    std::io::Read::read_to_string(&mut err, &mut seen).expect("stderr read");
    let status = child.wait().expect("mcp waited for");
    assert!(!status.success(), "{era}: {seen}");
    assert!(seen.contains("was cancelled (Ctrl-C)"), "{era}: {seen}");
    // The server took the cancellation (a refused tasks/cancel is told).
    assert!(!seen.contains("cancelling task"), "{era}: {seen}");
    assert!(interrupted.elapsed() < RUN_WAIT, "{era}: {seen}");
}

/// A task that asks a question (2026-07-28: the task waits for input and
/// carries the question) gets the person's answer from the terminal, and
/// goes on with it.
#[cfg(target_os = "linux")]
#[test]
fn a_task_waiting_for_input_gets_the_persons_answer() {
    let mut terminal = support::pty::Terminal::run(&[
        "tool",
        "-s",
        &everything(),
        "--era",
        "2026-07-28",
        "confirm_delete",
        "filename=notes.txt",
    ]);
    let asked = terminal.wait_for("Delete notes.txt?", 0);
    let waiting = terminal.wait_for("Answer it?", asked);
    terminal.type_keys("\r");
    let confirm = terminal.wait_for("confirm", waiting);
    terminal.type_keys("y\r");
    let (status, seen) = terminal.finish();
    assert!(status.success(), "{seen}");
    assert!(seen.contains("confirm_delete runs as task"), "{seen}");
    assert!(seen.contains(": waiting for input"), "{seen}");
    assert!(seen[confirm..].contains("Deleted notes.txt"), "{seen}");
}
