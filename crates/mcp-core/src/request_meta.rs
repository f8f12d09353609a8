//! Reading a request's `_meta`, and remembering what stateless clients
//! send with every request.
//!
//! In the stateless era each request repeats the client's protocol
//! version, info and capabilities. A client sends the same text every
//! time, so a server reads it once and keeps the typed `_meta` and the
//! [`Negotiated`] it implies, keyed by that text.

use std::sync::{Arc, RwLock};

use foldhash::HashMap;
use mcp_schema::{ErrorObject, ProtocolVersion, RequestMetaObject};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::session::{Negotiated, ServerIdentity};

/// How many distinct `_meta` texts a server keeps; past that it starts over.
const CAPACITY: usize = 64;

/// The raw text of a request's `_meta`, if it has one (`null` counts as
/// none). Params that do not mention `_meta` are not scanned.
pub(crate) fn meta_text(params: Option<&RawValue>) -> Result<Option<&str>, ErrorObject> {
    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(rename = "_meta", default, borrow)]
        meta: Option<&'a RawValue>,
    }
    match params {
        Some(raw) if raw.get().contains("\"_meta\"") => serde_json::from_str::<Probe>(raw.get())
            .map(|p| p.meta.map(RawValue::get))
            .map_err(|e| ErrorObject::invalid_params(format!("_meta: {e}"))),
        _ => Ok(None),
    }
}

/// The typed view of a `_meta` text (the default when there is none).
pub(crate) fn read_meta(text: Option<&str>) -> Result<RequestMetaObject, ErrorObject> {
    match text {
        Some(text) => serde_json::from_str(text)
            .map_err(|e| ErrorObject::invalid_params(format!("_meta: {e}"))),
        None => Ok(RequestMetaObject::default()),
    }
}

/// What a stateless request's `_meta` says, read once.
pub(crate) struct StatelessClient {
    /// The typed `_meta`.
    pub(crate) meta: Arc<RequestMetaObject>,
    /// Both sides, as a request with this `_meta` sees them (the revision
    /// it asks for included).
    pub(crate) negotiated: Arc<Negotiated>,
}

impl StatelessClient {
    /// Both sides as a stateless request with `meta` sees them.
    pub(crate) fn new(
        identity: &ServerIdentity,
        meta: Arc<RequestMetaObject>,
        revision: ProtocolVersion,
    ) -> Self {
        let negotiated = Arc::new(Negotiated {
            revision: Some(revision),
            client_info: meta.client_info.clone(),
            client_capabilities: meta.client_capabilities.clone().unwrap_or_default(),
            server_info: Some(identity.info.clone()),
            server_capabilities: identity.capabilities.clone(),
        });
        StatelessClient { meta, negotiated }
    }

    /// Whether the `_meta` is the same for every request of its client:
    /// one with a progress token, or members beyond the protocol's own
    /// (trace context, say), is particular to its request.
    fn repeats(&self) -> bool {
        self.meta.progress_token.is_none() && self.meta.other.is_empty()
    }

    /// Whether it was made for this identity (whose public fields may have
    /// changed since).
    fn made_for(&self, identity: &ServerIdentity) -> bool {
        self.negotiated.server_info.as_ref() == Some(&identity.info)
            && self.negotiated.server_capabilities == identity.capabilities
    }
}

/// The stateless clients a server has seen, by the text of their `_meta`.
/// A clone starts empty.
#[derive(Default)]
pub(crate) struct StatelessClients {
    seen: RwLock<HashMap<Box<str>, Arc<StatelessClient>>>,
}

impl StatelessClients {
    /// The client whose requests carry exactly this `_meta` text.
    pub(crate) fn get(
        &self,
        identity: &ServerIdentity,
        text: &str,
    ) -> Option<Arc<StatelessClient>> {
        let seen = self.seen.read().unwrap_or_else(|p| p.into_inner());
        seen.get(text)
            .filter(|client| client.made_for(identity))
            .cloned()
    }

    /// Remembers `client` under its `_meta` text, if that text repeats.
    pub(crate) fn remember(&self, text: &str, client: &Arc<StatelessClient>) {
        if !client.repeats() {
            return;
        }
        let mut seen = self.seen.write().unwrap_or_else(|p| p.into_inner());
        if seen.len() >= CAPACITY {
            seen.clear();
        }
        seen.insert(text.into(), Arc::clone(client));
    }
}

impl Clone for StatelessClients {
    fn clone(&self) -> Self {
        StatelessClients::default()
    }
}

impl std::fmt::Debug for StatelessClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seen = self.seen.read().map_or(0, |s| s.len());
        f.debug_struct("StatelessClients")
            .field("seen", &seen)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_schema::{Implementation, ServerCapabilities};

    fn identity() -> ServerIdentity {
        ServerIdentity::new(Implementation::new("s", "1"), ServerCapabilities::default())
    }

    fn client(identity: &ServerIdentity, text: &str) -> Arc<StatelessClient> {
        let meta = Arc::new(read_meta(Some(text)).unwrap());
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
    fn repeating_meta_is_remembered_for_its_identity_only() {
        let mut identity = identity();
        let text = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let seen = identity.stateless_clients();
        seen.remember(text, &client(&identity, text));
        let hit = seen.get(&identity, text).expect("remembered");
        assert_eq!(hit.negotiated.server_info, Some(identity.info.clone()));
        assert_eq!(hit.negotiated.revision, Some(ProtocolVersion::LATEST));
        assert!(seen.get(&identity, &format!("{text} ")).is_none());
        let copy = identity.clone();
        assert!(
            copy.stateless_clients().get(&copy, text).is_none(),
            "a clone starts empty"
        );
        assert!(seen.get(&identity, text).is_some(), "the original keeps it");
        identity.info = Implementation::new("s", "2");
        assert!(
            identity.stateless_clients().get(&identity, text).is_none(),
            "made for the old info"
        );
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
            assert!(seen.get(&identity, text).is_none(), "{text}");
        }
        for n in 0..=CAPACITY {
            let text = format!(r#"{{"io.modelcontextprotocol/protocolVersion":"{n}"}}"#);
            seen.remember(&text, &client(&identity, &text));
        }
        assert!(seen.seen.read().unwrap().len() <= CAPACITY, "bounded");
    }
}
