//! This process's stdin and stdout as non-blocking pipes, when they are
//! pipes (as a server launched by a client has them).
//!
//! The runtime's reactor then reads and writes them directly, where tokio's
//! own `stdin()` and `stdout()` hand every read and every write to a
//! blocking thread and back. The descriptors are duplicated, so fds 0 and 1
//! stay open; blocking mode, which lives in the open file shared with
//! whoever else holds it, is restored when the transport lets go of them.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::unix::pipe;

/// stdin as a non-blocking reader, when it is a pipe.
pub(crate) fn stdin() -> Option<Restoring<pipe::Receiver>> {
    let file = duplicate_pipe(io::stdin().as_fd())?;
    pipe::Receiver::from_file(file)
        .ok()
        .map(|pipe| Restoring(Some(pipe)))
}

/// stdout as a non-blocking writer, when it is a pipe.
pub(crate) fn stdout() -> Option<Restoring<pipe::Sender>> {
    let file = duplicate_pipe(io::stdout().as_fd())?;
    pipe::Sender::from_file(file)
        .ok()
        .map(|pipe| Restoring(Some(pipe)))
}

/// A duplicate of `fd` when it is a pipe (a terminal, a regular file or a
/// socket is left to tokio's own blocking-thread stdio). Making it a tokio
/// pipe end sets `O_NONBLOCK`.
fn duplicate_pipe(fd: BorrowedFd<'_>) -> Option<File> {
    let file = File::from(fd.try_clone_to_owned().ok()?);
    file.metadata().ok()?.file_type().is_fifo().then_some(file)
}

/// A pipe end that puts its file back in blocking mode when dropped.
pub(crate) struct Restoring<P: IntoBlocking>(Option<P>);

/// A pipe end that can give its descriptor back in blocking mode.
pub(crate) trait IntoBlocking {
    /// Deregisters the pipe and clears `O_NONBLOCK` on its file.
    fn restore_blocking(self);
}

impl IntoBlocking for pipe::Receiver {
    fn restore_blocking(self) {
        let _ = self.into_blocking_fd();
    }
}

impl IntoBlocking for pipe::Sender {
    fn restore_blocking(self) {
        let _ = self.into_blocking_fd();
    }
}

impl<P: IntoBlocking> Restoring<P> {
    fn pipe(&mut self) -> &mut P {
        self.0.as_mut().expect("the pipe is held until drop")
    }
}

impl<P: IntoBlocking + AsFd> AsFd for Restoring<P> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0
            .as_ref()
            .expect("the pipe is held until drop")
            .as_fd()
    }
}

impl<P: IntoBlocking> Drop for Restoring<P> {
    fn drop(&mut self) {
        if let Some(pipe) = self.0.take() {
            pipe.restore_blocking();
        }
    }
}

impl AsyncRead for Restoring<pipe::Receiver> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(self.pipe()).poll_read(cx, buf)
    }
}

impl AsyncWrite for Restoring<pipe::Sender> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(self.pipe()).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(self.pipe()).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(self.pipe()).poll_shutdown(cx)
    }
}
