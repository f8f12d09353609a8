//! Watching the allowed directories (with `--watch`, or while a client
//! is subscribed to a file): changes, debounced,
//! become `notifications/resources/updated` for subscribers of the file
//! (and of its directory when entries come and go) and, when the
//! top-level entries change, `notifications/resources/list_changed`.
//! Events pass the same containment and deny checks as requests.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use mcp_server::Server;
use notify_debouncer_full::notify::event::ModifyKind;
use notify_debouncer_full::notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

use super::State;
use super::resources::listed;
use super::scope::Located;
use super::uri::file_uri;
use mcp_core::sync::MutexExt as _;

/// A running watcher; dropping it stops watching.
pub(crate) type Watcher = Debouncer<RecommendedWatcher, RecommendedCache>;

/// How long events are gathered before they are sent.
const DEBOUNCE: Duration = Duration::from_millis(200);

/// Starts watching every allowed directory; notifications go out through
/// `server`. Needs a Tokio runtime.
pub(crate) fn start(state: Arc<State>, server: Server) -> Result<Watcher, String> {
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| "watching needs a Tokio runtime".to_owned())?;
    let handler_state = Arc::clone(&state);
    let mut debouncer = new_debouncer(DEBOUNCE, None, move |result: DebounceEventResult| {
        let Ok(events) = result else { return };
        let _entered = runtime.enter();
        let state = &handler_state;
        let mut updated = BTreeSet::new();
        let mut top_level_changed = false;
        for event in &events {
            let structural = matches!(
                event.kind,
                EventKind::Create(_)
                    | EventKind::Remove(_)
                    | EventKind::Modify(ModifyKind::Name(_))
            );
            for path in &event.paths {
                let Some(located) = state.scope.watched(path) else {
                    continue;
                };
                updated.insert(file_uri(&state.scope.display(&located)));
                if structural {
                    let parent = Located {
                        root: located.root,
                        relative: located
                            .relative
                            .parent()
                            .map(Into::into)
                            .unwrap_or_default(),
                    };
                    updated.insert(file_uri(&state.scope.display(&parent)));
                    top_level_changed |= located.relative.components().count() <= 1;
                }
            }
        }
        for uri in &updated {
            server.notify_resource_updated(uri);
        }
        if top_level_changed {
            refresh(state, &server);
        }
    })
    .map_err(|e| format!("cannot watch: {e}"))?;
    for allowed in state.scope.allowed() {
        debouncer
            .watch(&allowed.path, RecursiveMode::Recursive)
            .map_err(|e| format!("cannot watch {}: {e}", allowed.path.display()))?;
    }
    Ok(debouncer)
}

/// Without `--watch`: watches while some client is subscribed to a file
/// resource, and stops when none is (run on every change of the
/// subscriptions). With `--watch` the watcher runs from the start.
pub(crate) fn watch_while_subscribed(state: &Arc<State>, server: &Server) {
    let wanted = server
        .subscribed_resources()
        .iter()
        .any(|uri| uri.starts_with("file://"));
    let mut watcher = state.watcher.locked();
    if wanted && watcher.is_none() {
        match start(Arc::clone(state), server.clone()) {
            Ok(started) => *watcher = Some(started),
            Err(error) => tracing::warn!("subscribed files are not watched: {error}"),
        }
    } else if !wanted {
        *watcher = None;
    }
}

/// Brings `resources/list` up to date with the top-level entries.
fn refresh(state: &Arc<State>, server: &Server) {
    let now = listed(state);
    let uris: Vec<String> = now.iter().map(|r| r.resource().uri.clone()).collect();
    let mut before = state.listed.locked();
    for gone in before.iter().filter(|u| !uris.contains(u)) {
        server.remove_resource(gone);
    }
    for resource in now {
        if !before.contains(&resource.resource().uri) {
            server.add_resource(resource);
        }
    }
    *before = uris;
}
