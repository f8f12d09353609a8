//! An upstream's result as the client should see it: the upstream's own
//! identity and (for a legacy client) `resultType` taken out, and resource
//! URIs shown as the catalog shows them.

use mcp_schema::META_SERVER_INFO;
use mcp_schema::jsonrpc;
use serde_json::Value;
use serde_json::value::RawValue;

/// An upstream's result as the client should see it: without the
/// upstream's own identity in `_meta` (the host is the server this client
/// talks to; in 2026-07-28 the engine adds the host's), and for a legacy
/// client without `resultType`, which its revision does not have. Only
/// the top-level members are read, and only when the text mentions one of
/// these keys.
pub(super) fn adapt_result(raw: Box<RawValue>, legacy_client: bool) -> Box<RawValue> {
    let text = raw.get();
    let has_type = legacy_client && text.contains("\"resultType\"");
    if !has_type && !text.contains(META_SERVER_INFO) {
        return raw;
    }
    let Ok(members) = members_of(text) else {
        return raw;
    };
    let mut kept = Vec::with_capacity(members.len());
    for (key, value) in members {
        let part = match key.as_ref() {
            "resultType" if legacy_client => continue,
            "_meta" => match members_of(value.get()) {
                Ok(mut meta) => {
                    meta.retain(|(key, _)| key != META_SERVER_INFO);
                    if meta.is_empty() {
                        continue;
                    }
                    Part::Object(meta)
                }
                Err(_) => Part::Raw(value),
            },
            _ => Part::Raw(value),
        };
        kept.push((key, part));
    }
    // The members are valid JSON already: written out as they are, with
    // no second parse of the whole.
    jsonrpc::to_raw(&Object(&kept)).unwrap_or(raw)
}

/// A member's value as it is written out again: unchanged, or an object
/// of some of its own members.
enum Part<'a> {
    Raw(&'a RawValue),
    Object(Vec<Member<'a>>),
}

/// Members written out as a JSON object.
struct Object<'m, 'a, V>(&'m [(std::borrow::Cow<'a, str>, V)]);

impl serde::Serialize for Part<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Part::Raw(raw) => raw.serialize(s),
            Part::Object(members) => Object(members).serialize(s),
        }
    }
}

impl<V: serde::Serialize> serde::Serialize for Object<'_, '_, V> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            map.serialize_entry(key.as_ref(), value)?;
        }
        map.end()
    }
}

/// `result` with every `uri` member, at any depth, that `rewrite` maps
/// replaced by what it maps to; untouched when nothing is mapped.
pub(super) fn rewrite_uris(
    result: Box<RawValue>,
    rewrite: impl Fn(&str) -> Option<String>,
) -> Box<RawValue> {
    fn walk(value: &mut Value, rewrite: &dyn Fn(&str) -> Option<String>) -> bool {
        let mut changed = false;
        match value {
            Value::Object(members) => {
                for (key, member) in members.iter_mut() {
                    if key == "uri"
                        && let Some(new) = member.as_str().and_then(rewrite)
                    {
                        *member = Value::String(new);
                        changed = true;
                    } else {
                        changed |= walk(member, rewrite);
                    }
                }
            }
            Value::Array(items) => {
                for item in items {
                    changed |= walk(item, rewrite);
                }
            }
            _ => {}
        }
        changed
    }
    let Ok(mut value) = serde_json::from_str::<Value>(result.get()) else {
        return result;
    };
    if !walk(&mut value, &rewrite) {
        return result;
    }
    jsonrpc::to_raw(&value).unwrap_or(result)
}

type Member<'a> = (std::borrow::Cow<'a, str>, &'a RawValue);

/// The top-level members of a JSON object, values unparsed, in order.
fn members_of(text: &str) -> Result<Vec<Member<'_>>, serde_json::Error> {
    struct Members<'a>(Vec<Member<'a>>);
    impl<'de> serde::Deserialize<'de> for Members<'de> {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visitor;
            impl<'de> serde::de::Visitor<'de> for Visitor {
                type Value = Members<'de>;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<Members<'de>, A::Error> {
                    let mut members = Vec::new();
                    while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                        members.push((key, map.next_value::<&'de RawValue>()?));
                    }
                    Ok(Members(members))
                }
            }
            d.deserialize_map(Visitor)
        }
    }
    serde_json::from_str::<Members<'_>>(text).map(|m| m.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn results_lose_the_upstreams_identity_and_legacy_ones_their_type() {
        let text = r#"{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}},"content":[{"type":"text","text":"\"resultType\""}],"isError":false}"#;
        assert_eq!(
            adapt_result(raw(text), true).get(),
            r#"{"content":[{"type":"text","text":"\"resultType\""}],"isError":false}"#
        );
        assert_eq!(
            adapt_result(raw(text), false).get(),
            r#"{"resultType":"complete","content":[{"type":"text","text":"\"resultType\""}],"isError":false}"#
        );
        // Other _meta members stay; text without either key is not touched.
        let kept = r#"{"_meta":{"io.modelcontextprotocol/serverInfo":{},"k":1},"a":[1, 2]}"#;
        assert_eq!(
            adapt_result(raw(kept), true).get(),
            r#"{"_meta":{"k":1},"a":[1, 2]}"#
        );
        // Keys with escapes are written out escaped again; a `_meta` that
        // is not an object goes on as it is.
        let escaped = r#"{"resultType":"complete","a\"b\u00e9":1,"_meta":7}"#;
        let adapted = adapt_result(raw(escaped), true);
        assert_eq!(
            serde_json::from_str::<Value>(adapted.get()).unwrap(),
            serde_json::json!({"a\"b\u{e9}": 1, "_meta": 7})
        );
        let plain = r#"{"content": [] }"#;
        assert_eq!(adapt_result(raw(plain), true).get(), plain);
    }
}
