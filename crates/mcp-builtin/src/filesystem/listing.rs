//! Listing tools: a directory's entries (with sizes, sorted), and a tree
//! with depth and entry caps.

use std::path::Path;
use std::sync::Arc;

use cap_std::fs::Dir;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use mcp_server::ToolDef;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::State;
use super::roots::Access;
use super::scope::{AccessError, Located};
use super::tools::{PathArgs, Reply, Spec, blocking, reads, schema_of};

/// Opens a directory through its allowed directory's handle, after the
/// containment and deny checks (a denied directory's entries are not shown).
pub(crate) fn open_directory(state: &Access, path: &str) -> Result<(Located, Dir), AccessError> {
    let located = state.locate(path)?;
    let dir = state
        .scope
        .dir(located.root)
        .open_dir(located.handle_path())
        .map_err(|e| AccessError::io(path, e))?;
    Ok((located, dir))
}

/// What a directory entry is (a symbolic link is not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link.
    Symlink,
    /// Anything else (socket, device, FIFO).
    Other,
}

impl Kind {
    fn of(file_type: cap_std::fs::FileType) -> Kind {
        if file_type.is_dir() {
            Kind::Directory
        } else if file_type.is_file() {
            Kind::File
        } else if file_type.is_symlink() {
            Kind::Symlink
        } else {
            Kind::Other
        }
    }

    fn tag(self) -> &'static str {
        if self == Kind::Directory {
            "[DIR]"
        } else {
            "[FILE]"
        }
    }
}

/// One entry of a listing.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Entry {
    /// The entry's name.
    pub name: String,
    /// What it is.
    #[serde(rename = "type")]
    pub kind: Kind,
    /// Its size in bytes (symbolic links followed), when listed with sizes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// The entries of `dir`, sorted by name, at most `max`; whether more were left out.
pub(crate) fn entries(dir: &Dir, max: usize) -> std::io::Result<(Vec<Entry>, bool)> {
    let mut entries = Vec::new();
    let mut truncated = false;
    for entry in dir.entries()? {
        let entry = entry?;
        if entries.len() == max {
            truncated = true;
            break;
        }
        let kind = entry.file_type().map(Kind::of).unwrap_or(Kind::Other);
        entries.push(Entry {
            name: entry.file_name().to_string_lossy().into_owned(),
            kind,
            size: None,
        });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((entries, truncated))
}

/// A listing.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Listing {
    /// The entries.
    entries: Vec<Entry>,
    /// Whether the entry cap left some out.
    truncated: bool,
}

fn truncation_notice(max: usize) -> String {
    format!("\n[truncated: only the first {max} entries are listed]")
}

fn list(args: PathArgs, state: &Access) -> Result<Reply, AccessError> {
    let (_, dir) = open_directory(state, &args.path)?;
    let max = state.limits.max_entries;
    let (entries, truncated) = entries(&dir, max).map_err(|e| AccessError::io(&args.path, e))?;
    let mut text: String = entries
        .iter()
        .map(|e| format!("{} {}", e.kind.tag(), e.name))
        .collect::<Vec<_>>()
        .join("\n");
    if truncated {
        text.push_str(&truncation_notice(max));
    }
    Ok(Reply::with(text, &Listing { entries, truncated }))
}

/// How `list_directory_with_sizes` sorts.
#[derive(Debug, Default, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum SortBy {
    /// By name, ascending.
    #[default]
    Name,
    /// By size, largest first.
    Size,
}

/// Arguments of `list_directory_with_sizes`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct SizesArgs {
    /// The directory: absolute, or relative to the first allowed directory.
    path: String,
    /// Sort entries by name or size.
    #[serde(default)]
    sort_by: SortBy,
}

/// A listing with sizes and totals.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct SizedListing {
    /// The entries, sorted as asked.
    entries: Vec<Entry>,
    /// How many files.
    total_files: usize,
    /// How many directories.
    total_directories: usize,
    /// The files' combined size in bytes.
    combined_size: u64,
    /// Whether the entry cap left some out.
    truncated: bool,
}

/// A size the way people read it: `1.50 KB`.
pub(crate) fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut unit = 0;
    let mut value = bytes as f64;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2} {}", UNITS[unit])
}

fn list_sizes(args: SizesArgs, state: &Access) -> Result<Reply, AccessError> {
    let (_, dir) = open_directory(state, &args.path)?;
    let max = state.limits.max_entries;
    let (mut entries, truncated) =
        entries(&dir, max).map_err(|e| AccessError::io(&args.path, e))?;
    for entry in &mut entries {
        // Through the handle: a symlink pointing out has no size here.
        entry.size = Some(dir.metadata(&entry.name).map(|m| m.len()).unwrap_or(0));
    }
    if let SortBy::Size = args.sort_by {
        entries.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.name.cmp(&b.name)));
    }
    let files = entries.iter().filter(|e| e.kind != Kind::Directory);
    let total_files = files.clone().count();
    let combined_size = files.filter_map(|e| e.size).sum();
    let total_directories = entries.len() - total_files;
    let mut lines: Vec<String> = entries
        .iter()
        .map(|e| {
            let size = if e.kind == Kind::Directory {
                String::new()
            } else {
                format!("{:>10}", format_size(e.size.unwrap_or(0)))
            };
            format!("{} {:<30} {size}", e.kind.tag(), e.name)
        })
        .collect();
    lines.push(String::new());
    lines.push(format!(
        "Total: {total_files} files, {total_directories} directories"
    ));
    lines.push(format!("Combined size: {}", format_size(combined_size)));
    let mut text = lines.join("\n");
    if truncated {
        text.push_str(&truncation_notice(max));
    }
    let listing = SizedListing {
        entries,
        total_files,
        total_directories,
        combined_size,
        truncated,
    };
    Ok(Reply::with(text, &listing))
}

/// Exclusion globs as the official server reads them: a pattern with `*`
/// matches the path relative to the start; one without matches that name
/// anywhere, and everything beneath it.
pub(crate) struct Exclude(Option<GlobSet>);

/// Compiles a glob where `*` stays within one path component.
pub(crate) fn glob(pattern: &str) -> Result<globset::Glob, AccessError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| AccessError::Invalid(format!("{pattern:?} is not a glob pattern: {e}")))
}

impl Exclude {
    /// Compiles `patterns`.
    pub fn new(patterns: &[String]) -> Result<Exclude, AccessError> {
        if patterns.is_empty() {
            return Ok(Exclude(None));
        }
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            builder.add(glob(pattern)?);
            if !pattern.contains('*') {
                builder.add(glob(&format!("**/{pattern}"))?);
                builder.add(glob(&format!("**/{pattern}/**"))?);
            }
        }
        let set = builder
            .build()
            .map_err(|e| AccessError::Invalid(format!("excludePatterns: {e}")))?;
        Ok(Exclude(Some(set)))
    }

    /// Whether `relative` is excluded.
    pub fn excludes(&self, relative: &Path) -> bool {
        self.0.as_ref().is_some_and(|set| set.is_match(relative))
    }
}

/// Arguments of `directory_tree`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct TreeArgs {
    /// The directory: absolute, or relative to the first allowed directory.
    path: String,
    /// Globs of paths to leave out.
    #[serde(default)]
    exclude_patterns: Vec<String>,
    /// How many levels to descend (1: the directory's own entries). Unlimited when absent.
    #[serde(default)]
    max_depth: Option<usize>,
    /// The most entries to return (the server's cap when absent or larger).
    #[serde(default)]
    max_entries: Option<usize>,
}

/// A node of the tree.
#[derive(Debug, Serialize, JsonSchema)]
struct Node {
    /// The entry's name.
    name: String,
    /// `file` or `directory`.
    #[serde(rename = "type")]
    kind: &'static str,
    /// A directory's entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    children: Option<Vec<Node>>,
    /// Set when this directory's entries were not all listed (depth or entry cap, or the deny-list).
    #[serde(skip_serializing_if = "Option::is_none")]
    truncated: Option<bool>,
}

/// The tree's result.
#[derive(Debug, Serialize, JsonSchema)]
struct Tree {
    /// The directory's entries, recursively.
    tree: Vec<Node>,
    /// Whether a cap left entries out.
    truncated: bool,
}

struct TreeWalk<'a> {
    state: &'a State,
    root: &'a Located,
    exclude: Exclude,
    max_depth: usize,
    budget: usize,
    truncated: bool,
}

impl TreeWalk<'_> {
    fn walk(&mut self, dir: &Dir, relative: &Path, depth: usize) -> Vec<Node> {
        let Ok((entries, truncated)) = entries(dir, self.budget.saturating_add(1)) else {
            return Vec::new();
        };
        self.truncated |= truncated;
        let mut nodes = Vec::new();
        for entry in entries {
            let path = relative.join(&entry.name);
            if self.exclude.excludes(&path) {
                continue;
            }
            if self.budget == 0 {
                self.truncated = true;
                break;
            }
            self.budget -= 1;
            let is_dir = entry.kind == Kind::Directory;
            let mut node = Node {
                name: entry.name,
                kind: if is_dir { "directory" } else { "file" },
                children: None,
                truncated: None,
            };
            if is_dir {
                let full = self.root.relative.join(&path);
                let denied = self.state.scope.denied_by(&full).is_some();
                if depth + 1 >= self.max_depth || denied {
                    self.truncated |= !denied;
                    node.children = Some(Vec::new());
                    node.truncated = Some(true);
                } else {
                    let children = dir
                        .open_dir(&node.name)
                        .map(|sub| self.walk(&sub, &path, depth + 1))
                        .unwrap_or_default();
                    node.children = Some(children);
                }
            }
            nodes.push(node);
        }
        nodes
    }
}

fn tree(args: TreeArgs, state: &Access) -> Result<Reply, AccessError> {
    let (located, dir) = open_directory(state, &args.path)?;
    let max = state.limits.max_entries;
    let mut walk = TreeWalk {
        state,
        root: &located,
        exclude: Exclude::new(&args.exclude_patterns)?,
        max_depth: args.max_depth.unwrap_or(usize::MAX).max(1),
        budget: args.max_entries.unwrap_or(max).min(max),
        truncated: false,
    };
    let nodes = walk.walk(&dir, Path::new(""), 0);
    let truncated = walk.truncated;
    let mut text = serde_json::to_string_pretty(&nodes).unwrap_or_default();
    if truncated {
        text.push_str(
            "\n[truncated: the depth or entry cap left entries out; directories marked \"truncated\" hold more]",
        );
    }
    Ok(Reply::with(
        text,
        &Tree {
            tree: nodes,
            truncated,
        },
    ))
}

/// The listing tools.
pub(crate) fn tools(state: &Arc<State>) -> Vec<ToolDef> {
    vec![
        blocking(
            Spec {
                name: "list_directory",
                title: "List Directory",
                description: "The entries of a directory, sorted by name, each marked [DIR] or \
[FILE]. Only within the allowed directories.",
                annotations: reads(),
                output: Some(schema_of::<Listing>()),
            },
            state,
            list,
        ),
        blocking(
            Spec {
                name: "list_directory_with_sizes",
                title: "List Directory with Sizes",
                description: "The entries of a directory with their sizes, sorted by name or size \
(largest first), and totals. Only within the allowed directories.",
                annotations: reads(),
                output: Some(schema_of::<SizedListing>()),
            },
            state,
            list_sizes,
        ),
        blocking(
            Spec {
                name: "directory_tree",
                title: "Directory Tree",
                description: "A recursive tree of a directory as JSON: each entry has name, type \
(file or directory) and, for directories, children. excludePatterns leaves paths out; maxDepth \
and maxEntries bound it (a directory not fully listed is marked truncated). Symbolic links are \
not followed. Only within the allowed directories.",
                annotations: reads(),
                output: Some(schema_of::<Tree>()),
            },
            state,
            tree,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_the_official_server() {
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(1023), "1023 B");
        assert_eq!(format_size(1536), "1.50 KB");
        assert_eq!(format_size(3 * 1024 * 1024), "3.00 MB");
    }
}
