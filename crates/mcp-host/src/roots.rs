//! The roots the host offers its servers: directories the user chose in
//! the settings file (`[roots] paths`), each checked to exist, offered as
//! `file://` URIs to every server that asks (`roots/list` from a
//! 2025-11-25 server, a `roots/list` question of a 2026-07-28 server's
//! round), with `notifications/roots/list_changed` when they change.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use mcp_core::sync::RwLockExt as _;
use mcp_schema::Root;
use serde::{Deserialize, Serialize};

/// `[roots]` in the settings file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RootsSettings {
    /// Directories (`~` is the home folder; relative to the settings
    /// file's folder).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<PathBuf>,
}

impl RootsSettings {
    /// The roots these settings name: each an existing directory, by its
    /// full path; an error naming the first that is not.
    pub fn roots(&self) -> Result<Vec<Root>, String> {
        self.paths.iter().map(|path| root(path)).collect()
    }
}

/// `path` (with `~` for the home folder) as a root.
fn root(path: &Path) -> Result<Root, String> {
    let expanded = match path.strip_prefix("~") {
        Ok(rest) => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(rest),
            None => return Err(format!("roots.paths: {} needs HOME set", path.display())),
        },
        Err(_) => path.to_owned(),
    };
    let full = std::fs::canonicalize(&expanded)
        .map_err(|e| format!("roots.paths: {}: {e}", path.display()))?;
    if !full.is_dir() {
        return Err(format!(
            "roots.paths: {} is not a directory",
            path.display()
        ));
    }
    let uri = reqwest::Url::from_directory_path(&full)
        .map_err(|()| format!("roots.paths: {} cannot be a file:// URI", full.display()))?;
    let name = full
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .or_else(|| Some(full.display().to_string()));
    Ok(Root::new(uri.to_string(), name))
}

/// The roots offered now, shared by every upstream (a restarted one
/// offers the current ones).
#[derive(Debug, Clone, Default)]
pub struct SharedRoots(Arc<Offered>);

/// The roots, and whether there are any (read on the way of requests,
/// without the lock).
#[derive(Debug, Default)]
struct Offered {
    roots: RwLock<Vec<Root>>,
    any: AtomicBool,
}

impl SharedRoots {
    /// Offering `roots`.
    pub fn new(roots: Vec<Root>) -> Self {
        SharedRoots(Arc::new(Offered {
            any: AtomicBool::new(!roots.is_empty()),
            roots: RwLock::new(roots),
        }))
    }

    /// The roots offered now.
    pub fn get(&self) -> Vec<Root> {
        self.0.roots.read_locked().clone()
    }

    /// Offers `roots` instead; whether they differ from before.
    pub(crate) fn set(&self, roots: Vec<Root>) -> bool {
        let mut current = self.0.roots.write_locked();
        let changed = *current != roots;
        self.0.any.store(!roots.is_empty(), Ordering::Relaxed);
        *current = roots;
        changed
    }

    /// Whether none are offered.
    pub fn is_empty(&self) -> bool {
        !self.0.any.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_become_file_uris_and_anything_else_is_refused() {
        let dir = std::env::temp_dir().join(format!("mcp-roots-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("my project")).unwrap();
        std::fs::write(dir.join("file.txt"), "x").unwrap();
        let settings = RootsSettings {
            paths: vec![dir.join("my project")],
        };
        let roots = settings.roots().unwrap();
        let full = std::fs::canonicalize(dir.join("my project")).unwrap();
        assert_eq!(
            roots[0].uri,
            format!("file://{}/", full.display()).replace(' ', "%20")
        );
        assert_eq!(roots[0].name.as_deref(), Some("my project"));
        for bad in [dir.join("file.txt"), dir.join("missing")] {
            let error = RootsSettings {
                paths: vec![bad.clone()],
            }
            .roots()
            .unwrap_err();
            assert!(error.starts_with("roots.paths: "), "{error}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
