//! What runs beside the host: the loop that keeps the catalog and the
//! clients in step with the upstreams, the shared guard's follower, and
//! the rate limits' forgetting of quiet callers.

use std::sync::Arc;
use std::time::Duration;

use mcp_schema::jsonrpc::Notification;
use mcp_schema::methods;
use serde_json::Value;
use tokio::sync::mpsc;

use super::{HostEvent, Inner, WeakHost, read, write};
use crate::catalog::Source;
use crate::downstream::ListKind;
use crate::upstream::{Signal, UpstreamState};

/// Every minute while the host runs, the rate limits forget the budgets
/// that are full again (callers gone quiet).
pub(super) async fn forget_idle_budgets(host: WeakHost) {
    let mut every = tokio::time::interval(Duration::from_secs(60));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let Some(host) = host.upgrade() else { return };
        host.limits().forget_idle();
    }
}

/// Applies the guard's decisions the other instances share, for as long
/// as the host runs; a broken follow is taken up again from the first
/// entry after a second.
pub(super) async fn follow_shared_guard(
    host: WeakHost,
    mut entries: crate::consent::shared::Entries,
) {
    use futures::StreamExt as _;
    let mut pinned = crate::consent::shared::PinnedFromLog::default();
    loop {
        let Some(next) = entries.next().await else {
            return;
        };
        let Some(live) = host.upgrade() else { return };
        match next {
            Ok(text) => {
                let (consent, waiting) = live.consent();
                let pins = live.inner.options.supervisor.pins.as_deref();
                let recheck = crate::consent::shared::apply(
                    &text,
                    (
                        consent.store.as_deref().or(pins),
                        live.inner.options.trust.store.as_deref(),
                    ),
                    waiting,
                    &mut pinned,
                );
                let upstreams = live.upstreams();
                let server = recheck.and_then(|name| upstreams.iter().find(|u| u.name() == name));
                if let Some(upstream) = server {
                    upstream.recheck_pins();
                }
            }
            Err(error) => {
                tracing::warn!(%error, "the shared guard decisions cannot be read; trying again");
                let Some(shared) = live.shared_guard().cloned() else {
                    return;
                };
                drop(live);
                tokio::time::sleep(Duration::from_secs(1)).await;
                pinned.clear();
                entries = shared.follow();
            }
        }
    }
}

/// Rebuilds the catalog from the upstreams as they are now; returns, for
/// each kind of list, the upstreams whose part of it changed.
pub(super) fn rebuild(inner: &Inner) -> [(ListKind, std::collections::BTreeSet<usize>); 3] {
    let sources: Vec<Source> = read(&inner.upstreams)
        .iter()
        .flatten()
        .map(|u| Source {
            index: u.index(),
            name: u.config.name.clone(),
            namespace: u.config.namespace.clone(),
            listing: u.listing(),
        })
        .collect();
    let before = Arc::clone(&read(&inner.catalog));
    let fresh = before.update(&sources);
    for collision in &fresh.collisions {
        tracing::warn!("name collision: {collision}");
    }
    let mut slot = write(&inner.catalog);
    let changed = [ListKind::Tools, ListKind::Resources, ListKind::Prompts]
        .map(|kind| (kind, slot.changed_upstreams(&fresh, kind)));
    *slot = Arc::new(fresh);
    changed
}

/// Keeps the catalog and the clients in step with the upstreams.
pub(super) async fn signal_loop(
    host: std::sync::Weak<Inner>,
    mut signals: mpsc::Receiver<(usize, Signal)>,
) {
    let mut states: Vec<(String, UpstreamState)> = Vec::new();
    while let Some(first) = signals.recv().await {
        let Some(inner) = host.upgrade() else { return };
        let mut changed = false;
        let mut notifications = Vec::new();
        let mut faults = Vec::new();
        for (index, signal) in
            std::iter::once(first).chain(std::iter::from_fn(|| signals.try_recv().ok()))
        {
            match signal {
                Signal::Changed => changed = true,
                Signal::Notification(n) => notifications.push((index, n, None)),
                Signal::OfCaller(key, n, peers) => {
                    notifications.push((index, n, Some((key, peers))));
                }
                Signal::Fault(error) => faults.push((index, error)),
            }
        }
        for (index, error) in faults {
            if let Some(upstream) = read(&inner.upstreams).get(index).cloned().flatten() {
                let server = upstream.config.name.clone();
                let _ = inner
                    .events
                    .send(HostEvent::UpstreamFault { server, error });
            }
        }
        if changed {
            let lists = rebuild(&inner);
            let names = read(&inner.upstreams)
                .iter()
                .map(|u| u.as_ref().map(|u| u.config.name.clone()))
                .collect::<Vec<_>>();
            for (kind, upstreams) in &lists {
                if upstreams.is_empty() {
                    continue;
                }
                // A view hears of a change of its servers' lists (or of a
                // server that is gone, whatever its name was).
                let affects = |view: &crate::views::View| {
                    upstreams.iter().any(|index| {
                        names
                            .get(*index)
                            .cloned()
                            .flatten()
                            .is_none_or(|name| view.has_server(&name))
                    })
                };
                inner.downstream.list_changed(*kind, &affects);
            }
            let [tools, resources, prompts] = lists.map(|(_, upstreams)| !upstreams.is_empty());
            if tools || resources || prompts {
                let _ = inner.events.send(HostEvent::CatalogChanged {
                    tools,
                    resources,
                    prompts,
                });
            }
            let now: Vec<(String, UpstreamState)> = read(&inner.upstreams)
                .iter()
                .flatten()
                .map(|u| (u.config.name.clone(), u.status().state))
                .collect();
            for (server, state) in &now {
                if !states.contains(&(server.clone(), *state)) {
                    let _ = inner.events.send(HostEvent::UpstreamState {
                        server: server.clone(),
                        state: *state,
                    });
                }
            }
            states = now;
        }
        for (index, notification, of_caller) in notifications {
            pass_on(&inner, index, notification, of_caller);
        }
    }
}

/// Passes an upstream's notification to the clients it concerns: where
/// it came from one caller's own connection, to that caller's sessions
/// only (the peers of its calls in flight, its key).
fn pass_on(
    inner: &Inner,
    index: usize,
    notification: Notification,
    of_caller: Option<(Arc<str>, Vec<mcp_core::Peer>)>,
) {
    let only = of_caller.as_ref().map(|(key, _)| &**key);
    let params: Value = notification
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or(Value::Null);
    let Some(upstream) = read(&inner.upstreams).get(index).cloned().flatten() else {
        return;
    };
    match notification.method.as_str() {
        methods::NOTIFICATION_RESOURCES_UPDATED => {
            let Some(Value::Object(mut params)) = Some(params) else {
                return;
            };
            params.remove("_meta");
            let Some(uri) = params.get("uri").and_then(Value::as_str).map(str::to_owned) else {
                return;
            };
            // The update hook was told as the notification was read.
            let exposed = read(&inner.catalog).exposed_uri(index, &uri);
            inner.downstream.resource_updated(&exposed, params, only);
        }
        methods::NOTIFICATION_MESSAGE => {
            let mut params = params;
            if let Some(object) = params.as_object_mut() {
                object.remove("_meta");
                // Whose message it is, when the server named no logger.
                object
                    .entry("logger")
                    .or_insert_with(|| Value::String(upstream.config.name.clone()));
            }
            let callers = match &of_caller {
                Some((_, peers)) => peers.clone(),
                None => upstream.caller_peers(),
            };
            inner.downstream.log_message(callers, &params, only);
        }
        _ => {}
    }
}
