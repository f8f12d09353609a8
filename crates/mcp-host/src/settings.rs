//! The host's own settings, in a TOML file of this host's design (the
//! server lists stay in the files users already have). Every key is
//! optional; an unknown key is an error, so a typo is not silently
//! ignored.
//!
//! ```toml
//! [serve]
//! http = "127.0.0.1:8080"    # or: stdio = true
//! allow = ["mcp.example.com"] # Host names and Origins beyond loopback
//! max_sessions = 10000        # legacy HTTP sessions at once
//! session_idle_timeout = 1800 # seconds
//! max_connections = 10000     # HTTP connections at once
//! max_connections_per_ip = 64 # from one address (default: no limit)
//! redis = "redis://127.0.0.1:6379/0" # sessions and SSE events shared by several hosts
//!
//! [admin]                     # an address of its own for operators
//! http = "127.0.0.1:9090"     # /metrics (Prometheus), /status, /healthz
//! token = "..."               # bearer token for all but /healthz (or MCP_ADMIN_TOKEN; default: a random one, printed)
//! metrics = true              # count requests even without the listener (for `mcp host status`)
//!
//! [servers]                   # how every upstream is supervised
//! connect_timeout = 30        # seconds to start, handshake and list
//! probe_patience = 10         # seconds server/discover is waited for before initialize is sent too
//! request_timeout = 60        # seconds per request (an entry's "timeout" wins)
//! health_interval = 30        # seconds between pings
//! backoff_initial = 0.5       # seconds before the first restart
//! backoff_max = 30            # the longest wait between restarts
//! shutdown_grace = 2          # seconds per step of stopping a child
//! max_in_flight = 256         # calls in flight per server; more wait
//! max_waiting = 1024          # calls waiting for a slot per server; more are refused
//! max_wait = 30               # seconds a call waits for a slot before it is refused
//! start_concurrency = 8       # servers starting at once
//! max_message_bytes = 16777216 # the longest message from a stdio server
//! max_callers = 16            # callers' own connections per "isolation": "per-caller" server
//! caller_idle = 300           # seconds such a connection is kept unused
//!
//! [audit]                     # one record per request, in SQLite
//! path = "audit.db"           # relative to this file's directory
//! arguments = false           # record the calls' arguments too
//! max_argument_bytes = 16384  # of them, at most
//! max_records = 1000000       # older records are deleted
//! max_age_days = 90           # and records older than this (default: kept)
//! backlog = 10000             # records kept in memory while the file fails
//!
//! [guard]
//! default = "allow"           # where no rule matches: allow | ask | deny
//! approvers = ["client", "console", "terminal"] # who is asked where a rule says ask, in order (also "http")
//! ask_timeout = 120           # seconds a person has to answer
//! store = "guard.db"          # grants for always and pins (default: the user's state folder)
//! changed = "ask"             # a definition changed since pinned: ask | hide | warn
//! secrets = "off"             # results holding a secret: off | redact | block (an entry's "secrets" wins)
//! trust_config = false        # true: servers a config change adds run without asking (--trust-config)
//! [guard.http]                # the "http" approver: an operator's endpoint, see consent::http
//! url = "https://ops.example.com/approve"
//! headers = { Authorization = "Bearer ..." }
//!
//! [[limits]]                  # rate limits, see the limits module
//! server = "memory"           # glob (optional; also tool = , method = , view = )
//! per = "caller"              # whose budget: caller | server | tool
//! rate = "20/minute"          # N/second | N/minute | N/hour (or preset = "read" | "invoke_tool" | "create" | "update" | "delete" | "default")
//!
//! [views.research]            # a view: a subset of the catalog at /views/research/mcp (or --view research)
//! servers = ["time", "fetch*"] # globs over the config's server names
//! tools = ["*"]               # globs over the tools' names as shown
//! discovery = true            # list search_tools, describe_tool and call_tool instead
//!
//! [model]                     # the host's model: sampling at the host, mcp chat
//! provider = "openai"         # openai (any OpenAI-compatible server) | anthropic
//! base_url = "http://127.0.0.1:8000/v1" # default: the provider's own API
//! model = "smollm2"           # its name at the provider
//! api_key_env = "OPENAI_API_KEY" # the variable holding the key (default per provider; none for local servers)
//! timeout = 120               # seconds for a whole answer
//! retries = 3                 # on 429, 5xx and lost connections, as Retry-After says
//! max_tokens = 1024           # an answer's length where the request does not say
//!
//! [models.fast]               # more models, chosen by a request's modelPreferences
//! model = "gpt-4o-mini"       # (same keys, and cost, speed, intelligence in [0, 1])
//! cost = 0.9
//!
//! [sampling]                  # who answers servers' sampling requests
//! mode = "client-then-host"   # client | host | client-then-host (default with a [model])
//! approve = "ask"             # ask (a person sees each request and reply) | allow
//! review_reply = true         # with ask: the reply is shown before the server gets it
//! max_tokens = 2048           # a request asking more is cut to this
//! rate = "30/hour"            # requests the model answers per server
//! tokens = "50000/hour"       # tokens they may ask for (each spends its maxTokens)
//! [sampling.servers.everything] # per server, the same keys
//! approve = "allow"
//!
//! [roots]                     # directories offered to servers as roots
//! paths = ["~/projects/app"]  # each must exist (relative to this file's folder)
//!
//! [traces]                    # a span per request and per hop to a server, over OTLP
//! otlp = "http://127.0.0.1:4318" # the collector (spans to its /v1/traces)
//! protocol = "http/protobuf"  # or http/json
//! service_name = "mcp-host"
//! sample = 1.0                # share of traces kept (a caller's sampled flag wins)
//!
//! [[hooks]]                   # run before calls and on their results, see hooks::external
//! command = ["./guard.py"]    # or url = "http://127.0.0.1:9000/hook"
//! when = "before"             # before | after | both
//! tool = "run_*"              # which calls (also server = , prompt = , resource = )
//! timeout = 5                 # seconds; no answer in time refuses
//!
//! [[policy]]                  # rules, see the policy module: deny wins over ask over allow
//! decision = "deny"           # allow | deny | ask
//! server = "memory"           # glob over the config's server names
//! tool = "delete_*"           # glob over the names at the server (or prompt = , resource = )
//! caller = "bob"              # OAuth subject, "anonymous" without OAuth (also scope = , client_id = , client = , view = )
//! name = "no deletes"         # how errors and the audit name it
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::HostOptions;
use crate::audit::AuditSettings;
use crate::consent::{ConsentOptions, OnChange};
use crate::policy::{Decision, Policy, Rule, RuleSettings};
use crate::upstream::SupervisorOptions;

/// Everything a settings file may say.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct HostSettings {
    /// How the host serves its clients.
    #[serde(default)]
    pub serve: ServeSettings,
    /// The admin listener: metrics, status and health for operators.
    #[serde(default)]
    pub admin: AdminSettings,
    /// How upstreams are supervised.
    #[serde(default)]
    pub servers: ServerSettings,
    /// The audit log, if one is kept.
    pub audit: Option<AuditFileSettings>,
    /// What the policy decides where no rule matches.
    #[serde(default)]
    pub guard: GuardSettings,
    /// The policy's rules, in order (see [`crate::policy`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy: Vec<RuleSettings>,
    /// Rate limits (see [`crate::limits`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<crate::limits::LimitSettings>,
    /// Curated views of the catalog, by name (see [`crate::views`]).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub views: std::collections::BTreeMap<String, crate::views::ViewSettings>,
    /// The host's model (see [`crate::model`]): for sampling answered at
    /// the host and for `mcp chat`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<crate::model::ModelSettings>,
    /// More models, by a name of the user's, for requests whose
    /// preferences suit them better.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub models: std::collections::BTreeMap<String, crate::model::ModelSettings>,
    /// Who answers servers' sampling requests (see [`crate::sampler`]).
    #[serde(default)]
    pub sampling: crate::sampler::SamplingSettings,
    /// The directories offered to servers as roots (see [`crate::roots`]).
    #[serde(default)]
    pub roots: crate::roots::RootsSettings,
    /// Where the spans of requests are exported (see [`crate::traces`]).
    #[serde(default)]
    pub traces: crate::traces::TracesSettings,
    /// Hooks run before calls and on their results (see
    /// [`crate::hooks::external`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<crate::hooks::external::HookSettings>,
}

/// `[guard]`: the policy's default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct GuardSettings {
    /// The decision where no `[[policy]]` rule matches (`allow`: the
    /// client application asks its own user, as Claude Desktop and VS
    /// Code do).
    #[serde(default)]
    pub default: Decision,
    /// Who is asked where the policy says `ask`, in order: `client` (the
    /// caller, by elicitation), `terminal` (where the host has one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approvers: Option<Vec<String>>,
    /// Seconds a person has to answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ask_timeout: Option<f64>,
    /// The SQLite file that keeps grants for always and pins (relative to
    /// the settings file); definitions are pinned where it is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<PathBuf>,
    /// What a request to an item whose definition changed since it was
    /// pinned gets: `ask`, `hide` or `warn`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<OnChange>,
    /// What becomes of results that hold a secret (`off`, `redact`,
    /// `block`), for servers whose entries do not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secrets: Option<crate::secrets::SecretScan>,
    /// Whether the servers a change of the config files adds, or whose
    /// command line it changes, run without a person's approval (see
    /// [`crate::trust`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust_config: Option<bool>,
    /// The `http` approver's endpoint (see [`crate::consent::http`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<crate::consent::http::HttpApproverSettings>,
}

/// `[audit]`: where and how the audit log is kept; unset keys keep the
/// defaults of [`AuditSettings::new`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AuditFileSettings {
    /// The SQLite file.
    pub path: PathBuf,
    /// Whether the calls' arguments are recorded too.
    pub arguments: Option<bool>,
    /// How many bytes of a call's arguments are kept.
    pub max_argument_bytes: Option<usize>,
    /// The most records the file keeps.
    pub max_records: Option<u64>,
    /// How many days the file keeps a record.
    pub max_age_days: Option<f64>,
    /// How many records are kept in memory while the file fails.
    pub backlog: Option<usize>,
}

impl From<&AuditSettings> for AuditFileSettings {
    /// Every key set, as `settings` says.
    fn from(settings: &AuditSettings) -> Self {
        AuditFileSettings {
            path: settings.path.clone(),
            arguments: Some(settings.arguments),
            max_argument_bytes: Some(settings.max_argument_bytes),
            max_records: Some(settings.max_records),
            max_age_days: settings.max_age.map(|age| age.as_secs_f64() / DAY),
            backlog: Some(settings.backlog),
        }
    }
}

/// `[admin]`: the admin listener, an HTTP address of its own (loopback
/// unless set otherwise) serving `/metrics`, `/status` and `/healthz`,
/// whether the host serves its clients over HTTP or stdio.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AdminSettings {
    /// Where it listens; unset: no admin listener.
    pub http: Option<SocketAddr>,
    /// The bearer token every path but `/healthz` requires; unset: the
    /// environment variable `MCP_ADMIN_TOKEN`, else a random one printed
    /// at start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Whether requests are counted (by server, method, era, outcome,
    /// latency): on with the admin listener, and where this says so.
    pub metrics: Option<bool>,
}

/// `[serve]`: how the host serves its clients.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ServeSettings {
    /// Streamable HTTP (with HTTP+SSE and WebSocket) on this address.
    pub http: Option<SocketAddr>,
    /// Serve on stdin and stdout instead.
    #[serde(default)]
    pub stdio: bool,
    /// Host names and Origins accepted beyond the loopback ones.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Legacy HTTP sessions open at once, at most.
    pub max_sessions: Option<usize>,
    /// Seconds after which an idle legacy HTTP session ends.
    pub session_idle_timeout: Option<f64>,
    /// HTTP connections open at once, at most.
    pub max_connections: Option<usize>,
    /// HTTP connections open at once from one IP address, at most.
    pub max_connections_per_ip: Option<usize>,
    /// The Redis (`redis://` or `rediss://` URL) that keeps the legacy
    /// HTTP sessions and their SSE events, shared by several hosts.
    pub redis: Option<String>,
}

/// `[servers]`: how upstreams are supervised; unset keys keep the
/// defaults of [`SupervisorOptions`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ServerSettings {
    /// Seconds to start, handshake and list.
    pub connect_timeout: Option<f64>,
    /// Seconds a server's answer to `server/discover` is waited for alone
    /// before `initialize` is sent too.
    pub probe_patience: Option<f64>,
    /// Seconds per request.
    pub request_timeout: Option<f64>,
    /// Seconds between pings.
    pub health_interval: Option<f64>,
    /// Seconds before the first restart.
    pub backoff_initial: Option<f64>,
    /// The longest wait between restarts, in seconds.
    pub backoff_max: Option<f64>,
    /// Seconds per step of stopping a child.
    pub shutdown_grace: Option<f64>,
    /// Calls in flight per server.
    pub max_in_flight: Option<usize>,
    /// Calls waiting for a slot per server; more are refused at once.
    pub max_waiting: Option<usize>,
    /// Seconds a call waits for a slot before it is refused.
    pub max_wait: Option<f64>,
    /// Servers starting at once.
    pub start_concurrency: Option<usize>,
    /// The longest message a stdio server may send, in bytes; a longer
    /// one ends its connection.
    pub max_message_bytes: Option<usize>,
    /// Connections of callers of their own per per-caller server.
    pub max_callers: Option<usize>,
    /// Seconds a caller's own connection is kept unused before it is
    /// closed.
    pub caller_idle: Option<f64>,
}

impl From<&SupervisorOptions> for ServerSettings {
    /// Every key set, as `options` says.
    fn from(options: &SupervisorOptions) -> Self {
        let seconds = |d: Duration| Some(d.as_secs_f64());
        ServerSettings {
            connect_timeout: seconds(options.connect_timeout),
            probe_patience: seconds(options.probe_patience),
            request_timeout: seconds(options.request_timeout),
            health_interval: seconds(options.health_interval),
            backoff_initial: seconds(options.backoff_initial),
            backoff_max: seconds(options.backoff_max),
            shutdown_grace: seconds(options.shutdown_grace),
            max_in_flight: Some(options.max_in_flight),
            max_waiting: Some(options.max_waiting),
            max_wait: seconds(options.max_wait),
            start_concurrency: Some(options.start_concurrency),
            max_message_bytes: Some(options.max_message_bytes),
            max_callers: Some(options.max_callers),
            caller_idle: seconds(options.caller_idle),
        }
    }
}

/// A settings file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SettingsError {
    /// The file.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// Seconds in a day.
const DAY: f64 = 86_400.0;

/// Seconds as a duration: positive, at most a day.
pub fn seconds(value: f64, key: &str) -> Result<Duration, String> {
    positive_duration(value, (1.0, "seconds"), DAY, key)
}

/// `value` counted in `unit` (its length in seconds, and its name) as a
/// duration: positive, at most `max` of them.
fn positive_duration(
    value: f64,
    (unit, units): (f64, &str),
    max: f64,
    key: &str,
) -> Result<Duration, String> {
    if value.is_finite() && value > 0.0 && value <= max {
        Ok(Duration::from_secs_f64(value * unit))
    } else {
        Err(format!("{key} must be {units} in (0, {max}], not {value}"))
    }
}

/// How long the audit file may be told to keep records: a hundred years.
const MAX_AGE_DAYS: f64 = 36_500.0;

/// The audit file's `max_age_days` as a duration.
fn max_age(days: f64) -> Result<Duration, String> {
    positive_duration(days, (DAY, "days"), MAX_AGE_DAYS, "audit.max_age_days")
}

impl HostSettings {
    /// Reads a settings file.
    pub fn load(path: &Path) -> Result<HostSettings, SettingsError> {
        let error = |message: String| SettingsError {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        let mut settings: HostSettings = toml::from_str(&text).map_err(|e| error(e.to_string()))?;
        let dir = path.parent().unwrap_or(Path::new(""));
        if let Some(audit) = settings.audit.as_mut() {
            if audit.path.is_relative() {
                audit.path = dir.join(&audit.path);
            }
        }
        if let Some(store) = settings.guard.store.as_mut() {
            if store.is_relative() {
                *store = dir.join(&*store);
            }
        }
        for hook in &mut settings.hooks {
            if let Some(program) = hook.command.first_mut()
                && (program.starts_with("./") || program.starts_with("../"))
            {
                let relative = program.strip_prefix("./").unwrap_or(program);
                *program = dir.join(relative).display().to_string();
            }
        }
        for root in &mut settings.roots.paths {
            if root.is_relative() && !root.starts_with("~") {
                *root = dir.join(&*root);
            }
        }
        // Checked once the paths are the file's.
        settings
            .options()
            .map_err(|e| error(with_rule_line(&text, e)))?;
        Ok(settings)
    }

    /// Puts the rules (and the default, where it says one) of a policy
    /// file in place of these settings' own.
    pub fn with_policy_file(&mut self, file: PolicyFile) {
        self.policy = file.policy;
        if let Some(default) = file.default {
            self.guard.default = default;
        }
    }

    /// The policy these settings describe, checked.
    pub fn policy(&self) -> Result<Policy, String> {
        let rules = self
            .policy
            .iter()
            .enumerate()
            .map(|(n, rule)| Rule::compile(rule, n + 1))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Policy::new(rules, self.guard.default))
    }

    /// How the audit log is kept, if these settings keep one.
    pub fn audit(&self) -> Option<AuditSettings> {
        let file = self.audit.as_ref()?;
        let mut audit = AuditSettings::new(&file.path);
        if let Some(arguments) = file.arguments {
            audit.arguments = arguments;
        }
        if let Some(bytes) = file.max_argument_bytes {
            audit.max_argument_bytes = bytes;
        }
        if let Some(records) = file.max_records {
            audit.max_records = records;
        }
        // Checked when the file was read.
        audit.max_age = file.max_age_days.and_then(|days| max_age(days).ok());
        if let Some(backlog) = file.backlog {
            audit.backlog = backlog;
        }
        Some(audit)
    }

    /// Reads settings from their TOML text, checking the values as
    /// [`HostSettings::options`] does.
    pub fn parse(text: &str) -> Result<HostSettings, String> {
        let settings: HostSettings = toml::from_str(text).map_err(|e| e.to_string())?;
        settings.options()?;
        Ok(settings)
    }

    /// The views these settings describe, by name.
    pub fn views(&self) -> Result<Vec<crate::views::View>, String> {
        self.views
            .iter()
            .map(|(name, view)| crate::views::View::compile(name, view))
            .collect()
    }

    /// The host options these settings give.
    pub fn options(&self) -> Result<HostOptions, String> {
        self.views()?;
        let mut supervisor = SupervisorOptions::default();
        let s = &self.servers;
        let durations = [
            (
                s.connect_timeout,
                "servers.connect_timeout",
                &mut supervisor.connect_timeout,
            ),
            (
                s.probe_patience,
                "servers.probe_patience",
                &mut supervisor.probe_patience,
            ),
            (
                s.request_timeout,
                "servers.request_timeout",
                &mut supervisor.request_timeout,
            ),
            (
                s.health_interval,
                "servers.health_interval",
                &mut supervisor.health_interval,
            ),
            (
                s.backoff_initial,
                "servers.backoff_initial",
                &mut supervisor.backoff_initial,
            ),
            (
                s.backoff_max,
                "servers.backoff_max",
                &mut supervisor.backoff_max,
            ),
            (
                s.shutdown_grace,
                "servers.shutdown_grace",
                &mut supervisor.shutdown_grace,
            ),
            (s.max_wait, "servers.max_wait", &mut supervisor.max_wait),
            (
                s.caller_idle,
                "servers.caller_idle",
                &mut supervisor.caller_idle,
            ),
        ];
        for (value, key, slot) in durations {
            if let Some(value) = value {
                *slot = seconds(value, key)?;
            }
        }
        for (value, key, slot) in [
            (
                s.max_in_flight,
                "servers.max_in_flight",
                &mut supervisor.max_in_flight,
            ),
            (
                s.max_waiting,
                "servers.max_waiting",
                &mut supervisor.max_waiting,
            ),
            (
                s.start_concurrency,
                "servers.start_concurrency",
                &mut supervisor.start_concurrency,
            ),
            (
                s.max_message_bytes,
                "servers.max_message_bytes",
                &mut supervisor.max_message_bytes,
            ),
            (
                s.max_callers,
                "servers.max_callers",
                &mut supervisor.max_callers,
            ),
        ] {
            match value {
                Some(0) => return Err(format!("{key} must be at least 1")),
                Some(n) => *slot = n,
                None => {}
            }
        }
        for (key, value) in [
            ("serve.max_sessions", self.serve.max_sessions),
            ("serve.max_connections", self.serve.max_connections),
            (
                "serve.max_connections_per_ip",
                self.serve.max_connections_per_ip,
            ),
        ] {
            if value == Some(0) {
                return Err(format!("{key} must be at least 1"));
            }
        }
        if let Some(idle) = self.serve.session_idle_timeout {
            seconds(idle, "serve.session_idle_timeout")?;
        }
        if self.serve.stdio && self.serve.http.is_some() {
            return Err("serve.http and serve.stdio exclude each other".into());
        }
        if let Some(url) = &self.serve.redis {
            if !(url.starts_with("redis://")
                || url.starts_with("rediss://")
                || url.starts_with("redis+unix://")
                || url.starts_with("unix://"))
            {
                return Err(format!(
                    "serve.redis must be a redis:// or rediss:// URL, not {url:?}"
                ));
            }
        }
        if let Some(audit) = &self.audit {
            if audit.path.as_os_str().is_empty() {
                return Err("audit.path must name a file".into());
            }
            if let Some(days) = audit.max_age_days {
                max_age(days)?;
            }
            if audit.max_records == Some(0) {
                return Err("audit.max_records must be at least 1".into());
            }
            if audit.backlog == Some(0) {
                return Err("audit.backlog must be at least 1".into());
            }
        }
        let policy = self.policy()?;
        let mut consent = ConsentOptions::default();
        if let Some(order) = &self.guard.approvers {
            if let Some(unknown) = order
                .iter()
                .find(|a| !["client", "console", "terminal", "http"].contains(&a.as_str()))
            {
                return Err(format!(
                    "guard.approvers: {unknown:?} is none of \"client\", \"console\", \
                     \"terminal\", \"http\""
                ));
            }
            if order.iter().any(|a| a == "http") && self.guard.http.is_none() {
                return Err("guard.approvers names \"http\": [guard.http] gives its url".into());
            }
            consent.order = order.clone();
        }
        if let Some(http) = &self.guard.http {
            let approver = crate::consent::http::HttpApprover::new(http)?;
            consent.registered.push(Arc::new(approver));
            if self.guard.approvers.is_none() {
                consent.order.push("http".into());
            }
        }
        if let Some(timeout) = self.guard.ask_timeout {
            consent.timeout = seconds(timeout, "guard.ask_timeout")?;
        }
        if let Some(on_change) = self.guard.changed {
            consent.on_change = on_change;
        }
        let mut hooks = crate::hooks::Hooks::default();
        for (n, hook) in self.hooks.iter().enumerate() {
            hooks.push(Arc::new(crate::hooks::external::ExternalHook::compile(
                hook,
                n + 1,
            )?));
        }
        let sampling = self.sampling_options(consent.timeout)?;
        let roots = self.roots.roots()?;
        self.traces.check()?;
        Ok(HostOptions {
            supervisor,
            sampling,
            roots,
            traces: self.traces.otlp.is_some(),
            policy: Arc::new(policy),
            consent,
            secrets: self.guard.secrets.unwrap_or_default(),
            metrics: self.admin.metrics.unwrap_or(self.admin.http.is_some()),
            limits: Arc::new(crate::limits::Limits::compile(&self.limits)?),
            hooks,
            ..HostOptions::default()
        })
    }
}

impl HostSettings {
    /// The models, `[model]` first, and `[sampling]`, checked.
    fn sampling_options(
        &self,
        timeout: Duration,
    ) -> Result<crate::sampler::SamplingOptions, String> {
        if self.model.is_none() && !self.models.is_empty() {
            return Err("[models.NAME] needs a [model], the default".into());
        }
        let mut options = crate::sampler::SamplingOptions::default();
        if let Some(model) = &self.model {
            model.check("model")?;
            options.models.push(model.clone());
        }
        for (name, model) in &self.models {
            model.check(&format!("models.{name}"))?;
            options.models.push(model.clone());
        }
        options.settings = self.sampling.clone();
        options.timeout = Some(timeout);
        crate::sampler::Sampler::new(options.clone())?;
        Ok(options)
    }
}

/// A policy file of its own (`mcp host --policy FILE`): `[[policy]]`
/// rules as the settings file writes them, and `default` (as `[guard]
/// default`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PolicyFile {
    /// The decision where no rule matches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Decision>,
    /// The rules, in order.
    #[serde(default)]
    pub policy: Vec<RuleSettings>,
}

impl PolicyFile {
    /// Reads and checks a policy file; an error names the file, and the
    /// line of a rule that cannot be used.
    pub fn load(path: &Path) -> Result<PolicyFile, SettingsError> {
        let error = |message: String| SettingsError {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        let file: PolicyFile = toml::from_str(&text).map_err(|e| error(e.to_string()))?;
        for (n, rule) in file.policy.iter().enumerate() {
            Rule::compile(rule, n + 1).map_err(|e| error(with_rule_line(&text, e)))?;
        }
        Ok(file)
    }
}

/// `error`, about rule `[[policy]] #N` of the TOML `text`, with the line
/// where that rule begins.
fn with_rule_line(text: &str, error: String) -> String {
    let Some(rest) = error.strip_prefix("[[policy]] #") else {
        return error;
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    let Ok(number) = rest[..digits].parse::<usize>() else {
        return error;
    };
    let line = text
        .lines()
        .enumerate()
        .filter(|(_, line)| line.trim_start().starts_with("[[policy]]"))
        .nth(number.saturating_sub(1))
        .map(|(at, _)| at + 1);
    match line {
        Some(line) => format!("[[policy]] #{number} (line {line}){}", &rest[digits..]),
        None => error,
    }
}

/// `url` with the password it may carry (`redis://user:PASSWORD@host`)
/// replaced by `***`, for showing.
pub fn mask_url_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            if userinfo.contains(':') {
                format!("{scheme}://{user}:***@{host}{path}")
            } else {
                format!("{scheme}://***@{host}{path}")
            }
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<HostOptions, String> {
        let settings: HostSettings = toml::from_str(text).map_err(|e| e.to_string())?;
        settings.options()
    }

    #[test]
    fn every_key_reaches_the_options() {
        let options = parse(
            r#"
            [serve]
            http = "127.0.0.1:9000"
            allow = ["a.example"]
            max_sessions = 5
            session_idle_timeout = 60
            redis = "redis://127.0.0.1:6379/0"
            [servers]
            connect_timeout = 3
            request_timeout = 4.5
            health_interval = 7
            backoff_initial = 0.25
            backoff_max = 9
            shutdown_grace = 1
            max_in_flight = 32
            start_concurrency = 2
            max_message_bytes = 1048576
            "#,
        )
        .unwrap();
        let s = options.supervisor;
        assert_eq!(s.connect_timeout, Duration::from_secs(3));
        assert_eq!(s.request_timeout, Duration::from_millis(4500));
        assert_eq!(s.health_interval, Duration::from_secs(7));
        assert_eq!(s.backoff_initial, Duration::from_millis(250));
        assert_eq!(s.backoff_max, Duration::from_secs(9));
        assert_eq!(s.shutdown_grace, Duration::from_secs(1));
        assert_eq!(s.max_in_flight, 32);
        assert_eq!(s.start_concurrency, 2);
        assert_eq!(s.max_message_bytes, 1 << 20);
        assert_eq!(
            parse("").unwrap().supervisor.max_in_flight,
            SupervisorOptions::default().max_in_flight
        );
    }

    #[test]
    fn mistakes_are_errors_that_name_the_key() {
        for (text, want) in [
            ("[servers]\nrequest_timout = 3", "request_timout"),
            ("[server]\nrequest_timeout = 3", "server"),
            ("[servers]\nrequest_timeout = -1", "servers.request_timeout"),
            ("[servers]\nmax_in_flight = 0", "servers.max_in_flight"),
            ("[serve]\nhttp = \"not an address\"", "http"),
            ("[serve]\nhttp = \"127.0.0.1:1\"\nstdio = true", "exclude"),
            ("[serve]\nredis = \"localhost:6379\"", "serve.redis"),
            ("[audit]\narguments = true", "path"),
            (
                "[audit]\npath = \"a.db\"\nmax_records = 0",
                "audit.max_records",
            ),
            (
                "[audit]\npath = \"a.db\"\nmax_age_days = 0",
                "audit.max_age_days",
            ),
            ("[audit]\npath = \"a.db\"\nbacklog = 0", "audit.backlog"),
            ("[audit]\npath = \"a.db\"\nrecords = 5", "records"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn an_audit_path_is_relative_to_the_settings_file() {
        let dir = std::env::temp_dir().join(format!("mcp-host-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("host.toml");
        std::fs::write(
            &file,
            "[audit]\npath = \"logs/audit.db\"\narguments = true\nmax_records = 10\nbacklog = 3\nmax_argument_bytes = 100\nmax_age_days = 0.5\n",
        )
        .unwrap();
        let audit = HostSettings::load(&file).unwrap().audit().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(audit.path, dir.join("logs/audit.db"));
        assert!(audit.arguments);
        assert_eq!(
            (audit.max_records, audit.backlog, audit.max_argument_bytes),
            (10, 3, 100)
        );
        assert_eq!(audit.max_age, Some(Duration::from_secs(43_200)));
        assert_eq!(HostSettings::default().audit(), None);
    }

    #[test]
    fn a_bad_rule_is_named_with_its_line() {
        let text = "[guard]\ndefault = \"ask\"\n\n[[policy]]\ndecision = \"deny\"\ntool = \"a\"\n\n\
                    [[policy]]\ndecision = \"allow\"\ntool = \"[\"\n";
        let dir = std::env::temp_dir().join(format!("mcp-rule-line-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("host.toml");
        std::fs::write(&file, text).unwrap();
        let error = HostSettings::load(&file).unwrap_err().to_string();
        assert!(error.contains("[[policy]] #2 (line 8): tool"), "{error}");
        let policy = dir.join("policy.toml");
        std::fs::write(&policy, text.replace("[guard]\n", "")).unwrap();
        let error = PolicyFile::load(&policy).unwrap_err().to_string();
        assert!(error.contains("[[policy]] #2 (line 7)"), "{error}");
        std::fs::write(
            &policy,
            "default = \"deny\"\n[[policy]]\ndecision = \"allow\"\ntool = \"t\"\n",
        )
        .unwrap();
        let mut settings = HostSettings::default();
        settings.with_policy_file(PolicyFile::load(&policy).unwrap());
        let policy_now = settings.policy().unwrap();
        assert_eq!(policy_now.rules().len(), 1);
        assert_eq!(policy_now.default_decision(), Decision::Deny);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn redis_passwords_are_masked() {
        assert_eq!(
            mask_url_password("redis://:secret@db:6379/0"),
            "redis://:***@db:6379/0"
        );
        assert_eq!(
            mask_url_password("rediss://app:secret@db/1"),
            "rediss://app:***@db/1"
        );
        assert_eq!(mask_url_password("redis://tok@db"), "redis://***@db");
        assert_eq!(
            mask_url_password("redis://127.0.0.1:6379/0"),
            "redis://127.0.0.1:6379/0"
        );
    }
}
