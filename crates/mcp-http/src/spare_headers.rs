//! A spare header map per thread: a request's map, once the request is
//! answered, becomes the map of a later JSON response instead of being
//! freed while a new one is allocated.
//!
//! hyper reads a connection's next request into the map of the response
//! before it, so a response whose map once held a request's headers also
//! has room for the next request's: the map is not grown either.

use std::cell::Cell;

use axum::http::HeaderMap;

/// The most headers a kept map may have room for; a larger one (a client
/// sent many headers) is freed rather than kept.
const MAX_KEPT: usize = 32;

thread_local! {
    static SPARE: Cell<Option<HeaderMap>> = const { Cell::new(None) };
}

/// An empty map: the spare one of this thread if there is one.
pub(crate) fn take() -> HeaderMap {
    SPARE.with(Cell::take).unwrap_or_default()
}

/// Keeps `map`, emptied, as this thread's spare, unless it is too large or
/// there is one already.
pub(crate) fn give_back(mut map: HeaderMap) {
    if map.capacity() > MAX_KEPT {
        return;
    }
    map.clear();
    SPARE.with(|spare| {
        let kept = spare.take();
        spare.set(Some(kept.unwrap_or(map)));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderValue, header};

    fn with_headers(count: usize) -> HeaderMap {
        let mut map = HeaderMap::new();
        for i in 0..count {
            let name = header::HeaderName::try_from(format!("x-header-{i}")).unwrap();
            map.insert(name, HeaderValue::from_static("value"));
        }
        map
    }

    /// Runs `check` on a thread of its own, whose spare no other test sees.
    fn on_a_new_thread(check: fn()) {
        std::thread::spawn(check).join().unwrap();
    }

    #[test]
    fn a_given_back_map_comes_back_empty_with_its_room() {
        on_a_new_thread(|| {
            assert_eq!(take().capacity(), 0, "no spare yet: a new, unallocated map");
            let map = with_headers(9);
            let room = map.capacity();
            give_back(map);
            let reused = take();
            assert!(reused.is_empty());
            assert_eq!(reused.capacity(), room);
            assert_eq!(take().capacity(), 0, "one spare, taken once");
        });
    }

    #[test]
    fn one_map_is_kept_and_a_large_one_is_not() {
        on_a_new_thread(|| {
            give_back(with_headers(100));
            assert_eq!(take().capacity(), 0, "too large to keep");
            let first = with_headers(3);
            let first_room = first.capacity();
            give_back(first);
            give_back(with_headers(9));
            assert_eq!(
                take().capacity(),
                first_room,
                "the first kept, the second freed"
            );
        });
    }
}
