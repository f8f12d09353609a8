//! `mcp host`: the servers of the user's config files (or the embedded
//! default) supervised and served as one MCP server, over Streamable HTTP
//! (with HTTP+SSE and WebSocket) or stdio; `mcp host status` asks a
//! running host how its servers are.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, Result, bail};
use axum::routing::get;
use mcp_host::config::{GivenInputs, HostConfig, ServerConfig, Variables};
use mcp_host::{
    AuditLog, AuditSettings, AuthorizerFactory, Gateway, Host, HostSettings, UpstreamState,
};
use serde_json::Value;

use crate::oauth::OAuthArgs;
use crate::serve::{
    Extra, Limits, SharedStores, bind, serve_service, serve_shared, shutdown_signal,
};
use crate::stderr::print_err;
use crate::stdout::{print_json, print_out};
use crate::tty_inputs::TtyInputs;

/// The flags of `mcp host`.
#[derive(clap::Args, Debug)]
pub struct HostArgs {
    /// A config file listing servers (repeatable; later files override
    /// earlier entries of the same name): Claude Desktop, Claude Code or
    /// Cursor `mcpServers`, VS Code `mcp.json` (`servers`, `inputs`), or
    /// Zed `context_servers`. Without it, the embedded default.
    #[arg(long, value_name = "FILE")]
    pub config: Vec<PathBuf>,
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
    /// Also accept these Host names and Origins (repeatable), beyond the
    /// loopback ones; `*` accepts any (only behind a trusted proxy).
    #[arg(long, value_name = "HOST_OR_ORIGIN")]
    pub allow: Vec<String>,
    /// The host's own settings (TOML: listen address, timeouts, limits;
    /// see `mcp host --print-config` for every key). Flags win over it.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// `${workspaceFolder}` in config files (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The value of VS Code input ID (`${input:ID}`), so no one is asked
    /// (repeatable). Also: `--inputs-file`, or the environment variable
    /// MCP_INPUT_<ID> (the id in capitals, `-` and `.` as `_`). Without any,
    /// the terminal is asked; with no terminal, the input's default is
    /// used.
    #[arg(long, value_name = "ID=VALUE")]
    pub input: Vec<String>,
    /// A file of `ID=VALUE` lines giving VS Code inputs (an env file).
    #[arg(long, value_name = "FILE")]
    pub inputs_file: Option<PathBuf>,
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
    /// Record every request (who, what, which server, how it ended, how
    /// long it took) in this SQLite file, created if missing; `[audit]` in
    /// the settings file says more (arguments, how many records to keep).
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    #[command(flatten)]
    pub oauth: OAuthArgs,
}

/// Where `mcp host` listens when given neither --http nor --stdio.
const DEFAULT_ADDR: &str = "127.0.0.1:8080";

/// Runs `mcp host`.
pub async fn run(args: &HostArgs) -> Result<()> {
    let settings = settings_of(args.settings.as_deref())?;
    let mut options = settings.options().map_err(anyhow::Error::msg)?;
    // Remote servers that ask for OAuth use the credentials `mcp call` and
    // `mcp tools` keep (and sign in as they do when there are none).
    options.supervisor.authorizer = Some(AuthorizerFactory(Arc::new(|url: String| {
        Box::pin(async move {
            crate::target::login(&url)
                .await
                .map_err(|e| format!("{e:#}"))
        })
    })));
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
    let vars = variables(args)?;
    let config = load(args, &vars)?;
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
    // The address first: a busy port fails before any server starts.
    let listener = match (stdio, http) {
        (true, _) => None,
        (false, Some(addr)) => Some(bind(addr).await?),
        (false, None) => Some(bind(DEFAULT_ADDR.parse()?).await?),
    };
    // A request a rule marks `ask` is put to the client, then the
    // terminal; grants for always are kept for the next runs.
    options
        .consent
        .registered
        .push(Arc::new(crate::tty_approver::TtyApprover::default()));
    // Grants for always and pins are kept where a store is set, or where
    // some rule asks (in the user's state folder then).
    if settings.guard.store.is_some() || options.policy.can_ask() {
        let store = Arc::new(open_store(&settings)?);
        options.consent.store = Some(Arc::clone(&store));
        options.supervisor.pins = Some(store);
    }
    print_err(&policy_line(&options));
    // Served at once: servers that start slowly, or never, hold no one up.
    let host = Host::start(config, options);
    let reporting = tokio::spawn(report_states(host.clone(), start_timeout));
    let reloading = tokio::spawn(watch_config(host.clone(), args.config.clone(), vars));
    let gateway = Gateway::new(host.clone(), "mcp-host", env!("CARGO_PKG_VERSION"));
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
        let routes = status_routes(&host);
        match &redis {
            None => {
                serve_service(
                    service,
                    config,
                    listener,
                    &allow,
                    &args.oauth,
                    routes,
                    limits,
                )
                .await
            }
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
                serve_shared(
                    service,
                    config,
                    listener,
                    &allow,
                    &args.oauth,
                    routes,
                    limits,
                    Some(shared),
                )
                .await
            }
        }
    };
    reloading.abort();
    reporting.abort();
    host.shutdown(Duration::from_secs(10)).await;
    served
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
fn variables(args: &HostArgs) -> Result<Variables> {
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

/// The configuration: the files given, or the embedded default.
fn load(args: &HostArgs, vars: &Variables) -> Result<HostConfig> {
    if args.config.is_empty() {
        return embedded_default();
    }
    Ok(HostConfig::load(&args.config, vars)?)
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

/// The settings in `file`, or the defaults without one.
fn settings_of(file: Option<&std::path::Path>) -> Result<HostSettings> {
    Ok(match file {
        Some(path) => HostSettings::load(path)?,
        None => HostSettings::default(),
    })
}

/// The guard's store: `[guard] store`, else the user's state folder.
fn open_store(settings: &HostSettings) -> Result<mcp_host::consent::GuardStore> {
    let path = settings.guard.store.clone().unwrap_or_else(|| {
        crate::target::xdg_dir("XDG_STATE_HOME", ".local/state").join("guard.sqlite")
    });
    mcp_host::consent::GuardStore::open(&path).map_err(anyhow::Error::msg)
}

/// The flags of `mcp host approve`.
#[derive(clap::Args, Debug)]
pub struct ApproveArgs {
    /// The server, by its name in the config.
    pub server: String,
    /// The tool, prompt or resource (its name at the server; a glob).
    #[arg(default_value = "*")]
    pub name: String,
    /// The host's settings file, whose `[guard] store` keeps the pins
    /// (default: the user's state folder).
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
}

/// Runs `mcp host approve`: the definitions of `server` that changed
/// since they were pinned are pinned as they are now.
pub fn approve(args: &ApproveArgs) -> Result<()> {
    let settings = settings_of(args.settings.as_deref())?;
    let store = open_store(&settings)?;
    let approved = store
        .approve(&args.server, &args.name)
        .map_err(anyhow::Error::msg)?;
    if approved.is_empty() {
        bail!(
            "no definition of server {:?} matching {:?} waits for approval (in {})",
            args.server,
            args.name,
            store.path().display()
        );
    }
    let mut out = String::new();
    for item in approved {
        out.push_str(&format!("approved: {} {item}\n", args.server));
    }
    print_out(&out)
}

/// The flags of `mcp host explain`.
#[derive(clap::Args, Debug)]
pub struct ExplainArgs {
    /// The server, by its name in the config.
    pub server: String,
    /// The tool's name at the server (with --prompt, a prompt's; with
    /// --resource, a resource's URI).
    pub name: String,
    /// NAME is a prompt.
    #[arg(long, conflicts_with = "resource")]
    pub prompt: bool,
    /// NAME is a resource's URI.
    #[arg(long)]
    pub resource: bool,
    /// The caller's OAuth subject (default: anonymous).
    #[arg(long, value_name = "SUBJECT")]
    pub caller: Option<String>,
    /// A scope the caller's token holds (repeatable).
    #[arg(long = "scope", value_name = "SCOPE")]
    pub scopes: Vec<String>,
    /// The OAuth client the token was issued to.
    #[arg(long, value_name = "ID")]
    pub client_id: Option<String>,
    /// The client's own name (clientInfo).
    #[arg(long, value_name = "NAME")]
    pub client: Option<String>,
    /// The tool's annotations, as its server lists them (JSON).
    #[arg(long, value_name = "JSON")]
    pub annotations: Option<String>,
    /// The server is marked trusted (its annotations are believed).
    #[arg(long)]
    pub trusted: bool,
    /// The host's settings file, whose `[[policy]]` rules decide.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
}

/// Runs `mcp host explain`: how the policy decides a request, and why
/// each rule matches it or not.
pub fn explain(args: &ExplainArgs) -> Result<()> {
    use mcp_host::policy::{Asked, Caller, Hints, Kind};
    let settings = settings_of(args.settings.as_deref())?;
    let options = settings.options().map_err(anyhow::Error::msg)?;
    let caller = Caller {
        subject: args.caller.clone(),
        client_id: args.client_id.clone(),
        scopes: args.scopes.clone(),
        client_name: args.client.clone(),
    };
    let kind = match (args.prompt, args.resource) {
        (true, _) => Kind::Prompt,
        (_, true) => Kind::Resource,
        _ => Kind::Tool,
    };
    let annotations: Option<Value> = args
        .annotations
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .context("--annotations must be JSON")?;
    let hints = (kind == Kind::Tool).then(|| Hints::believed(annotations.as_ref(), args.trusted));
    let (verdict, rules) = options.policy.explain(&Asked {
        caller: &caller,
        server: &args.server,
        kind,
        name: &args.name,
        hints,
    });
    let mut out = format!(
        "{} {:?} of server {:?} for caller {:?}: {} ({})\n",
        kind.as_str(),
        args.name,
        args.server,
        caller.name(),
        verdict.decision,
        verdict.decided_by()
    );
    for (name, decision, why_not) in &rules {
        match why_not {
            None => out.push_str(&format!("  {name} ({decision}): matches\n")),
            Some(why) => out.push_str(&format!("  {name} ({decision}): no, {why}\n")),
        }
    }
    out.push_str(&format!(
        "  where no rule matches: {}\n",
        options.policy.default_decision()
    ));
    print_out(&out)
}

/// The flags of `mcp host import-permissions`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// Files of other hosts: Claude Code settings (`permissions`), Cline or
    /// Roo Code MCP settings (`autoApprove`, `alwaysAllow`).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// Runs `mcp host import-permissions`: prints the `[[policy]]` rules the
/// files' permissions make, for a settings file; says on stderr what
/// could not be carried over.
pub fn import_permissions(args: &ImportArgs) -> Result<()> {
    let mut out = String::new();
    for file in &args.files {
        let source = file.display().to_string();
        let text =
            std::fs::read_to_string(file).with_context(|| format!("cannot read {source}"))?;
        let imported =
            mcp_host::policy::import::import(&text, &source).map_err(anyhow::Error::msg)?;
        for skipped in &imported.skipped {
            print_err(&format!("{source}: left out: {skipped}"));
        }
        out.push_str(&format!("# From {source}\n"));
        if imported.wants_ask_default {
            out.push_str(
                "# These tools ran there without asking; with [guard] default = \"ask\" the\n\
                 # others are put to a person first.\n",
            );
        }
        out.push_str(&mcp_host::policy::import::as_settings(&imported.rules));
        out.push('\n');
    }
    print_out(&out)
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

/// `n` things, with the plural where English wants one.
fn counted(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// `/status` (JSON, for people and scripts) and `/healthz` (for load
/// balancers: 200 while at least one server is ready or none is
/// configured, 503 otherwise).
fn status_routes(host: &Host) -> Extra {
    let for_status = host.clone();
    let for_health = host.clone();
    Extra {
        guarded: Some(axum::Router::new().route(
            "/status",
            get(move || {
                let host = for_status.clone();
                async move {
                    let body = serde_json::to_string(&host.status()).unwrap_or_default();
                    ([(http::header::CONTENT_TYPE, "application/json")], body)
                }
            }),
        )),
        open: Some(axum::Router::new().route(
            "/healthz",
            get(move || {
                let host = for_health.clone();
                async move {
                    let servers = host.status().servers;
                    let healthy = servers.is_empty()
                        || servers.iter().any(|s| {
                            matches!(s.state, UpstreamState::Ready | UpstreamState::Degraded)
                        });
                    if healthy {
                        (http::StatusCode::OK, "ok")
                    } else {
                        (http::StatusCode::SERVICE_UNAVAILABLE, "no server is ready")
                    }
                }
            }),
        )),
    }
}

/// Reloads the configuration when a file changes (checked every second)
/// or on SIGHUP: added, removed and changed servers start, stop and
/// restart; the others are not touched. A file that cannot be read keeps
/// the running configuration.
async fn watch_config(host: Host, files: Vec<PathBuf>, vars: Variables) {
    if files.is_empty() {
        return;
    }
    let stamp = |files: &[PathBuf]| -> Vec<Option<SystemTime>> {
        files
            .iter()
            .map(|f| std::fs::metadata(f).and_then(|m| m.modified()).ok())
            .collect()
    };
    let mut seen = stamp(&files);
    #[cfg(unix)]
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
    loop {
        #[cfg(unix)]
        let signalled = async {
            match hangup.as_mut() {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        #[cfg(not(unix))]
        let signalled = std::future::pending::<()>();
        let forced = tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => false,
            _ = signalled => true,
        };
        let now = stamp(&files);
        if !forced && now == seen {
            continue;
        }
        seen = now;
        match HostConfig::load(&files, &vars) {
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
    if let Some(servers) = value.get_mut("servers").and_then(Value::as_array_mut) {
        for server in servers {
            for key in ["env", "headers"] {
                if let Some(Value::Object(map)) =
                    server.get_mut("transport").and_then(|t| t.get_mut(key))
                {
                    for (name, value) in map.iter_mut() {
                        if looks_secret(name) {
                            *value = Value::String("***".into());
                        }
                    }
                }
            }
        }
    }
    value
}

fn looks_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "token",
        "secret",
        "key",
        "password",
        "passwd",
        "auth",
        "credential",
        "cookie",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// The base URL of a host named as `--url` takes it: a URL (with or
/// without `/mcp`), an address (`127.0.0.1:8080`, `localhost:8080`), or a
/// port alone (on 127.0.0.1), as `--http` takes them.
fn status_base(given: &str) -> String {
    let given = given.trim().trim_end_matches('/');
    let base = given.trim_end_matches("/mcp").trim_end_matches('/');
    if base.contains("://") {
        return base.to_owned();
    }
    match crate::serve::parse_listen_addr(base) {
        Ok(addr) => format!("http://{addr}"),
        Err(_) => format!("http://{base}"),
    }
}

/// The flags of `mcp host status`.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// The running host's address, as its --http took it (a port alone,
    /// an address such as 127.0.0.1:8080, or a URL).
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// Print the JSON status as it is.
    #[arg(long)]
    pub json: bool,
}

/// Runs `mcp host status`.
pub async fn status(args: &StatusArgs) -> Result<()> {
    let url = format!("{}/status", status_base(&args.url));
    let response = reqwest::Client::new()
        .get(&url)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .with_context(|| format!("cannot reach a host at {url}"))?;
    if !response.status().is_success() {
        bail!("{url} answered {}", response.status());
    }
    let status: Value = response
        .json()
        .await
        .with_context(|| format!("{url} did not answer JSON"))?;
    if args.json {
        return print_json(&status);
    }
    let servers = status["servers"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let width = servers
        .iter()
        .filter_map(|s| s["name"].as_str())
        .map(|name| name.chars().count())
        .max()
        .unwrap_or_default()
        .max("server".len());
    let mut out = String::new();
    out.push_str(&format!(
        "{:<width$} {:<11} {:<16} {:<11} {:>5} {:>9} {:>7} {:>8}  last error\n",
        "server", "state", "transport", "revision", "tools", "resources", "prompts", "restarts"
    ));
    for server in servers {
        let text = |key: &str| server[key].as_str().unwrap_or("-").to_owned();
        let count = |key: &str| server[key].as_u64().unwrap_or_default();
        out.push_str(&format!(
            "{:<width$} {:<11} {:<16} {:<11} {:>5} {:>9} {:>7} {:>8}  {}\n",
            text("name"),
            text("state"),
            text("transport"),
            text("revision"),
            count("tools"),
            count("resources"),
            count("prompts"),
            count("restarts"),
            text("lastError"),
        ));
    }
    for server in status["servers"].as_array().into_iter().flatten() {
        for hint in server["hints"].as_array().into_iter().flatten() {
            let (name, hint) = (server["name"].as_str(), hint.as_str());
            out.push_str(&format!(
                "hint: {}: {}\n",
                name.unwrap_or("?"),
                hint.unwrap_or("?")
            ));
        }
    }
    for server in status["servers"].as_array().into_iter().flatten() {
        for flagged in server["flagged"].as_array().into_iter().flatten() {
            let flags: Vec<&str> = flagged["flags"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            out.push_str(&format!(
                "suspicious: {}: {} {} ({})\n",
                server["name"].as_str().unwrap_or("?"),
                flagged["kind"].as_str().unwrap_or("?"),
                flagged["name"].as_str().unwrap_or("?"),
                flags.join(", ")
            ));
        }
    }
    for server in status["servers"].as_array().into_iter().flatten() {
        for changed in server["changed"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "changed since pinned: {}: {} {} (mcp host approve {} {})\n",
                server["name"].as_str().unwrap_or("?"),
                changed["kind"].as_str().unwrap_or("?"),
                changed["name"].as_str().unwrap_or("?"),
                server["name"].as_str().unwrap_or("?"),
                changed["name"].as_str().unwrap_or("?"),
            ));
        }
    }
    for problem in status["problems"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "not started: {} ({})\n",
            problem["server"].as_str().unwrap_or("?"),
            problem["message"].as_str().unwrap_or("?")
        ));
    }
    for collision in status["collisions"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "collision: {}\n",
            collision.as_str().unwrap_or("?")
        ));
    }
    if let Some(error) = status["reloadError"].as_str() {
        out.push_str(&format!(
            "config: the last change was not applied (the running configuration is kept): {error}\n"
        ));
    }
    let audit = &status["audit"];
    if audit.is_object() {
        let count = |key: &str| audit[key].as_u64().unwrap_or_default();
        out.push_str(&format!(
            "audit: {} ({}): {} written, {} pending, {} lost{}\n",
            audit["state"].as_str().unwrap_or("?"),
            audit["path"].as_str().unwrap_or("?"),
            count("written"),
            count("pending"),
            count("lost"),
            audit["lastError"]
                .as_str()
                .map(|e| format!("; {e}"))
                .unwrap_or_default()
        ));
    }
    print_out(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_takes_the_host_as_http_takes_it() {
        for (given, base) in [
            ("18080", "http://127.0.0.1:18080"),
            ("127.0.0.1:18080", "http://127.0.0.1:18080"),
            ("localhost:18080", "http://127.0.0.1:18080"),
            ("http://127.0.0.1:18080/mcp", "http://127.0.0.1:18080"),
            ("http://host.example:8080/", "http://host.example:8080"),
            ("host.example:8080", "http://host.example:8080"),
        ] {
            assert_eq!(status_base(given), base, "{given}");
        }
    }

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
