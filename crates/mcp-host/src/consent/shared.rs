//! The guard's decisions shared with the other instances of a host (on
//! Redis: `mcp host --redis`), so that a grant made on one holds on all:
//! grants for always and for a 2026-07-28 caller's session, definitions a
//! person approved (re-pinned), and servers trusted, each published where
//! it is made and applied by every instance; and the approval rounds of
//! 2026-07-28 callers, which the retry may bring to any instance.
//!
//! A legacy session's grants stay with the instance that holds them.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use mcp_core::BoxFuture;
use serde::{Deserialize, Serialize};

use super::{GrantKey, Pending};

/// The entries a [`SharedGuard`] follows.
pub type Entries = BoxStream<'static, Result<String, String>>;

/// Where the guard's decisions are shared: an append-only log every
/// instance follows, and rounds kept for a while, taken once. Entries are
/// JSON text ([`GuardEntry`], `Pending`).
pub trait SharedGuard: Send + Sync + std::fmt::Debug {
    /// Appends `entry` for every instance.
    fn publish<'a>(&'a self, entry: &'a str) -> BoxFuture<'a, Result<(), String>>;

    /// Every entry from the first, then each as it comes; an error ends
    /// it (followed again from the first: applying an entry twice does
    /// nothing more).
    fn follow(&self) -> Entries;

    /// Keeps `entry` under `token` for `ttl`.
    fn put_waiting<'a>(
        &'a self,
        token: &'a str,
        entry: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), String>>;

    /// The entry under `token`, once.
    fn take_waiting<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Option<String>, String>>;
}

/// One decision, as the instances share it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "entry", rename_all = "snake_case")]
pub enum GuardEntry {
    /// `caller` was granted `key` for always.
    Grant { caller: String, key: SharedKey },
    /// A 2026-07-28 caller (`holder`: its name and client's) was granted
    /// `key` for its session.
    SessionGrant { holder: String, key: SharedKey },
    /// A person approved the definition `text` of `key`'s item: pinned.
    Repin { key: SharedKey, text: String },
    /// An instance pinned the definition `text` of `key`'s item of server
    /// `server` as first seen.
    Pin {
        server: String,
        key: SharedKey,
        text: String,
    },
    /// A person trusted server `server` run as `identity`.
    Trust { server: String, identity: String },
}

/// A [`GrantKey`] as it travels.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedKey {
    server_identity: String,
    kind: String,
    name: String,
    definition: String,
}

impl From<&GrantKey> for SharedKey {
    fn from(key: &GrantKey) -> Self {
        SharedKey {
            server_identity: key.server_identity.clone(),
            kind: key.kind.to_owned(),
            name: key.name.clone(),
            definition: key.definition.clone(),
        }
    }
}

impl SharedKey {
    /// The key, where its kind is one this host knows.
    pub(crate) fn key(&self) -> Option<GrantKey> {
        let kind = match self.kind.as_str() {
            "tool" => "tool",
            "prompt" => "prompt",
            "resource" => "resource",
            _ => return None,
        };
        Some(GrantKey {
            server_identity: self.server_identity.clone(),
            kind,
            name: self.name.clone(),
            definition: self.definition.clone(),
        })
    }
}

/// Publishes `entry` in the background; a failure is logged (the
/// decision still holds here).
pub(crate) fn publish(shared: &Arc<dyn SharedGuard>, entry: GuardEntry) {
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let text = match serde_json::to_string(&entry) {
            Ok(text) => text,
            Err(error) => return tracing::warn!(%error, "a guard entry cannot be written"),
        };
        if let Err(error) = shared.publish(&text).await {
            tracing::warn!(%error, "a guard decision was not shared with the other instances");
        }
    });
}

/// Keeps `pending` under `token` for the other instances; whether they
/// have it.
pub(crate) async fn put_waiting(shared: &dyn SharedGuard, token: &str, pending: &Pending) -> bool {
    let Ok(text) = serde_json::to_string(pending) else {
        return false;
    };
    match shared.put_waiting(token, &text, super::PENDING_TTL).await {
        Ok(()) => true,
        Err(error) => {
            tracing::warn!(%error, "an approval round was not shared with the other instances");
            false
        }
    }
}

/// The round `token` names, kept by some instance; taken.
pub(crate) async fn take_waiting(shared: &dyn SharedGuard, token: &str) -> Option<Pending> {
    match shared.take_waiting(token).await {
        Ok(found) => found.and_then(|text| serde_json::from_str(&text).ok()),
        Err(error) => {
            tracing::warn!(%error, "the shared approval rounds cannot be read");
            None
        }
    }
}

/// The items whose first shared pin was applied, of one follow of the
/// log from its first entry: a later pin of one is kept only where this
/// instance has none.
pub(crate) type PinnedFromLog = std::collections::HashSet<(String, &'static str, String)>;

/// Applies an entry another instance (or this one) published: kept as
/// if made here. `store` keeps grants and pins, `trust` servers trusted
/// (where each is kept), `waiting` the 2026-07-28 callers' session
/// grants; the first pin of an item in the log is its pin everywhere.
/// The server whose lists must be checked against their pins again,
/// where a pin of this instance's was replaced.
pub(crate) fn apply(
    text: &str,
    (store, trust): (Option<&super::GuardStore>, Option<&super::GuardStore>),
    waiting: &super::Waiting,
    pinned: &mut PinnedFromLog,
) -> Option<String> {
    let entry: GuardEntry = match serde_json::from_str(text) {
        Ok(entry) => entry,
        Err(error) => {
            tracing::debug!(%error, "a shared guard entry this host cannot read");
            return None;
        }
    };
    let mut recheck = None;
    let kept = match &entry {
        GuardEntry::Grant { caller, key } => match (store, key.key()) {
            (Some(store), Some(key)) => store.grant(caller, &key),
            _ => Ok(()),
        },
        GuardEntry::SessionGrant { holder, key } => {
            if let Some(key) = key.key() {
                waiting.grants.grant(holder, key);
            }
            Ok(())
        }
        GuardEntry::Repin { key, text } => match (store, key.key()) {
            (Some(store), Some(key)) => store.repin(&key, text),
            _ => Ok(()),
        },
        GuardEntry::Pin { server, key, text } => match (store, key.key()) {
            (Some(store), Some(key)) => {
                let item = (key.server_identity.clone(), key.kind, key.name.clone());
                let first = pinned.insert(item);
                store.pin_shared(server, &key, text, first).map(|moved| {
                    if moved {
                        recheck = Some(server.clone());
                    }
                })
            }
            _ => Ok(()),
        },
        GuardEntry::Trust { server, identity } => match trust {
            Some(store) => store.trust(server, identity),
            None => Ok(()),
        },
    };
    if let Err(error) = kept {
        tracing::warn!(%error, "a shared guard decision cannot be kept here");
    }
    recheck
}
