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
//!
//! "Quickly" has to allow for the wake-ups themselves. While neither end
//! spins, every wait includes the other end's wake-up and its own, which on
//! a virtual machine can take longer than the window: judged by the window
//! alone, two such readers would never start spinning, though together they
//! would answer each other well within it. So a parked wait counts as
//! quick when it was within the window plus two wake-ups, and a spin that
//! catches nothing does not stop the next one when the bytes came soon
//! after (one end was descheduled for a moment). Spins that catch nothing
//! [`MISSES_IN_A_ROW`] times show the allowance is wrong for this stream,
//! and one whose bytes came later than the allowance shows the stream
//! went quiet: either way the reader stops spinning, and then judges by
//! the window alone for a number of waits that
//! doubles each time (up to [`MAX_STRICT_WAITS`]) and starts again from one
//! when a spin catches a message, so a stream whose messages come just too
//! late to catch wastes a window in many waits, not in each.

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

/// How many times the window a parked wait may take and still count as
/// quick: the window, plus a wake-up at each end of up to one and a half
/// windows.
const WAKE_ALLOWANCE: u32 = 4;

/// Spins in a row that catch nothing before the reader stops allowing for
/// wake-ups.
const MISSES_IN_A_ROW: u32 = 8;

/// The most waits judged by the window alone after spins that caught
/// nothing.
const MAX_STRICT_WAITS: u32 = 64;

/// Whether the next wait of one reader may spin, learned from its last.
#[derive(Debug)]
pub(crate) struct Spin {
    window: Duration,
    hot: bool,
    /// Spins in a row that caught nothing.
    misses: u32,
    /// Parked waits still to be judged by the window alone.
    strict_waits: u32,
    /// How many of them the next spin that catches nothing sets.
    next_strict_waits: u32,
}

/// How one wait ended, which is what a reader learns from.
#[derive(Clone, Copy, Debug)]
enum Waited {
    /// It spun, and the bytes came while it did.
    Caught,
    /// It spun the whole window, then parked: the bytes came after this
    /// long in all.
    Missed(Duration),
    /// It parked at once, and the bytes came after this long.
    Parked(Duration),
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
        Self {
            window,
            hot: false,
            misses: 0,
            strict_waits: 0,
            next_strict_waits: 1,
        }
    }

    /// A spin state that never spins, for readers that cannot be read
    /// directly.
    pub(crate) fn never() -> Self {
        Self::with_window(Duration::ZERO)
    }

    /// Waits until `reader` has bytes buffered, reaches its end, or fails.
    /// Spins first when the previous wait was quick (see the module's
    /// documentation); a reader that never spins only waits, without timing
    /// its waits.
    pub(crate) async fn fill<R: AsyncBufRead + Unpin>(&mut self, reader: &mut R) -> io::Result<()> {
        if self.window.is_zero() {
            return wait(reader).await;
        }
        if let Some(result) = try_fill(reader).await {
            return result;
        }
        let started = Instant::now();
        let spun = self.hot;
        if spun {
            while started.elapsed() < self.window {
                tokio::task::yield_now().await;
                if let Some(result) = try_fill(reader).await {
                    self.learn(Waited::Caught);
                    return result;
                }
            }
        }
        let result = wait(reader).await;
        let waited = started.elapsed();
        self.learn(if spun {
            Waited::Missed(waited)
        } else {
            Waited::Parked(waited)
        });
        result
    }

    /// Decides from how a wait ended whether the next one spins.
    fn learn(&mut self, waited: Waited) {
        let allowed = self.window * WAKE_ALLOWANCE;
        self.hot = match waited {
            Waited::Caught => {
                self.misses = 0;
                self.strict_waits = 0;
                self.next_strict_waits = 1;
                true
            }
            Waited::Missed(waited) => {
                self.misses += 1;
                if waited < allowed && self.misses < MISSES_IN_A_ROW {
                    true
                } else {
                    self.misses = 0;
                    self.strict_waits = self.next_strict_waits;
                    self.next_strict_waits = (self.next_strict_waits * 2).min(MAX_STRICT_WAITS);
                    false
                }
            }
            Waited::Parked(waited) if self.strict_waits > 0 => {
                self.strict_waits -= 1;
                waited < self.window
            }
            Waited::Parked(waited) => waited < allowed,
        };
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
        let window = Duration::from_millis(200);
        let mut spin = Spin::with_window(window);
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

        // Bytes that come long after the window, beyond what wake-ups
        // explain: it spins, gives up and parks.
        let long = window * WAKE_ALLOWANCE + Duration::from_millis(100);
        let (polls, tx) = wait_for(&mut spin, &mut reader, tx, long, b"three\n").await;
        assert!(polls > PARKED, "it spun first ({polls} polls)");
        assert!(!spin.hot, "a spin that caught nothing stops it");

        // And the wait after that one parks at once.
        let (polls, tx) = wait_for(&mut spin, &mut reader, tx, short, b"four\n").await;
        assert!(polls <= PARKED, "no spin after a long wait ({polls} polls)");

        // The writer gone: the end of the stream, not a wait.
        drop(tx);
        spin.fill(&mut reader).await.unwrap();
        assert!(reader.inner.buffer().is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn bytes_a_little_after_the_window_keep_the_reader_spinning() {
        let (mut reader, tx) = direct_pipe();
        let window = Duration::from_millis(100);
        let mut spin = Spin::with_window(window);
        // After the window, well within the allowance for wake-ups.
        let late = window * 2;

        // A parked wait that long still counts as quick.
        let (polls, tx) = wait_for(&mut spin, &mut reader, tx, late, b"one\n").await;
        assert!(
            polls <= PARKED,
            "a first wait does not spin ({polls} polls)"
        );
        assert!(spin.hot, "a wait within the allowance is quick");

        // So the next wait spins, misses, parks; the bytes come soon after.
        let (polls, tx) = wait_for(&mut spin, &mut reader, tx, late, b"two\n").await;
        assert!(polls > PARKED, "it spun first ({polls} polls)");
        assert!(spin.hot, "a spin that missed by little does not stop it");

        // And the next wait spins again.
        let short = Duration::from_millis(5);
        let (polls, _tx) = wait_for(&mut spin, &mut reader, tx, short, b"three\n").await;
        assert!(polls > PARKED, "it spins after a near miss ({polls} polls)");
        assert!(spin.hot);
    }

    /// Spins that each catch nothing, with the bytes `late`: all but the
    /// last are forgiven.
    fn miss_in_a_row(spin: &mut Spin, late: Duration) {
        for missed in 1..=MISSES_IN_A_ROW {
            spin.learn(Waited::Missed(late));
            assert_eq!(spin.hot, missed < MISSES_IN_A_ROW, "after {missed} misses");
        }
    }

    /// How many parked waits of `waited` it takes `spin` to spin again.
    fn parked_waits_until_hot(spin: &mut Spin, waited: Duration) -> u32 {
        (1..=MAX_STRICT_WAITS + 1)
            .find(|_| {
                spin.learn(Waited::Parked(waited));
                spin.hot
            })
            .expect("it spins again within the strict waits")
    }

    #[test]
    fn a_quick_wait_allows_for_two_wake_ups_and_a_moments_delay() {
        let window = Duration::from_micros(50);
        let allowed = window * WAKE_ALLOWANCE;
        let mut spin = Spin::with_window(window);
        spin.learn(Waited::Parked(allowed - Duration::from_micros(1)));
        assert!(spin.hot, "both ends may have been woken: quick");
        spin.learn(Waited::Caught);
        assert!(spin.hot, "a catch keeps it spinning");
        spin.learn(Waited::Missed(allowed - Duration::from_micros(1)));
        assert!(spin.hot, "bytes soon after a miss: a moment's delay");
        spin.learn(Waited::Caught);
        spin.learn(Waited::Missed(allowed));
        assert!(!spin.hot, "bytes long after a miss stop it");

        let mut spin = Spin::with_window(window);
        spin.learn(Waited::Parked(allowed));
        assert!(!spin.hot, "a longer wait is not quick");
    }

    #[test]
    fn spins_that_keep_missing_count_only_the_window_for_a_doubling_number_of_waits() {
        let window = Duration::from_micros(50);
        let late = window * 2;
        let mut spin = Spin::with_window(window);
        // Messages that come just too late to catch: the spins miss, and
        // each time the allowance is kept away for twice as many waits.
        let mut strict = Vec::new();
        for _ in 0..9 {
            miss_in_a_row(&mut spin, late);
            strict.push(parked_waits_until_hot(&mut spin, late) - 1);
        }
        assert_eq!(strict, [1, 2, 4, 8, 16, 32, 64, 64, 64]);

        // A wait within the window itself counts even then.
        miss_in_a_row(&mut spin, late);
        spin.learn(Waited::Parked(window / 2));
        assert!(spin.hot);

        // A catch shows spinning works here: the next misses cost one wait.
        spin.learn(Waited::Caught);
        miss_in_a_row(&mut spin, late);
        assert_eq!(parked_waits_until_hot(&mut spin, late), 2);
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
