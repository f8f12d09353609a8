//! OpenAPI schemas to JSON Schema 2020-12, one tool's schemas at a time.
//!
//! References stay references: `#/components/schemas/X` becomes
//! `#/$defs/X`, and every schema a tool's schemas reach (the closure) is
//! copied once into that tool's `$defs`, so a recursive schema (a `Node`
//! whose `children` are `Node`s) stays a cycle of references and is never
//! expanded. A local reference elsewhere in the document
//! (`#/components/parameters/P/schema`) becomes a `$defs` entry named after
//! its pointer, with `/` as `.`; an external reference (another file) is
//! left open as `{}`.
//!
//! OpenAPI 3.0 forms are rewritten: `nullable: true` adds `"null"` to the
//! type (or to the `enum`, or wraps a composition in `anyOf` with
//! `{"type": "null"}`), boolean `exclusiveMinimum`/`exclusiveMaximum` become
//! numbers, `example` becomes `examples`, siblings of a `$ref` are dropped
//! (3.0 ignores them). `discriminator`, `xml`, `externalDocs` and `x-`
//! extensions are dropped.

use std::collections::{BTreeMap, HashSet};

use percent_encoding::percent_decode_str;
use serde_json::{Map, Value, json};

/// Subschema keywords whose value is one schema.
const ONE: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
    "contentSchema",
];
/// Subschema keywords whose value is an array of schemas.
const MANY: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Subschema keywords whose value is an object of schemas.
const NAMED: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// OpenAPI keywords with no meaning for validation.
const DROPPED: &[&str] = &["discriminator", "xml", "externalDocs", "nullable"];

const COMPONENTS: &str = "/components/schemas/";

/// Converts the schemas of one tool and gathers the definitions they
/// reach.
pub struct Converter<'a> {
    root: &'a Value,
    openapi30: bool,
    seen: HashSet<String>,
    pending: Vec<(String, String)>,
    defs: BTreeMap<String, Value>,
}

impl<'a> Converter<'a> {
    /// A converter for schemas of the document `root`, in OpenAPI 3.0
    /// dialect when `openapi30`.
    pub fn new(root: &'a Value, openapi30: bool) -> Self {
        Converter {
            root,
            openapi30,
            seen: HashSet::new(),
            pending: Vec::new(),
            defs: BTreeMap::new(),
        }
    }

    /// The JSON Schema form of `schema`, its references rewritten and
    /// queued for [`Converter::finish`].
    pub fn convert(&mut self, schema: &Value) -> Value {
        let Value::Object(object) = schema else {
            // `true`, `false`; anything else is no schema: allow all.
            return match schema {
                Value::Bool(_) => schema.clone(),
                _ => json!({}),
            };
        };
        if let Some(Value::String(reference)) = object.get("$ref") {
            let target = self.reference(reference);
            if self.openapi30 || object.len() == 1 {
                return target;
            }
            // 3.1: the siblings of a reference apply beside it.
            let mut out = self.convert_members(object);
            if let Value::Object(target) = target {
                out.extend(target);
            }
            return Value::Object(out);
        }
        let out = self.convert_members(object);
        Value::Object(self.nullable(object, out))
    }

    fn convert_members(&mut self, object: &Map<String, Value>) -> Map<String, Value> {
        let mut out = Map::new();
        for (key, value) in object {
            let key = key.as_str();
            if DROPPED.contains(&key) || key.starts_with("x-") {
                continue;
            }
            let converted = if ONE.contains(&key) {
                match (key, value) {
                    // A draft-4 tuple: `prefixItems` in 2020-12.
                    ("items", Value::Array(items)) => {
                        let items = items.iter().map(|s| self.convert(s)).collect();
                        out.insert("prefixItems".into(), Value::Array(items));
                        continue;
                    }
                    _ => self.convert(value),
                }
            } else if MANY.contains(&key) {
                match value {
                    Value::Array(items) => {
                        Value::Array(items.iter().map(|s| self.convert(s)).collect())
                    }
                    other => other.clone(),
                }
            } else if NAMED.contains(&key) {
                match value {
                    Value::Object(named) => Value::Object(
                        named
                            .iter()
                            .map(|(name, s)| (name.clone(), self.convert(s)))
                            .collect(),
                    ),
                    other => other.clone(),
                }
            } else if key == "example" {
                if !object.contains_key("examples") {
                    out.insert("examples".into(), json!([value]));
                }
                continue;
            } else if key == "$ref" {
                continue;
            } else {
                value.clone()
            };
            out.insert(key.to_owned(), converted);
        }
        for (flag, bound) in [
            ("exclusiveMinimum", "minimum"),
            ("exclusiveMaximum", "maximum"),
        ] {
            if let Some(Value::Bool(exclusive)) = out.get(flag).cloned() {
                out.remove(flag);
                if exclusive && let Some(limit) = out.remove(bound) {
                    out.insert(flag.into(), limit);
                }
            }
        }
        out
    }

    /// Applies OpenAPI 3.0 `nullable: true` to the converted `out`.
    fn nullable(
        &self,
        object: &Map<String, Value>,
        mut out: Map<String, Value>,
    ) -> Map<String, Value> {
        if object.get("nullable") != Some(&Value::Bool(true)) {
            return out;
        }
        if let Some(Value::Array(values)) = out.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
        let composed = ["allOf", "anyOf", "oneOf"]
            .iter()
            .any(|k| out.contains_key(*k));
        match out.get_mut("type") {
            Some(Value::String(one)) => {
                let one = std::mem::take(one);
                out.insert("type".into(), json!([one, "null"]));
                out
            }
            Some(Value::Array(types)) => {
                if !types.contains(&json!("null")) {
                    types.push(json!("null"));
                }
                out
            }
            None if composed => {
                let mut wrapped = Map::new();
                if let Some(description) = out.get("description") {
                    wrapped.insert("description".into(), description.clone());
                }
                wrapped.insert(
                    "anyOf".into(),
                    json!([Value::Object(out), {"type": "null"}]),
                );
                wrapped
            }
            _ => out,
        }
    }

    /// The rewritten form of a reference, as a schema (`{"$ref": ...}`,
    /// or `{}` for one that cannot be followed).
    fn reference(&mut self, reference: &str) -> Value {
        let Some(pointer) = reference.strip_prefix('#') else {
            return json!({ "description": format!("(unresolved reference {reference})") });
        };
        let decoded = percent_decode_str(pointer).decode_utf8_lossy().into_owned();
        if let Some(rest) = pointer.strip_prefix(COMPONENTS) {
            let segment = rest.split('/').next().unwrap_or_default();
            let name = unescape(&percent_decode_str(segment).decode_utf8_lossy());
            self.queue(name, format!("{COMPONENTS}{segment}"));
            return json!({ "$ref": format!("#/$defs/{rest}") });
        }
        if self.root.pointer(&decoded).is_none() {
            return json!({ "description": format!("(unresolved reference {reference})") });
        }
        let name = decoded.trim_start_matches('/').replace('/', ".");
        self.queue(name.clone(), pointer.to_owned());
        json!({ "$ref": format!("#/$defs/{}", name.replace('~', "~0")) })
    }

    fn queue(&mut self, name: String, pointer: String) {
        if self.seen.insert(name.clone()) {
            self.pending.push((name, pointer));
        }
    }

    /// Converts every definition reached so far (and those they reach);
    /// the `$defs` object, empty when no reference was met.
    pub fn finish(mut self) -> Map<String, Value> {
        while let Some((name, pointer)) = self.pending.pop() {
            let decoded = percent_decode_str(&pointer)
                .decode_utf8_lossy()
                .into_owned();
            let converted = match self.root.pointer(&decoded) {
                Some(schema) => self.convert(schema),
                None => json!({ "description": format!("(unresolved reference #{pointer})") }),
            };
            self.defs.insert(name, converted);
        }
        self.defs.into_iter().collect()
    }
}

/// A JSON pointer segment's text (`~1` is `/`, `~0` is `~`).
fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(root: &Value, schema: Value, openapi30: bool) -> (Value, Map<String, Value>) {
        let mut converter = Converter::new(root, openapi30);
        let out = converter.convert(&schema);
        (out, converter.finish())
    }

    #[test]
    fn a_recursive_schema_stays_a_cycle_of_references() {
        let root = json!({"components": {"schemas": {
            "Node": {"type": "object", "properties": {
                "value": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}}}});
        let (out, defs) = convert(&root, json!({"$ref": "#/components/schemas/Node"}), true);
        assert_eq!(out, json!({"$ref": "#/$defs/Node"}));
        assert_eq!(defs.len(), 1);
        assert_eq!(
            defs["Node"]["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/Node"})
        );
    }

    #[test]
    fn the_closure_of_references_is_gathered_once() {
        let root = json!({"components": {"schemas": {
            "A": {"properties": {"b": {"$ref": "#/components/schemas/B"}}},
            "B": {"properties": {"a": {"$ref": "#/components/schemas/A"},
                                  "c": {"$ref": "#/components/schemas/C"}}},
            "C": {"type": "integer"},
            "Unused": {"type": "string"}}}});
        let (_, defs) = convert(&root, json!({"$ref": "#/components/schemas/A"}), false);
        let names: Vec<&String> = defs.keys().collect();
        assert_eq!(names, ["A", "B", "C"]);
    }

    #[test]
    fn nullable_becomes_a_null_type() {
        let root = json!({});
        let (out, _) = convert(&root, json!({"type": "string", "nullable": true}), true);
        assert_eq!(out, json!({"type": ["string", "null"]}));
        let (out, _) = convert(
            &root,
            json!({"type": "string", "enum": ["a", "b"], "nullable": true}),
            true,
        );
        assert_eq!(
            out,
            json!({"type": ["string", "null"], "enum": ["a", "b", null]})
        );
        let (out, _) = convert(
            &root,
            json!({"allOf": [{"type": "integer"}], "nullable": true}),
            true,
        );
        assert_eq!(
            out,
            json!({"anyOf": [{"allOf": [{"type": "integer"}]}, {"type": "null"}]})
        );
    }

    #[test]
    fn openapi_30_forms_are_rewritten() {
        let root = json!({});
        let (out, _) = convert(
            &root,
            json!({"type": "number", "minimum": 1, "exclusiveMinimum": true,
                   "maximum": 9, "exclusiveMaximum": false, "example": 5,
                   "xml": {"name": "n"}, "x-internal": true}),
            true,
        );
        assert_eq!(
            out,
            json!({"type": "number", "exclusiveMinimum": 1, "maximum": 9, "examples": [5]})
        );
        // 3.0 ignores siblings of a reference; 3.1 keeps them.
        let root = json!({"components": {"schemas": {"X": {"type": "string"}}}});
        let schema = json!({"$ref": "#/components/schemas/X", "description": "an x"});
        assert_eq!(
            convert(&root, schema.clone(), true).0,
            json!({"$ref": "#/$defs/X"})
        );
        assert_eq!(
            convert(&root, schema, false).0,
            json!({"$ref": "#/$defs/X", "description": "an x"})
        );
    }

    #[test]
    fn other_references_get_definitions_and_external_ones_stay_open() {
        let root = json!({"components": {"parameters": {"Limit": {"schema": {"type": "integer"}}},
                                         "schemas": {"A~B": {"type": "string"}}}});
        let (out, defs) = convert(
            &root,
            json!({"properties": {
                "limit": {"$ref": "#/components/parameters/Limit/schema"},
                "ab": {"$ref": "#/components/schemas/A~0B"},
                "far": {"$ref": "other.yaml#/X"}}}),
            false,
        );
        assert_eq!(
            out["properties"]["limit"],
            json!({"$ref": "#/$defs/components.parameters.Limit.schema"})
        );
        assert_eq!(out["properties"]["ab"], json!({"$ref": "#/$defs/A~0B"}));
        assert!(out["properties"]["far"].get("$ref").is_none());
        assert_eq!(
            defs["components.parameters.Limit.schema"],
            json!({"type": "integer"})
        );
        assert_eq!(defs["A~B"], json!({"type": "string"}));
    }
}
