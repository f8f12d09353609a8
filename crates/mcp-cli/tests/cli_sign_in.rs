//! Signing in from the terminal: real `mcp` processes against
//! `mcp serve everything --http ... --oauth`, and a person who reads the
//! address `mcp` prints, signs in on the server's login form and lets the
//! browser come back to `mcp` (or pastes the address it came back to).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

const MCP: &str = env!("CARGO_BIN_EXE_mcp");

/// How long one run of `mcp` may take, a sign-in included.
const RUN_WAIT: Duration = Duration::from_secs(60);

/// A folder of its own for each test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-sign-in-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `mcp serve everything --http 127.0.0.1:0 --oauth` with user
/// alice:wonderland; its endpoint URL.
async fn serve(dir: &Path) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(MCP)
        .args(["serve", "everything", "--http", "127.0.0.1:0", "--oauth"])
        .args(["--oauth-user", "alice:wonderland"])
        .arg("--oauth-db")
        .arg(dir.join("server.sqlite"))
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn mcp serve --oauth");
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the server printed its URL")
        .unwrap()
        .unwrap();
    let url = line.strip_prefix("MCP endpoint: ").unwrap().to_owned();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

/// A running `mcp` command: the sign-in addresses it shows come on
/// `sign_ins`; its stderr is kept.
struct Run {
    child: tokio::process::Child,
    sign_ins: mpsc::UnboundedReceiver<url::Url>,
    stderr: Arc<Mutex<String>>,
}

/// Runs `mcp ARGS` with its credentials in `credentials`, where no
/// browser can be opened.
fn run(credentials: &Path, args: &[&str]) -> Run {
    let mut child = tokio::process::Command::new(MCP)
        .args(args)
        .env("MCP_CREDENTIALS_FILE", credentials)
        .env_remove("BROWSER")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn mcp");
    let (tx, sign_ins) = mpsc::unbounded_channel();
    let stderr = Arc::new(Mutex::new(String::new()));
    let kept = Arc::clone(&stderr);
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let trimmed = line.trim();
            if trimmed.contains("/authorize?")
                && let Ok(url) = url::Url::parse(trimmed)
            {
                let _ = tx.send(url);
            }
            let mut kept = kept.lock().unwrap();
            kept.push_str(&line);
            kept.push('\n');
        }
    });
    Run {
        child,
        sign_ins,
        stderr,
    }
}

impl Run {
    /// The next sign-in address shown.
    async fn sign_in_url(&mut self) -> url::Url {
        match tokio::time::timeout(RUN_WAIT, self.sign_ins.recv()).await {
            Ok(Some(url)) => url,
            _ => panic!("no sign-in address; stderr:\n{}", self.stderr()),
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Pastes `line` on its stdin.
    async fn paste(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
    }

    /// Waits for it to exit: success, stdout, stderr.
    async fn finish(mut self) -> (bool, String, String) {
        drop(self.child.stdin.take());
        let mut stdout = self.child.stdout.take().unwrap();
        let mut out = String::new();
        let (read, status) = tokio::time::timeout(RUN_WAIT, async {
            let read = tokio::io::AsyncReadExt::read_to_string(&mut stdout, &mut out).await;
            (read, self.child.wait().await)
        })
        .await
        .unwrap_or_else(|_| panic!("mcp did not exit; stderr:\n{}", self.stderr()));
        read.unwrap();
        // Let the stderr reader catch up with the last lines.
        tokio::time::sleep(Duration::from_millis(100)).await;
        (status.unwrap().success(), out, self.stderr())
    }

    /// How many sign-in addresses were shown and not taken.
    fn more_sign_ins(&mut self) -> usize {
        let mut n = 0;
        while self.sign_ins.try_recv().is_ok() {
            n += 1;
        }
        n
    }
}

fn hidden(html: &str, name: &str) -> Option<String> {
    let needle = format!("name=\"{name}\" value=\"");
    let start = html.find(&needle)? + needle.len();
    let end = html[start..].find('"')? + start;
    Some(html[start..end].to_owned())
}

fn form_action(html: &str) -> Option<String> {
    let start = html.find("<form method=\"post\" action=\"")? + 28;
    let end = html[start..].find('"')? + start;
    Some(html[start..end].replace("&amp;", "&"))
}

/// A person at the login page: opens `url`, signs in as alice and
/// approves; the address the browser is sent back to.
async fn sign_in(url: &url::Url) -> url::Url {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let html = http
        .get(url.clone())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let (Some(request_id), Some(csrf), Some(action)) = (
        hidden(&html, "request_id"),
        hidden(&html, "csrf_token"),
        form_action(&html),
    ) else {
        panic!("no login form at {url}: {html}");
    };
    let answer = http
        .post(url.join(&action).unwrap())
        .form(&[
            ("request_id", request_id.as_str()),
            ("csrf_token", csrf.as_str()),
            ("username", "alice"),
            ("password", "wonderland"),
            ("action", "approve"),
        ])
        .send()
        .await
        .unwrap();
    let location = answer
        .headers()
        .get("location")
        .unwrap_or_else(|| panic!("login refused: HTTP {}", answer.status()));
    url::Url::parse(location.to_str().unwrap()).unwrap()
}

/// The browser comes back to `mcp`'s loopback listener.
async fn come_back(back: &url::Url) {
    let page = reqwest::get(back.clone())
        .await
        .expect("the listener answers");
    assert!(page.status().is_success(), "{}", page.status());
}

/// The redirect URI a sign-in address names.
fn redirect_uri(url: &url::Url) -> String {
    url.query_pairs()
        .find(|(k, _)| k == "redirect_uri")
        .map(|(_, v)| v.into_owned())
        .unwrap()
}

/// A sign-in given up halfway (the person closed the terminal) leaves a
/// registration for a listener that is gone; the next run, listening on
/// another port, still signs in.
#[tokio::test]
async fn a_sign_in_given_up_halfway_does_not_block_the_next_one() {
    let dir = scratch("abandoned");
    let (_server, url) = serve(&dir).await;
    let credentials = dir.join("credentials.json");

    let mut first = run(&credentials, &["tools", "--server", &url]);
    let abandoned = first.sign_in_url().await;
    first.child.kill().await.unwrap();

    let mut second = run(&credentials, &["tools", "--server", &url]);
    let address = second.sign_in_url().await;
    assert_ne!(redirect_uri(&address), redirect_uri(&abandoned));
    come_back(&sign_in(&address).await).await;
    let (ok, out, err) = second.finish().await;
    assert!(ok, "{err}");
    assert!(out.contains("echo"), "{out}");
    let stored = std::fs::read_to_string(&credentials).unwrap();
    assert!(stored.contains(&redirect_uri(&address)), "{stored}");
    std::fs::remove_dir_all(&dir).ok();
}
/// A person who takes longer than the server/discover probe's own wait,
/// and than `--timeout`, is waited for, and asked once.
#[tokio::test]
async fn a_slow_sign_in_is_waited_for_and_asked_once() {
    let dir = scratch("slow");
    let (_server, url) = serve(&dir).await;
    let credentials = dir.join("credentials.json");
    let mut slow = run(&credentials, &["tools", "--server", &url, "--timeout", "2"]);
    let address = slow.sign_in_url().await;
    tokio::time::sleep(Duration::from_secs(12)).await;
    come_back(&sign_in(&address).await).await;
    let extra = slow.more_sign_ins();
    let (ok, out, err) = slow.finish().await;
    assert!(ok, "{err}");
    assert!(out.contains("echo"), "{out}");
    assert_eq!(extra, 0, "asked to sign in again: {err}");
    assert_eq!(err.matches("/authorize?").count(), 1, "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Nobody signing in within `--sign-in-timeout` ends the command with a
/// message that says so.
#[tokio::test]
async fn nobody_signing_in_ends_after_the_sign_in_timeout() {
    let dir = scratch("nobody");
    let (_server, url) = serve(&dir).await;
    let credentials = dir.join("credentials.json");
    let mut nobody = run(
        &credentials,
        &["tools", "--server", &url, "--sign-in-timeout", "1"],
    );
    nobody.sign_in_url().await;
    let (ok, _, err) = nobody.finish().await;
    assert!(!ok);
    assert!(err.contains("--sign-in-timeout"), "{err}");
    assert!(!err.contains("HTTP 401"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `mcp login` signs in ahead of time, `mcp credentials` (and `mcp login
/// --list`) shows what is kept without its secrets, later commands need
/// no sign-in, and `mcp logout` forgets it all.
#[tokio::test]
async fn login_credentials_and_logout() {
    let dir = scratch("login");
    let (_server, url) = serve(&dir).await;
    let credentials = dir.join("credentials.json");

    let mut login = run(&credentials, &["login", "--server", &url]);
    let address = login.sign_in_url().await;
    come_back(&sign_in(&address).await).await;
    let (ok, out, err) = login.finish().await;
    assert!(ok, "{err}");
    assert!(out.contains("Signed in to"), "{out}");

    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&credentials).unwrap()).unwrap();
    let (issuer, entry) = kept.as_object().unwrap().iter().next().unwrap();
    let client_id = entry["registration"]["client_id"].as_str().unwrap();
    let access = entry["tokens"]["access_token"].as_str().unwrap();
    for args in [&["credentials"][..], &["login", "--list"][..]] {
        let (ok, out, err) = run(&credentials, args).finish().await;
        assert!(ok, "{err}");
        assert!(out.contains(issuer.as_str()), "{out}");
        assert!(out.contains(&url), "{out}");
        assert!(out.contains(client_id), "{out}");
        assert!(out.contains("in "), "{out}");
        assert!(!out.contains(access), "the access token is shown: {out}");
    }

    let (ok, out, err) = run(&credentials, &["tools", "--server", &url])
        .finish()
        .await;
    assert!(ok, "{err}");
    assert!(out.contains("echo"), "{out}");
    assert!(!err.contains("/authorize?"), "asked to sign in: {err}");

    let (ok, out, err) = run(&credentials, &["logout", "--server", &url])
        .finish()
        .await;
    assert!(ok, "{err}");
    assert!(out.contains("Signed out"), "{out}");
    let (_, out, _) = run(&credentials, &["credentials"]).finish().await;
    assert!(out.contains("No credentials"), "{out}");
    let mut again = run(
        &credentials,
        &["tools", "--server", &url, "--sign-in-timeout", "1"],
    );
    again.sign_in_url().await;
    std::fs::remove_dir_all(&dir).ok();
}

/// The HTTP+SSE and WebSocket endpoints of a protected server each name
/// metadata of their own in their refusals, and `mcp` signs in to each.
#[tokio::test]
async fn sign_in_works_on_every_transport() {
    let dir = scratch("transports");
    let (_server, url) = serve(&dir).await;
    let origin = url.trim_end_matches("/mcp").to_owned();
    let credentials = dir.join("credentials.json");
    let http = reqwest::Client::new();
    for path in ["/sse", "/ws"] {
        let refused = http.get(format!("{origin}{path}")).send().await.unwrap();
        assert_eq!(refused.status(), 401, "{path}");
        let challenge = refused.headers()["www-authenticate"].to_str().unwrap();
        let metadata = format!("{origin}/.well-known/oauth-protected-resource{path}");
        assert!(challenge.contains(&metadata), "{path}: {challenge}");
        let document: serde_json::Value = http
            .get(&metadata)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(document["resource"], format!("{origin}{path}"));
    }
    let ws = format!("{}/ws", origin.replacen("http://", "ws://", 1));
    for server in [format!("{origin}/sse"), ws] {
        let mut tools = run(&credentials, &["tools", "--server", &server]);
        let address = tools.sign_in_url().await;
        come_back(&sign_in(&address).await).await;
        let (ok, out, err) = tools.finish().await;
        assert!(ok, "{server}: {err}");
        assert!(out.contains("echo"), "{server}: {out}");
        // Signed in, the next run needs no sign-in.
        let (ok, out, err) = run(&credentials, &["tools", "--server", &server])
            .finish()
            .await;
        assert!(ok, "{server}: {err}");
        assert!(out.contains("echo"), "{server}: {out}");
        assert!(!err.contains("/authorize?"), "{server}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Without a browser (`--no-browser`), the person signs in wherever they
/// can and pastes the address the browser was sent back to; a line that
/// is not that address is told and another awaited.
#[tokio::test]
async fn the_address_the_browser_came_back_to_can_be_pasted() {
    let dir = scratch("pasted");
    let (_server, url) = serve(&dir).await;
    let credentials = dir.join("credentials.json");
    let mut tools = run(&credentials, &["tools", "--server", &url, "--no-browser"]);
    let address = tools.sign_in_url().await;
    let back = sign_in(&address).await;
    tools.paste("not an address").await;
    let mut other = back.clone();
    let pairs: Vec<(String, String)> = back
        .query_pairs()
        .into_owned()
        .map(|(k, v)| match k.as_str() {
            "state" => (k, "another".to_owned()),
            _ => (k, v),
        })
        .collect();
    other.query_pairs_mut().clear().extend_pairs(pairs);
    tools.paste(other.as_str()).await;
    tools.paste(back.as_str()).await;
    let (ok, out, err) = tools.finish().await;
    assert!(ok, "{err}");
    assert!(out.contains("echo"), "{out}");
    assert!(err.contains("paste"), "{err}");
    assert!(err.contains("another sign-in"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
