//! The top-level members of a JSON object that was parsed once already,
//! found by scanning for strings and brackets instead of parsing it again:
//! what a gateway reads of a client's params or changes in a server's
//! result is a member or two, and a second full parse would cost more than
//! the rest of the work. With [`crate::text_search`], the one place this
//! project reads raw JSON text by hand.

use std::borrow::Cow;
use std::cmp::Ordering;

/// One top-level member of an object, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member<'a> {
    /// The key with its quotes (and escapes, if it has any).
    pub key: &'a str,
    /// The value's text.
    pub value: &'a str,
}

impl<'a> Member<'a> {
    /// The key, unquoted and (where it has escapes) decoded; `None` when
    /// it is not a string.
    pub fn key_text(&self) -> Option<Cow<'a, str>> {
        let written = self.written_key()?;
        if !written.contains('\\') {
            return Some(Cow::Borrowed(written));
        }
        serde_json::from_str::<String>(self.key)
            .ok()
            .map(Cow::Owned)
    }

    /// The key between its quotes, as written.
    fn written_key(&self) -> Option<&'a str> {
        self.key.strip_prefix('"')?.strip_suffix('"')
    }

    /// Whether the key is `name`.
    pub fn key_is(&self, name: &str) -> bool {
        let Some(written) = self.written_key() else {
            return false;
        };
        // An escape writes a character in more bytes than it has: a key
        // written as long as `name` is `name` only byte for byte, and one
        // written shorter never is.
        match written.len().cmp(&name.len()) {
            Ordering::Equal => written == name,
            Ordering::Less => false,
            Ordering::Greater => {
                written.contains('\\')
                    && serde_json::from_str::<String>(self.key).is_ok_and(|k| k == name)
            }
        }
    }
}

/// The members of a JSON object known to be valid, read one at a time, so
/// that a reader that stops early reads no further and keeps nothing.
pub struct Members<'a> {
    text: &'a str,
    /// Where the next member starts, or the comma or brace after the last
    /// one read.
    at: usize,
    state: State,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// At the first member, or at the closing brace of an empty object.
    First,
    /// At the comma (or brace) after a member.
    After,
    /// At the closing brace.
    Ended,
    /// At something no valid object has there.
    Invalid,
}

impl<'a> Members<'a> {
    /// A scan of `text`; `None` when it does not open an object.
    pub fn of(text: &'a str) -> Option<Members<'a>> {
        let bytes = text.as_bytes();
        let at = skip_space(bytes, 0);
        if bytes.get(at) != Some(&b'{') {
            return None;
        }
        Some(Members {
            text,
            at: skip_space(bytes, at + 1),
            state: State::First,
        })
    }

    /// The text after the members read so far: from the comma before the
    /// next member, or from the closing brace; `None` when the object
    /// turned out not to be valid.
    pub fn rest(&self) -> Option<&'a str> {
        let next = self.text.as_bytes().get(self.at);
        match self.state {
            State::Invalid => None,
            State::After if !matches!(next, Some(b',' | b'}')) => None,
            _ => self.text.get(self.at..),
        }
    }

    fn read(&mut self) -> Option<Member<'a>> {
        let (text, bytes) = (self.text, self.text.as_bytes());
        let mut at = self.at;
        match (self.state, bytes.get(at)) {
            (State::First | State::After, Some(b'}')) => {
                self.state = State::Ended;
                return None;
            }
            (State::After, Some(b',')) => at = skip_space(bytes, at + 1),
            (State::First, _) => {}
            _ => return None,
        }
        if bytes.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(bytes, at)?;
        let key = text.get(at..key_end)?;
        at = skip_space(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        let value_start = skip_space(bytes, at + 1);
        let value_end = value_end(bytes, value_start)?;
        let value = text.get(value_start..value_end)?;
        self.at = skip_space(bytes, value_end);
        self.state = State::After;
        Some(Member { key, value })
    }
}

impl<'a> Iterator for Members<'a> {
    type Item = Member<'a>;

    /// The next member; `None` at the end of the object, or at anything
    /// that shows it is not valid (after which [`Members::rest`] is
    /// `None`).
    fn next(&mut self) -> Option<Member<'a>> {
        if matches!(self.state, State::Ended | State::Invalid) {
            return None;
        }
        let member = self.read();
        if member.is_none() && self.state != State::Ended {
            self.state = State::Invalid;
        }
        member
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// Where the string opening at `at` ends (just past its closing quote).
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut from = at + 1;
    loop {
        let found = from + memchr::memchr2(b'"', b'\\', bytes.get(from..)?)?;
        if bytes[found] == b'"' {
            return Some(found + 1);
        }
        from = found + 2;
    }
}

/// Where the value starting at `at` ends.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while let Some(&byte) = bytes.get(i) {
                match byte {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        // A number, true, false or null.
        _ => {
            let rest = &bytes[at..];
            Some(
                at + rest
                    .iter()
                    .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
                    .unwrap_or(rest.len()),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every member of `text`; `None` when it is not a valid object.
    fn members(text: &str) -> Option<Vec<Member<'_>>> {
        let mut scan = Members::of(text)?;
        let found = scan.by_ref().collect();
        scan.rest().map(|_| found)
    }

    /// The members up to the first `stop` is true of, and the text after.
    fn members_until<'a>(
        text: &'a str,
        mut stop: impl FnMut(&Member<'a>) -> bool,
    ) -> Option<(Vec<Member<'a>>, &'a str)> {
        let mut scan = Members::of(text)?;
        let mut found = Vec::new();
        for member in scan.by_ref() {
            let stops = stop(&member);
            found.push(member);
            if stops {
                break;
            }
        }
        Some((found, scan.rest()?))
    }

    fn pairs(text: &str) -> Vec<(&str, &str)> {
        members(text)
            .unwrap()
            .into_iter()
            .map(|m| (m.key, m.value))
            .collect()
    }

    #[test]
    fn members_are_found_as_written() {
        assert_eq!(pairs("{}"), vec![]);
        assert_eq!(pairs(" { } "), vec![]);
        assert_eq!(
            pairs(
                r#"{"a":1,"b" : "x\"}]\\" , "c":{"d":[1,{"e":"]"}]},"f":[ ],"g":-1.5e3,"h":null}"#
            ),
            vec![
                (r#""a""#, "1"),
                (r#""b""#, r#""x\"}]\\""#),
                (r#""c""#, r#"{"d":[1,{"e":"]"}]}"#),
                (r#""f""#, "[ ]"),
                (r#""g""#, "-1.5e3"),
                (r#""h""#, "null"),
            ]
        );
        assert_eq!(pairs("{\n\t\"k\"\n:\ntrue\n}"), vec![(r#""k""#, "true")]);
        for not_an_object in ["[1]", "1", "\"{}\"", "", "{", r#"{"a":1"#, r#"{"a" 1}"#] {
            assert_eq!(members(not_an_object), None, "{not_an_object}");
        }
    }

    #[test]
    fn strings_end_at_their_closing_quote_wherever_an_escape_falls() {
        for escape in [r#"\""#, r"\\", r"\u0041"] {
            for at in 0..100 {
                let text = format!(r#""{}{escape}{}"  ,"#, "a".repeat(at), "b".repeat(at % 7));
                let end = string_end(text.as_bytes(), 0).unwrap();
                let parsed: String = serde_json::from_str(&text[..end]).unwrap();
                assert_eq!(parsed.len(), at + at % 7 + 1, "{text}");
                assert_eq!(&text[end..], "  ,", "{text}");
            }
        }
        assert_eq!(string_end(br#""abc\"#, 0), None);
        assert_eq!(string_end(br#""abc"#, 0), None);
    }

    #[test]
    fn a_scan_stops_at_the_member_it_is_told() {
        let text = r#"{"a":1, "b":{"x":[2]} ,"c":3,"d":"}"}"#;
        let (found, rest) = members_until(text, |m| m.key_is("b")).unwrap();
        assert_eq!(
            found.iter().map(|m| m.value).collect::<Vec<_>>(),
            vec!["1", r#"{"x":[2]}"#]
        );
        assert_eq!(rest, r#","c":3,"d":"}"}"#);
        let (found, rest) = members_until(text, |_| false).unwrap();
        assert_eq!(found.len(), 4);
        assert_eq!(rest, "}");
        let (found, rest) = members_until(text, |m| m.key_is("d")).unwrap();
        assert_eq!((found.len(), rest), (4, "}"));
        assert_eq!(members_until(" {} ", |_| true).unwrap(), (vec![], "} "));
    }

    #[test]
    fn keys_compare_as_decoded() {
        let found = members(r#"{"result\u0054ype":1,"_meta":2,"a\\b":3}"#).unwrap();
        let texts: Vec<_> = found.iter().map(|m| m.key_text().unwrap()).collect();
        assert_eq!(texts, ["resultType", "_meta", "a\\b"]);
        assert!(matches!(texts[1], Cow::Borrowed(_)));
        assert!(found[0].key_is("resultType"));
        assert!(found[1].key_is("_meta"));
        assert!(!found[1].key_is("meta"));
        assert!(found[2].key_is("a\\b"));
    }

    #[test]
    fn the_scan_agrees_with_a_parse() {
        let samples = [
            r#"{"content":[{"type":"text","text":"hello \"world\" {[}"}],"isError":false}"#,
            r#"{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}},"content":[]}"#,
            r#"{"a":{"b":{"c":{"d":[[[]]]}}},"e":"\\","f":"\u00e9"}"#,
            r#"{"a":[{"b":"["},[{}],"]"],"c":{"d":["}",{"e":"{"}]},"g":[[],{}]}"#,
        ];
        for sample in samples {
            let parsed: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(sample).unwrap();
            let scanned = members(sample).unwrap();
            assert_eq!(scanned.len(), parsed.len(), "{sample}");
            for member in scanned {
                let key: String = serde_json::from_str(member.key).unwrap();
                let value: serde_json::Value = serde_json::from_str(member.value).unwrap();
                assert_eq!(parsed[&key], value, "{sample}");
            }
        }
    }
}
