//! `mcp serve`: the built-in servers over stdio or Streamable HTTP.

use anyhow::Result;

use crate::stdout::print_out;

/// The built-in servers, each with its own options and the transport's.
#[derive(clap::Subcommand, Debug)]
pub enum BuiltIn {
    /// Every protocol feature, the conformance fixtures, `echo` and a calculator.
    Everything {
        #[command(flatten)]
        transport: Transport,
    },
    /// One SQLite database: its schema and rows as resources, read-only
    /// queries (enforced by SQLite), and with --write tools that change it.
    Sqlite {
        /// The database file (created with --write if missing).
        #[arg(value_name = "DB_FILE")]
        database: std::path::PathBuf,
        /// Offer the tools that change the database (execute, insert_row,
        /// update_row, delete_row); without it they are not listed.
        #[arg(long)]
        write: bool,
        /// How long one statement may run before it is stopped, in seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
        time_budget: f64,
        /// Rows a query returns when the caller does not ask for a number
        /// (beyond them the result says it was truncated).
        #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
        default_rows: u64,
        /// The most rows a caller may ask one query for.
        #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
        max_rows: u64,
        /// About how many bytes of values one result may hold.
        #[arg(long, value_name = "BYTES", default_value_t = 8 * 1024 * 1024, value_parser = clap::value_parser!(u64).range(1..))]
        max_result_bytes: u64,
        #[command(flatten)]
        transport: Transport,
    },
    /// A library of prompt templates: the Markdown files of DIR (YAML front
    /// matter, Handlebars body; several versions side by side), watched for
    /// changes; without DIR, the built-in examples (email reply, product
    /// description, data-analysis report, code function).
    Prompts {
        /// The directory of prompt files (`*.md`, searched recursively).
        #[arg(value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
        /// Read DIR once, without watching it for changes.
        #[arg(long)]
        no_watch: bool,
        #[command(flatten)]
        transport: Transport,
    },
    /// Files in the given directories, read-only unless --write: reading,
    /// listing, searching (names and contents), resources, and with
    /// --write atomic writes and edits. Secrets (.env, keys, .ssh/ ...)
    /// are refused unless --allow-secrets.
    Filesystem {
        /// The directories to serve; nothing outside them is reachable.
        #[arg(value_name = "DIR", required = true)]
        directories: Vec<std::path::PathBuf>,
        /// Offer the write tools (write_file, edit_file, create_directory,
        /// move_file, copy_file, delete_file).
        #[arg(long)]
        write: bool,
        /// Watch the directories: changes become resource notifications.
        #[arg(long)]
        watch: bool,
        /// Also refuse paths matching this glob (repeatable), beside the
        /// default secrets.
        #[arg(long, value_name = "GLOB")]
        deny: Vec<String>,
        /// Turn the secret deny-list off.
        #[arg(long)]
        allow_secrets: bool,
        /// Bytes of text one read returns at most; a longer file is read
        /// on with `offset`, as the truncated result says.
        #[arg(long, value_name = "BYTES", default_value_t = 256 * 1024, value_parser = clap::value_parser!(u64).range(1..))]
        max_read_bytes: u64,
        #[command(flatten)]
        transport: Transport,
    },
    /// An HTTP API described by an OpenAPI 3.0 or 3.1 document (JSON or
    /// YAML, a file or a URL): one tool per operation, GET operations as
    /// api:// resources. Loopback, private and link-local addresses are
    /// refused unless --allow-private-network.
    Openapi {
        /// The OpenAPI document: a .json or .yaml file, or an http(s) URL.
        #[arg(value_name = "SPEC")]
        spec: String,
        /// The API's address, instead of the document's first server.
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// A header sent with every request to the API, never shown to
        /// clients (repeatable): 'Authorization: Bearer ${TOKEN}', where
        /// ${VAR} is read from the environment.
        #[arg(long = "header", value_name = "'NAME: VALUE'")]
        headers: Vec<String>,
        /// Only operations with this tag (repeatable).
        #[arg(long, value_name = "TAG")]
        include_tag: Vec<String>,
        /// No operations with this tag (repeatable).
        #[arg(long, value_name = "TAG")]
        exclude_tag: Vec<String>,
        /// Only this operation, by operationId or tool name (repeatable).
        #[arg(long, value_name = "ID")]
        include_op: Vec<String>,
        /// Not this operation, by operationId or tool name (repeatable).
        #[arg(long, value_name = "ID")]
        exclude_op: Vec<String>,
        /// Let requests reach loopback, private and link-local addresses.
        #[arg(long)]
        allow_private_network: bool,
        /// The most bytes of a response body kept; the result says how
        /// many more were dropped.
        #[arg(long, value_name = "BYTES", default_value_t = 1 << 20)]
        max_response_bytes: usize,
        #[command(flatten)]
        transport: Transport,
    },
}

impl BuiltIn {
    /// Whether the server is served over stdio: one connection, which one
    /// thread serves best (see `runtime_for` in `main.rs`).
    pub fn over_stdio(&self) -> bool {
        let (BuiltIn::Everything { transport }
        | BuiltIn::Sqlite { transport, .. }
        | BuiltIn::Prompts { transport, .. }
        | BuiltIn::Filesystem { transport, .. }
        | BuiltIn::Openapi { transport, .. }) = self;
        transport.http.is_none()
    }

    /// Builds the server and serves it until its transport ends.
    pub async fn run(self) -> Result<()> {
        let (server, transport) = match self {
            BuiltIn::Everything { transport } => (mcp_builtin::everything::server(), transport),
            BuiltIn::Sqlite {
                database,
                write,
                time_budget,
                default_rows,
                max_rows,
                max_result_bytes,
                transport,
            } => {
                let budget = std::time::Duration::try_from_secs_f64(time_budget).map_err(|_| {
                    anyhow::anyhow!(
                        "--time-budget {time_budget}: give a positive number of seconds"
                    )
                })?;
                let config = mcp_builtin::sqlite::Config::new(database)
                    .write(write)
                    .time_budget(budget)
                    .default_rows(default_rows as usize)
                    .max_rows(max_rows as usize)
                    .max_result_bytes(max_result_bytes as usize);
                (mcp_builtin::sqlite::server(config)?, transport)
            }
            BuiltIn::Prompts {
                dir,
                no_watch,
                transport,
            } => {
                let config = match dir {
                    Some(dir) => mcp_builtin::prompts::PromptsConfig::directory(dir),
                    None => mcp_builtin::prompts::PromptsConfig::default(),
                };
                (
                    mcp_builtin::prompts::server(config.watch(!no_watch))?,
                    transport,
                )
            }
            BuiltIn::Filesystem {
                directories,
                write,
                watch,
                deny,
                allow_secrets,
                max_read_bytes,
                transport,
            } => {
                let limits = mcp_builtin::filesystem::Limits {
                    max_read_bytes: max_read_bytes as usize,
                    ..Default::default()
                };
                let mut config = mcp_builtin::filesystem::Config::new(directories)
                    .write(write)
                    .watch(watch)
                    .allow_secrets(allow_secrets)
                    .limits(limits);
                for glob in deny {
                    config = config.deny(glob);
                }
                (mcp_builtin::filesystem::server(config)?, transport)
            }
            BuiltIn::Openapi {
                spec,
                base_url,
                headers,
                include_tag,
                exclude_tag,
                include_op,
                exclude_op,
                allow_private_network,
                max_response_bytes,
                transport,
            } => {
                use mcp_builtin::openapi;
                let mut config = openapi::Config::new(spec)
                    .allow_private_network(allow_private_network)
                    .max_response_bytes(max_response_bytes);
                if let Some(url) = base_url {
                    config = config.base_url(url);
                }
                for header in &headers {
                    let (name, value) = openapi::parse_header(header)?;
                    config = config.header(name, value);
                }
                for tag in include_tag {
                    config = config.include_tag(tag);
                }
                for tag in exclude_tag {
                    config = config.exclude_tag(tag);
                }
                for id in include_op {
                    config = config.include_op(id);
                }
                for id in exclude_op {
                    config = config.exclude_op(id);
                }
                (openapi::server(config).await?, transport)
            }
        };
        transport.serve(server).await
    }
}

/// How a built-in server is served: over stdio unless `--http` says.
#[derive(clap::Args, Debug)]
pub struct Transport {
    /// Serve over Streamable HTTP on this address (port 0 picks a free
    /// one): 127.0.0.1:8080, localhost:8080, or a port alone (on
    /// 127.0.0.1). The endpoint is /mcp.
    #[arg(long, value_name = "ADDR", value_parser = parse_listen_addr)]
    http: Option<std::net::SocketAddr>,
    /// Also accept these Host names and Origins (repeatable), beyond
    /// the loopback ones; `*` accepts any (only behind a trusted proxy).
    #[arg(long, value_name = "HOST_OR_ORIGIN")]
    allow: Vec<String>,
    /// With --http: at most this many connections at once (default
    /// 10000); more are closed as soon as they come.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_connections: Option<u64>,
    /// With --http: at most this many connections at once from one IP
    /// address (default: no limit).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_connections_per_ip: Option<u64>,
    /// With --http: at most this many legacy sessions at once (default
    /// 10000); a new one beyond gets 503 while the others keep working.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_sessions: Option<u64>,
    /// With --http: a legacy session unused this long (seconds, default
    /// 1800) is ended, as if the client had deleted it.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    session_idle_timeout: Option<std::time::Duration>,
    /// With --http: keep legacy sessions and their SSE events in this
    /// Redis (redis://HOST:PORT/DB), so that several instances behind one
    /// load balancer serve the same sessions.
    #[arg(long, value_name = "URL", requires = "http")]
    redis: Option<String>,
    /// The secret that signs cursors and 2026-07-28 `requestState`
    /// (at least 16 bytes, e.g. `openssl rand -hex 32`), read from this
    /// file; or from the environment variable MCP_STATE_KEY. Every
    /// instance behind one load balancer must have the same, so one
    /// accepts what another issued. Without it, each process signs with a
    /// random key of its own; with --redis, with a random key kept in that
    /// Redis (the first instance makes it), shared by every instance on it.
    #[arg(long, value_name = "PATH")]
    state_key_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    oauth: crate::oauth::OAuthArgs,
}

/// The least bytes a state key may have.
const MIN_STATE_KEY: usize = 16;

/// The state key: the file's content, or `MCP_STATE_KEY`, trimmed of
/// surrounding whitespace; `None` if neither is given.
fn state_key(file: Option<&std::path::Path>) -> Result<Option<Vec<u8>>> {
    let (key, source) = match file {
        Some(path) => {
            let key = std::fs::read(path).map_err(|e| {
                anyhow::anyhow!("--state-key-file {}: cannot read it: {e}", path.display())
            })?;
            (key, format!("--state-key-file {}", path.display()))
        }
        None => match std::env::var_os("MCP_STATE_KEY") {
            Some(key) => (key.into_encoded_bytes(), "MCP_STATE_KEY".to_owned()),
            None => return Ok(None),
        },
    };
    let key = key.trim_ascii().to_vec();
    if key.len() < MIN_STATE_KEY {
        anyhow::bail!(
            "{source}: the state key has {} bytes, fewer than {MIN_STATE_KEY}; \
             make one with `openssl rand -hex 32`",
            key.len()
        );
    }
    Ok(Some(key))
}

/// Reads a positive number of seconds, at most a day.
fn parse_seconds(text: &str) -> Result<std::time::Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    mcp_host::settings::seconds(seconds, "the timeout")
}

impl Transport {
    /// Serves `server` over stdio (one session, until stdin closes) or,
    /// with `--http`, over Streamable HTTP until Ctrl-C or SIGTERM.
    pub async fn serve(self, server: mcp_server::Server) -> Result<()> {
        let state_key = state_key(self.state_key_file.as_deref())?;
        if let Some(key) = &state_key {
            server.set_state_key(key);
        }
        match self.http {
            None => {
                tracing::info!("serving {} over stdio", server.identity().info().name);
                server.serve_stdio().await;
                Ok(())
            }
            Some(addr) => {
                let config = server.session_config();
                let listener = bind(addr).await?;
                let limits = Limits {
                    max_connections: self.max_connections.map(|n| n as usize),
                    max_connections_per_ip: self.max_connections_per_ip.map(|n| n as usize),
                    max_sessions: self.max_sessions.map(|n| n as usize),
                    session_idle_timeout: self.session_idle_timeout,
                };
                let shared = match &self.redis {
                    Some(url) => {
                        let stores = SharedStores::redis(url).await?;
                        if state_key.is_none() {
                            server.set_state_key(&stores.shared_state_key().await?);
                        }
                        Some(stores.delivering(&server).await?)
                    }
                    None => None,
                };
                let service = std::sync::Arc::new(server);
                let extra = Extra::default();
                serve_shared(
                    service,
                    config,
                    listener,
                    &self.allow,
                    &self.oauth,
                    extra,
                    limits,
                    shared,
                )
                .await
            }
        }
    }
}

/// Limits of the HTTP endpoint beyond its defaults.
#[derive(Default)]
pub struct Limits {
    /// Legacy sessions open at once.
    pub max_sessions: Option<usize>,
    /// How long an idle legacy session lives.
    pub session_idle_timeout: Option<std::time::Duration>,
    /// Connections open at once.
    pub max_connections: Option<usize>,
    /// Connections open at once from one IP address.
    pub max_connections_per_ip: Option<usize>,
}

/// Reads `--http`: an address such as `127.0.0.1:8080` or `[::1]:8080`,
/// `localhost:PORT`, or a bare port, meaning `127.0.0.1:PORT`.
pub fn parse_listen_addr(text: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::{Ipv4Addr, SocketAddr};
    let text = text.trim();
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let port = match text.split_once(':') {
        Some((host, port)) if host.eq_ignore_ascii_case("localhost") => port,
        Some(_) => text,
        None => text,
    };
    port.parse::<u16>()
        .map(|port| SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .map_err(|_| {
            format!(
                "{text:?} is not an address to listen on: give an IP address and port \
                 (127.0.0.1:8080), localhost:PORT, or a port (8080)"
            )
        })
}

/// The Host names and Origins a listener on loopback port `port`
/// accepts: the loopback ones, and `allow` (`*`: any; an entry with a
/// scheme is an Origin, else a Host name).
pub(crate) fn origin_policy(port: u16, allow: &[String]) -> mcp_http::OriginPolicy {
    let mut policy = mcp_http::OriginPolicy::loopback(port);
    for entry in allow {
        policy = if entry == "*" {
            mcp_http::OriginPolicy::any()
        } else if entry.contains("://") {
            policy.allow_origin(entry)
        } else {
            policy.allow_host(entry)
        };
    }
    policy
}

/// Binds the listener of `--http`.
pub async fn bind(addr: std::net::SocketAddr) -> Result<tokio::net::TcpListener> {
    use anyhow::Context as _;
    tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))
}

/// Routes served beside the MCP endpoint: `guarded` behind the Host/Origin
/// guard (and the bearer layer with `--oauth`), `open` behind the guard
/// only (health checks).
#[derive(Default)]
pub struct Extra {
    /// Routes for people and scripts (status).
    pub guarded: Option<axum::Router>,
    /// Routes for load balancers (health).
    pub open: Option<axum::Router>,
    /// More MCP servers beside the main one, each under its path prefix
    /// (`/views/NAME`: `/views/NAME/mcp`, `/views/NAME/sse`,
    /// `/views/NAME/ws`), with the main endpoint's limits; their sessions
    /// are kept in this process.
    pub endpoints: Vec<(
        String,
        std::sync::Arc<dyn mcp_core::Service>,
        mcp_core::SessionConfig,
    )>,
}

/// What is done with each resource a session is subscribed to.
type UriHook = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

/// Where the sessions and SSE events of several instances are kept.
pub struct SharedStores {
    events: std::sync::Arc<dyn mcp_http::EventStore>,
    /// The Redis, for [`SharedStores::relaying`] and
    /// [`SharedStores::delivering`].
    client: mcp_redis::Client,
    manager: mcp_redis::ConnectionManager,
    /// The instances' bus, once joined; kept while the server runs.
    bus: Option<mcp_redis::RedisBus>,
    /// Told of the resources each session another instance changed is
    /// subscribed to, where set.
    on_subscriptions: Option<UriHook>,
    /// The session store (also asked for the subscriptions of a session
    /// another instance changed).
    sessions: mcp_redis::RedisSessionStore,
    /// The resource updates raised here, once standalone streams follow
    /// the store ([`SharedStores::following`]): answers wait for them.
    updates: Option<mcp_http::fanout::UpdateQueue>,
}

impl SharedStores {
    /// Both stores on the Redis at `url`, which must answer now.
    pub async fn redis(url: &str) -> Result<Self> {
        let redis = mcp_redis::connect(url).await?;
        let client = mcp_redis::Client::open(url)?;
        tracing::info!("sessions and events on Redis at {url}");
        Ok(SharedStores {
            events: std::sync::Arc::new(mcp_redis::RedisEventStore::new(redis.clone())),
            sessions: mcp_redis::RedisSessionStore::new(redis.clone()),
            client,
            manager: redis,
            bus: None,
            on_subscriptions: None,
            updates: None,
        })
    }

    /// The key that signs cursors and `requestState` on every instance on
    /// this Redis, where none is given: made at random by the first.
    pub async fn shared_state_key(&self) -> Result<Vec<u8>> {
        Ok(mcp_redis::shared_state_key(&mut self.manager.clone()).await?)
    }

    /// Joins the instances' bus, for any service: a client's answer to a
    /// request this instance sent it (elicitation, sampling, roots) that
    /// reaches another instance is relayed here, and a session's settings
    /// changed on another instance are reloaded here (wired by
    /// [`serve_shared`]). The endpoint then numbers its requests to
    /// clients from a random point, so instances do not reuse each
    /// other's ids. Neither the event store nor server-wide events change:
    /// see [`SharedStores::delivering`] for those.
    pub async fn relaying(mut self) -> Result<Self> {
        if self.bus.is_none() {
            let bus = mcp_redis::RedisBus::join(self.client.clone(), self.manager.clone()).await?;
            tracing::info!(
                instance = bus.instance(),
                "relaying answers across instances through Redis"
            );
            self.bus = Some(bus);
        }
        Ok(self)
    }

    /// Feeds each session's standalone stream from the shared store, so
    /// that what any instance sends a session reaches the instance holding
    /// its stream; and returns the queue that stores a resource update
    /// raised here for the subscribed sessions of every instance
    /// ([`mcp_http::fanout`]).
    pub fn following(mut self) -> (Self, mcp_http::fanout::UpdateQueue) {
        self.events = std::sync::Arc::new(
            mcp_redis::RedisEventStore::new(self.manager.clone()).follow_with(self.client.clone()),
        );
        let updates = mcp_http::fanout::UpdateQueue::start(
            self.events.clone(),
            std::sync::Arc::new(self.sessions.clone()),
        );
        self.updates = Some(updates.clone());
        (self, updates)
    }

    /// Calls `hook` with each resource a session is subscribed to when
    /// another instance changed the session's settings (needs
    /// [`SharedStores::relaying`]).
    pub fn on_subscriptions(&mut self, hook: impl Fn(&str) + Send + Sync + 'static) {
        self.on_subscriptions = Some(std::sync::Arc::new(hook));
    }

    /// The instances' bus, once joined ([`SharedStores::relaying`]).
    pub fn bus(&self) -> Option<&mcp_redis::RedisBus> {
        self.bus.as_ref()
    }

    /// The shared session store.
    pub fn sessions(&self) -> &mcp_redis::RedisSessionStore {
        &self.sessions
    }

    /// The resources sessions are subscribed to now, on any instance, and
    /// those listen streams asked for lately.
    pub async fn subscribed_resources(&self) -> Result<Vec<String>> {
        Ok(self.sessions.subscribed_resources().await?)
    }

    /// Delivers across instances what `server` sends: a session's
    /// standalone stream is fed from the shared store, whichever instance
    /// sent the message, and `server`'s server-wide events (resource
    /// updates, list changes) go to every instance, which re-raises them
    /// for its own clients; answers are relayed as with
    /// [`SharedStores::relaying`].
    pub async fn delivering(self, server: &mcp_server::Server) -> Result<Self> {
        let (this, updates) = self.following();
        let this = this.relaying().await?;
        let bus = this
            .bus
            .clone()
            .ok_or_else(|| anyhow::anyhow!("the bus is not joined"))?;
        let publisher = bus.clone();
        server.set_broadcast(move |event| {
            if let mcp_server::ServerEvent::ResourceUpdated { uri } = event {
                updates.push(uri);
            }
            match serde_json::to_string(event) {
                Ok(text) => publisher.publish_event(text),
                Err(error) => tracing::warn!(%error, "a server-wide event cannot be written"),
            }
        });
        let receiver = server.clone();
        bus.on_event(move |text| match serde_json::from_str(text) {
            Ok(event) => receiver.raise_here(&event),
            Err(error) => tracing::debug!(%error, "an unknown server-wide event"),
        });
        tracing::info!(
            instance = bus.instance(),
            "delivering across instances through Redis"
        );
        Ok(this)
    }
}

/// Serves `service` over Streamable HTTP (and HTTP+SSE and WebSocket) on
/// `listener` until Ctrl-C or SIGTERM, with sessions and events in `shared`
/// stores if given.
#[allow(clippy::too_many_arguments)]
pub async fn serve_shared(
    service: std::sync::Arc<dyn mcp_core::Service>,
    session_config: mcp_core::SessionConfig,
    listener: tokio::net::TcpListener,
    allow: &[String],
    oauth: &crate::oauth::OAuthArgs,
    extra: Extra,
    limits: Limits,
    shared: Option<SharedStores>,
) -> Result<()> {
    let local = listener.local_addr()?;
    let policy = std::sync::Arc::new(origin_policy(local.port(), allow));
    let mut config = mcp_http::HttpConfig::loopback(local.port()).origin_policy((*policy).clone());
    if let Some(max) = limits.max_sessions {
        config = config.max_sessions(max);
    }
    if let Some(idle) = limits.session_idle_timeout {
        config = config.session_idle_timeout(idle);
    }
    if let Some(max) = limits.max_connections {
        config = config.max_connections(max);
    }
    if let Some(max) = limits.max_connections_per_ip {
        config = config.max_connections_per_ip(max);
    }
    // Kept while the endpoint serves.
    let mut _bus = None;
    let mut subscriptions = None;
    if let Some(shared) = shared {
        subscriptions = shared
            .on_subscriptions
            .map(|hook| (hook, shared.sessions.clone()));
        config = config
            .event_store(shared.events)
            .session_store(std::sync::Arc::new(shared.sessions));
        if let Some(updates) = shared.updates {
            config = config.stored_updates(updates);
        }
        if let Some(bus) = &shared.bus {
            config = config
                .response_relay(std::sync::Arc::new(bus.clone()))
                .task_relay(std::sync::Arc::new(bus.clone()));
        }
        _bus = shared.bus;
    }
    let (origin, resource) = endpoint_urls(local);
    // The HTTP+SSE and WebSocket endpoints beside /mcp.
    let endpoints: Vec<String> = [&config.legacy_sse_path, &config.websocket_path]
        .into_iter()
        .flatten()
        .map(|path| format!("{origin}{path}"))
        .collect();
    // The other endpoints' routes, guarded as the others are.
    let mut guarded_routes = extra.guarded;
    for (prefix, service, session_config) in extra.endpoints {
        let mut config = config.clone().path(format!("{prefix}/mcp"));
        config.legacy_sse_path = Some(format!("{prefix}/sse"));
        config.legacy_message_path = format!("{prefix}/messages");
        config.websocket_path = Some(format!("{prefix}/ws"));
        let own = mcp_http::HttpConfig::loopback(local.port());
        config.event_store = own.event_store;
        config.session_store = own.session_store;
        config.stored_updates = None;
        config.response_relay = None;
        config.task_relay = None;
        let router = mcp_http::McpEndpoint::new(service, session_config, config).router();
        guarded_routes = Some(match guarded_routes {
            Some(routes) => routes.merge(router),
            None => router,
        });
    }
    let endpoint = mcp_http::McpEndpoint::new(service, session_config, config);
    if let Some(bus) = &_bus {
        // Answers other instances received to this one's requests.
        let forwarded_to = std::sync::Arc::clone(&endpoint);
        bus.on_forwarded(move |session, message| {
            let (endpoint, session, message) = (
                std::sync::Arc::clone(&forwarded_to),
                session.to_owned(),
                message.to_owned(),
            );
            tokio::spawn(async move { endpoint.take_forwarded(&session, &message).await });
        });
        // Requests about the tasks this instance runs, from the others.
        bus.answer_tasks_with(&endpoint);
        // Sessions whose settings another instance changed.
        let changed_in = std::sync::Arc::clone(&endpoint);
        bus.on_session_changed(move |session| {
            let (endpoint, session) = (std::sync::Arc::clone(&changed_in), session.to_owned());
            let subscriptions = subscriptions.clone();
            tokio::spawn(async move {
                endpoint.refresh_session(&session).await;
                if let Some((hook, sessions)) = subscriptions {
                    match sessions.subscriptions(&session).await {
                        Ok(uris) => uris.iter().for_each(|uri| hook(uri)),
                        Err(error) => {
                            tracing::warn!(%error, "cannot read a session's subscriptions")
                        }
                    }
                }
            });
        });
    }
    let guard = mcp_http::guard::GuardLayer::new(std::sync::Arc::clone(&policy));
    let plain = guarded_routes.is_none() && extra.open.is_none();
    let guarded = guarded_routes.map(|r| r.layer(guard.clone()));
    let open = extra.open.map(|r| r.layer(guard));
    let with_guarded = move |router: axum::Router| match guarded {
        Some(extra) => router.merge(extra),
        None => router,
    };
    let with_open = move |router: axum::Router| match open {
        Some(extra) => router.merge(extra),
        None => router,
    };
    if oauth.enabled() {
        let protect = crate::oauth::protect(oauth, &origin, &resource, &endpoints).await?;
        print_out(&format!("MCP endpoint: {resource}\n"))?;
        if oauth.oauth {
            print_out(&format!("OAuth issuer: {origin}\n"))?;
        }
        let wrap = move |router| with_open(protect(with_guarded(router)));
        mcp_http::serve_with(listener, endpoint, wrap, shutdown_signal()).await?;
    } else if plain {
        // The endpoint alone: its own fast path, without a router.
        print_out(&format!("MCP endpoint: {resource}\n"))?;
        mcp_http::serve(listener, endpoint, shutdown_signal()).await?;
    } else {
        print_out(&format!("MCP endpoint: {resource}\n"))?;
        mcp_http::serve_with(
            listener,
            endpoint,
            move |router| with_open(with_guarded(router)),
            shutdown_signal(),
        )
        .await?;
    }
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! {
            _ = interrupt => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

/// The origin of an HTTP endpoint listening on `local`, and the URL of
/// its MCP endpoint (the protected resource, with `--oauth`).
pub(crate) fn endpoint_urls(local: std::net::SocketAddr) -> (String, String) {
    let origin = format!("http://{local}");
    let resource = format!("{origin}/mcp");
    (origin, resource)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_ports_and_localhost() {
        let at = |text: &str| parse_listen_addr(text).map(|a| a.to_string());
        assert_eq!(at("127.0.0.1:8080"), Ok("127.0.0.1:8080".into()));
        assert_eq!(at("0.0.0.0:80"), Ok("0.0.0.0:80".into()));
        assert_eq!(at("[::1]:8080"), Ok("[::1]:8080".into()));
        assert_eq!(at("8080"), Ok("127.0.0.1:8080".into()));
        assert_eq!(at("localhost:8081"), Ok("127.0.0.1:8081".into()));
        assert_eq!(at("LOCALHOST:0"), Ok("127.0.0.1:0".into()));
        assert!(at("example.com:80").is_err());
        assert!(at("80000").is_err());
        assert!(at("localhost").is_err());
    }
}
