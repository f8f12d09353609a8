//! The OpenAPI document: parsing JSON or YAML, the version check, following
//! `$ref`s between its objects, and the base URL from `servers`.

use serde_json::{Map, Value};
use url::Url;

use super::Error;

/// The most references followed from one object before giving up (a
/// cycle of parameter references, say).
const MAX_REFERENCE_HOPS: usize = 32;

/// An OpenAPI document read into JSON.
#[derive(Debug)]
pub struct Document {
    /// The whole document.
    pub root: Value,
    /// Whether it is OpenAPI 3.0 (else 3.1).
    pub openapi30: bool,
}

impl Document {
    /// Parses `text` (JSON, or YAML) named `origin` in messages, and checks
    /// that it is OpenAPI 3.0 or 3.1.
    pub fn parse(text: &str, origin: &str) -> Result<Document, Error> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let root = if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| Error::Parse {
                origin: origin.to_owned(),
                reason: e.to_string(),
            })?
        } else {
            let yaml: serde_yaml_ng::Value =
                serde_yaml_ng::from_str(text).map_err(|e| Error::Parse {
                    origin: origin.to_owned(),
                    reason: e.to_string(),
                })?;
            yaml_to_json(yaml)
        };
        let version = match (root.get("openapi"), root.get("swagger")) {
            (Some(Value::String(v)), _) => v.clone(),
            (_, Some(v)) => {
                return Err(Error::Version {
                    origin: origin.to_owned(),
                    found: format!("Swagger {}", v.as_str().unwrap_or("2.0")),
                });
            }
            _ => {
                return Err(Error::Version {
                    origin: origin.to_owned(),
                    found: "no `openapi` field".into(),
                });
            }
        };
        let openapi30 = version.starts_with("3.0");
        if !openapi30 && !version.starts_with("3.1") {
            return Err(Error::Version {
                origin: origin.to_owned(),
                found: format!("OpenAPI {version}"),
            });
        }
        if !root.get("paths").is_none_or(Value::is_object) {
            return Err(Error::Parse {
                origin: origin.to_owned(),
                reason: "`paths` is not an object".into(),
            });
        }
        Ok(Document { root, openapi30 })
    }

    /// `node` itself, or the object its `$ref` chain ends at. A reference
    /// outside the document, or one that leads nowhere, is an error.
    pub fn resolve<'a>(&'a self, mut node: &'a Value) -> Result<&'a Value, String> {
        for _ in 0..MAX_REFERENCE_HOPS {
            let Some(reference) = node.get("$ref").and_then(Value::as_str) else {
                return Ok(node);
            };
            node = self
                .pointer(reference)
                .ok_or_else(|| format!("cannot follow the reference {reference:?}"))?;
        }
        Err("a cycle of references".into())
    }

    /// The object a local reference (`#/components/...`) points at.
    pub fn pointer(&self, reference: &str) -> Option<&Value> {
        let pointer = reference.strip_prefix('#')?;
        let decoded = percent_encoding::percent_decode_str(pointer).decode_utf8_lossy();
        self.root.pointer(&decoded)
    }

    /// The API's title and version, from `info`.
    pub fn title(&self) -> String {
        let info = self.root.get("info");
        let text = |key| {
            info.and_then(|i| i.get(key))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let (title, version) = (text("title"), text("version"));
        match (title.is_empty(), version.is_empty()) {
            (true, _) => "an HTTP API".into(),
            (false, true) => title,
            (false, false) => format!("{title} {version}"),
        }
    }

    /// The base URL from `servers[0]` (its variables at their defaults),
    /// resolved against `location`, the URL the document came from, when
    /// relative. `None` when the document names no server.
    pub fn server_url(&self, location: Option<&Url>) -> Option<Result<Url, Error>> {
        let server = self.root.get("servers")?.as_array()?.first()?;
        let mut url = server.get("url")?.as_str()?.to_owned();
        if let Some(Value::Object(variables)) = server.get("variables") {
            for (name, variable) in variables {
                if let Some(default) = variable.get("default").and_then(Value::as_str) {
                    url = url.replace(&format!("{{{name}}}"), default);
                }
            }
        }
        Some(match Url::parse(&url) {
            Ok(absolute) => Ok(absolute),
            Err(url::ParseError::RelativeUrlWithoutBase) => match location {
                Some(location) => location.join(&url).map_err(|e| Error::BaseUrl {
                    url: url.clone(),
                    reason: e.to_string(),
                }),
                None => Err(Error::BaseUrl {
                    url,
                    reason: "the document's server URL is relative and the document is a \
                             file: give the API's address with --base-url"
                        .into(),
                }),
            },
            Err(e) => Err(Error::BaseUrl {
                url,
                reason: e.to_string(),
            }),
        })
    }
}

/// YAML to JSON, mapping keys (such as the status codes `200:`) as text.
fn yaml_to_json(yaml: serde_yaml_ng::Value) -> Value {
    use serde_yaml_ng::Value as Y;
    match yaml {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                n.as_f64()
                    .and_then(serde_json::Number::from_f64)
                    .map_or(Value::Null, Value::Number)
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(items.into_iter().map(yaml_to_json).collect()),
        Y::Mapping(mapping) => {
            let mut object = Map::new();
            for (key, value) in mapping {
                let key = match key {
                    Y::String(s) => s,
                    Y::Bool(b) => b.to_string(),
                    Y::Number(n) => n.to_string(),
                    Y::Null => "null".into(),
                    other => serde_json::to_string(&yaml_to_json(other)).unwrap_or_default(),
                };
                object.insert(key, yaml_to_json(value));
            }
            Value::Object(object)
        }
        Y::Tagged(tagged) => yaml_to_json(tagged.value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_documents_read_like_json_with_text_status_codes() {
        let doc = Document::parse(
            "openapi: 3.1.0\ninfo: {title: T, version: '1'}\npaths:\n  /x:\n    get:\n      \
             responses:\n        200: {description: ok}\n",
            "t.yaml",
        )
        .unwrap();
        assert!(!doc.openapi30);
        assert_eq!(
            doc.root["paths"]["/x"]["get"]["responses"]["200"]["description"],
            "ok"
        );
        assert_eq!(doc.title(), "T 1");
    }

    #[test]
    fn swagger_2_and_other_versions_are_refused_clearly() {
        let e = Document::parse(r#"{"swagger": "2.0", "paths": {}}"#, "s.json").unwrap_err();
        assert!(e.to_string().contains("Swagger 2.0"), "{e}");
        let e = Document::parse(r#"{"openapi": "4.0.0"}"#, "s.json").unwrap_err();
        assert!(e.to_string().contains("OpenAPI 4.0.0"), "{e}");
        let e = Document::parse("{not json", "s.json").unwrap_err();
        assert!(e.to_string().contains("s.json"), "{e}");
    }

    #[test]
    fn references_are_followed_and_cycles_stop() {
        let doc = Document::parse(
            &json!({"openapi": "3.0.3", "paths": {}, "components": {"parameters": {
                "A": {"$ref": "#/components/parameters/B"},
                "B": {"name": "b", "in": "query"},
                "C": {"$ref": "#/components/parameters/C"}}}})
            .to_string(),
            "d",
        )
        .unwrap();
        let a = json!({"$ref": "#/components/parameters/A"});
        assert_eq!(doc.resolve(&a).unwrap()["name"], "b");
        let c = json!({"$ref": "#/components/parameters/C"});
        assert!(doc.resolve(&c).is_err());
        let missing = json!({"$ref": "#/components/parameters/Z"});
        assert!(doc.resolve(&missing).is_err());
    }

    #[test]
    fn server_urls_take_variable_defaults_and_resolve_against_the_document() {
        let doc = Document::parse(
            &json!({"openapi": "3.0.3", "paths": {}, "servers": [
                {"url": "https://{region}.example.com/v{major}",
                 "variables": {"region": {"default": "eu"}, "major": {"default": "2"}}}]})
            .to_string(),
            "d",
        )
        .unwrap();
        assert_eq!(
            doc.server_url(None).unwrap().unwrap().as_str(),
            "https://eu.example.com/v2"
        );
        let relative = Document::parse(
            &json!({"openapi": "3.0.3", "paths": {}, "servers": [{"url": "/api/v3"}]}).to_string(),
            "d",
        )
        .unwrap();
        let from = Url::parse("https://petstore3.swagger.io/api/v3/openapi.json").unwrap();
        assert_eq!(
            relative.server_url(Some(&from)).unwrap().unwrap().as_str(),
            "https://petstore3.swagger.io/api/v3"
        );
        let e = relative.server_url(None).unwrap().unwrap_err();
        assert!(e.to_string().contains("--base-url"), "{e}");
        let none = Document::parse(r#"{"openapi": "3.1.0"}"#, "d").unwrap();
        assert!(none.server_url(None).is_none());
    }
}
