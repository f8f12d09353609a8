//! The servers to run, read from the files users already have, unchanged:
//! Claude Desktop / Claude Code / Cursor `mcpServers`, VS Code `mcp.json`
//! (`servers` and `inputs`, also nested under `mcp` in `settings.json`),
//! and Zed's `context_servers` (JSON with comments).
//!
//! Later files override earlier entries of the same name. A file that
//! cannot be read or parsed is an error; an entry that cannot be used (an
//! unset variable, no command and no URL) is a [`ConfigProblem`] naming the
//! server, and only that server is left out.

mod inputs;
mod keys;
mod vars;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

pub use inputs::{GivenInputs, input_env_name};
pub use vars::{InputProvider, InputSpec, NoInputs, Variables};

use crate::names::sanitize_namespace;

/// How the host reaches one server.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum TransportSpec {
    /// A child process spoken to over its stdin and stdout.
    Stdio(StdioCommand),
    /// An HTTP server: Streamable HTTP, legacy HTTP+SSE, or either.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
        /// Which HTTP transport.
        kind: HttpKind,
    },
    /// A WebSocket server.
    WebSocket {
        /// The endpoint.
        url: String,
    },
}

/// A server the host starts as a child process, speaking to it over its
/// stdin and stdout.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StdioCommand {
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its environment, on top of a minimal one (not the host's).
    pub env: BTreeMap<String, String>,
    /// Its working directory.
    pub cwd: Option<PathBuf>,
}

impl StdioCommand {
    /// The program and its arguments, as one command line.
    pub fn words(&self) -> impl Iterator<Item = &String> + Clone {
        std::iter::once(&self.command).chain(&self.args)
    }
}

/// Which HTTP transport a remote server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HttpKind {
    /// Streamable HTTP, falling back to HTTP+SSE (no `type` given).
    Auto,
    /// Streamable HTTP only.
    StreamableHttp,
    /// The legacy HTTP+SSE transport only.
    Sse,
}

impl From<HttpKind> for mcp_http::HttpTransportKind {
    fn from(kind: HttpKind) -> Self {
        match kind {
            HttpKind::Auto => mcp_http::HttpTransportKind::Auto,
            HttpKind::StreamableHttp => mcp_http::HttpTransportKind::StreamableHttp,
            HttpKind::Sse => mcp_http::HttpTransportKind::LegacySse,
        }
    }
}

/// An HTTP header of a remote server's entry (or a command line), checked:
/// a name and a value that can be sent.
pub fn http_header(
    name: &str,
    value: &str,
) -> Result<(http::HeaderName, http::HeaderValue), String> {
    let name = http::HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("{name:?} is not a header name"))?;
    let value = http::HeaderValue::from_str(value)
        .map_err(|_| format!("the value of header {name} cannot be sent in a header"))?;
    Ok((name, value))
}

/// Whose connection a server's requests go over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// One connection, shared by every caller.
    #[default]
    Shared,
    /// A connection of each caller's own (see [`crate::isolation`]).
    PerCaller,
}

/// The placeholder in a per-caller server's command line, environment,
/// URL or headers that stands for the caller (see
/// [`crate::isolation`]).
pub const CALLER_PLACEHOLDER: &str = "${caller}";

/// One configured server, variables expanded.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerConfig {
    /// The entry's name in its file.
    pub name: String,
    /// The prefix of its tools and prompts (`""`: unprefixed).
    pub namespace: String,
    /// How to reach it.
    pub transport: TransportSpec,
    /// Not started while set.
    pub disabled: bool,
    /// Whether its tools' annotations (read-only, destructive, ...) are
    /// believed: rules that match on them see the server's claims only
    /// where it is trusted, and the specification's cautious defaults
    /// elsewhere.
    pub trusted: bool,
    /// What becomes of its results that hold a secret, where the entry
    /// says (`"secrets": "off" | "redact" | "block"`); else the host's
    /// `[guard] secrets`.
    pub secrets: Option<crate::secrets::SecretScan>,
    /// Whether every caller shares one connection, or each has its own
    /// (`"isolation": "shared" | "per-caller"`).
    pub isolation: Isolation,
    /// Whether it comes from a workspace's files (`.vscode/mcp.json`,
    /// `.cursor/mcp.json`), not the operator's: it runs only once a
    /// person trusts its command line (see [`crate::trust`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub workspace: bool,
    /// How long one request to it may take.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "seconds")]
    pub timeout: Option<Duration>,
    /// The protocol era to speak to it (`auto`, `legacy`, `modern` or a
    /// revision); `auto` finds out.
    pub era: String,
    /// Warnings about the entry, logged when it starts: approval-like keys
    /// of other hosts (`autoApprove`, `alwaysAllow`), never granted, and
    /// keys no host is known to use, with the key probably meant.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<String>,
    /// The file it came from.
    pub source: PathBuf,
}

fn seconds<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

impl ServerConfig {
    /// A stdio server running `command` with `args`, named `name`.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        let name = name.into();
        ServerConfig {
            namespace: sanitize_namespace(&name),
            name,
            transport: TransportSpec::Stdio(StdioCommand {
                command: command.into(),
                args,
                ..StdioCommand::default()
            }),
            disabled: false,
            trusted: false,
            secrets: None,
            isolation: Isolation::Shared,
            workspace: false,
            timeout: None,
            era: "auto".to_owned(),
            hints: Vec::new(),
            source: PathBuf::new(),
        }
    }

    /// How the server is run, as a person checks it and as grants are
    /// bound to it: a stdio server's command line (each word that needs it
    /// quoted), a remote server's URL.
    pub fn identity(&self) -> String {
        match &self.transport {
            TransportSpec::Stdio(stdio) => {
                let words = stdio.words().map(String::as_str);
                // Only a word with a NUL cannot be quoted; none can run.
                shlex::try_join(words.clone())
                    .unwrap_or_else(|_| words.collect::<Vec<_>>().join(" "))
            }
            TransportSpec::Http { url, .. } | TransportSpec::WebSocket { url } => url.clone(),
        }
    }

    /// Sets the era to speak to the server (see [`ServerConfig::era`]).
    pub fn era(mut self, era: &str) -> Result<Self, String> {
        era.parse::<mcp_client::EraChoice>()?;
        self.era = era.to_owned();
        Ok(self)
    }

    /// A remote server at `url` (Streamable HTTP, falling back to
    /// HTTP+SSE; `ws://` URLs: WebSocket), named `name`.
    pub fn remote(name: impl Into<String>, url: impl Into<String>) -> Self {
        let url = url.into();
        let lower = url.to_ascii_lowercase();
        let transport = if lower.starts_with("ws://") || lower.starts_with("wss://") {
            TransportSpec::WebSocket { url }
        } else {
            TransportSpec::Http {
                url,
                headers: BTreeMap::new(),
                kind: HttpKind::Auto,
            }
        };
        let mut config = ServerConfig::stdio(name, "", Vec::new());
        config.transport = transport;
        config
    }

    /// Sets the environment of a stdio server.
    pub fn env(mut self, vars: BTreeMap<String, String>) -> Self {
        if let TransportSpec::Stdio(stdio) = &mut self.transport {
            stdio.env = vars;
        }
        self
    }

    /// Sets the namespace (`""`: names pass through unprefixed).
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = if namespace.is_empty() {
            String::new()
        } else {
            sanitize_namespace(namespace)
        };
        self
    }

    /// Marks the server trusted: its tools' annotations are believed.
    pub fn trusted(mut self, trusted: bool) -> Self {
        self.trusted = trusted;
        self
    }

    /// Marks it as coming from a workspace's files (see
    /// [`ServerConfig::workspace`]).
    pub fn from_workspace(mut self, workspace: bool) -> Self {
        self.workspace = workspace;
        self
    }

    /// Sets whose connection its requests go over.
    pub fn isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }

    /// How to reach it for the caller `key`: [`CALLER_PLACEHOLDER`]
    /// replaced by `key` in its command, arguments, environment, working
    /// folder, URL and headers.
    pub fn transport_for(&self, key: &str) -> TransportSpec {
        let fill = |text: &mut String| {
            if text.contains(CALLER_PLACEHOLDER) {
                *text = text.replace(CALLER_PLACEHOLDER, key);
            }
        };
        let mut transport = self.transport.clone();
        match &mut transport {
            TransportSpec::Stdio(stdio) => {
                fill(&mut stdio.command);
                stdio.args.iter_mut().for_each(fill);
                stdio.env.values_mut().for_each(fill);
                if let Some(cwd) = &mut stdio.cwd {
                    let mut text = cwd.display().to_string();
                    fill(&mut text);
                    *cwd = PathBuf::from(text);
                }
            }
            TransportSpec::Http { url, headers, .. } => {
                fill(url);
                headers.values_mut().for_each(fill);
            }
            TransportSpec::WebSocket { url } => fill(url),
        }
        transport
    }

    /// Sets what becomes of its results that hold a secret.
    pub fn secrets(mut self, scan: crate::secrets::SecretScan) -> Self {
        self.secrets = Some(scan);
        self
    }

    /// The entry as JSON for people to see: the values of its
    /// secret-looking variables and headers (tokens, keys, passwords)
    /// replaced by `***`.
    pub fn shown(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        for key in ["env", "headers"] {
            if let Some(serde_json::Value::Object(map)) =
                value.get_mut("transport").and_then(|t| t.get_mut(key))
            {
                for (name, value) in map.iter_mut() {
                    if crate::secrets::secret_name(name) {
                        *value = serde_json::Value::String("***".into());
                    }
                }
            }
        }
        value
    }

    /// The values of its secret-looking variables and headers (tokens,
    /// keys, passwords): the host's own secrets, never to be shown.
    pub fn own_secrets(&self) -> Vec<String> {
        let pairs: Vec<(&String, &String)> = match &self.transport {
            TransportSpec::Stdio(stdio) => stdio.env.iter().collect(),
            TransportSpec::Http { headers, .. } => headers.iter().collect(),
            TransportSpec::WebSocket { .. } => Vec::new(),
        };
        pairs
            .into_iter()
            .filter(|(name, _)| crate::secrets::secret_name(name))
            .map(|(_, value)| {
                // A header's value may carry its scheme: the credential is
                // the rest.
                value
                    .strip_prefix("Bearer ")
                    .or_else(|| value.strip_prefix("Basic "))
                    .unwrap_or(value)
                    .to_owned()
            })
            .collect()
    }

    /// Sets the per-request timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// An entry that cannot be used; the other servers are.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigProblem {
    /// The entry's name.
    pub server: String,
    /// The file it is in.
    pub source: PathBuf,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "server {:?} in {}: {}",
            self.server,
            self.source.display(),
            self.message
        )
    }
}

/// A config file that cannot be used at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Reading the file failed. The cause is told in the message, once:
    /// it is not also the error's source.
    #[error("cannot read {path}: {cause}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The file is not JSON (with comments).
    #[error("{path} is not JSON: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message, with the position.
        message: String,
    },
    /// The file has no server list this host knows.
    #[error("{path} has no \"mcpServers\", \"servers\" or \"context_servers\" object")]
    NoServers {
        /// The file.
        path: PathBuf,
    },
}

/// Every server of a set of config files.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HostConfig {
    /// The usable entries, in the order of the files and of each file.
    pub servers: Vec<ServerConfig>,
    /// The entries left out, with why.
    pub problems: Vec<ConfigProblem>,
}

impl HostConfig {
    /// Reads `paths` in order; a later entry replaces an earlier one of the
    /// same name (in its place).
    pub fn load(paths: &[PathBuf], vars: &Variables) -> Result<HostConfig, ConfigError> {
        let mut config = HostConfig::default();
        for path in paths {
            let text = std::fs::read_to_string(path).map_err(|cause| ConfigError::Read {
                path: path.clone(),
                cause,
            })?;
            config.merge(parse(&text, path, vars)?);
        }
        Ok(config)
    }

    /// Adds `other`'s entries, replacing those of the same name.
    pub fn merge(&mut self, other: HostConfig) {
        for server in other.servers {
            self.problems.retain(|p| p.server != server.name);
            match self.servers.iter_mut().find(|s| s.name == server.name) {
                Some(slot) => *slot = server,
                None => self.servers.push(server),
            }
        }
        for problem in other.problems {
            self.servers.retain(|s| s.name != problem.server);
            self.problems.retain(|p| p.server != problem.server);
            self.problems.push(problem);
        }
    }

    /// The servers to start (not disabled).
    pub fn enabled(&self) -> impl Iterator<Item = &ServerConfig> {
        self.servers.iter().filter(|s| !s.disabled)
    }
}

/// Reads one file's text, in whichever dialect it is written.
pub fn parse(text: &str, path: &Path, vars: &Variables) -> Result<HostConfig, ConfigError> {
    let root: Value =
        jsonc_parser::parse_to_serde_value(text, &Default::default()).map_err(|e| {
            ConfigError::Syntax {
                path: path.to_owned(),
                message: e.to_string(),
            }
        })?;
    let no_servers = || ConfigError::NoServers {
        path: path.to_owned(),
    };
    if !root.is_object() {
        return Err(no_servers());
    }
    // Read again for the entries in the file's order (a JSON object read
    // into a map loses it).
    let root: Root =
        jsonc_parser::parse_to_serde_value(text, &Default::default()).map_err(|_| no_servers())?;
    let (entries, inputs) = if let Some(servers) = root.mcp_servers {
        (servers, Vec::new())
    } else if let Some(servers) = root.servers {
        (servers, read_inputs(root.inputs.as_ref()))
    } else if let Some(Nested {
        servers: Some(servers),
        inputs,
    }) = root.mcp
    {
        // VS Code's settings.json keeps the same two members under "mcp".
        (servers, read_inputs(inputs.as_ref()))
    } else if let Some(servers) = root.context_servers {
        (servers, Vec::new())
    } else {
        return Err(no_servers());
    };
    let base = path.parent().unwrap_or(Path::new("."));
    let mut config = HostConfig::default();
    for (name, entry) in &entries.0 {
        let reader = EntryReader {
            vars,
            inputs: &inputs,
            base,
        };
        match entry
            .as_object()
            .ok_or_else(|| "the entry is not an object".to_owned())
            .and_then(|entry| reader.read(name, entry))
        {
            Ok(mut server) => {
                server.source = path.to_owned();
                config.servers.push(server);
            }
            Err(message) => config.problems.push(ConfigProblem {
                server: name.clone(),
                source: path.to_owned(),
                message,
            }),
        }
    }
    Ok(config)
}

/// The members of a config file this host reads.
#[derive(serde::Deserialize)]
struct Root {
    #[serde(rename = "mcpServers")]
    mcp_servers: Option<Entries>,
    servers: Option<Entries>,
    inputs: Option<Value>,
    mcp: Option<Nested>,
    context_servers: Option<Entries>,
}

/// VS Code's `settings.json` member `mcp`.
#[derive(serde::Deserialize)]
struct Nested {
    servers: Option<Entries>,
    inputs: Option<Value>,
}

/// The entries of a server object, in the file's order.
struct Entries(Vec<(String, Value)>);

impl<'de> serde::Deserialize<'de> for Entries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of servers")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Entries, A::Error> {
                let mut entries: Vec<(String, Value)> = Vec::new();
                while let Some((name, entry)) = map.next_entry::<String, Value>()? {
                    // A repeated name: the later entry wins, in its place.
                    entries.retain(|(n, _)| *n != name);
                    entries.push((name, entry));
                }
                Ok(Entries(entries))
            }
        }
        d.deserialize_map(Visitor)
    }
}

fn read_inputs(inputs: Option<&Value>) -> Vec<InputSpec> {
    let Some(Value::Array(inputs)) = inputs else {
        return Vec::new();
    };
    inputs
        .iter()
        .filter_map(|input| {
            let input = input.as_object()?;
            Some(InputSpec {
                id: input.get("id")?.as_str()?.to_owned(),
                description: str_member(input, "description").unwrap_or_default(),
                password: input.get("password").and_then(Value::as_bool) == Some(true),
                default: str_member(input, "default"),
            })
        })
        .collect()
}

fn str_member(object: &Map<String, Value>, key: &str) -> Option<String> {
    object.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Reads one entry, expanding its variables.
struct EntryReader<'a> {
    vars: &'a Variables,
    inputs: &'a [InputSpec],
    base: &'a Path,
}

impl EntryReader<'_> {
    fn expand(&self, text: &str, what: &str) -> Result<String, String> {
        self.vars
            .expand(text, self.inputs)
            .map_err(|e| format!("{what}: {e}"))
    }

    fn string(&self, entry: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => self.expand(s, key).map(Some),
            Some(other) => Err(format!("\"{key}\" must be a string, not {other}")),
        }
    }

    fn strings(&self, value: Option<&Value>, key: &str) -> Result<Vec<String>, String> {
        match value {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => self.expand(s, &format!("{key}[{i}]")),
                    Value::Number(n) => Ok(n.to_string()),
                    other => Err(format!("{key}[{i}] must be a string, not {other}")),
                })
                .collect(),
            Some(other) => Err(format!(
                "\"{key}\" must be an array of strings, not {other}"
            )),
        }
    }

    fn map(&self, value: Option<&Value>, key: &str) -> Result<BTreeMap<String, String>, String> {
        match value {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(members)) => members
                .iter()
                .map(|(name, value)| {
                    let value = match value {
                        Value::String(s) => self.expand(s, &format!("{key}.{name}"))?,
                        Value::Number(_) | Value::Bool(_) => value.to_string(),
                        other => return Err(format!("{key}.{name} must be a string, not {other}")),
                    };
                    Ok((name.clone(), value))
                })
                .collect(),
            Some(other) => Err(format!("\"{key}\" must be an object, not {other}")),
        }
    }

    fn read(&self, name: &str, entry: &Map<String, Value>) -> Result<ServerConfig, String> {
        let namespace = match entry.get("namespace") {
            None => sanitize_namespace(name),
            Some(Value::String(ns)) if ns.is_empty() => String::new(),
            Some(Value::String(ns)) => sanitize_namespace(ns),
            Some(other) => return Err(format!("\"namespace\" must be a string, not {other}")),
        };
        let disabled = entry.get("disabled").and_then(Value::as_bool) == Some(true);
        let secrets = match entry.get("secrets") {
            None | Some(Value::Null) => None,
            Some(value) => Some(serde_json::from_value(value.clone()).map_err(|_| {
                format!("\"secrets\" must be \"off\", \"redact\" or \"block\", not {value}")
            })?),
        };
        let trusted = match entry.get("trusted") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(trusted)) => *trusted,
            Some(other) => return Err(format!("\"trusted\" must be true or false, not {other}")),
        };
        let isolation = match entry.get("isolation") {
            None | Some(Value::Null) => Isolation::Shared,
            Some(Value::String(s)) if s == "shared" => Isolation::Shared,
            Some(Value::String(s)) if s == "per-caller" => Isolation::PerCaller,
            Some(other) => {
                return Err(format!(
                    "\"isolation\" must be \"shared\" or \"per-caller\", not {other}"
                ));
            }
        };
        let timeout = match entry.get("timeout") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => match n.as_f64() {
                Some(secs) if secs > 0.0 && secs <= 86_400.0 => Some(Duration::from_secs_f64(secs)),
                _ => {
                    return Err(format!(
                        "\"timeout\" must be seconds in (0, 86400], not {n}"
                    ));
                }
            },
            Some(other) => {
                return Err(format!(
                    "\"timeout\" must be a number of seconds, not {other}"
                ));
            }
        };
        let era = match entry.get("era") {
            None | Some(Value::Null) => "auto".to_owned(),
            Some(Value::String(era)) => {
                era.parse::<mcp_client::EraChoice>()?;
                era.clone()
            }
            Some(other) => return Err(format!("\"era\" must be a string, not {other}")),
        };
        let mut hints: Vec<String> = ["autoApprove", "alwaysAllow"]
            .iter()
            .filter_map(|key| {
                let tools = entry.get(*key)?.as_array()?;
                let names: Vec<&str> = tools.iter().filter_map(Value::as_str).collect();
                Some(format!(
                    "\"{key}\" ({}) is not granted by this host; use its policy instead",
                    names.join(", ")
                ))
            })
            .collect();
        hints.extend(keys::unknown(entry).iter().map(keys::Unknown::hint));
        // Disabled entries are kept unexpanded enough to show, but their
        // variables must not stop anything: they are read leniently.
        let transport = match self.transport(entry) {
            Ok(transport) => transport,
            Err(_) if disabled => TransportSpec::Stdio(StdioCommand::default()),
            Err(e) => return Err(e),
        };
        Ok(ServerConfig {
            name: name.to_owned(),
            namespace,
            transport,
            disabled,
            trusted,
            secrets,
            isolation,
            workspace: false,
            timeout,
            era,
            hints,
            source: PathBuf::new(),
        })
    }

    fn transport(&self, entry: &Map<String, Value>) -> Result<TransportSpec, String> {
        let kind = entry.get("type").and_then(Value::as_str);
        if entry.get("source").and_then(Value::as_str) == Some("extension")
            || (entry.contains_key("settings")
                && !entry.contains_key("command")
                && !entry.contains_key("url"))
        {
            return Err(
                "a server provided by a Zed extension cannot be started outside Zed; \
                 give it a \"command\""
                    .to_owned(),
            );
        }
        match kind {
            None | Some("stdio") if entry.contains_key("command") => self.stdio(entry),
            None => match self.string(entry, "url")? {
                Some(url) => self.remote(entry, url, None),
                None => Err(format!(
                    "the entry has neither \"command\" nor \"url\"{}",
                    keys::meant_command_or_url(entry)
                )),
            },
            Some("stdio") => Err(format!(
                "a stdio entry needs \"command\"{}",
                keys::meant_command_or_url(entry)
            )),
            Some(kind) => {
                let url = self.string(entry, "url")?.ok_or_else(|| {
                    format!(
                        "a {kind:?} entry needs \"url\"{}",
                        keys::meant_command_or_url(entry)
                    )
                })?;
                self.remote(entry, url, Some(kind))
            }
        }
    }

    fn stdio(&self, entry: &Map<String, Value>) -> Result<TransportSpec, String> {
        // Zed's older form nests everything under "command".
        let (command, args, env) = match entry.get("command") {
            Some(Value::Object(nested)) => (
                self.string(nested, "path")?
                    .ok_or_else(|| "\"command\" needs \"path\"".to_owned())?,
                self.strings(nested.get("args"), "command.args")?,
                self.map(nested.get("env"), "command.env")?,
            ),
            _ => (
                self.string(entry, "command")?
                    .ok_or_else(|| "\"command\" is missing".to_owned())?,
                self.strings(entry.get("args"), "args")?,
                self.map(entry.get("env"), "env")?,
            ),
        };
        if command.trim().is_empty() {
            return Err("\"command\" is empty".to_owned());
        }
        let mut full_env = BTreeMap::new();
        if let Some(file) = self.string(entry, "envFile")? {
            let file = self.base.join(file);
            for item in dotenvy::from_path_iter(&file)
                .map_err(|e| format!("envFile {}: {e}", file.display()))?
            {
                let (key, value) = item.map_err(|e| format!("envFile {}: {e}", file.display()))?;
                full_env.insert(key, value);
            }
        }
        full_env.extend(env);
        let cwd = self.string(entry, "cwd")?.map(|cwd| self.base.join(cwd));
        Ok(TransportSpec::Stdio(StdioCommand {
            command,
            args,
            env: full_env,
            cwd,
        }))
    }

    fn remote(
        &self,
        entry: &Map<String, Value>,
        url: String,
        kind: Option<&str>,
    ) -> Result<TransportSpec, String> {
        let lower = url.to_ascii_lowercase();
        let websocket = lower.starts_with("ws://") || lower.starts_with("wss://");
        if !websocket && !lower.starts_with("http://") && !lower.starts_with("https://") {
            return Err(format!(
                "\"url\" must be http(s):// or ws(s)://, not {url:?}"
            ));
        }
        let headers = self.map(entry.get("headers"), "headers")?;
        let kind = match (kind, websocket) {
            (Some("ws" | "websocket"), _) | (None, true) => {
                if !headers.is_empty() {
                    return Err("\"headers\" are not supported for WebSocket servers".to_owned());
                }
                return Ok(TransportSpec::WebSocket { url });
            }
            (None, false) => HttpKind::Auto,
            (Some("http" | "streamable-http" | "streamableHttp" | "streamable_http"), _) => {
                HttpKind::StreamableHttp
            }
            (Some("sse"), _) => HttpKind::Sse,
            (Some(other), _) => {
                return Err(format!(
                    "unknown \"type\" {other:?} (stdio, http, streamable-http, sse or ws)"
                ));
            }
        };
        Ok(TransportSpec::Http { url, headers, kind })
    }
}

#[cfg(test)]
mod tests;
