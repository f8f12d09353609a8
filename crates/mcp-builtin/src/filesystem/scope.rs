//! Containment: the allowed directories, each opened once as a directory
//! handle, and the secret deny-list.
//!
//! A client's path is first placed lexically: an absolute path must lie
//! under one allowed directory (compared component by component, so
//! `/data2` is not under `/data`), a relative one is taken from the first
//! allowed directory, and `..` may not climb above the directory. Every
//! access then goes through the directory's handle ([`cap_std::fs::Dir`]),
//! which resolves the rest beneath it in the kernel (`openat2` with
//! `RESOLVE_BENEATH` on Linux): a symlink pointing out, or one swapped in
//! between a check and the open, is refused there.

use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use globset::{Glob, GlobSet, GlobSetBuilder};

/// The secret files refused by default: matched against each component of
/// a path, so `.ssh` refuses everything under a `.ssh` directory.
pub const DEFAULT_DENY: &[&str] = &[
    ".env", ".env.*", "*.pem", "*.key", "id_*", ".ssh", ".aws", ".gnupg", ".netrc", "*.p12",
];

/// Why a path cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// The path lies outside every allowed directory.
    #[error("{path} is outside the allowed directories ({allowed}); use a path under one of them")]
    Outside {
        /// The path as given.
        path: String,
        /// The allowed directories, comma-separated.
        allowed: String,
    },
    /// The path names a secret on the deny-list.
    #[error(
        "{path} is refused: it matches the secret deny-list ({pattern}); the operator can allow it with --allow-secrets"
    )]
    Denied {
        /// The path as given.
        path: String,
        /// The pattern it matched.
        pattern: String,
    },
    /// The arguments do not make sense together.
    #[error("{0}")]
    Invalid(String),
    /// The file system refused or failed the operation.
    #[error("{path}: {message}")]
    Io {
        /// The path as given.
        path: String,
        /// What went wrong, and what to do.
        message: String,
    },
}

impl AccessError {
    /// An I/O failure on `path`, worded for the model: a refused escape
    /// says so, a missing file says so.
    pub fn io(path: &str, error: std::io::Error) -> Self {
        let message = match error.kind() {
            std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
            std::io::ErrorKind::PermissionDenied => {
                "refused: it leads outside the allowed directory (through `..` or a symlink) or the server may not read it".to_owned()
            }
            std::io::ErrorKind::AlreadyExists => "already exists".to_owned(),
            _ => error.to_string(),
        };
        AccessError::Io {
            path: path.to_owned(),
            message,
        }
    }
}

/// One allowed directory.
#[derive(Debug)]
pub struct Allowed {
    /// Its absolute path, symlinks resolved: what clients are shown.
    pub path: PathBuf,
    /// Its absolute path as the operator wrote it (made absolute).
    given: PathBuf,
    /// The handle every access goes through.
    pub dir: Dir,
}

/// A client path placed beneath one allowed directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Which allowed directory (index into [`Scope::allowed`]).
    pub root: usize,
    /// The path beneath it, normalised, with no `..`; empty for the
    /// directory itself.
    pub relative: PathBuf,
}

impl Located {
    /// The path to hand to the directory's handle (`.` for the directory itself).
    pub fn handle_path(&self) -> &Path {
        if self.relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.relative
        }
    }
}

/// The allowed directories and the deny-list.
#[derive(Debug)]
pub struct Scope {
    allowed: Vec<Allowed>,
    deny: Option<(GlobSet, Vec<String>)>,
}

/// Lexically normalises `path`: drops `.`, folds `name/..`; `None` when
/// `..` climbs above the start.
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    let mut depth = 0usize;
    for component in path.components() {
        match component {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if depth == 0 {
                    return None;
                }
                out.pop();
                depth -= 1;
            }
            Component::Normal(name) => {
                out.push(name);
                depth += 1;
            }
        }
    }
    Some(out)
}

impl Scope {
    /// Opens each directory once. `deny` is the deny-list (`None`: allow
    /// secrets). Fails when a directory cannot be opened.
    pub fn open(directories: &[PathBuf], deny: Option<&[String]>) -> Result<Scope, String> {
        if directories.is_empty() {
            return Err("give at least one directory to serve".to_owned());
        }
        let mut allowed = Vec::with_capacity(directories.len());
        for directory in directories {
            let given = std::path::absolute(directory)
                .map_err(|e| format!("{}: {e}", directory.display()))?;
            let given = normalise(&given).unwrap_or_else(|| given.clone());
            let path = std::fs::canonicalize(&given)
                .map_err(|e| format!("{}: {e}", directory.display()))?;
            let dir = Dir::open_ambient_dir(&path, ambient_authority())
                .map_err(|e| format!("{}: cannot open as a directory: {e}", path.display()))?;
            allowed.push(Allowed { path, given, dir });
        }
        let deny = match deny {
            None => None,
            Some(patterns) => {
                let mut builder = GlobSetBuilder::new();
                for pattern in patterns {
                    let glob = Glob::new(pattern)
                        .map_err(|e| format!("--deny {pattern:?} is not a glob: {e}"))?;
                    builder.add(glob);
                }
                let set = builder
                    .build()
                    .map_err(|e| format!("the deny-list does not compile: {e}"))?;
                Some((set, patterns.to_vec()))
            }
        };
        Ok(Scope { allowed, deny })
    }

    /// The allowed directories, in the operator's order.
    pub fn allowed(&self) -> &[Allowed] {
        &self.allowed
    }

    /// The handle of allowed directory `root`.
    pub fn dir(&self, root: usize) -> &Dir {
        &self.allowed[root].dir
    }

    /// The absolute path shown for `located`.
    pub fn display(&self, located: &Located) -> PathBuf {
        let base = &self.allowed[located.root].path;
        if located.relative.as_os_str().is_empty() {
            base.clone()
        } else {
            base.join(&located.relative)
        }
    }

    fn outside(&self, path: &str) -> AccessError {
        AccessError::Outside {
            path: path.to_owned(),
            allowed: self
                .allowed
                .iter()
                .map(|a| a.path.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// Places a client path (absolute, or relative to the first allowed
    /// directory; `~` is not expanded) beneath an allowed directory, and
    /// refuses secrets. Nothing is opened here: open through
    /// [`Scope::dir`] with [`Located::handle_path`].
    pub fn locate(&self, path: &str) -> Result<Located, AccessError> {
        let located = self.place(path)?;
        self.check_denied(path, &located)?;
        Ok(located)
    }

    /// Like [`Scope::locate`] without the deny-list (for listing a
    /// directory that holds a secret, say).
    pub fn place(&self, path: &str) -> Result<Located, AccessError> {
        let raw = Path::new(path);
        if raw.is_absolute() {
            let normalised = normalise(raw).ok_or_else(|| self.outside(path))?;
            // The longest allowed directory containing the path wins, so
            // nested allowed directories resolve to the nearer one.
            let mut best: Option<(usize, PathBuf, usize)> = None;
            for (index, allowed) in self.allowed.iter().enumerate() {
                for base in [&allowed.path, &allowed.given] {
                    if let Ok(rest) = normalised.strip_prefix(base) {
                        let depth = base.components().count();
                        if best.as_ref().is_none_or(|(_, _, d)| depth > *d) {
                            best = Some((index, rest.to_path_buf(), depth));
                        }
                    }
                }
            }
            let (root, relative, _) = best.ok_or_else(|| self.outside(path))?;
            Ok(Located { root, relative })
        } else {
            let relative = normalise(raw).ok_or_else(|| self.outside(path))?;
            Ok(Located { root: 0, relative })
        }
    }

    /// The deny pattern `relative` matches, if any: any component, or the
    /// whole path.
    pub fn denied_by(&self, relative: &Path) -> Option<&str> {
        let (set, patterns) = self.deny.as_ref()?;
        let whole = set.matches(relative);
        if let Some(&i) = whole.first() {
            return Some(&patterns[i]);
        }
        relative.components().find_map(|c| match c {
            Component::Normal(name) => set
                .matches(Path::new(name))
                .first()
                .map(|&i| patterns[i].as_str()),
            _ => None,
        })
    }

    /// Refuses `located` when it, or what it resolves to beneath its
    /// directory (through symlinks), is on the deny-list.
    pub fn check_denied(&self, path: &str, located: &Located) -> Result<(), AccessError> {
        if self.deny.is_none() {
            return Ok(());
        }
        let denied = |pattern: &str| AccessError::Denied {
            path: path.to_owned(),
            pattern: pattern.to_owned(),
        };
        if let Some(pattern) = self.denied_by(&located.relative) {
            return Err(denied(pattern));
        }
        if let Ok(resolved) = self.dir(located.root).canonicalize(located.handle_path())
            && let Some(pattern) = self.denied_by(&resolved)
        {
            return Err(denied(pattern));
        }
        Ok(())
    }

    /// The allowed directory and relative path of an absolute path that a
    /// watcher reported, if it lies inside and is not denied.
    pub fn watched(&self, path: &Path) -> Option<Located> {
        let located = self.place(path.to_str()?).ok()?;
        self.denied_by(&located.relative)
            .is_none()
            .then_some(located)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_folds_dots_and_refuses_climbing_out() {
        assert_eq!(
            normalise(Path::new("a/./b/../c")),
            Some(PathBuf::from("a/c"))
        );
        assert_eq!(normalise(Path::new("a/../..")), None);
        assert_eq!(normalise(Path::new("/x/../y")), Some(PathBuf::from("/y")));
        assert_eq!(normalise(Path::new("/..")), None);
    }
}
