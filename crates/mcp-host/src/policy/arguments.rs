//! What a rule says of a request's arguments: `[policy.arguments]`, one
//! matcher per argument.
//!
//! ```toml
//! [[policy]]
//! decision = "deny"
//! server = "filesystem"
//! tool = "write_file"
//! arguments.path = { outside = ["~/projects", "/tmp"] }
//!
//! [[policy]]
//! decision = "ask"
//! tool = "run"
//! arguments.command = { glob = "rm *" }
//! arguments."/options/force" = true      # a bare value: equals
//! ```
//!
//! An argument is named by its key in `arguments`, or by a JSON Pointer
//! into them (`/options/force`). Matchers: `equals` (any JSON value;
//! numbers compare by value), `one_of` (a list of values), `glob` (a
//! string argument), `inside` and `outside` (a path argument, or a list of
//! them, inside one of the directories or not: `~` and `file://` URIs are
//! read, `.` and `..` resolved, and symbolic links followed as far as the
//! path exists, in the directories too; a relative path is inside
//! nothing), and `present` (whether the argument is given at all). Every
//! matcher an argument sets must hold; one an argument that is not given
//! cannot meet (all but `present = false`) does not hold. A list of paths
//! is inside when each is, outside when one is.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::glob::Pattern;

/// How one argument must look, as the settings file writes it: a table of
/// matchers, or a bare value it must equal (a table is always read as
/// matchers, so a misspelt matcher is an error; `equals` compares with a
/// table).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged, try_from = "Value")]
pub enum ArgumentSettings {
    /// `{ glob = "...", inside = [...], ... }`.
    Matchers(MatcherSettings),
    /// A value the argument equals.
    Equals(Value),
}

impl TryFrom<Value> for ArgumentSettings {
    type Error = String;

    fn try_from(value: Value) -> Result<Self, String> {
        if value.is_object() {
            let matchers = serde_json::from_value(value).map_err(|e| e.to_string())?;
            Ok(ArgumentSettings::Matchers(matchers))
        } else {
            Ok(ArgumentSettings::Equals(value))
        }
    }
}

/// The matchers of one argument.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct MatcherSettings {
    /// The argument is this value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub equals: Option<Value>,
    /// The argument is one of these values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub one_of: Option<Vec<Value>>,
    /// The argument is a string this glob matches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub glob: Option<String>,
    /// The argument is a path (or a list of paths) inside one of these
    /// directories.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inside: Option<Directories>,
    /// The argument is a path (or a list with a path) inside none of
    /// these directories.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside: Option<Directories>,
    /// Whether the argument is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub present: Option<bool>,
}

/// One directory, or several.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Directories {
    /// One.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Directories {
    fn as_slice(&self) -> &[String] {
        match self {
            Directories::One(one) => std::slice::from_ref(one),
            Directories::Many(many) => many,
        }
    }
}

/// A rule's matchers over arguments, compiled.
#[derive(Clone, Debug, Default)]
pub(super) struct ArgumentRules {
    each: Vec<ArgumentRule>,
}

#[derive(Clone, Debug)]
struct ArgumentRule {
    /// As written.
    key: String,
    /// Where it is in the arguments.
    pointer: String,
    matchers: Vec<Matcher>,
}

#[derive(Clone, Debug)]
enum Matcher {
    Equals(Value),
    OneOf(Vec<Value>),
    Glob(Pattern),
    Inside(Vec<PathBuf>),
    Outside(Vec<PathBuf>),
    Present(bool),
}

impl ArgumentRules {
    /// The matchers `settings` write, of rule `number`.
    pub(super) fn compile(
        settings: &BTreeMap<String, ArgumentSettings>,
        number: usize,
    ) -> Result<ArgumentRules, String> {
        let mut each = Vec::with_capacity(settings.len());
        for (key, setting) in settings {
            let error = |e: String| format!("[[policy]] #{number}: arguments.{key}: {e}");
            let pointer = if key.starts_with('/') {
                key.clone()
            } else {
                format!("/{}", key.replace('~', "~0").replace('/', "~1"))
            };
            let matchers = match setting {
                ArgumentSettings::Equals(value) => vec![Matcher::Equals(value.clone())],
                ArgumentSettings::Matchers(m) => m.compile().map_err(error)?,
            };
            if matchers.is_empty() {
                return Err(error("names no matcher".into()));
            }
            each.push(ArgumentRule {
                key: key.clone(),
                pointer,
                matchers,
            });
        }
        Ok(ArgumentRules { each })
    }

    /// Whether the rule says nothing of arguments.
    pub(super) fn is_empty(&self) -> bool {
        self.each.is_empty()
    }

    /// Whether `arguments` meet every matcher.
    pub(super) fn hold(&self, arguments: &Value) -> bool {
        self.each.iter().all(|rule| {
            let value = arguments.pointer(&rule.pointer);
            rule.matchers.iter().all(|m| m.holds(value))
        })
    }

    /// Why `arguments` do not match (the first matcher that does not
    /// hold), or `None` when they do.
    pub(super) fn why_not(&self, arguments: &Value) -> Option<String> {
        self.each.iter().find_map(|rule| {
            let value = arguments.pointer(&rule.pointer);
            let failed = rule.matchers.iter().find(|m| !m.holds(value))?;
            let shown = match value {
                Some(value) => format!("argument {:?} ({value})", rule.key),
                None => format!("argument {:?} (not given)", rule.key),
            };
            Some(format!("{shown} {}", failed.describe_unmet()))
        })
    }
}

impl MatcherSettings {
    fn compile(&self) -> Result<Vec<Matcher>, String> {
        let mut matchers = Vec::new();
        if let Some(value) = &self.equals {
            matchers.push(Matcher::Equals(value.clone()));
        }
        if let Some(values) = &self.one_of {
            matchers.push(Matcher::OneOf(values.clone()));
        }
        if let Some(glob) = &self.glob {
            let pattern = Pattern::new(glob).map_err(|e| format!("glob {glob:?}: {e}"))?;
            matchers.push(Matcher::Glob(pattern));
        }
        if let Some(dirs) = &self.inside {
            matchers.push(Matcher::Inside(directories("inside", dirs)?));
        }
        if let Some(dirs) = &self.outside {
            matchers.push(Matcher::Outside(directories("outside", dirs)?));
        }
        if let Some(present) = self.present {
            matchers.push(Matcher::Present(present));
        }
        Ok(matchers)
    }
}

/// The directories of `inside` or `outside`, absolute and resolved.
fn directories(key: &str, dirs: &Directories) -> Result<Vec<PathBuf>, String> {
    let dirs = dirs.as_slice();
    if dirs.is_empty() {
        return Err(format!("{key} names no directory"));
    }
    dirs.iter()
        .map(|dir| {
            resolved(dir)
                .ok_or_else(|| format!("{key}: {dir:?} is not an absolute path (or ~/...)"))
        })
        .collect()
}

impl Matcher {
    fn holds(&self, value: Option<&Value>) -> bool {
        match (self, value) {
            (Matcher::Present(wanted), value) => value.is_some() == *wanted,
            (_, None) => false,
            (Matcher::Equals(wanted), Some(value)) => same(wanted, value),
            (Matcher::OneOf(wanted), Some(value)) => wanted.iter().any(|w| same(w, value)),
            (Matcher::Glob(pattern), Some(value)) => {
                value.as_str().is_some_and(|s| pattern.is_match(s))
            }
            (Matcher::Inside(dirs), Some(value)) => {
                paths(value).is_some_and(|paths| paths.iter().all(|p| within(p, dirs)))
            }
            (Matcher::Outside(dirs), Some(value)) => {
                paths(value).is_some_and(|paths| paths.iter().any(|p| !within(p, dirs)))
            }
        }
    }

    fn describe_unmet(&self) -> String {
        let shown = |dirs: &[PathBuf]| {
            let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            dirs.join(", ")
        };
        match self {
            Matcher::Present(true) => "is not given".into(),
            Matcher::Present(false) => "is given".into(),
            Matcher::Equals(value) => format!("is not {value}"),
            Matcher::OneOf(values) => format!("is not one of {}", Value::from(values.clone())),
            Matcher::Glob(pattern) => format!("is not a string matching {:?}", pattern.text),
            Matcher::Inside(dirs) => format!("is not a path inside {}", shown(dirs)),
            Matcher::Outside(dirs) => format!("is not a path outside {}", shown(dirs)),
        }
    }
}

/// Whether two JSON values are the same, numbers by value (`1` is `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// The paths an argument gives, resolved: a string, or a list of strings
/// (`None` for anything else). A relative path resolves to `None`: it is
/// inside no directory.
fn paths(value: &Value) -> Option<Vec<Option<PathBuf>>> {
    match value {
        Value::String(path) => Some(vec![resolved(path)]),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|item| item.as_str().map(resolved))
            .collect(),
        _ => None,
    }
}

/// Whether `path` is inside one of `dirs` (a path that did not resolve is
/// inside none).
fn within(path: &Option<PathBuf>, dirs: &[PathBuf]) -> bool {
    path.as_ref()
        .is_some_and(|path| dirs.iter().any(|dir| path.starts_with(dir)))
}

/// `path` as the file system reaches it: `file://` URIs decoded, `~` the
/// home directory, `.` and `..` resolved, symbolic links followed as far
/// as the path exists. `None` for a relative path.
pub(super) fn resolved(path: &str) -> Option<PathBuf> {
    let decoded;
    let path = match path.strip_prefix("file://") {
        Some(rest) => {
            // `file://host/path`: only the local host is a path here.
            let rest = rest.strip_prefix("localhost").unwrap_or(rest);
            decoded = percent_encoding::percent_decode_str(rest)
                .decode_utf8()
                .ok()?
                .into_owned();
            decoded.as_str()
        }
        None => path,
    };
    let expanded: PathBuf = match path.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            let home = std::env::var_os("HOME")?;
            Path::new(&home).join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(path),
    };
    if !expanded.is_absolute() {
        return None;
    }
    Some(following_links(&lexical(&expanded)))
}

/// `path` with `.` and `..` resolved by its text (`..` of the root is the
/// root).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `path` with its longest existing ancestor's symbolic links followed,
/// and the rest appended as written.
fn following_links(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return path.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(toml_text: &str) -> ArgumentRules {
        #[derive(Deserialize)]
        struct Wrapper {
            arguments: BTreeMap<String, ArgumentSettings>,
        }
        let wrapper: Wrapper = toml::from_str(toml_text).unwrap();
        ArgumentRules::compile(&wrapper.arguments, 1).unwrap()
    }

    #[test]
    fn equals_one_of_glob_and_present() {
        let r = rules(
            r#"
            arguments.force = true
            arguments.mode = { one_of = ["fast", 2] }
            arguments.command = { glob = "rm *" }
            arguments."/options/level" = { equals = 3 }
            "#,
        );
        let ok =
            json!({"force": true, "mode": 2.0, "command": "rm -rf /", "options": {"level": 3}});
        assert_eq!(r.why_not(&ok), None);
        let with = |pointer: &str, value: Value| {
            let mut arguments = ok.clone();
            match value {
                Value::Null => {
                    let (parent, key) = pointer.rsplit_once('/').unwrap();
                    let parent = arguments.pointer_mut(parent).unwrap();
                    parent.as_object_mut().unwrap().remove(key);
                }
                value => *arguments.pointer_mut(pointer).unwrap() = value,
            }
            r.why_not(&arguments).expect("a matcher fails")
        };
        let why = with("/force", json!(false));
        assert!(why.contains("\"force\" (false) is not true"), "{why}");
        let why = with("/mode", json!("slow"));
        assert!(why.contains("is not one of [\"fast\",2]"), "{why}");
        let why = with("/command", json!("ls"));
        assert!(why.contains("matching \"rm *\""), "{why}");
        let why = with("/options/level", Value::Null);
        assert!(why.contains("\"/options/level\" (not given)"), "{why}");

        let absent = rules("arguments.dry_run = { present = false }");
        assert_eq!(absent.why_not(&json!({})), None);
        assert!(absent.why_not(&json!({"dry_run": true})).is_some());
        assert!(absent.why_not(&Value::Null).is_none());
    }

    #[test]
    fn paths_are_resolved_before_they_are_compared() {
        let root = std::env::temp_dir().join(format!("mcp-args-{}", std::process::id()));
        let project = root.join("project");
        std::fs::create_dir_all(project.join("src")).unwrap();
        let outside = root.join("elsewhere");
        std::fs::create_dir_all(&outside).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, project.join("link")).unwrap();
        let dir = project.display().to_string();
        let inside = rules(&format!("arguments.path = {{ inside = {dir:?} }}"));
        let out = rules(&format!("arguments.path = {{ outside = [{dir:?}] }}"));
        let cases = [
            (format!("{dir}/src/main.rs"), true),
            (format!("{dir}/new/file.txt"), true),
            (format!("{dir}/src/../../elsewhere/x"), false),
            (format!("{dir}/./src"), true),
            (format!("{dir}-evil/x"), false),
            ("relative/path".to_owned(), false),
            (format!("file://{}/src/a%20b.rs", dir), true),
            ("/etc/passwd".to_owned(), false),
            #[cfg(unix)]
            (format!("{dir}/link/secret"), false),
        ];
        for (path, is_inside) in &cases {
            let args = json!({ "path": path });
            assert_eq!(
                inside.why_not(&args).is_none(),
                *is_inside,
                "inside: {path}"
            );
            assert_eq!(out.why_not(&args).is_none(), !*is_inside, "outside: {path}");
        }
        // A list is inside when each path is, outside when one is.
        let list = json!({"path": [format!("{dir}/a"), "/etc/passwd"]});
        assert!(inside.why_not(&list).is_some());
        assert!(out.why_not(&list).is_none());
        // A path that is not given is neither.
        assert!(inside.why_not(&json!({})).is_some());
        assert!(out.why_not(&json!({})).is_some());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn bad_matchers_are_refused_with_their_key() {
        #[derive(Deserialize)]
        struct Wrapper {
            arguments: BTreeMap<String, ArgumentSettings>,
        }
        let compile = |text: &str| {
            let wrapper: Wrapper = toml::from_str(text).unwrap();
            ArgumentRules::compile(&wrapper.arguments, 4).unwrap_err()
        };
        let error = compile(r#"arguments.path = { inside = "relative" }"#);
        assert!(error.contains("#4: arguments.path: inside"), "{error}");
        let error = compile(r#"arguments.path = { inside = [] }"#);
        assert!(error.contains("names no directory"), "{error}");
        let wrapper: Result<Wrapper, _> = toml::from_str(r#"arguments.path = { insde = "/x" }"#);
        let error = wrapper.err().unwrap().to_string();
        assert!(error.contains("unknown field `insde`"), "{error}");
        let error = compile(r#"arguments.path = { glob = "[" }"#);
        assert!(error.contains("glob"), "{error}");
    }
}
