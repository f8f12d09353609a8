//! Server-Sent Events framing and parsing.
//!
//! We frame SSE ourselves so that everything that belongs together (a
//! priming event and the first message, say) can be handed to the socket as
//! ONE buffer: two small writes on a socket with Nagle's algorithm stall on
//! the peer's delayed ACK (see DESIGN.md, "Known traps"). Build the pieces
//! with [`event`], [`priming`] and [`comment`], join them with [`concat()`].
//!
//! [`SseParser`] is the other direction: an incremental parser following the
//! WHATWG `text/event-stream` rules, for tests and for HTTP clients.

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};

/// Appends `prefix` + `line` + `\n` for every line of `text` (split on CRLF,
/// LF or CR, the line terminators a parser recognises).
fn put_lines(buf: &mut BytesMut, prefix: &str, text: &str) {
    let mut rest = text;
    loop {
        let (line, next) = match rest.find(['\r', '\n']) {
            Some(i) => {
                let skip = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
                (&rest[..i], Some(&rest[i + skip..]))
            }
            None => (rest, None),
        };
        buf.put_slice(prefix.as_bytes());
        if !line.is_empty() {
            buf.put_u8(b' ');
            buf.put_slice(line.as_bytes());
        }
        buf.put_u8(b'\n');
        match next {
            Some(next) => rest = next,
            None => break,
        }
    }
}

/// Writes an `id:` line; an id cannot hold line breaks or NUL (a parser would
/// split or ignore it), so those are dropped.
fn put_id(buf: &mut BytesMut, id: &str) {
    buf.put_slice(b"id: ");
    if id.contains(['\r', '\n', '\0']) {
        for c in id.chars().filter(|c| !matches!(c, '\r' | '\n' | '\0')) {
            let mut tmp = [0u8; 4];
            buf.put_slice(c.encode_utf8(&mut tmp).as_bytes());
        }
    } else {
        buf.put_slice(id.as_bytes());
    }
    buf.put_u8(b'\n');
}

/// Frames one `message` event: an optional `id:` line, one `data:` line per line of `data`, a blank line.
pub fn event(id: Option<&str>, data: &str) -> Bytes {
    let mut buf = BytesMut::with_capacity(data.len() + id.map_or(0, str::len) + 16);
    if let Some(id) = id {
        put_id(&mut buf, id);
    }
    put_lines(&mut buf, "data:", data);
    buf.put_u8(b'\n');
    buf.freeze()
}

/// Frames a priming event (SEP-1699): an id, an optional `retry:` in milliseconds, and empty data.
pub fn priming(id: &str, retry: Option<Duration>) -> Bytes {
    let mut buf = BytesMut::with_capacity(id.len() + 32);
    put_id(&mut buf, id);
    if let Some(retry) = retry {
        let ms = u64::try_from(retry.as_millis()).unwrap_or(u64::MAX);
        buf.put_slice(format!("retry: {ms}\n").as_bytes());
    }
    buf.put_slice(b"data:\n\n");
    buf.freeze()
}

/// Frames a comment (`: text`, one line per line of `text`), used as a keep-alive.
pub fn comment(text: &str) -> Bytes {
    let mut buf = BytesMut::with_capacity(text.len() + 4);
    put_lines(&mut buf, ":", text);
    buf.put_u8(b'\n');
    buf.freeze()
}

/// Joins frames into one buffer, so that they go out in one write.
pub fn concat(parts: &[Bytes]) -> Bytes {
    match parts {
        [] => Bytes::new(),
        [one] => one.clone(),
        _ => {
            let mut buf = BytesMut::with_capacity(parts.iter().map(Bytes::len).sum());
            for part in parts {
                buf.put_slice(part);
            }
            buf.freeze()
        }
    }
}

/// One dispatched event, as [`SseParser`] saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `id:` field given in this event's block, if any (`Some("")` resets the last event id).
    pub id: Option<String>,
    /// The `event:` field, if any (`None` means the default type, `message`).
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The `retry:` field in milliseconds, if this block gave a valid one.
    pub retry: Option<u64>,
}

/// An incremental `text/event-stream` parser: feed it chunks, get complete events.
///
/// Follows the WHATWG rules: CRLF, LF and CR all end a line; a leading BOM is
/// skipped; lines starting with `:` are comments; one space after the colon
/// is dropped; a block without any `data:` line dispatches nothing (but its
/// `id:` and `retry:` still update [`last_event_id`](Self::last_event_id)
/// and [`retry`](Self::retry)). A half-received event at the end of the
/// stream is never dispatched.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of a line whose terminator has not arrived yet.
    line: Vec<u8>,
    /// The last chunk ended in CR: a LF at the start of the next one belongs to it.
    pending_cr: bool,
    /// No line has been processed yet (a BOM may start the first one).
    started: bool,
    /// The event being built.
    current: SseEvent,
    /// The `data:` buffer of the event being built (each line followed by `\n`).
    data: String,
    /// Whether the current block had a `data:` line.
    has_data: bool,
    /// The last event id seen on the stream (sticky across events).
    last_event_id: String,
    /// The last reconnection time seen on the stream.
    retry: Option<u64>,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// The last event id the stream set (what a client sends as `Last-Event-ID`); empty if none.
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The last reconnection time (`retry:`) the stream set, in milliseconds.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Feeds a chunk and returns the events it completed, in order.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let mut rest = chunk;
        if self.pending_cr && !rest.is_empty() {
            self.pending_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            if self.line.is_empty() {
                self.process_line(&rest[..pos], &mut out);
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&rest[..pos]);
                self.process_line(&line, &mut out);
                line.clear();
                self.line = line;
            }
            let crlf = rest[pos] == b'\r';
            rest = &rest[pos + 1..];
            if crlf {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.pending_cr = true,
                }
            }
        }
        self.line.extend_from_slice(rest);
        out
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        let mut line = line;
        if !self.started {
            self.started = true;
            line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match field {
            b"event" => self.current.event = Some(value.into_owned()),
            b"data" => {
                self.has_data = true;
                self.data.push_str(&value);
                self.data.push('\n');
            }
            b"id" if !value.contains('\0') => {
                self.last_event_id = value.to_string();
                self.current.id = Some(value.into_owned());
            }
            b"retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(ms) = value.parse() {
                    self.retry = Some(ms);
                    self.current.retry = Some(ms);
                }
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let mut event = std::mem::take(&mut self.current);
        if std::mem::take(&mut self.has_data) {
            let mut data = std::mem::take(&mut self.data);
            data.pop();
            event.data = data;
            out.push(event);
        } else {
            self.data.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(bytes: &[u8]) -> Vec<SseEvent> {
        SseParser::new().feed(bytes)
    }

    #[test]
    fn event_framing() {
        assert_eq!(&event(None, "{}")[..], b"data: {}\n\n");
        assert_eq!(&event(Some("s:1"), "{}")[..], b"id: s:1\ndata: {}\n\n");
        assert_eq!(&event(None, "a\nb")[..], b"data: a\ndata: b\n\n");
        assert_eq!(&event(None, "")[..], b"data:\n\n");
        assert_eq!(
            &event(None, "a\r\n\rb\n")[..],
            b"data: a\ndata:\ndata: b\ndata:\n\n"
        );
        assert!(!String::from_utf8_lossy(&event(Some("x"), "y")).contains("event:"));
    }

    #[test]
    fn priming_and_comment_framing() {
        assert_eq!(&priming("s:0", None)[..], b"id: s:0\ndata:\n\n");
        assert_eq!(
            &priming("s:0", Some(Duration::from_millis(1500)))[..],
            b"id: s:0\nretry: 1500\ndata:\n\n"
        );
        assert_eq!(&comment("keep-alive")[..], b": keep-alive\n\n");
        assert_eq!(&comment("")[..], b":\n\n");
    }

    #[test]
    fn concat_joins() {
        assert!(concat(&[]).is_empty());
        let joined = concat(&[priming("a:1", None), event(Some("a:2"), "{}")]);
        assert_eq!(&joined[..], b"id: a:1\ndata:\n\nid: a:2\ndata: {}\n\n");
        assert_eq!(concat(&[comment("x")]), comment("x"));
    }

    #[test]
    fn round_trip() {
        let json = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        let bytes = concat(&[
            priming("st:1", Some(Duration::from_secs(2))),
            comment("ping"),
            event(Some("st:2"), json),
            event(None, "line one\nline two\n\nline four"),
        ]);
        let mut parser = SseParser::new();
        let events = parser.feed(&bytes);
        assert_eq!(
            events,
            vec![
                SseEvent {
                    id: Some("st:1".into()),
                    event: None,
                    data: String::new(),
                    retry: Some(2000)
                },
                SseEvent {
                    id: Some("st:2".into()),
                    event: None,
                    data: json.into(),
                    retry: None
                },
                SseEvent {
                    id: None,
                    event: None,
                    data: "line one\nline two\n\nline four".into(),
                    retry: None
                },
            ]
        );
        assert_eq!(parser.last_event_id(), "st:2");
        assert_eq!(parser.retry(), Some(2000));
    }

    #[test]
    fn split_at_every_byte() {
        let bytes = concat(&[
            priming("p:1", Some(Duration::from_millis(10))),
            event(Some("p:2"), "héllo\nwörld"),
            comment("c"),
            event(Some("p:3"), "{}"),
        ]);
        let whole = parse_all(&bytes);
        assert_eq!(whole.len(), 3);
        for size in 1..bytes.len() {
            let mut parser = SseParser::new();
            let mut got = Vec::new();
            for chunk in bytes.chunks(size) {
                got.extend(parser.feed(chunk));
            }
            assert_eq!(got, whole, "chunk size {size}");
        }
    }

    #[test]
    fn crlf_and_cr_line_endings() {
        let text = b"id: 7\r\nevent: note\r\ndata: a\r\ndata: b\r\n\r\ndata: c\rdata: d\r\r";
        let expected = vec![
            SseEvent {
                id: Some("7".into()),
                event: Some("note".into()),
                data: "a\nb".into(),
                retry: None,
            },
            SseEvent {
                id: None,
                event: None,
                data: "c\nd".into(),
                retry: None,
            },
        ];
        assert_eq!(parse_all(text), expected);
        // CRLF split between chunks must not produce an extra blank line.
        let mut parser = SseParser::new();
        let mut got = parser.feed(b"data: x\r");
        got.extend(parser.feed(b"\ndata: y\r"));
        got.extend(parser.feed(b"\n\r"));
        got.extend(parser.feed(b"\n"));
        assert_eq!(
            got,
            vec![SseEvent {
                data: "x\ny".into(),
                ..Default::default()
            }]
        );
    }

    #[test]
    fn field_rules() {
        // No space after the colon, only one space stripped, unknown fields and comments ignored.
        let text =
            b"\xEF\xBB\xBFdata:x\ndata:  y\nfoo: bar\n: comment\ndata\nretry: 12a\nid: a\0b\n\n";
        let events = parse_all(text);
        assert_eq!(
            events,
            vec![SseEvent {
                data: "x\n y\n".into(),
                ..Default::default()
            }]
        );
        // A block without data dispatches nothing but still sets id and retry.
        let mut parser = SseParser::new();
        assert!(parser.feed(b"id: 42\nretry: 300\n\n").is_empty());
        assert_eq!(parser.last_event_id(), "42");
        assert_eq!(parser.retry(), Some(300));
        // An unterminated event is not dispatched.
        assert!(parser.feed(b"data: partial\n").is_empty());
    }

    #[test]
    fn id_sanitised() {
        assert_eq!(&event(Some("a\nb\0"), "x")[..], b"id: ab\ndata: x\n\n");
        assert_eq!(&priming("a\r\nb", None)[..], b"id: ab\ndata:\n\n");
    }
}
