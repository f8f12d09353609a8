//! Where a command finds its server: a URL (HTTP or WebSocket) or a
//! command line run as a child over stdio.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use http::{HeaderName, HeaderValue};
use mcp_auth::client::{FileTokenStore, LoopbackUserAgent, OAuthClient, OAuthClientConfig};
use mcp_client::{Client, ClientError, EraChoice};
use mcp_core::Transport;
use mcp_core::child::ChildProcess;
use mcp_schema::{EXTENSION_TASKS, JsonObject, LoggingLevel};

use crate::connection_setup::Setup;
use crate::server_log::ServerLog;
use crate::stderr::print_err;
use crate::terminal::Terminal;

/// A server to talk to, as the user named it.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// Streamable HTTP (or the legacy HTTP+SSE pair behind the same URL).
    Http(String),
    /// WebSocket.
    WebSocket(String),
    /// A program and its arguments, spoken to over stdio.
    Command(Vec<String>),
}

impl Target {
    /// Reads `--server`: `http(s)://` and `ws(s)://` URLs pick the network
    /// transport, and so does `HOST:PORT[/PATH]` without a scheme (meaning
    /// `http://HOST:PORT/PATH`, the path `/mcp` when none is given);
    /// anything else is a command line (split like a shell would).
    pub fn parse(spec: &str) -> Result<Target> {
        if let Some(url) = bare_address(spec.trim()) {
            return Ok(Target::Http(url));
        }
        let lower = spec.trim().to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            return Ok(Target::Http(spec.trim().to_owned()));
        }
        if lower.starts_with("ws://") || lower.starts_with("wss://") {
            return Ok(Target::WebSocket(spec.trim().to_owned()));
        }
        let words =
            shlex::split(spec).with_context(|| format!("cannot split {spec:?} into words"))?;
        if words.is_empty() {
            bail!("--server is empty");
        }
        Ok(Target::Command(words))
    }
}

/// `http://HOST:PORT/PATH` for `HOST:PORT[/PATH]` (a host name, an IPv4
/// address or a bracketed IPv6 one, then a port number).
fn bare_address(spec: &str) -> Option<String> {
    if spec.contains(char::is_whitespace) || spec.contains("://") {
        return None;
    }
    let (authority, path) = match spec.find('/') {
        Some(slash) => spec.split_at(slash),
        None => (spec, "/mcp"),
    };
    let (host, port) = authority.rsplit_once(':')?;
    let host_ok = if let Some(inner) = host.strip_prefix('[') {
        inner
            .strip_suffix(']')
            .is_some_and(|ip| ip.parse::<std::net::Ipv6Addr>().is_ok())
    } else {
        !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
    };
    (host_ok && port.parse::<u16>().is_ok()).then(|| format!("http://{authority}{path}"))
}

impl std::fmt::Display for Target {
    /// The server as the user named it: its URL, or its command line
    /// quoted.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Http(url) | Target::WebSocket(url) => f.write_str(url),
            Target::Command(words) => {
                let line = shlex::try_join(words.iter().map(String::as_str))
                    .unwrap_or_else(|_| words.join(" "));
                write!(f, "`{line}`")
            }
        }
    }
}

/// A connected client, and the child process behind it if there is one.
pub struct Connection {
    /// The client.
    pub client: Client,
    child: Option<ChildProcess>,
    http: Option<mcp_http::HttpClientHandle>,
}

impl Connection {
    /// Connects to `target`; the terminal answers what the server asks.
    /// Waits as long as the server takes.
    /// The server's log messages are not shown.
    pub async fn open(target: &Target, era: EraChoice, terminal: &Terminal) -> Result<Connection> {
        Connection::open_with(target, &Setup::default(), era, terminal, None, None, None).await
    }

    /// Connects to `target`, giving up when the connection or the MCP
    /// handshake takes longer than `wait` (`--timeout`); every request
    /// then waits `wait` for its answer by default. A server that asks
    /// for a sign-in is signed in to first, as `sign_in` says, and the
    /// person gets the sign-in's own time; the MCP handshake then starts
    /// with the credentials. The server's log messages are shown as
    /// `log` says, and a server that declares logging is asked for that
    /// level. `setup` adds headers, or a child's environment and folder.
    pub async fn open_within(
        target: &Target,
        setup: &Setup,
        era: EraChoice,
        terminal: &Terminal,
        wait: Duration,
        log: ServerLog,
        sign_in: &SignIn,
    ) -> Result<Connection> {
        Connection::open_with(
            target,
            setup,
            era,
            terminal,
            Some(wait),
            Some(log),
            Some(sign_in),
        )
        .await
    }

    async fn open_with(
        target: &Target,
        setup: &Setup,
        era: EraChoice,
        terminal: &Terminal,
        wait: Option<Duration>,
        log: Option<ServerLog>,
        sign_in: Option<&SignIn>,
    ) -> Result<Connection> {
        let mut deadline = wait.map(|w| Instant::now() + w);
        let seconds = || wait.map(|w| w.as_secs_f64()).unwrap_or_default();
        // A server reached with an `Authorization` header of its own is
        // not signed in to.
        let oauth = match target {
            Target::Http(url) | Target::WebSocket(url) if !setup.authorized() => {
                let default = SignIn::default();
                let sign_in = sign_in.unwrap_or(&default);
                Some(oauth_client(url, sign_in, &setup.headers).await?)
            }
            _ => None,
        };
        if let (Some(oauth), Some(sign_in)) = (&oauth, sign_in) {
            // Signed in before the handshake, so that probing the eras
            // never races the person.
            let Some(prepared) = within(deadline, sign_in.wait, oauth.prepare()).await else {
                bail!(
                    "{target} did not answer the MCP handshake ({}) within {}s (--timeout)",
                    handshake(era),
                    seconds()
                );
            };
            prepared.map_err(|e| sign_in_failed(target, &e))?;
            if SIGNING_IN.swap(false, Ordering::Relaxed) {
                deadline = wait.map(|w| Instant::now() + w);
            }
        }
        let sign_in_wait = sign_in.map_or(SIGN_IN_WAIT, |s| s.wait);
        let Some(opened) = within(deadline, sign_in_wait, transport(target, setup, oauth)).await
        else {
            bail!(
                "{target} did not take the connection within {}s (--timeout)",
                seconds()
            );
        };
        let (transport, mut child, http) = opened?;
        let sampling = terminal.clone();
        let elicitation = terminal.clone();
        let mut builder = Client::builder("mcp", env!("CARGO_PKG_VERSION"))
            .on_sampling(move |p| {
                let terminal = sampling.clone();
                async move { terminal.sample(p).await }
            })
            .on_elicitation(move |p| {
                let terminal = elicitation.clone();
                async move { terminal.elicit(p).await }
            })
            .elicitation_url(true)
            .era(era);
        if let Some(wait) = wait {
            // A command that waits for answers follows tasks too (2026-07-28:
            // the server chooses, for a client that declares the extension).
            builder = builder
                .request_timeout(wait)
                .extension(EXTENSION_TASKS, JsonObject::new());
        }
        if let Some(log) = log {
            builder = builder.on_notification(log.handler());
        }
        let mut timed_out = false;
        let failure = match within(deadline, sign_in_wait, builder.connect(transport)).await {
            Some(Ok(client)) => {
                if let Some(log) = log {
                    ask_log_level(&client, log.level()).await;
                }
                return Ok(Connection {
                    client,
                    child,
                    http,
                });
            }
            Some(Err(e)) => {
                let url = match target {
                    Target::Http(url) => Some(url.as_str()),
                    _ => None,
                };
                match e.rpc() {
                    Some(rpc) => match http_failure(&rpc.message, url) {
                        Some(http) => format!("cannot start the MCP session: {http}"),
                        None => format!("cannot start the MCP session: {}", rpc.message),
                    },
                    None => format!("cannot start the MCP session: {e}"),
                }
            }
            None => {
                timed_out = true;
                format!(
                    "{target} did not answer the MCP handshake ({}) within {}s (--timeout)",
                    handshake(era),
                    seconds()
                )
            }
        };
        match child.take() {
            Some(child) => {
                let report = stopped(target, child, timed_out).await;
                Err(anyhow!("{failure}\n{report}"))
            }
            None => Err(anyhow!(failure)),
        }
    }

    /// The HTTP transport's handle, over HTTP.
    pub fn http_handle(&self) -> Option<&mcp_http::HttpClientHandle> {
        self.http.as_ref()
    }

    /// The HTTP transport's counts of JSON and SSE replies, over HTTP.
    pub fn reply_kinds(&self) -> Option<mcp_http::ReplyKinds> {
        self.http.as_ref().map(|h| h.reply_kinds())
    }

    /// Ends the session and stops the child the way the specification asks.
    pub async fn close(self) {
        // A child that stays up once its stdin is closed does not hold
        // this program: after a grace period it is stopped (SIGTERM, then
        // SIGKILL) instead of waited for.
        let closing = self.client.close();
        let Some(mut child) = self.child else {
            return closing.await;
        };
        if tokio::time::timeout(CHILD_CLOSE_GRACE, closing)
            .await
            .is_err()
        {
            // Its stdin has been closed for the whole grace period already.
            child = child.with_grace(STOP_GRACE);
        }
        let _ = child.shutdown().await;
    }
}

/// How long a stdio server is given to end its session once its stdin is
/// closed, before it is stopped.
const CHILD_CLOSE_GRACE: Duration = Duration::from_secs(2);

/// How long each of the signals that stop such a child is given.
const STOP_GRACE: Duration = Duration::from_millis(500);

/// Asks a server that declares logging for messages from `level` up
/// (`logging/setLevel`, or in the modern era the requests' log level); a
/// refusal only goes to the log.
async fn ask_log_level(client: &Client, level: LoggingLevel) {
    if client.server_capabilities().logging.is_none() {
        return;
    }
    if let Err(e) = client.set_logging_level(level).await {
        tracing::warn!("the server did not take log level {level}: {e}");
    }
}

/// A failed request told for people: the server's JSON-RPC error with its
/// code, or an HTTP failure as such.
pub(crate) fn explain(error: ClientError) -> anyhow::Error {
    if let Some(http) = error.rpc().and_then(|rpc| http_failure(&rpc.message, None)) {
        return anyhow!(http);
    }
    match error.rpc() {
        Some(rpc) => anyhow!(
            "the server answered with error {}: {}{}",
            rpc.code,
            rpc.message,
            rpc.data
                .as_ref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        ),
        None => anyhow!(error),
    }
}

/// An HTTP failure told for people, if `message` is one (`HTTP 404 Not
/// Found: BODY`, as the HTTP transport reports a failed exchange): the
/// status, the URL when known, and the body if any; a 404 asks whether
/// the path is right.
pub fn http_failure(message: &str, url: Option<&str>) -> Option<String> {
    let rest = message.strip_prefix("HTTP ")?;
    let (code, rest) = rest.split_at_checked(3)?;
    let code: u16 = code.parse().ok()?;
    let (reason, body) = rest.split_once(':').unwrap_or((rest, ""));
    let mut told = format!("HTTP {code}{reason}");
    if let Some(url) = url {
        told.push_str(&format!(" at {url}"));
    }
    if code == 404 {
        told.push_str(": is the path right? MCP endpoints are usually /mcp");
    }
    let body = body.trim();
    if !body.is_empty() {
        told.push_str(&format!(" (the server said: {body})"));
    }
    Some(told)
}

/// The requests that start a session in `era`.
fn handshake(era: EraChoice) -> &'static str {
    match era {
        EraChoice::Pinned(version) if version.is_legacy() => "initialize",
        EraChoice::Pinned(_) => "server/discover",
        _ => "server/discover, then initialize",
    }
}

/// How long a child that failed to start a session gets to exit on its
/// own before it is stopped.
const FAILED_CHILD_GRACE: Duration = Duration::from_millis(500);

/// How long the last stderr lines of a child that ended are waited for
/// (something it started may keep its stderr open).
const STDERR_PATIENCE: Duration = Duration::from_millis(500);

/// Stops a child that failed to start a session (`timed_out`: one that
/// was still waited for), and says how it ended and what it last wrote on
/// stderr.
async fn stopped(target: &Target, child: ChildProcess, timed_out: bool) -> String {
    let stderr = child.stderr_tail();
    let status = child.with_grace(FAILED_CHILD_GRACE).shutdown().await;
    stderr.closed(STDERR_PATIENCE).await;
    let tail = stderr.lines();
    let mut report = match status {
        _ if timed_out => format!("{target} was stopped"),
        Ok(status) => format!("{target} exited ({status})"),
        Err(e) => format!("{target} could not be waited for: {e}"),
    };
    if tail.is_empty() {
        report.push_str("; it wrote nothing on stderr");
    } else {
        report.push_str("; its last lines on stderr:");
        for line in tail {
            report.push_str("\n  ");
            report.push_str(&line);
        }
    }
    report
}

/// Awaits `work` until `deadline` (`None`: without end); `None` when it
/// did not finish in time. A sign-in shown in the meantime extends the
/// deadline by `sign_in_wait`, the time a person has to sign in.
async fn within<T>(
    deadline: Option<Instant>,
    sign_in_wait: Duration,
    work: impl Future<Output = T>,
) -> Option<T> {
    let Some(mut deadline) = deadline else {
        return Some(work.await);
    };
    let mut work = std::pin::pin!(work);
    let mut extended = false;
    loop {
        match tokio::time::timeout_at(deadline.into(), &mut work).await {
            Ok(done) => return Some(done),
            Err(_) if !extended && SIGNING_IN.load(Ordering::Relaxed) => {
                extended = true;
                deadline = Instant::now() + sign_in_wait;
            }
            Err(_) => return None,
        }
    }
}

/// The transport to `target`, the child process behind it, and the HTTP
/// transport's handle.
type Opened = (
    Transport,
    Option<ChildProcess>,
    Option<mcp_http::HttpClientHandle>,
);

async fn transport(
    target: &Target,
    setup: &Setup,
    oauth: Option<Arc<OAuthClient>>,
) -> Result<Opened> {
    match target {
        Target::Command(words) => {
            let command = setup.command(words);
            let (child, transport) = ChildProcess::spawn(command)
                .with_context(|| format!("cannot run {:?}", words[0]))?;
            Ok((transport, Some(child), None))
        }
        Target::Http(url) => {
            let mut config = setup.http_config(url);
            if let Some(oauth) = oauth {
                config = config.authorizer(oauth);
            }
            let transport = mcp_http::client::connect(config)
                .await
                .with_context(|| format!("cannot connect to {url}"))?;
            let (transport, handle) = transport.into_parts();
            Ok((transport, None, Some(handle)))
        }
        Target::WebSocket(url) => {
            let mut options = setup.ws_options();
            if let Some(oauth) = oauth {
                options = options.authorizer(oauth);
            }
            let transport = mcp_http::ws::connect(url, options)
                .await
                .with_context(|| format!("cannot connect to {url}"))?;
            Ok((transport, None, None))
        }
    }
}

/// How long a person has to finish signing in, by default.
const SIGN_IN_WAIT: Duration = Duration::from_secs(300);

/// How a command signs in to a server that asks for it.
#[derive(Debug, Clone)]
pub struct SignIn {
    /// How long the person has to finish signing in (`--sign-in-timeout`).
    pub wait: Duration,
    /// Whether a browser is opened at the sign-in page (not with
    /// `--no-browser`, nor where none can be opened).
    pub browser: bool,
    /// Whether the address the browser comes back to may be pasted on
    /// stdin when no browser is opened.
    pub paste: bool,
}

impl Default for SignIn {
    /// Five minutes to sign in, in a browser opened for it, or by pasting
    /// the address it comes back to.
    fn default() -> Self {
        SignIn {
            wait: SIGN_IN_WAIT,
            browser: true,
            paste: true,
        }
    }
}

impl SignIn {
    /// For a program that runs in the background (`mcp host`): the
    /// address is only shown, in its log.
    pub fn background() -> Self {
        SignIn {
            browser: false,
            paste: false,
            ..SignIn::default()
        }
    }
}

/// A failed sign-in told for people.
pub fn sign_in_failed(target: &Target, error: &mcp_auth::client::OAuthError) -> anyhow::Error {
    let text = error.to_string();
    if text.contains("nobody completed the sign-in") {
        anyhow!("cannot sign in to {target}: {text} (--sign-in-timeout)")
    } else {
        anyhow!("cannot sign in to {target}: {text}")
    }
}

/// Where credentials are kept: `MCP_CREDENTIALS_FILE`, else
/// `$XDG_CONFIG_HOME/mcp/credentials.json` or `~/.config/mcp/credentials.json`.
pub fn credentials_file() -> PathBuf {
    if let Some(path) = std::env::var_os("MCP_CREDENTIALS_FILE") {
        return PathBuf::from(path);
    }
    xdg_dir("XDG_CONFIG_HOME", ".config").join("credentials.json")
}

/// This program's folder under an XDG base directory: `$VAR/mcp`, else
/// `$HOME/FALLBACK/mcp`, else `./mcp`.
pub fn xdg_dir(var: &str, fallback: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(fallback)))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("mcp")
}

/// Whether the person was asked to sign in (a connection's wait then
/// allows for it).
static SIGNING_IN: AtomicBool = AtomicBool::new(false);

/// Opens a browser at the sign-in page, and tells the person.
fn show_sign_in_browser(url: &url::Url) {
    SIGNING_IN.store(true, Ordering::Relaxed);
    let opened = open_browser(url);
    let how = match opened {
        true => "A browser is opening at this address; if none does, open it yourself:",
        false => "Open this address in a browser:",
    };
    print_err(&format!(
        "The server asks you to sign in. {how}\n\n  {url}\n"
    ));
}

/// Tells the person where to sign in, and that the address the browser
/// comes back to may be pasted here.
fn show_sign_in_pasted(url: &url::Url) {
    SIGNING_IN.store(true, Ordering::Relaxed);
    print_err(&format!(
        "The server asks you to sign in. Open this address in a browser:\n\n  {url}\n\n\
         If that browser cannot come back to this computer, paste here the address it ends up at \
         (the page may fail to load) and press Enter.\n"
    ));
}

/// Whether a browser can be opened here: `$BROWSER` is set, or (on a
/// Unix desktop) a display and `xdg-open` are there.
fn browser_available() -> bool {
    if cfg!(any(target_os = "macos", windows)) || std::env::var_os("BROWSER").is_some() {
        return true;
    }
    let display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()));
    let xdg_open = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("xdg-open").is_file()));
    display && xdg_open
}

/// Opens `url` in the person's browser; whether the opener started.
fn open_browser(url: &url::Url) -> bool {
    let mut command = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(windows) {
        let mut command = std::process::Command::new("cmd");
        command.args(["/C", "start", ""]);
        command
    } else {
        let opener = std::env::var_os("BROWSER").unwrap_or_else(|| "xdg-open".into());
        std::process::Command::new(opener)
    };
    command
        .arg(url.as_str())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}

/// Tells the person where to sign in.
fn show_sign_in(url: &url::Url) {
    SIGNING_IN.store(true, Ordering::Relaxed);
    print_err(&format!(
        "The server asks you to sign in. Open this address in a browser:\n\n  {url}\n"
    ));
}

/// The OAuth client that signs in when `url` demands it: the browser
/// comes back to a listener on 127.0.0.1, credentials are kept (0600) by
/// issuer for the next run.
pub async fn login(url: &str) -> Result<Arc<dyn mcp_http::client::Authorizer>> {
    Ok(oauth_client(url, &SignIn::background(), &[]).await?)
}

/// The OAuth client for `url`, signing in as `sign_in` says.
pub async fn oauth_client(
    url: &str,
    sign_in: &SignIn,
    headers: &[(HeaderName, HeaderValue)],
) -> Result<Arc<OAuthClient>> {
    let browser = sign_in.browser && browser_available();
    let pasted = !browser && sign_in.paste;
    let show = match (browser, pasted) {
        (true, _) => show_sign_in_browser,
        (false, true) => show_sign_in_pasted,
        (false, false) => show_sign_in,
    };
    let agent = LoopbackUserAgent::bind(show, sign_in.wait)
        .await
        .context("cannot listen for the sign-in redirect on 127.0.0.1")?
        .accept_pasted(pasted);
    let mut config = OAuthClientConfig::new("mcp command line", Arc::new(agent))
        .store(Arc::new(FileTokenStore::new(credentials_file())));
    for (name, value) in headers {
        config = config.server_header(name.clone(), value.clone());
    }
    let client = OAuthClient::new(url, config).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Arc::new(client))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_command_lines() {
        assert_eq!(
            Target::parse("http://127.0.0.1:8080/mcp").unwrap(),
            Target::Http("http://127.0.0.1:8080/mcp".into())
        );
        assert_eq!(
            Target::parse("WSS://example.com/ws").unwrap(),
            Target::WebSocket("WSS://example.com/ws".into())
        );
        assert_eq!(
            Target::parse("mcp serve 'every thing'").unwrap(),
            Target::Command(vec!["mcp".into(), "serve".into(), "every thing".into()])
        );
        assert_eq!(
            Target::parse("127.0.0.1:8080").unwrap(),
            Target::Http("http://127.0.0.1:8080/mcp".into())
        );
        assert_eq!(
            Target::parse("localhost:9000/other").unwrap(),
            Target::Http("http://localhost:9000/other".into())
        );
        assert_eq!(
            Target::parse("[::1]:8080").unwrap(),
            Target::Http("http://[::1]:8080/mcp".into())
        );
        assert_eq!(
            Target::parse("python3 server.py:80").unwrap(),
            Target::Command(vec!["python3".into(), "server.py:80".into()])
        );
        assert!(matches!(
            Target::parse("./server:x").unwrap(),
            Target::Command(_)
        ));
        assert!(Target::parse("  ").is_err());
        assert_eq!(
            http_failure("HTTP 404 Not Found: ", Some("http://h:1/x")).as_deref(),
            Some(
                "HTTP 404 Not Found at http://h:1/x: is the path right? MCP endpoints are usually /mcp"
            )
        );
        assert_eq!(
            http_failure("HTTP 500 Internal Server Error: boom", None).as_deref(),
            Some("HTTP 500 Internal Server Error (the server said: boom)")
        );
        assert_eq!(http_failure("Method not found", None), None);
        assert!(Target::parse("unterminated 'quote").is_err());
    }
}
