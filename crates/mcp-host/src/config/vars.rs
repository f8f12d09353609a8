//! Variables in config values, as the hosts users come from write them:
//! `${VAR}`, `${VAR:-default}`, `${env:VAR}`, `${userHome}`,
//! `${workspaceFolder}` and VS Code's `${input:id}`; `${caller}` is kept
//! as it is, for each caller's own connection to fill in (see
//! [`crate::isolation`]).
//!
//! An unset variable without a default is an error naming it: the server
//! that uses it is not started, rather than started with an empty value.

use mcp_core::sync::MutexExt as _;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A VS Code `inputs` entry: a value asked of the person on first use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputSpec {
    /// The id that `${input:id}` names.
    pub id: String,
    /// What to show when asking.
    pub description: String,
    /// Whether the answer is a secret (typed without echo).
    pub password: bool,
    /// The value to offer when the person just presses Enter.
    pub default: Option<String>,
}

/// Answers `${input:id}`: a terminal prompt in the `mcp` command, or
/// whatever the embedding application has.
pub trait InputProvider: Send + Sync {
    /// The value for `input`, or why there is none.
    fn ask(&self, input: &InputSpec) -> Result<String, String>;
}

/// No one to ask: every `${input:…}` fails with a message saying so.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoInputs;

impl InputProvider for NoInputs {
    fn ask(&self, input: &InputSpec) -> Result<String, String> {
        Err(format!(
            "input {:?} ({}) must be typed by a person, and there is no terminal to ask on",
            input.id, input.description
        ))
    }
}

/// Looks up one environment variable.
type EnvLookup = dyn Fn(&str) -> Option<String> + Send + Sync;

/// Where variables get their values.
#[derive(Clone)]
pub struct Variables {
    env: Arc<EnvLookup>,
    home: Option<PathBuf>,
    workspace: PathBuf,
    inputs: Arc<dyn InputProvider>,
    /// Inputs already answered, so each is asked once.
    answered: Arc<Mutex<BTreeMap<String, String>>>,
}

impl std::fmt::Debug for Variables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Variables")
            .field("home", &self.home)
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

impl Variables {
    /// This process's environment, home directory and current directory;
    /// no inputs.
    pub fn from_process() -> Self {
        Variables {
            env: Arc::new(|name| std::env::var(name).ok()),
            home: std::env::var_os("HOME").map(PathBuf::from),
            workspace: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            inputs: Arc::new(NoInputs),
            answered: Arc::default(),
        }
    }

    /// Values from `env` only (for tests and embedders).
    pub fn from_map(env: BTreeMap<String, String>) -> Self {
        Variables {
            env: Arc::new(move |name| env.get(name).cloned()),
            home: None,
            workspace: PathBuf::from("."),
            inputs: Arc::new(NoInputs),
            answered: Arc::default(),
        }
    }

    /// Sets `${userHome}`.
    pub fn home(mut self, home: impl Into<PathBuf>) -> Self {
        self.home = Some(home.into());
        self
    }

    /// Sets `${workspaceFolder}`.
    pub fn workspace(mut self, folder: impl Into<PathBuf>) -> Self {
        self.workspace = folder.into();
        self
    }

    /// Sets who answers `${input:id}`.
    pub fn inputs(mut self, inputs: Arc<dyn InputProvider>) -> Self {
        self.inputs = inputs;
        self
    }

    /// Expands every variable in `text`. `inputs` are the VS Code inputs
    /// declared beside the entry.
    pub fn expand(&self, text: &str, inputs: &[InputSpec]) -> Result<String, String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| format!("unclosed \"${{\" in {text:?}"))?;
            out.push_str(&self.value(&after[..end], inputs)?);
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// The value of one `${…}` body.
    fn value(&self, body: &str, inputs: &[InputSpec]) -> Result<String, String> {
        if let Some(name) = body.strip_prefix("env:") {
            return (self.env)(name)
                .ok_or_else(|| format!("environment variable {name} is not set"));
        }
        if let Some(id) = body.strip_prefix("input:") {
            return self.input(id, inputs);
        }
        match body {
            "userHome" => {
                return self
                    .home
                    .as_ref()
                    .map(|h| h.display().to_string())
                    .ok_or_else(|| "the home directory is not known (HOME is not set)".to_owned());
            }
            "workspaceFolder" => return Ok(self.workspace.display().to_string()),
            // Filled in per caller, as each connection is made.
            "caller" => return Ok(crate::config::CALLER_PLACEHOLDER.to_owned()),
            _ => {}
        }
        let (name, default) = match body.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (body, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("\"${{{body}}}\" is not a variable this host knows"));
        }
        match ((self.env)(name), default) {
            (Some(value), None) => Ok(value),
            (Some(value), Some(_)) if !value.is_empty() => Ok(value),
            (_, Some(default)) => Ok(default.to_owned()),
            (None, None) => Err(format!("environment variable {name} is not set")),
        }
    }

    fn input(&self, id: &str, inputs: &[InputSpec]) -> Result<String, String> {
        let answered = self.answered.locked();
        if let Some(value) = answered.get(id) {
            return Ok(value.clone());
        }
        drop(answered);
        let spec = inputs
            .iter()
            .find(|i| i.id == id)
            .ok_or_else(|| format!("input {id:?} is not declared in \"inputs\""))?;
        let value = self.inputs.ask(spec)?;
        self.answered.locked().insert(id.to_owned(), value.clone());
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Variables {
        Variables::from_map(BTreeMap::from([
            ("TOKEN".to_owned(), "t0k".to_owned()),
            ("EMPTY".to_owned(), String::new()),
        ]))
        .home("/home/ann")
        .workspace("/work/proj")
    }

    #[test]
    fn every_form_expands() {
        let v = vars();
        let cases = [
            ("${TOKEN}", "t0k"),
            ("Bearer ${env:TOKEN}!", "Bearer t0k!"),
            ("${MISSING:-fallback}", "fallback"),
            ("${EMPTY:-fallback}", "fallback"),
            ("${EMPTY}", ""),
            ("${TOKEN:-unused}", "t0k"),
            ("${userHome}/.cache", "/home/ann/.cache"),
            ("${workspaceFolder}/src", "/work/proj/src"),
            ("no variables", "no variables"),
            ("$HOME stays", "$HOME stays"),
        ];
        for (text, want) in cases {
            assert_eq!(v.expand(text, &[]).as_deref(), Ok(want), "{text}");
        }
    }

    #[test]
    fn an_unset_variable_is_an_error_naming_it() {
        let v = vars();
        let e = v.expand("x ${NOPE} y", &[]).unwrap_err();
        assert!(e.contains("NOPE") && e.contains("not set"), "{e}");
        let e = v.expand("${env:ALSO_NOPE}", &[]).unwrap_err();
        assert!(e.contains("ALSO_NOPE"), "{e}");
        let e = v.expand("${oops", &[]).unwrap_err();
        assert!(e.contains("unclosed"), "{e}");
        let e = v.expand("${command:pick}", &[]).unwrap_err();
        assert!(e.contains("command:pick"), "{e}");
    }

    struct Answers;
    impl InputProvider for Answers {
        fn ask(&self, input: &InputSpec) -> Result<String, String> {
            Ok(format!("answer-for-{}", input.id))
        }
    }

    #[test]
    fn inputs_are_asked_once_and_fail_clearly_without_a_terminal() {
        let spec = InputSpec {
            id: "api-key".into(),
            description: "The API key".into(),
            password: true,
            default: None,
        };
        let e = vars()
            .expand("${input:api-key}", std::slice::from_ref(&spec))
            .unwrap_err();
        assert!(e.contains("api-key") && e.contains("no terminal"), "{e}");

        let v = vars().inputs(Arc::new(Answers));
        assert_eq!(
            v.expand("k=${input:api-key}", std::slice::from_ref(&spec))
                .as_deref(),
            Ok("k=answer-for-api-key")
        );
        // Answered once: later uses need no declaration lookup.
        assert_eq!(
            v.expand("${input:api-key}", &[]).as_deref(),
            Ok("answer-for-api-key")
        );
        let e = v.expand("${input:undeclared}", &[]).unwrap_err();
        assert!(e.contains("not declared"), "{e}");
    }
}
