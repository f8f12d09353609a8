//! The stdio transport: newline-delimited UTF-8 JSON, one message per line.
//!
//! Works over any pair of async byte streams: the process's own stdin and
//! stdout (a server launched by a client), or a child's pipes (see
//! [`crate::child`]). Nothing but MCP messages is written; logs belong on
//! stderr.

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;

pub(crate) use crate::line_reader::LineLimit;
use crate::line_reader::LineReader;
pub use crate::line_reader::{MAX_LINE_BYTES, StreamFault};
#[cfg(unix)]
use crate::read_spin::DirectPipe;
use crate::read_spin::Spin;
use crate::transport::{DEFAULT_CHANNEL_CAPACITY, Inbound, OutboundFrame, Transport};

/// A transport over this process's stdin and stdout. Where they are pipes
/// (on Unix), they are read and written without blocking, by the runtime's
/// reactor, and while messages come quickly the reader stays awake for
/// the next one (for at most 50 µs each time) rather than sleeping between
/// them; otherwise through tokio's blocking-thread stdio.
pub fn stdio() -> Transport {
    #[cfg(unix)]
    if let Some(pipe) = crate::stdio_pipes::stdin().and_then(|p| DirectPipe::new(p).ok()) {
        return from_pipe(pipe, stdout_writer(), LineLimit::default());
    }
    from_streams(tokio::io::stdin(), stdout_writer())
}

fn stdout_writer() -> Box<dyn AsyncWrite + Unpin + Send> {
    #[cfg(unix)]
    if let Some(pipe) = crate::stdio_pipes::stdout() {
        return Box::new(pipe);
    }
    Box::new(tokio::io::stdout())
}

/// A transport over any reader and writer. Reading ends at EOF; writing ends
/// when the engine drops its sender, after flushing.
pub fn from_streams<R, W>(reader: R, writer: W) -> Transport
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    transport(reader, writer, Spin::never(), LineLimit::default())
}

/// A transport over a pipe's read end, read directly, and a writer: its
/// reader spins for a quick next line (see [`crate::read_spin`]), which
/// only a reader that sees bytes without the reactor can do.
#[cfg(unix)]
pub(crate) fn from_pipe<R, W>(reader: DirectPipe<R>, writer: W, limit: LineLimit) -> Transport
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    transport(reader, writer, Spin::new(), limit)
}

/// A transport whose reader waits for each line as `spin` allows, and
/// takes lines up to `limit`.
pub(crate) fn transport<R, W>(reader: R, writer: W, spin: Spin, limit: LineLimit) -> Transport
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (outbound, out_rx) = mpsc::channel(DEFAULT_CHANNEL_CAPACITY);
    let flushed = Some(tokio::spawn(write_lines(writer, out_rx)));
    Transport {
        inbound: Inbound::lines(LineReader::new(Box::new(reader), spin, limit)),
        outbound,
        flushed,
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(writer: W, mut rx: mpsc::Receiver<OutboundFrame>) {
    let mut writer = BufWriter::with_capacity(64 * 1024, writer);
    while let Some(frame) = rx.recv().await {
        if write_frame(&mut writer, &frame.text).await.is_err() {
            return;
        }
        // Let the tasks that are ready to run queue their messages too, so
        // that a busy stream is written (and read at the other end) in
        // fewer, larger writes; an idle runtime comes straight back.
        tokio::task::yield_now().await;
        // Write everything already queued before flushing once.
        while let Ok(frame) = rx.try_recv() {
            if write_frame(&mut writer, &frame.text).await.is_err() {
                return;
            }
        }
        if writer.flush().await.is_err() {
            return;
        }
    }
    let _ = writer.shutdown().await;
}

async fn write_frame<W: AsyncWrite + Unpin>(writer: &mut W, text: &str) -> std::io::Result<()> {
    if text.is_empty() {
        // A request ended without a response (FrameKind::Ended): nothing
        // to write.
        return Ok(());
    }
    debug_assert!(!text.contains('\n'), "a frame must be one line");
    writer.write_all(text.as_bytes()).await?;
    writer.write_all(b"\n").await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::{FrameKind, InboundFrame};
    use tokio::io::{AsyncBufReadExt, BufReader};

    #[tokio::test]
    async fn lines_in_frames_out() {
        let (mut client_write, server_read) = tokio::io::duplex(1024);
        let (server_write, client_read) = tokio::io::duplex(1024);
        let mut transport = from_streams(server_read, server_write);
        client_write
            .write_all(b"{\"a\":1}\r\n\n{\"b\":2}\n")
            .await
            .unwrap();
        for expected in ["{\"a\":1}", "{\"b\":2}"] {
            match transport.inbound.recv().await.unwrap() {
                InboundFrame::Text(text) => assert_eq!(text, expected),
                other => panic!("unexpected {other:?}"),
            }
        }
        transport
            .outbound
            .send(OutboundFrame {
                text: "{\"c\":3}".into(),
                related: None,
                kind: FrameKind::Notification,
            })
            .await
            .unwrap();
        let mut lines = BufReader::new(client_read).lines();
        assert_eq!(lines.next_line().await.unwrap().unwrap(), "{\"c\":3}");
        drop(client_write);
        assert!(
            transport.inbound.recv().await.is_none(),
            "EOF ends the inbound stream"
        );
    }
}
