//! Where VS Code's `${input:id}` values come from when no one may be at a
//! terminal (a host started by Claude Desktop, a service): values given by
//! id, the environment, then a person, then the input's `default`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::vars::{InputProvider, InputSpec, NoInputs};

/// The environment variable that gives input `id`: `MCP_INPUT_` and the
/// id in capitals, with every character but letters and digits as `_`
/// (`api-key` is `MCP_INPUT_API_KEY`).
pub fn input_env_name(id: &str) -> String {
    let mut name = String::from("MCP_INPUT_");
    name.extend(id.chars().map(|c| {
        if c.is_ascii_alphanumeric() {
            c.to_ascii_uppercase()
        } else {
            '_'
        }
    }));
    name
}

/// Looks up one environment variable.
type EnvLookup = dyn Fn(&str) -> Option<String> + Send + Sync;

/// Answers `${input:id}`, first that can: a value given for that id
/// ([`GivenInputs::value`], [`GivenInputs::file`]), the environment
/// variable [`input_env_name`] names, a person ([`GivenInputs::person`],
/// e.g. at the terminal), and the input's `default` when no one answers.
/// It logs where each value came from, never the value.
pub struct GivenInputs {
    given: BTreeMap<String, String>,
    env: Arc<EnvLookup>,
    person: Arc<dyn InputProvider>,
}

impl Default for GivenInputs {
    fn default() -> Self {
        GivenInputs {
            given: BTreeMap::new(),
            env: Arc::new(|name| std::env::var(name).ok()),
            person: Arc::new(NoInputs),
        }
    }
}

impl std::fmt::Debug for GivenInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GivenInputs")
            .field("given", &self.given.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl GivenInputs {
    /// Nothing given; this process's environment; no one to ask.
    pub fn new() -> Self {
        GivenInputs::default()
    }

    /// Gives input `id` this value.
    pub fn value(mut self, id: impl Into<String>, value: impl Into<String>) -> Self {
        self.given.insert(id.into(), value.into());
        self
    }

    /// Gives `ID=VALUE` (as `--input` takes it).
    pub fn assignment(self, text: &str) -> Result<Self, String> {
        let (id, value) = text
            .split_once('=')
            .filter(|(id, _)| !id.trim().is_empty())
            .ok_or_else(|| format!("{text:?} is not ID=VALUE"))?;
        Ok(self.value(id.trim(), value))
    }

    /// Gives the values of a file of `ID=VALUE` lines (an env file: blank
    /// lines and `#` comments are skipped, `export ` before the id and
    /// quotes around the value are allowed).
    pub fn file(mut self, path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the inputs file {}: {e}", path.display()))?;
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line = line.strip_prefix("export ").unwrap_or(line);
            let Some((id, value)) = line.split_once('=') else {
                return Err(format!("{}:{}: not ID=VALUE", path.display(), number + 1));
            };
            self.given
                .insert(id.trim().to_owned(), unquote(value.trim()).to_owned());
        }
        Ok(self)
    }

    /// Looks environment variables up in `env` instead of this process's
    /// environment (for tests and embedders).
    pub fn env(mut self, env: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        self.env = Arc::new(env);
        self
    }

    /// Asks `person` what nothing else gives.
    pub fn person(mut self, person: Arc<dyn InputProvider>) -> Self {
        self.person = person;
        self
    }
}

/// `value` without one pair of matching quotes around it.
fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

impl InputProvider for GivenInputs {
    fn ask(&self, input: &InputSpec) -> Result<String, String> {
        let id = &input.id;
        if let Some(value) = self.given.get(id) {
            tracing::info!("input {id:?}: the value given for it");
            return Ok(value.clone());
        }
        let variable = input_env_name(id);
        if let Some(value) = (self.env)(&variable) {
            tracing::info!("input {id:?}: from the environment variable {variable}");
            return Ok(value);
        }
        match (self.person.ask(input), &input.default) {
            (Ok(value), _) => Ok(value),
            (Err(why), Some(default)) => {
                tracing::warn!("input {id:?}: its default ({why})");
                Ok(default.clone())
            }
            (Err(why), None) => Err(format!(
                "{why}; give it with --input {id}=VALUE, an inputs file, or the environment \
                 variable {variable}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(id: &str, default: Option<&str>) -> InputSpec {
        InputSpec {
            id: id.into(),
            description: "A key".into(),
            password: true,
            default: default.map(str::to_owned),
        }
    }

    struct Answers;

    impl InputProvider for Answers {
        fn ask(&self, input: &InputSpec) -> Result<String, String> {
            Ok(format!("typed-{}", input.id))
        }
    }

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_environment_name_is_the_id_in_capitals() {
        assert_eq!(input_env_name("api-key"), "MCP_INPUT_API_KEY");
        assert_eq!(input_env_name("db.path2"), "MCP_INPUT_DB_PATH2");
    }

    #[test]
    fn given_then_environment_then_person_then_default() {
        let inputs = GivenInputs::new()
            .value("a", "given-a")
            .env(env(&[("MCP_INPUT_A", "env-a"), ("MCP_INPUT_B", "env-b")]));
        assert_eq!(inputs.ask(&spec("a", Some("d"))).unwrap(), "given-a");
        assert_eq!(inputs.ask(&spec("b", Some("d"))).unwrap(), "env-b");
        // No one to ask: the default, or an error saying how to give it.
        assert_eq!(inputs.ask(&spec("c", Some("dflt"))).unwrap(), "dflt");
        let error = inputs.ask(&spec("c", None)).unwrap_err();
        assert!(
            error.contains("--input c=VALUE") && error.contains("MCP_INPUT_C"),
            "{error}"
        );
        // Someone to ask: asked before the default is used.
        let asked = GivenInputs::new().env(env(&[])).person(Arc::new(Answers));
        assert_eq!(asked.ask(&spec("c", Some("dflt"))).unwrap(), "typed-c");
    }

    #[test]
    fn assignments_and_files_give_values() {
        let dir = std::env::temp_dir().join(format!("mcp-inputs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("inputs.env");
        std::fs::write(
            &file,
            "# keys\napi-key=\"s3cret=1\"\nexport region = eu\n\nempty=\n",
        )
        .unwrap();
        let inputs = GivenInputs::new()
            .env(env(&[]))
            .file(&file)
            .unwrap()
            .assignment("token=a=b")
            .unwrap();
        assert_eq!(inputs.ask(&spec("api-key", None)).unwrap(), "s3cret=1");
        assert_eq!(inputs.ask(&spec("region", None)).unwrap(), "eu");
        assert_eq!(inputs.ask(&spec("empty", Some("d"))).unwrap(), "");
        assert_eq!(inputs.ask(&spec("token", None)).unwrap(), "a=b");
        assert!(GivenInputs::new().assignment("=x").is_err());
        std::fs::write(&file, "no equals sign\n").unwrap();
        let error = GivenInputs::new().file(&file).unwrap_err();
        assert!(error.ends_with(":1: not ID=VALUE"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
