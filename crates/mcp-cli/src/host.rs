//! `mcp host`: the servers of the user's config files (or the embedded
//! default) supervised and served as one MCP server, over Streamable HTTP
//! (with HTTP+SSE and WebSocket) or stdio; `mcp host status` asks a
//! running host how its servers are.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use mcp_host::config::{GivenInputs, HostConfig, ServerConfig, Variables};
use mcp_host::policy::{Decision, RuleSettings};
use mcp_host::sampler::{Approve, SamplingMode};
use mcp_host::{AuditLog, AuditSettings, AuthorizerFactory, Gateway, Host, UpstreamState};
use serde_json::Value;

use crate::oauth::OAuthArgs;
use crate::serve::{Limits, SharedStores, bind, serve_shared, shutdown_signal};
use crate::stderr::print_err;
use crate::stdout::print_json;
use crate::tty_inputs::TtyInputs;

/// The files `mcp host` and `mcp chat` read: the servers' config, the
/// host's settings, and what the config's variables stand for.
#[derive(clap::Args, Debug, Clone)]
pub struct HostFiles {
    /// A config file listing servers (repeatable; later files override
    /// earlier entries of the same name): Claude Desktop, Claude Code or
    /// Cursor `mcpServers`, VS Code `mcp.json` (`servers`, `inputs`), or
    /// Zed `context_servers`. Without it, the embedded default.
    #[arg(long, value_name = "FILE")]
    pub config: Vec<PathBuf>,
    /// The host's own settings (TOML: listen address, timeouts, limits;
    /// see `mcp host --print-config` for every key). Flags win over it.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// A workspace: `${workspaceFolder}` in config files (default: the
    /// current directory), and its `.vscode/mcp.json` and
    /// `.cursor/mcp.json` read too, whose servers run only once a person
    /// trusts their command lines.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The value of VS Code input ID (`${input:ID}`), so no one is asked
    /// (repeatable). Also: `--inputs-file`, or the environment variable
    /// `MCP_INPUT_<ID>` (the id in capitals, `-` and `.` as `_`). Without any,
    /// the terminal is asked; with no terminal, the input's default is
    /// used.
    #[arg(long, value_name = "ID=VALUE")]
    pub input: Vec<String>,
    /// A file of `ID=VALUE` lines giving VS Code inputs (an env file).
    #[arg(long, value_name = "FILE")]
    pub inputs_file: Option<PathBuf>,
}

/// The flags of `mcp host`.
#[derive(clap::Args, Debug)]
pub struct HostArgs {
    #[command(flatten)]
    pub files: HostFiles,
    /// Serve over Streamable HTTP (and HTTP+SSE and WebSocket) on this
    /// address; the endpoint is /mcp, status at /status, health at
    /// /healthz: 127.0.0.1:8080, localhost:8080, or a port alone (on
    /// 127.0.0.1). The default unless --stdio.
    #[arg(long, value_name = "ADDR", conflicts_with = "stdio", value_parser = crate::serve::parse_listen_addr)]
    pub http: Option<std::net::SocketAddr>,
    /// Serve on stdin and stdout instead (one client; put `mcp host
    /// --stdio` in a client's config to give it every server).
    #[arg(long)]
    pub stdio: bool,
    /// With --stdio, serve this view of the catalog (`[views.NAME]` in
    /// the settings file) instead of all of it. Over HTTP every view is
    /// served at /views/NAME/mcp.
    #[arg(long, value_name = "NAME", requires = "stdio")]
    pub view: Option<String>,
    /// Also accept these Host names and Origins (repeatable), beyond the
    /// loopback ones; `*` accepts any (only behind a trusted proxy).
    #[arg(long, value_name = "HOST_OR_ORIGIN")]
    pub allow: Vec<String>,
    /// Print the effective configuration (secrets masked) and exit.
    #[arg(long)]
    pub print_config: bool,
    /// How long a client's first listings wait for servers still starting
    /// (seconds). The host serves at once; a server that comes up later
    /// is added with `list_changed`.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub start_timeout: f64,
    /// Keep the downstream legacy sessions and their SSE events in this
    /// Redis (redis://HOST:PORT/DB), so that several hosts behind one load
    /// balancer serve the same sessions, and a client's answer to a
    /// server's request (elicitation, sampling) reaches the host that
    /// asked, wherever it is posted; each host still runs its own servers.
    #[arg(long, value_name = "URL", conflicts_with = "stdio")]
    pub redis: Option<String>,
    /// Serve /metrics (Prometheus), /status and /healthz on this address
    /// of their own, with a bearer token (`[admin] token`, the variable
    /// MCP_ADMIN_TOKEN, or a random one printed at start); also with
    /// --stdio.
    #[arg(long, value_name = "ADDR", value_parser = crate::serve::parse_listen_addr)]
    pub admin: Option<std::net::SocketAddr>,
    /// Record every request (who, what, which server, how it ended, how
    /// long it took) in this SQLite file, created if missing; `[audit]` in
    /// the settings file says more (arguments, how many records to keep).
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// The policy's rules from this file (`[[policy]]` tables, and
    /// `default = "allow" | "ask" | "deny"`) instead of the settings
    /// file's; reloaded when it changes.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Run the servers a change of the config files adds (or whose command
    /// line it changes) without asking a person first: the files are the
    /// operator's own (also `[guard] trust_config = true`).
    #[arg(long)]
    pub trust_config: bool,
    #[command(flatten)]
    pub oauth: OAuthArgs,
}

/// Where `mcp host` listens when given neither --http nor --stdio.
const DEFAULT_ADDR: &str = "127.0.0.1:8080";

/// Runs `mcp host`.
pub async fn run(args: &HostArgs) -> Result<()> {
    let mut settings = crate::host_guard::settings_of(args.files.settings.as_deref())?;
    if let Some(file) = &args.policy {
        settings.with_policy_file(mcp_host::settings::PolicyFile::load(file)?);
    }
    let mut options = settings.options().map_err(anyhow::Error::msg)?;
    with_sign_in(&mut options);
    // Flags win over the settings file.
    let stdio = args.stdio || (settings.serve.stdio && args.http.is_none());
    let http = args.http.or(settings.serve.http);
    let allow = if args.allow.is_empty() {
        settings.serve.allow.clone()
    } else {
        args.allow.clone()
    };
    if args.oauth.enabled() && stdio {
        bail!("--oauth protects the HTTP endpoint; it cannot be used with --stdio");
    }
    let redis = args.redis.clone().or(settings.serve.redis.clone());
    if redis.is_some() && stdio {
        bail!("--redis shares the HTTP endpoint's sessions; it cannot be used with --stdio");
    }
    let vars = variables(&args.files)?;
    let config = load(&args.files, &vars)?;
    let mut audit = settings.audit();
    if let Some(path) = &args.audit {
        let mut flagged = audit.unwrap_or_else(|| AuditSettings::new(path));
        flagged.path = path.clone();
        audit = Some(flagged);
    }
    if args.print_config {
        let mut effective = masked(&config);
        // Every setting as it takes effect: flags, the file, defaults.
        let mut shown = settings.clone();
        let defaults = mcp_http::HttpConfig::loopback(0);
        let serve = &mut shown.serve;
        serve.stdio = stdio;
        serve.http = match stdio {
            true => None,
            false => Some(http.unwrap_or(DEFAULT_ADDR.parse()?)),
        };
        serve.allow = allow.clone();
        serve.redis = redis.as_deref().map(mcp_host::settings::mask_url_password);
        serve.max_sessions.get_or_insert(defaults.max_sessions);
        serve
            .session_idle_timeout
            .get_or_insert(defaults.session_idle_timeout.as_secs_f64());
        serve
            .max_connections
            .get_or_insert(defaults.max_connections);
        serve.max_connections_per_ip = serve
            .max_connections_per_ip
            .or(defaults.max_connections_per_ip);
        shown.servers = (&options.supervisor).into();
        // A provider's URL may carry a password; keys are only named.
        for model in shown.model.iter_mut().chain(shown.models.values_mut()) {
            model.base_url = Some(mcp_host::settings::mask_url_password(&model.base_url()));
        }
        let approver_headers = shown.guard.http.iter_mut().map(|h| &mut h.headers);
        let hook_headers = shown.hooks.iter_mut().map(|h| &mut h.headers);
        for headers in approver_headers.chain(hook_headers) {
            for (name, value) in headers.iter_mut() {
                if mcp_host::secrets::secret_name(name) {
                    *value = "***".into();
                }
            }
        }
        let admin = &mut shown.admin;
        admin.http = crate::host_admin::address(args.admin, &settings.admin);
        admin.token = admin.token.as_ref().map(|_| "***".to_owned());
        admin.metrics = Some(admin.metrics.unwrap_or(admin.http.is_some()));
        let guard = &mut shown.guard;
        guard
            .approvers
            .get_or_insert_with(|| options.consent.order.clone());
        guard
            .ask_timeout
            .get_or_insert(options.consent.timeout.as_secs_f64());
        shown.audit = audit.as_ref().map(Into::into);
        effective["settings"] = serde_json::to_value(&shown)?;
        return print_json(&effective);
    }
    if config.servers.is_empty() && config.problems.is_empty() {
        print_err("warning: the configuration lists no servers");
    }
    let start_timeout = Duration::try_from_secs_f64(args.start_timeout)
        .ok()
        .filter(|d| !d.is_zero())
        .context("--start-timeout must be a positive number of seconds")?;
    options.audit = audit
        .map(AuditLog::open)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    options.start_grace = start_timeout;
    // With several hosts on one Redis, one budget per limit for them all,
    // and one guard: a grant made on one holds on all.
    if let Some(url) = &redis {
        let connection = mcp_redis::connect(url).await?;
        if !options.limits.is_empty() {
            options.budgets = Some(Arc::new(SharedBudgets(mcp_redis::RedisBudgets::new(
                connection.clone(),
            ))));
        }
        let guard = mcp_redis::RedisGuardLog::new(url, connection).map_err(anyhow::Error::msg)?;
        options.shared_guard = Some(Arc::new(SharedGuard(guard)));
    }
    // The addresses first: a busy port fails before any server starts.
    let admin = match crate::host_admin::address(args.admin, &settings.admin) {
        Some(addr) => {
            options.metrics = settings.admin.metrics.unwrap_or(true);
            Some(crate::host_admin::bind_admin(addr, &settings.admin).await?)
        }
        None => None,
    };
    let listener = match (stdio, http) {
        (true, _) => None,
        (false, Some(addr)) => Some(bind(addr).await?),
        (false, None) => Some(bind(DEFAULT_ADDR.parse()?).await?),
    };
    with_people(&mut options, &settings)?;
    options.trust.reloads = args.trust_config || settings.guard.trust_config == Some(true);
    let reloads_ask = !args.files.config.is_empty() && !options.trust.reloads;
    if reloads_ask || config.servers.iter().any(|s| s.workspace) {
        options.trust.store = match &options.consent.store {
            Some(store) => Some(Arc::clone(store)),
            None => Some(Arc::new(crate::host_guard::open_store(&settings)?)),
        };
    }
    let console_approver = Arc::new(mcp_console::ConsoleApprover::default());
    if admin.is_some() {
        options.consent.registered.push(console_approver.clone());
        // Before the terminal, while a browser watches: what servers ask
        // the host's model.
        options
            .sampling
            .reviewers
            .insert(0, console_approver.clone());
        // After the terminal: the questions no client can answer.
        options.elicitors.people.push(console_approver.clone());
    }
    print_err(&policy_line(&options));
    if let Some(endpoint) = settings.traces.endpoint() {
        print_err(&format!(
            "traces: a span per request and per hop to a server, to {endpoint} (sample {})",
            settings.traces.sample.unwrap_or(1.0)
        ));
    }
    print_err(&sampling_line(&options));
    if !options.roots.is_empty() {
        print_err(&format!("roots: {}", roots_line(&options.roots)));
    }
    // Served at once: servers that start slowly, or never, hold no one up.
    let host = Host::start(config, options);
    let reporting = tokio::spawn(report_states(host.clone(), start_timeout));
    let reloading = tokio::spawn(watch_config(host.clone(), args.files.clone(), vars));
    let rerooting = tokio::spawn(watch_settings(
        host.clone(),
        (args.files.settings.clone(), args.policy.clone()),
        (settings.policy.clone(), settings.guard.default),
    ));
    let sign_in = match (&admin, &listener) {
        (Some(_), Some(listener)) if args.oauth.enabled() => {
            let (origin, resource) = crate::serve::endpoint_urls(listener.local_addr()?);
            Some(crate::oauth::console_sign_in(&args.oauth, &origin, &resource).await?)
        }
        _ => None,
    };
    let admin = admin
        .map(|admin| admin.serve(&host, &allow, console_approver, sign_in))
        .transpose()?;
    let version = env!("CARGO_PKG_VERSION");
    let mut views = settings.views().map_err(anyhow::Error::msg)?;
    let gateway = match &args.view {
        None => Gateway::new(host.clone(), "mcp-host", version),
        Some(name) => {
            let at = views
                .iter()
                .position(|v| v.name == *name)
                .with_context(|| {
                    let known: Vec<&str> = views.iter().map(|v| v.name.as_str()).collect();
                    format!(
                        "no view {name:?} in the settings file (views: {})",
                        known.join(", ")
                    )
                })?;
            Gateway::for_view(host.clone(), views.swap_remove(at), name, version)
        }
    };
    let served = if stdio {
        let session = mcp_core::serve(
            mcp_core::stdio::stdio(),
            Arc::new(gateway.clone()),
            gateway.session_config(),
        );
        tokio::select! {
            _ = session.wait() => {}
            _ = shutdown_signal() => {}
        }
        Ok(())
    } else {
        let listener = listener.context("no listener")?;
        let config = gateway.session_config();
        let limits = Limits {
            max_sessions: settings.serve.max_sessions,
            session_idle_timeout: settings
                .serve
                .session_idle_timeout
                .map(Duration::from_secs_f64),
            max_connections: settings.serve.max_connections,
            max_connections_per_ip: settings.serve.max_connections_per_ip,
        };
        let service: Arc<dyn mcp_core::Service> = Arc::new(gateway);
        let mut routes = crate::host_admin::endpoint_routes(&host);
        for view in views {
            let prefix = format!("/views/{}", view.name);
            print_err(&format!("view {}: {prefix}/mcp", view.name));
            let name = view.name.clone();
            let gateway = Gateway::for_view(host.clone(), view, &name, version);
            let config = gateway.session_config();
            routes.endpoints.push((prefix, Arc::new(gateway), config));
        }
        let shared = match &redis {
            None => None,
            Some(url) => {
                // Answers to what an upstream asks a client (elicitation,
                // sampling) reach this host wherever the client posts them;
                // standalone streams follow the shared store, where this
                // host stores its upstreams' resource updates for the
                // subscribed sessions of every host; and a subscription
                // made through another host subscribes this host's
                // upstream too, so it hears of the updates its own copy of
                // the server raises.
                let (shared, updates) = SharedStores::redis(url).await?.following();
                let mut shared = shared.relaying().await?;
                let bus = shared
                    .bus()
                    .cloned()
                    .ok_or_else(|| anyhow::anyhow!("the bus is not joined"))?;
                share_subscriptions(&host, &bus, shared.sessions().clone(), updates);
                let subscriber = host.clone();
                shared.on_subscriptions(move |uri| {
                    let (host, uri) = (subscriber.clone(), uri.to_owned());
                    tokio::spawn(async move { host.subscribe_upstream(&uri).await });
                });
                // And those made before this host started.
                for uri in shared.subscribed_resources().await? {
                    host.subscribe_upstream(&uri).await;
                }
                Some(shared)
            }
        };
        serve_shared(
            service,
            config,
            listener,
            &allow,
            &args.oauth,
            routes,
            limits,
            shared,
        )
        .await
    };
    reloading.abort();
    rerooting.abort();
    reporting.abort();
    if let Some(admin) = admin {
        admin.abort();
    }
    host.shutdown(Duration::from_secs(10)).await;
    served
}

/// The rate limits' budgets, kept in Redis for every host sharing it.
#[derive(Debug)]
struct SharedBudgets(mcp_redis::RedisBudgets);

impl mcp_host::limits::SharedBudgets for SharedBudgets {
    fn spend<'a>(
        &'a self,
        key: &'a str,
        interval: Duration,
        burst: u32,
    ) -> mcp_core::BoxFuture<'a, Result<Option<Duration>, String>> {
        Box::pin(async move {
            self.0
                .spend(key, interval, burst)
                .await
                .map_err(|e| e.to_string())
        })
    }
}

/// The guard's decisions and approval rounds, kept in Redis for every
/// host sharing it.
#[derive(Debug)]
struct SharedGuard(mcp_redis::RedisGuardLog);

impl mcp_host::consent::shared::SharedGuard for SharedGuard {
    fn publish<'a>(&'a self, entry: &'a str) -> mcp_core::BoxFuture<'a, Result<(), String>> {
        Box::pin(self.0.append(entry))
    }

    fn follow(&self) -> mcp_host::consent::shared::Entries {
        Box::pin(self.0.follow())
    }

    fn put_waiting<'a>(
        &'a self,
        token: &'a str,
        entry: &'a str,
        ttl: Duration,
    ) -> mcp_core::BoxFuture<'a, Result<(), String>> {
        Box::pin(self.0.put_waiting(token, entry, ttl))
    }

    fn take_waiting<'a>(
        &'a self,
        token: &'a str,
    ) -> mcp_core::BoxFuture<'a, Result<Option<String>, String>> {
        Box::pin(self.0.take_waiting(token))
    }
}

/// What hosts sharing their clients on Redis tell each other on the bus.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
enum SharedEvent {
    /// A host's upstream raised an update of this resource (as clients
    /// know it): the other hosts tell their 2026-07-28 listen streams.
    Updated(String),
    /// A 2026-07-28 listen stream asked a host for this resource's
    /// updates: the other hosts subscribe their own upstreams to it.
    Subscribed(String),
}

/// Wires `host` to the other hosts on `bus`: the resource updates its
/// upstreams raise are stored for every subscribed legacy session
/// (`updates`) and told to the other hosts' listen streams, and what its
/// listen streams ask for is subscribed to on every host, and noted in
/// `sessions` for the hosts that start later.
fn share_subscriptions(
    host: &Host,
    bus: &mcp_redis::RedisBus,
    sessions: mcp_redis::RedisSessionStore,
    updates: mcp_http::fanout::UpdateQueue,
) {
    let publish = |bus: mcp_redis::RedisBus| {
        move |event: SharedEvent| match serde_json::to_string(&event) {
            Ok(text) => bus.publish_event(text),
            Err(error) => tracing::warn!(%error, "an event for the other hosts cannot be written"),
        }
    };
    let updated = publish(bus.clone());
    host.set_resource_update_hook(move |uri| {
        updates.push(uri);
        updated(SharedEvent::Updated(uri.to_owned()));
    });
    let subscribed = publish(bus.clone());
    host.set_subscription_hook(move |uri| {
        subscribed(SharedEvent::Subscribed(uri.to_owned()));
        // Noted for the hosts that start later, too.
        let (sessions, uri) = (sessions.clone(), uri.to_owned());
        tokio::spawn(async move {
            if let Err(error) = sessions.note_listened(&uri).await {
                tracing::warn!(%error, %uri, "a listen stream's resource cannot be noted for later hosts");
            }
        });
    });
    let receiver = host.clone();
    bus.on_event(move |text| match serde_json::from_str(text) {
        Ok(SharedEvent::Updated(uri)) => receiver.resource_updated_elsewhere(&uri),
        Ok(SharedEvent::Subscribed(uri)) => {
            let host = receiver.clone();
            tokio::spawn(async move { host.subscribe_upstream(&uri).await });
        }
        Err(error) => tracing::debug!(%error, "an unknown event from another host"),
    });
}

/// Where variables come from: the environment, `--workspace`, and for
/// `${input:id}` the values given (`--input`, `--inputs-file`, the
/// environment), the terminal, then the input's default.
pub(crate) fn variables(args: &HostFiles) -> Result<Variables> {
    let mut inputs = GivenInputs::new().person(Arc::new(TtyInputs));
    if let Some(file) = &args.inputs_file {
        inputs = inputs.file(file).map_err(anyhow::Error::msg)?;
    }
    for given in &args.input {
        inputs = inputs
            .assignment(given)
            .map_err(|e| anyhow::anyhow!("--input {e}"))?;
    }
    let mut vars = Variables::from_process().inputs(Arc::new(inputs));
    if let Some(workspace) = &args.workspace {
        vars = vars.workspace(workspace.clone());
    }
    Ok(vars)
}

/// The configuration: the files given, or the embedded default; then the
/// workspace's files (their servers marked as the workspace's).
pub(crate) fn load(args: &HostFiles, vars: &Variables) -> Result<HostConfig> {
    let mut config = if args.config.is_empty() {
        embedded_default()?
    } else {
        HostConfig::load(&args.config, vars)?
    };
    let workspace = workspace_files(args);
    if !workspace.is_empty() {
        let mut theirs = HostConfig::load(&workspace, vars)?;
        for server in &mut theirs.servers {
            server.workspace = true;
        }
        config.merge(theirs);
    }
    Ok(config)
}

/// The workspace's config files that exist: `.vscode/mcp.json` and
/// `.cursor/mcp.json` of `--workspace`.
fn workspace_files(args: &HostFiles) -> Vec<PathBuf> {
    let Some(dir) = &args.workspace else {
        return Vec::new();
    };
    [".vscode/mcp.json", ".cursor/mcp.json"]
        .iter()
        .map(|file| dir.join(file))
        .filter(|path| path.is_file())
        .collect()
}

/// The servers `mcp host` runs without a config, each this program's own,
/// as a child over stdio: `everything`, the current directory through the
/// filesystem server (read-only, secrets refused), and the built-in
/// prompt library.
fn embedded_default() -> Result<HostConfig> {
    let exe = std::env::current_exe().context("cannot find this program's own path")?;
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let builtin = |name: &str, args: &[&str]| {
        let mut argv = vec!["serve".to_owned(), name.to_owned()];
        argv.extend(args.iter().map(|a| (*a).to_owned()));
        ServerConfig::stdio(name, exe.display().to_string(), argv)
    };
    let directory = here.display().to_string();
    Ok(HostConfig {
        servers: vec![
            builtin("everything", &[]),
            builtin("filesystem", &[&directory]),
            builtin("prompts", &[]),
        ],
        problems: Vec::new(),
    })
}

/// Says on stderr which servers are up and which are not, once they
/// started or `grace` passed; then each server that comes up later or
/// comes back after a restart.
async fn report_states(host: Host, grace: Duration) {
    let mut events = host.events();
    host.wait_started(grace).await;
    // What the report below shows already.
    while events.try_recv().is_ok() {}
    let status = host.status();
    for server in &status.servers {
        print_err(&server_line(server));
    }
    for problem in &status.problems {
        print_err(&format!("{problem}; not started"));
    }
    for collision in &status.collisions {
        print_err(&format!("collision: {collision}"));
    }
    loop {
        match events.recv().await {
            Ok(mcp_host::HostEvent::UpstreamState {
                server,
                state: UpstreamState::Ready,
            }) => {
                if let Some(status) = host.status().servers.iter().find(|s| s.name == server) {
                    print_err(&server_line(status));
                }
            }
            Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// One server's state in a line: what it offers once ready, else why not.
fn server_line(server: &mcp_host::UpstreamStatus) -> String {
    match server.state {
        UpstreamState::Ready => format!(
            "{}: ready ({}, {}, {}; {} over {})",
            server.name,
            counted(server.tools, "tool"),
            counted(server.resources, "resource"),
            counted(server.prompts, "prompt"),
            server.revision.as_deref().unwrap_or("?"),
            server.transport.unwrap_or("?"),
        ),
        state => format!(
            "{}: {} ({})",
            server.name,
            serde_json::to_value(state)
                .unwrap_or_default()
                .as_str()
                .unwrap_or("?"),
            server.last_error.as_deref().unwrap_or("no error yet")
        ),
    }
}

/// What the policy does, said once at start.
fn policy_line(options: &mcp_host::HostOptions) -> String {
    let policy = &options.policy;
    if policy.allows_everything() {
        return "policy: no rules; every request is allowed (the client application asks its \
                own user)"
            .into();
    }
    let mut line = format!(
        "policy: {}; where none matches: {}",
        counted(policy.rules().len(), "rule"),
        policy.default_decision()
    );
    if policy.can_ask() {
        let consent = &options.consent;
        line.push_str(&format!(
            "; asks {} ({} s to answer)",
            consent.order.join(", then "),
            consent.timeout.as_secs()
        ));
        if let Some(store) = &consent.store {
            line.push_str(&format!(
                "; grants for always in {}",
                store.path().display()
            ));
        }
    }
    line
}

/// Remote servers that ask for OAuth use the credentials `mcp call` and
/// `mcp tools` keep (and sign in as they do when there are none).
pub(crate) fn with_sign_in(options: &mut mcp_host::HostOptions) {
    options.supervisor.authorizer = Some(AuthorizerFactory(Arc::new(|url: String| {
        Box::pin(async move {
            crate::target::login(&url)
                .await
                .map_err(|e| format!("{e:#}"))
        })
    })));
}

/// The person at the terminal: asked where a rule says `ask` (after the
/// client), reviewing sampling at the host, and answering what servers
/// ask that no client can; grants for always and
/// pins kept where a store is set, or where some rule asks (in the
/// user's state folder then).
pub(crate) fn with_people(
    options: &mut mcp_host::HostOptions,
    settings: &mcp_host::HostSettings,
) -> Result<()> {
    options
        .consent
        .registered
        .push(Arc::new(crate::tty_approver::TtyApprover::default()));
    options
        .sampling
        .reviewers
        .push(Arc::new(crate::tty_reviewer::TtyReviewer::default()));
    options
        .elicitors
        .people
        .push(Arc::new(crate::tty_elicitor::TtyElicitor::default()));
    options.elicitors.timeout = options.consent.timeout;
    if settings.guard.store.is_some() || options.policy.can_ask() {
        let store = Arc::new(crate::host_guard::open_store(settings)?);
        options.consent.store = Some(Arc::clone(&store));
        options.supervisor.pins = Some(store);
    }
    Ok(())
}

/// The roots offered, as their URIs.
fn roots_line(roots: &[mcp_schema::Root]) -> String {
    let uris: Vec<&str> = roots.iter().map(|r| r.uri.as_str()).collect();
    uris.join(", ")
}

/// Watches the settings file and the policy file (once a second, and on
/// SIGHUP): a change of `[roots]` is offered to the servers, and a change
/// of the policy (`[[policy]]` and `[guard] default`, or the policy
/// file's) is put in force without dropping a session; a file that cannot
/// be used keeps what runs. The other settings take effect when the host
/// starts again.
async fn watch_settings(
    host: Host,
    (settings, policy): (Option<PathBuf>, Option<PathBuf>),
    mut running: (Vec<RuleSettings>, Decision),
) {
    let files: Vec<PathBuf> = settings.iter().chain(policy.iter()).cloned().collect();
    if files.is_empty() {
        return;
    }
    let mut watch = crate::file_watch::FileWatch::new(files);
    loop {
        watch.changed().await;
        let read = crate::host_guard::settings_of(settings.as_deref()).and_then(|mut read| {
            if let Some(file) = &policy {
                read.with_policy_file(mcp_host::settings::PolicyFile::load(file)?);
            }
            Ok(read)
        });
        let read = match read {
            Ok(read) => read,
            Err(why) => {
                print_err(&format!("the settings were not reloaded: {why:#}"));
                continue;
            }
        };
        match read.roots.roots() {
            Ok(roots) => {
                let line = roots_line(&roots);
                if host.set_roots(roots).await {
                    print_err(&format!(
                        "roots changed: {}",
                        if line.is_empty() { "none" } else { &line }
                    ));
                }
            }
            Err(why) => print_err(&format!("the roots were not reloaded: {why}")),
        }
        let wanted = (read.policy.clone(), read.guard.default);
        if wanted == running {
            continue;
        }
        match read.policy() {
            Ok(policy) => {
                print_err(&format!(
                    "policy reloaded: {} rules; where none matches: {}",
                    policy.rules().len(),
                    policy.default_decision()
                ));
                host.set_policy(Arc::new(policy));
                running = wanted;
            }
            Err(why) => print_err(&format!("the policy was not reloaded: {why}")),
        }
    }
}

/// Who answers servers' sampling requests, for the start-up lines.
fn sampling_line(options: &mcp_host::HostOptions) -> String {
    let sampling = &options.sampling;
    let Some(model) = sampling.models.first() else {
        return "sampling: the calling client answers (no [model] configured)".into();
    };
    let settings = &sampling.settings;
    let mode = match settings.mode.unwrap_or(SamplingMode::ClientThenHost) {
        SamplingMode::Client => "the calling client answers",
        SamplingMode::Host => "the host's model answers",
        SamplingMode::ClientThenHost => "the calling client answers, else the host's model",
    };
    let approve = match settings.approve.unwrap_or_default() {
        Approve::Ask => "a person at the terminal approves each request and reply",
        Approve::Allow => "unattended",
    };
    let mut line = format!(
        "sampling: {mode}; model {:?} at {} ({approve})",
        model.model,
        model.base_url()
    );
    if !settings.servers.is_empty() {
        let names: Vec<&str> = settings.servers.keys().map(String::as_str).collect();
        line.push_str(&format!("; own rules for {}", names.join(", ")));
    }
    line
}

/// `n` things, with the plural where English wants one.
fn counted(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// Reloads the configuration when a file changes (checked every second)
/// or on SIGHUP: added, removed and changed servers start, stop and
/// restart; the others are not touched. A file that cannot be read keeps
/// the running configuration.
async fn watch_config(host: Host, args: HostFiles, vars: Variables) {
    let files: Vec<PathBuf> = args
        .config
        .iter()
        .cloned()
        .chain(workspace_files(&args))
        .collect();
    if files.is_empty() {
        return;
    }
    let mut watch = crate::file_watch::FileWatch::new(files);
    loop {
        watch.changed().await;
        match load(&args, &vars) {
            Ok(config) => {
                let done = host.reload(config);
                print_err(&format!(
                    "configuration reloaded: {}",
                    reload_summary(&done.started, &done.stopped)
                ));
            }
            Err(e) => {
                let error = format!("{e}");
                print_err(&format!(
                    "configuration not reloaded (the running one is kept): {error}"
                ));
                host.reload_failed(error);
            }
        }
    }
}

/// What a reload did, in words: servers restarted (stopped and started
/// again), started and stopped.
fn reload_summary<'a>(started: &'a [String], stopped: &'a [String]) -> String {
    let restarted: Vec<&str> = started
        .iter()
        .filter(|name| stopped.contains(name))
        .map(String::as_str)
        .collect();
    let only = |names: &'a [String]| -> Vec<&'a str> {
        names
            .iter()
            .map(String::as_str)
            .filter(|name| !restarted.contains(name))
            .collect()
    };
    let (started, stopped) = (only(started), only(stopped));
    let parts: Vec<String> = [
        ("restarted", restarted),
        ("started", started),
        ("stopped", stopped),
    ]
    .into_iter()
    .filter(|(_, names)| !names.is_empty())
    .map(|(what, names)| format!("{what} {}", names.join(", ")))
    .collect();
    if parts.is_empty() {
        "no server changed".into()
    } else {
        parts.join("; ")
    }
}

/// The configuration as `--print-config` shows it: values of environment
/// variables and headers whose names look secret are masked.
fn masked(config: &HostConfig) -> Value {
    let mut value = serde_json::to_value(config).unwrap_or_default();
    if let Some(servers) = value.get_mut("servers") {
        *servers = Value::Array(config.servers.iter().map(ServerConfig::shown).collect());
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reloads_are_said_in_words() {
        let names = |list: &[&str]| list.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            reload_summary(&names(&["a", "b"]), &names(&["b", "c"])),
            "restarted b; started a; stopped c"
        );
        assert_eq!(reload_summary(&[], &[]), "no server changed");
        assert_eq!(counted(1, "resource"), "1 resource");
        assert_eq!(counted(0, "prompt"), "0 prompts");
    }
}
