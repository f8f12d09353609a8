//! Per-caller isolation: a server whose entry says `"isolation":
//! "per-caller"` gets a connection of each caller's own, so that a
//! stateful server (a memory, a browser, a shell) and its requests back
//! (sampling, elicitation, roots, log messages, resource updates) are
//! never crossed between users.
//!
//! The caller is the OAuth principal (its issuer and subject, or its
//! client where the token names no subject); without OAuth, each legacy
//! session is a caller of its own, and 2026-07-28 requests without a
//! token are one caller, `anonymous`. Each caller's connection is started
//! on its first request, kept while used, and closed when idle
//! (`[servers] caller_idle`); a server has at most `[servers]
//! max_callers` of them, the least recently used idle one making room for
//! a new caller. The shared connection stays: it lists the server's
//! tools, prompts and resources for the catalog, and is health-checked
//! and restarted as for any server.
//!
//! `${caller}` in the entry's command line, environment, working folder,
//! URL or headers is each connection's caller key: letters, digits, `-`
//! and `_` only, unique per caller (`shared` on the shared connection).
//! `"env": {"MEMORY_FILE_PATH": "/var/lib/mcp/memory-${caller}.json"}`
//! gives each user a memory of their own. A caller's connection to a
//! remote server carries the entry's own headers (with `${caller}` filled
//! in), never the credentials the host signed in with for the shared
//! connection: those are the operator's.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_core::RequestContext;
use sha2::Digest as _;

/// The caller key of a session's requests to per-caller servers, kept in
/// the session's extensions: notifications of a caller's connection go
/// only to the sessions that carry its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallerKey(pub(crate) Arc<str>);

/// A legacy session's number, for the key of a caller without a token.
struct SessionNumber(u64);

/// The caller key of `ctx`'s request.
pub(crate) fn key_of(ctx: &RequestContext) -> Arc<str> {
    if let Some(principal) = mcp_auth::Principal::of(ctx) {
        let issuer = principal
            .claims
            .get("iss")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        return match (&principal.subject, &principal.client_id) {
            (Some(subject), _) => keyed("user", subject, issuer),
            (None, Some(client)) => keyed("client", client, issuer),
            (None, None) => "token".into(),
        };
    }
    if ctx.revision.is_legacy() {
        static SESSIONS: AtomicU64 = AtomicU64::new(0);
        let number = ctx
            .peer
            .extensions()
            .get_or_insert_with(|| SessionNumber(SESSIONS.fetch_add(1, Ordering::Relaxed) + 1));
        return format!("session-{}", number.0).into();
    }
    "anonymous".into()
}

/// `kind-NAME-HASH`: the name's safe characters (at most 32), and a hash
/// of the name and the issuer, so that names alike once made safe, or
/// the same name from two issuers, stay apart.
fn keyed(kind: &str, name: &str, issuer: &str) -> Arc<str> {
    let safe: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(32)
        .collect();
    let digest = sha2::Sha256::digest(format!("{issuer}\u{0}{name}").as_bytes());
    let hash: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{kind}-{safe}-{hash}").into()
}

/// Marks the session of `ctx` as `key`'s, for the notifications of its
/// connections.
pub(crate) fn mark_session(ctx: &RequestContext, key: &Arc<str>) {
    let marked = ctx
        .peer
        .extensions()
        .get_or_insert_with(|| CallerKey(Arc::clone(key)));
    if marked.0 != *key {
        ctx.peer.extensions().insert(CallerKey(Arc::clone(key)));
    }
}

/// Whether `peer`'s session belongs to caller `only` (any session, where
/// `only` is `None`).
pub(crate) fn belongs(peer: &mcp_core::Peer, only: Option<&str>) -> bool {
    only.is_none_or(|key| {
        peer.extensions()
            .get::<CallerKey>()
            .is_some_and(|marked| &*marked.0 == key)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_safe_and_apart() {
        let alice = keyed("user", "alice", "https://a");
        assert!(alice.starts_with("user-alice-"), "{alice}");
        assert_eq!(alice.len(), "user-alice-".len() + 8);
        assert_ne!(alice, keyed("user", "alice", "https://b"));
        let odd = keyed("user", "../../etc/passwd", "");
        assert!(
            odd.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "{odd}"
        );
        assert_ne!(keyed("user", "a/b", ""), keyed("user", "ab", ""));
    }
}
