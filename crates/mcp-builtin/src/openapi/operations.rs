//! The document's operations, each mapped to what a tool needs: its name,
//! its parameters and body as arguments, and its input schema.

use reqwest::Method;
use serde_json::{Map, Value, json};

use super::document::Document;
use super::naming;
use super::schema::Converter;
use super::{Error, Filter};

/// The methods an OpenAPI path item may hold, in the order they are read.
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Header parameters OpenAPI says to ignore (the HTTP client sets them).
const IGNORED_HEADERS: [&str; 3] = ["accept", "content-type", "authorization"];

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// A `{name}` in the path.
    Path,
    /// The query string.
    Query,
    /// A request header.
    Header,
    /// A cookie.
    Cookie,
}

impl Location {
    fn parse(text: &str) -> Option<Location> {
        Some(match text {
            "path" => Location::Path,
            "query" => Location::Query,
            "header" => Location::Header,
            "cookie" => Location::Cookie,
            _ => return None,
        })
    }

    fn prefix(self) -> &'static str {
        match self {
            Location::Path => "path",
            Location::Query => "query",
            Location::Header => "header",
            Location::Cookie => "cookie",
        }
    }
}

/// How a parameter's value is written (OpenAPI `style`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `a,b` (path and header default).
    Simple,
    /// `k=a&k=b` or `k=a,b` (query and cookie default).
    Form,
    /// `k=a%20b`.
    SpaceDelimited,
    /// `k=a|b`.
    PipeDelimited,
    /// `k[p]=v`.
    DeepObject,
}

/// One parameter of an operation.
#[derive(Debug, Clone)]
pub struct Param {
    /// Its name in the request.
    pub name: String,
    /// Where it goes.
    pub location: Location,
    /// Its name among the tool's arguments.
    pub argument: String,
    /// How it is written.
    pub style: Style,
    /// Whether arrays and objects are exploded.
    pub explode: bool,
    /// Whether the value is sent as JSON text (a parameter with `content`).
    pub json: bool,
}

/// How the request body is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// JSON.
    Json,
    /// `application/x-www-form-urlencoded` from an object.
    Form,
    /// The argument's text as is (JSON text for a non-string).
    Text,
    /// Base64 in the argument, bytes on the wire.
    Binary,
}

/// The request body of an operation.
#[derive(Debug, Clone)]
pub struct Body {
    /// Its name among the tool's arguments.
    pub argument: String,
    /// Its `Content-Type`.
    pub media_type: String,
    /// How it is encoded.
    pub kind: BodyKind,
}

/// One operation, ready to become a tool.
#[derive(Debug, Clone)]
pub struct Operation {
    /// The tool's name.
    pub name: String,
    /// The HTTP method.
    pub method: Method,
    /// The path template (`/pet/{petId}`).
    pub path: String,
    /// The summary.
    pub summary: Option<String>,
    /// The description.
    pub description: Option<String>,
    /// Whether it is deprecated.
    pub deprecated: bool,
    /// Its parameters.
    pub params: Vec<Param>,
    /// Its request body.
    pub body: Option<Body>,
    /// The tool's input schema.
    pub input_schema: Map<String, Value>,
    /// The arguments the input schema requires.
    pub required: Vec<String>,
    /// The media type its success response is documented with.
    pub response_type: Option<String>,
}

impl Operation {
    /// The tool's description: the summary, the description, the method
    /// and path.
    pub fn tool_description(&self) -> String {
        let mut text = String::new();
        if let Some(summary) = &self.summary {
            text.push_str(summary.trim());
        }
        if let Some(description) = &self.description
            && Some(description) != self.summary.as_ref()
        {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(description.trim());
        }
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&format!("`{} {}`", self.method, self.path));
        if self.deprecated {
            text.push_str(" (deprecated)");
        }
        text
    }
}

/// One operation as found, before it is mapped.
struct Found<'a> {
    path: &'a str,
    method: &'static str,
    shared: Vec<&'a Value>,
    operation: &'a Map<String, Value>,
}

impl Found<'_> {
    fn operation_id(&self) -> Option<&str> {
        self.operation.get("operationId").and_then(Value::as_str)
    }

    fn tags(&self) -> Vec<&str> {
        self.operation
            .get("tags")
            .and_then(Value::as_array)
            .map(|tags| tags.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }
}

/// The operations of `doc` that `filter` keeps, named (names are given
/// before filtering, so a tool keeps its name whatever is filtered out).
/// `hidden_headers` are the headers the server sets itself: parameters of
/// those names are not arguments. An operation that cannot be mapped is
/// left out with a warning.
pub fn operations(
    doc: &Document,
    hidden_headers: &[String],
    filter: &Filter,
) -> Result<Vec<Operation>, Error> {
    let mut found = Vec::new();
    if let Some(Value::Object(paths)) = doc.root.get("paths") {
        for (path, item) in paths {
            let Ok(Value::Object(item)) = doc.resolve(item) else {
                tracing::warn!(
                    path,
                    "path item cannot be read; its operations are left out"
                );
                continue;
            };
            let shared: Vec<&Value> = item
                .get("parameters")
                .and_then(Value::as_array)
                .map(|p| p.iter().collect())
                .unwrap_or_default();
            for method in METHODS {
                if let Some(Value::Object(operation)) = item.get(method) {
                    found.push(Found {
                        path,
                        method,
                        shared: shared.clone(),
                        operation,
                    });
                }
            }
        }
    }
    let names = naming::dedupe(
        found
            .iter()
            .map(|f| naming::base_name(f.operation_id(), f.method, f.path))
            .collect(),
    );
    for id in filter.include_ops.iter().chain(&filter.exclude_ops) {
        let known = found
            .iter()
            .zip(&names)
            .any(|(f, name)| f.operation_id() == Some(id.as_str()) || name == id);
        if !known {
            return Err(Error::UnknownOperation { id: id.clone() });
        }
    }
    let mut operations = Vec::new();
    for (f, name) in found.iter().zip(names) {
        let id_matches = |ids: &[String]| {
            ids.iter()
                .any(|id| f.operation_id() == Some(id.as_str()) || *id == name)
        };
        let tags = f.tags();
        let tag_matches = |wanted: &[String]| tags.iter().any(|t| wanted.iter().any(|w| w == t));
        let included = (filter.include_tags.is_empty() && filter.include_ops.is_empty())
            || tag_matches(&filter.include_tags)
            || id_matches(&filter.include_ops);
        let excluded = tag_matches(&filter.exclude_tags) || id_matches(&filter.exclude_ops);
        if !included || excluded {
            continue;
        }
        match map(doc, f, name, hidden_headers) {
            Ok(operation) => operations.push(operation),
            Err(why) => tracing::warn!(
                method = f.method,
                path = f.path,
                "operation left out: {why}"
            ),
        }
    }
    Ok(operations)
}

/// A parameter as declared, before it gets an argument name.
struct Declared {
    name: String,
    location: Location,
    required: bool,
    schema: Value,
    style: Style,
    explode: bool,
    json: bool,
}

fn declared(doc: &Document, raw: &Value, converter: &mut Converter) -> Result<Declared, String> {
    let param = doc.resolve(raw)?;
    let name = param
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a parameter without a name")?
        .to_owned();
    let location = param
        .get("in")
        .and_then(Value::as_str)
        .and_then(Location::parse)
        .ok_or_else(|| format!("parameter {name:?} has no valid `in`"))?;
    let (schema, json) = match (param.get("schema"), param.get("content")) {
        (Some(schema), _) => (converter.convert(schema), false),
        (None, Some(Value::Object(content))) => {
            let schema = content
                .values()
                .next()
                .and_then(|media| media.get("schema"))
                .map_or(json!({}), |s| converter.convert(s));
            (schema, true)
        }
        _ => (json!({}), false),
    };
    let mut schema = schema;
    if let Value::Object(object) = &mut schema {
        if let Some(description) = param.get("description").and_then(Value::as_str)
            && !object.contains_key("description")
        {
            object.insert("description".into(), json!(description));
        }
        if param.get("deprecated") == Some(&Value::Bool(true)) {
            object.insert("deprecated".into(), json!(true));
        }
    }
    let style = match param.get("style").and_then(Value::as_str) {
        Some("spaceDelimited") => Style::SpaceDelimited,
        Some("pipeDelimited") => Style::PipeDelimited,
        Some("deepObject") => Style::DeepObject,
        Some("form") => Style::Form,
        Some("simple") => Style::Simple,
        _ if matches!(location, Location::Query | Location::Cookie) => Style::Form,
        _ => Style::Simple,
    };
    let explode = param
        .get("explode")
        .and_then(Value::as_bool)
        .unwrap_or(style == Style::Form);
    Ok(Declared {
        required: location == Location::Path
            || param.get("required").and_then(Value::as_bool) == Some(true),
        name,
        location,
        schema,
        style,
        explode,
        json,
    })
}

fn map(
    doc: &Document,
    f: &Found,
    name: String,
    hidden_headers: &[String],
) -> Result<Operation, String> {
    let mut converter = Converter::new(&doc.root, doc.openapi30);
    // Path-level parameters, overridden by the operation's own.
    let mut params: Vec<Declared> = Vec::new();
    let own = f
        .operation
        .get("parameters")
        .and_then(Value::as_array)
        .map(|p| p.iter().collect::<Vec<_>>())
        .unwrap_or_default();
    for raw in f.shared.iter().chain(&own) {
        let param = declared(doc, raw, &mut converter)?;
        params.retain(|p| !(p.name == param.name && p.location == param.location));
        params.push(param);
    }
    params.retain(|p| {
        p.location != Location::Header
            || !(IGNORED_HEADERS.contains(&p.name.to_ascii_lowercase().as_str())
                || hidden_headers
                    .iter()
                    .any(|h| h.eq_ignore_ascii_case(&p.name)))
    });
    for p in params.iter().filter(|p| p.location == Location::Path) {
        if !f.path.contains(&format!("{{{}}}", p.name)) {
            return Err(format!("path parameter {:?} is not in the path", p.name));
        }
    }
    params.sort_by_key(|p| p.location as u8);

    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut mapped = Vec::new();
    for p in params {
        let argument = free_name(&properties, &p.name, p.location.prefix());
        properties.insert(argument.clone(), p.schema);
        if p.required {
            required.push(argument.clone());
        }
        mapped.push(Param {
            name: p.name,
            location: p.location,
            argument,
            style: p.style,
            explode: p.explode,
            json: p.json,
        });
    }

    let body = match f.operation.get("requestBody") {
        None => None,
        Some(raw) => {
            let request_body = doc.resolve(raw)?;
            let (media_type, kind, schema) = body_media(request_body, &mut converter)?;
            let argument = free_name(&properties, "body", "request");
            let mut schema = schema;
            if let (Value::Object(object), Some(description)) = (
                &mut schema,
                request_body.get("description").and_then(Value::as_str),
            ) && !object.contains_key("description")
            {
                object.insert("description".into(), json!(description));
            }
            properties.insert(argument.clone(), schema);
            if request_body.get("required").and_then(Value::as_bool) == Some(true) {
                required.push(argument.clone());
            }
            Some(Body {
                argument,
                media_type,
                kind,
            })
        }
    };

    let mut input_schema = Map::new();
    input_schema.insert("type".into(), json!("object"));
    input_schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        input_schema.insert("required".into(), json!(required));
    }
    input_schema.insert("additionalProperties".into(), json!(false));
    let defs = converter.finish();
    if !defs.is_empty() {
        input_schema.insert("$defs".into(), Value::Object(defs));
    }
    let text = |key: &str| {
        f.operation
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    Ok(Operation {
        name,
        method: Method::from_bytes(f.method.to_uppercase().as_bytes())
            .map_err(|e| e.to_string())?,
        path: f.path.to_owned(),
        summary: text("summary"),
        description: text("description"),
        deprecated: f.operation.get("deprecated") == Some(&Value::Bool(true)),
        params: mapped,
        body,
        input_schema,
        required,
        response_type: response_type(doc, f.operation),
    })
}

/// `wanted` if no property has it, else `{prefix}_{wanted}`, else that
/// with `_2`, `_3`...
fn free_name(properties: &Map<String, Value>, wanted: &str, prefix: &str) -> String {
    if !properties.contains_key(wanted) {
        return wanted.to_owned();
    }
    let prefixed = format!("{prefix}_{wanted}");
    if !properties.contains_key(&prefixed) {
        return prefixed;
    }
    (2..)
        .map(|n| format!("{prefixed}_{n}"))
        .find(|name| !properties.contains_key(name))
        .expect("some suffix is free")
}

fn is_json(media_type: &str) -> bool {
    let essence = media_type.split(';').next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case("application/json") || essence.ends_with("+json")
}

/// The media type the body is sent as, how, and its schema: JSON first,
/// then a form, then text, then other types as bytes. Multipart bodies
/// are not supported.
fn body_media(
    request_body: &Value,
    converter: &mut Converter,
) -> Result<(String, BodyKind, Value), String> {
    let Some(Value::Object(content)) = request_body.get("content") else {
        return Err("a request body without content".into());
    };
    let pick = |test: &dyn Fn(&str) -> bool| content.iter().find(|(media, _)| test(media));
    let chosen = pick(&|m| is_json(m))
        .map(|c| (c, BodyKind::Json))
        .or_else(|| {
            pick(&|m| m.starts_with("application/x-www-form-urlencoded"))
                .map(|c| (c, BodyKind::Form))
        })
        .or_else(|| {
            pick(&|m| {
                m.starts_with("text/") || m.contains("xml") || m.starts_with("application/yaml")
            })
            .map(|c| (c, BodyKind::Text))
        })
        .or_else(|| {
            pick(&|m| !m.starts_with("multipart/") && m != "*/*").map(|c| (c, BodyKind::Binary))
        })
        .or_else(|| pick(&|m| m == "*/*").map(|c| (c, BodyKind::Json)));
    let Some(((media_type, media), kind)) = chosen else {
        return Err(format!(
            "no supported request body type among {:?} (multipart is not supported)",
            content.keys().collect::<Vec<_>>()
        ));
    };
    let schema = match kind {
        BodyKind::Binary => json!({
            "type": "string",
            "contentEncoding": "base64",
            "description": format!("The body ({media_type}), base64-encoded."),
        }),
        _ => media
            .get("schema")
            .map_or(json!({}), |s| converter.convert(s)),
    };
    let media_type = if media_type == "*/*" {
        "application/json".to_owned()
    } else {
        media_type.clone()
    };
    Ok((media_type, kind, schema))
}

/// The media type of the documented success response (JSON preferred).
fn response_type(doc: &Document, operation: &Map<String, Value>) -> Option<String> {
    let responses = operation.get("responses")?.as_object()?;
    let success = responses
        .get("200")
        .or_else(|| {
            responses
                .iter()
                .find(|(code, _)| code.starts_with('2'))
                .map(|(_, r)| r)
        })
        .or_else(|| responses.get("default"))?;
    let content = doc.resolve(success).ok()?.get("content")?.as_object()?;
    content
        .keys()
        .find(|m| is_json(m))
        .or_else(|| content.keys().next())
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(value: Value) -> Document {
        Document::parse(&value.to_string(), "test").unwrap()
    }

    fn all(doc: &Document) -> Vec<Operation> {
        operations(doc, &[], &Filter::default()).unwrap()
    }

    #[test]
    fn parameters_and_body_become_arguments_without_collisions() {
        let d = doc(json!({"openapi": "3.0.3", "paths": {"/items/{id}": {
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
            "put": {
                "operationId": "putItem",
                "parameters": [
                    {"name": "id", "in": "query", "schema": {"type": "string"}},
                    {"name": "body", "in": "query", "required": true, "schema": {"type": "string"}},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                    {"name": "Accept", "in": "header", "schema": {"type": "string"}}],
                "requestBody": {"required": true, "content": {
                    "application/xml": {"schema": {"type": "string"}},
                    "application/json": {"schema": {"type": "object", "properties": {"id": {"type": "integer"}}}}}}}}}}));
        let ops = all(&d);
        let op = &ops[0];
        let props = op.input_schema["properties"].as_object().unwrap();
        let mut names: Vec<&String> = props.keys().collect();
        names.sort();
        assert_eq!(names, ["X-Trace", "body", "id", "query_id", "request_body"]);
        assert_eq!(op.required, ["id", "body", "request_body"]);
        let body = op.body.as_ref().unwrap();
        assert_eq!(
            (body.argument.as_str(), body.kind),
            ("request_body", BodyKind::Json)
        );
        assert_eq!(body.media_type, "application/json");
        assert_eq!(op.input_schema["additionalProperties"], json!(false));
        assert_eq!(op.method, Method::PUT);
    }

    #[test]
    fn filters_keep_and_drop_by_tag_and_id() {
        let d = doc(json!({"openapi": "3.0.3", "paths": {
            "/a": {"get": {"operationId": "a", "tags": ["x"]}},
            "/b": {"get": {"operationId": "b", "tags": ["y"]}},
            "/c": {"get": {"tags": ["x", "z"]}}}}));
        let names = |filter: Filter| -> Vec<String> {
            operations(&d, &[], &filter)
                .unwrap()
                .into_iter()
                .map(|o| o.name)
                .collect()
        };
        let tags = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(names(Filter::default()), ["a", "b", "get_c"]);
        assert_eq!(
            names(Filter {
                include_tags: tags(&["x"]),
                ..Filter::default()
            }),
            ["a", "get_c"]
        );
        assert_eq!(
            names(Filter {
                include_tags: tags(&["x"]),
                exclude_tags: tags(&["z"]),
                ..Filter::default()
            }),
            ["a"]
        );
        assert_eq!(
            names(Filter {
                include_ops: tags(&["b"]),
                exclude_ops: tags(&["get_c"]),
                ..Filter::default()
            }),
            ["b"]
        );
        let e = operations(
            &d,
            &[],
            &Filter {
                exclude_ops: tags(&["nope"]),
                ..Filter::default()
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("nope"), "{e}");
    }

    #[test]
    fn headers_the_server_sets_are_not_arguments() {
        let d = doc(json!({"openapi": "3.0.3", "paths": {"/p": {"delete": {
            "parameters": [{"name": "api_key", "in": "header", "schema": {"type": "string"}}]}}}}));
        let ops = operations(&d, &["API_KEY".into()], &Filter::default()).unwrap();
        assert_eq!(ops[0].input_schema["properties"], json!({}));
        assert!(ops[0].params.is_empty());
    }

    #[test]
    fn an_operation_that_cannot_be_mapped_is_left_out_alone() {
        let d = doc(json!({"openapi": "3.0.3", "paths": {
            "/bad": {"get": {"parameters": [{"$ref": "#/components/parameters/Missing"}]}},
            "/upload": {"post": {"requestBody": {"content": {"multipart/form-data": {}}}}},
            "/good": {"get": {}}}}));
        let names: Vec<String> = all(&d).into_iter().map(|o| o.name).collect();
        assert_eq!(names, ["get_good"]);
    }
}
