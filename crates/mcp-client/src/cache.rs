//! Lists kept as long as the server's cache hint (`ttlMs`) allows, and
//! forgotten as soon as the server says the list changed.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_core::sync::MutexExt as _;
use mcp_schema::methods;

type Entry = (Instant, Arc<dyn Any + Send + Sync>);

/// Whole lists by listing method.
#[derive(Default)]
pub(crate) struct ListCache {
    entries: Mutex<HashMap<&'static str, Entry>>,
}

impl ListCache {
    /// The cached list of `method`, if still fresh.
    pub(crate) fn get<T: Clone + Send + Sync + 'static>(&self, method: &str) -> Option<Vec<T>> {
        let mut entries = self.entries.locked();
        let (expires, value) = entries.get(method)?;
        if *expires <= Instant::now() {
            entries.remove(method);
            return None;
        }
        value.downcast_ref::<Vec<T>>().cloned()
    }

    /// Keeps `items` for `ttl`.
    pub(crate) fn put<T: Send + Sync + 'static>(
        &self,
        method: &'static str,
        items: Vec<T>,
        ttl: Duration,
    ) {
        let entry: Entry = (Instant::now() + ttl, Arc::new(items));
        self.entries.locked().insert(method, entry);
    }

    /// Forgets everything.
    pub(crate) fn clear(&self) {
        self.entries.locked().clear();
    }

    /// Forgets the list a `list_changed` notification is about.
    pub(crate) fn on_notification(&self, method: &str) {
        let stale: &[&str] = match method {
            methods::NOTIFICATION_TOOLS_LIST_CHANGED => &[methods::TOOLS_LIST],
            methods::NOTIFICATION_PROMPTS_LIST_CHANGED => &[methods::PROMPTS_LIST],
            methods::NOTIFICATION_RESOURCES_LIST_CHANGED => {
                &[methods::RESOURCES_LIST, methods::RESOURCES_TEMPLATES_LIST]
            }
            _ => return,
        };
        let mut entries = self.entries.locked();
        for method in stale {
            entries.remove(method);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_list_changed_forgets_them() {
        let cache = ListCache::default();
        cache.put(methods::TOOLS_LIST, vec![1u8, 2], Duration::from_secs(60));
        cache.put(methods::PROMPTS_LIST, vec![3u8], Duration::ZERO);
        assert_eq!(cache.get::<u8>(methods::TOOLS_LIST), Some(vec![1, 2]));
        assert_eq!(cache.get::<u8>(methods::PROMPTS_LIST), None);
        cache.on_notification(methods::NOTIFICATION_PROMPTS_LIST_CHANGED);
        assert!(cache.get::<u8>(methods::TOOLS_LIST).is_some());
        cache.on_notification(methods::NOTIFICATION_TOOLS_LIST_CHANGED);
        assert_eq!(cache.get::<u8>(methods::TOOLS_LIST), None);
    }
}
