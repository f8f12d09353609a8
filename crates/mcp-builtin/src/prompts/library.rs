//! A prompt library: every prompt file of a directory (or the built-in
//! default library), grouped by prompt name, each name with its versions
//! ordered by semantic version and the problems of its broken files.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcp_server::{PromptDef, completion};

use super::PromptsError;
use super::family::PromptFamily;
use super::file::{FileProblem, MAX_FILE_BYTES, PromptVersion, VERSION_ARGUMENT};

/// The most prompt files one library reads; the rest are reported and
/// skipped.
pub const MAX_FILES: usize = 10_000;

/// How deep below the library's directory prompt files are looked for.
const MAX_DEPTH: usize = 16;

/// The default library, served when no directory is given.
const DEFAULT_LIBRARY: [(&str, &str); 4] = [
    ("email-reply.md", include_str!("default/email-reply.md")),
    (
        "product-description.md",
        include_str!("default/product-description.md"),
    ),
    (
        "data-analysis-report.md",
        include_str!("default/data-analysis-report.md"),
    ),
    ("code-function.md", include_str!("default/code-function.md")),
];

impl PromptFamily {
    /// The prompt as served: listed with the newest version's description
    /// and arguments (plus `version`), rendered by [`render`](Self::render).
    pub fn prompt_def(self: &Arc<Self>) -> PromptDef {
        let family = Arc::clone(self);
        let Some(newest) = self.newest() else {
            let reasons: Vec<String> = self.problems.iter().map(|p| p.reason.clone()).collect();
            return PromptDef::new(
                self.name.clone(),
                format!("(unavailable: {})", reasons.join("; ")),
                move |args, _ctx| {
                    let family = Arc::clone(&family);
                    async move { family.render(&args) }
                },
            );
        };
        let description = newest.description.clone().unwrap_or_default();
        let mut def = PromptDef::new(self.name.clone(), description, move |args, _ctx| {
            let family = Arc::clone(&family);
            async move { family.render(&args) }
        });
        for argument in &newest.arguments {
            def = def.argument(
                argument.name.clone(),
                argument_description(argument),
                argument.required,
            );
            if let Some(values) = &argument.values {
                def = def.complete(
                    argument.name.clone(),
                    completion::from_values(values.clone()),
                );
            }
        }
        let versions = self.version_list();
        if let Some(title) = &newest.title {
            def = def.title(title.clone());
        }
        let mut meta = mcp_schema::Meta::new();
        meta.insert(
            super::render::META_VERSIONS.to_owned(),
            versions.clone().into(),
        );
        def = def.meta(meta);
        def.argument(
            VERSION_ARGUMENT,
            format!(
                "Which version to render (semantic version); default: the newest, {}. Versions: {}",
                newest.version,
                versions.join(", ")
            ),
            false,
        )
        .complete(VERSION_ARGUMENT, completion::from_values(versions))
    }
}

/// An argument's description as listed: its own, with its values and its
/// default.
fn argument_description(argument: &super::file::ArgumentSpec) -> String {
    let mut text = argument.description.clone().unwrap_or_default();
    if let Some(values) = &argument.values {
        let sep = if text.is_empty() { "" } else { " " };
        text.push_str(&format!("{sep}One of: {}.", values.join(", ")));
    }
    if let Some(default) = &argument.default {
        let sep = if text.is_empty() { "" } else { " " };
        text.push_str(&format!("{sep}Default: {default}."));
    }
    text
}

/// What the files of one prompt name gave, while a library is read.
#[derive(Default)]
struct Gathered {
    versions: Vec<PromptVersion>,
    problems: Vec<FileProblem>,
    /// Of every file's path and contents.
    digest: std::hash::DefaultHasher,
}

/// Every prompt of a directory or of the default library.
#[derive(Debug, Default)]
pub struct PromptLibrary {
    families: BTreeMap<String, Arc<PromptFamily>>,
    problems: Vec<FileProblem>,
}

impl PromptLibrary {
    /// Reads every `*.md` file under `dir` (hidden files and directories
    /// skipped). Broken files are reported in [`problems`](Self::problems)
    /// and do not keep the others out; only an unreadable `dir` is an
    /// error.
    pub fn load(dir: &Path) -> Result<PromptLibrary, PromptsError> {
        let unreadable = |source: std::io::Error| PromptsError::Directory {
            path: dir.to_owned(),
            source,
        };
        if !std::fs::metadata(dir).map_err(unreadable)?.is_dir() {
            return Err(unreadable(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                "not a directory",
            )));
        }
        let mut files: Vec<(String, String)> = Vec::new();
        let mut problems = Vec::new();
        for path in prompt_paths(dir, &mut problems) {
            let source = relative(dir, &path);
            if files.len() >= MAX_FILES {
                problems.push(FileProblem {
                    source,
                    name: None,
                    reason: format!("skipped: the library holds at most {MAX_FILES} files"),
                });
                continue;
            }
            match read_prompt_file(&path) {
                Ok(text) => files.push((source, text)),
                Err(reason) => problems.push(FileProblem {
                    source,
                    name: None,
                    reason,
                }),
            }
        }
        let mut library = PromptLibrary::from_sources(files);
        problems.append(&mut library.problems);
        library.problems = problems;
        Ok(library)
    }

    /// The built-in default library: an email reply, a product
    /// description, a data-analysis report and a code function.
    pub fn default_library() -> PromptLibrary {
        PromptLibrary::from_sources(
            DEFAULT_LIBRARY
                .iter()
                .map(|(name, text)| (format!("(built-in) {name}"), (*text).to_owned())),
        )
    }

    /// A library of the files `(source, text)`, in this order: of two files
    /// with the same name and version, the first wins.
    pub fn from_sources(files: impl IntoIterator<Item = (String, String)>) -> PromptLibrary {
        let mut library = PromptLibrary::default();
        let mut grouped: BTreeMap<String, Gathered> = BTreeMap::new();
        for (source, text) in files {
            match PromptVersion::parse(&source, &text) {
                Ok(version) => {
                    let gathered = grouped.entry(version.name.clone()).or_default();
                    (&source, &text).hash(&mut gathered.digest);
                    if let Some(first) = gathered
                        .versions
                        .iter()
                        .find(|v| v.version == version.version)
                    {
                        library.problems.push(FileProblem {
                            reason: format!(
                                "version {} of prompt {} is also in {}, which is served instead",
                                version.version, version.name, first.source
                            ),
                            source,
                            name: Some(version.name),
                        });
                    } else {
                        gathered.versions.push(version);
                    }
                }
                Err(problem) => {
                    if let Some(name) = &problem.name {
                        let gathered = grouped.entry(name.clone()).or_default();
                        (&source, &text).hash(&mut gathered.digest);
                        gathered.problems.push(problem.clone());
                    }
                    library.problems.push(problem);
                }
            }
        }
        for (name, mut gathered) in grouped {
            gathered.versions.sort_by(|a, b| b.version.cmp(&a.version));
            let family = PromptFamily {
                name: name.clone(),
                versions: gathered.versions,
                problems: gathered.problems,
                fingerprint: gathered.digest.finish(),
            };
            library.families.insert(name, Arc::new(family));
        }
        library
    }

    /// The prompts, by name.
    pub fn families(&self) -> &BTreeMap<String, Arc<PromptFamily>> {
        &self.families
    }

    /// The prompt `name`, if the library has it.
    pub fn family(&self, name: &str) -> Option<&Arc<PromptFamily>> {
        self.families.get(name)
    }

    /// The files that could not be used (or lost to another file with the
    /// same name and version), and why.
    pub fn problems(&self) -> &[FileProblem] {
        &self.problems
    }

    /// Logs each problem as a warning naming the file and the reason.
    pub fn warn_about_problems(&self) {
        for problem in &self.problems {
            tracing::warn!(file = %problem.source, "prompt file not served: {}", problem.reason);
        }
    }
}

/// Every `*.md` file under `dir`, in path order, skipping hidden entries.
fn prompt_paths(dir: &Path, problems: &mut Vec<FileProblem>) -> Vec<PathBuf> {
    let walker = walkdir::WalkDir::new(dir)
        .max_depth(MAX_DEPTH)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    let mut paths = Vec::new();
    for entry in walker {
        match entry {
            Ok(entry) => {
                let is_prompt = entry.file_type().is_file()
                    && entry.path().extension().is_some_and(|e| e == "md");
                if is_prompt {
                    paths.push(entry.into_path());
                }
            }
            Err(e) => problems.push(FileProblem {
                source: e.path().map_or_else(String::new, |p| relative(dir, p)),
                name: None,
                reason: format!("cannot be read: {e}"),
            }),
        }
    }
    paths
}

/// The text of the prompt file at `path`, bounded in size.
fn read_prompt_file(path: &Path) -> Result<String, String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("cannot be read: {e}"))?
        .len();
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "too large: {size} bytes (a prompt file holds at most {MAX_FILE_BYTES})"
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot be read: {e}"))?;
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_owned())
}

fn relative(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_server::PromptArguments;

    fn file(name: &str, version: &str) -> String {
        format!("---\nname: {name}\nversion: {version}\n---\nv{version}\n")
    }

    #[test]
    fn versions_are_ordered_by_semantic_version() {
        let library = PromptLibrary::from_sources([
            ("a.md".to_owned(), file("p", "1.9.0")),
            ("b.md".to_owned(), file("p", "1.10.0")),
            ("c.md".to_owned(), file("p", "1.2.0")),
        ]);
        let family = library.family("p").unwrap();
        assert_eq!(family.version_list(), ["1.10.0", "1.9.0", "1.2.0"]);
    }

    #[test]
    fn a_picked_version_checks_its_own_required_arguments() {
        let old = "---\nname: p\nversion: 1.0.0\narguments:\n  - name: who\n    required: true\n---\n{{who}}\n";
        let library = PromptLibrary::from_sources([
            ("old.md".to_owned(), old.to_owned()),
            ("new.md".to_owned(), file("p", "2.0.0")),
        ]);
        let family = library.family("p").unwrap();
        let pick = |pairs: &[(&str, &str)]| {
            let args: PromptArguments = pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            family.render(&args)
        };
        let error = pick(&[("version", "1.0.0")]).unwrap_err();
        assert!(error.to_string().contains("\"who\""), "{error}");
        let rendered = pick(&[("version", "1.0.0"), ("who", "Ada")]).unwrap();
        assert_eq!(rendered.messages[0].content.as_text(), Some("Ada"));
        assert!(pick(&[]).is_ok());
    }

    #[test]
    fn of_two_files_with_one_version_the_later_loses() {
        let library = PromptLibrary::from_sources([
            ("a.md".to_owned(), file("p", "1.0.0")),
            ("b.md".to_owned(), file("p", "1.0.0")),
        ]);
        assert_eq!(library.family("p").unwrap().versions[0].source, "a.md");
        let problem = &library.problems()[0];
        assert_eq!(problem.source, "b.md");
        assert!(problem.reason.contains("a.md"), "{problem}");
    }

    #[cfg(unix)]
    #[test]
    fn loading_follows_links_and_skips_hidden_and_other_files() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("linked.md"), file("linked", "1.0.0")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path().join("linked.md"), dir.path().join("l.md"))
            .unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/nested.md"), file("nested", "1.0.0")).unwrap();
        std::fs::write(dir.path().join(".hidden.md"), file("hidden", "1.0.0")).unwrap();
        std::fs::write(dir.path().join("notes.txt"), file("notes", "1.0.0")).unwrap();
        let library = PromptLibrary::load(dir.path()).unwrap();
        let names: Vec<&String> = library.families().keys().collect();
        assert_eq!(names, ["linked", "nested"]);
        assert_eq!(
            library.family("nested").unwrap().versions[0].source,
            "sub/nested.md"
        );
        assert!(PromptLibrary::load(&dir.path().join("notes.txt")).is_err());
    }

    /// Log lines written to a shared buffer.
    #[derive(Clone, Default)]
    struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn each_broken_file_is_logged_as_a_warning_with_its_reason() {
        let library = PromptLibrary::from_sources([
            ("good.md".to_owned(), file("good", "1.0.0")),
            (
                "nameless.md".to_owned(),
                "---\nversion: 1.0.0\n---\nHi\n".to_owned(),
            ),
            (
                "unclosed.md".to_owned(),
                "---\nname: u\n---\n{{#if x}}\n".to_owned(),
            ),
        ]);
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || library.warn_about_problems());
        let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 2, "{log}");
        assert!(lines[0].contains("WARN"), "{log}");
        assert!(
            lines[0].contains("nameless.md") && lines[0].contains("no `name`"),
            "{log}"
        );
        assert!(
            lines[1].contains("unclosed.md") && lines[1].contains("template"),
            "{log}"
        );
    }

    #[test]
    fn the_default_library_has_four_working_prompts() {
        let library = PromptLibrary::default_library();
        assert!(library.problems().is_empty(), "{:?}", library.problems());
        let names: Vec<&String> = library.families().keys().collect();
        assert_eq!(
            names,
            [
                "code-function",
                "data-analysis-report",
                "email-reply",
                "product-description"
            ]
        );
    }
}
