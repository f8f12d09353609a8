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
/// given), and a listener on 127.0.0.1 receives the redirect.
#[derive(Debug)]
pub struct LoopbackUserAgent {
    listener: std::sync::Mutex<Option<TcpListener>>,
    redirect_uri: String,
    wait: Duration,
    show: fn(&Url),
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
        })
    }
}

const DONE_PAGE: &str = "<!doctype html><title>Signed in</title><p>You may close this window and return to the application.</p>";

impl UserAgent for LoopbackUserAgent {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize(&self, url: Url) -> UserAgentFuture<'_> {
        Box::pin(async move {
            let listener = self
                .listener
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
                .ok_or_else(|| {
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
            let outcome = tokio::time::timeout(wait, accept_callback(listener.get())).await;
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
        *self.home.lock().unwrap_or_else(|p| p.into_inner()) = self.listener.take();
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
