//! The host: the supervised upstreams, the catalog merged from them, the
//! downstream clients, and the task that keeps them in step (catalog
//! rebuilt when an upstream changes, list changes and resource updates
//! fanned out, config reloads applied).

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use mcp_schema::ErrorObject;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinSet;

use crate::audit::{AuditLog, AuditStatus};
use crate::catalog::Catalog;
use crate::config::{ConfigProblem, HostConfig, ServerConfig};
use crate::downstream::{Downstream, ListKind};
use crate::upstream::{Signal, SupervisorOptions, Upstream, UpstreamState, UpstreamStatus};
use mcp_core::sync::{MutexExt as _, RwLockExt as _};

mod servers;
mod signals;

use servers::from_workspace;
use signals::{follow_shared_guard, forget_idle_budgets, rebuild, signal_loop};

/// What the host tells an embedding application.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostEvent {
    /// The catalog was rebuilt and differs in these lists.
    CatalogChanged {
        /// Whether the tools changed.
        tools: bool,
        /// Whether the resources or templates changed.
        resources: bool,
        /// Whether the prompts changed.
        prompts: bool,
    },
    /// An upstream's state changed.
    UpstreamState {
        /// The server's config name.
        server: String,
        /// Its new state.
        state: UpstreamState,
    },
    /// Something went wrong with an upstream: its connection was lost or
    /// could not be made, or a call failed on its side (see
    /// [`UpstreamStatus::failed_calls`]).
    UpstreamFault {
        /// The server's config name.
        server: String,
        /// What went wrong, as its status's `last_error` says.
        error: String,
    },
}

/// The host's state for people and scripts.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct HostStatus {
    /// Each running upstream, in config order (a reload keeps it).
    pub servers: Vec<UpstreamStatus>,
    /// Config entries that could not be used.
    pub problems: Vec<ConfigProblem>,
    /// Names two upstreams wanted.
    pub collisions: Vec<String>,
    /// Why the config files' last change could not be used (the running
    /// configuration is kept), until a reload succeeds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reload_error: Option<String>,
    /// What the catalog holds.
    pub tools: usize,
    /// See `tools`.
    pub resources: usize,
    /// See `tools`.
    pub prompts: usize,
    /// Legacy sessions open downstream.
    pub sessions: usize,
    /// `subscriptions/listen` streams open downstream.
    pub listeners: usize,
    /// The audit log's state, where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<AuditStatus>,
    /// Calls held while a person is asked to approve them.
    pub calls_asking: usize,
    /// The requests the host answered itself (lists, completions of
    /// nothing, tasks it keeps), by method, client era and outcome, where
    /// it keeps metrics; each server's are in its status.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<crate::metrics::Tally>,
    /// Servers held until a person trusts them (see [`crate::trust`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub untrusted: Vec<crate::trust::Untrusted>,
    /// Servers a person disabled ([`Host::disable`]), by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disabled: Vec<String>,
}

/// What a reload did: the servers it started and stopped, by config name
/// (a changed server is in both).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reloaded {
    /// Servers added or changed, started now.
    pub started: Vec<String>,
    /// Servers removed or changed, stopped now.
    pub stopped: Vec<String>,
    /// Servers added or changed, held until a person trusts them (see
    /// [`crate::trust`]).
    pub held: Vec<String>,
}

/// Settings of the host itself.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HostOptions {
    /// How upstreams are supervised.
    pub supervisor: SupervisorOptions,
    /// Where each request the gateway answers is recorded, if anywhere.
    pub audit: Option<AuditLog>,
    /// How long a request made while servers are still starting for the
    /// first time waits for them (`initialize`, `ping` and health are
    /// answered at once); a server that comes up later is added with
    /// `list_changed`.
    pub start_grace: Duration,
    /// Who may reach what (see [`crate::policy`]); by default everything
    /// is allowed.
    pub policy: Arc<crate::policy::Policy>,
    /// How a person is asked where the policy says `ask`.
    pub consent: crate::consent::ConsentOptions,
    /// What becomes of results that hold a secret, for servers whose
    /// entries do not say.
    pub secrets: crate::secrets::SecretScan,
    /// Whether the gateway counts each request (by server, method, era
    /// and outcome) and its latency, for [`Host::metrics`] and the
    /// status; off by default.
    pub metrics: bool,
    /// Rate limits (see [`crate::limits`]); none by default.
    pub limits: Arc<crate::limits::Limits>,
    /// Where the rate limits' budgets are kept when shared with other
    /// instances; none: in memory.
    pub budgets: Option<Arc<dyn crate::limits::SharedBudgets>>,
    /// The host's models and who answers servers' sampling requests
    /// (see [`crate::sampler`]); by default no model, and the clients
    /// answer.
    pub sampling: crate::sampler::SamplingOptions,
    /// Who at the host answers a server's elicitation that no client can
    /// (see [`crate::elicit`]); by default nobody, and it is refused.
    pub elicitors: crate::elicit::Elicitors,
    /// The directories offered to servers as roots (see [`crate::roots`]);
    /// none by default, and roots are not declared.
    pub roots: Vec<mcp_schema::Root>,
    /// Whether each request and each hop to a server is a span (see
    /// [`crate::traces`]), for a subscriber that exports them; off by
    /// default.
    pub traces: bool,
    /// How servers the operator did not vouch for (a workspace's, a
    /// reload's) wait for a person's trust (see [`crate::trust`]).
    pub trust: crate::trust::TrustOptions,
    /// Where the guard's decisions are shared with other instances (see
    /// [`crate::consent::shared`]); none: this instance's own.
    pub shared_guard: Option<Arc<dyn crate::consent::shared::SharedGuard>>,
    /// Hooks that see each call before it is forwarded and its result
    /// after (see [`crate::hooks`]); none by default.
    pub hooks: crate::hooks::Hooks,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            supervisor: SupervisorOptions::default(),
            audit: None,
            start_grace: Duration::from_secs(10),
            policy: Arc::default(),
            consent: crate::consent::ConsentOptions::default(),
            secrets: crate::secrets::SecretScan::Off,
            metrics: false,
            limits: Arc::default(),
            budgets: None,
            sampling: crate::sampler::SamplingOptions::default(),
            elicitors: crate::elicit::Elicitors::default(),
            roots: Vec::new(),
            traces: false,
            trust: crate::trust::TrustOptions::default(),
            shared_guard: None,
            hooks: crate::hooks::Hooks::default(),
        }
    }
}

/// A running host. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// Every upstream ever started; a slot is emptied when its server is
    /// removed, so indices in routes stay valid.
    upstreams: RwLock<Vec<Option<Arc<Upstream>>>>,
    catalog: RwLock<Arc<Catalog>>,
    problems: Mutex<Vec<ConfigProblem>>,
    /// Why the last reload failed, until one succeeds.
    reload_error: Mutex<Option<String>>,
    /// The servers' names in the order of the config, for showing.
    order: Mutex<Vec<String>>,
    downstream: Downstream,
    tasks: crate::tasks::TaskRoutes,
    held: crate::rounds::HeldCalls,
    consent: crate::consent::Waiting,
    signals: mpsc::Sender<(usize, Signal)>,
    events: broadcast::Sender<HostEvent>,
    options: HostOptions,
    starting: Arc<tokio::sync::Semaphore>,
    /// Until when requests wait for servers starting for the first time.
    start_deadline: Mutex<tokio::time::Instant>,
    /// Set once none is, or the deadline passed: requests wait no more.
    settled: std::sync::atomic::AtomicBool,
    /// Whether some server's results may be scanned for secrets.
    scans_secrets: std::sync::atomic::AtomicBool,
    supervisors: Mutex<JoinSet<()>>,
    /// Told of each resource update an upstream raises, where set.
    update_hook: std::sync::OnceLock<UpdateHook>,
    /// Told of each resource a listen stream asks for, where set.
    subscription_hook: std::sync::OnceLock<UpdateHook>,
    /// What the gateway counted of the requests no server answered.
    requests: crate::metrics::RequestStats,
    /// Calls held while a person is asked.
    asking: std::sync::atomic::AtomicUsize,
    /// Servers held until a person trusts them.
    untrusted: Mutex<Vec<Arc<crate::trust::Held>>>,
    /// The policy in force (replaced when its file changes).
    policy: arc_swap::ArcSwap<crate::policy::Policy>,
    /// Servers a person disabled while the host runs, with their configs.
    disabled: Mutex<Vec<ServerConfig>>,
}

/// A [`Host`] that may have ended.
pub(crate) struct WeakHost(std::sync::Weak<Inner>);

impl WeakHost {
    /// The host, while it runs.
    pub(crate) fn upgrade(&self) -> Option<Host> {
        self.0.upgrade().map(|inner| Host { inner })
    }
}

/// What a host does with each resource update its upstreams raise (by the
/// URI its clients know), beside telling its own clients.
type UpdateHook = Arc<dyn Fn(&str) + Send + Sync>;

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read_locked()
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write_locked()
}

/// How many upstream signals wait at most; more are dropped (a list
/// change is re-read on the next one anyway).
const SIGNAL_QUEUE: usize = 4096;

impl Host {
    /// Starts a supervisor for every enabled server of `config`. Returns at
    /// once; [`Host::wait_started`] waits for the first connections.
    pub fn start(config: HostConfig, mut options: HostOptions) -> Host {
        // What servers ask clients is recorded with what clients ask.
        options.supervisor.audit = options.audit.clone();
        options.supervisor.elicitors = options.elicitors.clone();
        options.supervisor.traces = options.traces;
        options.supervisor.roots = crate::roots::SharedRoots::new(options.roots.clone());
        options.supervisor.sampler = match crate::sampler::Sampler::new(options.sampling.clone()) {
            // Without a model the clients answer, as with no sampler.
            Ok(sampler) => sampler.has_model().then(|| Arc::new(sampler)),
            Err(why) => {
                tracing::error!("sampling at the host is off: {why}");
                None
            }
        };
        let (signals, receiver) = mpsc::channel(SIGNAL_QUEUE);
        let (events, _) = broadcast::channel(256);
        let options_policy = Arc::clone(&options.policy);
        let host = Host {
            inner: Arc::new(Inner {
                upstreams: RwLock::default(),
                catalog: RwLock::default(),
                problems: Mutex::new(config.problems.clone()),
                reload_error: Mutex::default(),
                order: Mutex::new(config.servers.iter().map(|s| s.name.clone()).collect()),
                downstream: Downstream::default(),
                tasks: Default::default(),
                held: Default::default(),
                consent: Default::default(),
                signals,
                events,
                starting: Arc::new(tokio::sync::Semaphore::new(
                    options.supervisor.start_concurrency.max(1),
                )),
                start_deadline: Mutex::new(tokio::time::Instant::now() + options.start_grace),
                settled: std::sync::atomic::AtomicBool::new(false),
                scans_secrets: std::sync::atomic::AtomicBool::new(
                    options.secrets != crate::secrets::SecretScan::Off,
                ),
                options,
                supervisors: Mutex::new(JoinSet::new()),
                update_hook: std::sync::OnceLock::new(),
                subscription_hook: std::sync::OnceLock::new(),
                requests: crate::metrics::RequestStats::default(),
                asking: std::sync::atomic::AtomicUsize::new(0),
                untrusted: Mutex::default(),
                policy: arc_swap::ArcSwap::new(Arc::clone(&options_policy)),
                disabled: Mutex::default(),
            }),
        };
        for problem in &config.problems {
            tracing::error!("{problem}; that server is not started");
        }
        // Pins made as the servers are first listed are the others' too.
        if let (Some(shared), Some(pins)) = (
            &host.inner.options.shared_guard,
            &host.inner.options.supervisor.pins,
        ) {
            let shared = Arc::clone(shared);
            pins.when_pinned(move |server, key, text| {
                let entry = crate::consent::shared::GuardEntry::Pin {
                    server: server.to_owned(),
                    key: key.into(),
                    text: text.to_owned(),
                };
                crate::consent::shared::publish(&shared, entry);
            });
        }
        for server in config.enabled() {
            host.admit(server.clone(), from_workspace(server));
        }
        let weak = Arc::downgrade(&host.inner);
        tokio::spawn(signal_loop(weak, receiver));
        if !host.limits().is_empty() {
            tokio::spawn(forget_idle_budgets(host.downgrade()));
        }
        if let Some(shared) = &host.inner.options.shared_guard {
            tokio::spawn(follow_shared_guard(host.downgrade(), shared.follow()));
        }
        host
    }

    /// The calls held between a 2026-07-28 client's rounds of input.
    pub(crate) fn held_calls(&self) -> &crate::rounds::HeldCalls {
        &self.inner.held
    }

    /// Which upstream runs each task, and whose it is.
    pub(crate) fn task_routes(&self) -> &crate::tasks::TaskRoutes {
        &self.inner.tasks
    }

    /// The downstream sessions and listen streams.
    pub(crate) fn downstream(&self) -> &Downstream {
        &self.inner.downstream
    }

    /// Tells the subscription hook, where one is set, that a listen
    /// stream asked for `uri`'s updates.
    pub(crate) fn tell_subscribed(&self, uri: &str) {
        if let Some(hook) = self.inner.subscription_hook.get() {
            hook(uri);
        }
    }

    /// Counts a request no server answered.
    pub(crate) fn count_own(&self, counted: crate::metrics::Counted<'_>) {
        self.inner.requests.count(counted);
    }

    /// Counts a call among those held while a person is asked, until the
    /// guard it returns is dropped.
    pub(crate) fn asking(&self) -> impl Drop + '_ {
        /// Uncounts the call when dropped.
        struct Asking<'a>(&'a std::sync::atomic::AtomicUsize);
        impl Drop for Asking<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let asking = &self.inner.asking;
        asking.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Asking(asking)
    }

    /// Where the guard's decisions are shared, if they are.
    pub(crate) fn shared_guard(&self) -> Option<&Arc<dyn crate::consent::shared::SharedGuard>> {
        self.inner.options.shared_guard.as_ref()
    }

    /// A handle that does not keep the host running.
    pub(crate) fn downgrade(&self) -> WeakHost {
        WeakHost(Arc::downgrade(&self.inner))
    }

    /// Offers `roots` to the servers instead of those offered now: a
    /// 2025-11-25 server is told the list changed (where roots were
    /// offered from the start, so that its connection declared them); a
    /// 2026-07-28 server gets them when it next asks. Whether they
    /// changed.
    pub async fn set_roots(&self, roots: Vec<mcp_schema::Root>) -> bool {
        if !self.inner.options.supervisor.roots.set(roots.clone()) {
            return false;
        }
        for upstream in self.upstreams() {
            if let Ok(client) = upstream.client()
                && client.roots().is_some()
                && let Err(error) = client.set_roots(roots.clone()).await
            {
                tracing::warn!(server = %upstream.name(), "the new roots were not told: {error}");
            }
        }
        true
    }

    /// The roots offered to the servers now.
    pub fn roots(&self) -> Vec<mcp_schema::Root> {
        self.inner.options.supervisor.roots.get()
    }

    /// The running upstreams, in config order.
    pub fn upstreams(&self) -> Vec<Arc<Upstream>> {
        read(&self.inner.upstreams)
            .iter()
            .flatten()
            .cloned()
            .collect()
    }

    /// The config name of every upstream by index (`None` where one was
    /// removed).
    pub fn upstream_names(&self) -> Vec<Option<String>> {
        read(&self.inner.upstreams)
            .iter()
            .map(|u| u.as_ref().map(|u| u.config.name.clone()))
            .collect()
    }

    /// The policy requests are decided by.
    pub(crate) fn policy(&self) -> arc_swap::Guard<Arc<crate::policy::Policy>> {
        self.inner.policy.load()
    }

    /// The policy in force, to keep.
    pub(crate) fn policy_now(&self) -> Arc<crate::policy::Policy> {
        self.inner.policy.load_full()
    }

    /// Puts `policy` in force for every request from now on (its file
    /// changed): no session is dropped, and every client is told its
    /// lists changed, as what each may see may have.
    pub fn set_policy(&self, policy: Arc<crate::policy::Policy>) {
        self.inner.policy.store(policy);
        for kind in [ListKind::Tools, ListKind::Resources, ListKind::Prompts] {
            self.inner.downstream.list_changed(kind, &|_| true);
        }
        tracing::info!("the policy was replaced");
    }

    /// The guard hooks.
    pub(crate) fn hooks(&self) -> &crate::hooks::Hooks {
        &self.inner.options.hooks
    }

    /// The rate limits.
    pub(crate) fn limits(&self) -> &crate::limits::Limits {
        &self.inner.options.limits
    }

    /// Where the rate limits' budgets are shared, if they are.
    pub(crate) fn shared_budgets(&self) -> Option<&dyn crate::limits::SharedBudgets> {
        self.inner.options.budgets.as_deref()
    }

    /// Every upstream slot by index (`None` where one was removed).
    pub(crate) fn upstream_slots(&self) -> Vec<Option<Arc<Upstream>>> {
        read(&self.inner.upstreams).clone()
    }

    /// What becomes of upstream `index`'s results that hold a secret
    /// (`Off` at once where no server's results are scanned).
    pub(crate) fn secret_scan(&self, index: usize) -> crate::secrets::SecretScan {
        use crate::secrets::SecretScan;
        if !self
            .inner
            .scans_secrets
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return SecretScan::Off;
        }
        read(&self.inner.upstreams)
            .get(index)
            .and_then(Option::as_ref)
            .and_then(|u| u.config.secrets)
            .unwrap_or(self.inner.options.secrets)
    }

    /// The host's own secrets: its servers' secret-looking variables and
    /// headers.
    pub(crate) fn own_secrets(&self) -> Vec<String> {
        read(&self.inner.upstreams)
            .iter()
            .flatten()
            .flat_map(|u| u.config.own_secrets())
            .collect()
    }

    /// Where definitions are pinned, if they are.
    pub(crate) fn pins(&self) -> Option<&crate::consent::GuardStore> {
        self.inner.options.supervisor.pins.as_deref()
    }

    /// How a person is asked, and the grants and approvals in waiting of
    /// 2026-07-28 callers.
    pub(crate) fn consent(&self) -> (&crate::consent::ConsentOptions, &crate::consent::Waiting) {
        (&self.inner.options.consent, &self.inner.consent)
    }

    /// The config name of upstream `index`, while it runs.
    pub(crate) fn upstream_name(&self, index: usize) -> Option<String> {
        read(&self.inner.upstreams)
            .get(index)
            .and_then(Option::as_ref)
            .map(|u| u.config.name.clone())
    }

    /// The connection that `ctx`'s request to upstream `index` goes over:
    /// the shared one, or for a per-caller server the caller's own (made
    /// now where it has none; see [`crate::isolation`]).
    pub(crate) async fn upstream_for(
        &self,
        index: usize,
        ctx: &mcp_core::RequestContext,
    ) -> Result<Arc<Upstream>, ErrorObject> {
        let upstream = self.upstream(index)?;
        if upstream.config.isolation == crate::config::Isolation::Shared {
            return Ok(upstream);
        }
        let key = crate::isolation::key_of(ctx);
        crate::isolation::mark_session(ctx, &key);
        upstream.for_caller(&key).await
    }

    pub(crate) fn upstream(&self, index: usize) -> Result<Arc<Upstream>, ErrorObject> {
        read(&self.inner.upstreams)
            .get(index)
            .cloned()
            .flatten()
            .ok_or_else(|| ErrorObject::internal("that server was removed from the configuration"))
    }

    /// For a name in the namespace of a server that is not connected, the
    /// error saying which server that is and what state it is in.
    pub(crate) fn down_server_of(&self, name: &str) -> Option<ErrorObject> {
        let (namespace, _) = name.split_once(crate::names::SEPARATOR)?;
        self.upstreams()
            .into_iter()
            .find(|u| u.config.namespace == namespace)
            .and_then(|u| u.client().err())
    }

    /// Also passes each resource update an upstream raises, by the URI the
    /// host's clients know, to `hook`: hosts that share their sessions
    /// (on Redis) store it for the subscribed sessions of every host. It
    /// is called as the update is read from the server, before the answer
    /// the server sent after it is passed on, so it must not block. Set
    /// once; later calls are ignored.
    pub fn set_resource_update_hook(&self, hook: impl Fn(&str) + Send + Sync + 'static) {
        let _ = self.inner.update_hook.set(Arc::new(hook));
    }

    /// Also tells `hook` of each resource a 2026-07-28 client's
    /// `subscriptions/listen` stream asks for (by the URI the host's
    /// clients know): hosts that share their clients subscribe their own
    /// upstreams too ([`Host::subscribe_upstream`]). Set once; later calls
    /// are ignored.
    pub fn set_subscription_hook(&self, hook: impl Fn(&str) + Send + Sync + 'static) {
        let _ = self.inner.subscription_hook.set(Arc::new(hook));
    }

    /// Tells this host's 2026-07-28 listen streams that asked for resource
    /// `uri` (as the host's clients know it) that it changed: an update
    /// the upstream of another host sharing this one's clients raised.
    /// Legacy sessions are not told here: the other host stored it for
    /// them.
    pub fn resource_updated_elsewhere(&self, uri: &str) {
        let mut params = serde_json::Map::new();
        params.insert("uri".into(), Value::String(uri.to_owned()));
        self.inner
            .downstream
            .resource_updated_to_listeners(&params, None);
    }

    /// Subscribes the server of resource `uri` (as the host's clients know
    /// it) to its updates, for a client of another host that shares this
    /// one's sessions: this host then hears of the updates its own copy of
    /// the server raises. Nothing for a resource no server has, or a
    /// server that takes no subscriptions; a refusal is only logged.
    pub async fn subscribe_upstream(&self, uri: &str) {
        // At start, the servers coming up are waited for.
        self.settled().await;
        let Some(route) = self.catalog().resource(uri) else {
            return;
        };
        let Ok(upstream) = self.upstream(route.upstream) else {
            return;
        };
        let Ok(client) = upstream.client() else {
            return;
        };
        if !client.revision().is_legacy() {
            upstream.subscribe(&route.original);
        } else if crate::upstream::subscribes(&client) {
            let subscribed = tokio::time::timeout(
                std::time::Duration::from_secs(10),
                client.subscribe_resource(&route.original),
            )
            .await;
            if !matches!(subscribed, Ok(Ok(()))) {
                tracing::warn!(uri, server = %upstream.config.name, "cannot subscribe to a resource another host's client subscribed to");
            }
        }
    }

    /// The catalog now.
    pub fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&read(&self.inner.catalog))
    }

    /// Events: catalog changes and upstream states.
    pub fn events(&self) -> broadcast::Receiver<HostEvent> {
        self.inner.events.subscribe()
    }

    /// Each upstream's state, the config problems and the catalog's size.
    pub fn status(&self) -> HostStatus {
        let catalog = self.catalog();
        let (sessions, listeners) = self.inner.downstream.counts();
        let mut servers: Vec<UpstreamStatus> =
            self.upstreams().iter().map(|u| u.status()).collect();
        let order = self.inner.order.locked();
        servers.sort_by_key(|s| {
            order
                .iter()
                .position(|name| *name == s.name)
                .unwrap_or(usize::MAX)
        });
        drop(order);
        HostStatus {
            servers,
            problems: self.inner.problems.locked().clone(),
            collisions: catalog.collisions.clone(),
            reload_error: self.inner.reload_error.locked().clone(),
            tools: catalog.tools().len(),
            resources: catalog.resources().len(),
            prompts: catalog.prompts().len(),
            sessions,
            listeners,
            audit: self.audit().map(AuditLog::status),
            calls_asking: self.inner.asking.load(std::sync::atomic::Ordering::Relaxed),
            requests: self.inner.requests.tallies(),
            untrusted: self.untrusted(),
            disabled: self.disabled(),
        }
    }

    /// Whether the gateway traces requests (see [`HostOptions::traces`]).
    pub fn keeps_traces(&self) -> bool {
        self.inner.options.traces
    }

    /// Whether the gateway counts requests (see [`HostOptions::metrics`]).
    pub fn keeps_metrics(&self) -> bool {
        self.inner.options.metrics
    }

    /// Everything the host counts and its servers' state, read now, for
    /// `/metrics` ([`crate::metrics::Snapshot::encode`]).
    pub fn metrics(&self) -> crate::metrics::Snapshot {
        use crate::metrics::{AuditMetrics, ServerMetrics};
        let counts = |name: String, stats: &crate::metrics::RequestStats| ServerMetrics {
            name,
            requests: stats.tallies(),
            latencies: stats.latencies(),
            tool_calls: stats.tool_calls(),
            ..ServerMetrics::default()
        };
        let upstreams: std::collections::HashMap<String, Arc<Upstream>> = self
            .upstreams()
            .into_iter()
            .map(|u| (u.name().to_owned(), u))
            .collect();
        let status = self.status();
        let servers = status
            .servers
            .iter()
            .map(|server| {
                let stats = upstreams.get(&server.name);
                let mut metrics = match stats {
                    Some(upstream) => counts(server.name.clone(), &upstream.stats),
                    None => counts(server.name.clone(), &Default::default()),
                };
                metrics.state = server.state.as_str();
                metrics.restarts = server.restarts;
                metrics.failed_calls = server.failed_calls;
                metrics.dropped_notifications = server.dropped_notifications;
                metrics.in_flight = server.in_flight;
                metrics.waiting = server.waiting;
                metrics.up_seconds = server.up_seconds;
                metrics
            })
            .collect();
        crate::metrics::Snapshot {
            servers,
            host: counts(String::new(), &self.inner.requests),
            sessions: status.sessions,
            listen_streams: status.listeners,
            calls_asking: status.calls_asking,
            catalog: [
                ("tools", status.tools),
                ("resources", status.resources),
                ("prompts", status.prompts),
            ],
            audit: status.audit.map(|audit| AuditMetrics {
                written: audit.written,
                pending: audit.pending,
                lost: audit.lost,
            }),
        }
    }

    /// The audit log, where the host keeps one.
    pub fn audit(&self) -> Option<&AuditLog> {
        self.inner.options.audit.as_ref()
    }

    /// Waits until no upstream is still starting for the first time, at
    /// most `timeout`, and the catalog reflects them.
    pub async fn wait_started(&self, timeout: Duration) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let starting = self
                .upstreams()
                .iter()
                .any(|u| u.status().state == UpstreamState::Starting);
            if !starting || tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        rebuild(&self.inner);
    }

    /// Waits, the first few seconds after start, for the servers still
    /// starting for the first time (at most [`HostOptions::start_grace`]
    /// after the start), so that a client's first requests find what comes
    /// up quickly; at once afterwards.
    pub async fn settled(&self) {
        if self.is_settled() {
            return;
        }
        let deadline = *self.inner.start_deadline.locked();
        let now = tokio::time::Instant::now();
        if now < deadline {
            self.wait_started(deadline - now).await;
        }
        self.inner
            .settled
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether [`Host::settled`] waits no more.
    pub(crate) fn is_settled(&self) -> bool {
        self.inner
            .settled
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Stops every upstream (children are closed as the specification
    /// says) and waits for them, at most `deadline`.
    pub async fn shutdown(&self, deadline: Duration) {
        for held in self.inner.untrusted.locked().drain(..) {
            held.done.cancel();
        }
        for upstream in self.upstreams() {
            upstream.stop();
        }
        let mut tasks = std::mem::take(&mut *self.inner.supervisors.locked());
        let all = async { while tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(deadline, all).await.is_err() {
            tracing::warn!("upstreams did not stop within {deadline:?}; abandoning them");
            tasks.abort_all();
        }
        if let Some(audit) = self.audit() {
            audit.flush(deadline).await;
        }
    }
}
