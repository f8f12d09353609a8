//! Notifications to clients: resource updates to their subscribers, list
//! changes, and the `subscriptions/listen` streams of 2026-07-28.

use super::*;

impl Server {
    /// Every resource URI some client is subscribed to now: by a legacy
    /// session's `resources/subscribe`, or a `subscriptions/listen` stream.
    pub fn subscribed_resources(&self) -> BTreeSet<String> {
        let mut uris = BTreeSet::new();
        for (peer, _) in self.inner.sessions.locked().values() {
            uris.extend(ResourceSubscriptions::of(peer.extensions()));
        }
        for listener in self.inner.listeners.locked().values() {
            uris.extend(listener.filter.resources().cloned());
        }
        uris
    }

    /// Runs the subscriptions hook, if there is one.
    pub(super) fn subscriptions_changed(&self) {
        if let Some(hook) = &self.inner.on_subscriptions {
            (hook.0)(self);
        }
    }

    /// Tells every client subscribed to `uri` that it changed, here and,
    /// where a broadcast is set, on every other instance.
    pub fn notify_resource_updated(&self, uri: &str) {
        self.resource_updated_here(uri);
        self.broadcast(&ServerEvent::ResourceUpdated {
            uri: uri.to_owned(),
        });
    }

    /// Hands `event` to the broadcast, if one is set.
    fn broadcast(&self, event: &ServerEvent) {
        if let Some(broadcast) = self.inner.broadcast.get() {
            (broadcast.0)(event);
        }
    }

    /// Sends every server-wide change raised here to `broadcast` too, for
    /// the other instances of this server that serve the same clients
    /// (behind one load balancer); they pass what they receive to
    /// [`Server::raise_here`]. Set once; later calls are ignored.
    pub fn set_broadcast(&self, broadcast: impl Fn(&ServerEvent) + Send + Sync + 'static) {
        let _ = self.inner.broadcast.set(Broadcast(Arc::new(broadcast)));
    }

    /// Tells this instance's clients of a change raised on another
    /// instance, without broadcasting it again.
    pub fn raise_here(&self, event: &ServerEvent) {
        match event {
            ServerEvent::ResourceUpdated { uri } => self.resource_updated_here(uri),
            ServerEvent::ToolsListChanged => self.list_changed_here(ListKind::Tools),
            ServerEvent::ResourcesListChanged => self.list_changed_here(ListKind::Resources),
            ServerEvent::PromptsListChanged => self.list_changed_here(ListKind::Prompts),
        }
    }

    /// Each update is told on its own (a subscriber may count them; a
    /// gateway passes each on): only subscribed clients get them.
    fn resource_updated_here(&self, uri: &str) {
        let params = ResourceUpdatedNotificationParams::new(uri);
        let method = methods::NOTIFICATION_RESOURCES_UPDATED;
        let mut outbox = Outbox::new();
        for (peer, _) in self.inner.sessions.locked().values() {
            if ResourceSubscriptions::includes(peer.extensions(), uri) {
                outbox.push(peer, method, &params, ());
            }
        }
        for listener in self.inner.listeners.locked().values() {
            if listener.filter.wants_resource(uri) {
                let mut params = params.clone();
                params.meta = Some(subscription_meta(&listener.id));
                outbox.push(&listener.peer, method, &params, ());
            }
        }
        outbox.send();
    }

    pub(super) fn list_changed(&self, kind: ListKind) {
        self.list_changed_here(kind);
        self.broadcast(&match kind {
            ListKind::Tools => ServerEvent::ToolsListChanged,
            ListKind::Resources => ServerEvent::ResourcesListChanged,
            ListKind::Prompts => ServerEvent::PromptsListChanged,
        });
    }

    fn list_changed_here(&self, kind: ListKind) {
        let method = match kind {
            ListKind::Tools => methods::NOTIFICATION_TOOLS_LIST_CHANGED,
            ListKind::Resources => methods::NOTIFICATION_RESOURCES_LIST_CHANGED,
            ListKind::Prompts => methods::NOTIFICATION_PROMPTS_LIST_CHANGED,
        };
        let mut outbox = Outbox::new();
        for (peer, waiting) in self.inner.sessions.locked().values() {
            if let Some(claim) = waiting.claim_list(kind) {
                outbox.push(peer, method, &NotificationParams::default(), claim);
            }
        }
        for listener in self.inner.listeners.locked().values() {
            let wanted = match kind {
                ListKind::Tools => listener.filter.tools_list_changed,
                ListKind::Resources => listener.filter.resources_list_changed,
                ListKind::Prompts => listener.filter.prompts_list_changed,
            };
            if wanted == Some(true)
                && let Some(claim) = listener.waiting.claim_list(kind)
            {
                let params = NotificationParams {
                    meta: Some(subscription_meta(&listener.id)),
                };
                outbox.push(&listener.peer, method, &params, claim);
            }
        }
        outbox.send();
    }

    pub(super) async fn listen(
        &self,
        params: SubscriptionsListenRequestParams,
        ctx: RequestContext,
    ) -> HandlerResult {
        let requested = params.notifications;
        if requested.task_ids.is_some() && !declares_tasks_extension(ctx.client_capabilities()) {
            return Err(tasks_extension_required("notifications about tasks"));
        }
        // Everything this server can notify about is honoured.
        let agreed = requested.clone();
        let mut ack = SubscriptionsAcknowledgedNotificationParams {
            notifications: agreed.clone(),
            ..Default::default()
        };
        ack.meta = Some(subscription_meta(&ctx.id));
        ctx.peer
            .notify(methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, &ack)
            .await
            .map_err(ErrorObject::internal)?;
        let key = self.inner.next_listener.fetch_add(1, Ordering::Relaxed);
        let names_resources = agreed.resources().next().is_some();
        self.inner.listeners.locked().insert(
            key,
            Listener {
                peer: ctx.peer.clone(),
                id: ctx.id.clone(),
                filter: agreed,
                waiting: Arc::default(),
            },
        );
        if names_resources {
            self.subscriptions_changed();
        }
        let _unregister = Unregister {
            server: self.clone(),
            key,
            names_resources,
        };
        // The stream lasts until the client cancels it or goes away; the
        // engine then drops this future, which unregisters the listener.
        std::future::pending::<()>().await;
        unreachable!("a pending future never completes")
    }
}
