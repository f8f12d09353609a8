//! A forwarded request's params: the top-level members in the client's
//! order, each value kept as the client wrote it, so that what the host
//! passes on unchanged (a tool's arguments, above all) is neither parsed
//! into values nor written out again.

use std::borrow::Cow;

use mcp_schema::ErrorObject;

use mcp_schema::json_scan as scan;
use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The members of a request's params, values unparsed.
#[derive(Debug, Default, Clone)]
pub(crate) struct Params(Vec<(String, Box<RawValue>)>);

impl Params {
    /// Reads the params of a message the engine has parsed, so valid JSON:
    /// a JSON object (absent params are an empty one), without its
    /// `_meta`, a repeated member keeping its last value as a parsed object
    /// would. By a scan of its members rather than a second parse.
    pub(crate) fn read_parsed(text: Option<&str>) -> Result<Params, ErrorObject> {
        let Some(text) = text else {
            return Ok(Params::default());
        };
        let not_an_object = || ErrorObject::invalid_params("params must be an object");
        let mut scan = scan::Members::of(text).ok_or_else(not_an_object)?;
        let mut params = Params(Vec::with_capacity(4));
        for member in scan.by_ref() {
            let key = member.key_text().ok_or_else(not_an_object)?;
            if key == "_meta" {
                continue;
            }
            // SAFETY: a member's value, as written, of a valid JSON
            // object is valid JSON itself.
            let value = unsafe { RawValue::from_string_unchecked(member.value.to_owned()) };
            match params.0.iter_mut().find(|(k, _)| *k == key) {
                Some((_, old)) => *old = value,
                None => params.0.push((key.into_owned(), value)),
            }
        }
        // Never for the text of a parsed message.
        scan.rest().ok_or_else(not_an_object)?;
        Ok(params)
    }

    /// Params from an object already parsed.
    pub(crate) fn from_map(map: Map<String, Value>) -> Result<Params, ErrorObject> {
        let mut params = Params::default();
        for (key, value) in map {
            params.set(&key, &value)?;
        }
        Ok(params)
    }

    /// The member `key`, as written.
    pub(crate) fn raw(&self, key: &str) -> Option<&RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| &**v)
    }

    /// The member `key` when it is a string.
    pub(crate) fn str(&self, key: &str) -> Option<Cow<'_, str>> {
        let text = self.raw(key)?.get();
        match serde_json::from_str::<&str>(text) {
            Ok(plain) => Some(Cow::Borrowed(plain)),
            // Escaped, or not a string.
            Err(_) => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
        }
    }

    /// The member `key`, parsed.
    pub(crate) fn value(&self, key: &str) -> Option<Value> {
        self.raw(key)
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }

    /// Sets the member `key` to `value`, in its place if it is there.
    pub(crate) fn set(&mut self, key: &str, value: &impl Serialize) -> Result<(), ErrorObject> {
        let raw = serde_json::value::to_raw_value(value).map_err(ErrorObject::internal)?;
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, old)) => *old = raw,
            None => self.0.push((key.to_owned(), raw)),
        }
        Ok(())
    }

    /// Sets the member `key` to the string `value`, leaving it as written
    /// when it is that string already (a name the host does not rename).
    pub(crate) fn set_str(&mut self, key: &str, value: &str) -> Result<(), ErrorObject> {
        if self.str(key).as_deref() == Some(value) {
            return Ok(());
        }
        self.set(key, &value)
    }

    /// Takes the member `key` out.
    pub(crate) fn remove(&mut self, key: &str) -> Option<Box<RawValue>> {
        let at = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(at).1)
    }

    /// The params parsed, for the requests the host reads rather than
    /// passes on.
    pub(crate) fn into_map(self) -> Result<Map<String, Value>, ErrorObject> {
        self.0
            .into_iter()
            .map(|(key, raw)| {
                let value = serde_json::from_str(raw.get())
                    .map_err(|e| ErrorObject::invalid_params(format!("{key}: {e}")))?;
                Ok((key, value))
            })
            .collect()
    }

    /// Whether there are no members.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The members, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &RawValue)> {
        self.0.iter().map(|(k, v)| (k.as_str(), &**v))
    }
}

impl Serialize for Params {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_go_on_as_written() {
        let text =
            r#"{"name":"t\u0041","_meta":{"k":1},"arguments":{"b": 1.50, "a":[ ]},"name":"last"}"#;
        let mut params = Params::read_parsed(Some(text)).unwrap();
        assert_eq!(params.str("name").as_deref(), Some("last"));
        assert!(params.raw("_meta").is_none());
        assert_eq!(
            params.raw("arguments").unwrap().get(),
            r#"{"b": 1.50, "a":[ ]}"#
        );
        params.set("name", &"up").unwrap();
        params.set("extra", &json!({"x": true})).unwrap();
        assert_eq!(
            serde_json::to_string(&params).unwrap(),
            r#"{"name":"up","arguments":{"b": 1.50, "a":[ ]},"extra":{"x":true}}"#
        );
        assert!(params.remove("extra").is_some());
        assert_eq!(params.value("arguments"), Some(json!({"a": [], "b": 1.5})));
        assert_eq!(Params::read_parsed(None).unwrap().iter().count(), 0);
        let error = Params::read_parsed(Some("[1]")).unwrap_err();
        assert!(
            error.message.contains("params must be an object"),
            "{error:?}"
        );
        let from_map = Params::from_map(json!({"uri": "a://b"}).as_object().unwrap().clone());
        assert_eq!(from_map.unwrap().str("uri").as_deref(), Some("a://b"));
        let escaped = Params::read_parsed(Some(r#"{"uri":"a:\/\/\u00e9","n":1}"#)).unwrap();
        assert_eq!(escaped.str("uri").as_deref(), Some("a://\u{e9}"));
        assert_eq!(escaped.str("n"), None);
        assert_eq!(
            escaped.into_map().unwrap(),
            *json!({"uri": "a://\u{e9}", "n": 1}).as_object().unwrap()
        );
    }

    #[test]
    fn params_of_a_parsed_message_read_as_a_parse_reads_them() {
        let samples = [
            r#"{"name":"t\u0041","_meta":{"k":1},"arguments":{"b": 1.50, "a":[ ]},"name":"last"}"#,
            r#" { "uri" : "a:\/\/\u00e9" , "n":1 , "\u005fmeta":2} "#,
            r#"{"k\"ey":[{"x":"}"}],"t":true,"f":null}"#,
            "{}",
        ];
        for text in samples {
            let scanned = Params::read_parsed(Some(text)).unwrap();
            let mut parsed: Map<String, Value> = serde_json::from_str(text).unwrap();
            parsed.remove("_meta");
            assert_eq!(scanned.into_map().unwrap(), parsed, "{text}");
        }
        assert!(
            Params::read_parsed(Some(r#"{"_meta":{}}"#))
                .unwrap()
                .is_empty()
        );
        assert!(Params::read_parsed(None).unwrap().is_empty());
        for not_an_object in ["[1]", "\"x\"", "null"] {
            let error = Params::read_parsed(Some(not_an_object)).unwrap_err();
            assert!(
                error.message.contains("params must be an object"),
                "{error:?}"
            );
        }
    }

    #[test]
    fn a_string_set_reads_back_as_that_string() {
        let text = r#"{"a":"x","b":"t\u0041","c":"a\"b","d":"a\\\"b","e":1}"#;
        // Each value set over each member, the same text or another.
        let values = ["x", "tA", "t\\u0041", "a\"b", "a\\\"b", "a\\\\\"b", ""];
        for key in ["a", "b", "c", "d", "e", "new"] {
            for value in values {
                let mut params = Params::read_parsed(Some(text)).unwrap();
                params.set_str(key, value).unwrap();
                assert_eq!(params.str(key).as_deref(), Some(value), "{key} = {value:?}");
                let written: Value = serde_json::to_value(&params).unwrap();
                assert_eq!(written[key], json!(value), "{key} = {value:?}");
            }
        }
    }
}
