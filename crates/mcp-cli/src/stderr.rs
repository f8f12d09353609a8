//! What the commands say on stderr, for a reader that may go away: a
//! closed stderr (`mcp tools 2>&1 | head -c 10`) silences the messages
//! and the log, it does not end the process with a panic.

use std::io::Write as _;

/// Writes `text` and a newline to stderr; a reader that went away is
/// ignored, as is any other failure to write.
/// A progress bar on screen is kept below the text.
pub(crate) fn print_err(text: &str) {
    crate::progress::above(|| {
        let mut stderr = std::io::stderr().lock();
        let _ = stderr
            .write_all(text.as_bytes())
            .and_then(|()| stderr.write_all(b"\n"));
    });
}

/// Writes `text` to stderr as it is (a question on the same line as its
/// answer), flushed; failures are ignored.
/// A progress bar on screen is cleared first.
pub(crate) fn ask_err(text: &str) {
    crate::progress::clear();
    let mut stderr = std::io::stderr().lock();
    let _ = stderr
        .write_all(text.as_bytes())
        .and_then(|()| stderr.flush());
}

/// Stderr for the log: every write succeeds, written or not.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct QuietStderr;

impl std::io::Write for QuietStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = std::io::stderr().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}
