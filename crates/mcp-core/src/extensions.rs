//! A small type map for per-session state that the layers above keep
//! (the server's log level and subscriptions, the host's bookkeeping ...)
//! and for what a transport attaches to the messages it reads (the
//! authenticated principal of an HTTP request ...).

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
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
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
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// Whether nothing was stored.
    pub fn is_empty(&self) -> bool {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }

    /// The value of type `T`, if one was stored.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&TypeId::of::<T>())
            .cloned()
            .and_then(|v| v.downcast::<T>().ok())
    }
}

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
