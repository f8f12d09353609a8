//! Who visits the authorization URL: a person with a browser (a loopback
//! listener receives the redirect), or, for machines and tests, an HTTP
//! client that follows redirects until the redirect URI.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use url::Url;

use super::OAuthError;
use mcp_core::sync::MutexExt as _;

/// The query of the redirect back to the client: `code`, `state`, `iss`,
/// or `error` and `error_description`.
pub type Callback = HashMap<String, String>;

/// A boxed, sendable future.
pub type UserAgentFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Callback, OAuthError>> + Send + 'a>>;

/// Visits an authorization URL and brings back the redirect's query.
pub trait UserAgent: Send + Sync + 'static {
    /// The redirect URI to register and send.
    fn redirect_uri(&self) -> String;
    /// Sends the user (or a machine) to `url`; resolves with the query of
    /// the redirect to [`redirect_uri`](UserAgent::redirect_uri).
    fn authorize(&self, url: Url) -> UserAgentFuture<'_>;
}

/// Follows the authorization server's redirects with plain HTTP GETs,
/// without a person: for servers that authorize without a login page
/// (tests, conformance suites, pre-approved machine clients).
#[derive(Debug, Clone)]
pub struct HeadlessUserAgent {
    redirect_uri: String,
    http: reqwest::Client,
}

impl HeadlessUserAgent {
    /// Sends `redirect_uri` and stops at the first redirect to it.
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap_or_default();
        HeadlessUserAgent {
            redirect_uri: redirect_uri.into(),
            http,
        }
    }
}

impl UserAgent for HeadlessUserAgent {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize(&self, url: Url) -> UserAgentFuture<'_> {
        Box::pin(async move {
            let mut next = url;
            for _ in 0..10 {
                if next.as_str().starts_with(&self.redirect_uri) {
                    return Ok(next.query_pairs().into_owned().collect());
                }
                let response = self
                    .http
                    .get(next.clone())
                    .send()
                    .await
                    .map_err(|e| OAuthError::Http(format!("GET {next}: {e}")))?;
                let Some(location) = response
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|l| l.to_str().ok())
                else {
                    return Err(OAuthError::Authorization(format!(
                        "the authorization server answered HTTP {} without redirecting",
                        response.status()
                    )));
                };
                next = next
                    .join(location)
                    .map_err(|e| OAuthError::Authorization(format!("bad redirect: {e}")))?;
            }
            Err(OAuthError::Authorization("too many redirects".into()))
        })
    }
}

/// A person with a browser: the URL is shown (and handed to `open` where
/// given), and a listener on 127.0.0.1 receives the redirect; where
/// pasting is accepted, the address the browser was sent back to may be
/// pasted on standard input instead (a browser on another machine).
#[derive(Debug)]
pub struct LoopbackUserAgent {
    listener: std::sync::Mutex<Option<TcpListener>>,
    redirect_uri: String,
    wait: Duration,
    show: fn(&Url),
    pasted: bool,
}

impl LoopbackUserAgent {
    /// Listens on a free loopback port; the redirect URI is
    /// `http://127.0.0.1:PORT/callback`. `show` tells the person where to
    /// go (print it, open a browser); the redirect is awaited for `wait`.
    pub async fn bind(show: fn(&Url), wait: Duration) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        Ok(LoopbackUserAgent {
            listener: std::sync::Mutex::new(Some(listener)),
            redirect_uri: format!("http://127.0.0.1:{port}/callback"),
            wait,
            show,
            pasted: false,
        })
    }

    /// Also takes the address the browser was sent back to, pasted on
    /// standard input as one line (whichever comes first, it or the
    /// redirect to the listener); a line that is not such an address, or
    /// is one from another sign-in, is told in the log and another is
    /// awaited.
    pub fn accept_pasted(mut self, accept: bool) -> Self {
        self.pasted = accept;
        self
    }
}

/// The lines of standard input, read on a thread of their own (a
/// blocking read cannot be cancelled, and must not hold up the runtime's
/// shutdown); started on first use, shared by every sign-in.
fn stdin_lines() -> &'static tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<String>> {
    static LINES: std::sync::OnceLock<
        tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<String>>,
    > = std::sync::OnceLock::new();
    LINES.get_or_init(|| {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let started = std::thread::Builder::new()
            .name("sign-in-paste".into())
            .spawn(move || {
                use std::io::BufRead as _;
                for line in std::io::stdin().lock().lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        if let Err(e) = started {
            tracing::warn!("cannot read pasted addresses: {e}");
        }
        tokio::sync::Mutex::new(rx)
    })
}

/// Waits for a pasted address that answers the authorization request
/// `url`; never resolves when standard input ends first.
async fn pasted_callback(url: &Url) -> Result<Callback, OAuthError> {
    let state = url
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned());
    let mut lines = stdin_lines().lock().await;
    while let Some(line) = lines.recv().await {
        if line.trim().is_empty() {
            continue;
        }
        match parse_pasted(&line, state.as_deref()) {
            Ok(callback) => return Ok(callback),
            Err(why) => tracing::warn!("{why}; paste the whole address, then press Enter"),
        }
    }
    std::future::pending().await
}

/// The query of a pasted address the browser was sent back to (the
/// whole URL, or its query alone): it must carry `code` or `error`, and
/// the `state` of the request it answers.
pub(crate) fn parse_pasted(text: &str, state: Option<&str>) -> Result<Callback, String> {
    let text = text.trim();
    let query = match Url::parse(text) {
        Ok(url) => url.query().unwrap_or_default().to_owned(),
        Err(_) => text
            .rsplit_once('?')
            .map_or(text, |(_, query)| query)
            .to_owned(),
    };
    let callback: Callback = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    if !callback.contains_key("code") && !callback.contains_key("error") {
        return Err("that is not the address the sign-in came back to (it has no code)".into());
    }
    if state.is_some() && callback.get("state").map(String::as_str) != state {
        return Err("that address answers another sign-in (its state differs)".into());
    }
    Ok(callback)
}

const DONE_PAGE: &str = "<!doctype html><title>Signed in</title><p>You may close this window and return to the application.</p>";

impl UserAgent for LoopbackUserAgent {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize(&self, url: Url) -> UserAgentFuture<'_> {
        Box::pin(async move {
            let listener = self.listener.locked().take().ok_or_else(|| {
                OAuthError::Authorization("the loopback listener is in use".into())
            })?;
            // The listener goes back when this sign-in ends, even when it
            // is given up (its future dropped), so the next can use it.
            let listener = Lent {
                listener: Some(listener),
                home: &self.listener,
            };
            (self.show)(&url);
            let wait = self.wait;
            let pasted = self.pasted;
            let arrives = async {
                tokio::select! {
                    callback = accept_callback(listener.get()) => callback,
                    callback = pasted_callback(&url), if pasted => callback,
                }
            };
            let outcome = tokio::time::timeout(wait, arrives).await;
            outcome.map_err(|_| {
                OAuthError::Authorization(format!(
                    "nobody completed the sign-in within {}s",
                    wait.as_secs()
                ))
            })?
        })
    }
}

/// A listener taken out of its slot, put back on drop.
struct Lent<'a> {
    listener: Option<TcpListener>,
    home: &'a std::sync::Mutex<Option<TcpListener>>,
}

impl Lent<'_> {
    fn get(&self) -> &TcpListener {
        self.listener.as_ref().expect("a lent listener")
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        *self.home.locked() = self.listener.take();
    }
}

/// Waits for `GET /callback?...` and answers it with a short page.
async fn accept_callback(listener: &TcpListener) -> Result<Callback, OAuthError> {
    loop {
        let (mut socket, _) = listener
            .accept()
            .await
            .map_err(|e| OAuthError::Authorization(e.to_string()))?;
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let text = String::from_utf8_lossy(&head);
        let target = text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or("");
        let Some(query) = target.strip_prefix("/callback") else {
            let _ = socket
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
            continue;
        };
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{DONE_PAGE}",
            DONE_PAGE.len()
        );
        let _ = socket.write_all(reply.as_bytes()).await;
        let query = query.trim_start_matches('?');
        return Ok(url::form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pasted_addresses_give_code_and_state() {
        let pasted = "  http://127.0.0.1:4444/callback?code=abc&state=s1&iss=http%3A%2F%2Fa  ";
        let callback = parse_pasted(pasted, Some("s1")).unwrap();
        assert_eq!(callback["code"], "abc");
        assert_eq!(callback["iss"], "http://a");
        assert_eq!(
            parse_pasted("?code=abc&state=s1", Some("s1")).unwrap()["code"],
            "abc"
        );
        assert_eq!(
            parse_pasted("code=abc&state=s1", Some("s1")).unwrap()["state"],
            "s1"
        );
        let denied = parse_pasted(
            "http://127.0.0.1:1/callback?error=access_denied&state=s1",
            Some("s1"),
        );
        assert_eq!(denied.unwrap()["error"], "access_denied");
        assert!(parse_pasted("http://127.0.0.1:1/callback?code=abc&state=s2", Some("s1")).is_err());
        assert!(parse_pasted("http://127.0.0.1:1/callback?code=abc", Some("s1")).is_err());
        assert!(parse_pasted("hello", Some("s1")).is_err());
        assert!(parse_pasted("http://127.0.0.1:1/callback", None).is_err());
    }
}
