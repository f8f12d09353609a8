//! Tool arguments mirrored into HTTP headers (2026-07-28, `x-mcp-header`).
//!
//! A tool's input schema may mark a property with `"x-mcp-header": "Region"`;
//! over Streamable HTTP the client then sends the argument's value as the
//! header `Mcp-Param-Region`, and the server checks that header and body
//! agree. This module holds the rules both sides share: which annotations
//! are valid ([`header_params`]), how a value is written into a header
//! ([`HeaderParam::header_value`], [`encode_header_value`]) and read back
//! ([`decode_header_value`], [`HeaderParam::check`]).
//!
//! ```
//! use mcp_schema::header_params::{decode_header_value, encode_header_value, header_params};
//! use serde_json::json;
//!
//! let schema = json!({"type": "object", "properties": {
//!     "region": {"type": "string", "x-mcp-header": "Region"}}});
//! let params = header_params(&schema).unwrap();
//! assert_eq!(params[0].header_name(), "Mcp-Param-Region");
//! let args = json!({"region": "Hello, 世界"});
//! let value = params[0].header_value(args.as_object().unwrap()).unwrap();
//! assert_eq!(value, "=?base64?SGVsbG8sIOS4lueVjA==?=");
//! assert_eq!(decode_header_value(&value).unwrap(), "Hello, 世界");
//! assert_eq!(encode_header_value("us-west1"), "us-west1");
//! ```

use std::borrow::Cow;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

/// The schema keyword that designates a header-mirrored parameter.
pub const ANNOTATION: &str = "x-mcp-header";

/// The prefix of every parameter header's name.
pub const HEADER_PREFIX: &str = "Mcp-Param-";

const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

/// The largest integer JavaScript represents exactly (2^53 - 1).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The JSON type of a header-mirrored parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderParamKind {
    /// A string, sent as-is (or Base64 when unsafe in a header).
    String,
    /// An integer in JavaScript's safe range, sent in decimal.
    Integer,
    /// A boolean, sent as `true` or `false`.
    Boolean,
}

/// One annotated tool parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The annotation's value: the header is `Mcp-Param-{name}`.
    pub name: String,
    /// The chain of `properties` keys from the schema root to the parameter.
    pub path: Vec<String>,
    /// The parameter's type.
    pub kind: HeaderParamKind,
}

/// Why a tool's `x-mcp-header` annotations are invalid (the tool must then
/// be refused by clients on HTTP and is not enforced by servers).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid x-mcp-header annotation at {location}: {reason}")]
pub struct InvalidHeaderAnnotation {
    /// A JSON pointer into the input schema.
    pub location: String,
    /// What is wrong.
    pub reason: String,
}

/// Why a header value could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderValueError {
    /// The value holds characters a header value may not have.
    #[error("the header value contains invalid characters")]
    InvalidCharacters,
    /// A `=?base64?...?=` value whose payload is not padded standard Base64.
    #[error("the header value is not valid Base64")]
    InvalidBase64,
    /// The decoded Base64 payload is not UTF-8.
    #[error("the Base64 header value is not UTF-8")]
    NotUtf8,
}

/// The valid annotations of an input schema, in property-name order, or why the
/// schema's annotations are invalid. A schema without annotations gives an
/// empty list.
pub fn header_params(input_schema: &Value) -> Result<Vec<HeaderParam>, InvalidHeaderAnnotation> {
    let mut found = Vec::new();
    collect(input_schema, &mut Vec::new(), true, &mut found)?;
    for (i, param) in found.iter().enumerate() {
        if found[..i]
            .iter()
            .any(|earlier| earlier.name.eq_ignore_ascii_case(&param.name))
        {
            return Err(invalid(
                &param.path,
                format!(
                    "{:?} is used twice (names are case-insensitive)",
                    param.name
                ),
            ));
        }
    }
    Ok(found)
}

/// Makes every annotated property of `input_schema` whose type is a
/// nullable primitive (`["integer", "null"]`, as schema generators write
/// an optional field) the plain primitive: some clients refuse a type list
/// on an annotated property and drop the whole tool. The argument may
/// still be left out; it can no longer be `null`. Returns how many
/// properties changed.
pub fn plain_annotated_types(input_schema: &mut Map<String, Value>) -> usize {
    let Some(Value::Object(properties)) = input_schema.get_mut("properties") else {
        return 0;
    };
    let mut changed = 0;
    for property in properties.values_mut() {
        let Value::Object(property) = property else {
            continue;
        };
        if property.contains_key(ANNOTATION)
            && let Some(Value::Array(types)) = property.get("type")
        {
            let named: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            let not_null: Vec<&str> = named.iter().copied().filter(|t| *t != "null").collect();
            if named.len() == 2 && types.len() == 2 && not_null.len() == 1 {
                let plain = Value::String(not_null[0].to_owned());
                property.insert("type".to_owned(), plain);
                changed += 1;
            }
        }
        changed += plain_annotated_types(property);
    }
    changed
}

fn invalid(path: &[String], reason: impl Into<String>) -> InvalidHeaderAnnotation {
    let mut location = String::new();
    for key in path {
        location.push('/');
        location.push_str(&key.replace('~', "~0").replace('/', "~1"));
    }
    if location.is_empty() {
        location.push('/');
    }
    InvalidHeaderAnnotation {
        location,
        reason: reason.into(),
    }
}

/// Walks the schema. `reachable` says whether `node` is the root or a
/// property schema reached only through `properties` keys; `path` is the
/// JSON pointer to it (for a reachable node, the alternating
/// `properties`/key chain).
fn collect(
    node: &Value,
    path: &mut Vec<String>,
    reachable: bool,
    found: &mut Vec<HeaderParam>,
) -> Result<(), InvalidHeaderAnnotation> {
    match node {
        Value::Object(object) => {
            if let Some(annotation) = object.get(ANNOTATION) {
                if !reachable || path.is_empty() {
                    return Err(invalid(
                        path,
                        "only properties reached through `properties` keys may be annotated",
                    ));
                }
                found.push(annotated(annotation, object, path)?);
            }
            for (key, child) in object {
                path.push(key.clone());
                if key == "properties" && reachable {
                    if let Value::Object(properties) = child {
                        for (name, schema) in properties {
                            path.push(name.clone());
                            collect(schema, path, true, found)?;
                            path.pop();
                        }
                    }
                } else if key != ANNOTATION {
                    collect(child, path, false, found)?;
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                path.push(i.to_string());
                collect(child, path, false, found)?;
                path.pop();
            }
        }
        _ => {}
    }
    Ok(())
}

fn annotated(
    annotation: &Value,
    schema: &Map<String, Value>,
    pointer: &[String],
) -> Result<HeaderParam, InvalidHeaderAnnotation> {
    let Some(name) = annotation.as_str() else {
        return Err(invalid(pointer, "the annotation must be a string"));
    };
    if name.is_empty() {
        return Err(invalid(pointer, "the annotation must not be empty"));
    }
    if !name.bytes().all(is_tchar) {
        return Err(invalid(
            pointer,
            format!("{name:?} is not an HTTP field-name token"),
        ));
    }
    let kind = kind_of(schema.get("type")).ok_or_else(|| {
        invalid(
            pointer,
            "only string, integer and boolean parameters may be annotated",
        )
    })?;
    let path = pointer
        .iter()
        .skip(1)
        .step_by(2)
        .cloned()
        .collect::<Vec<_>>();
    Ok(HeaderParam {
        name: name.to_owned(),
        path,
        kind,
    })
}

fn kind_of(ty: Option<&Value>) -> Option<HeaderParamKind> {
    let single = |name: &str| match name {
        "string" => Some(HeaderParamKind::String),
        "integer" => Some(HeaderParamKind::Integer),
        "boolean" => Some(HeaderParamKind::Boolean),
        _ => None,
    };
    match ty? {
        Value::String(name) => single(name),
        // A nullable primitive: `["string", "null"]`.
        Value::Array(names) => {
            let mut kinds = names
                .iter()
                .filter_map(Value::as_str)
                .filter(|n| *n != "null");
            let kind = single(kinds.next()?)?;
            (kinds.next().is_none() && names.iter().all(Value::is_string)).then_some(kind)
        }
        _ => None,
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Whether a value goes into a header as-is: visible ASCII and inner
/// spaces only, no surrounding whitespace, and not itself looking like an
/// encoded value.
fn is_plain(value: &str) -> bool {
    let visible = value.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let sentinel = value.starts_with(SENTINEL_START) && value.ends_with(SENTINEL_END);
    visible && !padded && !sentinel
}

/// A string as a header value: as-is when safe, else `=?base64?...?=`.
pub fn encode_header_value(value: &str) -> Cow<'_, str> {
    if is_plain(value) {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(format!(
            "{SENTINEL_START}{}{SENTINEL_END}",
            STANDARD.encode(value)
        ))
    }
}

/// A received header value as text: surrounding whitespace dropped, a
/// `=?base64?...?=` value decoded (strict, padded Base64 of UTF-8), any
/// other value literal.
pub fn decode_header_value(raw: &str) -> Result<Cow<'_, str>, HeaderValueError> {
    let value = raw.trim_matches([' ', '\t']);
    if !value
        .bytes()
        .all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
    {
        return Err(HeaderValueError::InvalidCharacters);
    }
    let encoded = value
        .strip_prefix(SENTINEL_START)
        .and_then(|rest| rest.strip_suffix(SENTINEL_END));
    match encoded {
        Some(payload) => {
            let bytes = STANDARD
                .decode(payload)
                .map_err(|_| HeaderValueError::InvalidBase64)?;
            String::from_utf8(bytes)
                .map(Cow::Owned)
                .map_err(|_| HeaderValueError::NotUtf8)
        }
        None => Ok(Cow::Borrowed(value)),
    }
}

impl HeaderParam {
    /// The header's name, `Mcp-Param-{name}`.
    pub fn header_name(&self) -> String {
        format!("{HEADER_PREFIX}{}", self.name)
    }

    /// The argument at this parameter's path; `None` when absent or null.
    pub fn argument<'a>(&self, arguments: &'a Map<String, Value>) -> Option<&'a Value> {
        let (last, parents) = self.path.split_last()?;
        let mut object = arguments;
        for key in parents {
            object = object.get(key)?.as_object()?;
        }
        object.get(last).filter(|v| !v.is_null())
    }

    /// The header value a client sends for these arguments: `None` when
    /// the argument is absent, null, or not of the parameter's type.
    pub fn header_value(&self, arguments: &Map<String, Value>) -> Option<String> {
        match (self.kind, self.argument(arguments)?) {
            (HeaderParamKind::String, Value::String(s)) => {
                Some(encode_header_value(s).into_owned())
            }
            (HeaderParamKind::Integer, Value::Number(n)) => {
                let value = n.as_f64()?;
                (value.fract() == 0.0 && value.abs() <= MAX_SAFE_INTEGER)
                    .then(|| format!("{}", value as i64))
            }
            (HeaderParamKind::Boolean, Value::Bool(b)) => Some(b.to_string()),
            _ => None,
        }
    }

    /// Checks the received header (`None`: absent) against the arguments
    /// in the body; the error says what disagrees.
    pub fn check(
        &self,
        header: Option<&str>,
        arguments: &Map<String, Value>,
    ) -> Result<(), String> {
        let header_name = self.header_name();
        let body = self.argument(arguments);
        let header = match header {
            None if body.is_none() => return Ok(()),
            None => return Err(format!("{header_name} header is missing")),
            Some(raw) => decode_header_value(raw).map_err(|e| format!("{header_name}: {e}"))?,
        };
        let Some(body) = body else {
            return Err(format!(
                "{header_name} is present but the argument is absent from the body"
            ));
        };
        let agrees = match (self.kind, body) {
            (HeaderParamKind::Integer, Value::Number(n)) => header
                .parse::<f64>()
                .ok()
                .zip(n.as_f64())
                .is_some_and(|(h, b)| h == b),
            (HeaderParamKind::Boolean, Value::Bool(b)) => *header == *b.to_string(),
            (_, Value::String(s)) => *header == **s,
            (_, other) => *header == *other.to_string().as_str(),
        };
        if agrees {
            Ok(())
        } else {
            Err(format!(
                "{header_name} value {:?} does not match body value {}",
                header.as_ref(),
                body
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn nullable_annotated_types_become_plain() {
        let mut schema = json!({"type": "object", "properties": {
            "shard": {"type": ["integer", "null"], "x-mcp-header": "Shard"},
            "note": {"type": ["string", "null"]},
            "target": {"type": "object", "properties": {
                "dry": {"type": ["null", "boolean"], "x-mcp-header": "Dry"},
                "odd": {"type": ["string", "integer", "null"], "x-mcp-header": "Odd"}}}}});
        let object = schema.as_object_mut().unwrap();
        assert_eq!(plain_annotated_types(object), 2);
        assert_eq!(schema["properties"]["shard"]["type"], "integer");
        assert_eq!(
            schema["properties"]["note"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(
            schema["properties"]["target"]["properties"]["dry"]["type"],
            "boolean"
        );
        assert_eq!(
            schema["properties"]["target"]["properties"]["odd"]["type"],
            json!(["string", "integer", "null"])
        );
    }

    #[test]
    fn nested_properties_are_reachable() {
        let schema = json!({"type": "object", "properties": {
            "target": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "shard": {"type": "integer", "x-mcp-header": "Shard"}}},
            "dry": {"type": ["boolean", "null"], "x-mcp-header": "Dry-Run"}}});
        let params = header_params(&schema).unwrap();
        let described: Vec<_> = params
            .iter()
            .map(|p| (p.name.as_str(), p.path.join("."), p.kind))
            .collect();
        assert_eq!(
            described,
            [
                ("Dry-Run", "dry".to_owned(), HeaderParamKind::Boolean),
                (
                    "Region",
                    "target.region".to_owned(),
                    HeaderParamKind::String
                ),
                ("Shard", "target.shard".to_owned(), HeaderParamKind::Integer),
            ]
        );
        let call = args(json!({"target": {"region": "eu", "shard": 7}, "dry": true}));
        let values: Vec<_> = params.iter().map(|p| p.header_value(&call)).collect();
        assert_eq!(
            values,
            [Some("true".into()), Some("eu".into()), Some("7".into())]
        );
    }

    #[test]
    fn annotations_outside_property_chains_are_invalid() {
        for schema in [
            json!({"type": "object", "properties": {"xs": {"type": "array",
                "items": {"type": "string", "x-mcp-header": "X"}}}}),
            json!({"type": "object", "oneOf": [{"properties": {
                "a": {"type": "string", "x-mcp-header": "A"}}}]}),
            json!({"type": "object", "$defs": {"a": {"type": "string", "x-mcp-header": "A"}}}),
            json!({"type": "object", "x-mcp-header": "Root"}),
        ] {
            let error = header_params(&schema).unwrap_err();
            assert!(error.reason.contains("properties"), "{error}");
        }
    }

    #[test]
    fn names_types_and_duplicates_are_checked() {
        let cases = [
            (json!({"type": "string", "x-mcp-header": ""}), "empty"),
            (json!({"type": "string", "x-mcp-header": "A B"}), "token"),
            (json!({"type": "string", "x-mcp-header": "A\r\nB"}), "token"),
            (json!({"type": "number", "x-mcp-header": "N"}), "integer"),
            (json!({"type": "object", "x-mcp-header": "O"}), "integer"),
            (json!({"x-mcp-header": "Untyped"}), "integer"),
        ];
        for (property, expected) in cases {
            let schema = json!({"type": "object", "properties": {"p": property}});
            let error = header_params(&schema).unwrap_err();
            assert!(error.reason.contains(expected), "{error}");
            assert_eq!(error.location, "/properties/p");
        }
        let twice = json!({"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "string", "x-mcp-header": "region"}}});
        assert!(header_params(&twice).unwrap_err().reason.contains("twice"));
        assert_eq!(header_params(&json!({"type": "object"})).unwrap(), []);
    }

    #[test]
    fn values_are_encoded_as_the_specification_shows() {
        for (value, header) in [
            ("us-west1", "us-west1"),
            ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            (" padded ", "=?base64?IHBhZGRlZCA=?="),
            ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
            ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ] {
            assert_eq!(encode_header_value(value), header);
            assert_eq!(decode_header_value(header).unwrap(), value);
        }
    }

    #[test]
    fn decoding_is_strict_about_base64_and_literal_otherwise() {
        assert_eq!(decode_header_value("=?base64?SGVsbG8=?=").unwrap(), "Hello");
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8?="),
            Err(HeaderValueError::InvalidBase64)
        );
        assert_eq!(
            decode_header_value("=?base64?SGVs!!!bG8=?="),
            Err(HeaderValueError::InvalidBase64)
        );
        assert_eq!(
            decode_header_value("=?base64?/w==?="),
            Err(HeaderValueError::NotUtf8)
        );
        assert_eq!(decode_header_value("SGVsbG8=").unwrap(), "SGVsbG8=");
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8=").unwrap(),
            "=?base64?SGVsbG8="
        );
        assert_eq!(decode_header_value("  us-west1\t").unwrap(), "us-west1");
        assert_eq!(
            decode_header_value("caf\u{e9}"),
            Err(HeaderValueError::InvalidCharacters)
        );
    }

    #[test]
    fn checks_compare_header_and_body() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "shard": {"type": "integer", "x-mcp-header": "Shard"}}});
        let params = header_params(&schema).unwrap();
        let (region, shard) = (&params[0], &params[1]);
        let call = args(json!({"region": "Hello", "shard": 42}));
        assert_eq!(region.check(Some("Hello"), &call), Ok(()));
        assert_eq!(region.check(Some("=?base64?SGVsbG8=?="), &call), Ok(()));
        assert!(
            region
                .check(Some("Bye"), &call)
                .unwrap_err()
                .contains("does not match")
        );
        assert!(region.check(None, &call).unwrap_err().contains("missing"));
        assert_eq!(shard.check(Some("42.0"), &call), Ok(()));
        assert!(shard.check(Some("43"), &call).is_err());
        let without = args(json!({"region": null}));
        assert_eq!(region.check(None, &without), Ok(()));
        assert!(
            region
                .check(Some("x"), &without)
                .unwrap_err()
                .contains("absent")
        );
    }
}
