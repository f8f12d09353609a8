//! A tool call's arguments to an HTTP request: path parameters expanded
//! (percent-encoded, so a value never adds a path segment), query, header
//! and cookie parameters written in their OpenAPI style, and the body.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Method;
use reqwest::header::{COOKIE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};
use url::Url;

use super::operations::{BodyKind, Location, Operation, Param, Style};

/// Characters left as they are in a path segment: RFC 3986's unreserved.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A request ready to send (without the server's own headers).
#[derive(Debug, Clone)]
pub struct Outbound {
    /// The method.
    pub method: Method,
    /// The URL.
    pub url: Url,
    /// Headers from parameters.
    pub headers: HeaderMap,
    /// The body and its `Content-Type`.
    pub body: Option<(Vec<u8>, String)>,
}

/// A value as text: strings as they are, other scalars as JSON.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `value` as the `simple` style writes it: arrays `a,b`, objects
/// `k,v,k2,v2` (`k=v,k2=v2` exploded).
fn simple(value: &Value, explode: bool) -> String {
    match value {
        Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(","),
        Value::Object(object) => object
            .iter()
            .map(|(k, v)| {
                if explode {
                    format!("{k}={}", scalar(v))
                } else {
                    format!("{k},{}", scalar(v))
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        other => scalar(other),
    }
}

/// The query pairs of one parameter.
fn query_pairs(param: &Param, value: &Value) -> Vec<(String, String)> {
    let name = &param.name;
    if param.json {
        return vec![(name.clone(), value.to_string())];
    }
    match (value, param.style) {
        (Value::Array(items), Style::Form | Style::Simple) if param.explode => items
            .iter()
            .map(|item| (name.clone(), scalar(item)))
            .collect(),
        (Value::Array(items), style) => {
            let separator = match style {
                Style::SpaceDelimited => " ",
                Style::PipeDelimited => "|",
                _ => ",",
            };
            let joined = items.iter().map(scalar).collect::<Vec<_>>().join(separator);
            vec![(name.clone(), joined)]
        }
        (Value::Object(object), Style::DeepObject) => object
            .iter()
            .map(|(k, v)| (format!("{name}[{k}]"), scalar(v)))
            .collect(),
        (Value::Object(object), _) if param.explode => {
            object.iter().map(|(k, v)| (k.clone(), scalar(v))).collect()
        }
        (other, _) => vec![(name.clone(), simple(other, false))],
    }
}

/// The request for `operation` at `base` with `args`, or why the
/// arguments cannot make one.
pub fn build(
    operation: &Operation,
    base: &Url,
    args: &Map<String, Value>,
) -> Result<Outbound, String> {
    let mut path = operation.path.clone();
    let mut query = Vec::new();
    let mut headers = HeaderMap::new();
    let mut cookies = Vec::new();
    for param in &operation.params {
        let Some(value) = args.get(&param.argument).filter(|v| !v.is_null()) else {
            if param.location == Location::Path {
                return Err(format!(
                    "the path parameter `{}` is required",
                    param.argument
                ));
            }
            continue;
        };
        match param.location {
            Location::Path => {
                let text = if param.json {
                    value.to_string()
                } else {
                    simple(value, param.explode)
                };
                if text.is_empty() || text == "." || text == ".." {
                    return Err(format!(
                        "the path parameter `{}` may not be {text:?}",
                        param.argument
                    ));
                }
                let encoded = utf8_percent_encode(&text, SEGMENT).to_string();
                path = path.replace(&format!("{{{}}}", param.name), &encoded);
            }
            Location::Query => query.extend(query_pairs(param, value)),
            Location::Header => {
                let name = HeaderName::from_bytes(param.name.as_bytes())
                    .map_err(|_| format!("`{}` is not a valid header name", param.name))?;
                let text = if param.json {
                    value.to_string()
                } else {
                    simple(value, param.explode)
                };
                let value = HeaderValue::from_str(&text).map_err(|_| {
                    format!("`{}` holds characters a header may not", param.argument)
                })?;
                headers.append(name, value);
            }
            Location::Cookie => {
                let text = if param.json {
                    value.to_string()
                } else {
                    simple(value, false)
                };
                let encoded = utf8_percent_encode(&text, SEGMENT);
                cookies.push(format!("{}={encoded}", param.name));
            }
        }
    }
    if !cookies.is_empty() {
        let value = HeaderValue::from_str(&cookies.join("; "))
            .map_err(|_| "a cookie holds characters a header may not".to_string())?;
        headers.insert(COOKIE, value);
    }
    let joined = format!("{}{}", base.as_str().trim_end_matches('/'), path);
    let mut url = Url::parse(&joined).map_err(|e| format!("the URL {joined:?}: {e}"))?;
    if !query.is_empty() {
        let mut pairs = url.query_pairs_mut();
        for (k, v) in &query {
            pairs.append_pair(k, v);
        }
    }
    let body = match &operation.body {
        None => None,
        Some(body) => match args.get(&body.argument) {
            None => None,
            Some(value) => Some((encode_body(body.kind, value)?, body.media_type.clone())),
        },
    };
    Ok(Outbound {
        method: operation.method.clone(),
        url,
        headers,
        body,
    })
}

fn encode_body(kind: BodyKind, value: &Value) -> Result<Vec<u8>, String> {
    Ok(match kind {
        BodyKind::Json => serde_json::to_vec(value).map_err(|e| e.to_string())?,
        BodyKind::Text => scalar(value).into_bytes(),
        BodyKind::Binary => {
            let text = value.as_str().ok_or("the body must be a base64 string")?;
            STANDARD
                .decode(text.trim())
                .map_err(|e| format!("the body is not base64: {e}"))?
        }
        BodyKind::Form => {
            let Value::Object(fields) = value else {
                return Err("a form body must be an object".into());
            };
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            for (k, v) in fields {
                match v {
                    Value::Null => {}
                    Value::Array(items) => {
                        for item in items {
                            form.append_pair(k, &scalar(item));
                        }
                    }
                    other => {
                        form.append_pair(k, &scalar(other));
                    }
                }
            }
            form.finish().into_bytes()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openapi::Filter;
    use crate::openapi::document::Document;
    use crate::openapi::operations::operations;
    use serde_json::json;

    fn op(paths: Value) -> Operation {
        let doc = Document::parse(
            &json!({"openapi": "3.0.3", "paths": paths}).to_string(),
            "t",
        )
        .unwrap();
        operations(&doc, &[], &Filter::default()).unwrap().remove(0)
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn path_values_are_encoded_and_cannot_climb() {
        let o = op(json!({"/files/{name}": {"get": {"parameters": [
            {"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}]}}}));
        let base = Url::parse("https://api.example.com/v1/").unwrap();
        let r = build(&o, &base, &args(json!({"name": "a/b?c#d e"}))).unwrap();
        assert_eq!(
            r.url.as_str(),
            "https://api.example.com/v1/files/a%2Fb%3Fc%23d%20e"
        );
        assert!(build(&o, &base, &args(json!({"name": ".."}))).is_err());
        assert!(build(&o, &base, &args(json!({}))).is_err());
    }

    #[test]
    fn query_styles_headers_cookies_and_forms() {
        let o = op(json!({"/s": {"post": {
            "parameters": [
                {"name": "tags", "in": "query", "schema": {"type": "array"}},
                {"name": "ids", "in": "query", "explode": false, "schema": {"type": "array"}},
                {"name": "f", "in": "query", "style": "deepObject", "schema": {"type": "object"}},
                {"name": "X-Id", "in": "header", "schema": {"type": "integer"}},
                {"name": "session", "in": "cookie", "schema": {"type": "string"}}],
            "requestBody": {"content": {"application/x-www-form-urlencoded": {"schema": {"type": "object"}}}}}}}));
        let base = Url::parse("http://h/").unwrap();
        let r = build(
            &o,
            &base,
            &args(
                json!({"tags": ["a", "b"], "ids": [1, 2], "f": {"x": 1}, "X-Id": 7,
                         "session": "s 1", "body": {"name": "Rex", "n": [1, 2]}}),
            ),
        )
        .unwrap();
        assert_eq!(r.url.query(), Some("tags=a&tags=b&ids=1%2C2&f%5Bx%5D=1"));
        assert_eq!(r.headers["x-id"], "7");
        assert_eq!(r.headers["cookie"], "session=s%201");
        let (bytes, media) = r.body.unwrap();
        let form = String::from_utf8(bytes).unwrap();
        let mut pairs: Vec<&str> = form.split('&').collect();
        pairs.sort();
        assert_eq!(pairs, ["n=1", "n=2", "name=Rex"]);
        assert_eq!(media, "application/x-www-form-urlencoded");
    }

    #[test]
    fn json_and_binary_bodies() {
        let o = op(json!({"/p": {"post": {"requestBody": {"content": {
            "application/json": {"schema": {"type": "object"}}}}}}}));
        let base = Url::parse("http://h/api").unwrap();
        let r = build(&o, &base, &args(json!({"body": {"a": [1, null]}}))).unwrap();
        assert_eq!(r.url.as_str(), "http://h/api/p");
        assert_eq!(r.body.unwrap().0, br#"{"a":[1,null]}"#);
        let o = op(json!({"/u": {"post": {"requestBody": {"content": {
            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}}}}));
        let r = build(&o, &base, &args(json!({"body": "AP8="}))).unwrap();
        assert_eq!(
            r.body.unwrap(),
            (vec![0, 255], "application/octet-stream".into())
        );
        assert!(build(&o, &base, &args(json!({"body": "!!"}))).is_err());
    }
}
