//! A versioned prompt library: every `*.md` file of a directory is a
//! prompt, YAML front matter on top and a Handlebars template below; the
//! directory is watched, so adding, editing or removing a file changes
//! the catalog and clients are told (`notifications/prompts/list_changed`).
//! Without a directory, the built-in default library is served: an email
//! reply, a product description, a data-analysis report and a code
//! function.
//!
//! ```markdown
//! ---
//! name: summarize
//! version: 1.2.0
//! description: Summarizes a text for a given audience.
//! arguments:
//!   - name: text
//!     description: The text to summarize.
//!     required: true
//!   - name: audience
//!     description: Who will read the summary.
//!     enum: [engineers, managers]
//!   - name: points
//!     description: Points the summary must keep, as a JSON array.
//! tags: [writing]
//! author: Jane Doe
//! ---
//! Summarize this text{{#if audience}} for {{audience}}{{/if}}:
//!
//! {{text}}
//! {{#each points}}
//! - Keep: {{this}}
//! {{/each}}
//! ```
//!
//! - Templates are rendered by the `handlebars` crate without HTML
//!   escaping and in strict mode: a variable that is neither a declared
//!   argument nor one given is an error naming it. A declared argument
//!   left out is null (`{{#if}}` false, `{{#each}}` renders its `{{else}}`)
//!   unless the front matter gives it a `default`.
//! - Arguments are strings in the protocol: an argument whose text is a
//!   JSON array or object reaches the template as that array or object,
//!   for `{{#each}}`; any other text stays text.
//! - Several files may hold one prompt `name` with different semantic
//!   `version`s: the newest (1.10.0 beats 1.9.0) is served unless the
//!   `version` argument every prompt takes names another. The listed
//!   prompt's `_meta` and the result's list them ([`META_VERSIONS`]); the
//!   result's also names the one rendered
//!   ([`META_VERSION`]). `version` and arguments with `enum` values
//!   complete (`completion/complete`). The listing shows the newest
//!   version's arguments, so those it requires must be given whatever
//!   version is picked.
//! - An optional argument given as an empty string counts as left out, as
//!   does an empty `version`.
//! - A line `<!-- role: assistant -->` (or `user`) in the rendered text
//!   starts a message of that role; the text before the first marker is
//!   the user's.
//! - Files are read up to [`MAX_FILE_BYTES`] each, [`MAX_FILES`] in all;
//!   a rendering stops at [`MAX_RENDERED_BYTES`]. Symbolic links are
//!   followed (changes behind a link that leads out of the directory are
//!   not watched); hidden files and directories are skipped.
//! - A file that cannot be used (bad YAML, no name, a bad template) is
//!   logged with the reason and left out; if all of a prompt's files are
//!   broken, `prompts/get` answers why.
//!
//! ```no_run
//! # async fn run() -> Result<(), mcp_builtin::prompts::PromptsError> {
//! use mcp_builtin::prompts::{self, PromptsConfig};
//! let server = prompts::server(PromptsConfig::directory("./prompts"))?;
//! server.serve_stdio().await;
//! # Ok(()) }
//! ```

mod family;
mod file;
mod library;
mod render;
mod watch;

use std::path::PathBuf;
use std::time::Duration;

pub use family::PromptFamily;
pub use file::{
    ArgumentSpec, FileProblem, MAX_FILE_BYTES, MAX_RENDERED_BYTES, PromptVersion, VERSION_ARGUMENT,
};
pub use library::{MAX_FILES, PromptLibrary};
pub use render::{META_ABOUT, META_VERSION, META_VERSIONS, argument_value, split_messages};

/// The server's name in `serverInfo`.
pub const SERVER_NAME: &str = "mcp-prompts";

/// How long the watcher waits for a burst of file changes to settle.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(250);

/// What the prompt library serves and how.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PromptsConfig {
    /// The directory of prompt files; `None` serves the default library.
    pub directory: Option<PathBuf>,
    /// Whether the directory is watched for changes (default: yes).
    pub watch: bool,
    /// How long a burst of changes settles before the directory is read
    /// again.
    pub debounce: Duration,
}

impl Default for PromptsConfig {
    /// The built-in default library.
    fn default() -> Self {
        PromptsConfig {
            directory: None,
            watch: true,
            debounce: DEFAULT_DEBOUNCE,
        }
    }
}

impl PromptsConfig {
    /// The prompt files of `dir`, watched.
    pub fn directory(dir: impl Into<PathBuf>) -> Self {
        PromptsConfig {
            directory: Some(dir.into()),
            ..Default::default()
        }
    }

    /// Turns watching the directory on or off.
    pub fn watch(mut self, watch: bool) -> Self {
        self.watch = watch;
        self
    }

    /// Sets how long a burst of changes settles before the directory is
    /// read again.
    pub fn debounce(mut self, debounce: Duration) -> Self {
        self.debounce = debounce;
        self
    }
}

/// Why the prompt library could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PromptsError {
    /// The directory cannot be read.
    #[error("cannot read the prompt directory {}: {source}", path.display())]
    Directory {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The directory cannot be watched.
    #[error("cannot watch the prompt directory {}: {source}", path.display())]
    Watch {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: notify_debouncer_full::notify::Error,
    },
    /// Watching was asked for outside a Tokio runtime.
    #[error(
        "watching the prompt directory needs a Tokio runtime: build the server inside one, \
         or turn watching off"
    )]
    NoRuntime,
}

/// The prompt library server for `config`. With a watched directory it
/// must be built inside a Tokio runtime; watching lasts as long as that
/// runtime.
pub fn server(config: PromptsConfig) -> Result<mcp_server::Server, PromptsError> {
    let library = match &config.directory {
        Some(dir) => PromptLibrary::load(dir)?,
        None => PromptLibrary::default_library(),
    };
    library.warn_about_problems();
    let mut builder = mcp_server::Server::builder(SERVER_NAME, env!("CARGO_PKG_VERSION"))
        .instructions(
            "A library of prompt templates. Each prompt takes an optional `version` argument \
             (default: the newest); arguments that are lists are given as JSON arrays.",
        );
    for family in library.families().values() {
        builder = builder.prompt(family.prompt_def());
    }
    let server = builder.build();
    if let (Some(dir), true) = (&config.directory, config.watch) {
        watch::watch(server.clone(), dir.clone(), library, config.debounce)?;
    }
    Ok(server)
}
