//! Server trust: a person approves a server's exact command line (or
//! URL) before the host runs it, where the operator did not vouch for it:
//! it comes from a workspace's files (`.vscode/mcp.json`,
//! `.cursor/mcp.json`: whoever wrote the repository chose it), or a
//! reload added it or changed its command line ([`TrustOptions::reloads`]
//! off).
//!
//! Such a server is held, not started, and listed as untrusted in the
//! status with its command line and why. The approvers of `[guard]
//! approvers` (all but `client`: no call is in flight) are asked as soon
//! as one is reachable; "always" keeps the approval in the guard's store,
//! bound to the server's name and command line, so the next start does
//! not ask again; once or for the session runs it this time. A refusal
//! leaves it held. [`crate::Host::trust`] (the admin listener's `POST
//! /servers/NAME/trust`, `mcp host trust NAME`) approves it by hand.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::consent::{ApprovalRequest, GuardStore, Scope};
use crate::policy::Kind;

/// How servers the operator did not vouch for are treated.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TrustOptions {
    /// Whether the servers a reload adds, or whose command line it
    /// changes, run without a person's approval (the operator manages the
    /// files: `--trust-config`).
    pub reloads: bool,
    /// Where approvals for always are kept (the guard's store); without
    /// one, an approval holds until the host stops.
    pub store: Option<Arc<GuardStore>>,
}

impl Default for TrustOptions {
    /// Reloads trusted (an embedding application vouches for what it
    /// gives the host), no store.
    fn default() -> Self {
        TrustOptions {
            reloads: true,
            store: None,
        }
    }
}

/// A server held until a person trusts it, as the status shows it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Untrusted {
    /// The config entry's name.
    pub name: String,
    /// Its exact command line, or its URL.
    pub identity: String,
    /// Why it waits for a person.
    pub reason: String,
    /// Whether a person refused it.
    pub denied: bool,
}

/// A server held until a person trusts it.
pub(crate) struct Held {
    pub(crate) config: ServerConfig,
    reason: String,
    denied: AtomicBool,
    /// Ends the asking (the server was trusted, or is gone).
    pub(crate) done: CancellationToken,
}

impl Held {
    pub(crate) fn new(config: ServerConfig, reason: String) -> Arc<Held> {
        Arc::new(Held {
            config,
            reason,
            denied: AtomicBool::new(false),
            done: CancellationToken::new(),
        })
    }

    /// As the status shows it.
    pub(crate) fn shown(&self) -> Untrusted {
        Untrusted {
            name: self.config.name.clone(),
            identity: self.config.identity(),
            reason: self.reason.clone(),
            denied: self.denied.load(Ordering::Relaxed),
        }
    }

    /// What a person is asked.
    fn request(&self) -> ApprovalRequest {
        let mut request = ApprovalRequest::new(&self.config.name, Kind::Server, &self.config.name);
        request.server_identity = self.config.identity();
        request.reason = self.reason.clone();
        request.caller = "the host".into();
        request
    }
}

/// Whether `store` holds a person's approval of `config` as it is now.
pub(crate) fn trusted(store: Option<&GuardStore>, config: &ServerConfig) -> bool {
    store.is_some_and(|store| {
        store
            .trusts(&config.name, &config.identity())
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "server trust cannot be read; the server waits");
                false
            })
    })
}

/// How long to wait before asking again after no approver could be
/// reached, and after no one answered.
const RETRY: Duration = Duration::from_secs(2);
const AFTER_SILENCE: Duration = Duration::from_secs(60);

/// Asks the approvers about `held` until one approves it (then
/// `release` runs it, told whether the approval is for always), or it is
/// done. Between tries it looks for an
/// approval kept meanwhile (`mcp host trust`, another instance).
pub(crate) async fn ask(
    held: Arc<Held>,
    consent: crate::consent::ConsentOptions,
    store: Option<Arc<GuardStore>>,
    release: impl Fn(&Held, bool) + Send + 'static,
) {
    let request = held.request();
    tracing::warn!(
        server = %held.config.name,
        "not started until a person trusts it ({}): {}",
        held.reason,
        held.config.identity()
    );
    loop {
        if held.done.is_cancelled() {
            return;
        }
        if trusted(store.as_deref(), &held.config) {
            release(&held, false);
            return;
        }
        let mut wait = RETRY;
        if !held.denied.load(Ordering::Relaxed) {
            let approvers = consent.order.iter().filter_map(|name| {
                consent
                    .registered
                    .iter()
                    .find(|a| a.name() == name && a.reachable())
            });
            for approver in approvers {
                let asked = tokio::select! {
                    answer = tokio::time::timeout(consent.timeout, approver.ask(&request)) => answer,
                    _ = held.done.cancelled() => return,
                };
                match asked {
                    Ok(Ok(approval)) if approval.allowed => {
                        tracing::info!(server = %held.config.name, approver = approver.name(), "trusted by a person");
                        release(&held, approval.scope == Scope::Always);
                        return;
                    }
                    Ok(Ok(_)) => {
                        tracing::warn!(server = %held.config.name, approver = approver.name(), "a person refused to run it");
                        held.denied.store(true, Ordering::Relaxed);
                        break;
                    }
                    Ok(Err(error)) => {
                        tracing::debug!(approver = approver.name(), %error, "could not be asked");
                    }
                    Err(_) => {
                        wait = AFTER_SILENCE;
                        break;
                    }
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = held.done.cancelled() => return,
        }
    }
}
