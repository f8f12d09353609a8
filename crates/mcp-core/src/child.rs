//! The child-process transport: spawn a server and talk to it over its
//! stdin and stdout, forwarding its stderr to the log and keeping its last
//! lines ([`StderrTail`]) to tell why it failed.
//!
//! Shutdown follows the specification: close the child's stdin, wait; send
//! SIGTERM, wait; send SIGKILL.
//!
//! A message from the child longer than [`ChildOptions::max_message_bytes`]
//! ends its stream (the session then ends, and its waiting requests fail at
//! once, rather than one of them waiting for its timeout because its
//! response was skipped); [`ChildProcess::output_fault`] says why.

use std::collections::VecDeque;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[cfg(unix)]
use crate::read_spin::DirectPipe;
#[cfg(unix)]
use crate::stdio::from_pipe;
use crate::stdio::{LineLimit, MAX_LINE_BYTES, StreamFault};
use crate::sync::MutexExt as _;
use crate::transport::Transport;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running child server and the transport to it.
#[derive(Debug)]
pub struct ChildProcess {
    child: Child,
    grace: Duration,
    fault: StreamFault,
    stderr: StderrTail,
}

/// How many of a child's last stderr lines [`StderrTail`] keeps.
pub const STDERR_TAIL_LINES: usize = 20;

/// How many bytes of a child's last stderr lines [`StderrTail`] keeps.
pub const STDERR_TAIL_BYTES: usize = 4096;

/// The last lines a child wrote on stderr: at most [`STDERR_TAIL_LINES`]
/// lines and [`STDERR_TAIL_BYTES`] bytes, whatever the log shows. Shared,
/// so it can be read once the child is gone.
#[derive(Clone, Debug)]
pub struct StderrTail {
    lines: Arc<Mutex<Lines>>,
    /// Its sender is dropped when the child's stderr closes.
    open: tokio::sync::watch::Receiver<()>,
}

/// The lines a [`StderrTail`] keeps, and their size.
#[derive(Debug, Default)]
struct Lines {
    kept: VecDeque<String>,
    bytes: usize,
}

impl Lines {
    fn push(&mut self, mut line: String) {
        if line.len() > STDERR_TAIL_BYTES {
            let mut cut = STDERR_TAIL_BYTES;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
        }
        self.bytes += line.len();
        self.kept.push_back(line);
        while self.kept.len() > STDERR_TAIL_LINES || self.bytes > STDERR_TAIL_BYTES {
            match self.kept.pop_front() {
                Some(old) => self.bytes -= old.len(),
                None => break,
            }
        }
    }
}

impl StderrTail {
    /// A tail and the sender whose drop says the stream closed.
    fn new() -> (StderrTail, tokio::sync::watch::Sender<()>) {
        let (closed, open) = tokio::sync::watch::channel(());
        let tail = StderrTail {
            lines: Arc::default(),
            open,
        };
        (tail, closed)
    }

    fn push(&self, line: String) {
        self.lines.locked().push(line);
    }

    /// The lines kept, oldest first.
    pub fn lines(&self) -> Vec<String> {
        let lines = self.lines.locked();
        lines.kept.iter().cloned().collect()
    }

    /// Waits until the child's stderr is closed, so that its last lines
    /// are in, or `patience` has passed (something the child started may
    /// hold it open).
    pub async fn closed(&self, patience: Duration) {
        let mut open = self.open.clone();
        let _ =
            tokio::time::timeout(patience, async { while open.changed().await.is_ok() {} }).await;
    }
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
        let (tail, closed) = StderrTail::new();
        if let Some(stderr) = child.stderr.take() {
            let pid = child.id().unwrap_or_default();
            let tail = tail.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::info!(target: "mcp_core::child", pid, "{line}");
                    tail.push(line);
                }
                drop(closed);
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
                stderr: tail,
            },
            transport,
        ))
    }

    /// Why the child's output was abandoned (a message over the limit),
    /// once it was; shared, so it can be read after the session ended.
    pub fn output_fault(&self) -> StreamFault {
        self.fault.clone()
    }

    /// The last lines the child wrote on stderr; shared, so it can be read
    /// after the child is gone.
    pub fn stderr_tail(&self) -> StderrTail {
        self.stderr.clone()
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
    async fn the_last_stderr_lines_are_kept_after_the_child_exits() {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "for i in $(seq 1 30); do echo line $i >&2; done; exit 3",
        ]);
        let (child, transport) = ChildProcess::spawn(cmd).unwrap();
        let tail = child.stderr_tail();
        drop(transport);
        let status = child.shutdown().await.unwrap();
        assert_eq!(status.code(), Some(3));
        tail.closed(Duration::from_secs(5)).await;
        let lines = tail.lines();
        assert_eq!(lines.len(), STDERR_TAIL_LINES);
        assert_eq!(lines.first().map(String::as_str), Some("line 11"));
        assert_eq!(lines.last().map(String::as_str), Some("line 30"));
    }

    #[test]
    fn a_tail_is_bounded_in_lines_and_bytes() {
        let mut lines = Lines::default();
        for i in 0..100 {
            lines.push(format!("line {i}"));
        }
        assert_eq!(lines.kept.len(), STDERR_TAIL_LINES);
        assert_eq!(lines.kept.back().map(String::as_str), Some("line 99"));
        lines.push("é".repeat(STDERR_TAIL_BYTES));
        assert_eq!(lines.kept.len(), 1);
        assert!(lines.bytes <= STDERR_TAIL_BYTES);
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
