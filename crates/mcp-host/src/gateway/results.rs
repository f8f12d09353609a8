//! An upstream's result as the client should see it: the upstream's own
//! identity and (for a legacy client) `resultType` taken out, and resource
//! URIs shown as the catalog shows them.

use mcp_schema::META_SERVER_INFO;
use mcp_schema::jsonrpc;
use mcp_schema::text_search::TextSearch;
use serde_json::Value;
use serde_json::value::RawValue;

use mcp_schema::json_scan as scan;

/// An upstream's result as the client should see it: without the
/// upstream's own identity in `_meta` (the host is the server this client
/// talks to; in 2026-07-28 the engine adds the host's), and for a legacy
/// client without `resultType`, which its revision does not have. Only
/// the top-level members are read, and only when the text mentions one of
/// these keys.
pub(super) fn adapt_result(raw: Box<RawValue>, legacy_client: bool) -> Box<RawValue> {
    static RESULT_TYPE: TextSearch = TextSearch::new("\"resultType\"");
    // The end of the key alone: a needle this short is found by the
    // vector searcher (the scan below reads the whole key).
    static SERVER_INFO: TextSearch = TextSearch::new("/serverInfo\"");
    let text = raw.get();
    let has_type = legacy_client && RESULT_TYPE.is_in(text);
    let has_info = SERVER_INFO.is_in(text);
    if !has_type && !has_info {
        return raw;
    }
    // The text was parsed when its message was: its members are found by
    // a scan, and written out as they are. The scan stops once it has
    // seen the members to change; the rest is copied as it is.
    let Some(mut scan) = scan::Members::of(text) else {
        return raw;
    };
    let (mut type_left, mut info_left) = (has_type, has_info);
    let mut out = String::with_capacity(text.len());
    out.push('{');
    while type_left || info_left {
        let Some(member) = scan.next() else {
            break;
        };
        if member.key_is("resultType") {
            type_left = false;
            if legacy_client {
                continue;
            }
        } else if member.key_is("_meta") {
            info_left = false;
            if push_meta_without_server_info(&mut out, member) {
                continue;
            }
        }
        push_key(&mut out, member.key);
        out.push_str(member.value);
    }
    let Some(rest) = scan.rest() else {
        return raw;
    };
    match rest.strip_prefix(',') {
        // Members follow: after a comma only if one was kept before them.
        Some(after) if out.len() == 1 => out.push_str(after.trim_start()),
        _ => out.push_str(rest),
    }
    // SAFETY: `out` is the object `raw` was, without surrounding space,
    // less some of its members: `{`, then members of `raw` as they were
    // written (each key and value valid JSON, a `_meta` object rebuilt the
    // same way from its own members), a comma between two, and then what
    // followed the last member scanned, from its comma (dropped when no
    // member came before) or from the closing brace.
    unsafe { RawValue::from_string_unchecked(out) }
}

/// Writes member `meta` (a `_meta`) without the upstream's identity, and
/// not at all when nothing else is in it; false, having written nothing,
/// when it is not an object.
fn push_meta_without_server_info(out: &mut String, meta: scan::Member<'_>) -> bool {
    let Some(mut scan) = scan::Members::of(meta.value) else {
        return false;
    };
    let before = out.len();
    let mut kept = 0;
    for member in scan.by_ref().filter(|m| !m.key_is(META_SERVER_INFO)) {
        if kept == 0 {
            push_key(out, meta.key);
            out.push('{');
        } else {
            out.push(',');
        }
        kept += 1;
        out.push_str(member.key);
        out.push(':');
        out.push_str(member.value);
    }
    if scan.rest().is_none() {
        // Never for the text of a parsed message.
        out.truncate(before);
        return false;
    }
    if kept > 0 {
        out.push('}');
    }
    true
}

/// Writes `key:` after a comma when a member came before.
fn push_key(out: &mut String, key: &str) {
    if out.len() > 1 {
        out.push(',');
    }
    out.push_str(key);
    out.push(':');
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
        let around =
            r#"{"a":0,"_meta":{"k":1,"io.modelcontextprotocol/serverInfo":{"name":"up"},"l":[2]}}"#;
        assert_eq!(
            adapt_result(raw(around), false).get(),
            r#"{"a":0,"_meta":{"k":1,"l":[2]}}"#
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
        // Another key ending the same way is kept.
        let other = r#"{"_meta":{"com.example/serverInfo":1},"a/serverInfo":2}"#;
        assert_eq!(adapt_result(raw(other), true).get(), other);
    }

    #[test]
    fn what_follows_the_changed_members_is_copied_as_it_is() {
        let info = r#""_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}}"#;
        let cases = [
            // The changed members first, with space around the commas.
            (
                format!(r#"{{"resultType":"complete" ,{info} , "content":[{{"text":"}}"}}]}}"#),
                r#"{"content":[{"text":"}"}]}"#,
                r#"{"resultType":"complete", "content":[{"text":"}"}]}"#,
            ),
            // A member before them, and `resultType` after `_meta`.
            (
                format!(r#"{{"a":1,{info},"resultType":"complete","b":[2]}}"#),
                r#"{"a":1,"b":[2]}"#,
                r#"{"a":1,"resultType":"complete","b":[2]}"#,
            ),
            // Nothing after them.
            (
                format!(r#"{{"resultType":"complete",{info}}}"#),
                "{}",
                r#"{"resultType":"complete"}"#,
            ),
        ];
        // No `serverInfo`: the scan stops at `resultType`, so what follows
        // keeps its spaces (a scan that went on would write `_meta` anew).
        let typed = r#"{"resultType":"complete", "_meta": {"k": 1}, "content":[]}"#;
        assert_eq!(
            adapt_result(raw(typed), true).get(),
            r#"{"_meta": {"k": 1}, "content":[]}"#
        );
        for (text, legacy, modern) in cases {
            assert_eq!(adapt_result(raw(&text), true).get(), legacy, "{text}");
            assert_eq!(adapt_result(raw(&text), false).get(), modern, "{text}");
        }
    }
}
