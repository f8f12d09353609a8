//! Reading a request's `_meta`, and remembering what stateless clients
//! send with every request.
//!
//! In the stateless era each request repeats the client's protocol
//! version, info and capabilities. A client sends the same text every
//! time, so a server reads it once and keeps the typed `_meta` and the
//! [`Negotiated`] it implies, keyed by that text.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use mcp_schema::leading_meta::META_FIRST;
use mcp_schema::text_search::TextSearch;
use mcp_schema::{ErrorObject, RequestMetaObject};
use serde::Deserialize;
use serde_json::value::RawValue;

/// Looks for a `_meta` key in raw JSON, before a parse that needs one.
pub(crate) static META_KEY: TextSearch = TextSearch::new("\"_meta\"");

/// The raw text of a request's `_meta`, if it has one (`null` counts as
/// none). Params that do not mention `_meta` are not scanned.
pub(crate) fn meta_text(params: Option<&RawValue>) -> Result<Option<&str>, ErrorObject> {
    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(rename = "_meta", default, borrow)]
        meta: Option<&'a RawValue>,
    }
    match params {
        Some(raw) if META_KEY.is_in(raw.get()) => serde_json::from_str::<Probe>(raw.get())
            .map(|p| p.meta.map(RawValue::get))
            .map_err(|e| ErrorObject::invalid_params(format!("_meta: {e}"))),
        _ => Ok(None),
    }
}

/// Where `meta`, a slice of `params`, ends in them, if it is the value of
/// a `_meta` member that opens them.
pub(crate) fn leading_meta_end(params: &str, meta: &str) -> Option<usize> {
    let start = (meta.as_ptr() as usize).checked_sub(params.as_ptr() as usize)?;
    (start == META_FIRST.len() && params.starts_with(META_FIRST)).then(|| start + meta.len())
}

/// The members of `params` after a `_meta` member that opens them and
/// ends at `end`, as the text of an object.
pub(crate) fn members_after(params: &str, end: usize) -> Option<Cow<'_, str>> {
    let rest = params.get(end..)?.trim_start();
    match rest.strip_prefix(',') {
        Some(members) => {
            let mut object = String::with_capacity(1 + members.len());
            object.push('{');
            object.push_str(members);
            Some(Cow::Owned(object))
        }
        None => rest.starts_with('}').then_some(Cow::Borrowed("{}")),
    }
}

/// A stateless request's `_meta` that the server has read before,
/// recognised where it opens the params (see [`ReadFrame::known_meta`]).
///
/// [`ReadFrame::known_meta`]: crate::ReadFrame::known_meta
#[derive(Debug)]
pub struct KnownMeta<'p> {
    /// The typed `_meta`.
    pub meta: Arc<RequestMetaObject>,
    /// The params' other members, as the text of an object.
    pub members: Cow<'p, str>,
}

/// The typed view of a `_meta` text. Requests without one (most legacy
/// requests) share one empty value, so they allocate nothing for it.
pub(crate) fn read_meta(text: Option<&str>) -> Result<Arc<RequestMetaObject>, ErrorObject> {
    static NONE: LazyLock<Arc<RequestMetaObject>> = LazyLock::new(Arc::default);
    match text {
        Some(text) => serde_json::from_str(text)
            .map(Arc::new)
            .map_err(|e| ErrorObject::invalid_params(format!("_meta: {e}"))),
        None => Ok(Arc::clone(&NONE)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::{CAPACITY, RECENT, ServerIdentity, StatelessClient, StatelessClients};
    use mcp_schema::jsonrpc::{Frame, Message};
    use mcp_schema::{Implementation, ProtocolVersion, ServerCapabilities};

    fn identity() -> ServerIdentity {
        ServerIdentity::new(Implementation::new("s", "1"), ServerCapabilities::default())
    }

    fn client(identity: &ServerIdentity, text: &str) -> Arc<StatelessClient> {
        let meta = read_meta(Some(text)).unwrap();
        Arc::new(StatelessClient::new(
            identity,
            meta,
            ProtocolVersion::LATEST,
        ))
    }

    #[test]
    fn meta_text_is_the_raw_member() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        let params = raw(r#"{"name":"x","_meta":{"a": [1, 2]}}"#);
        assert_eq!(meta_text(Some(&params)).unwrap(), Some(r#"{"a": [1, 2]}"#));
        assert_eq!(meta_text(Some(&raw(r#"{"_meta":null}"#))).unwrap(), None);
        assert_eq!(meta_text(Some(&raw(r#"{"name":"x"}"#))).unwrap(), None);
        assert_eq!(meta_text(None).unwrap(), None);
        assert!(meta_text(Some(&raw(r#"{"_meta":1}"#))).is_ok_and(|t| t == Some("1")));
        assert!(
            read_meta(Some("1")).is_err(),
            "a _meta that is not an object"
        );
    }

    #[test]
    fn requests_without_meta_share_one_empty_meta() {
        let (one, other) = (read_meta(None).unwrap(), read_meta(None).unwrap());
        assert!(Arc::ptr_eq(&one, &other), "allocated per request");
        assert_eq!(*one, RequestMetaObject::default());
        let read = read_meta(Some("{}")).unwrap();
        assert!(!Arc::ptr_eq(&read, &one), "a read meta is its own");
        assert_eq!(*read, RequestMetaObject::default());
    }

    #[test]
    fn repeating_meta_is_remembered() {
        let identity = identity();
        let text = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let seen = identity.stateless_clients();
        seen.remember(text, &client(&identity, text));
        let hit = seen.get(text).expect("remembered");
        assert_eq!(hit.negotiated.server_info, Some(identity.info().clone()));
        assert_eq!(hit.negotiated.revision, Some(ProtocolVersion::LATEST));
        assert!(seen.get(&format!("{text} ")).is_none());
        let copy = identity.clone();
        assert!(
            copy.stateless_clients().get(text).is_none(),
            "a clone starts empty"
        );
        assert!(seen.get(text).is_some(), "the original keeps it");
    }

    #[test]
    fn a_recent_meta_is_recognised_at_the_start_of_params() {
        let identity = identity();
        let seen = identity.stateless_clients();
        let text = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"a":"}"}}"#;
        seen.remember(text, &client(&identity, text));
        let opening = |params: &str| {
            seen.recognise(params)
                .map(|(text, client)| (text.to_owned(), client.meta.protocol_version.clone()))
        };
        let hit = opening(&format!(r#"{{"_meta":{text},"name":"x"}}"#)).expect("recognised");
        assert_eq!(hit, (text.to_owned(), Some("2026-07-28".to_owned())));
        assert!(
            opening(&format!(r#"{{"_meta":{text}}}"#)).is_some(),
            "_meta alone"
        );
        let members = |params: &str| {
            let params = RawValue::from_string(params.to_owned()).unwrap();
            let meta = meta_text(Some(&params)).unwrap().unwrap();
            leading_meta_end(params.get(), meta)
                .and_then(|end| members_after(params.get(), end))
                .map(String::from)
        };
        let meta = r#"{"a":"}"}"#;
        for (params, rest) in [
            (
                format!(r#"{{"_meta":{meta},"name":"x"}}"#),
                Some(r#"{"name":"x"}"#),
            ),
            (
                format!(r#"{{"_meta":{meta} , "name":"x"}}"#),
                Some(r#"{ "name":"x"}"#),
            ),
            (format!(r#"{{"_meta":{meta} }}"#), Some("{}")),
            (format!(r#"{{"name":"x","_meta":{meta}}}"#), None),
            (format!(r#"{{ "_meta":{meta}}}"#), None),
        ] {
            assert_eq!(members(&params).as_deref(), rest, "{params}");
            // A slice from elsewhere is not where the params' `_meta` ends.
            assert_eq!(leading_meta_end(&params, meta), None);
        }
        for params in [
            // Not first, or not compact: left to the parser.
            format!(r#"{{"name":"x","_meta":{text}}}"#),
            format!(r#"{{ "_meta":{text}}}"#),
            // The known text followed by anything but `,` or `}`.
            format!(r#"{{"_meta":{text} ,"name":"x"}}"#),
            // Another value, equal to the known text but for its end.
            format!(r#"{{"_meta":{}"b":1}}}}"#, &text[..text.len() - 1]),
        ] {
            assert!(opening(&params).is_none(), "{params}");
        }
        // Older texts than the latest few are found only by parsing.
        for n in 0..RECENT {
            let other = format!(r#"{{"io.modelcontextprotocol/protocolVersion":"{n}"}}"#);
            seen.remember(&other, &client(&identity, &other));
        }
        assert!(opening(&format!(r#"{{"_meta":{text}}}"#)).is_none());
        assert!(seen.get(text).is_some(), "still remembered");
        let latest = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"0"}}"#;
        assert!(opening(latest).is_some());
    }

    #[test]
    fn a_frame_opening_with_a_remembered_meta_reads_as_a_full_parse() {
        let config = crate::SessionConfig::new(crate::Role::Server(Arc::new(identity())));
        let crate::Role::Server(identity) = &config.role else {
            unreachable!()
        };
        let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{meta},"name":"x"}}}}"#
        );
        let seen = identity.stateless_clients();
        let recognised = || {
            Message::parse_with_known_meta(&text, |rest| {
                seen.recent_meta_opening(rest).map(|(text, _)| text)
            })
        };
        assert!(recognised().is_none(), "nothing remembered yet");
        seen.remember(meta, &client(identity, meta));
        let fast = recognised().expect("recognised once remembered");
        let full = Message::parse(&text).unwrap();
        assert_eq!(format!("{fast:?}"), format!("{full:?}"));
        let read = config.read_frame(&text).unwrap();
        assert_eq!(
            format!("{:?}", read.frame()),
            format!("{:?}", Frame::Single(full))
        );
        let known = read.known_meta().expect("known with its client");
        assert_eq!(known.members, r#"{"name":"x"}"#);
        assert_eq!(known.meta, read_meta(Some(meta)).unwrap());
        let unknown =
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{},"name":"x"}}"#;
        assert!(config.read_frame(unknown).unwrap().known_meta().is_none());
    }

    #[test]
    fn per_request_meta_is_not_remembered() {
        let identity = identity();
        let seen = StatelessClients::default();
        for text in [
            r#"{"progressToken":1,"io.modelcontextprotocol/clientCapabilities":{}}"#,
            r#"{"traceparent":"00-1-2-01","io.modelcontextprotocol/clientCapabilities":{}}"#,
        ] {
            seen.remember(text, &client(&identity, text));
            assert!(seen.get(text).is_none(), "{text}");
        }
        for n in 0..=CAPACITY {
            let text = format!(r#"{{"io.modelcontextprotocol/protocolVersion":"{n}"}}"#);
            seen.remember(&text, &client(&identity, &text));
        }
        assert!(seen.remembered() <= CAPACITY, "bounded");
    }
}
