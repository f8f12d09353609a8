//! A small type map for per-session state that the layers above keep
//! (the server's log level and subscriptions, the host's bookkeeping ...)
//! and for what a transport attaches to the messages it reads (the
//! authenticated principal of an HTTP request ...).

use crate::sync::MutexExt as _;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Values keyed by their type, shared by everything that holds the session.
#[derive(Default)]
pub struct Extensions {
    map: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl Extensions {
    /// The value of type `T`, created by `init` on first use.
    pub fn get_or_insert_with<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Arc<T> {
        let mut map = self.map.locked();
        let entry = map
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(init()));
        // The entry under TypeId::of::<T>() always holds a T.
        Arc::clone(entry)
            .downcast::<T>()
            .unwrap_or_else(|_| unreachable!("type map holds the wrong type"))
    }

    /// Stores `value`, replacing any earlier value of type `T`.
    pub fn insert<T: Any + Send + Sync>(&self, value: T) {
        let mut map = self.map.locked();
        map.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// Whether nothing was stored.
    pub fn is_empty(&self) -> bool {
        self.map.locked().is_empty()
    }

    /// The value of type `T`, if one was stored.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let map = self.map.locked();
        map.get(&TypeId::of::<T>())
            .cloned()
            .and_then(|v| v.downcast::<T>().ok())
    }
}

/// Who a message speaks for, as the layer that authenticated it names the
/// caller: an opaque key (for a bearer token: its issuer, subject and
/// client). What a caller creates that others could reach by its id (a
/// legacy HTTP session, a 2026-07-28 task) belongs to its owner; a caller
/// with another owner, or with none, is answered as if it did not exist.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Owner(Arc<str>);

impl Owner {
    /// The owner named by `key`.
    pub fn new(key: impl Into<Arc<str>>) -> Self {
        Owner(key.into())
    }

    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The transport's name for a session (a legacy HTTP session's id): the
/// same on every instance that serves the session, so what the session
/// owns on one of them (its tasks) stays its own wherever it continues.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SessionName(pub Arc<str>);

/// Marks a session that leaves this process but goes on elsewhere (an idle
/// copy of a session shared by several instances): what it owns here
/// (running tasks) is kept until it expires on its own.
#[derive(Clone, Copy, Debug, Default)]
pub struct ContinuesElsewhere;

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Extensions { .. }")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_per_type() {
        let ext = Extensions::default();
        assert!(ext.get::<u32>().is_none());
        let a = ext.get_or_insert_with(|| 7u32);
        let b = ext.get_or_insert_with(|| 9u32);
        assert_eq!((*a, *b), (7, 7));
        assert_eq!(*ext.get_or_insert_with(|| String::from("s")), "s");
        ext.insert(8u32);
        assert_eq!(ext.get::<u32>().as_deref(), Some(&8));
        assert!(!ext.is_empty());
    }
}
