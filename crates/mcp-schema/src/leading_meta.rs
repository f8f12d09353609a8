//! Parsing a request whose params open with a `_meta` already known.
//!
//! In the stateless era a client repeats the same `_meta` (its protocol
//! version, info and capabilities) in every request, most often as the
//! first member of the params. A server that has read that text once can
//! recognise it by comparing bytes; this module then parses the rest of the
//! message without scanning the `_meta` again, and still hands out the
//! params whole and untouched.

use std::ops::Deref;

use serde_json::value::RawValue;

use crate::jsonrpc::{Envelope, Message};
use crate::text_search::TextSearch;

/// How compact writers open params whose first member is `_meta`.
pub const META_FIRST: &str = "{\"_meta\":";

/// The same, with the `params` key of the message before it.
const PARAMS_META: &str = "\"params\":{\"_meta\":";

static PARAMS_META_SEARCH: TextSearch = TextSearch::new(PARAMS_META);

impl Message {
    /// Parses `text` as [`Message::parse`] would, without parsing the
    /// `_meta` member that opens its params when `known` recognises it.
    /// `known` is handed the text from that member's value on (found after
    /// the first `"params":{"_meta":`) and answers with the `_meta` it
    /// remembers opening it, if any; those bytes are then compared, not
    /// parsed. The params come out whole, `_meta` included.
    ///
    /// `None` when nothing is recognised, or the text is not a valid
    /// message with that `_meta` opening its own params (rather than an
    /// object nested elsewhere): the caller then parses it in full, which
    /// finds any error as before.
    pub fn parse_with_known_meta<M: Deref<Target = RawValue>>(
        text: &str,
        known: impl FnOnce(&str) -> Option<M>,
    ) -> Option<Message> {
        let key_at = PARAMS_META_SEARCH.find(text)?;
        let meta_at = key_at + PARAMS_META.len();
        let open = meta_at - META_FIRST.len();
        let meta = known(&text[meta_at..])?;
        let after_meta = meta_at + meta.get().len();
        if !text[meta_at..].starts_with(meta.get()) {
            return None;
        }
        // The member cut out: `"_meta":…` with its comma. A comma must be
        // followed by another member, or the params were not valid JSON.
        let cut_end = match text.as_bytes().get(after_meta)? {
            b',' if text[after_meta + 1..].trim_start().starts_with('"') => after_meta + 1,
            b'}' => after_meta,
            _ => return None,
        };
        let cut = open + 1..cut_end;
        let mut rest = String::with_capacity(text.len() - cut.len());
        rest.push_str(&text[..cut.start]);
        rest.push_str(&text[cut.end..]);
        let envelope: Envelope = serde_json::from_str(&rest).ok()?;
        let params = envelope.params?;
        // Only if the message's own params open where the member was cut is
        // the cut one of theirs (and not of an object nested elsewhere).
        if !std::ptr::eq(params.get().as_ptr(), rest[open..].as_ptr()) {
            return None;
        }
        let whole = text[open..open + params.get().len() + cut.len()].to_owned();
        // SAFETY: `whole` is the params the parse above read, valid JSON
        // without surrounding whitespace, with one member put back right
        // after their `{`: the `"_meta":` key the search found there, the
        // text of `meta` (a valid JSON value, as every `RawValue` is), and
        // a comma only where another member follows. An object with one
        // more valid member is valid.
        let params = unsafe { RawValue::from_string_unchecked(whole) };
        Message::from_envelope(envelope, Some(params)).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;

    fn parse_known(text: &str) -> Option<Message> {
        let meta: Box<RawValue> = serde_json::from_str(META).unwrap();
        Message::parse_with_known_meta(text, |_| Some(meta))
    }

    fn params_of(message: &Message) -> &str {
        match message {
            Message::Request(r) => r.params.as_deref().unwrap().get(),
            Message::Notification(n) => n.params.as_deref().unwrap().get(),
            _ => panic!("not a request: {message:?}"),
        }
    }

    #[test]
    fn known_meta_leaves_the_message_as_a_full_parse_reads_it() {
        for text in [
            format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"_meta":{META},"name":"echo","arguments":{{"text":"hi"}}}}}}"#
            ),
            format!(r#"{{"jsonrpc":"2.0","id":"a","method":"ping","params":{{"_meta":{META}}}}}"#),
            format!(
                r#"{{"method":"tools/list","params":{{"_meta":{META}, "cursor":"x"}},"id":1,"jsonrpc":"2.0"}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/x","params":{{"_meta":{META},"a":[1,{{"b":null}}]}}}}"#
            ),
        ] {
            let fast = parse_known(&text).unwrap_or_else(|| panic!("not taken: {text}"));
            let full = Message::parse(&text).unwrap();
            assert_eq!(fast.to_json(), full.to_json(), "{text}");
            assert_eq!(params_of(&fast), params_of(&full));
            assert!(params_of(&fast).starts_with("{\"_meta\":{"));
        }
    }

    #[test]
    fn anything_else_is_left_to_the_full_parse() {
        for text in [
            // Another `_meta` value, or one that only starts the same.
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{}}}"#.to_owned(),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":{META}1}}}}"#),
            // Invalid params around a known `_meta`: a trailing comma, a
            // missing comma, a broken member after it.
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":{META},}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":{META} "a":1}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":{META},"a":}}}}"#),
            // The known text in an object nested in other params, or
            // under a member that only ends in `params`.
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"x":{{"params":{{"_meta":{META}}}}}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{}},"x":{{"params":{{"_meta":{META}}}}}}}"#
            ),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","\"params":{{"_meta":{META}}}}}"#),
            // Not a message.
            format!(r#"{{"jsonrpc":"1.0","id":1,"method":"m","params":{{"_meta":{META}}}}}"#),
            format!(r#"{{"id":1,"result":{{"params":{{"_meta":{META}}}}},"jsonrpc":"2.0"}}"#),
        ] {
            assert!(parse_known(&text).is_none(), "taken: {text}");
        }
    }

    #[test]
    fn every_one_byte_edit_is_read_as_a_full_parse_reads_it_or_left_to_it() {
        // Each text one byte away from a recognised request: whatever the
        // recognised parse accepts, the full parse accepts the same way.
        let base = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":{META},"a":{{"b":[1,"c"]}}}}}}"#
        );
        let mut taken = 0;
        for at in 0..=base.len() {
            let mut edits = vec![format!(
                "{}{}",
                &base[..at],
                base.get(at + 1..).unwrap_or("")
            )];
            for byte in [",", "}", "{", "\"", " ", "\\", "1", "]", ":"] {
                edits.push(format!("{}{byte}{}", &base[..at], &base[at..]));
            }
            for text in edits {
                if let Some(fast) = parse_known(&text) {
                    taken += 1;
                    let full = Message::parse(&text)
                        .unwrap_or_else(|e| panic!("taken, but invalid: {text}: {e:?}"));
                    assert_eq!(fast.to_json(), full.to_json(), "{text}");
                }
            }
        }
        assert!(taken > 0, "the unedited places are recognised");
    }

    #[test]
    fn the_params_of_a_nested_look_alike_stay_the_messages_own() {
        // The first `"params":{"_meta":` is nested in the arguments: the
        // message's own params must not take it for theirs.
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"a":1,"x":{{"params":{{"_meta":{META},"a":1}}}}}}}}"#
        );
        assert!(parse_known(&text).is_none());
        let message = Message::parse(&text).unwrap();
        assert!(params_of(&message).starts_with(r#"{"a":1,"x""#));
    }
}
