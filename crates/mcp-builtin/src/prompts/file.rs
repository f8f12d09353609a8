//! One prompt file: YAML front matter (name, version, description,
//! arguments, tags, author) and a Handlebars body, parsed and compiled.

use handlebars::Handlebars;
use serde::Deserialize;

/// The largest prompt file read, in bytes; larger files are reported and
/// skipped.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The name of the argument that picks a version; no prompt may declare
/// an argument of its own with this name.
pub const VERSION_ARGUMENT: &str = "version";

/// The name under which a version's body is registered in its registry.
const BODY: &str = "body";

/// The front matter of a prompt file, as written.
#[derive(Debug, Deserialize)]
struct FrontMatter {
    name: Option<String>,
    version: Option<String>,
    title: Option<String>,
    description: Option<String>,
    #[serde(default)]
    arguments: Vec<ArgumentSpec>,
    #[serde(default)]
    tags: Vec<String>,
    category: Option<String>,
    author: Option<String>,
}

/// One argument a prompt takes, as declared in its front matter.
#[derive(Debug, Clone, Deserialize)]
pub struct ArgumentSpec {
    /// The argument's name, as used in the template (`{{name}}`).
    pub name: String,
    /// What the argument is for, shown to the user.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether `prompts/get` must give it.
    #[serde(default)]
    pub required: bool,
    /// The only values it may take (offered as completions), if limited.
    #[serde(default, rename = "enum")]
    pub values: Option<Vec<String>>,
    /// The value used when it is not given.
    #[serde(default)]
    pub default: Option<String>,
}

/// One version of a prompt, ready to render.
#[derive(Debug)]
pub struct PromptVersion {
    /// The prompt's name.
    pub name: String,
    /// Its semantic version.
    pub version: semver::Version,
    /// A human-readable name, if given.
    pub title: Option<String>,
    /// What the prompt does.
    pub description: Option<String>,
    /// The arguments it takes.
    pub arguments: Vec<ArgumentSpec>,
    /// Free-form labels.
    pub tags: Vec<String>,
    /// A grouping label.
    pub category: Option<String>,
    /// Who wrote it.
    pub author: Option<String>,
    /// Where it came from (a path relative to the library's directory, or
    /// the name of a built-in file).
    pub source: String,
    registry: Handlebars<'static>,
}

/// Why a prompt file could not be used; `name` is the prompt's name when
/// it could still be read, so that `prompts/get` can say why.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileProblem {
    /// The file, relative to the library's directory.
    pub source: String,
    /// The prompt's name, if the file says it.
    pub name: Option<String>,
    /// What is wrong.
    pub reason: String,
}

impl std::fmt::Display for FileProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.source, self.reason)
    }
}

impl PromptVersion {
    /// Parses and compiles the prompt file `text`, read from `source`.
    pub fn parse(source: &str, text: &str) -> Result<PromptVersion, FileProblem> {
        let problem = |name: Option<String>, reason: String| FileProblem {
            source: source.to_owned(),
            name,
            reason,
        };
        let (yaml, body) =
            split_front_matter(text).ok_or_else(|| problem(None, NO_FRONT_MATTER.to_owned()))?;
        let front: FrontMatter = serde_yaml_ng::from_str(yaml).map_err(|e| {
            problem(
                name_in_broken_yaml(yaml),
                format!("the YAML front matter cannot be read: {e}"),
            )
        })?;
        let name = match front.name.as_deref().map(str::trim) {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => {
                return Err(problem(None, "the front matter has no `name`".to_owned()));
            }
        };
        let named = |reason: String| problem(Some(name.clone()), reason);
        let version = match front.version.as_deref().map(str::trim) {
            None => semver::Version::new(0, 0, 0),
            Some(text) => semver::Version::parse(text).map_err(|e| {
                named(format!(
                    "`version: {text}` is not a semantic version such as 1.2.0: {e}"
                ))
            })?,
        };
        check_arguments(&front.arguments).map_err(&named)?;
        let mut registry = Handlebars::new();
        registry.set_strict_mode(true);
        registry.register_escape_fn(handlebars::no_escape);
        registry.register_template_string(BODY, body).map_err(|e| {
            let lines_before_body = text[..text.len() - body.len()].matches('\n').count();
            let place = e.pos().map_or_else(String::new, |(line, column)| {
                format!("line {}, column {column}: ", line + lines_before_body)
            });
            named(format!(
                "the template cannot be compiled: {place}{}",
                e.reason()
            ))
        })?;
        Ok(PromptVersion {
            name,
            version,
            title: front.title,
            description: front.description,
            arguments: front.arguments,
            tags: front.tags,
            category: front.category,
            author: front.author,
            source: source.to_owned(),
            registry,
        })
    }

    /// Renders the body with `data` (the arguments, by name); a text
    /// beyond [`MAX_RENDERED_BYTES`] is an error.
    pub fn render(&self, data: &serde_json::Value) -> Result<String, handlebars::RenderError> {
        let mut out = CappedText::default();
        self.registry.render_to_write(BODY, data, &mut out)?;
        String::from_utf8(out.0).map_err(|e| {
            handlebars::RenderErrorReason::Other(format!("the rendered text is not UTF-8: {e}"))
                .into()
        })
    }
}

/// The largest text one rendering may produce, in bytes.
pub const MAX_RENDERED_BYTES: usize = 4 * 1024 * 1024;

/// Rendered text, refusing to grow beyond [`MAX_RENDERED_BYTES`].
#[derive(Default)]
struct CappedText(Vec<u8>);

impl std::io::Write for CappedText {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + bytes.len() > MAX_RENDERED_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                format!("the rendered text would exceed {MAX_RENDERED_BYTES} bytes"),
            ));
        }
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const NO_FRONT_MATTER: &str = "no YAML front matter: the file must start with a line `---`, the front matter, and a line `---`";

/// Splits `---\nYAML\n---\nBODY` into YAML and body (the body starts after
/// the closing line).
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// The `name:` of front matter that is not valid YAML, read line by line,
/// so that the error can still be attached to the prompt.
fn name_in_broken_yaml(yaml: &str) -> Option<String> {
    yaml.lines().find_map(|line| {
        let value = line.strip_prefix("name:")?.trim();
        let value = value.trim_matches(|c| c == '"' || c == '\'');
        let plain = value
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
        (plain && !value.is_empty()).then(|| value.to_owned())
    })
}

/// Argument names are unique, non-empty, not `version`, and a default is
/// one of the enumerated values.
fn check_arguments(arguments: &[ArgumentSpec]) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for argument in arguments {
        let name = argument.name.as_str();
        if name.trim().is_empty() {
            return Err("an argument has an empty `name`".to_owned());
        }
        if name == VERSION_ARGUMENT {
            return Err(format!(
                "the argument name `{VERSION_ARGUMENT}` is reserved: it picks the prompt's version"
            ));
        }
        if !seen.insert(name) {
            return Err(format!("the argument `{name}` is declared twice"));
        }
        if let (Some(values), Some(default)) = (&argument.values, &argument.default)
            && !values.contains(default)
        {
            return Err(format!(
                "the default of `{name}` ({default:?}) is not one of its `enum` values"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_and_body_are_split_at_the_closing_line() {
        let (yaml, body) = split_front_matter("---\nname: a\n---\nHello\n").unwrap();
        assert_eq!(yaml, "name: a\n");
        assert_eq!(body, "Hello\n");
        assert!(split_front_matter("name: a\n---\nHello").is_none());
        assert!(split_front_matter("---\nname: a\nHello").is_none());
    }

    #[test]
    fn a_file_without_a_name_or_with_a_bad_version_is_refused() {
        let missing = PromptVersion::parse("a.md", "---\nversion: 1.0.0\n---\nHi\n").unwrap_err();
        assert!(missing.reason.contains("no `name`"), "{missing}");
        let bad =
            PromptVersion::parse("b.md", "---\nname: b\nversion: one\n---\nHi\n").unwrap_err();
        assert_eq!(bad.name.as_deref(), Some("b"));
        assert!(bad.reason.contains("semantic version"), "{bad}");
        let unclosed =
            PromptVersion::parse("c.md", "---\nname: c\n---\nok\n{{#if x}}\n").unwrap_err();
        assert!(
            unclosed
                .reason
                .starts_with("the template cannot be compiled: line "),
            "{unclosed}"
        );
        assert!(!unclosed.reason.contains('\n'), "{unclosed}");
    }

    #[test]
    fn broken_yaml_still_names_its_prompt() {
        let broken =
            PromptVersion::parse("c.md", "---\nname: c\narguments: [\n---\nHi\n").unwrap_err();
        assert_eq!(broken.name.as_deref(), Some("c"));
        assert!(broken.reason.contains("YAML"), "{broken}");
    }

    #[test]
    fn block_helpers_alone_on_their_lines_leave_no_blank_lines() {
        let text = "---\nname: t\n---\nA\n{{#if x}}\nyes\n{{else}}\nno\n{{/if}}\n{{#each items}}\n- {{this}}\n{{/each}}\nB <&>\n";
        let prompt = PromptVersion::parse("t.md", text).unwrap();
        let out = prompt
            .render(&serde_json::json!({"x": null, "items": ["1", "2"]}))
            .unwrap();
        assert_eq!(out, "A\nno\n- 1\n- 2\nB <&>\n");
    }

    #[test]
    fn a_rendering_beyond_the_cap_is_an_error() {
        let text =
            "---\nname: t\n---\n{{#each rows}}{{#each ../rows}}{{../../cell}}{{/each}}{{/each}}\n";
        let prompt = PromptVersion::parse("t.md", text).unwrap();
        let rows: Vec<u32> = (0..100).collect();
        let cell = "x".repeat(1000);
        let error = prompt
            .render(&serde_json::json!({"rows": rows, "cell": cell}))
            .unwrap_err();
        assert!(error.to_string().contains("exceed"), "{error}");
    }
}
