//! The host's clients (downstream): legacy sessions, which are sent
//! notifications unasked, and 2026-07-28 `subscriptions/listen` streams,
//! which get what they asked for. Fan-out of list changes, resource
//! updates and log messages.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcp_core::{Outbox, Peer, ResourceSubscriptions, SessionLogLevel};
use mcp_schema::jsonrpc::RequestId;
use mcp_schema::{LoggingLevel, SubscriptionFilter, methods, subscription_meta};
use serde_json::{Value, json};

use crate::views::View;
use mcp_core::sync::MutexExt as _;

/// Which list changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `resources/list` (and templates).
    Resources,
    /// `prompts/list`.
    Prompts,
}

impl ListKind {
    fn method(self) -> &'static str {
        match self {
            ListKind::Tools => methods::NOTIFICATION_TOOLS_LIST_CHANGED,
            ListKind::Resources => methods::NOTIFICATION_RESOURCES_LIST_CHANGED,
            ListKind::Prompts => methods::NOTIFICATION_PROMPTS_LIST_CHANGED,
        }
    }

    fn wanted(self, filter: &SubscriptionFilter) -> bool {
        let wanted = match self {
            ListKind::Tools => filter.tools_list_changed,
            ListKind::Resources => filter.resources_list_changed,
            ListKind::Prompts => filter.prompts_list_changed,
        };
        wanted == Some(true)
    }
}

struct Listener {
    peer: Peer,
    id: RequestId,
    filter: SubscriptionFilter,
    /// The view it listens through, if any.
    view: Option<Arc<View>>,
}

/// Every downstream client the host can notify.
#[derive(Default)]
pub(crate) struct Downstream {
    sessions: Mutex<HashMap<usize, Peer>>,
    /// The view of each session opened on one.
    views: Mutex<HashMap<usize, Arc<View>>>,
    listeners: Mutex<(u64, HashMap<u64, Listener>)>,
}

/// Unregisters a listen stream when its request ends.
pub(crate) struct ListenerGuard<'a> {
    downstream: &'a Downstream,
    key: u64,
}

impl Drop for ListenerGuard<'_> {
    fn drop(&mut self) {
        self.downstream.listeners.locked().1.remove(&self.key);
    }
}

impl Downstream {
    pub(crate) fn session_ready(&self, peer: &Peer, view: Option<Arc<View>>) {
        self.sessions
            .locked()
            .insert(peer.session_key(), peer.clone());
        if let Some(view) = view {
            self.views.locked().insert(peer.session_key(), view);
        }
    }

    pub(crate) fn session_closed(&self, peer: &Peer) {
        self.sessions.locked().remove(&peer.session_key());
        self.views.locked().remove(&peer.session_key());
    }

    /// How many legacy sessions and listen streams are open.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (
            self.sessions.locked().len(),
            self.listeners.locked().1.len(),
        )
    }

    pub(crate) fn listen(
        &self,
        peer: &Peer,
        id: &RequestId,
        filter: SubscriptionFilter,
        view: Option<Arc<View>>,
    ) -> ListenerGuard<'_> {
        let mut listeners = self.listeners.locked();
        listeners.0 += 1;
        let key = listeners.0;
        listeners.1.insert(
            key,
            Listener {
                peer: peer.clone(),
                id: id.clone(),
                filter,
                view,
            },
        );
        ListenerGuard {
            downstream: self,
            key,
        }
    }

    /// Tells every client that `kind` changed, but those on a view the
    /// change does not `affect`.
    pub(crate) fn list_changed(&self, kind: ListKind, affects: &dyn Fn(&View) -> bool) {
        let mut outbox = Outbox::new();
        let views = self.views.locked();
        for (key, peer) in self.sessions.locked().iter() {
            if views.get(key).is_none_or(|view| affects(view)) {
                outbox.push(peer, kind.method(), &json!({}), ());
            }
        }
        drop(views);
        for listener in self.listeners.locked().1.values() {
            if kind.wanted(&listener.filter) && listener.view.as_deref().is_none_or(affects) {
                let params = json!({ "_meta": subscription_meta(&listener.id) });
                outbox.push(&listener.peer, kind.method(), &params, ());
            }
        }
        outbox.send();
    }

    /// Tells the clients subscribed to exposed `uri` that it changed.
    /// Where `only` names a caller (see [`crate::isolation`]), only its
    /// sessions are told.
    pub(crate) fn resource_updated(
        &self,
        uri: &str,
        mut params: serde_json::Map<String, Value>,
        only: Option<&str>,
    ) {
        params.insert("uri".into(), Value::String(uri.to_owned()));
        let mut outbox = Outbox::new();
        for peer in self.sessions.locked().values() {
            let subscribed = crate::isolation::belongs(peer, only)
                && ResourceSubscriptions::includes(peer.extensions(), uri);
            if subscribed {
                outbox.push(peer, methods::NOTIFICATION_RESOURCES_UPDATED, &params, ());
            }
        }
        outbox.send();
        self.resource_updated_to_listeners(&params, only);
    }

    /// Tells the 2026-07-28 listen streams that asked for resource
    /// `params.uri` that it changed.
    pub(crate) fn resource_updated_to_listeners(
        &self,
        params: &serde_json::Map<String, Value>,
        only: Option<&str>,
    ) {
        let Some(uri) = params.get("uri").and_then(Value::as_str) else {
            return;
        };
        let mut outbox = Outbox::new();
        for listener in self.listeners.locked().1.values() {
            let wanted = crate::isolation::belongs(&listener.peer, only)
                && listener.filter.wants_resource(uri);
            if wanted {
                let mut params = params.clone();
                let meta = subscription_meta(&listener.id);
                params.insert("_meta".into(), Value::Object(meta));
                let method = methods::NOTIFICATION_RESOURCES_UPDATED;
                outbox.push(&listener.peer, method, &params, ());
            }
        }
        outbox.send();
    }

    /// Sends a server's log message to the one client with a call in
    /// flight on it (`callers`): a server on a shared connection does not
    /// say which call a message belongs to, so with several calls in flight
    /// it goes to none of them, rather than to a client it may not concern.
    /// With no call in flight, it goes to every legacy session, as a direct
    /// connection to the server would: from the level a session chose with
    /// `logging/setLevel`, and all of them to a session that chose none (the
    /// server's own default applies). A 2026-07-28 client's level was sent
    /// with its request; it hears messages only within its calls. Where
    /// `only` names a caller (see [`crate::isolation`]), only its sessions
    /// are told.
    pub(crate) fn log_message(&self, callers: Vec<Peer>, params: &Value, only: Option<&str>) {
        let level: Option<LoggingLevel> = params
            .get("level")
            .and_then(|l| serde_json::from_value(l.clone()).ok());
        let chosen = |peer: &Peer| SessionLogLevel::of(peer.extensions());
        let targets: Vec<Peer> = match callers.len() {
            0 => (self.sessions.locked().values())
                .filter(|peer| crate::isolation::belongs(peer, only))
                .cloned()
                .collect(),
            1 => callers,
            _ => {
                tracing::debug!("a log message with several calls in flight is not passed on");
                return;
            }
        };
        let mut outbox = Outbox::new();
        for peer in targets {
            let send = match (chosen(&peer), level) {
                (Some(min), Some(level)) => level >= min,
                (None, _) => true,
                (Some(_), None) => false,
            };
            if send {
                outbox.push(&peer, methods::NOTIFICATION_MESSAGE, params, ());
            }
        }
        outbox.send();
    }
}
