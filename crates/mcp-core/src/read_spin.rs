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
const SPIN_WINDOW: Duration = Duration::from_micros(50);

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
    /// Spins first when the previous wait was shorter than the window; a
    /// reader that never spins only waits, without timing its waits.
    pub(crate) async fn fill<R: AsyncBufRead + Unpin>(&mut self, reader: &mut R) -> io::Result<()> {
        if self.window.is_zero() {
            return wait(reader).await;
        }
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
        let result = wait(reader).await;
        self.hot = started.elapsed() < self.window;
        result
    }
}

/// Waits, parked, until `reader` has bytes buffered, reaches its end, or fails.
async fn wait<R: AsyncBufRead + Unpin>(reader: &mut R) -> io::Result<()> {
    poll_fn(|cx| Pin::new(&mut *reader).poll_fill_buf(cx).map_ok(|_| ())).await
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
    use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader, ReadBuf};
    use tokio::net::unix::pipe;
    use tokio::task::JoinHandle;

    /// A buffered reader that counts how often it is polled for bytes: a
    /// wait that spins polls it again and again, one that parks twice.
    struct Counted {
        inner: BufReader<DirectPipe<pipe::Receiver>>,
        polls: usize,
    }

    impl Counted {
        /// The polls since the last call.
        fn polls(&mut self) -> usize {
            std::mem::take(&mut self.polls)
        }
    }

    impl AsyncRead for Counted {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Pin::new(&mut self.inner).poll_read(cx, buf)
        }
    }

    impl AsyncBufRead for Counted {
        fn poll_fill_buf(
            self: Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> Poll<io::Result<&[u8]>> {
            let me = self.get_mut();
            me.polls += 1;
            Pin::new(&mut me.inner).poll_fill_buf(cx)
        }

        fn consume(self: Pin<&mut Self>, amt: usize) {
            Pin::new(&mut self.get_mut().inner).consume(amt)
        }
    }

    /// A pipe whose read end is read directly and counted, and its write end.
    fn direct_pipe() -> (Counted, pipe::Sender) {
        let (tx, rx) = pipe::pipe().expect("a pipe");
        let inner = BufReader::new(DirectPipe::new(rx).expect("a duplicate"));
        (Counted { inner, polls: 0 }, tx)
    }

    /// Writes `bytes` after `delay`, handing the write end back.
    fn write_later(
        mut tx: pipe::Sender,
        delay: Duration,
        bytes: &'static [u8],
    ) -> JoinHandle<pipe::Sender> {
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            tx.write_all(bytes).await.unwrap();
            tx
        })
    }

    /// Waits for `bytes`, written after `delay`, and consumes them;
    /// returns how often the reader was polled, and the write end.
    async fn wait_for(
        spin: &mut Spin,
        reader: &mut Counted,
        tx: pipe::Sender,
        delay: Duration,
        bytes: &'static [u8],
    ) -> (usize, pipe::Sender) {
        let writer = write_later(tx, delay, bytes);
        reader.polls();
        spin.fill(reader).await.unwrap();
        assert_eq!(reader.inner.buffer(), bytes);
        let polls = reader.polls();
        reader.consume(bytes.len());
        (polls, writer.await.unwrap())
    }

    /// At most the polls of a wait that parks: one that finds nothing,
    /// one after the wake-up (and one spare for a spurious wake).
    const PARKED: usize = 3;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_short_wait_makes_the_next_one_spin_and_a_long_one_does_not() {
        let (mut reader, tx) = direct_pipe();
        let mut spin = Spin::with_window(Duration::from_millis(500));
        let short = Duration::from_millis(5);

        // A new reader has no wait to learn from: it parks, and its wait
        // was within the window.
        let (polls, tx) = wait_for(&mut spin, &mut reader, tx, short, b"one\n").await;
        assert!(
            polls <= PARKED,
            "a first wait does not spin ({polls} polls)"
        );
        assert!(spin.hot, "a wait within the window is short");

        // So the next wait spins, and the bytes come while it does.
        let (polls, tx) = wait_for(&mut spin, &mut reader, tx, short, b"two\n").await;
        assert!(
            polls > PARKED,
            "a wait after a short one spins ({polls} polls)"
        );
        assert!(spin.hot);

        // Bytes that come after the window: it spins, gives up and parks.
        let long = Duration::from_millis(700);
        let (polls, tx) = wait_for(&mut spin, &mut reader, tx, long, b"three\n").await;
        assert!(polls > PARKED, "it spun first ({polls} polls)");
        assert!(!spin.hot, "a wait longer than the window is long");

        // And the wait after that one parks at once.
        let (polls, tx) = wait_for(&mut spin, &mut reader, tx, short, b"four\n").await;
        assert!(polls <= PARKED, "no spin after a long wait ({polls} polls)");

        // The writer gone: the end of the stream, not a wait.
        drop(tx);
        spin.fill(&mut reader).await.unwrap();
        assert!(reader.inner.buffer().is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reader_that_never_spins_parks_after_a_short_wait_too() {
        let (mut reader, tx) = direct_pipe();
        let mut spin = Spin::never();
        let short = Duration::from_millis(5);
        let (_, tx) = wait_for(&mut spin, &mut reader, tx, short, b"x").await;
        let (polls, _tx) = wait_for(&mut spin, &mut reader, tx, short, b"y").await;
        assert!(polls <= PARKED, "it parked ({polls} polls)");
        assert!(!spin.hot);
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
