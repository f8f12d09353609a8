//! What a legacy session must carry to continue on another server
//! instance, and where it is kept.
//!
//! Behind a load balancer without affinity, a client's next request may
//! reach an instance that never saw its `Mcp-Session-Id`. With a shared
//! [`SessionStore`] (Redis implements one), that instance loads the
//! session's [`SessionRecord`] instead of answering 404: the negotiated
//! revision, the client's identity and capabilities, its log level and
//! resource subscriptions, and who owns it. The default store,
//! [`LocalSessionStore`], keeps nothing: sessions live in the instance that
//! made them, as without a shared store.

use std::collections::BTreeSet;
use std::time::Duration;

use mcp_core::BoxFuture;
use mcp_schema::{ClientCapabilities, Implementation, LoggingLevel};
use serde::{Deserialize, Serialize};

/// A legacy session's state, as another instance needs it to continue the
/// session: written when the session starts and whenever it changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The revision negotiated at `initialize`.
    pub revision: String,
    /// The client's name and version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<Implementation>,
    /// What the client declared.
    #[serde(default)]
    pub client_capabilities: ClientCapabilities,
    /// The level the client chose with `logging/setLevel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<LoggingLevel>,
    /// The resources the client subscribed to.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub subscriptions: BTreeSet<String>,
    /// Who owns the session (the authenticated principal's key), if an
    /// authorization layer named one: nobody else may use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

impl SessionRecord {
    /// A record of a session of `revision`.
    pub fn new(revision: impl Into<String>) -> Self {
        SessionRecord {
            revision: revision.into(),
            client_info: None,
            client_capabilities: ClientCapabilities::default(),
            log_level: None,
            subscriptions: BTreeSet::new(),
            owner: None,
        }
    }

    /// Sets the client's name and version.
    pub fn with_client_info(mut self, info: Implementation) -> Self {
        self.client_info = Some(info);
        self
    }

    /// Sets the client's capabilities.
    pub fn with_client_capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.client_capabilities = capabilities;
        self
    }

    /// Sets the owner.
    pub fn with_owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }
}

/// Why a session store failed: it could not be reached, or holds
/// something unreadable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("session store unavailable: {reason}")]
pub struct SessionStoreError {
    reason: String,
}

impl SessionStoreError {
    /// An error saying why the store failed.
    pub fn new(reason: impl Into<String>) -> Self {
        SessionStoreError {
            reason: reason.into(),
        }
    }

    /// Why the store failed.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// Where legacy sessions are kept so that other instances can continue
/// them. Every record lives for `ttl` after it was last saved or touched
/// (the endpoint passes its session idle timeout).
pub trait SessionStore: Send + Sync + 'static {
    /// Whether other instances see what this store holds. Only then does
    /// the endpoint use it: a session is checked against it on each use
    /// (a DELETE on another instance ends it here too), loaded from it when
    /// unknown here, and left to it when idle here.
    fn is_shared(&self) -> bool;

    /// Writes (or overwrites) the record of session `id`.
    fn save<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), SessionStoreError>>;

    /// The record of session `id`, its lifetime renewed; `None` if there
    /// is none (never made, deleted or expired).
    fn load<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, SessionStoreError>>;

    /// Renews the lifetime of session `id`'s record (it is in use);
    /// whether there is one still.
    fn touch<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, SessionStoreError>>;

    /// Removes the record of session `id` (DELETE): no instance can load
    /// it any more, and those that hold it end it on its next use.
    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), SessionStoreError>>;

    /// The sessions subscribed to resource `uri` (`resources/subscribe`),
    /// whichever instance they were made on, for [`crate::fanout`]: a
    /// shared store indexes the subscriptions of the records it saves.
    /// The default knows of none.
    fn subscribers<'a>(
        &'a self,
        uri: &'a str,
    ) -> BoxFuture<'a, Result<Vec<String>, SessionStoreError>> {
        let _ = uri;
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
}

/// The default [`SessionStore`]: keeps nothing, as a session lives in the
/// instance that made it.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalSessionStore;

impl SessionStore for LocalSessionStore {
    fn is_shared(&self) -> bool {
        false
    }

    fn save<'a>(
        &'a self,
        _: &'a str,
        _: &'a SessionRecord,
        _: Duration,
    ) -> BoxFuture<'a, Result<(), SessionStoreError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn load<'a>(
        &'a self,
        _: &'a str,
        _: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, SessionStoreError>> {
        Box::pin(std::future::ready(Ok(None)))
    }

    fn touch<'a>(
        &'a self,
        _: &'a str,
        _: Duration,
    ) -> BoxFuture<'a, Result<bool, SessionStoreError>> {
        Box::pin(std::future::ready(Ok(true)))
    }

    fn remove<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<(), SessionStoreError>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_through_json() {
        let mut record = SessionRecord::new("2025-06-18")
            .with_client_info(Implementation::new("c", "1"))
            .with_owner("alice");
        record.log_level = Some(LoggingLevel::Warning);
        record.subscriptions.insert("file:///a".to_owned());
        let text = serde_json::to_string(&record).unwrap();
        assert_eq!(
            serde_json::from_str::<SessionRecord>(&text).unwrap(),
            record
        );
        let bare: SessionRecord = serde_json::from_str(r#"{"revision":"2025-03-26"}"#).unwrap();
        assert_eq!(bare, SessionRecord::new("2025-03-26"));
    }
}
