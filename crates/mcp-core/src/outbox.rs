//! Notifications gathered while a lock is held and sent once it is let go.
//!
//! A server or a gateway that tells its sessions of a change walks its
//! table of sessions under a lock. Sending from inside that walk could
//! reach back into the same table (a transport that finds its session
//! closed), so the notifications are gathered in an [`Outbox`] and sent
//! after it, each with [`Peer::notify_detached_holding`]: in order with
//! what each session sends next, such as the answer of the request that
//! raised the change.

use serde::Serialize;
use serde_json::value::RawValue;

use crate::peer::Peer;

/// Notifications to send, each to its session, with a guard each keeps
/// until its transport has taken it (see
/// [`Peer::notify_detached_holding`]; `()` for none).
#[must_use = "nothing is sent until `send` is called"]
pub struct Outbox<G: Send + 'static = ()> {
    notes: Vec<(Peer, &'static str, Box<RawValue>, G)>,
}

impl<G: Send + 'static> Default for Outbox<G> {
    fn default() -> Self {
        Outbox { notes: Vec::new() }
    }
}

impl<G: Send + 'static> Outbox<G> {
    /// An empty outbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `method` with `params` for `peer`, holding `held` until it is
    /// sent; params that cannot be written as JSON are left out.
    pub fn push<P: Serialize + ?Sized>(
        &mut self,
        peer: &Peer,
        method: &'static str,
        params: &P,
        held: G,
    ) {
        match mcp_schema::jsonrpc::to_raw(params) {
            Ok(params) => self.notes.push((peer.clone(), method, params, held)),
            Err(error) => tracing::warn!(method, %error, "a notification cannot be written"),
        }
    }

    /// Sends every notification, in the order added.
    pub fn send(self) {
        for (peer, method, params, held) in self.notes {
            peer.notify_detached_holding(method, Some(&params), held);
        }
    }
}
