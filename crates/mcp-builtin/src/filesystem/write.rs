//! The write tools, offered only when the operator allows writing:
//! atomic writes, edits with a diff, directories, move, copy, delete.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use cap_std::fs::Dir;
use mcp_server::ToolDef;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::State;
use super::edit::{self, Edit};
use super::read::read_whole;
use super::roots::Access;
use super::scope::AccessError;
use super::tools::PathArgs;
use super::tools::{Reply, Spec, blocking, schema_of, writes};

/// A path to change: its parent directory opened through the handle, and
/// its own name (never an allowed directory itself).
struct Target {
    parent: Dir,
    name: OsString,
}

fn target(state: &Access, path: &str) -> Result<Target, AccessError> {
    let located = state.locate(path)?;
    let Some(name) = located.relative.file_name().map(ToOwned::to_owned) else {
        return Err(AccessError::Invalid(format!(
            "{path} is an allowed directory itself; name a path beneath it"
        )));
    };
    let parent_path = located.relative.parent().unwrap_or(Path::new(""));
    let parent_path = if parent_path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent_path
    };
    let parent = state
        .scope
        .dir(located.root)
        .open_dir(parent_path)
        .map_err(|e| AccessError::io(path, e))?;
    Ok(Target { parent, name })
}

/// Writes `content` to `target` atomically: a temporary file in the same
/// directory, renamed over the name (a symbolic link there is replaced,
/// never followed). An existing file's permissions are kept.
fn write_atomically(path: &str, target: &Target, content: &[u8]) -> Result<(), AccessError> {
    let io = |e| AccessError::io(path, e);
    let existing = target.parent.symlink_metadata(&target.name).ok();
    if existing.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(AccessError::Invalid(format!("{path} is a directory")));
    }
    let mut temp = cap_tempfile::TempFile::new(&target.parent).map_err(io)?;
    temp.write_all(content).map_err(io)?;
    if let Some(metadata) = existing.filter(|m| m.is_file()) {
        temp.as_file()
            .set_permissions(metadata.permissions())
            .map_err(io)?;
    }
    temp.as_file().sync_all().map_err(io)?;
    temp.replace(&target.name).map_err(io)
}

/// A message reply with the same message as structured content.
#[derive(Debug, Serialize, JsonSchema)]
struct Done {
    /// What was done.
    message: String,
}

fn done(message: String) -> Reply {
    Reply::with(message.clone(), &Done { message })
}

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
struct WriteArgs {
    /// The file: absolute, or relative to the first allowed directory.
    path: String,
    /// The complete new content.
    content: String,
}

fn write_file(args: WriteArgs, state: &Access) -> Result<Reply, AccessError> {
    let target = target(state, &args.path)?;
    write_atomically(&args.path, &target, args.content.as_bytes())?;
    Ok(done(format!("Successfully wrote to {}", args.path)))
}

/// Arguments of `edit_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct EditArgs {
    /// The file: absolute, or relative to the first allowed directory.
    path: String,
    /// Replacements applied in order; all or none are applied.
    edits: Vec<Edit>,
    /// Only show the diff; change nothing.
    #[serde(default)]
    dry_run: bool,
}

/// The result of `edit_file`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Edited {
    /// The unified diff of the change.
    diff: String,
    /// Whether the file was changed (false for a dry run).
    applied: bool,
}

fn edit_file(args: EditArgs, state: &Access) -> Result<Reply, AccessError> {
    let target = target(state, &args.path)?;
    let (_, bytes) = read_whole(state, &args.path)?;
    let original = String::from_utf8(bytes).map_err(|_| {
        AccessError::Invalid(format!(
            "{} is not UTF-8 text; it cannot be edited",
            args.path
        ))
    })?;
    let modified = edit::apply(&original, &args.edits).map_err(AccessError::Invalid)?;
    let diff = edit::diff(&args.path, &original, &modified);
    if !args.dry_run {
        write_atomically(&args.path, &target, modified.as_bytes())?;
    }
    let applied = !args.dry_run;
    Ok(Reply::with(diff.clone(), &Edited { diff, applied }))
}

fn create_directory(args: PathArgs, state: &Access) -> Result<Reply, AccessError> {
    let located = state.locate(&args.path)?;
    state
        .scope
        .dir(located.root)
        .create_dir_all(located.handle_path())
        .map_err(|e| AccessError::io(&args.path, e))?;
    Ok(done(format!(
        "Successfully created directory {}",
        args.path
    )))
}

/// Arguments of `move_file` and `copy_file`.
#[derive(Debug, Deserialize, JsonSchema)]
struct MoveArgs {
    /// What to move or copy: absolute, or relative to the first allowed directory.
    source: String,
    /// Where to: must not exist yet.
    destination: String,
}

fn source_and_destination(
    state: &Access,
    args: &MoveArgs,
) -> Result<(Target, Target), AccessError> {
    let source = target(state, &args.source)?;
    let destination = target(state, &args.destination)?;
    if destination
        .parent
        .symlink_metadata(&destination.name)
        .is_ok()
    {
        return Err(AccessError::Invalid(format!(
            "{} already exists; choose another destination or delete it first",
            args.destination
        )));
    }
    Ok((source, destination))
}

/// Renames `source` to `destination` unless something is there already,
/// decided by the kernel in the rename itself (Linux `RENAME_NOREPLACE`),
/// so a file created at the destination after the check is not replaced.
/// Where the file system has no such rename, a plain one follows the
/// check.
fn rename_no_replace(source: &Target, destination: &Target) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{RenameFlags, renameat_with};
        match renameat_with(
            &source.parent,
            source.name.as_os_str(),
            &destination.parent,
            destination.name.as_os_str(),
            RenameFlags::NOREPLACE,
        ) {
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {}
            done => return done.map_err(Into::into),
        }
    }
    source
        .parent
        .rename(&source.name, &destination.parent, &destination.name)
}

fn move_file(args: MoveArgs, state: &Access) -> Result<Reply, AccessError> {
    let (source, destination) = source_and_destination(state, &args)?;
    rename_no_replace(&source, &destination).map_err(|e| match e.raw_os_error() {
        Some(17) => AccessError::Invalid(format!(
            "{} already exists; choose another destination or delete it first",
            args.destination
        )),
        Some(18) => AccessError::Invalid(format!(
            "{} and {} are on different file systems; copy_file then delete_file instead",
            args.source, args.destination
        )),
        _ => AccessError::io(&args.source, e),
    })?;
    Ok(done(format!(
        "Successfully moved {} to {}",
        args.source, args.destination
    )))
}

fn copy_file(args: MoveArgs, state: &Access) -> Result<Reply, AccessError> {
    let (source, destination) = source_and_destination(state, &args)?;
    let metadata = source
        .parent
        .metadata(&source.name)
        .map_err(|e| AccessError::io(&args.source, e))?;
    if !metadata.is_file() {
        return Err(AccessError::Invalid(format!(
            "{} is not a file; only files are copied",
            args.source
        )));
    }
    // A new file, never one that appeared at the destination meanwhile
    // (nor a symlink there, which is not followed).
    let mut from = source
        .parent
        .open(&source.name)
        .map_err(|e| AccessError::io(&args.source, e))?;
    let mut options = cap_std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    let mut to = destination
        .parent
        .open_with(&destination.name, &options)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => AccessError::Invalid(format!(
                "{} already exists; choose another destination or delete it first",
                args.destination
            )),
            _ => AccessError::io(&args.destination, e),
        })?;
    let copied =
        std::io::copy(&mut from, &mut to).and_then(|_| to.set_permissions(metadata.permissions()));
    if let Err(e) = copied {
        // No half copy left behind.
        drop(to);
        let _ = destination.parent.remove_file(&destination.name);
        return Err(AccessError::io(&args.destination, e));
    }
    Ok(done(format!(
        "Successfully copied {} to {}",
        args.source, args.destination
    )))
}

/// Arguments of `delete_file`.
#[derive(Debug, Deserialize, JsonSchema)]
struct DeleteArgs {
    /// The file or directory: absolute, or relative to the first allowed directory.
    path: String,
    /// Delete a directory with everything in it (an empty directory needs no flag).
    #[serde(default)]
    recursive: bool,
}

fn delete_file(args: DeleteArgs, state: &Access) -> Result<Reply, AccessError> {
    let target = target(state, &args.path)?;
    let io = |e| AccessError::io(&args.path, e);
    let metadata = target.parent.symlink_metadata(&target.name).map_err(io)?;
    if metadata.is_dir() {
        if args.recursive {
            target.parent.remove_dir_all(&target.name).map_err(io)?;
        } else {
            target.parent.remove_dir(&target.name).map_err(|e| {
                if e.kind() == std::io::ErrorKind::DirectoryNotEmpty {
                    AccessError::Invalid(format!(
                        "{} is a directory that is not empty; pass recursive: true to delete it with its contents",
                        args.path
                    ))
                } else {
                    io(e)
                }
            })?;
        }
    } else {
        // A symbolic link is removed itself, never what it points to.
        target.parent.remove_file(&target.name).map_err(io)?;
    }
    Ok(done(format!("Successfully deleted {}", args.path)))
}

/// The write tools.
pub(crate) fn tools(state: &Arc<State>) -> Vec<ToolDef> {
    let done_schema = schema_of::<Done>();
    vec![
        blocking(
            Spec {
                name: "write_file",
                title: "Write File",
                description: "Create a file or replace its whole content. The write is atomic \
(a temporary file renamed into place); an existing file is overwritten without warning. Only \
within the allowed directories.",
                annotations: writes(true, true),
                output: Some(done_schema.clone()),
            },
            state,
            write_file,
        ),
        blocking(
            Spec {
                name: "edit_file",
                title: "Edit File",
                description: "Replace text in a file: each edit's oldText (matched exactly, else \
line by line ignoring indentation) becomes newText; all edits or none are applied. Returns a \
unified diff; dryRun shows it without changing the file. A failure says which edit did not match \
and why. Only within the allowed directories.",
                annotations: writes(true, false),
                output: Some(schema_of::<Edited>()),
            },
            state,
            edit_file,
        ),
        blocking(
            Spec {
                name: "create_directory",
                title: "Create Directory",
                description: "Create a directory, with any missing parents; succeeds if it \
exists. Only within the allowed directories.",
                annotations: writes(false, true),
                output: Some(done_schema.clone()),
            },
            state,
            create_directory,
        ),
        blocking(
            Spec {
                name: "move_file",
                title: "Move File",
                description: "Move or rename a file or directory. Fails if the destination \
exists. Both paths within the allowed directories.",
                annotations: writes(true, true),
                output: Some(done_schema.clone()),
            },
            state,
            move_file,
        ),
        blocking(
            Spec {
                name: "copy_file",
                title: "Copy File",
                description: "Copy a file. Fails if the destination exists. Both paths within \
the allowed directories.",
                annotations: writes(false, true),
                output: Some(done_schema.clone()),
            },
            state,
            copy_file,
        ),
        blocking(
            Spec {
                name: "delete_file",
                title: "Delete File",
                description: "Delete a file, a symbolic link (not its target) or an empty \
directory; with recursive: true, a directory and everything in it. Only within the allowed \
directories.",
                annotations: writes(true, true),
                output: Some(done_schema),
            },
            state,
            delete_file,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use cap_std::ambient_authority;

    use super::*;

    #[test]
    fn the_rename_itself_refuses_to_replace() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), "source").unwrap();
        std::fs::write(dir.path().join("b"), "already there").unwrap();
        let open = || Dir::open_ambient_dir(dir.path(), ambient_authority()).unwrap();
        let target = |name: &str| Target {
            parent: open(),
            name: name.into(),
        };
        // As if "b" had appeared after the existence check.
        let error = rename_no_replace(&target("a"), &target("b")).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::AlreadyExists, "{error}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("b")).unwrap(),
            "already there"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a")).unwrap(),
            "source"
        );
        rename_no_replace(&target("a"), &target("c")).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("c")).unwrap(),
            "source"
        );
    }
}
