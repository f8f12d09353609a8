//! Elicitation answered at the host: a server's `elicitation/create` that
//! no client can answer (none has a call in flight, the caller declared no
//! elicitation, or calls of several clients share the connection) is put
//! to a person at the host ([`Elicitor`]: the terminal for `mcp host`),
//! named with the server that asks. Declining and cancelling are always
//! possible. A form that asks for a password, token, key or other secret
//! is refused before anyone sees it (a server has no business collecting
//! credentials through a form; URL mode exists for that), and the audit
//! flags it. An accepted answer is checked against the form's schema
//! before the server gets it.

use mcp_core::BoxFuture;
use mcp_schema::{
    ElicitAction, ElicitRequestParams, ElicitResult, ElicitValue, ElicitationSchema, NumberType,
    PrimitiveSchemaDefinition,
};

/// Puts a server's question to a person at the host; registered by the
/// embedding application.
pub trait Elicitor: Send + Sync + 'static {
    /// Its name, for the audit.
    fn name(&self) -> &str;

    /// Whether a person can be asked this way now.
    fn reachable(&self) -> bool;

    /// Asks `server`'s question: a form to fill in, or a page to open
    /// (URL mode). An error when the person could not be asked.
    fn elicit<'a>(
        &'a self,
        server: &'a str,
        params: &'a ElicitRequestParams,
    ) -> BoxFuture<'a, Result<ElicitResult, String>>;
}

/// The people at the host who answer what no client can, tried in
/// order, and how long each question may wait.
#[derive(Clone)]
pub struct Elicitors {
    /// Who is asked.
    pub people: Vec<std::sync::Arc<dyn Elicitor>>,
    /// How long a person has to answer.
    pub timeout: std::time::Duration,
}

impl Default for Elicitors {
    /// Nobody; five minutes to answer.
    fn default() -> Self {
        Elicitors {
            people: Vec::new(),
            timeout: std::time::Duration::from_secs(300),
        }
    }
}

impl std::fmt::Debug for Elicitors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.people.iter().map(|p| p.name()).collect();
        f.debug_struct("Elicitors")
            .field("people", &names)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Elicitors {
    /// The first who can be asked now.
    pub fn reachable(&self) -> Option<&dyn Elicitor> {
        self.people.iter().find(|p| p.reachable()).map(|p| &**p)
    }
}

/// Words in a field's name, title or description that mark it as a
/// secret.
const SECRET_WORDS: [&str; 9] = [
    "password",
    "passphrase",
    "passwd",
    "secret",
    "token",
    "api key",
    "apikey",
    "private key",
    "credential",
];

/// The fields of `schema` that ask for a secret: by their name, title or
/// description (`password`, `token`, `api_key`, `secret`, ...).
pub fn secret_fields(schema: &ElicitationSchema) -> Vec<String> {
    schema
        .properties
        .iter()
        .filter(|(name, field)| {
            let described = serde_json::to_value(field).unwrap_or_default();
            let text = |key: &str| described[key].as_str().unwrap_or("").to_owned();
            let said = format!("{name} {} {}", text("title"), text("description"))
                .to_ascii_lowercase()
                .replace(['_', '-'], " ");
            let words: Vec<&str> = said.split_whitespace().collect();
            let joined = words.join(" ");
            SECRET_WORDS.iter().any(|word| joined.contains(word))
                || words
                    .iter()
                    .any(|w| matches!(*w, "pwd" | "pin" | "otp" | "key"))
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// Whether an accepted `answer` fits `schema`: the required fields are
/// there, no others, and each value is of its field's kind, within its
/// bounds and among its choices.
pub fn check_answer(schema: &ElicitationSchema, answer: &ElicitResult) -> Result<(), String> {
    if answer.action != ElicitAction::Accept {
        return Ok(());
    }
    let empty = Default::default();
    let content = answer.content.as_ref().unwrap_or(&empty);
    for required in schema.required.iter().flatten() {
        if !content.contains_key(required) {
            return Err(format!("the required field {required:?} has no answer"));
        }
    }
    for (name, value) in content {
        let field = schema
            .properties
            .get(name)
            .ok_or_else(|| format!("{name:?} is not a field of the form"))?;
        check_field(name, field, value)?;
    }
    Ok(())
}

fn check_field(
    name: &str,
    field: &PrimitiveSchemaDefinition,
    value: &ElicitValue,
) -> Result<(), String> {
    let wrong = |kind: &str| Err(format!("{name:?} must be {kind}"));
    match (field, value) {
        (PrimitiveSchemaDefinition::String(string), ElicitValue::String(text)) => {
            let length = text.chars().count() as u64;
            if string.min_length.is_some_and(|min| length < min)
                || string.max_length.is_some_and(|max| length > max)
            {
                return wrong("of the length the form allows");
            }
            Ok(())
        }
        (PrimitiveSchemaDefinition::String(_), _) => wrong("text"),
        (
            PrimitiveSchemaDefinition::Number(number),
            ElicitValue::Number(_) | ElicitValue::Integer(_),
        ) => {
            let n = match value {
                ElicitValue::Integer(n) => *n as f64,
                ElicitValue::Number(n) => *n,
                _ => unreachable!("matched above"),
            };
            let whole = number.type_ == NumberType::Integer;
            if whole && n.fract() != 0.0 {
                return wrong("a whole number");
            }
            if number.minimum.is_some_and(|min| n < min)
                || number.maximum.is_some_and(|max| n > max)
            {
                return wrong("within the form's bounds");
            }
            Ok(())
        }
        (PrimitiveSchemaDefinition::Number(_), _) => wrong("a number"),
        (PrimitiveSchemaDefinition::Boolean(_), ElicitValue::Bool(_)) => Ok(()),
        (PrimitiveSchemaDefinition::Boolean(_), _) => wrong("yes or no"),
        (_, ElicitValue::String(choice)) => {
            let choices = choices(field);
            if choices.iter().any(|c| c == choice) {
                Ok(())
            } else {
                Err(format!("{name:?} must be one of {choices:?}"))
            }
        }
        (_, ElicitValue::Strings(picked)) => {
            let choices = choices(field);
            match picked.iter().find(|p| !choices.contains(p)) {
                None => Ok(()),
                Some(other) => Err(format!("{other:?} is not a choice of {name:?}")),
            }
        }
        _ => wrong("one of its choices"),
    }
}

/// The values an enum field allows.
fn choices(field: &PrimitiveSchemaDefinition) -> Vec<String> {
    let described = serde_json::to_value(field).unwrap_or_default();
    let listed = |value: &serde_json::Value| -> Vec<String> {
        if let Some(values) = value.get("enum").and_then(|e| e.as_array()) {
            return values
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
        }
        value
            .get("oneOf")
            .or_else(|| value.get("anyOf"))
            .and_then(|o| o.as_array())
            .map(|options| {
                options
                    .iter()
                    .filter_map(|o| o.get("const").and_then(|c| c.as_str()).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    match described.get("items") {
        Some(items) => listed(items),
        None => listed(&described),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn schema(json: serde_json::Value) -> ElicitationSchema {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn fields_asking_for_secrets_are_found_by_name_title_or_description() {
        let form = schema(serde_json::json!({
            "type": "object",
            "properties": {
                "username": {"type": "string"},
                "password": {"type": "string"},
                "apiKey": {"type": "string", "title": "API key"},
                "github_token": {"type": "string"},
                "code": {"type": "string", "description": "The one-time OTP we sent"},
                "keyboard": {"type": "string", "title": "Keyboard layout"},
                "count": {"type": "integer"}
            }
        }));
        let mut found = secret_fields(&form);
        found.sort();
        assert_eq!(found, ["apiKey", "code", "github_token", "password"]);
    }

    #[test]
    fn an_answer_is_checked_against_the_form() {
        let form = schema(serde_json::json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 5},
                "age": {"type": "integer", "minimum": 0},
                "color": {"type": "string", "enum": ["red", "blue"]},
                "ok": {"type": "boolean"}
            },
            "required": ["name"]
        }));
        let answer = |pairs: Vec<(&str, ElicitValue)>| {
            ElicitResult::accept(
                pairs
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect::<BTreeMap<_, _>>(),
            )
        };
        let good = answer(vec![
            ("name", ElicitValue::String("Ann".into())),
            ("age", ElicitValue::Number(30.0)),
            ("color", ElicitValue::String("red".into())),
            ("ok", ElicitValue::Bool(true)),
        ]);
        assert_eq!(check_answer(&form, &good), Ok(()));
        for (bad, why) in [
            (answer(vec![]), "required"),
            (
                answer(vec![("name", ElicitValue::String("Annabel".into()))]),
                "length",
            ),
            (
                answer(vec![
                    ("name", ElicitValue::String("A".into())),
                    ("age", ElicitValue::Number(1.5)),
                ]),
                "whole",
            ),
            (
                answer(vec![
                    ("name", ElicitValue::String("A".into())),
                    ("color", ElicitValue::String("green".into())),
                ]),
                "one of",
            ),
            (
                answer(vec![
                    ("name", ElicitValue::String("A".into())),
                    ("extra", ElicitValue::Bool(true)),
                ]),
                "not a field",
            ),
        ] {
            let error = check_answer(&form, &bad).unwrap_err();
            assert!(error.contains(why), "{why}: {error}");
        }
        assert_eq!(check_answer(&form, &ElicitResult::decline()), Ok(()));
    }
}
