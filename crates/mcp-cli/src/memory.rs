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
//! collection takes from a few to a few hundred microseconds. What others
//! free into the pages of a worker that stays idle comes back when that
//! worker next runs.

use std::cell::Cell;
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
        return;
    }
    LAST.set(Some(now));
    // SAFETY: it takes no pointer and touches only the calling thread's
    // heap and mimalloc's own shared state, under its own locks.
    unsafe { mi_collect(true) };
}
