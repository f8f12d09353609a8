//! Watching a library's directory: a burst of file events (debounced)
//! reads the directory again, and each prompt whose files changed is
//! replaced, added or removed, which tells clients the list changed.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use mcp_server::Server;
use notify_debouncer_full::notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, new_debouncer};

use super::file::FileProblem;
use super::{PromptLibrary, PromptsError};

/// Watches `dir`, starting from `current` (what `server` serves now),
/// until the Tokio runtime ends.
pub(super) fn watch(
    server: Server,
    dir: PathBuf,
    current: PromptLibrary,
    debounce: Duration,
) -> Result<(), PromptsError> {
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| PromptsError::NoRuntime)?;
    // One pending signal is enough: a reread sees every change before it.
    let (changed, mut changes) = tokio::sync::mpsc::channel::<()>(1);
    let cannot_watch = |source| PromptsError::Watch {
        path: dir.clone(),
        source,
    };
    let mut debouncer =
        new_debouncer(
            debounce,
            None,
            move |events: DebounceEventResult| match events {
                Ok(_) => {
                    let _ = changed.try_send(());
                }
                Err(errors) => {
                    for e in errors {
                        tracing::warn!("watching the prompt directory: {e}");
                    }
                }
            },
        )
        .map_err(cannot_watch)?;
    debouncer
        .watch(&dir, RecursiveMode::Recursive)
        .map_err(cannot_watch)?;
    runtime.spawn(async move {
        let _debouncer = debouncer;
        let mut current = current;
        while changes.recv().await.is_some() {
            let path = dir.clone();
            match tokio::task::spawn_blocking(move || PromptLibrary::load(&path)).await {
                Ok(Ok(next)) => {
                    apply(&server, &current, &next);
                    current = next;
                }
                Ok(Err(e)) => tracing::warn!("{e}; the prompts served stay as they were"),
                Err(e) => tracing::warn!("reading the prompt directory failed: {e}"),
            }
        }
    });
    Ok(())
}

/// Serves `next` instead of `current`: prompts gone are removed, prompts
/// new or changed are (re)placed; problems not reported before are logged.
fn apply(server: &Server, current: &PromptLibrary, next: &PromptLibrary) {
    for name in current.families().keys() {
        if next.family(name).is_none() && server.remove_prompt(name) {
            tracing::info!(prompt = %name, "prompt removed");
        }
    }
    for (name, family) in next.families() {
        let before = current.family(name).map(|f| f.fingerprint());
        if before != Some(family.fingerprint()) {
            server.add_prompt(family.prompt_def());
            let what = if before.is_some() { "updated" } else { "added" };
            tracing::info!(prompt = %name, versions = ?family.version_list(), "prompt {what}");
        }
    }
    let known: HashSet<&FileProblem> = current.problems().iter().collect();
    for problem in next.problems().iter().filter(|p| !known.contains(p)) {
        tracing::warn!(file = %problem.source, "prompt file not served: {}", problem.reason);
    }
}
