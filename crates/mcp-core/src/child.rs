//! The child-process transport: spawn a server and talk to it over its
//! stdin and stdout, forwarding its stderr to the log.
//!
//! Shutdown follows the specification: close the child's stdin, wait; send
//! SIGTERM, wait; send SIGKILL.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

#[cfg(unix)]
use crate::read_spin::DirectPipe;
#[cfg(unix)]
use crate::stdio::from_pipe;
#[cfg(not(unix))]
use crate::stdio::from_streams;
use crate::transport::Transport;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running child server and the transport to it.
#[derive(Debug)]
pub struct ChildProcess {
    child: Child,
    grace: Duration,
}

/// How long each shutdown step waits before the next, harsher one.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

impl ChildProcess {
    /// Spawns `command` with piped stdin and stdout. The child's stderr lines
    /// are forwarded to the `tracing` log at info level, target
    /// `mcp_core::child`. Returns the child and the engine's transport; the
    /// child's stdin closes when the transport's sender is dropped (the
    /// session was closed). While the child answers quickly, its stdout is
    /// waited for by staying awake briefly rather than sleeping.
    pub fn spawn(mut command: Command) -> std::io::Result<(ChildProcess, Transport)> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("child stdin missing"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("child stdout missing"))?;
        if let Some(stderr) = child.stderr.take() {
            let pid = child.id().unwrap_or_default();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::info!(target: "mcp_core::child", pid, "{line}");
                }
            });
        }
        #[cfg(unix)]
        let transport = from_pipe(DirectPipe::new(stdout)?, stdin);
        #[cfg(not(unix))]
        let transport = from_streams(stdout, stdin);
        Ok((
            ChildProcess {
                child,
                grace: DEFAULT_SHUTDOWN_GRACE,
            },
            transport,
        ))
    }

    /// Sets how long each shutdown step waits.
    pub fn with_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// The child's process id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Stops the child the way the specification asks: its stdin is closed
    /// (close the session, or drop the transport, first), wait; SIGTERM,
    /// wait; SIGKILL. Returns how it exited.
    pub async fn shutdown(mut self) -> std::io::Result<ExitStatus> {
        if let Ok(status) = tokio::time::timeout(self.grace, self.child.wait()).await {
            return status;
        }
        if let Some(pid) = self.child.id() {
            terminate(pid);
            if let Ok(status) = tokio::time::timeout(self.grace, self.child.wait()).await {
                return status;
            }
        }
        self.child.kill().await?;
        self.child.wait().await
    }
}

#[cfg(unix)]
fn terminate(pid: u32) {
    // SAFETY: kill(2) with a pid we spawned and still own; no memory is touched.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGTERM);
    }
}

#[cfg(not(unix))]
fn terminate(_pid: u32) {}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::transport::{FrameKind, InboundFrame, OutboundFrame};

    #[tokio::test]
    async fn echoes_through_cat_and_stops_on_stdin_close() {
        let (child, mut transport) = ChildProcess::spawn(Command::new("cat")).unwrap();
        transport
            .outbound
            .send(OutboundFrame {
                text: "{\"x\":1}".into(),
                related: None,
                kind: FrameKind::Request,
            })
            .await
            .unwrap();
        assert!(
            matches!(transport.inbound.recv().await, Some(InboundFrame::Text(t)) if t == "{\"x\":1}")
        );
        drop(transport.outbound);
        let status = child.shutdown().await.unwrap();
        assert!(
            status.success(),
            "cat exits by itself when stdin closes: {status:?}"
        );
    }

    #[tokio::test]
    async fn sigterm_when_stdin_close_is_ignored() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "trap 'exit 7' TERM; while true; do sleep 0.05; done"]);
        let (child, transport) = ChildProcess::spawn(cmd).unwrap();
        drop(transport);
        let status = child
            .with_grace(Duration::from_millis(300))
            .shutdown()
            .await
            .unwrap();
        assert_eq!(status.code(), Some(7), "the TERM trap ran");
    }

    #[tokio::test]
    async fn sigkill_when_sigterm_is_ignored() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "trap '' TERM; while true; do sleep 0.05; done"]);
        let (child, transport) = ChildProcess::spawn(cmd).unwrap();
        drop(transport);
        let status = child
            .with_grace(Duration::from_millis(200))
            .shutdown()
            .await
            .unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }
}
