//! Lines of a byte stream read as frames: newline-delimited UTF-8 JSON,
//! each line at most a set length (a longer one is answered as
//! unreadable, or ends the stream), read in the task that asks for it.

use std::sync::{Arc, OnceLock};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::frame::InboundFrame;
use crate::read_spin::Spin;

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
    pub(crate) fn new(
        reader: Box<dyn AsyncRead + Unpin + Send>,
        spin: Spin,
        limit: LineLimit,
    ) -> Self {
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
