//! Opening one connection to an upstream server: a child process over
//! stdio (with a minimal environment, in its own process group), Streamable
//! HTTP or HTTP+SSE, or WebSocket; and closing it as the specification
//! says.

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_client::Client;
use mcp_core::Transport;
use mcp_core::child::{ChildOptions, ChildProcess};

use crate::config::{HttpKind, StdioCommand, TransportSpec};

/// The variables of the host's environment a child gets, besides its own
/// `env`: what shells, package runners (npx, uvx) and language runtimes
/// need to start. Everything else (tokens, keys) stays with the host.
pub const INHERITED_ENV: &[&str] = &[
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "TERM",
    "USER",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
];

/// A transport to an upstream and what must be closed with it.
pub(crate) struct Opened {
    pub(crate) transport: Transport,
    pub(crate) child: Option<ChildProcess>,
    /// The child's process group, swept when this is dropped.
    pub(crate) group: Option<ProcessGroup>,
    pub(crate) http: Option<mcp_http::HttpClientHandle>,
    /// The transport's name, for status.
    pub(crate) kind: &'static str,
}

/// Gives `cmd` the minimal environment a server starts with: only the
/// [`INHERITED_ENV`] variables of this process, nothing else of it.
pub fn minimal_env(cmd: &mut tokio::process::Command) {
    cmd.env_clear();
    for name in INHERITED_ENV {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
}

impl StdioCommand {
    /// The command that starts the server: from the minimal environment
    /// ([`minimal_env`]) plus its own variables, in its folder where set.
    pub fn to_command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.command);
        cmd.args(&self.args);
        minimal_env(&mut cmd);
        cmd.envs(&self.env);
        if let Some(cwd) = &self.cwd {
            cmd.current_dir(cwd);
        }
        cmd
    }
}

/// Opens the transport `spec` describes; a remote server whose entry sets
/// no `Authorization` header gets the credential hook `authorizer` makes.
/// A child's messages may be `max_message_bytes` long at most.
pub(crate) async fn open(
    spec: &TransportSpec,
    connect_timeout: Duration,
    authorizer: Option<&super::AuthorizerFactory>,
    max_message_bytes: usize,
) -> Result<Opened, String> {
    match spec {
        TransportSpec::Stdio(stdio) => {
            let mut cmd = stdio.to_command();
            // Its own process group: the terminal's Ctrl-C reaches the host,
            // which stops its children in order, and whatever the child
            // started itself can be swept when it is stopped.
            #[cfg(unix)]
            cmd.process_group(0);
            #[cfg(target_os = "linux")]
            // SAFETY: prctl is async-signal-safe; the closure touches no
            // memory of the parent. The child dies with the host even if
            // the host is killed without a chance to stop it.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
            let options = ChildOptions::new().max_message_bytes(max_message_bytes);
            let (child, transport) = ChildProcess::spawn_with(cmd, &options)
                .map_err(|e| format!("cannot run {:?}: {e}", stdio.command))?;
            Ok(Opened {
                transport,
                group: child.id().map(ProcessGroup),
                child: Some(child),
                http: None,
                kind: "stdio",
            })
        }
        TransportSpec::Http { url, headers, kind } => {
            let mut config = mcp_http::HttpClientConfig::new(url)
                .connect_timeout(connect_timeout)
                .transport((*kind).into());
            config = add_headers(config, headers)?;
            let authorized = headers
                .keys()
                .any(|name| name.eq_ignore_ascii_case("authorization"));
            if let (Some(factory), false) = (authorizer, authorized) {
                config = config.authorizer((factory.0)(url.clone()).await?);
            }
            let transport = mcp_http::client::connect(config)
                .await
                .map_err(|e| format!("cannot connect to {url}: {e}"))?;
            let (transport, handle) = transport.into_parts();
            Ok(Opened {
                transport,
                child: None,
                group: None,
                http: Some(handle),
                kind: match kind {
                    HttpKind::Sse => "sse",
                    _ => "streamable-http",
                },
            })
        }
        TransportSpec::WebSocket { url } => {
            let transport = mcp_http::ws::connect(url, mcp_http::ws::WsOptions::new())
                .await
                .map_err(|e| format!("cannot connect to {url}: {e}"))?;
            Ok(Opened {
                transport,
                child: None,
                group: None,
                http: None,
                kind: "websocket",
            })
        }
    }
}

/// What a failed handshake says: the failure alone when no server was
/// reached (the connection was refused, say), else `handshake failed: `
/// and what went wrong.
pub(crate) fn handshake_failed(error: &mcp_client::ClientError) -> String {
    match error.rpc() {
        Some(rpc) if mcp_http::client::is_unreached(rpc) => rpc.message.clone(),
        _ => format!("handshake failed: {error}"),
    }
}

fn add_headers(
    mut config: mcp_http::HttpClientConfig,
    headers: &BTreeMap<String, String>,
) -> Result<mcp_http::HttpClientConfig, String> {
    for (name, value) in headers {
        let (name, value) = crate::config::http_header(name, value)?;
        config = config.header(name, value);
    }
    Ok(config)
}

/// A live connection: the client and what runs behind it.
pub(crate) struct Connection {
    pub(crate) client: Client,
    pub(crate) child: Option<ChildProcess>,
    pub(crate) group: Option<ProcessGroup>,
    pub(crate) http: Option<mcp_http::HttpClientHandle>,
    pub(crate) kind: &'static str,
}

impl Connection {
    /// Ends the session and stops the child as the specification says
    /// (stdin closed, wait, SIGTERM, wait, SIGKILL), then sweeps whatever
    /// the child left running in its process group. The session's end is
    /// not waited for before the signals: a child that outlives its stdin
    /// (a timer keeps it running) keeps its output open until it is
    /// signalled. Returns how a child ended.
    pub(crate) async fn close(self, grace: Duration) -> Option<ChildEnd> {
        let closed = async {
            // A remote session's end is bounded too.
            let _ = tokio::time::timeout(grace.saturating_mul(3), self.client.close()).await;
        };
        let ended = async {
            match self.child {
                Some(child) => Some(ChildEnd::of(child, grace).await),
                None => None,
            }
        };
        let ((), ended) = tokio::join!(closed, ended);
        drop(self.http);
        drop(self.group);
        ended
    }
}

/// How long a child's last stderr lines are waited for once it ended
/// (something it started may keep its stderr open).
const STDERR_PATIENCE: Duration = Duration::from_millis(500);

/// How a child server ended: its exit status and its last lines on stderr.
#[derive(Debug)]
pub(crate) struct ChildEnd {
    status: std::io::Result<std::process::ExitStatus>,
    stderr: Vec<String>,
}

impl ChildEnd {
    /// Stops `child` as [`Connection::close`] does, if it still runs.
    pub(crate) async fn of(child: ChildProcess, grace: Duration) -> ChildEnd {
        let stderr = child.stderr_tail();
        let status = child.with_grace(grace).shutdown().await;
        stderr.closed(STDERR_PATIENCE).await;
        ChildEnd {
            status,
            stderr: stderr.lines(),
        }
    }

    /// Said after what went wrong: `; the server ended with exit status: 3;
    /// its last lines on stderr: ...` (the lines joined by ` | `).
    pub(crate) fn told(&self) -> String {
        let mut told = match &self.status {
            Ok(status) => format!("; the server ended with {status}"),
            Err(e) => format!("; the server could not be waited for: {e}"),
        };
        let lines: Vec<&str> = self
            .stderr
            .iter()
            .map(|line| line.trim_end())
            .filter(|line| !line.is_empty())
            .collect();
        if !lines.is_empty() {
            told.push_str("; its last lines on stderr: ");
            told.push_str(&lines.join(" | "));
        }
        told
    }
}

/// A child's process group: whatever is left of it is killed when this is
/// dropped, however the connection ends (closed, failed, or abandoned
/// half-way through starting), so no grandchild outlives its server.
#[derive(Debug)]
pub(crate) struct ProcessGroup(pub(crate) u32);

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Ok(pid) = i32::try_from(self.0)
            && pid > 0
        {
            // SAFETY: kill(2) with a negative pid signals a process group;
            // no memory is involved.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
}
