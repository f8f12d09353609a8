//! Waiting for the next line of a busy stream without sleeping.
//!
//! A reader that finds nothing to read parks its thread until the kernel
//! wakes it, and the writer at the other end pays for that wake-up. On a
//! stream where each message is answered quickly (a client and a server
//! calling each other one request at a time), those two costs are most of
//! a round trip. So when the last message came quickly, the reader first
//! keeps its thread awake for a short window, yielding to every other task
//! in between, and parks only if nothing comes in that window. A stream that
//! goes quiet costs one window at the end of a burst; an idle stream costs
//! nothing; a single-core machine never spins, since the writer could not
//! run meanwhile.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
#[cfg(unix)]
use std::sync::OnceLock;
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio::io::AsyncBufRead;

/// How long a reader stays awake for the next message: the window Linux
/// suggests for busy-polling a socket.
#[cfg(unix)]
pub(crate) const SPIN_WINDOW: Duration = Duration::from_micros(50);

/// Whether the next wait of one reader may spin, learned from its last.
#[derive(Debug)]
pub(crate) struct Spin {
    window: Duration,
    hot: bool,
}

impl Spin {
    /// A reader's spin state: spinning on machines with more than one core.
    #[cfg(unix)]
    pub(crate) fn new() -> Self {
        Self::with_window(if several_cores() {
            SPIN_WINDOW
        } else {
            Duration::ZERO
        })
    }

    /// A spin state with its own window (zero never spins).
    pub(crate) fn with_window(window: Duration) -> Self {
        Self { window, hot: false }
    }

    /// A spin state that never spins, for readers that cannot be read
    /// directly.
    pub(crate) fn never() -> Self {
        Self::with_window(Duration::ZERO)
    }

    /// Waits until `reader` has bytes buffered, reaches its end, or fails.
    /// Spins first when the previous wait was shorter than the window.
    pub(crate) async fn fill<R: AsyncBufRead + Unpin>(&mut self, reader: &mut R) -> io::Result<()> {
        if let Some(result) = try_fill(reader).await {
            return result;
        }
        let started = Instant::now();
        if self.hot {
            while started.elapsed() < self.window {
                tokio::task::yield_now().await;
                if let Some(result) = try_fill(reader).await {
                    return result;
                }
            }
        }
        let result = poll_fn(|cx| Pin::new(&mut *reader).poll_fill_buf(cx).map_ok(|_| ())).await;
        self.hot = started.elapsed() < self.window;
        result
    }
}

/// Polls `reader` for buffered bytes once: `None` when it would wait.
async fn try_fill<R: AsyncBufRead + Unpin>(reader: &mut R) -> Option<io::Result<()>> {
    poll_fn(|cx| {
        Poll::Ready(match Pin::new(&mut *reader).poll_fill_buf(cx) {
            Poll::Ready(result) => Some(result.map(|_| ())),
            Poll::Pending => None,
        })
    })
    .await
}

#[cfg(unix)]
fn several_cores() -> bool {
    static SEVERAL: OnceLock<bool> = OnceLock::new();
    *SEVERAL.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
}

/// A non-blocking pipe's read end that is also read directly, through a
/// duplicate of its descriptor, before the runtime's reactor is asked.
///
/// A reader spinning for the next message must see bytes the moment they
/// arrive. Through the reactor alone it would not: with several worker
/// threads, another worker may be the one waiting on the reactor, and the
/// spinning one would only learn of the bytes after that worker wakes.
#[cfg(unix)]
pub(crate) struct DirectPipe<R> {
    inner: R,
    direct: std::fs::File,
}

#[cfg(unix)]
impl<R: tokio::io::AsyncRead + std::os::fd::AsFd + Unpin> DirectPipe<R> {
    /// Wraps `inner`, which must already be in non-blocking mode (as tokio's
    /// pipes and child pipes are), or a direct read would block the thread.
    pub(crate) fn new(inner: R) -> io::Result<Self> {
        let direct = std::fs::File::from(inner.as_fd().try_clone_to_owned()?);
        Ok(Self { inner, direct })
    }
}

#[cfg(unix)]
impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for DirectPipe<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        use std::io::Read;
        loop {
            match (&self.direct).read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    use tokio::net::unix::pipe;

    /// A pipe whose read end is read directly, and its write end.
    fn direct_pipe() -> (BufReader<DirectPipe<pipe::Receiver>>, pipe::Sender) {
        let (tx, rx) = pipe::pipe().expect("a pipe");
        (
            BufReader::new(DirectPipe::new(rx).expect("a duplicate")),
            tx,
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_short_wait_makes_the_next_one_spin_and_a_long_one_does_not() {
        let (mut reader, mut tx) = direct_pipe();
        let mut spin = Spin::with_window(Duration::from_millis(500));
        assert!(!spin.hot, "a new reader has no wait to learn from");

        // Bytes written while the reader waits: a wait within the window.
        let writer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            tx.write_all(b"one\n").await.unwrap();
            tx
        });
        spin.fill(&mut reader).await.unwrap();
        assert_eq!(reader.buffer(), b"one\n");
        assert!(spin.hot, "a wait within the window is short");
        reader.consume(4);
        let mut tx = writer.await.unwrap();

        // The next bytes come while it spins, and it stays hot.
        let writer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            tx.write_all(b"two\n").await.unwrap();
            tx
        });
        spin.fill(&mut reader).await.unwrap();
        assert_eq!(reader.buffer(), b"two\n");
        assert!(spin.hot);
        reader.consume(4);
        let mut tx = writer.await.unwrap();

        // Bytes that come after the window: it spins, gives up, waits on
        // the reactor, and the next wait does not spin.
        let writer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(700)).await;
            tx.write_all(b"three\n").await.unwrap();
            tx
        });
        spin.fill(&mut reader).await.unwrap();
        assert_eq!(reader.buffer(), b"three\n");
        assert!(!spin.hot, "a wait longer than the window is long");
        reader.consume(6);
        drop(writer.await.unwrap());

        // The writer gone: the end of the stream, not a wait.
        spin.fill(&mut reader).await.unwrap();
        assert!(reader.buffer().is_empty());
    }

    #[tokio::test]
    async fn a_reader_that_never_spins_stays_cold() {
        let (mut reader, mut tx) = direct_pipe();
        let mut spin = Spin::never();
        tx.write_all(b"x").await.unwrap();
        spin.fill(&mut reader).await.unwrap();
        reader.consume(1);
        let writer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            tx.write_all(b"y").await.unwrap();
        });
        spin.fill(&mut reader).await.unwrap();
        assert_eq!(reader.buffer(), b"y");
        assert!(!spin.hot);
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn a_direct_pipe_with_nothing_to_read_waits_without_blocking_the_thread() {
        let (tx, rx) = pipe::pipe().unwrap();
        let mut direct = DirectPipe::new(rx).unwrap();
        let mut byte = [0u8; 1];
        // On this single-threaded runtime a blocking read would hang the
        // timer too; the read must yield instead.
        let waited = tokio::time::timeout(Duration::from_millis(50), direct.read(&mut byte)).await;
        assert!(waited.is_err(), "nothing was written, so the read waits");
        drop(tx);
        assert_eq!(direct.read(&mut byte).await.unwrap(), 0, "then EOF");
    }
}
