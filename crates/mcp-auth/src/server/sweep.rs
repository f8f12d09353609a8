//! The periodic sweep: expired logins, codes, tokens and assertion ids,
//! registered clients never used within their lifetime, the rate
//! limiters' idle entries, stale fetched documents, and the file pages
//! all that freed.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{AuthServerError, AuthorizationServer, util};
use mcp_core::sync::MutexExt as _;

impl AuthorizationServer {
    /// Deletes what has run out: expired pending logins, codes, refresh
    /// tokens and client assertion ids; dynamically registered clients
    /// never used (no authorization approved, no token issued) and
    /// registered at least `unused_client_lifetime` ago; the rate
    /// limiters' entries that have fully replenished; stale cached client
    /// documents and key sets. Runs every `sweep_interval` on its own once
    /// [`router`](Self::router) was called inside a Tokio runtime; call it
    /// directly to sweep now. Returns how many clients were deleted.
    pub fn sweep(&self) -> Result<usize, AuthServerError> {
        let inner = &self.inner;
        inner.store.purge_expired()?;
        let unused_since = util::now() - inner.config.unused_client_lifetime.as_secs() as i64;
        let deleted = inner.store.delete_unused_clients(unused_since)?;
        if deleted > 0 {
            tracing::info!(
                deleted,
                "authorization server: unused registered clients deleted"
            );
        }
        inner.store.vacuum()?;
        inner.limits.retain_recent();
        let now = Instant::now();
        {
            let mut cache = inner.cimd_cache.locked();
            cache.retain(|_, (until, _)| now < *until);
            cache.shrink_to_fit();
        }
        {
            let mut cache = inner.jwks_cache.locked();
            cache.retain(|_, (until, _)| now < *until);
            cache.shrink_to_fit();
        }
        Ok(deleted)
    }

    /// Starts the periodic sweep, once, when there is a Tokio runtime to
    /// run it on. The task holds the server weakly and ends with it.
    pub(super) fn start_sweeping(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::debug!("authorization server: no runtime; state is swept only on demand");
            return;
        };
        if self.inner.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        let period = self.inner.config.sweep_interval;
        runtime.spawn(async move {
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                let server = AuthorizationServer { inner };
                let swept = tokio::task::spawn_blocking(move || server.sweep()).await;
                match swept {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => tracing::warn!("authorization server: sweep: {e}"),
                    Err(e) => tracing::warn!("authorization server: sweep: {e}"),
                }
            }
        });
    }
}
