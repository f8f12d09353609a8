//! The child-process transport: spawn a server and talk to it over its
//! stdin and stdout, forwarding its stderr to the log.
//!
//! Shutdown follows the specification: close the child's stdin, wait; send
//! SIGTERM, wait; send SIGKILL.
//!
//! A message from the child longer than [`ChildOptions::max_message_bytes`]
//! ends its stream (the session then ends, and its waiting requests fail at
//! once, rather than one of them waiting for its timeout because its
//! response was skipped); [`ChildProcess::output_fault`] says why.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

#[cfg(unix)]
use crate::read_spin::DirectPipe;
#[cfg(unix)]
use crate::stdio::from_pipe;
use crate::stdio::{LineLimit, MAX_LINE_BYTES, StreamFault};
use crate::transport::Transport;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running child server and the transport to it.
#[derive(Debug)]
pub struct ChildProcess {
    child: Child,
    grace: Duration,
    fault: StreamFault,
}

/// How a child server's output is read.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ChildOptions {
    /// The longest message accepted from the child, in bytes (default
    /// [`MAX_LINE_BYTES`]); a longer one ends its stream.
    pub max_message_bytes: usize,
}

impl Default for ChildOptions {
    fn default() -> Self {
        ChildOptions {
            max_message_bytes: MAX_LINE_BYTES,
        }
    }
}

impl ChildOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the longest message accepted from the child.
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }
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
    pub fn spawn(command: Command) -> std::io::Result<(ChildProcess, Transport)> {
        Self::spawn_with(command, &ChildOptions::default())
    }

    /// [`ChildProcess::spawn`] with `options`.
    pub fn spawn_with(
        mut command: Command,
        options: &ChildOptions,
    ) -> std::io::Result<(ChildProcess, Transport)> {
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
        let fault = StreamFault::default();
        let limit = LineLimit {
            max_bytes: options.max_message_bytes,
            ends_stream: Some(fault.clone()),
        };
        #[cfg(unix)]
        let transport = from_pipe(DirectPipe::new(stdout)?, stdin, limit);
        #[cfg(not(unix))]
        let transport =
            crate::stdio::transport(stdout, stdin, crate::read_spin::Spin::never(), limit);
        Ok((
            ChildProcess {
                child,
                grace: DEFAULT_SHUTDOWN_GRACE,
                fault,
            },
            transport,
        ))
    }

    /// Why the child's output was abandoned (a message over the limit),
    /// once it was; shared, so it can be read after the session ended.
    pub fn output_fault(&self) -> StreamFault {
        self.fault.clone()
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

    #[tokio::test]
    async fn a_message_over_the_limit_ends_the_stream_and_says_why() {
        // A line of 64 KiB, then one that would be fine: the stream ends
        // at the first, without reading all of it.
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "head -c 65536 /dev/zero | tr '\\0' x; echo; echo '{}'; sleep 5",
        ]);
        let options = ChildOptions::new().max_message_bytes(1024);
        let (child, mut transport) = ChildProcess::spawn_with(cmd, &options).unwrap();
        let fault = child.output_fault();
        let next = tokio::time::timeout(Duration::from_secs(5), transport.inbound.recv()).await;
        assert!(matches!(next, Ok(None)), "the stream ended: {next:?}");
        assert_eq!(
            fault.get(),
            Some("message longer than 1024 bytes, the limit")
        );
        drop(transport);
        child
            .with_grace(Duration::from_millis(100))
            .shutdown()
            .await
            .unwrap();
    }
}
