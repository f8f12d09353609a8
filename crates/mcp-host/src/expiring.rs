//! Values a client comes back for by a token (a `requestState`), each
//! kept a while and taken once, at most so many at a time.

use mcp_core::sync::MutexExt as _;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Values by token, each kept for `ttl` and taken once; beyond `max`, the
/// oldest go first.
pub(crate) struct Expiring<T> {
    entries: Mutex<HashMap<String, (Instant, T)>>,
    prefix: &'static str,
    ttl: Duration,
    max: usize,
}

impl<T> Expiring<T> {
    /// Tokens starting with `prefix`; values kept for `ttl`, at most `max`.
    pub(crate) fn new(prefix: &'static str, ttl: Duration, max: usize) -> Self {
        Expiring {
            entries: Mutex::default(),
            prefix,
            ttl,
            max,
        }
    }

    /// Keeps `value`; the token that takes it back.
    pub(crate) fn keep(&self, value: T) -> String {
        let token = format!("{}{:032x}", self.prefix, rand::random::<u128>());
        let mut entries = self.entries.locked();
        let now = Instant::now();
        entries.retain(|_, (since, _)| now.duration_since(*since) < self.ttl);
        if entries.len() >= self.max
            && let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, (since, _))| *since)
                .map(|(token, _)| token.clone())
        {
            entries.remove(&oldest);
        }
        entries.insert(token.clone(), (now, value));
        token
    }

    /// Whether `token` names a value kept now (without taking it).
    pub(crate) fn holds(&self, token: &str) -> bool {
        let entries = self.entries.locked();
        entries
            .get(token)
            .is_some_and(|(since, _)| since.elapsed() < self.ttl)
    }

    /// Changes the value `token` names, while it is kept.
    pub(crate) fn update(&self, token: &str, change: impl FnOnce(&mut T)) {
        if let Some((_, value)) = self.entries.locked().get_mut(token) {
            change(value);
        }
    }

    /// The value `token` names, once, while it is kept.
    pub(crate) fn take(&self, token: &str) -> Option<T> {
        let mut entries = self.entries.locked();
        entries
            .remove(token)
            .filter(|(since, _)| since.elapsed() < self.ttl)
            .map(|(_, value)| value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_taken_once_and_the_oldest_go_beyond_the_bound() {
        let kept = Expiring::new("t:", Duration::from_secs(60), 2);
        let first = kept.keep(1);
        assert!(first.starts_with("t:"));
        let second = kept.keep(2);
        let third = kept.keep(3);
        assert_eq!(kept.take(&first), None, "the oldest went");
        assert!(kept.holds(&second) && !kept.holds(&first) && !kept.holds("t:forged"));
        assert_eq!(kept.take(&second), Some(2));
        assert_eq!(kept.take(&second), None, "taken once");
        assert_eq!(kept.take(&third), Some(3));
        let short = Expiring::new("t:", Duration::ZERO, 2);
        let gone = short.keep(1);
        assert_eq!(short.take(&gone), None, "expired");
    }
}
