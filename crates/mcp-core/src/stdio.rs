//! The stdio transport: newline-delimited UTF-8 JSON, one message per line.
//!
//! Works over any pair of async byte streams: the process's own stdin and
//! stdout (a server launched by a client), or a child's pipes (see
//! [`crate::child`]). Nothing but MCP messages is written; logs belong on
//! stderr.

use std::sync::{Arc, OnceLock};

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;

#[cfg(unix)]
use crate::read_spin::DirectPipe;
use crate::read_spin::Spin;
use crate::transport::{DEFAULT_CHANNEL_CAPACITY, Inbound, InboundFrame, OutboundFrame, Transport};

/// The longest line accepted by default; a longer one is answered by a
/// parse error and skipped (or ends a child's stream, see
/// [`crate::child::ChildOptions`]), so one huge message cannot exhaust
/// memory.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Why a stream was abandoned, once it was. Cheap to clone: the reader
/// records it, whoever watches the stream reads it.
#[derive(Clone, Debug, Default)]
pub struct StreamFault(Arc<OnceLock<String>>);

impl StreamFault {
    /// Why the stream was abandoned; `None` while it was not (it may still
    /// have ended at the peer's end of file).
    pub fn get(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }

    fn set(&self, why: String) {
        let _ = self.0.set(why);
    }
}

/// How long a line may be, and what a longer one does.
#[derive(Clone, Debug)]
pub(crate) struct LineLimit {
    /// The longest line accepted, in bytes.
    pub(crate) max_bytes: usize,
    /// `None`: a longer line is answered by a parse error and skipped (a
    /// server reading its client). Some: it ends the stream, recorded
    /// here, without reading the rest of it (a client reading a child
    /// server, where the lost message may be a response someone waits
    /// for).
    pub(crate) ends_stream: Option<StreamFault>,
}

impl Default for LineLimit {
    fn default() -> Self {
        LineLimit {
            max_bytes: MAX_LINE_BYTES,
            ends_stream: None,
        }
    }
}

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

/// Reads a stream's lines as frames, in the task that asks for them.
pub(crate) struct LineReader {
    reader: BufReader<Box<dyn AsyncRead + Unpin + Send>>,
    line: Vec<u8>,
    spin: Spin,
    limit: LineLimit,
    ended: bool,
}

/// What a line buffer starts with, and shrinks back to after a line
/// longer than the limit.
const LINE_CAPACITY: usize = 4096;

impl LineReader {
    fn new(reader: Box<dyn AsyncRead + Unpin + Send>, spin: Spin, limit: LineLimit) -> Self {
        LineReader {
            reader: BufReader::with_capacity(64 * 1024, reader),
            line: Vec::with_capacity(LINE_CAPACITY),
            spin,
            limit,
            ended: false,
        }
    }

    /// The next line's frame: text, or why it cannot be a message (too
    /// long, not UTF-8); `None` at the end of the stream, after a read
    /// error, or after a line too long for a stream that it ends. Blank
    /// lines are skipped.
    pub(crate) async fn next_frame(&mut self) -> Option<InboundFrame> {
        while !self.ended {
            self.line.clear();
            let max = self.limit.max_bytes;
            let stop_early = self.limit.ends_stream.is_some();
            let read = read_bounded_line(
                &mut self.reader,
                &mut self.line,
                &mut self.spin,
                max,
                stop_early,
            );
            match read.await {
                Ok(LineRead::Eof) => self.ended = true,
                Ok(LineRead::TooLong) => {
                    // The buffer grew towards the limit: give it back.
                    self.line = Vec::with_capacity(LINE_CAPACITY);
                    let reason = format!("message longer than {max} bytes, the limit");
                    if let Some(fault) = &self.limit.ends_stream {
                        tracing::warn!("{reason}: the stream is abandoned");
                        fault.set(reason);
                        self.ended = true;
                        continue;
                    }
                    return Some(InboundFrame::Unreadable(reason));
                }
                Ok(LineRead::Line) => {
                    return match String::from_utf8(std::mem::take(&mut self.line)) {
                        Ok(text) if text.trim().is_empty() => continue,
                        Ok(text) => Some(InboundFrame::Text(text)),
                        Err(_) => Some(InboundFrame::Unreadable(
                            "message is not valid UTF-8".into(),
                        )),
                    };
                }
                Err(e) => {
                    tracing::debug!("stdio read ended: {e}");
                    self.ended = true;
                }
            }
        }
        None
    }
}

enum LineRead {
    Line,
    TooLong,
    Eof,
}

/// Reads one line into `line`, keeping at most `max` bytes of it; with
/// `stop_early`, returns as soon as it is known to be too long rather than
/// reading (and dropping) the rest of it.
async fn read_bounded_line<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
    spin: &mut Spin,
    max: usize,
    stop_early: bool,
) -> std::io::Result<LineRead> {
    let mut too_long = false;
    loop {
        spin.fill(reader).await?;
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(if line.is_empty() && !too_long {
                LineRead::Eof
            } else {
                finish(line, too_long)
            });
        }
        let (chunk, found) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = found.unwrap_or(buf.len());
        reader.consume(used);
        if too_long && stop_early {
            return Ok(LineRead::TooLong);
        }
        if found.is_some() {
            return Ok(finish(line, too_long));
        }
    }
}

fn finish(line: &mut Vec<u8>, too_long: bool) -> LineRead {
    if too_long {
        return LineRead::TooLong;
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    LineRead::Line
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
    use crate::transport::FrameKind;

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
