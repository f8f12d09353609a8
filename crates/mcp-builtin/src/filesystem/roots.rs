//! Client roots narrow the scope, never widen it: a request from a client
//! that declares roots may use only the parts of the allowed directories
//! inside one of its roots. A root outside every allowed directory grants
//! nothing; a client without roots (or with none listed) gets the
//! operator's directories.

use std::ops::Deref;
use std::path::{Path, PathBuf};

use mcp_server::{Context, HandlerError};
use percent_encoding::percent_decode_str;

use super::State;
use super::scope::{AccessError, Located, Scope};

/// What one request may reach: the server's state, narrowed to the
/// client's roots when it has any.
pub(crate) struct Access<'a> {
    state: &'a State,
    roots: Option<Vec<Located>>,
}

impl Deref for Access<'_> {
    type Target = State;

    fn deref(&self) -> &State {
        self.state
    }
}

impl<'a> Access<'a> {
    /// `state` narrowed to `roots` (`None`: not narrowed).
    pub fn new(state: &'a State, roots: Option<Vec<Located>>) -> Self {
        Access { state, roots }
    }

    /// Places `path` as [`Scope::locate`] does, then refuses it when it
    /// lies outside the client's roots.
    pub fn locate(&self, path: &str) -> Result<Located, AccessError> {
        let located = self.state.scope.locate(path)?;
        let Some(roots) = &self.roots else {
            return Ok(located);
        };
        let inside = roots
            .iter()
            .any(|r| r.root == located.root && located.relative.starts_with(&r.relative));
        if inside {
            Ok(located)
        } else {
            Err(AccessError::Outside {
                path: path.to_owned(),
                allowed: self
                    .directories()
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        }
    }

    /// The directories this request may reach.
    pub fn directories(&self) -> Vec<PathBuf> {
        match &self.roots {
            None => self
                .state
                .scope
                .allowed()
                .iter()
                .map(|a| a.path.clone())
                .collect(),
            Some(roots) => roots.iter().map(|r| self.state.scope.display(r)).collect(),
        }
    }
}

/// The parts of the allowed directories inside the root at `path`.
fn narrowed(scope: &Scope, path: &Path) -> Vec<Located> {
    if let Some(located) = path.to_str().and_then(|p| scope.place(p).ok()) {
        return vec![located];
    }
    // A root wider than allowed directories grants those directories only.
    scope
        .allowed()
        .iter()
        .enumerate()
        .filter(|(_, a)| a.path.starts_with(path))
        .map(|(root, _)| Located {
            root,
            relative: PathBuf::new(),
        })
        .collect()
}

/// The client's roots as parts of the allowed directories, when the client
/// declares roots and lists some. Asks the client (a request in 2025-11-25,
/// an input round in 2026-07-28).
pub(crate) async fn of(ctx: &Context, scope: &Scope) -> Result<Option<Vec<Located>>, HandlerError> {
    if ctx.client_capabilities().roots.is_none() {
        return Ok(None);
    }
    let listed = match ctx.list_roots("roots").await {
        Ok(listed) => listed,
        Err(HandlerError::Failed(why)) => {
            return Err(HandlerError::failed(format!(
                "the client declares roots but did not list them ({why}); nothing is accessible until it does"
            )));
        }
        Err(other) => return Err(other),
    };
    if listed.roots.is_empty() {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for root in &listed.roots {
        let Some(rest) = root.uri.strip_prefix("file://") else {
            continue;
        };
        let rest = rest.strip_prefix("localhost").unwrap_or(rest);
        let Ok(path) = percent_decode_str(rest).decode_utf8() else {
            continue;
        };
        parts.extend(narrowed(scope, Path::new(path.as_ref())));
    }
    Ok(Some(parts))
}
