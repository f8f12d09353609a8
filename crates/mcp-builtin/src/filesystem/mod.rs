//! A file system server: the operator's directories, read-only unless
//! writing is allowed, contained by directory handles rather than by
//! string checks, with a secret deny-list, resources for files and
//! directories, and change notifications.
//!
//! ```no_run
//! # async fn run() -> Result<(), String> {
//! let config = mcp_builtin::filesystem::Config::new(["/srv/docs"]).write(true);
//! let server = mcp_builtin::filesystem::server(config)?;
//! server.serve_stdio().await;
//! # Ok(()) }
//! ```
//!
//! # Parity with the official server
//!
//! Every tool of `@modelcontextprotocol/server-filesystem` exists here under
//! the same name, with the same arguments and meaning:
//!
//! | Official tool | Here | What is added |
//! |---|---|---|
//! | `read_text_file` (`head`, `tail`) | `read_text_file` | `offset`/`limit` line ranges; a size cap that says it truncated and which `offset` continues; `tail` counts lines, not the empty string after a file's last line break (the official `tail: 1` of `"a\nb\n"` is empty) |
//! | `read_file` (deprecated) | `read_file` | the same as `read_text_file` |
//! | `read_media_file` | `read_media_file` | size cap; other binaries as an embedded `blob` |
//! | `read_multiple_files` | `read_multiple_files` | per-file size cap; structured result per file |
//! | `list_directory` | `list_directory` | sorted; entry cap; structured entries |
//! | `list_directory_with_sizes` (`sortBy`) | `list_directory_with_sizes` | structured entries and totals |
//! | `directory_tree` (`excludePatterns`) | `directory_tree` | `maxDepth`, `maxEntries` |
//! | `search_files` (`excludePatterns`) | `search_files` | `maxResults`; bounded walk |
//! | `get_file_info` | `get_file_info` | structured result |
//! | `list_allowed_directories` | `list_allowed_directories` | structured result |
//! | `write_file` | `write_file` (`--write`) | atomic (temporary file and rename), never follows a symlink at the target |
//! | `edit_file` (`edits`, `dryRun`) | `edit_file` (`--write`) | whitespace-tolerant matching; a failure names the edit that did not match and why |
//! | `create_directory` | `create_directory` (`--write`) | |
//! | `move_file` | `move_file` (`--write`) | refuses to replace an existing destination |
//! | — | `search_content` | grep: regular expression or literal, context lines, result cap |
//! | — | `copy_file`, `delete_file` (`--write`) | |
//!
//! Beyond the tools: every path goes through a directory handle
//! ([`cap_std`]), secrets (`.env`, keys, `.ssh/` ...) are refused unless the
//! operator allows them, the write tools are not listed at all without
//! [`Config::write`], and files are resources (`file:///…`, with the
//! template `file:///{+path}` and path completion). Client roots narrow the
//! scope of tool calls and resource reads, never widen it: a client that
//! declares roots reaches only the parts of the allowed directories inside
//! them (a root outside them grants nothing); `resources/list` and
//! completion show the operator's directories.

mod edit;
mod listing;
mod read;
mod resources;
mod roots;
mod scope;
mod search;
mod tools;
mod uri;
mod watch;
mod write;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub use scope::DEFAULT_DENY;

use mcp_core::sync::MutexExt as _;
use scope::Scope;

/// How much the server reads, lists and returns at most.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Bytes of text one read returns before it says it truncated.
    pub max_read_bytes: usize,
    /// Bytes of a media file or resource read whole.
    pub max_file_bytes: u64,
    /// Entries of one listing or tree.
    pub max_entries: usize,
    /// Entries a search visits.
    pub max_walk: usize,
    /// Results of one search.
    pub max_results: usize,
    /// Resources listed by `resources/list`.
    pub max_listed: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_read_bytes: 256 * 1024,
            max_file_bytes: 16 * 1024 * 1024,
            max_entries: 10_000,
            max_walk: 200_000,
            max_results: 1_000,
            max_listed: 1_000,
        }
    }
}

/// What the file system server serves and allows.
#[derive(Debug, Clone)]
pub struct Config {
    directories: Vec<PathBuf>,
    write: bool,
    watch: bool,
    deny: Vec<String>,
    allow_secrets: bool,
    limits: Limits,
}

impl Config {
    /// Serves `directories` read-only, with the default deny-list.
    pub fn new<I, P>(directories: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        Config {
            directories: directories.into_iter().map(Into::into).collect(),
            write: false,
            watch: false,
            deny: DEFAULT_DENY.iter().map(|s| (*s).to_owned()).collect(),
            allow_secrets: false,
            limits: Limits::default(),
        }
    }

    /// Offers the write tools (`write_file`, `edit_file` ...).
    pub fn write(mut self, write: bool) -> Self {
        self.write = write;
        self
    }

    /// Watches the directories: changes become resource notifications.
    pub fn watch(mut self, watch: bool) -> Self {
        self.watch = watch;
        self
    }

    /// Adds a glob to the deny-list (matched against each path component
    /// and the whole path beneath an allowed directory).
    pub fn deny(mut self, glob: impl Into<String>) -> Self {
        self.deny.push(glob.into());
        self
    }

    /// Turns the deny-list off.
    pub fn allow_secrets(mut self, allow: bool) -> Self {
        self.allow_secrets = allow;
        self
    }

    /// Sets the size and count caps.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

/// What every tool and resource shares.
pub(crate) struct State {
    pub(crate) scope: Scope,
    pub(crate) limits: Limits,
    /// The URIs `resources/list` holds now.
    pub(crate) listed: Mutex<Vec<String>>,
    /// The watcher, kept alive with the server.
    pub(crate) watcher: Mutex<Option<watch::Watcher>>,
}

/// Why the server could not be built.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(String);

impl From<ConfigError> for String {
    fn from(e: ConfigError) -> String {
        e.0
    }
}

/// The file system server for `config`. Fails when a directory cannot be
/// opened, a deny glob does not compile, or watching cannot start.
/// Watching needs a Tokio runtime (it notifies from it).
pub fn server(config: Config) -> Result<mcp_server::Server, ConfigError> {
    let deny = (!config.allow_secrets).then_some(config.deny.as_slice());
    let scope = Scope::open(&config.directories, deny).map_err(ConfigError)?;
    let state = Arc::new(State {
        scope,
        limits: config.limits,
        listed: Mutex::new(Vec::new()),
        watcher: Mutex::new(None),
    });
    let mut builder = mcp_server::Server::builder("mcp-filesystem", env!("CARGO_PKG_VERSION"))
        .instructions(instructions(&state, config.write));
    for tool in read::tools(&state)
        .into_iter()
        .chain(listing::tools(&state))
        .chain(search::tools(&state))
    {
        builder = builder.tool(tool);
    }
    if config.write {
        for tool in write::tools(&state) {
            builder = builder.tool(tool);
        }
    }
    builder = builder.template(resources::template(&state).map_err(ConfigError)?);
    let listed = resources::listed(&state);
    *state.listed.locked() = listed.iter().map(|r| r.resource().uri.clone()).collect();
    for resource in listed {
        builder = builder.resource(resource);
    }
    if !config.watch {
        let watched = Arc::clone(&state);
        builder = builder.on_subscriptions_changed(move |server| {
            watch::watch_while_subscribed(&watched, server)
        });
    }
    let server = builder.build();
    if config.watch {
        let watcher = watch::start(Arc::clone(&state), server.clone()).map_err(ConfigError)?;
        *state.watcher.locked() = Some(watcher);
    }
    Ok(server)
}

fn instructions(state: &State, write: bool) -> String {
    let directories: Vec<String> = state
        .scope
        .allowed()
        .iter()
        .map(|a| a.path.display().to_string())
        .collect();
    format!(
        "Files under {}. Paths are absolute or relative to {}. {}",
        directories.join(", "),
        directories[0],
        if write {
            "Reading and writing are allowed."
        } else {
            "Read-only: there are no write tools."
        }
    )
}
