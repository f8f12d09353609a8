//! The controlling terminal (`/dev/tty`, not stdin, which may carry MCP
//! messages), read without blocking a thread, so that a question that
//! times out leaves nothing reading it. Where a person answers what the
//! host asks: approvals, sampling reviews.

use std::io::{Read as _, Write as _};

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// Whether the process has a controlling terminal to ask at: found out
/// once (a process keeps its terminal, or lack of one), since it is asked
/// on the way of requests.
pub(crate) fn reachable() -> bool {
    static REACHABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REACHABLE.get_or_init(|| open().is_ok())
}

fn open() -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/tty")
}

/// The controlling terminal, read without blocking a thread.
pub(crate) struct Tty(AsyncFd<std::fs::File>);

impl Tty {
    /// The terminal, opened anew.
    pub(crate) fn new() -> Result<Tty, String> {
        let tty = open().map_err(|e| format!("no terminal: {e}"))?;
        // SAFETY: a `File` owns its descriptor, open until it is dropped
        // with the `AsyncFd` that owns it, and always gives that one.
        unsafe { AsyncFd::register_with_interest(tty, Interest::READABLE) }
            .map(Tty)
            .map_err(|e| format!("the terminal cannot be read: {e}"))
    }

    /// Writes `text`.
    pub(crate) fn say(&self, text: &str) -> Result<(), String> {
        let mut tty = self.0.get_ref();
        tty.write_all(text.as_bytes())
            .and_then(|()| tty.flush())
            .map_err(|e| format!("the terminal cannot be written: {e}"))
    }

    /// The next line typed (the terminal hands over whole lines).
    pub(crate) async fn line(&self) -> Result<String, String> {
        let mut typed = Vec::new();
        loop {
            let mut ready = self
                .0
                .readable()
                .await
                .map_err(|e| format!("the terminal cannot be read: {e}"))?;
            let mut buffer = [0u8; 1024];
            let read = ready.try_io(|tty| tty.get_ref().read(&mut buffer));
            match read {
                Err(_would_block) => continue,
                Ok(Err(error)) => return Err(format!("the terminal cannot be read: {error}")),
                Ok(Ok(0)) => return Err("the terminal was closed".into()),
                Ok(Ok(n)) => {
                    typed.extend_from_slice(&buffer[..n]);
                    if let Some(end) = typed.iter().position(|b| *b == b'\n') {
                        typed.truncate(end);
                        return Ok(String::from_utf8_lossy(&typed).trim_end().to_owned());
                    }
                }
            }
        }
    }
}
