//! The servers' lives as the host runs them: started (or held until a
//! person trusts them), reloaded from the config, restarted, disabled and
//! enabled again.

use std::sync::Arc;

use mcp_core::sync::MutexExt as _;

use super::{Host, HostEvent, Reloaded, read, write};
use crate::config::{HostConfig, ServerConfig};
use crate::upstream::{Signal, Upstream, UpstreamState};

impl Host {
    pub(super) fn add_upstream(&self, config: ServerConfig) {
        if config
            .secrets
            .is_some_and(|scan| scan != crate::secrets::SecretScan::Off)
        {
            self.inner
                .scans_secrets
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        for hint in &config.hints {
            tracing::warn!(server = %config.name, "{hint}");
        }
        let mut upstreams = write(&self.inner.upstreams);
        let index = upstreams.len();
        let upstream = Upstream::new(
            config,
            self.inner.options.supervisor.clone(),
            index,
            self.inner.signals.clone(),
            Arc::clone(&self.inner.starting),
            self.update_hook_caller(),
        );
        upstreams.push(Some(Arc::clone(&upstream)));
        self.inner.supervisors.locked().spawn(upstream.supervise());
    }

    /// Calls the resource update hook, if one is set, with the URI
    /// clients know for an upstream's update.
    pub(super) fn update_hook_caller(&self) -> crate::upstream::OnUpdate {
        let host = Arc::downgrade(&self.inner);
        Arc::new(move |index, notification| {
            let Some(inner) = host.upgrade() else { return };
            let Some(hook) = inner.update_hook.get() else {
                return;
            };
            let params = notification.params.as_deref().map(|p| p.get());
            let updated = params.and_then(|params| {
                serde_json::from_str::<mcp_schema::ResourceUpdatedNotificationParams>(params).ok()
            });
            if let Some(updated) = updated {
                hook(&read(&inner.catalog).exposed_uri(index, &updated.uri));
            }
        })
    }

    /// Applies a new config: servers added are started, removed ones
    /// stopped, changed ones restarted; the others are not touched. Clears
    /// the error of an earlier reload that failed. Returns what it did.
    pub fn reload(&self, config: HostConfig) -> Reloaded {
        let wanted: Vec<&ServerConfig> = config.enabled().collect();
        let before: Vec<ServerConfig> = self.upstreams().iter().map(|u| u.config.clone()).collect();
        let mut stopped = Vec::new();
        {
            let mut upstreams = write(&self.inner.upstreams);
            for slot in upstreams.iter_mut() {
                let keep = slot
                    .as_ref()
                    .is_some_and(|u| wanted.iter().any(|w| **w == u.config));
                if !keep && let Some(upstream) = slot.take() {
                    upstream.stop();
                    stopped.push(upstream.config.name.clone());
                }
            }
        }
        let held: Vec<ServerConfig> = {
            let mut untrusted = self.inner.untrusted.locked();
            untrusted.retain(|held| {
                let keep = wanted.iter().any(|w| **w == held.config);
                if !keep {
                    held.done.cancel();
                }
                keep
            });
            untrusted.iter().map(|held| held.config.clone()).collect()
        };
        let running: Vec<ServerConfig> =
            self.upstreams().iter().map(|u| u.config.clone()).collect();
        let mut started = Vec::new();
        let mut newly_held = Vec::new();
        // A server a person disabled stays so while its entry is there.
        let disabled: Vec<String> = {
            let mut disabled = self.inner.disabled.locked();
            disabled.retain(|d| wanted.iter().any(|w| w.name == d.name));
            for slot in disabled.iter_mut() {
                if let Some(now) = wanted.iter().find(|w| w.name == slot.name) {
                    *slot = (*now).clone();
                }
            }
            disabled.iter().map(|d| d.name.clone()).collect()
        };
        for server in wanted {
            if running.contains(server) || held.contains(server) || disabled.contains(&server.name)
            {
                continue;
            }
            let why = from_workspace(server).or_else(|| {
                if self.inner.options.trust.reloads {
                    return None;
                }
                match before.iter().find(|b| b.name == server.name) {
                    Some(before) if before.identity() == server.identity() => None,
                    Some(_) => Some("a reload changed its command line".to_owned()),
                    None => Some("a reload added it".to_owned()),
                }
            });
            if self.admit(server.clone(), why) {
                started.push(server.name.clone());
            } else {
                newly_held.push(server.name.clone());
            }
        }
        for problem in &config.problems {
            tracing::error!("{problem}; that server is not started");
        }
        *self.inner.order.locked() = config.servers.iter().map(|s| s.name.clone()).collect();
        *self.inner.problems.locked() = config.problems;
        *self.inner.reload_error.locked() = None;
        tracing::info!(?started, ?stopped, held = ?newly_held, "configuration reloaded");
        let _ = self.inner.signals.try_send((usize::MAX, Signal::Changed));
        Reloaded {
            started,
            stopped,
            held: newly_held,
        }
    }

    /// Starts `config`'s server, unless `why` says it waits for a person's
    /// trust and no approval of it is kept: then it is held, and the
    /// approvers are asked. Whether it started now.
    pub(super) fn admit(&self, config: ServerConfig, why: Option<String>) -> bool {
        let trust = &self.inner.options.trust;
        let Some(why) = why.filter(|_| !crate::trust::trusted(trust.store.as_deref(), &config))
        else {
            self.add_upstream(config);
            return true;
        };
        let held = crate::trust::Held::new(config, why);
        self.inner.untrusted.locked().push(Arc::clone(&held));
        let host = self.downgrade();
        tokio::spawn(crate::trust::ask(
            held,
            self.inner.options.consent.clone(),
            trust.store.clone(),
            move |held, always| {
                if let Some(host) = host.upgrade() {
                    host.release(held, always);
                }
            },
        ));
        false
    }

    /// Starts `held`, trusted now (unless a reload dropped it meanwhile);
    /// for `always`, the trust is kept (and shared with the other
    /// instances).
    pub(super) fn release(&self, held: &crate::trust::Held, always: bool) {
        let mut untrusted = self.inner.untrusted.locked();
        let Some(at) = untrusted.iter().position(|h| std::ptr::eq(&**h, held)) else {
            return;
        };
        let held = untrusted.remove(at);
        drop(untrusted);
        held.done.cancel();
        if always {
            let (server, identity) = (held.config.name.clone(), held.config.identity());
            if let Some(store) = &self.inner.options.trust.store
                && let Err(error) = store.trust(&server, &identity)
            {
                tracing::warn!(%error, "the trust cannot be kept; it holds until the host stops");
            }
            if let Some(shared) = self.shared_guard() {
                let entry = crate::consent::shared::GuardEntry::Trust { server, identity };
                crate::consent::shared::publish(shared, entry);
            }
        }
        self.add_upstream(held.config.clone());
        let _ = self.inner.signals.try_send((usize::MAX, Signal::Changed));
    }

    /// Trusts the held server named `name` (see [`crate::trust`]): kept in
    /// the guard's store where there is one, and started now.
    pub fn trust(&self, name: &str) -> Result<(), String> {
        let held = (self.inner.untrusted.locked())
            .iter()
            .find(|held| held.config.name == name)
            .cloned()
            .ok_or_else(|| format!("no server {name:?} waits for a person's trust"))?;
        tracing::info!(server = name, "trusted by hand");
        self.release(&held, true);
        Ok(())
    }

    /// The servers held until a person trusts them.
    pub fn untrusted(&self) -> Vec<crate::trust::Untrusted> {
        (self.inner.untrusted.locked())
            .iter()
            .map(|held| held.shown())
            .collect()
    }

    /// A new config could not be read: the running one is kept, and
    /// [`HostStatus::reload_error`](super::HostStatus::reload_error) says
    /// why until a reload succeeds.
    pub fn reload_failed(&self, error: String) {
        tracing::error!("configuration not reloaded: {error}");
        *self.inner.reload_error.locked() = Some(error);
    }

    /// Disables the running server named `name` until
    /// [`Host::enable`]: its connection is closed (a child process
    /// stopped) and its tools, prompts and resources leave the catalog. A
    /// reload keeps it disabled while its entry is in the config.
    pub fn disable(&self, name: &str) -> Result<(), String> {
        let upstream = {
            let mut upstreams = write(&self.inner.upstreams);
            let slot = upstreams
                .iter_mut()
                .find(|slot| slot.as_ref().is_some_and(|u| u.name() == name));
            match slot {
                Some(slot) => slot.take(),
                None => None,
            }
        };
        let Some(upstream) = upstream else {
            return Err(format!("no server {name:?} is running"));
        };
        upstream.stop();
        self.inner.disabled.locked().push(upstream.config.clone());
        tracing::info!(server = name, "disabled");
        let _ = self.inner.events.send(HostEvent::UpstreamState {
            server: name.to_owned(),
            state: UpstreamState::Stopped,
        });
        let _ = self.inner.signals.try_send((usize::MAX, Signal::Changed));
        Ok(())
    }

    /// Starts again the server named `name` that [`Host::disable`]
    /// disabled.
    pub fn enable(&self, name: &str) -> Result<(), String> {
        let config = {
            let mut disabled = self.inner.disabled.locked();
            let at = disabled
                .iter()
                .position(|d| d.name == name)
                .ok_or_else(|| format!("no server {name:?} is disabled"))?;
            disabled.remove(at)
        };
        tracing::info!(server = name, "enabled");
        self.add_upstream(config);
        let _ = self.inner.signals.try_send((usize::MAX, Signal::Changed));
        Ok(())
    }

    /// The config entry of server `name`: running, disabled or held for
    /// trust.
    pub fn server_config(&self, name: &str) -> Option<ServerConfig> {
        let running = self.upstreams().into_iter().find(|u| u.name() == name);
        if let Some(upstream) = running {
            return Some(upstream.config.clone());
        }
        let disabled = self.inner.disabled.locked();
        if let Some(config) = disabled.iter().find(|d| d.name == name) {
            return Some(config.clone());
        }
        drop(disabled);
        (self.inner.untrusted.locked())
            .iter()
            .find(|held| held.config.name == name)
            .map(|held| held.config.clone())
    }

    /// The servers a person disabled, by name.
    pub fn disabled(&self) -> Vec<String> {
        (self.inner.disabled.locked())
            .iter()
            .map(|d| d.name.clone())
            .collect()
    }

    /// Restarts the server named `name` in the config: its connection is
    /// closed and a new one made at once (see [`Upstream::restart`]).
    pub fn restart(&self, name: &str) -> Result<(), String> {
        let upstream = self.upstreams().into_iter().find(|u| u.name() == name);
        match upstream {
            Some(upstream) => {
                upstream.restart();
                Ok(())
            }
            None => Err(format!("no server {name:?} in the config")),
        }
    }
}

/// Why `server` waits for a person's trust at start: it comes from a
/// workspace's files.
pub(super) fn from_workspace(server: &ServerConfig) -> Option<String> {
    server.workspace.then(|| {
        format!(
            "it comes from the workspace file {}",
            server.source.display()
        )
    })
}
