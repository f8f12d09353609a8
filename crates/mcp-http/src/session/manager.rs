//! The sessions of an endpoint: created, found (here or in a shared
//! store), bounded in number, and ended when idle.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::outbound::QueueLimits;
use foldhash::{HashMap, HashMapExt as _};
use mcp_core::{BoxFuture, Owner, Service, SessionConfig};
use mcp_schema::ProtocolVersion;

use super::*;
use crate::config::{HttpConfig, ResponseMode};
use crate::event_store::EventStore;
use crate::persist::{Persisted, Recording, restoring_requests};
use crate::session_store::{SessionRecord, SessionStore, SessionStoreError};
use mcp_core::sync::MutexExt as _;

/// Why a new session could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionLimit {
    /// The cap on live sessions is reached.
    Full,
}

/// How often the sessions of `idle_timeout` are swept (a quarter of it,
/// from 50 ms to 30 s), and after how many whole intervals of idleness one
/// ends: the fewest that cover the timeout.
pub(super) fn sweep_schedule(idle_timeout: Duration) -> (Duration, u64) {
    let every = (idle_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
    let limit = idle_timeout.as_nanos().div_ceil(every.as_nanos());
    (every, u64::try_from(limit).unwrap_or(u64::MAX))
}

/// The whole sweep intervals a session last used when `last_used` sweeps
/// had run has certainly been idle for at sweep `now`: it may have been
/// used at the very end of the interval that sweep `last_used + 1` closed.
pub(super) fn idle_intervals(last_used: u64, now: u64) -> u64 {
    now.saturating_sub(last_used + 1)
}

/// All live legacy sessions of an endpoint.
pub(crate) struct SessionManager {
    pub(super) sessions: Mutex<HashMap<Arc<str>, Arc<HttpSession>>>,
    pub(super) max: usize,
    /// Whole sweep intervals of idleness after which a session ends.
    pub(super) idle_limit: u64,
    /// Sweeps so far: the sessions' coarse clock.
    pub(super) sweeps: Arc<AtomicU64>,
    pub(super) routing: RouteSettings,
    /// What the sessions serve: the endpoint's service, wrapped to record
    /// session changes where sessions are shared.
    pub(super) service: Arc<dyn Service>,
    pub(super) session_config: Arc<SessionConfig>,
    /// Where sessions are kept for other instances.
    pub(super) store: Arc<dyn SessionStore>,
    /// Whether that store is shared (read once: it decides the hot path).
    pub(super) shared: bool,
    /// How long a stored session lives unused.
    pub(super) ttl: Duration,
}

/// How every session of an endpoint routes its messages.
#[derive(Clone)]
pub(super) struct RouteSettings {
    /// Where they are kept for resumption.
    pub(super) store: Arc<dyn EventStore>,
    /// Whether a response that is the first message of its stream goes
    /// out as a plain JSON reply.
    pub(super) json_replies: bool,
    /// How far a stream's reader may fall behind.
    pub(super) limits: QueueLimits,
    /// Standalone streams follow the store (see [`EventStore::follows`]).
    pub(super) follows: bool,
    /// Where requests sent to clients are recorded.
    pub(super) relay: Option<Arc<dyn crate::relay::ResponseRelay>>,
}

/// What a session id stands for, to a caller.
pub(crate) enum Lookup {
    /// A live session of the caller's, here or loaded from the store.
    Found(Arc<HttpSession>),
    /// No session of the caller's has this id (any more).
    Unknown,
    /// The session store cannot be reached.
    Unavailable(SessionStoreError),
    /// The session is stored, but this instance holds all the sessions it
    /// may.
    Full,
}

impl SessionManager {
    /// The sessions of an endpoint serving `service` with these settings.
    pub(crate) fn new(
        config: &HttpConfig,
        service: Arc<dyn Service>,
        session_config: Arc<SessionConfig>,
    ) -> Arc<Self> {
        let (every, idle_limit) = sweep_schedule(config.session_idle_timeout);
        let store = Arc::clone(&config.session_store);
        let shared = store.is_shared();
        let service = if shared {
            Arc::new(Recording {
                service,
                updates: config.stored_updates.clone(),
            }) as Arc<dyn Service>
        } else {
            service
        };
        let manager = Arc::new(SessionManager {
            sessions: Mutex::new(HashMap::new()),
            max: config.max_sessions,
            idle_limit,
            sweeps: Arc::new(AtomicU64::new(0)),
            routing: RouteSettings {
                store: Arc::clone(&config.event_store),
                json_replies: config.response_mode == ResponseMode::Auto,
                limits: config.queue_limits(),
                follows: config.event_store.follows(),
                relay: config.response_relay.clone(),
            },
            service,
            session_config,
            store,
            shared,
            ttl: config.session_idle_timeout,
        });
        let weak = Arc::downgrade(&manager);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            // A late sweep does not make up for the ones it missed: each
            // counts one whole interval after the last. The first tick is
            // at once, not an interval on.
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let Some(manager) = weak.upgrade() else { break };
                manager.expire().await;
            }
        });
        manager
    }

    pub(super) fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Arc<HttpSession>>> {
        self.sessions.locked()
    }

    /// A new session with this id.
    pub(super) fn new_session(&self, id: Arc<str>, owner: Option<Owner>) -> Arc<HttpSession> {
        let session = HttpSession::new(
            Arc::clone(&id),
            owner,
            Arc::clone(&self.service),
            Arc::clone(&self.session_config),
            self.routing.clone(),
            Arc::clone(&self.sweeps),
        );
        if self.shared {
            // Its tasks stay its own on every instance that serves it.
            session
                .peer()
                .extensions()
                .insert(mcp_core::SessionName(id));
        }
        session
    }

    /// A new session with a fresh random id, belonging to `owner`.
    pub(crate) fn create(&self, owner: Option<Owner>) -> Result<Arc<HttpSession>, SessionLimit> {
        if self.map().len() >= self.max {
            return Err(SessionLimit::Full);
        }
        let id: Arc<str> = Arc::from(new_session_id());
        let session = self.new_session(Arc::clone(&id), owner);
        self.map().insert(id, Arc::clone(&session));
        Ok(session)
    }

    /// Writes a session that has just been initialized to the shared
    /// store, so other instances can continue it; from then on its changes
    /// are written too. Nothing to do without a shared store.
    pub(crate) async fn persist(&self, session: &HttpSession) -> Result<(), SessionStoreError> {
        if !self.shared {
            return Ok(());
        }
        let Some(negotiated) = session.peer().negotiated() else {
            return Ok(());
        };
        let mut record = SessionRecord::new(
            negotiated
                .revision
                .map(|v| v.as_str().to_owned())
                .unwrap_or_default(),
        )
        .with_client_capabilities(negotiated.client_capabilities.clone());
        record.client_info = negotiated.client_info.clone();
        record.owner = session.owner.as_ref().map(|o| o.as_str().to_owned());
        let persisted = Persisted::new(
            Arc::clone(&session.id),
            Arc::clone(&self.store),
            self.ttl,
            record,
        )
        .with_relay(self.routing.relay.clone());
        persisted.save().await?;
        session.peer().extensions().insert(persisted);
        Ok(())
    }

    /// The session with this id, if `owner` owns it: to anyone else it
    /// does not exist. With a shared store, a session held here is checked
    /// against it (it may have been deleted elsewhere) and its lifetime
    /// there renewed; one not held here is loaded from it.
    ///
    /// Without a shared store the answer is ready at once, and the future
    /// small: it is held inline by every request's.
    pub(crate) fn find<'a>(
        &'a self,
        id: &'a str,
        owner: Option<&'a Owner>,
    ) -> futures::future::Either<std::future::Ready<Lookup>, BoxFuture<'a, Lookup>> {
        use futures::future::Either;
        let local = self.map().get(id).cloned();
        match local {
            Some(session) if session.owner.as_ref() != owner => {
                Either::Left(std::future::ready(Lookup::Unknown))
            }
            Some(session) if !self.shared => {
                Either::Left(std::future::ready(Lookup::Found(session)))
            }
            None if !self.shared => Either::Left(std::future::ready(Lookup::Unknown)),
            local => Either::Right(Box::pin(self.find_shared(id, owner, local))),
        }
    }

    /// [`SessionManager::find`] with a shared store, given the session
    /// held here, if any.
    pub(super) async fn find_shared(
        &self,
        id: &str,
        owner: Option<&Owner>,
        local: Option<Arc<HttpSession>>,
    ) -> Lookup {
        match local {
            Some(session) => match self.store.touch(id, self.ttl).await {
                Ok(true) => Lookup::Found(session),
                Ok(false) => {
                    // Deleted (or expired) elsewhere.
                    self.forget(&session);
                    Lookup::Unknown
                }
                Err(error) => Lookup::Unavailable(error),
            },
            None => match self.store.load(id, self.ttl).await {
                Ok(Some(record)) if record.owner.as_deref() == owner.map(Owner::as_str) => {
                    self.restore(id, record).await
                }
                Ok(_) => Lookup::Unknown,
                Err(error) => Lookup::Unavailable(error),
            },
        }
    }

    /// Ends a session held here that goes on (or ended) elsewhere,
    /// keeping what is stored.
    pub(super) fn forget(&self, session: &Arc<HttpSession>) {
        let removed = {
            let mut map = self.map();
            match map.get(&session.id) {
                Some(held) if Arc::ptr_eq(held, session) => map.remove(&session.id),
                _ => None,
            }
        };
        if let Some(session) = removed {
            session.end();
        }
    }

    /// Makes a session here from its stored record: the negotiated
    /// revision and identities, then its log level and subscriptions
    /// replayed to the service.
    pub(super) async fn restore(&self, id: &str, record: SessionRecord) -> Lookup {
        let Ok(revision) = record.revision.parse::<ProtocolVersion>() else {
            tracing::warn!(session = id, revision = %record.revision, "stored session of an unknown revision");
            return Lookup::Unknown;
        };
        if self.map().len() >= self.max {
            return Lookup::Full;
        }
        let owner = record.owner.clone().map(Owner::new);
        let id: Arc<str> = Arc::from(id);
        let session = self.new_session(Arc::clone(&id), owner);
        let mut negotiated = mcp_core::Negotiated::default();
        negotiated.revision = Some(revision);
        negotiated.client_info = record.client_info.clone();
        negotiated.client_capabilities = record.client_capabilities.clone();
        if let mcp_core::Role::Server(identity) = &self.session_config.role {
            negotiated.server_info = Some(identity.info().clone());
            negotiated.server_capabilities = identity.capabilities().clone();
        }
        session.peer().set_negotiated(negotiated);
        for frame in restoring_requests(&record) {
            let answer = session.answer(frame, None).await;
            if let Some(error) = answer.filter(|a| a.contains("\"error\"")) {
                tracing::debug!(session = %id, %error, "a stored session setting was refused");
            }
        }
        session.peer().extensions().insert(
            Persisted::new(Arc::clone(&id), Arc::clone(&self.store), self.ttl, record)
                .with_relay(self.routing.relay.clone()),
        );
        self.service.session_ready(session.peer());
        let held = {
            let mut map = self.map();
            match map.get(&id) {
                // Loaded meanwhile by another request.
                Some(held) => Err(Arc::clone(held)),
                None => {
                    map.insert(id, Arc::clone(&session));
                    Ok(())
                }
            }
        };
        match held {
            Ok(()) => {
                tracing::debug!(session = %session.id, "session loaded from the session store");
                Lookup::Found(session)
            }
            Err(held) => {
                session.end();
                Lookup::Found(held)
            }
        }
    }

    /// Ends and forgets a session `owner` owns, here and in the shared
    /// store; whether there was one.
    pub(crate) async fn remove(
        &self,
        id: &str,
        owner: Option<&Owner>,
    ) -> Result<bool, SessionStoreError> {
        let local = self.map().get(id).cloned();
        match local {
            Some(session) if session.owner.as_ref() == owner => {
                if self.shared {
                    // First: a session that stays stored would go on elsewhere.
                    self.store.remove(id).await?;
                }
                let removed = {
                    let mut map = self.map();
                    match map.get(id) {
                        Some(held) if Arc::ptr_eq(held, &session) => map.remove(id),
                        _ => None,
                    }
                };
                session.close().await;
                Ok(removed.is_some())
            }
            Some(_) => Ok(false),
            None if !self.shared => Ok(false),
            None => match self.store.load(id, self.ttl).await? {
                Some(record) if record.owner.as_deref() == owner.map(Owner::as_str) => {
                    self.store.remove(id).await?;
                    self.routing.store.drop_session(id).await;
                    Ok(true)
                }
                _ => Ok(false),
            },
        }
    }

    /// Brings the copy of session `id` held here (if any) up to its
    /// stored record, changed by another instance.
    pub(crate) async fn refresh(&self, id: &str) {
        let Some(session) = self.held(id) else {
            return;
        };
        let Some(persisted) = session.peer().extensions().get::<Persisted>() else {
            return;
        };
        let record = match self.store.load(id, self.ttl).await {
            Ok(Some(record)) => record,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(session = id, %error, "cannot follow a session changed elsewhere");
                return;
            }
        };
        for frame in persisted.follow(record).await {
            let answer = session.answer(frame, None).await;
            if let Some(error) = answer.filter(|a| a.contains("\"error\"")) {
                tracing::debug!(session = id, %error, "a session change from elsewhere was refused");
            }
        }
    }

    /// The session with this id, if this instance holds it.
    pub(crate) fn held(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.map().get(id).cloned()
    }

    /// How many sessions are live.
    pub(crate) fn len(&self) -> usize {
        self.map().len()
    }

    /// Counts a sweep, and ends the sessions idle for longer than the
    /// timeout (an open stream counts as use). A session is used at some
    /// point of a sweep interval, so it ends between the timeout and the
    /// timeout and two intervals (a quarter of the timeout each, from
    /// 50 ms to 30 s) after its last use.
    ///
    /// With a shared store, an idle session only leaves this instance (it
    /// may be in use on another; the store lets it expire), and one with
    /// an open stream has its lifetime there renewed, and ends here if it
    /// was deleted elsewhere.
    pub(super) async fn expire(&self) {
        let now = self.sweeps.fetch_add(1, Ordering::Relaxed) + 1;
        let (expired, streaming): (Vec<Arc<HttpSession>>, Vec<Arc<HttpSession>>) = {
            let mut map = self.map();
            let ids: Vec<Arc<str>> = map
                .values()
                .filter(|s| {
                    s.open_streams.load(Ordering::Relaxed) == 0
                        && s.idle_intervals(now) >= self.idle_limit
                })
                .map(|s| Arc::clone(&s.id))
                .collect();
            let expired = ids.iter().filter_map(|id| map.remove(id)).collect();
            let streaming = if self.shared {
                map.values()
                    .filter(|s| s.open_streams.load(Ordering::Relaxed) > 0)
                    .cloned()
                    .collect()
            } else {
                Vec::new()
            };
            (expired, streaming)
        };
        for session in expired {
            tracing::debug!(session = %session.id, "session expired");
            if self.shared {
                session
                    .peer()
                    .extensions()
                    .insert(mcp_core::ContinuesElsewhere);
                session.end();
            } else {
                session.close().await;
            }
        }
        for session in streaming {
            match self.store.touch(&session.id, self.ttl).await {
                Ok(true) => {}
                Ok(false) => self.forget(&session),
                Err(error) => {
                    tracing::debug!(session = %session.id, %error, "cannot renew a session")
                }
            }
        }
    }

    /// Ends every session (server shutdown). Stored events stay, so that a
    /// store shared with other instances still lets clients resume there.
    pub(crate) fn close_all(&self) {
        let all: Vec<Arc<HttpSession>> = self.map().drain().map(|(_, s)| s).collect();
        for session in all {
            session.end();
        }
    }
}
