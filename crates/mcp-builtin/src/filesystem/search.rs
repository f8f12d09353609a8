//! Searching: file names by glob (`search_files`) and file contents by
//! regular expression or literal (`search_content`), both bounded.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::fs::Dir;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, Sink, SinkContext, SinkMatch};
use mcp_server::ToolDef;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::State;
use super::listing::{Exclude, Kind, entries, glob, open_directory};
use super::roots::Access;
use super::scope::{AccessError, Located};
use super::tools::{Reply, Spec, blocking, reads, schema_of};

/// Walks the tree beneath `start` depth first, through directory handles,
/// without following symbolic links or entering denied directories;
/// visits at most `max_walk` entries. Returns whether the cap stopped it.
fn walk(
    state: &Access,
    start: &Located,
    dir: Dir,
    mut visit: impl FnMut(&Dir, &Path, Kind) -> ControlFlow<()>,
) -> bool {
    let mut budget = state.limits.max_walk;
    let mut stack: Vec<(Dir, PathBuf)> = vec![(dir, PathBuf::new())];
    while let Some((dir, relative)) = stack.pop() {
        let Ok((list, _)) = entries(&dir, budget.saturating_add(1)) else {
            continue;
        };
        for entry in list {
            if budget == 0 {
                return true;
            }
            budget -= 1;
            let path = relative.join(&entry.name);
            if state.scope.denied_by(&start.relative.join(&path)).is_some() {
                continue;
            }
            if visit(&dir, &path, entry.kind).is_break() {
                return false;
            }
            if entry.kind == Kind::Directory
                && let Ok(sub) = dir.open_dir(&entry.name)
            {
                stack.push((sub, path));
            }
        }
    }
    false
}

/// Arguments of `search_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct FilesArgs {
    /// Where to search: absolute, or relative to the first allowed directory.
    path: String,
    /// A glob matched against paths relative to `path`: `*.rs` matches at the top, `**/*.rs` anywhere.
    pattern: String,
    /// Globs of paths to leave out.
    #[serde(default)]
    exclude_patterns: Vec<String>,
    /// The most results to return (the server's cap when absent or larger).
    #[serde(default)]
    max_results: Option<usize>,
}

/// What `search_files` found.
#[derive(Debug, Serialize, JsonSchema)]
struct FoundFiles {
    /// Absolute paths of the matching files and directories.
    paths: Vec<String>,
    /// Whether a cap stopped the search.
    truncated: bool,
}

fn search_files(args: FilesArgs, state: &Access) -> Result<Reply, AccessError> {
    let (located, dir) = open_directory(state, &args.path)?;
    let pattern = glob(&args.pattern)?.compile_matcher();
    let exclude = Exclude::new(&args.exclude_patterns)?;
    let max = args
        .max_results
        .unwrap_or(state.limits.max_results)
        .min(state.limits.max_results);
    let base = state.scope.display(&located);
    let mut paths = Vec::new();
    let mut more = false;
    let stopped = walk(state, &located, dir, |_, path, _| {
        if exclude.excludes(path) {
            return ControlFlow::Continue(());
        }
        if pattern.is_match(path) {
            if paths.len() == max {
                more = true;
                return ControlFlow::Break(());
            }
            paths.push(base.join(path).display().to_string());
        }
        ControlFlow::Continue(())
    });
    let truncated = stopped || more;
    let mut text = if paths.is_empty() {
        "No matches found".to_owned()
    } else {
        paths.join("\n")
    };
    if truncated {
        text.push_str(&format!(
            "\n[truncated: the search stopped at {} results or {} entries visited; narrow the path or pattern]",
            max, state.limits.max_walk
        ));
    }
    Ok(Reply::with(text, &FoundFiles { paths, truncated }))
}

/// Arguments of `search_content`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ContentArgs {
    /// Where to search (a directory or one file): absolute, or relative to the first allowed directory.
    path: String,
    /// A regular expression (Rust syntax), or text when `literal` is true.
    pattern: String,
    /// Search for the pattern as plain text.
    #[serde(default)]
    literal: bool,
    /// Ignore case.
    #[serde(default)]
    case_insensitive: bool,
    /// Only files whose path relative to `path` matches this glob (`**/*.rs`).
    #[serde(default)]
    file_pattern: Option<String>,
    /// Lines of context before and after each match (at most 10).
    #[serde(default)]
    context_lines: Option<usize>,
    /// The most matching lines to return (the server's cap when absent or larger).
    #[serde(default)]
    max_results: Option<usize>,
}

/// One line of a content search.
#[derive(Debug, Serialize, JsonSchema)]
struct Hit {
    /// The file's absolute path.
    path: String,
    /// The line number (1-based).
    line: u64,
    /// The line, without its line ending.
    text: String,
    /// Whether the line matched (false: a context line).
    #[serde(rename = "match")]
    is_match: bool,
}

/// What `search_content` found.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct FoundContent {
    /// Matching lines with their context, file by file.
    lines: Vec<Hit>,
    /// How many lines matched.
    matches: usize,
    /// How many files were searched.
    files_searched: usize,
    /// Whether a cap stopped the search.
    truncated: bool,
}

/// Collects the lines of one file.
struct Collect<'a> {
    path: &'a str,
    out: &'a mut FoundContent,
    max: usize,
    text: &'a mut String,
    last_line: Option<u64>,
}

impl Collect<'_> {
    fn push(&mut self, line: u64, bytes: &[u8], is_match: bool) {
        let text = String::from_utf8_lossy(bytes)
            .trim_end_matches(['\n', '\r'])
            .to_owned();
        if self.last_line.is_some_and(|last| line > last + 1) {
            self.text.push_str("--\n");
        }
        self.last_line = Some(line);
        let separator = if is_match { ':' } else { '-' };
        self.text.push_str(&format!(
            "{}{separator}{line}{separator}{text}\n",
            self.path
        ));
        self.out.lines.push(Hit {
            path: self.path.to_owned(),
            line,
            text,
            is_match,
        });
    }
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(
        &mut self,
        _: &grep_searcher::Searcher,
        found: &SinkMatch<'_>,
    ) -> Result<bool, Self::Error> {
        if self.out.matches == self.max {
            self.out.truncated = true;
            return Ok(false);
        }
        self.out.matches += 1;
        let line = found.line_number().unwrap_or(0);
        self.push(line, found.bytes(), true);
        Ok(true)
    }

    fn context(
        &mut self,
        _: &grep_searcher::Searcher,
        context: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        let line = context.line_number().unwrap_or(0);
        self.push(line, context.bytes(), false);
        Ok(true)
    }
}

fn search_content(args: ContentArgs, state: &Access) -> Result<Reply, AccessError> {
    let pattern = if args.literal {
        regex::escape(&args.pattern)
    } else {
        args.pattern.clone()
    };
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive)
        .size_limit(1 << 20)
        .build(&pattern)
        .map_err(|e| AccessError::Invalid(format!("pattern: {e}")))?;
    let context = args.context_lines.unwrap_or(0).min(10);
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let max = args
        .max_results
        .unwrap_or(state.limits.max_results)
        .min(state.limits.max_results);
    let file_pattern = args
        .file_pattern
        .as_deref()
        .map(|p| glob(p).map(|g| g.compile_matcher()))
        .transpose()?;
    let mut found = FoundContent {
        lines: Vec::new(),
        matches: 0,
        files_searched: 0,
        truncated: false,
    };
    let mut text = String::new();
    let located = state.locate(&args.path)?;
    let root = state.scope.dir(located.root);
    let is_dir = root
        .metadata(located.handle_path())
        .map_err(|e| AccessError::io(&args.path, e))?
        .is_dir();
    let max_file = state.limits.max_file_bytes;
    let mut search_one = |dir: &Dir, name: &Path, shown: &Path, found: &mut FoundContent| {
        let Ok(file) = dir.open(name) else { return };
        if file.metadata().map_or(true, |m| m.len() > max_file) {
            return;
        }
        found.files_searched += 1;
        let shown = shown.display().to_string();
        let mut sink = Collect {
            path: &shown,
            out: found,
            max,
            text: &mut text,
            last_line: None,
        };
        let _ = searcher.search_reader(&matcher, file, &mut sink);
    };
    if is_dir {
        let dir = root
            .open_dir(located.handle_path())
            .map_err(|e| AccessError::io(&args.path, e))?;
        let base = state.scope.display(&located);
        let stopped = walk(state, &located, dir, |parent, path, kind| {
            if kind != Kind::File {
                return ControlFlow::Continue(());
            }
            if file_pattern.as_ref().is_some_and(|p| !p.is_match(path)) {
                return ControlFlow::Continue(());
            }
            let Some(name) = path.file_name() else {
                return ControlFlow::Continue(());
            };
            search_one(parent, Path::new(name), &base.join(path), &mut found);
            if found.truncated {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        found.truncated |= stopped;
    } else {
        let shown = state.scope.display(&located);
        search_one(root, located.handle_path(), &shown, &mut found);
    }
    if found.matches == 0 {
        text = "No matches found".to_owned();
    }
    if found.truncated {
        text.push_str(&format!(
            "[truncated: the search stopped at {max} matches or {} entries visited; narrow the path, pattern or filePattern]",
            state.limits.max_walk
        ));
    }
    Ok(Reply::with(text, &found))
}

/// The search tools.
pub(crate) fn tools(state: &Arc<State>) -> Vec<ToolDef> {
    vec![
        blocking(
            Spec {
                name: "search_files",
                title: "Search Files",
                description: "Find files and directories whose path relative to `path` matches a \
glob: `*.ext` at the top, `**/*.ext` anywhere. Returns absolute paths; bounded by maxResults. \
Only within the allowed directories.",
                annotations: reads(),
                output: Some(schema_of::<FoundFiles>()),
            },
            state,
            search_files,
        ),
        blocking(
            Spec {
                name: "search_content",
                title: "Search File Contents",
                description: "Search the contents of files (grep): a regular expression, or text \
with literal=true, optionally case-insensitive, in files matching filePattern, with contextLines \
around each match. Lines read `path:line:text` (context `path-line-text`). Binary files and \
secrets are skipped; bounded by maxResults. Only within the allowed directories.",
                annotations: reads(),
                output: Some(schema_of::<FoundContent>()),
            },
            state,
            search_content,
        ),
    ]
}
