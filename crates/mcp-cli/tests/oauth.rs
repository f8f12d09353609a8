//! `mcp serve everything --http ... --oauth`: the real binary with its
//! built-in authorization server, and our client signing in through the
//! server's own login form, in both eras; the credentials outlive a
//! restart of either side.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_auth::client::{
    Callback, FileTokenStore, OAuthClient, OAuthClientConfig, OAuthError, Registration, UserAgent,
    UserAgentFuture,
};
use mcp_client::{Client, EraChoice};
use mcp_schema::ProtocolVersion;
use serde_json::json;
use tokio::io::AsyncBufReadExt;

const MCP: &str = env!("CARGO_BIN_EXE_mcp");
const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// A person at the login page: fills in the form the server renders and
/// approves; counts the sign-ins.
struct FormLogin {
    user: &'static str,
    password: &'static str,
    sign_ins: AtomicUsize,
    http: reqwest::Client,
}

impl FormLogin {
    fn new(password: &'static str) -> Arc<Self> {
        Self::of("alice", password)
    }

    /// Signs in as `user`.
    fn of(user: &'static str, password: &'static str) -> Arc<Self> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Arc::new(FormLogin {
            user,
            password,
            sign_ins: AtomicUsize::new(0),
            http,
        })
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

impl UserAgent for FormLogin {
    fn redirect_uri(&self) -> String {
        REDIRECT.to_owned()
    }

    fn authorize(&self, url: url::Url) -> UserAgentFuture<'_> {
        Box::pin(async move {
            self.sign_ins.fetch_add(1, Ordering::SeqCst);
            let fail = |what: String| OAuthError::Authorization(what);
            let page = self
                .http
                .get(url.clone())
                .send()
                .await
                .map_err(|e| fail(e.to_string()))?;
            let html = page.text().await.map_err(|e| fail(e.to_string()))?;
            let (Some(request_id), Some(csrf), Some(action)) = (
                hidden(&html, "request_id"),
                hidden(&html, "csrf_token"),
                form_action(&html),
            ) else {
                return Err(fail(format!("no login form in {html}")));
            };
            let target = url.join(&action).map_err(|e| fail(e.to_string()))?;
            let answer = self
                .http
                .post(target)
                .form(&[
                    ("request_id", request_id.as_str()),
                    ("csrf_token", csrf.as_str()),
                    ("username", self.user),
                    ("password", self.password),
                    ("action", "approve"),
                ])
                .send()
                .await
                .map_err(|e| fail(e.to_string()))?;
            let Some(location) = answer.headers().get("location") else {
                return Err(fail(format!("login refused: HTTP {}", answer.status())));
            };
            let back = url::Url::parse(location.to_str().unwrap_or_default())
                .map_err(|e| fail(e.to_string()))?;
            let callback: Callback = back.query_pairs().into_owned().collect();
            Ok(callback)
        })
    }
}

/// The protected server; its endpoint URL.
async fn serve(db: &Path, addr: &str) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(MCP)
        .args(["serve", "everything", "--http", addr, "--oauth"])
        .args(["--oauth-user", "alice:wonderland"])
        .args(["--oauth-client", &format!("app@{REDIRECT}")])
        .arg("--oauth-db")
        .arg(db)
        .stdout(std::process::Stdio::piped())
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

async fn connect(
    url: &str,
    agent: Arc<FormLogin>,
    store: &Path,
    era: EraChoice,
) -> Result<Client, mcp_client::ClientError> {
    let config = OAuthClientConfig::new("oauth-test", agent)
        .registration(Registration::new("app", None, "none"))
        .store(Arc::new(FileTokenStore::new(store)));
    let oauth = Arc::new(OAuthClient::new(url, config).unwrap());
    let transport =
        mcp_http::client::connect(mcp_http::HttpClientConfig::new(url).authorizer(oauth))
            .await
            .unwrap()
            .into_transport();
    Client::builder("oauth-test", "1.0.0")
        .era(era)
        .connect(transport)
        .await
}

#[tokio::test]
async fn sign_in_through_the_login_form_in_both_eras() {
    let dir = std::env::temp_dir().join(format!("mcp-oauth-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (db, store) = (dir.join("server.sqlite"), dir.join("client.json"));
    let (mut server, url) = serve(&db, "127.0.0.1:0").await;

    // Without a token: 401 naming the protected resource metadata.
    let refused = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let challenge = refused.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(challenge.contains("resource_metadata="), "{challenge}");

    // A wrong password gets no session.
    let wrong = FormLogin::new("rabbit-hole");
    let outcome = tokio::time::timeout(
        Duration::from_secs(20),
        connect(
            &url,
            Arc::clone(&wrong),
            &dir.join("wrong.json"),
            EraChoice::Auto,
        ),
    )
    .await
    .unwrap();
    assert!(outcome.is_err(), "signed in with a wrong password");

    // The right one: one sign-in serves both eras.
    let alice = FormLogin::new("wonderland");
    for era in [
        EraChoice::Auto,
        EraChoice::Pinned(ProtocolVersion::V2025_11_25),
    ] {
        let client = tokio::time::timeout(
            Duration::from_secs(20),
            connect(&url, Arc::clone(&alice), &store, era),
        )
        .await
        .unwrap()
        .expect("signed in");
        let echo = client
            .call_tool("echo", json!({"text": "signed in"}))
            .await
            .unwrap();
        assert_eq!(echo.content[0].as_text(), Some("signed in"));
        client.close().await;
    }
    assert_eq!(
        alice.sign_ins.load(Ordering::SeqCst),
        1,
        "the stored token was reused"
    );

    // A restarted server (same address, same database: same keys and
    // issuer) takes the stored token: no new sign-in.
    server.kill().await.unwrap();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let (_server, url) = serve(&db, &addr).await;
    let again = FormLogin::new("wonderland");
    let client = tokio::time::timeout(
        Duration::from_secs(20),
        connect(&url, Arc::clone(&again), &store, EraChoice::Auto),
    )
    .await
    .unwrap()
    .expect("connected after the restart");
    let _ = client.list_all_tools().await.unwrap();
    client.close().await;
    assert_eq!(
        again.sign_ins.load(Ordering::SeqCst),
        0,
        "the stored token outlived the restart"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Starts `mcp host` with `config` and these credentials; its endpoint,
/// and its stderr so far once started.
async fn host(
    config: &Path,
    settings: &Path,
    credentials: &Path,
) -> (tokio::process::Child, String) {
    started(
        tokio::process::Command::new(MCP)
            .args(["host", "--http", "127.0.0.1:0", "--config"])
            .arg(config)
            .arg("--settings")
            .arg(settings)
            .env("MCP_CREDENTIALS_FILE", credentials)
            .stderr(std::process::Stdio::piped()),
    )
    .await
}

/// Starts `command`, an `mcp` serving HTTP, stdin closed and killed when
/// dropped; it and the endpoint URL it prints first.
async fn started(command: &mut tokio::process::Command) -> (tokio::process::Child, String) {
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn mcp");
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("mcp printed its URL")
        .unwrap()
        .unwrap();
    let url = line.strip_prefix("MCP endpoint: ").unwrap().to_owned();
    (child, url)
}

#[tokio::test]
async fn the_host_reaches_a_protected_server_with_the_stored_credentials() {
    let dir = std::env::temp_dir().join(format!("mcp-oauth-host-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (db, store) = (dir.join("server.sqlite"), dir.join("client.json"));
    let (_server, url) = serve(&db, "127.0.0.1:0").await;
    let config = dir.join("servers.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"safe": {"url": url}}}).to_string(),
    )
    .unwrap();
    let settings = dir.join("host.toml");
    std::fs::write(&settings, "[servers]\nconnect_timeout = 3\n").unwrap();

    // No credentials yet: the host asks for a sign-in (on its stderr), and
    // the server stays down rather than holding the others.
    let (mut unsigned, host_url) = host(&config, &settings, &dir.join("none.json")).await;
    // The host serves at once; the server's first start then fails.
    let status = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let status: serde_json::Value = reqwest::get(host_url.replace("/mcp", "/status"))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if status["servers"][0]["state"] != "starting" {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the server's first start ends within 30 s");
    assert_eq!(status["servers"][0]["state"], "restarting", "{status}");
    unsigned.kill().await.unwrap();
    let mut stderr = String::new();
    tokio::io::AsyncReadExt::read_to_string(unsigned.stderr.as_mut().unwrap(), &mut stderr)
        .await
        .unwrap();
    assert!(stderr.contains("sign in"), "{stderr}");

    // Signed in once (as `mcp call` would), the host uses those credentials.
    let alice = FormLogin::new("wonderland");
    let client = tokio::time::timeout(
        Duration::from_secs(20),
        connect(&url, Arc::clone(&alice), &store, EraChoice::Auto),
    )
    .await
    .unwrap()
    .expect("signed in");
    client.close().await;
    let (_host, host_url) = host(&config, &settings, &store).await;
    let transport = mcp_http::client::connect(mcp_http::HttpClientConfig::new(&host_url))
        .await
        .unwrap()
        .into_transport();
    let through = Client::builder("oauth-host-test", "1.0.0")
        .connect(transport)
        .await
        .unwrap();
    let echo = through
        .call_tool("safe__echo", json!({"text": "through the host"}))
        .await
        .unwrap();
    assert_eq!(echo.content[0].as_text(), Some("through the host"));
    assert_eq!(
        alice.sign_ins.load(Ordering::SeqCst),
        1,
        "no second sign-in"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A folder of its own for test `name`, with a config file naming `mcp
/// serve everything` as server `e`; both paths.
fn everything_config(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("mcp-oauth-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("servers.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"e": {"command": MCP, "args": ["serve", "everything"]}}}).to_string(),
    )
    .unwrap();
    (dir, config)
}

/// `mcp host --oauth --audit`: each request's record names the signed-in
/// user who made it (the token's issuer, subject and client).
#[tokio::test]
async fn the_hosts_audit_log_names_the_signed_in_caller() {
    let (dir, config) = everything_config("audit");
    let audit = dir.join("audit.db");
    let (mut child, url) = started(
        tokio::process::Command::new(MCP)
            .args(["host", "--http", "127.0.0.1:0", "--config"])
            .arg(&config)
            .arg("--audit")
            .arg(&audit)
            .args(["--oauth", "--oauth-user", "alice:wonderland"])
            .args(["--oauth-client", &format!("app@{REDIRECT}")])
            .arg("--oauth-db")
            .arg(dir.join("server.sqlite")),
    )
    .await;

    let alice = FormLogin::new("wonderland");
    for era in [
        EraChoice::Pinned(ProtocolVersion::V2025_11_25),
        EraChoice::Pinned(ProtocolVersion::V2026_07_28),
    ] {
        let client = tokio::time::timeout(
            Duration::from_secs(20),
            connect(&url, Arc::clone(&alice), &dir.join("client.json"), era),
        )
        .await
        .unwrap()
        .expect("signed in");
        let echo = client
            .call_tool("e__echo", json!({"text": "who"}))
            .await
            .unwrap();
        assert_eq!(echo.content[0].as_text(), Some("who"));
        client.close().await;
    }

    // The records reach the file within moments of the calls.
    let callers = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let found: Option<Vec<String>> = rusqlite::Connection::open(&audit)
                .and_then(|db| {
                    let mut select = db.prepare(
                        "SELECT caller FROM audit WHERE method = 'tools/call' ORDER BY id",
                    )?;
                    select
                        .query_map([], |row| row.get::<_, String>(0))?
                        .collect::<Result<Vec<_>, _>>()
                })
                .ok();
            match found {
                Some(callers) if callers.len() == 2 => return callers,
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    })
    .await
    .expect("both calls recorded");
    for caller in callers {
        let caller: Vec<Option<String>> = serde_json::from_str(&caller).unwrap();
        assert_eq!(caller.len(), 3, "{caller:?}");
        assert!(
            caller[0]
                .as_deref()
                .is_some_and(|issuer| issuer.starts_with("http://127.0.0.1:"))
        );
        assert_eq!(caller[1].as_deref(), Some("alice"));
        assert_eq!(caller[2].as_deref(), Some("app"));
    }
    child.kill().await.unwrap();
    std::fs::remove_dir_all(&dir).ok();
}

/// Alice (alice:wonderland) and Bob (bob:builder) signed in at `url` as
/// clients of `era`, their credentials kept in `dir`.
async fn alice_and_bob(url: &str, dir: &Path, era: EraChoice) -> (Client, Client) {
    let signed_in = |user, password, store: &str| {
        let who = FormLogin::of(user, password);
        let store = dir.join(store);
        async move {
            tokio::time::timeout(Duration::from_secs(30), connect(url, who, &store, era))
                .await
                .unwrap()
                .expect("signed in")
        }
    };
    (
        signed_in("alice", "wonderland", "alice.json").await,
        signed_in("bob", "builder", "bob.json").await,
    )
}

/// `mcp host --oauth` with a policy: two signed-in users see different
/// catalogs and get different decisions for the same tool, in both eras.
#[tokio::test]
async fn two_signed_in_users_get_what_the_policy_gives_each() {
    let (dir, config) = everything_config("policy");
    let settings = dir.join("host.toml");
    std::fs::write(
        &settings,
        "[[policy]]\ndecision = \"deny\"\nserver = \"e\"\ntool = \"add\"\ncaller = \"bob\"\n\
         name = \"bob does not add\"\n",
    )
    .unwrap();
    let (mut child, url) = started(
        tokio::process::Command::new(MCP)
            .args(["host", "--http", "127.0.0.1:0", "--config"])
            .arg(&config)
            .arg("--settings")
            .arg(&settings)
            .args(["--oauth", "--oauth-user", "alice:wonderland"])
            .args(["--oauth-user", "bob:builder"])
            .args(["--oauth-client", &format!("app@{REDIRECT}")])
            .arg("--oauth-db")
            .arg(dir.join("server.sqlite")),
    )
    .await;

    for era in [
        EraChoice::Pinned(ProtocolVersion::V2025_11_25),
        EraChoice::Pinned(ProtocolVersion::V2026_07_28),
    ] {
        let (as_alice, as_bob) = alice_and_bob(&url, &dir, era).await;
        let listed = |tools: Vec<mcp_schema::Tool>| tools.into_iter().any(|t| t.name == "e__add");
        assert!(
            listed(as_alice.list_all_tools().await.unwrap()),
            "alice sees add"
        );
        assert!(
            !listed(as_bob.list_all_tools().await.unwrap()),
            "bob does not"
        );
        let sum = as_alice
            .call_tool("e__add", json!({"a": 2, "b": 3}))
            .await
            .unwrap();
        assert_ne!(sum.is_error, Some(true), "{sum:?}");
        assert!(
            sum.content[0].as_text().unwrap_or_default().contains('5'),
            "{sum:?}"
        );
        let refused = as_bob
            .call_tool("e__add", json!({"a": 2, "b": 3}))
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.contains("bob does not add"), "{refused}");
        as_alice.close().await;
        as_bob.close().await;
    }
    child.kill().await.unwrap();
    std::fs::remove_dir_all(&dir).ok();
}

/// The memory server to isolate: the official one where
/// `MCP_MEMORY_SERVER` names its `dist/index.js` (CI installs it), else a
/// stand-in of the same shape (`tests/fixtures/memory_like.py`).
fn memory_server() -> (String, Vec<String>) {
    match std::env::var("MCP_MEMORY_SERVER") {
        Ok(script) => ("node".into(), vec![script]),
        Err(_) => {
            let fixture = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../tests/fixtures/memory_like.py"
            );
            ("python3".into(), vec![fixture.into()])
        }
    }
}

/// `mcp host --oauth` with a memory server marked `"isolation":
/// "per-caller"`: two signed-in users each get a connection of their own,
/// whose memory file `${caller}` names, and neither reads what the other
/// wrote, in both eras.
#[tokio::test]
async fn two_signed_in_users_each_get_a_memory_of_their_own() {
    let dir = std::env::temp_dir().join(format!("mcp-oauth-isolation-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    let (command, args) = memory_server();
    let memories = dir.join("memories");
    std::fs::create_dir_all(&memories).unwrap();
    let config = dir.join("servers.json");
    let file = format!("{}/memory-${{caller}}.json", memories.display());
    std::fs::write(
        &config,
        json!({"mcpServers": {"memory": {
            "command": command,
            "args": args,
            "isolation": "per-caller",
            "env": {"MEMORY_FILE_PATH": file},
        }}})
        .to_string(),
    )
    .unwrap();
    let (mut child, url) = started(
        tokio::process::Command::new(MCP)
            .args(["host", "--http", "127.0.0.1:0", "--config"])
            .arg(&config)
            .args(["--oauth", "--oauth-user", "alice:wonderland"])
            .args(["--oauth-user", "bob:builder"])
            .args(["--oauth-client", &format!("app@{REDIRECT}")])
            .arg("--oauth-db")
            .arg(dir.join("server.sqlite")),
    )
    .await;

    for (round, era) in [
        EraChoice::Pinned(ProtocolVersion::V2025_11_25),
        EraChoice::Pinned(ProtocolVersion::V2026_07_28),
    ]
    .into_iter()
    .enumerate()
    {
        let (as_alice, as_bob) = alice_and_bob(&url, &dir, era).await;
        let remember = |client: &Client, name: String| {
            let client = client.clone();
            async move {
                let entity = json!({"name": name, "entityType": "note", "observations": ["x"]});
                let made = tokio::time::timeout(
                    Duration::from_secs(30),
                    client.call_tool("memory__create_entities", json!({"entities": [entity]})),
                )
                .await
                .unwrap()
                .unwrap();
                assert_ne!(made.is_error, Some(true), "{made:?}");
            }
        };
        let graph = |client: &Client| {
            let client = client.clone();
            async move {
                let read = tokio::time::timeout(
                    Duration::from_secs(30),
                    client.call_tool("memory__read_graph", json!({})),
                )
                .await
                .unwrap()
                .unwrap();
                read.content[0].as_text().unwrap_or_default().to_owned()
            }
        };
        let (alices, bobs) = (format!("alice-secret-{round}"), format!("bob-note-{round}"));
        remember(&as_alice, alices.clone()).await;
        remember(&as_bob, bobs.clone()).await;
        let seen_by_alice = graph(&as_alice).await;
        let seen_by_bob = graph(&as_bob).await;
        assert!(seen_by_alice.contains(&alices), "{seen_by_alice}");
        assert!(!seen_by_alice.contains("bob-note"), "{seen_by_alice}");
        assert!(seen_by_bob.contains(&bobs), "{seen_by_bob}");
        assert!(!seen_by_bob.contains("alice-secret"), "{seen_by_bob}");
        as_alice.close().await;
        as_bob.close().await;
    }
    let mut files: Vec<String> = std::fs::read_dir(&memories)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "one memory per user: {files:?}");
    assert!(files[0].starts_with("memory-user-alice-"), "{files:?}");
    assert!(files[1].starts_with("memory-user-bob-"), "{files:?}");
    child.kill().await.unwrap();
    std::fs::remove_dir_all(&dir).ok();
}
