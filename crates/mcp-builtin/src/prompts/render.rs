//! Turning a `prompts/get` request into messages: picking the version,
//! reading the arguments (JSON arrays and objects become lists and maps
//! for `{{#each}}`), rendering, and splitting at role markers.

use handlebars::RenderErrorReason;
use mcp_schema::{GetPromptResult, Meta, PromptMessage, Role};
use mcp_server::{HandlerError, PromptArguments};
use serde_json::{Map, Value};

use super::family::PromptFamily;
use super::file::{PromptVersion, VERSION_ARGUMENT};

/// The `_meta` key of a `prompts/get` result listing every version of the
/// prompt, newest first.
pub const META_VERSIONS: &str = "io.github.mcp/versions";
/// The `_meta` key of a `prompts/get` result naming the version rendered.
pub const META_VERSION: &str = "io.github.mcp/version";
/// The `_meta` key of a `prompts/get` result carrying the prompt's tags,
/// category and author, as its front matter gives them.
pub const META_ABOUT: &str = "io.github.mcp/about";

/// Renders `family` with `args`: the version the `version` argument names,
/// else the newest.
pub fn render(
    family: &PromptFamily,
    args: &PromptArguments,
) -> Result<GetPromptResult, HandlerError> {
    let prompt = pick_version(family, args)?;
    let data = template_data(prompt, args)?;
    let text = prompt.render(&data).map_err(|e| {
        let what = match e.reason() {
            RenderErrorReason::MissingVariable(Some(variable)) if is_text(&data, variable) => {
                format!(
                    "the template goes through `{variable}` as a list, but it was given as text: \
                     give a JSON array such as [\"first\", \"second\"]"
                )
            }
            RenderErrorReason::MissingVariable(Some(variable)) => format!(
                "the template uses `{variable}`, which has no value: it is neither a declared \
                 argument of the prompt nor one that was given"
            ),
            RenderErrorReason::MissingVariable(None) => {
                "the template uses a variable that has no value".to_owned()
            }
            other => other.to_string(),
        };
        HandlerError::invalid_params(format!(
            "prompt {} {} ({}) cannot be rendered: {what}",
            prompt.name, prompt.version, prompt.source
        ))
    })?;
    let mut result = GetPromptResult::new(split_messages(&text));
    result.description = prompt.description.clone();
    result.meta = Some(result_meta(family, prompt));
    Ok(result)
}

/// Whether `variable` (a top-level argument) was given as text.
fn is_text(data: &Value, variable: &str) -> bool {
    data.get(variable).is_some_and(Value::is_string)
}

fn pick_version<'a>(
    family: &'a PromptFamily,
    args: &PromptArguments,
) -> Result<&'a PromptVersion, HandlerError> {
    let wanted = args.get(VERSION_ARGUMENT).filter(|v| !v.trim().is_empty());
    let Some(wanted) = wanted else {
        return family.newest().ok_or_else(|| broken(family));
    };
    let known = family.version_list();
    let parsed = semver::Version::parse(wanted.trim()).map_err(|e| {
        HandlerError::invalid_params(format!(
            "prompt {}: version {wanted:?} is not a semantic version ({e}); known versions: {}",
            family.name,
            known.join(", ")
        ))
    })?;
    family.version(&parsed).ok_or_else(|| {
        HandlerError::invalid_params(format!(
            "prompt {} has no version {wanted}; known versions: {}",
            family.name,
            known.join(", ")
        ))
    })
}

/// The error of a prompt whose every file is broken.
fn broken(family: &PromptFamily) -> HandlerError {
    let reasons: Vec<String> = family.problems.iter().map(ToString::to_string).collect();
    HandlerError::failed(format!(
        "prompt {} cannot be served: {}",
        family.name,
        reasons.join("; ")
    ))
}

/// The template's data: every declared argument (given, else its default,
/// else null, so that `{{#if}}` is false and `{{#each}}` renders its
/// `{{else}}`), and any other argument given. An optional argument given
/// as an empty string counts as left out (many clients send one for each
/// field left blank); a required one of the version rendered must be
/// given.
fn template_data(prompt: &PromptVersion, args: &PromptArguments) -> Result<Value, HandlerError> {
    let mut data = Map::new();
    for argument in &prompt.arguments {
        let given = args
            .get(&argument.name)
            .filter(|v| argument.required || !v.is_empty());
        if argument.required && given.is_none() {
            return Err(HandlerError::invalid_params(format!(
                "prompt {} {} needs argument {:?}",
                prompt.name, prompt.version, argument.name
            )));
        }
        let given = given.or(argument.default.as_ref());
        if let (Some(value), Some(values)) = (given, &argument.values)
            && !values.contains(value)
        {
            return Err(HandlerError::invalid_params(format!(
                "prompt {}: argument {} must be one of {} (got {value:?})",
                prompt.name,
                argument.name,
                values.join(", ")
            )));
        }
        data.insert(
            argument.name.clone(),
            given.map_or(Value::Null, |v| argument_value(v)),
        );
    }
    for (name, value) in args {
        if name != VERSION_ARGUMENT && !data.contains_key(name) {
            data.insert(name.clone(), argument_value(value));
        }
    }
    Ok(Value::Object(data))
}

/// An argument's value for the template: a JSON array or object when the
/// text is one, else the text.
pub fn argument_value(text: &str) -> Value {
    let trimmed = text.trim_start();
    if (trimmed.starts_with('[') || trimmed.starts_with('{'))
        && let Ok(value @ (Value::Array(_) | Value::Object(_))) = serde_json::from_str(text)
    {
        return value;
    }
    Value::String(text.to_owned())
}

/// Splits rendered text into messages at lines `<!-- role: user -->` and
/// `<!-- role: assistant -->`; text before the first marker is the
/// user's. Blank lines around each message are dropped, and so are empty
/// messages; there is always at least one message.
pub fn split_messages(text: &str) -> Vec<PromptMessage> {
    let mut messages = Vec::new();
    let mut role = Role::User;
    let mut current = String::new();
    let mut flush = |role: Role, current: &mut String| {
        let body = current.trim_matches(|c| c == '\n' || c == '\r');
        if !body.trim().is_empty() {
            messages.push(message(role, body));
        }
        current.clear();
    };
    for line in text.split_inclusive('\n') {
        if let Some(next) = role_marker(line) {
            flush(role, &mut current);
            role = next;
        } else {
            current.push_str(line);
        }
    }
    flush(role, &mut current);
    if messages.is_empty() {
        messages.push(message(Role::User, ""));
    }
    messages
}

fn message(role: Role, text: &str) -> PromptMessage {
    match role {
        Role::Assistant => PromptMessage::assistant_text(text),
        _ => PromptMessage::user_text(text),
    }
}

/// The role a line `<!-- role: ROLE -->` switches to.
fn role_marker(line: &str) -> Option<Role> {
    let inner = line
        .trim()
        .strip_prefix("<!--")?
        .strip_suffix("-->")?
        .trim()
        .strip_prefix("role:")?
        .trim();
    match inner {
        "user" => Some(Role::User),
        "assistant" => Some(Role::Assistant),
        _ => None,
    }
}

fn result_meta(family: &PromptFamily, prompt: &PromptVersion) -> Meta {
    let mut meta = Meta::new();
    meta.insert(META_VERSIONS.to_owned(), family.version_list().into());
    meta.insert(META_VERSION.to_owned(), prompt.version.to_string().into());
    let mut about = Map::new();
    if !prompt.tags.is_empty() {
        about.insert("tags".to_owned(), prompt.tags.clone().into());
    }
    if let Some(category) = &prompt.category {
        about.insert("category".to_owned(), category.clone().into());
    }
    if let Some(author) = &prompt.author {
        about.insert("author".to_owned(), author.clone().into());
    }
    if let Some(title) = &prompt.title {
        about.insert("title".to_owned(), title.clone().into());
    }
    if !about.is_empty() {
        meta.insert(META_ABOUT.to_owned(), Value::Object(about));
    }
    meta
}

impl PromptFamily {
    /// Renders the version the `version` argument names (else the newest)
    /// with `args`, as `prompts/get` answers.
    pub fn render(&self, args: &PromptArguments) -> Result<GetPromptResult, HandlerError> {
        render(self, args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_arrays_and_objects_become_values_and_everything_else_stays_text() {
        assert_eq!(
            argument_value(r#"["a","b"]"#),
            serde_json::json!(["a", "b"])
        );
        assert_eq!(argument_value(r#"{"k":1}"#), serde_json::json!({"k": 1}));
        assert_eq!(
            argument_value("[not json"),
            Value::String("[not json".into())
        );
        assert_eq!(argument_value("42"), Value::String("42".into()));
    }

    #[test]
    fn role_markers_split_the_text_into_messages() {
        let messages = split_messages(
            "Question?\n\n<!-- role: assistant -->\nAnswer.\n<!-- role: user -->\nMore.\n",
        );
        let texts: Vec<(Role, &str)> = messages
            .iter()
            .map(|m| (m.role, m.content.as_text().unwrap_or_default()))
            .collect();
        assert_eq!(
            texts,
            [
                (Role::User, "Question?"),
                (Role::Assistant, "Answer."),
                (Role::User, "More.")
            ]
        );
        assert_eq!(split_messages("").len(), 1);
    }
}
