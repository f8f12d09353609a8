//! A form made from a tool's `inputSchema`, and the arguments read back
//! from what it posts.
//!
//! Each argument is a field named by its JSON Pointer (`/options/mode`):
//! strings are text inputs, enums selects, numbers and integers number
//! inputs, booleans a select of true and false, nested objects a
//! fieldset of their own, arrays of strings a line per item and other
//! arrays (and what has no simple type) JSON. `anyOf`/`oneOf` of one type
//! and `null` is that type, left out when empty. Defaults are filled in.

use maud::{Markup, html};
use serde_json::{Map, Value, json};

/// What kind of input a schema gets.
#[derive(Debug, PartialEq)]
enum Input<'a> {
    Text,
    Choice(&'a [Value]),
    Number { integer: bool },
    Boolean,
    Lines,
    Object(&'a Map<String, Value>),
    Json,
}

/// How deep nested objects get fields of their own; deeper ones (and
/// schemas that refer to themselves) are JSON.
const MAX_DEPTH: usize = 6;

/// What a local `$ref` (`#/$defs/address`) names in `root`, else the
/// schema itself.
fn resolved<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
            .unwrap_or(schema),
        None => schema,
    }
}

/// The schema without a `null` alternative.
fn without_null(schema: &Value) -> &Value {
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = schema.get(key) {
            let not_null: Vec<&Value> = options
                .iter()
                .filter(|o| o.get("type").and_then(Value::as_str) != Some("null"))
                .collect();
            if let [only] = not_null.as_slice() {
                return only;
            }
        }
    }
    schema
}

/// The schema's one type, where `type` is a string or a list of one type
/// and `null`.
fn type_of(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(t) => Some(t),
        Value::Array(types) => {
            let named: Vec<&str> = types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect();
            match named.as_slice() {
                [only] => Some(only),
                _ => None,
            }
        }
        _ => None,
    }
}

fn input_of<'a>(root: &'a Value, schema: &'a Value, depth: usize) -> Input<'a> {
    let schema = resolved(root, without_null(resolved(root, schema)));
    if let Some(Value::Array(choices)) = schema.get("enum") {
        return Input::Choice(choices);
    }
    match type_of(schema) {
        Some("string") => Input::Text,
        Some("integer") => Input::Number { integer: true },
        Some("number") => Input::Number { integer: false },
        Some("boolean") => Input::Boolean,
        Some("object") => match schema.get("properties") {
            Some(Value::Object(properties)) if depth < MAX_DEPTH => Input::Object(properties),
            _ => Input::Json,
        },
        Some("array") => {
            let items = schema.get("items").map(without_null);
            match items.and_then(type_of) {
                Some("string") if items.and_then(|i| i.get("enum")).is_none() => Input::Lines,
                _ => Input::Json,
            }
        }
        _ => Input::Json,
    }
}

/// A JSON Pointer segment (`~` and `/` escaped).
fn segment(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// The fields of the object schema `schema` (a tool's `inputSchema`).
pub(crate) fn fields(schema: &Value) -> Markup {
    match schema.get("properties") {
        Some(Value::Object(properties)) if !properties.is_empty() => {
            object_fields(schema, "", schema, properties, 0)
        }
        _ => html! { p.hint { "This tool takes no arguments." } },
    }
}

fn object_fields(
    root: &Value,
    prefix: &str,
    schema: &Value,
    properties: &Map<String, Value>,
    depth: usize,
) -> Markup {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    html! {
        @for (name, property) in properties {
            (field(root, &format!("{prefix}/{}", segment(name)), name, property, required.contains(&name.as_str()), depth))
        }
    }
}

fn field(
    root: &Value,
    path: &str,
    name: &str,
    schema: &Value,
    required: bool,
    depth: usize,
) -> Markup {
    let schema = resolved(root, schema);
    let id = format!("arg{}", path.replace(['/', '~'], "-"));
    let description = without_null(schema)
        .get("description")
        .or_else(|| schema.get("description"))
        .and_then(Value::as_str);
    let default = schema.get("default");
    let label = html! {
        label for=(id) {
            code { (name) }
            @if required { " " abbr title="required" { "*" } }
        }
        @if let Some(description) = description { small.description { (description) } }
    };
    let text_default = |value: Option<&Value>| match value {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    match input_of(root, schema, depth) {
        Input::Object(properties) => html! {
            fieldset data-path=(path) {
                legend { code { (name) } @if let Some(d) = description { " — " (d) } }
                (object_fields(root, path, resolved(root, without_null(schema)), properties, depth + 1))
            }
        },
        Input::Choice(choices) => html! {
            div.field {
                (label)
                select id=(id) name=(path) required[required] {
                    @if !required { option value="" { "(not set)" } }
                    @for choice in choices {
                        @let value = choice.to_string();
                        option value=(value) selected[Some(choice) == default] { (text_default(Some(choice))) }
                    }
                }
            }
        },
        Input::Boolean => html! {
            div.field {
                (label)
                select id=(id) name=(path) required[required] {
                    @if !required { option value="" { "(not set)" } }
                    option value="true" selected[default == Some(&json!(true))] { "true" }
                    option value="false" selected[default == Some(&json!(false))] { "false" }
                }
            }
        },
        Input::Number { integer } => {
            let inner = resolved(root, without_null(schema));
            html! {
                div.field {
                    (label)
                    input id=(id) name=(path) type="number" step=(if integer { "1" } else { "any" })
                        min=[inner.get("minimum").map(Value::to_string)]
                        max=[inner.get("maximum").map(Value::to_string)]
                        value=(text_default(default)) required[required];
                }
            }
        }
        Input::Text => html! {
            div.field {
                (label)
                input id=(id) name=(path) type="text" value=(text_default(default)) required[required];
            }
        },
        Input::Lines => html! {
            div.field {
                (label)
                small.description { "One item per line." }
                textarea id=(id) name=(path) rows="3" required[required] {
                    @if let Some(Value::Array(items)) = default {
                        (items.iter().map(|i| text_default(Some(i))).collect::<Vec<_>>().join("\n"))
                    }
                }
            }
        },
        Input::Json => html! {
            div.field {
                (label)
                small.description { "JSON." }
                textarea.json id=(id) name=(path) data-json="" rows="3" required[required] {
                    @if let Some(default) = default { (default.to_string()) }
                }
            }
        },
    }
}

/// The arguments the posted `pairs` (field path, value) give for
/// `schema`: empty fields are left out; a value that does not fit its
/// type is an error naming the argument.
pub(crate) fn arguments(schema: &Value, pairs: &[(String, String)]) -> Result<Value, String> {
    let mut arguments = Map::new();
    if let Some(Value::Object(properties)) = schema.get("properties") {
        read_object(schema, "", properties, pairs, &mut arguments, 0)?;
    }
    Ok(Value::Object(arguments))
}

fn read_object(
    root: &Value,
    prefix: &str,
    properties: &Map<String, Value>,
    pairs: &[(String, String)],
    into: &mut Map<String, Value>,
    depth: usize,
) -> Result<(), String> {
    for (name, schema) in properties {
        let path = format!("{prefix}/{}", segment(name));
        let values: Vec<&str> = pairs
            .iter()
            .filter(|(key, _)| *key == path)
            .map(|(_, v)| v.as_str())
            .collect();
        let value = match input_of(root, schema, depth) {
            Input::Object(inner) => {
                let mut object = Map::new();
                read_object(root, &path, inner, pairs, &mut object, depth + 1)?;
                (!object.is_empty()).then_some(Value::Object(object))
            }
            input => read_value(&input, &values).map_err(|why| format!("{}: {why}", &path[1..]))?,
        };
        if let Some(value) = value {
            into.insert(name.clone(), value);
        }
    }
    Ok(())
}

fn read_value(input: &Input<'_>, values: &[&str]) -> Result<Option<Value>, String> {
    let Some(text) = values.first().map(|v| v.trim()).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let value = match input {
        Input::Text => Value::String(values[0].to_owned()),
        Input::Choice(choices) => {
            let chosen: Value = serde_json::from_str(text)
                .map_err(|_| format!("{text:?} is not one of the choices"))?;
            if !choices.contains(&chosen) {
                return Err(format!("{text} is not one of the choices"));
            }
            chosen
        }
        Input::Number { integer: true } => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("{text:?} is not a whole number"))?,
        Input::Number { integer: false } => text
            .parse::<f64>()
            .ok()
            .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
            .ok_or_else(|| format!("{text:?} is not a number"))?,
        Input::Boolean => match text {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            other => return Err(format!("{other:?} is neither true nor false")),
        },
        Input::Lines => Value::Array(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(|l| Value::String(l.to_owned()))
                .collect(),
        ),
        Input::Json | Input::Object(_) => {
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?
        }
    };
    Ok(Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "required": ["query"], "properties": {
            "query": {"type": "string", "description": "Words"},
            "limit": {"type": "integer", "minimum": 1, "default": 10},
            "ratio": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            "exact": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "options": {"type": "object", "properties": {
                "mode": {"type": "string", "enum": ["fast", "thorough"]},
                "a/b": {"type": "object", "properties": {"deep": {"type": "integer"}}}
            }},
            "extra": {"type": "array", "items": {"type": "object"}},
            "home": {"$ref": "#/$defs/address"}
        }, "$defs": {"address": {"type": "object", "properties": {
            "city": {"type": "string"}, "next": {"$ref": "#/$defs/address"}}}}})
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn every_kind_of_field_is_made_and_read_back() {
        let form = fields(&schema()).into_string();
        for expected in [
            r#"name="/query""#,
            r#"type="number" step="1" min="1""#,
            r#"value="10""#,
            r#"name="/ratio" type="number" step="any""#,
            r#"<select id="arg-exact" name="/exact">"#,
            r#"<textarea id="arg-tags" name="/tags""#,
            r#"<fieldset data-path="/options">"#,
            r#"<option value="&quot;thorough&quot;">thorough</option>"#,
            r#"name="/options/a~1b/deep""#,
            r#"data-json"#,
            r#"name="/home/city""#,
            r#"name="/home/next/next/next/next/next/city""#,
        ] {
            assert!(form.contains(expected), "{expected} in {form}");
        }
        let posted = pairs(&[
            ("/query", "cats"),
            ("/limit", "5"),
            ("/ratio", ""),
            ("/exact", "true"),
            ("/tags", "a\n\n b \n"),
            ("/options/mode", "\"thorough\""),
            ("/options/a~1b/deep", "3"),
            ("/extra", r#"[{"k": 1}]"#),
            ("/home/city", "Lyon"),
            ("/home/next/next/next/next/next/next", r#"{"city": "deep"}"#),
        ]);
        assert_eq!(
            arguments(&schema(), &posted).unwrap(),
            json!({"query": "cats", "limit": 5, "exact": true, "tags": ["a", "b"],
                   "options": {"mode": "thorough", "a/b": {"deep": 3}}, "extra": [{"k": 1}],
                   "home": {"city": "Lyon", "next": {"next": {"next": {"next": {"next": {"next": {"city": "deep"}}}}}}}})
        );
    }

    #[test]
    fn a_value_that_does_not_fit_names_its_argument() {
        let bad =
            |field: &str, value: &str| arguments(&schema(), &pairs(&[(field, value)])).unwrap_err();
        assert!(
            bad("/limit", "2.5").starts_with("limit: "),
            "{}",
            bad("/limit", "2.5")
        );
        assert!(bad("/options/mode", "\"slow\"").starts_with("options/mode: "));
        assert!(bad("/extra", "[").contains("not JSON"));
        assert!(bad("/exact", "yes").contains("neither true nor false"));
    }
}
