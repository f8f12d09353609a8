//! Files and directories as resources: `file:///abs/path` URIs, the
//! template `file:///{+path}` with path completion, text with its MIME
//! type, binary as `blob`, directories as `inode/directory` listings.
//!
//! `resources/list` holds each allowed directory and its top-level
//! entries (at most [`Limits::max_listed`](super::Limits)); anything deeper
//! is read through the template.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use mcp_schema::{ErrorObject, Resource, ResourceContents};
use mcp_server::{Completer, Context, HandlerError, ResourceDef, TemplateDef};

use super::State;
use super::listing::{Kind, entries};
use super::read::{mime_of, read_whole};
use super::roots::{self, Access};
use super::scope::{AccessError, Located};
use super::uri::file_uri;

const DIRECTORY_MIME: &str = "inode/directory";

fn not_found(ctx: &Context, uri: &str, why: &str) -> HandlerError {
    HandlerError::Protocol(
        ErrorObject::new(
            ctx.revision().resource_not_found_code(),
            format!("Resource not found: {uri} ({why})"),
        )
        .with_data(serde_json::json!({ "uri": uri })),
    )
}

/// Whether `bytes` of a file of type `mime` are text.
fn is_text(mime: &str, bytes: &[u8]) -> bool {
    let textual = mime.starts_with("text/")
        || matches!(
            mime,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/toml"
                | "application/x-sh"
                | "application/yaml"
        )
        || mime.ends_with("+json")
        || mime.ends_with("+xml");
    (textual || mime == "application/octet-stream")
        && !bytes.contains(&0)
        && std::str::from_utf8(bytes).is_ok()
}

/// Reads the resource at absolute `path`.
fn read(
    state: &Access,
    path: &str,
    uri: &str,
    ctx: &Context,
) -> Result<Vec<ResourceContents>, HandlerError> {
    let located = state
        .scope
        .locate(path)
        .map_err(|e| not_found(ctx, uri, &e.to_string()))?;
    let dir = state.scope.dir(located.root);
    let metadata = dir
        .metadata(located.handle_path())
        .map_err(|e| not_found(ctx, uri, &AccessError::io(path, e).to_string()))?;
    if metadata.is_dir() {
        let sub = dir
            .open_dir(located.handle_path())
            .map_err(|e| not_found(ctx, uri, &AccessError::io(path, e).to_string()))?;
        let (list, truncated) = entries(&sub, state.limits.max_entries)
            .map_err(|e| HandlerError::failed(AccessError::io(path, e)))?;
        let mut text: String = list
            .iter()
            .map(|e| {
                let tag = if e.kind == Kind::Directory {
                    "[DIR]"
                } else {
                    "[FILE]"
                };
                format!("{tag} {}\n", e.name)
            })
            .collect();
        if truncated {
            text.push_str("[truncated: more entries than the server lists]\n");
        }
        return Ok(vec![ResourceContents::text(
            uri,
            Some(DIRECTORY_MIME.to_owned()),
            text,
        )]);
    }
    let (located, bytes) = read_whole(state, path).map_err(|e| match e {
        AccessError::Io { ref message, .. } if message.starts_with("is larger") => {
            HandlerError::failed(e)
        }
        e => not_found(ctx, uri, &e.to_string()),
    })?;
    let mime = mime_of(&located.relative);
    if is_text(&mime, &bytes) {
        let mime = if mime == "application/octet-stream" {
            "text/plain".to_owned()
        } else {
            mime
        };
        let text = String::from_utf8(bytes).unwrap_or_default();
        Ok(vec![ResourceContents::text(uri, Some(mime), text)])
    } else {
        let blob = base64::engine::general_purpose::STANDARD.encode(&bytes);
        Ok(vec![ResourceContents::blob(uri, Some(mime), blob)])
    }
}

/// A listed resource for `located` of kind `kind`.
fn listed_one(state: &Arc<State>, located: &Located, kind: Kind) -> ResourceDef {
    let path = state.scope.display(located);
    let uri = file_uri(&path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let mut resource = Resource::new(uri.clone(), name);
    resource.mime_type = Some(if kind == Kind::Directory {
        DIRECTORY_MIME.to_owned()
    } else {
        mime_of(&path)
    });
    resource.description = Some(path.display().to_string());
    let state = Arc::clone(state);
    let path = path.display().to_string();
    ResourceDef::dynamic(resource, move |ctx| {
        let state = Arc::clone(&state);
        let path = path.clone();
        let uri = uri.clone();
        async move {
            let roots = roots::of(&ctx, &state.scope).await?;
            tokio::task::spawn_blocking(move || {
                read(&Access::new(&state, roots), &path, &uri, &ctx)
            })
            .await
            .map_err(HandlerError::failed)?
        }
    })
}

/// The resources `resources/list` holds: each allowed directory and its
/// top-level entries that are not secrets, at most `max_listed`.
pub(crate) fn listed(state: &Arc<State>) -> Vec<ResourceDef> {
    let max = state.limits.max_listed;
    let mut out = Vec::new();
    for (root, allowed) in state.scope.allowed().iter().enumerate() {
        if out.len() >= max {
            break;
        }
        let top = Located {
            root,
            relative: Default::default(),
        };
        out.push(listed_one(state, &top, Kind::Directory));
        let Ok((list, _)) = entries(&allowed.dir, state.limits.max_entries) else {
            continue;
        };
        for entry in list {
            if out.len() >= max {
                break;
            }
            let located = Located {
                root,
                relative: entry.name.clone().into(),
            };
            if state.scope.denied_by(&located.relative).is_some() {
                continue;
            }
            let kind = if entry.kind == Kind::Symlink {
                // A link is listed as what it points to, if that is inside.
                match allowed.dir.metadata(&entry.name) {
                    Ok(m) if m.is_dir() => Kind::Directory,
                    Ok(_) => Kind::File,
                    Err(_) => continue,
                }
            } else {
                entry.kind
            };
            out.push(listed_one(state, &located, kind));
        }
    }
    out
}

/// Completes a path typed so far (without the leading `/`): entries of
/// the directory typed, whose names start with what follows its last `/`.
fn complete_path(state: &State, typed: &str) -> Vec<String> {
    let typed = typed.trim_start_matches('/');
    let (directory, prefix) = match typed.rfind('/') {
        Some(at) => (&typed[..at], &typed[at + 1..]),
        None => ("", typed),
    };
    let mut out = Vec::new();
    let Ok(located) = state.scope.locate(&format!("/{directory}")) else {
        // Not inside yet: offer the allowed directories that start so.
        for allowed in state.scope.allowed() {
            let path = allowed.path.display().to_string();
            let path = path.trim_start_matches('/');
            if path.starts_with(typed) {
                out.push(path.to_owned());
            }
        }
        return out;
    };
    let Ok(dir) = state
        .scope
        .dir(located.root)
        .open_dir(located.handle_path())
    else {
        return out;
    };
    let Ok((list, _)) = entries(&dir, state.limits.max_entries) else {
        return out;
    };
    for entry in list {
        if out.len() == 100 {
            break;
        }
        if !entry.name.starts_with(prefix)
            || state
                .scope
                .denied_by(&located.relative.join(&entry.name))
                .is_some()
        {
            continue;
        }
        let slash = if entry.kind == Kind::Directory {
            "/"
        } else {
            ""
        };
        if directory.is_empty() {
            out.push(format!("{}{slash}", entry.name));
        } else {
            out.push(format!("{directory}/{}{slash}", entry.name));
        }
    }
    out
}

/// The template `file:///{+path}`: any file or directory in scope.
pub(crate) fn template(state: &Arc<State>) -> Result<TemplateDef, String> {
    let reader = Arc::clone(state);
    let completer_state = Arc::clone(state);
    let completer: Completer = Arc::new(move |typed: &str, _: &BTreeMap<String, String>| {
        complete_path(&completer_state, typed)
    });
    Ok(
        TemplateDef::new("file:///{+path}", "file", move |uri, vars, ctx| {
            let state = Arc::clone(&reader);
            async move {
                let path = format!("/{}", vars.get("path").map(String::as_str).unwrap_or(""));
                let roots = roots::of(&ctx, &state.scope).await?;
                tokio::task::spawn_blocking(move || {
                    read(&Access::new(&state, roots), &path, &uri, &ctx)
                })
                .await
                .map_err(HandlerError::failed)?
            }
        })?
        .description(
            "A file (text with its MIME type, or binary as a blob) or a directory (its listing, \
inode/directory) under the allowed directories, by absolute path.",
        )
        .complete("path", completer),
    )
}
