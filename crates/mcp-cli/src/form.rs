//! Elicitation forms at the terminal: the person first chooses to answer,
//! decline or cancel, then each field is asked in the order the server's
//! schema lists it, with the prompt that fits its kind (text, number,
//! yes/no, one of a list, several of a list), and every answer is checked
//! against the field's schema (formats, bounds, lengths, choices) before
//! the next field is asked.

use std::collections::BTreeMap;

use dialoguer::console::Term;
use dialoguer::theme::ColorfulTheme;
use dialoguer::{Confirm, Input, MultiSelect, Select};
use mcp_schema::{ElicitRequestFormParams, ElicitValue};
use serde_json::Value;

/// What the person did with a form.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Filled in: the answers, by field name (a field left empty is absent).
    Accept(BTreeMap<String, ElicitValue>),
    /// Chose not to answer.
    Decline,
    /// Dismissed the form (Esc) without choosing.
    Cancel,
}

/// Asks the form on `term` (blocking: run it off the async workers).
pub fn fill(form: &ElicitRequestFormParams, term: &Term) -> std::io::Result<Outcome> {
    let theme = ColorfulTheme::default();
    term.write_line(&format!("\n-- The server asks: {}", form.message))?;
    let choice = Select::with_theme(&theme)
        .with_prompt("Answer it?")
        .items(["Answer", "Decline", "Cancel"])
        .default(0)
        .interact_on_opt(term)
        .map_err(std::io::Error::other)?;
    match choice {
        Some(0) => {}
        Some(1) => return Ok(Outcome::Decline),
        _ => return Ok(Outcome::Cancel),
    }
    let required = form
        .requested_schema
        .required
        .as_deref()
        .unwrap_or_default();
    let mut answers = BTreeMap::new();
    for (name, definition) in &form.requested_schema.properties {
        let field = Field {
            name,
            schema: serde_json::to_value(definition).unwrap_or_default(),
            required: required.iter().any(|r| r == name),
        };
        match field.ask(&theme, term)? {
            Asked::Value(value) => {
                answers.insert(name.clone(), value);
            }
            Asked::Empty => {}
            Asked::Dismissed => return Ok(Outcome::Cancel),
        }
    }
    Ok(Outcome::Accept(answers))
}

/// One field of a form, with its schema as JSON.
struct Field<'a> {
    name: &'a str,
    schema: Value,
    required: bool,
}

/// A field's answer.
enum Asked {
    Value(ElicitValue),
    /// Left empty (an optional field with nothing chosen).
    Empty,
    /// The person pressed Esc.
    Dismissed,
}

impl Field<'_> {
    /// The prompt: the title (or name), the description, and whether the
    /// field must be filled.
    fn prompt(&self) -> String {
        let mut prompt = self.schema["title"]
            .as_str()
            .unwrap_or(self.name)
            .to_owned();
        if let Some(description) = self.schema["description"].as_str() {
            prompt.push_str(&format!(" ({description})"));
        }
        if let Some(hint) = hint(&self.schema) {
            prompt.push_str(&format!(" [{hint}]"));
        }
        if !self.required {
            prompt.push_str(", optional");
        }
        prompt
    }

    fn ask(&self, theme: &ColorfulTheme, term: &Term) -> std::io::Result<Asked> {
        let io = std::io::Error::other;
        let prompt = self.prompt();
        if let Some(choices) = Choices::of(&self.schema) {
            return if self.schema["type"] == "array" {
                self.ask_several(&choices, theme, term)
            } else {
                self.ask_one(&choices, theme, term)
            };
        }
        if self.schema["type"] == "boolean" {
            let mut confirm = Confirm::with_theme(theme).with_prompt(prompt);
            if let Some(default) = self.schema["default"].as_bool() {
                confirm = confirm.default(default);
            }
            return Ok(match confirm.interact_on_opt(term).map_err(io)? {
                Some(yes) => Asked::Value(ElicitValue::Bool(yes)),
                None => Asked::Dismissed,
            });
        }
        let mut input = Input::<String>::with_theme(theme)
            .with_prompt(prompt)
            .allow_empty(!self.required || self.schema.get("default").is_some());
        if let Some(default) = self.schema.get("default") {
            input = input.default(plain(default));
        }
        let schema = self.schema.clone();
        let required = self.required;
        let answer = input
            .validate_with(move |answer: &String| -> Result<(), String> {
                if answer.is_empty() {
                    return if required {
                        Err("required".into())
                    } else {
                        Ok(())
                    };
                }
                typed(&schema, answer).map(drop)
            })
            .interact_text_on(term)
            .map_err(io)?;
        if answer.is_empty() {
            return Ok(Asked::Empty);
        }
        typed(&self.schema, &answer)
            .map(Asked::Value)
            .map_err(std::io::Error::other)
    }

    /// One value among `choices`; an optional field may choose none.
    fn ask_one(
        &self,
        choices: &Choices,
        theme: &ColorfulTheme,
        term: &Term,
    ) -> std::io::Result<Asked> {
        let mut labels = choices.labels.clone();
        if !self.required {
            labels.push("(none)".into());
        }
        let default = self.schema["default"]
            .as_str()
            .and_then(|d| choices.values.iter().position(|v| v == d))
            .unwrap_or(0);
        let picked = Select::with_theme(theme)
            .with_prompt(self.prompt())
            .items(&labels)
            .default(default)
            .interact_on_opt(term)
            .map_err(std::io::Error::other)?;
        Ok(match picked {
            None => Asked::Dismissed,
            Some(i) => match choices.values.get(i) {
                Some(value) => Asked::Value(ElicitValue::String(value.clone())),
                None => Asked::Empty,
            },
        })
    }

    /// Several values among `choices`, as many as the field's bounds
    /// allow (asked again until they fit).
    fn ask_several(
        &self,
        choices: &Choices,
        theme: &ColorfulTheme,
        term: &Term,
    ) -> std::io::Result<Asked> {
        let defaults: Vec<bool> = choices
            .values
            .iter()
            .map(|v| {
                self.schema["default"]
                    .as_array()
                    .is_some_and(|d| d.iter().any(|d| d == v.as_str()))
            })
            .collect();
        loop {
            let picked = MultiSelect::with_theme(theme)
                .with_prompt(format!("{} (space toggles, enter accepts)", self.prompt()))
                .items(&choices.labels)
                .defaults(&defaults)
                .interact_on_opt(term)
                .map_err(std::io::Error::other)?;
            let Some(picked) = picked else {
                return Ok(Asked::Dismissed);
            };
            if picked.is_empty() && !self.required {
                return Ok(Asked::Empty);
            }
            let values: Vec<String> = picked.iter().map(|&i| choices.values[i].clone()).collect();
            match check(&self.schema, &Value::from(values.clone())) {
                Ok(()) => return Ok(Asked::Value(ElicitValue::Strings(values))),
                Err(why) => term.write_line(&format!("  {why}"))?,
            }
        }
    }
}

/// The values a choice field offers, and how each is shown.
struct Choices {
    values: Vec<String>,
    labels: Vec<String>,
}

impl Choices {
    /// The choices of a single- or multi-select field, in every form the
    /// specification allows (`enum`, `enum` with `enumNames`, `oneOf` and
    /// `anyOf` of titled constants); `None` for any other field.
    fn of(schema: &Value) -> Option<Choices> {
        let field = if schema["type"] == "array" {
            &schema["items"]
        } else {
            schema
        };
        if let Some(values) = field["enum"].as_array() {
            let values: Vec<String> = values.iter().map(plain).collect();
            let labels = match field["enumNames"].as_array() {
                Some(names) if names.len() == values.len() => names.iter().map(plain).collect(),
                _ => values.clone(),
            };
            return Some(Choices { values, labels });
        }
        let titled = field["oneOf"].as_array().or(field["anyOf"].as_array())?;
        let (values, labels) = titled
            .iter()
            .map(|option| {
                let value = plain(&option["const"]);
                let label = option["title"]
                    .as_str()
                    .map_or(value.clone(), str::to_owned);
                (value, label)
            })
            .unzip();
        Some(Choices { values, labels })
    }
}

/// The bounds and format of a field, shown after its prompt.
fn hint(schema: &Value) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(format) = schema["format"].as_str() {
        parts.push(match format {
            "date" => "date, YYYY-MM-DD".to_owned(),
            "date-time" => "date and time, YYYY-MM-DDThh:mm:ssZ".to_owned(),
            other => other.to_owned(),
        });
    }
    if schema["type"] == "integer" {
        parts.push("whole number".into());
    }
    match (&schema["minimum"], &schema["maximum"]) {
        (Value::Number(min), Value::Number(max)) => parts.push(format!("{min} to {max}")),
        (Value::Number(min), _) => parts.push(format!("at least {min}")),
        (_, Value::Number(max)) => parts.push(format!("at most {max}")),
        _ => {}
    }
    match (&schema["minLength"], &schema["maxLength"]) {
        (Value::Number(min), Value::Number(max)) => {
            parts.push(format!("{min} to {max} characters"))
        }
        (Value::Number(min), _) => parts.push(format!("at least {min} characters")),
        (_, Value::Number(max)) => parts.push(format!("at most {max} characters")),
        _ => {}
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// A JSON value as the text a person types for it.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The typed value of a text answer, checked against the field's schema;
/// or why it does not fit.
pub fn typed(schema: &Value, answer: &str) -> Result<ElicitValue, String> {
    let value = match schema["type"].as_str().unwrap_or("string") {
        "integer" => answer
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "a whole number, please".to_owned())?,
        "number" => answer
            .trim()
            .parse::<f64>()
            .map(Value::from)
            .map_err(|_| "a number, please".to_owned())?,
        _ => Value::String(answer.to_owned()),
    };
    check(schema, &value)?;
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// Whether `value` fits the field's schema, formats included; why not.
fn check(schema: &Value, value: &Value) -> Result<(), String> {
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| format!("the server's schema for this field is invalid: {e}"))?;
    match validator.iter_errors(value).next() {
        None => Ok(()),
        Some(error) => Err(describe(schema, &error.to_string())),
    }
}

/// A validator's complaint in the words of the field.
fn describe(schema: &Value, complaint: &str) -> String {
    match schema["format"].as_str() {
        Some("email") if complaint.contains("email") => "an e-mail address, please".into(),
        Some("uri") if complaint.contains("uri") => "an absolute URI, please".into(),
        Some("date") if complaint.contains("date") => "a date as YYYY-MM-DD, please".into(),
        Some("date-time") if complaint.contains("date-time") => {
            "a date and time as YYYY-MM-DDThh:mm:ssZ, please".into()
        }
        _ => complaint.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_typed_and_checked_against_the_field() {
        let age = json!({"type": "integer", "minimum": 0, "maximum": 150});
        assert_eq!(typed(&age, "42"), Ok(ElicitValue::Integer(42)));
        assert!(typed(&age, "many").is_err());
        assert!(typed(&age, "200").is_err());
        let score = json!({"type": "number", "minimum": 0.5});
        assert_eq!(typed(&score, "2.5"), Ok(ElicitValue::Number(2.5)));
        assert!(typed(&score, "0.1").is_err());
        let name = json!({"type": "string", "minLength": 2, "maxLength": 4});
        assert!(typed(&name, "a").is_err());
        assert!(typed(&name, "abcde").is_err());
        assert_eq!(typed(&name, "abc"), Ok(ElicitValue::String("abc".into())));
    }

    #[test]
    fn formats_are_checked() {
        let email = json!({"type": "string", "format": "email"});
        assert_eq!(
            typed(&email, "not an address"),
            Err("an e-mail address, please".into())
        );
        assert!(typed(&email, "ada@example.org").is_ok());
        let date = json!({"type": "string", "format": "date"});
        assert!(typed(&date, "2026-02-30").is_err());
        assert!(typed(&date, "2026-11-26").is_ok());
        let uri = json!({"type": "string", "format": "uri"});
        assert!(typed(&uri, "no scheme here").is_err());
        assert!(typed(&uri, "https://example.org/a").is_ok());
        let when = json!({"type": "string", "format": "date-time"});
        assert!(typed(&when, "yesterday").is_err());
        assert!(typed(&when, "2026-11-26T10:00:00Z").is_ok());
    }

    #[test]
    fn every_kind_of_choice_is_read() {
        let legacy = json!({"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]});
        let choices = Choices::of(&legacy).expect("choices");
        assert_eq!(choices.values, ["a", "b"]);
        assert_eq!(choices.labels, ["A", "B"]);
        let titled = json!({"type": "array", "items": {"anyOf": [
            {"const": "v1", "title": "First"}, {"const": "v2", "title": "Second"}]}});
        let choices = Choices::of(&titled).expect("choices");
        assert_eq!(choices.values, ["v1", "v2"]);
        assert_eq!(choices.labels, ["First", "Second"]);
        assert!(Choices::of(&json!({"type": "string"})).is_none());
    }

    #[test]
    fn hints_name_the_format_and_bounds() {
        let field = json!({"type": "integer", "minimum": 1, "maximum": 5});
        assert_eq!(hint(&field).as_deref(), Some("whole number, 1 to 5"));
        let field = json!({"type": "string", "format": "date"});
        assert_eq!(hint(&field).as_deref(), Some("date, YYYY-MM-DD"));
        assert_eq!(hint(&json!({"type": "string"})), None);
    }
}
