//! SQLite values to JSON and back, faithfully: integers stay integers,
//! reals stay reals, NULL is `null`, and a BLOB is an object
//! `{"$base64": "..."}` so that it cannot be mistaken for text.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rusqlite::types::{Value as SqlValue, ValueRef};
use serde_json::{Map, Value, json};

/// The key of the object that carries a BLOB, base64-encoded.
pub const BLOB_MARKER: &str = "$base64";

/// A SQLite value as JSON. A real that JSON cannot hold (an infinity) is
/// written as the string `"Infinity"` or `"-Infinity"`.
pub fn to_json(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(r) => serde_json::Number::from_f64(r)
            .map(Value::Number)
            .unwrap_or_else(|| {
                Value::String(if r > 0.0 { "Infinity" } else { "-Infinity" }.into())
            }),
        ValueRef::Text(bytes) => Value::String(String::from_utf8_lossy(bytes).into_owned()),
        ValueRef::Blob(bytes) => json!({ BLOB_MARKER: STANDARD.encode(bytes) }),
    }
}

/// About how many bytes `value` takes in a result, to keep results bounded.
pub fn approximate_size(value: ValueRef<'_>) -> usize {
    match value {
        ValueRef::Null | ValueRef::Integer(_) | ValueRef::Real(_) => 8,
        ValueRef::Text(bytes) => bytes.len() + 2,
        ValueRef::Blob(bytes) => bytes.len() * 4 / 3 + 16,
    }
}

/// A JSON value to bind as a SQL parameter: `null`, booleans (as 0 and 1),
/// numbers, strings, and `{"$base64": "..."}` for a BLOB. `what` names the
/// value in the error (`params[2]`, `values.name`).
pub fn from_json(value: &Value, what: &str) -> Result<SqlValue, String> {
    Ok(match value {
        Value::Null => SqlValue::Null,
        Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => SqlValue::Integer(i),
            None => match n.as_f64() {
                Some(f) => SqlValue::Real(f),
                None => return Err(format!("{what}: {n} does not fit a SQLite number")),
            },
        },
        Value::String(s) => SqlValue::Text(s.clone()),
        Value::Object(object) => blob_from(object).ok_or_else(|| {
            format!(
                "{what}: an object is bound only as a BLOB, written {{\"{BLOB_MARKER}\": \"<base64>\"}}; \
                 to store JSON, pass it as a string"
            )
        })??,
        Value::Array(_) => {
            return Err(format!(
                "{what}: an array cannot be bound to a SQL parameter; to store JSON, pass it as a string"
            ));
        }
    })
}

fn blob_from(object: &Map<String, Value>) -> Option<Result<SqlValue, String>> {
    if object.len() != 1 {
        return None;
    }
    let encoded = object.get(BLOB_MARKER)?.as_str()?;
    Some(
        STANDARD
            .decode(encoded)
            .map(SqlValue::Blob)
            .map_err(|e| format!("{BLOB_MARKER} is not valid base64: {e}")),
    )
}

/// `value` as it reads in a row's URI: text as is, numbers in decimal.
pub fn key_text(value: &SqlValue) -> String {
    match value {
        SqlValue::Null => "null".into(),
        SqlValue::Integer(i) => i.to_string(),
        SqlValue::Real(r) => r.to_string(),
        SqlValue::Text(s) => s.clone(),
        SqlValue::Blob(b) => to_json(ValueRef::Blob(b)).to_string(),
    }
}

/// `value` as JSON (owned).
pub fn owned_to_json(value: &SqlValue) -> Value {
    to_json(ValueRef::from(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_go_to_json_and_back_unchanged() {
        for (sql, json) in [
            (SqlValue::Null, json!(null)),
            (SqlValue::Integer(i64::MAX), json!(i64::MAX)),
            (SqlValue::Real(1.5), json!(1.5)),
            (SqlValue::Text("héllo".into()), json!("héllo")),
            (SqlValue::Blob(vec![0, 255, 7]), json!({"$base64": "AP8H"})),
        ] {
            assert_eq!(owned_to_json(&sql), json);
            assert_eq!(from_json(&json, "v").unwrap(), sql);
        }
        assert_eq!(to_json(ValueRef::Real(f64::INFINITY)), json!("Infinity"));
        assert_eq!(from_json(&json!(true), "v").unwrap(), SqlValue::Integer(1));
    }

    #[test]
    fn arrays_and_plain_objects_are_refused_with_a_reason() {
        let e = from_json(&json!([1]), "params[0]").unwrap_err();
        assert!(e.starts_with("params[0]: an array"), "{e}");
        let e = from_json(&json!({"a": 1}), "params[1]").unwrap_err();
        assert!(e.contains("BLOB"), "{e}");
        let e = from_json(&json!({"$base64": "!!"}), "params[2]").unwrap_err();
        assert!(e.contains("base64"), "{e}");
    }
}
