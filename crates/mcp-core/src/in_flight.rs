//! The requests a session is handling: their cancellation, their ids (one
//! request per id at a time), the limit on how many run at once, and the
//! tasks they run on.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use foldhash::HashMap;
use mcp_schema::jsonrpc::{ErrorObject, RequestId};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::request_id_in_use;
use crate::sync::MutexExt as _;

/// The requests of one session.
pub(crate) enum InFlight {
    /// A session for many requests, side by side.
    Many(Concurrent),
    /// A session for a single message (a stateless HTTP request): its
    /// request needs no record, limit or tracking, and is cancelled when
    /// the session closes. Whether it came yet.
    One(AtomicBool),
}

/// What a session for many requests keeps of them.
pub(crate) struct Concurrent {
    requests: InFlightMap,
    tracker: TaskTracker,
    limiter: Arc<Semaphore>,
}

/// The requests being handled, shared with their entries.
type InFlightMap = Arc<Mutex<Requests>>;

/// The requests being handled, under one lock.
#[derive(Default)]
struct Requests {
    /// Their cancellation tokens, by id.
    by_id: HashMap<RequestId, CancellationToken>,
    /// Set once every request was cancelled: one that starts later is
    /// cancelled at once.
    cancelled_all: bool,
}

/// A request's hold on its session while it runs, given up when dropped
/// however the request ends (answered, cancelled, or its future dropped).
pub(crate) struct Running {
    /// Cancelled when the request is (or its session closes).
    pub(crate) cancel: CancellationToken,
    _entry: Option<InFlightEntry>,
    permit: Permit,
}

/// A request's share of its session's limit on requests at once.
enum Permit {
    NotNeeded,
    Held {
        _permit: OwnedSemaphorePermit,
    },
    /// None was free when the request came.
    Waiting(Arc<Semaphore>),
}

/// A request's place in the in-flight map.
struct InFlightEntry {
    map: InFlightMap,
    id: RequestId,
}

impl Drop for InFlightEntry {
    fn drop(&mut self) {
        self.map.locked().by_id.remove(&self.id);
    }
}

impl InFlight {
    /// Requests for a session that takes many, at most `max` at once.
    pub(crate) fn many(max: usize) -> Self {
        InFlight::Many(Concurrent {
            requests: Arc::default(),
            tracker: TaskTracker::new(),
            limiter: Arc::new(Semaphore::new(max)),
        })
    }

    /// The request of a session for one message.
    pub(crate) fn one() -> Self {
        InFlight::One(AtomicBool::new(false))
    }

    /// Starts request `id`: an id already in flight is refused (-32600),
    /// as is a second request in a session for one; one that starts after
    /// [`InFlight::cancel_all`] starts cancelled. The request may run once
    /// [`Running::admitted`].
    pub(crate) fn start(
        &self,
        id: &RequestId,
        closed: &CancellationToken,
    ) -> Result<Running, ErrorObject> {
        match self {
            InFlight::One(came) => {
                if came.swap(true, Ordering::AcqRel) {
                    return Err(ErrorObject::invalid_request(
                        "this session handles a single request",
                    ));
                }
                Ok(Running {
                    cancel: closed.clone(),
                    _entry: None,
                    permit: Permit::NotNeeded,
                })
            }
            InFlight::Many(concurrent) => {
                // Not a child of `closed`, which would cost a lock of the
                // session's token at each start and end: closing the
                // session cancels what is in flight, and what starts
                // after (seen under the map's lock, not the token's).
                let cancel = CancellationToken::new();
                {
                    let mut requests = concurrent.requests.locked();
                    if requests.by_id.contains_key(id) {
                        return Err(request_id_in_use(id));
                    }
                    requests.by_id.insert(id.clone(), cancel.clone());
                    if requests.cancelled_all {
                        cancel.cancel();
                    }
                }
                let entry = InFlightEntry {
                    map: Arc::clone(&concurrent.requests),
                    id: id.clone(),
                };
                let permit = match Arc::clone(&concurrent.limiter).try_acquire_owned() {
                    Ok(permit) => Permit::Held { _permit: permit },
                    Err(_) => Permit::Waiting(Arc::clone(&concurrent.limiter)),
                };
                Ok(Running {
                    cancel,
                    _entry: Some(entry),
                    permit,
                })
            }
        }
    }

    /// Cancels request `id` if it is in flight; whether it was.
    pub(crate) fn cancel(&self, id: &RequestId) -> bool {
        match self {
            InFlight::Many(concurrent) => concurrent
                .requests
                .locked()
                .by_id
                .get(id)
                .map(CancellationToken::cancel)
                .is_some(),
            InFlight::One(_) => false,
        }
    }

    /// Cancels every request in flight, and those that start later.
    pub(crate) fn cancel_all(&self) {
        if let InFlight::Many(concurrent) = self {
            let mut requests = concurrent.requests.locked();
            requests.cancelled_all = true;
            requests.by_id.values().for_each(CancellationToken::cancel);
        }
    }

    /// What tracks the tasks of the requests, so the session can wait for
    /// them (a session for one message has none).
    pub(crate) fn tracker(&self) -> Option<&TaskTracker> {
        match self {
            InFlight::Many(concurrent) => Some(&concurrent.tracker),
            InFlight::One(_) => None,
        }
    }

    /// Runs a request's `work` on a task of its own unless it finishes on
    /// its first poll (most handlers do), so the caller goes on.
    pub(crate) fn run_aside(&self, work: impl Future<Output = ()> + Send + 'static) {
        let mut work = Box::pin(work);
        if futures::FutureExt::now_or_never(&mut work).is_some() {
            return;
        }
        match self {
            InFlight::Many(concurrent) => {
                concurrent.tracker.spawn(work);
            }
            InFlight::One(_) => {
                tokio::spawn(work);
            }
        }
    }

    /// Takes no more requests' tasks.
    pub(crate) fn close(&self) {
        if let InFlight::Many(concurrent) = self {
            concurrent.tracker.close();
        }
    }

    /// Waits for the requests' tasks, once closed.
    pub(crate) async fn wait(&self) {
        if let InFlight::Many(concurrent) = self {
            concurrent.tracker.wait().await;
        }
    }
}

impl Running {
    /// Waits, if the session's limit is reached, until the request may run;
    /// `false` when the session shuts down first.
    pub(crate) async fn admitted(&mut self) -> bool {
        if let Permit::Waiting(limiter) = &self.permit {
            // Rare, so boxed: the future of every request stays small.
            match Box::pin(Arc::clone(limiter).acquire_owned()).await {
                Ok(permit) => self.permit = Permit::Held { _permit: permit },
                Err(_) => return false,
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancelling_all_reaches_the_requests_in_flight_and_those_that_start_later() {
        let in_flight = InFlight::many(8);
        let closed = CancellationToken::new();
        let before = in_flight.start(&RequestId::Number(1), &closed).unwrap();
        assert!(!before.cancel.is_cancelled());
        // The same id again is refused while the first runs.
        assert!(in_flight.start(&RequestId::Number(1), &closed).is_err());

        in_flight.cancel_all();
        assert!(before.cancel.is_cancelled());
        let after = in_flight.start(&RequestId::Number(2), &closed).unwrap();
        assert!(after.cancel.is_cancelled());

        // An ended request frees its id; the others stay in flight.
        drop(before);
        let again = in_flight.start(&RequestId::Number(1), &closed).unwrap();
        assert!(again.cancel.is_cancelled());
        assert!(in_flight.cancel(&RequestId::Number(2)));
        assert!(!in_flight.cancel(&RequestId::Number(3)));
    }
}
