//! Giving freed memory back to the system on mimalloc.
//!
//! mimalloc keeps the blocks a thread frees in that thread's pages, for
//! reuse, and a block freed by another thread waits in its owner's pages
//! until the owner looks again: a worker that has gone idle never does.
//! The messages flooding a session's stream are written on one worker and
//! freed on whichever ends the session, so without a collection the
//! memory stays with the process after the sessions are gone. Each worker
//! of a multi-threaded runtime therefore collects its heap as it goes
//! idle, returning the pages it no longer uses, at most once a second: a
//! collection takes from a few to a few hundred microseconds. A worker
//! that goes idle sooner owes its collection: a sweeper thread wakes the
//! workers a second later, with a task each, so that the last frees of a
//! burst come back even when no request follows.

use mcp_core::sync::MutexExt as _;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often one worker collects, at most.
const EVERY: Duration = Duration::from_secs(1);

unsafe extern "C" {
    /// mimalloc's own (from the C library the `mimalloc` crate links):
    /// frees what the calling thread's heap keeps but does not use;
    /// `force`, at once, returning free pages to the system.
    fn mi_collect(force: bool);
}

/// For `on_thread_park`: the worker's memory back to the system, if it
/// last did so a second ago or more.
pub(crate) fn collect_when_idle() {
    thread_local! {
        static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
    }
    let now = Instant::now();
    if LAST
        .get()
        .is_some_and(|last| now.duration_since(last) < EVERY)
    {
        owe_collection();
        return;
    }
    LAST.set(Some(now));
    // SAFETY: it takes no pointer and touches only the calling thread's
    // heap and mimalloc's own shared state, under its own locks.
    unsafe { mi_collect(true) };
}

/// Set while some worker went idle without collecting and no sweep is
/// under way; [`SWEEP`] wakes the sweeper when it is set.
static OWED: AtomicBool = AtomicBool::new(false);
/// What the sweeper waits on.
static SWEEP: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());

/// Notes that the calling worker went idle without collecting; the first
/// such note since the last sweep wakes the sweeper.
fn owe_collection() {
    if !OWED.load(Ordering::Relaxed) && !OWED.swap(true, Ordering::AcqRel) {
        let _guard = SWEEP.0.locked();
        SWEEP.1.notify_one();
    }
}

/// Starts the thread that, a second after a worker of `runtime` went idle
/// without collecting, runs a short task on each worker so that each goes
/// idle again, now collecting.
pub(crate) fn sweep_idle_workers(runtime: tokio::runtime::Handle) {
    let workers = runtime.metrics().num_workers();
    let sweeper = move || {
        loop {
            let mut guard = SWEEP.0.locked();
            while !OWED.load(Ordering::Acquire) {
                guard = SWEEP.1.wait(guard).unwrap_or_else(PoisonError::into_inner);
            }
            drop(guard);
            std::thread::sleep(EVERY);
            OWED.store(false, Ordering::Release);
            // Each task holds its worker a moment, so that the next one
            // is taken by a worker still idle.
            for _ in 0..workers {
                runtime.spawn(async { std::thread::sleep(Duration::from_micros(200)) });
            }
        }
    };
    let started = std::thread::Builder::new()
        .name("memory-sweeper".into())
        .spawn(sweeper);
    if let Err(error) = started {
        tracing::debug!("no memory sweeper: {error}");
    }
}
