//! The `_meta` the host puts on its requests to a 2026-07-28 upstream:
//! the upstream's revision, the host's identity, the downstream client's
//! capabilities and log level. It is the same for every request of a
//! client (and for every client that declares the same), so it is written
//! once and kept, not serialized again for each forwarded call.

use std::sync::{Arc, Mutex};

use mcp_core::sync::MutexExt as _;
use mcp_schema::{
    ClientCapabilities, LoggingLevel, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL,
    META_PROTOCOL_VERSION, ProtocolVersion, jsonrpc,
};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::value::RawValue;

/// What a 2026-07-28 request says about its client.
#[derive(Clone, Copy)]
pub(crate) struct ModernMeta<'a> {
    /// The upstream's revision.
    pub(crate) revision: ProtocolVersion,
    /// The capabilities the upstream is told the client has.
    pub(crate) capabilities: &'a ClientCapabilities,
    /// The log level the client chose, if it did.
    pub(crate) log_level: Option<LoggingLevel>,
}

/// The host as a client of its upstreams.
#[derive(Serialize)]
struct HostInfo {
    name: &'static str,
    version: &'static str,
}

/// The host's name and version, as its upstreams see it.
const HOST_INFO: HostInfo = HostInfo {
    name: "mcp-host",
    version: env!("CARGO_PKG_VERSION"),
};

impl ModernMeta<'_> {
    /// Writes the protocol's members into a `_meta` map being serialized.
    pub(crate) fn serialize_members<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        map.serialize_entry(META_PROTOCOL_VERSION, self.revision.as_str())?;
        map.serialize_entry(META_CLIENT_INFO, &HOST_INFO)?;
        map.serialize_entry(META_CLIENT_CAPABILITIES, self.capabilities)?;
        if let Some(level) = self.log_level {
            map.serialize_entry(META_LOG_LEVEL, &level)?;
        }
        Ok(())
    }
}

impl Serialize for ModernMeta<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        self.serialize_members(&mut map)?;
        map.end()
    }
}

/// The last `_meta` written for one upstream, with what it was written
/// from. One entry: the calls of one client, or of clients that declare
/// the same, find it; another client's call writes its own in its place.
#[derive(Default)]
pub(crate) struct MetaCache(Mutex<Option<Written>>);

struct Written {
    revision: ProtocolVersion,
    capabilities: ClientCapabilities,
    log_level: Option<LoggingLevel>,
    text: Arc<RawValue>,
}

impl MetaCache {
    /// The `_meta` object of `meta`, written now or found from before.
    pub(crate) fn get(&self, meta: ModernMeta<'_>) -> Result<Arc<RawValue>, serde_json::Error> {
        let mut last = self.0.locked();
        if let Some(written) = last.as_ref()
            && written.revision == meta.revision
            && written.log_level == meta.log_level
            && written.capabilities == *meta.capabilities
        {
            return Ok(Arc::clone(&written.text));
        }
        let text: Arc<RawValue> = jsonrpc::to_raw(&meta)?.into();
        *last = Some(Written {
            revision: meta.revision,
            capabilities: meta.capabilities.clone(),
            log_level: meta.log_level,
            text: Arc::clone(&text),
        });
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(cache: &MetaCache, meta: ModernMeta<'_>) -> serde_json::Value {
        serde_json::from_str(cache.get(meta).unwrap().get()).unwrap()
    }

    #[test]
    fn a_client_s_meta_is_written_once_and_another_s_in_its_place() {
        let cache = MetaCache::default();
        let plain = ClientCapabilities::default();
        let plain_again = plain.clone();
        let sampling: ClientCapabilities =
            serde_json::from_str(r#"{"sampling":{},"roots":{"listChanged":true}}"#).unwrap();
        let meta = |capabilities, log_level| ModernMeta {
            revision: ProtocolVersion::LATEST,
            capabilities,
            log_level,
        };
        let first = cache.get(meta(&plain, None)).unwrap();
        let again = cache.get(meta(&plain_again, None)).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "the same client finds it");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(first.get()).unwrap(),
            serde_json::json!({
                META_PROTOCOL_VERSION: ProtocolVersion::LATEST.as_str(),
                META_CLIENT_INFO: {"name": "mcp-host", "version": env!("CARGO_PKG_VERSION")},
                META_CLIENT_CAPABILITIES: {},
            })
        );
        let other = written(&cache, meta(&sampling, Some(LoggingLevel::Debug)));
        assert_eq!(
            other[META_CLIENT_CAPABILITIES],
            serde_json::json!({"sampling": {}, "roots": {"listChanged": true}})
        );
        assert_eq!(other[META_LOG_LEVEL], "debug");
        let leveled = written(&cache, meta(&sampling, Some(LoggingLevel::Error)));
        assert_eq!(leveled[META_LOG_LEVEL], "error", "a new level is written");
        let back = cache.get(meta(&plain, None)).unwrap();
        assert!(!Arc::ptr_eq(&first, &back), "written again, not stale");
        assert_eq!(back.get(), first.get());
    }
}
