//! `mcp host` as a real process, with `mcp serve everything` children over
//! stdio: a killed server restarted and its tools back, a config file
//! edited while running, a graceful shutdown that lets a call finish,
//! loud config problems, and the effective config with secrets masked.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_client::{Client, EraChoice};
use serde_json::{Value, json};

mod support;

use support::MCP;

/// A config file in a folder of its own, removed at the end.
struct ConfigDir(PathBuf);

impl ConfigDir {
    fn new(name: &str) -> ConfigDir {
        let dir = std::env::temp_dir().join(format!("mcp-host-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        ConfigDir(dir)
    }

    fn write(&self, config: &Value) -> PathBuf {
        let path = self.0.join("servers.json");
        // Written whole, then renamed, as editors do: the host never reads
        // half a file.
        let part = self.0.join("servers.json.part");
        std::fs::write(&part, serde_json::to_vec_pretty(config).unwrap()).unwrap();
        std::fs::rename(&part, &path).unwrap();
        path
    }
}

impl Drop for ConfigDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn everything() -> Value {
    json!({"command": MCP, "args": ["serve", "everything"]})
}

/// A running `mcp host --http 127.0.0.1:0`.
struct RunningHost {
    child: tokio::process::Child,
    base: String,
}

impl RunningHost {
    async fn start(config: &Path) -> RunningHost {
        let mut command = tokio::process::Command::new(MCP);
        command.args(["host", "--config"]).arg(config);
        RunningHost::start_command(command).await
    }

    /// `command`, an `mcp host` without its address, on a free port, once
    /// no server is starting for the first time any more.
    async fn start_command(command: tokio::process::Command) -> RunningHost {
        let host = RunningHost::serving(command).await;
        host.until("every server to have started", |status| {
            status["servers"]
                .as_array()
                .is_some_and(|servers| servers.iter().all(|s| s["state"] != "starting"))
        })
        .await;
        host
    }

    /// `command`, an `mcp host` without its address, on a free port, as
    /// soon as it serves.
    async fn serving(mut command: tokio::process::Command) -> RunningHost {
        let (child, url) = support::spawn_endpoint(
            command
                .args(["--http", "127.0.0.1:0"])
                .stderr(Stdio::null()),
        )
        .await;
        RunningHost {
            child,
            base: url.trim_end_matches("/mcp").to_owned(),
        }
    }

    async fn status(&self) -> Value {
        reqwest::get(format!("{}/status", self.base))
            .await
            .expect("status answers")
            .json()
            .await
            .expect("status is JSON")
    }

    async fn client(&self, era: EraChoice, list_changes: Option<Arc<AtomicUsize>>) -> Client {
        let config = mcp_http::HttpClientConfig::new(format!("{}/mcp", self.base));
        let transport = mcp_http::client::connect(config)
            .await
            .unwrap()
            .into_transport();
        let mut builder = Client::builder("host-tests", "1.0").era(era);
        if let Some(count) = list_changes {
            builder = builder.on_notification(move |n| {
                if n.method == "notifications/tools/list_changed" {
                    count.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
        within("connect", builder.connect(transport))
            .await
            .expect("connect")
    }

    /// Waits until the status satisfies `ready`, polling.
    async fn until(&self, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
        within(what, async {
            loop {
                let status = self.status().await;
                if ready(&status) {
                    return status;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
    }
}

async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} took more than 60 s"))
}

fn alive(pid: i64) -> bool {
    // A zombie (exited, not yet reaped) has no command line.
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| !c.is_empty())
}

fn server<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["servers"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == name))
        .unwrap_or_else(|| panic!("no server {name} in {status}"))
}

async fn tool_names(client: &Client) -> Vec<String> {
    client.invalidate_cache();
    client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

/// Without a config the host runs its built-in servers: `everything`, the
/// current directory (read-only, secrets refused) and the prompt library.
#[tokio::test]
async fn without_a_config_the_built_in_servers_run() {
    let dir = ConfigDir::new("embedded");
    std::fs::write(dir.0.join("notes.txt"), "from the current directory").unwrap();
    std::fs::write(dir.0.join(".env"), "SECRET=1").unwrap();
    let mut command = tokio::process::Command::new(MCP);
    command.arg("host").current_dir(&dir.0);
    let host = RunningHost::start_command(command).await;
    let status = host
        .until("every built-in server ready", |status| {
            ["everything", "filesystem", "prompts"]
                .iter()
                .all(|name| server(status, name)["state"] == "ready")
        })
        .await;
    assert_eq!(
        status["servers"].as_array().map(Vec::len),
        Some(3),
        "{status}"
    );
    let client = host.client(EraChoice::Auto, None).await;
    let tools = tool_names(&client).await;
    assert!(
        tools.contains(&"filesystem__read_text_file".to_owned()),
        "{tools:?}"
    );
    assert!(
        !tools.iter().any(|t| t == "filesystem__write_file"),
        "{tools:?}"
    );
    let read = |path: &str| {
        let path = dir.0.join(path).display().to_string();
        client.call_tool("filesystem__read_text_file", json!({"path": path}))
    };
    let notes = within("a file read", read("notes.txt"))
        .await
        .expect("read");
    assert_ne!(notes.is_error, Some(true), "{notes:?}");
    assert!(
        serde_json::to_string(&notes)
            .unwrap()
            .contains("from the current directory"),
        "{notes:?}"
    );
    let secret = within("a secret read", read(".env"))
        .await
        .expect("answered");
    assert_eq!(secret.is_error, Some(true), "{secret:?}");
    let prompts = within("prompts", client.list_all_prompts())
        .await
        .expect("prompts");
    assert!(
        prompts.iter().any(|p| p.name == "prompts__email-reply"),
        "{prompts:?}"
    );
}

#[tokio::test]
async fn a_killed_server_is_restarted_and_its_tools_come_back() {
    let dir = ConfigDir::new("restart");
    let config = dir.write(&json!({"mcpServers": {"e": everything(), "other": everything()}}));
    let host = RunningHost::start(&config).await;
    let status = host.status().await;
    assert_eq!(server(&status, "e")["state"], "ready", "{status}");
    let pid = server(&status, "e")["pid"].as_i64().expect("a pid");
    let changes = Arc::new(AtomicUsize::new(0));
    let client = host
        .client(
            EraChoice::Pinned(mcp_schema::ProtocolVersion::V2025_11_25),
            Some(Arc::clone(&changes)),
        )
        .await;
    assert!(tool_names(&client).await.contains(&"e__echo".to_owned()));

    // SAFETY: kill(2) on a process this test's host started.
    unsafe {
        libc::kill(pid as i32, libc::SIGKILL);
    }
    // Down: its tools leave the catalog, and a call names the server and
    // its state; the other server goes on.
    let down = host
        .until("e to be seen down", |s| server(s, "e")["state"] != "ready")
        .await;
    assert_eq!(server(&down, "other")["state"], "ready");
    let call = client.call_tool("e__echo", json!({"text": "x"})).await;
    // Made while e was down (it still is after), the call failed saying so.
    if server(&host.status().await, "e")["state"] != "ready" {
        let message = call
            .expect_err("a call to a server that is down")
            .to_string();
        assert!(message.contains("server \"e\" is restarting"), "{message}");
    }
    let other = client
        .call_tool("other__echo", json!({"text": "still"}))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&other.content).unwrap()[0]["text"],
        "still"
    );

    // Back within a few seconds, as a new process, counted as a restart.
    let back = host
        .until("e to be ready again", |s| {
            server(s, "e")["state"] == "ready" && server(s, "e")["pid"].as_i64() != Some(pid)
        })
        .await;
    assert_eq!(server(&back, "e")["restarts"], 1, "{back}");
    assert!(!alive(pid));
    within("e's tools to come back", async {
        while !tool_names(&client).await.contains(&"e__echo".to_owned()) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let echoed = client
        .call_tool("e__echo", json!({"text": "again"}))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&echoed.content).unwrap()[0]["text"],
        "again"
    );
    within("list_changed down and up", async {
        while changes.load(Ordering::SeqCst) < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn an_edited_config_starts_and_stops_only_what_changed() {
    let dir = ConfigDir::new("reload");
    let config = dir.write(&json!({"mcpServers": {"a": everything(), "b": everything()}}));
    let mut command = tokio::process::Command::new(MCP);
    command
        .args(["host", "--trust-config", "--config"])
        .arg(&config);
    let host = RunningHost::start_command(command).await;
    let before = host.status().await;
    let a_pid = server(&before, "a")["pid"].as_i64().unwrap();
    let b_pid = server(&before, "b")["pid"].as_i64().unwrap();

    dir.write(&json!({"mcpServers": {"a": everything(), "c": everything()}}));
    let after = host
        .until("c to start and b to stop", |s| {
            let names: Vec<&str> = s["servers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["name"].as_str().unwrap())
                .collect();
            names == ["a", "c"] && server(s, "c")["state"] == "ready"
        })
        .await;
    assert_eq!(
        server(&after, "a")["pid"].as_i64(),
        Some(a_pid),
        "a was not touched"
    );
    within("b's process to end", async {
        while alive(b_pid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(alive(a_pid));
}

/// Without `--trust-config`, a server a change of the config adds is
/// held until a person trusts its command line: the status names it and
/// why, `mcp host trust` (through the admin listener) starts it, and the
/// trust is kept, so a host started again runs it at once. `mcp host
/// disable` and `enable` stop and start it again.
#[tokio::test]
async fn a_server_an_edit_adds_waits_until_a_person_trusts_it() {
    let dir = ConfigDir::new("trust");
    let state = dir.0.join("state");
    let config = dir.write(&json!({"mcpServers": {"a": everything()}}));
    let admin = support::free_port().to_string();
    let start = |admin: &str| {
        let mut command = tokio::process::Command::new(MCP);
        command
            .args(["host", "--admin", admin, "--config"])
            .arg(&config)
            .env("XDG_STATE_HOME", &state)
            .env("MCP_ADMIN_TOKEN", "t0ken");
        RunningHost::start_command(command)
    };
    let host = start(&admin).await;
    dir.write(&json!({"mcpServers": {"a": everything(), "c": everything()}}));
    let held = host
        .until("c to wait for trust", |s| {
            s["untrusted"][0]["name"] == "c"
                && s["servers"].as_array().is_some_and(|a| a.len() == 1)
        })
        .await;
    assert_eq!(held["untrusted"][0]["reason"], "a reload added it");
    let identity = held["untrusted"][0]["identity"].as_str().unwrap();
    assert!(identity.contains("serve everything"), "{identity}");
    let status = support::mcp_with(
        &["host", "status", "--url", &admin],
        &[("MCP_ADMIN_TOKEN", "t0ken")],
    )
    .await;
    assert!(
        support::stdout(&status).contains("untrusted: c: "),
        "{}",
        support::stdout(&status)
    );
    let refused = support::mcp(&[
        "host", "trust", "nobody", "--url", &admin, "--token", "t0ken",
    ])
    .await;
    assert!(!refused.status.success());
    assert!(
        support::stderr(&refused).contains("404"),
        "{}",
        support::stderr(&refused)
    );
    let trusted = support::mcp(&["host", "trust", "c", "--url", &admin, "--token", "t0ken"]).await;
    assert!(trusted.status.success(), "{}", support::stderr(&trusted));
    host.until("c to run", |s| {
        s["untrusted"].is_null() && server(s, "c")["state"] == "ready"
    })
    .await;

    // Disabled and enabled again through the admin listener.
    let disabled =
        support::mcp(&["host", "disable", "c", "--url", &admin, "--token", "t0ken"]).await;
    assert!(disabled.status.success(), "{}", support::stderr(&disabled));
    host.until("c to be disabled", |s| {
        s["disabled"] == json!(["c"]) && s["servers"].as_array().is_some_and(|a| a.len() == 1)
    })
    .await;
    let status = support::mcp_with(
        &["host", "status", "--url", &admin],
        &[("MCP_ADMIN_TOKEN", "t0ken")],
    )
    .await;
    assert!(support::stdout(&status).contains("disabled: c (mcp host enable c)"));
    let enabled = support::mcp(&["host", "enable", "c", "--url", &admin, "--token", "t0ken"]).await;
    assert!(enabled.status.success(), "{}", support::stderr(&enabled));
    host.until("c to run again", |s| {
        s["disabled"].is_null() && server(s, "c")["state"] == "ready"
    })
    .await;
    drop(host);

    // Kept: a host started again with a reload that adds c runs it at once.
    dir.write(&json!({"mcpServers": {"a": everything()}}));
    let host = start(&support::free_port().to_string()).await;
    dir.write(&json!({"mcpServers": {"a": everything(), "c": everything()}}));
    let status = host
        .until("c to run at once", |s| {
            s["servers"].as_array().is_some_and(|a| a.len() == 2)
                && server(s, "c")["state"] == "ready"
        })
        .await;
    assert!(status["untrusted"].is_null(), "{status}");
}

/// `--policy FILE`: its rules decide, and an edit of the file is put in
/// force without dropping the session, which hears that its list changed.
#[tokio::test]
async fn an_edited_policy_file_takes_effect_without_dropping_the_session() {
    let dir = ConfigDir::new("policy-reload");
    let config = dir.write(&json!({"mcpServers": {"e": everything()}}));
    let policy = dir.0.join("policy.toml");
    let write = |decision: &str| {
        let part = dir.0.join("policy.toml.part");
        let rule = format!(
            "[[policy]]\ndecision = \"{decision}\"\ntool = \"echo\"\nname = \"echo rule\"\n"
        );
        std::fs::write(&part, rule).unwrap();
        std::fs::rename(&part, &policy).unwrap();
    };
    write("deny");
    let mut command = tokio::process::Command::new(MCP);
    command
        .args(["host", "--trust-config", "--policy"])
        .arg(&policy)
        .arg("--config")
        .arg(&config);
    let host = RunningHost::start_command(command).await;
    let changes = Arc::new(AtomicUsize::new(0));
    let client = host
        .client(
            EraChoice::Pinned(mcp_schema::ProtocolVersion::V2025_11_25),
            Some(Arc::clone(&changes)),
        )
        .await;
    assert!(!tool_names(&client).await.contains(&"e__echo".to_owned()));
    let refused = client
        .call_tool("e__echo", json!({"text": "x"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("echo rule"), "{refused}");

    write("allow");
    within("the session to hear of it", async {
        while changes.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(tool_names(&client).await.contains(&"e__echo".to_owned()));
    let echoed = client
        .call_tool("e__echo", json!({"text": "now"}))
        .await
        .unwrap();
    assert_eq!(echoed.content[0].as_text(), Some("now"));

    // A file that cannot be used keeps the policy in force.
    std::fs::write(&policy, "[[policy]]\ndecision = \"deny\"\ntool = \"[\"\n").unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let echoed = client
        .call_tool("e__echo", json!({"text": "still"}))
        .await
        .unwrap();
    assert_eq!(echoed.content[0].as_text(), Some("still"));
}

#[tokio::test]
async fn shutdown_lets_a_call_in_flight_finish_then_stops_the_servers() {
    let dir = ConfigDir::new("shutdown");
    let config = dir.write(&json!({"mcpServers": {"e": everything()}}));
    let mut host = RunningHost::start(&config).await;
    let pid = server(&host.status().await, "e")["pid"].as_i64().unwrap();
    let client = host
        .client(
            EraChoice::Pinned(mcp_schema::ProtocolVersion::V2025_11_25),
            None,
        )
        .await;
    let call = tokio::spawn(async move {
        client
            .call_tool("e__test_tool_slow", json!({"durationMs": 3000}))
            .await
    });
    // Well inside the call's 3 s, and long after it reached the server.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let host_pid = host.child.id().unwrap() as i32;
    // SAFETY: kill(2) on the host this test started.
    unsafe {
        libc::kill(host_pid, libc::SIGTERM);
    }
    let result = within("the call in flight", call)
        .await
        .unwrap()
        .expect("the call finished");
    assert_eq!(
        serde_json::to_value(&result.content).unwrap()[0]["text"],
        "slow done"
    );
    let exit = within("the host to exit", host.child.wait()).await.unwrap();
    assert!(exit.success(), "{exit:?}");
    assert!(!alive(pid), "the server was stopped with the host");
}

#[tokio::test]
async fn an_unset_variable_stops_only_its_server_and_is_reported() {
    let dir = ConfigDir::new("problems");
    let mut broken = everything();
    broken["env"] = json!({"TOKEN": "${MCP_HOST_TEST_SURELY_UNSET}"});
    let config = dir.write(&json!({"mcpServers": {"fine": everything(), "broken": broken}}));
    let host = RunningHost::start(&config).await;
    let status = host.status().await;
    assert_eq!(status["servers"].as_array().unwrap().len(), 1, "{status}");
    assert_eq!(server(&status, "fine")["state"], "ready");
    let problem = &status["problems"][0];
    assert_eq!(problem["server"], "broken");
    assert!(
        problem["message"]
            .as_str()
            .unwrap()
            .contains("MCP_HOST_TEST_SURELY_UNSET"),
        "{problem}"
    );
    let table = tokio::process::Command::new(MCP)
        .args(["host", "status", "--url", &host.base])
        .output()
        .await
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains("fine") && table.contains("ready"), "{table}");
    assert!(table.contains("not started: broken"), "{table}");
}

#[tokio::test]
async fn print_config_shows_the_effective_config_with_secrets_masked() {
    let dir = ConfigDir::new("print");
    let config = dir.write(&json!({"mcpServers": {
        "api": {"command": "srv", "env": {"API_TOKEN": "s3cret", "REGION": "eu"}, "namespace": ""},
        "web": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer s3cret"}}
    }}));
    let output = tokio::process::Command::new(MCP)
        .args(["host", "--print-config", "--config"])
        .arg(&config)
        .output()
        .await
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(!text.contains("s3cret"), "{text}");
    let printed: Value = serde_json::from_str(&text).unwrap();
    let api = &printed["servers"][0];
    assert_eq!(api["namespace"], "");
    assert_eq!(api["transport"]["env"]["API_TOKEN"], "***");
    assert_eq!(api["transport"]["env"]["REGION"], "eu");
    assert_eq!(
        printed["servers"][1]["transport"]["headers"]["Authorization"],
        "***"
    );
    // Every setting as it takes effect, defaults included.
    let settings = &printed["settings"];
    assert_eq!(settings["serve"]["http"], "127.0.0.1:8080", "{settings}");
    assert_eq!(settings["serve"]["stdio"], false);
    assert_eq!(settings["serve"]["max_sessions"], 10000);
    assert_eq!(settings["servers"]["connect_timeout"], 30.0);
    assert_eq!(settings["servers"]["max_in_flight"], 256);

    // The settings file is shown with them; a mistake in it names the key.
    let settings = dir.0.join("host.toml");
    std::fs::write(
        &settings,
        "[servers]\nrequest_timeout = 12.5\nmax_in_flight = 9\n",
    )
    .unwrap();
    let output = tokio::process::Command::new(MCP)
        .args(["host", "--print-config", "--config"])
        .arg(&config)
        .arg("--settings")
        .arg(&settings)
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["settings"]["servers"]["request_timeout"], 12.5);
    assert_eq!(printed["settings"]["servers"]["max_in_flight"], 9);
    std::fs::write(&settings, "[servers]\nrequest_timout = 3\n").unwrap();
    let output = tokio::process::Command::new(MCP)
        .args(["host", "--print-config", "--settings"])
        .arg(&settings)
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("request_timout") && stderr.contains("host.toml"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_host_serves_its_servers_on_stdio_in_both_eras() {
    let dir = ConfigDir::new("stdio");
    let config = dir.write(&json!({"mcpServers": {"e": everything()}}));
    for era in [
        EraChoice::Pinned(mcp_schema::ProtocolVersion::V2024_11_05),
        EraChoice::Pinned(mcp_schema::ProtocolVersion::V2026_07_28),
    ] {
        let mut command = tokio::process::Command::new(MCP);
        command.args(["host", "--stdio", "--config"]).arg(&config);
        let (child, transport) = mcp_core::child::ChildProcess::spawn(command).unwrap();
        let client = within(
            "connect over stdio",
            Client::builder("stdio-test", "1.0")
                .era(era)
                .connect(transport),
        )
        .await
        .expect("connect");
        assert!(tool_names(&client).await.contains(&"e__echo".to_owned()));
        let echoed = client
            .call_tool("e__echo", json!({"text": "over stdio"}))
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(&echoed.content).unwrap()[0]["text"],
            "over stdio"
        );
        client.close().await;
        // A grace longer than the wait: the host must leave on its own at
        // EOF, before any signal would be sent.
        let status = within(
            "the host to exit at EOF",
            child.with_grace(Duration::from_secs(120)).shutdown(),
        )
        .await
        .unwrap();
        assert!(status.success(), "{status:?}");
    }
}

/// A server that never answers holds no one up: health and `initialize`
/// are answered while it is starting, the first listing waits for it
/// only `--start-timeout`, and a server that comes up later is added with
/// `list_changed`.
#[tokio::test]
async fn a_hung_server_holds_no_one_up() {
    let dir = ConfigDir::new("hung");
    let late = format!("sleep 3; exec {MCP} serve everything");
    let config = dir.write(&json!({"mcpServers": {
        "hung": {"command": "sleep", "args": ["1000"]},
        "late": {"command": "sh", "args": ["-c", late]},
        "e": everything(),
    }}));
    let mut command = tokio::process::Command::new(MCP);
    command
        .args(["host", "--start-timeout", "1", "--config"])
        .arg(&config);
    let host = RunningHost::serving(command).await;
    let health = within("/healthz", reqwest::get(format!("{}/healthz", host.base)))
        .await
        .expect("/healthz answers");
    assert!([200, 503].contains(&health.status().as_u16()), "{health:?}");
    let changes = Arc::new(AtomicUsize::new(0));
    let legacy = EraChoice::Pinned(mcp_schema::ProtocolVersion::V2025_11_25);
    let client = host.client(legacy, Some(Arc::clone(&changes))).await;
    // Answered while the hung server is still starting.
    assert_eq!(server(&host.status().await, "hung")["state"], "starting");
    host.until("e ready", |s| server(s, "e")["state"] == "ready")
        .await;
    let first = tool_names(&client).await;
    assert!(first.contains(&"e__echo".to_owned()), "{first:?}");
    assert!(!first.iter().any(|t| t.starts_with("hung__")), "{first:?}");
    host.until("late ready", |s| server(s, "late")["state"] == "ready")
        .await;
    if !first.contains(&"late__echo".to_owned()) {
        within("list_changed for late's tools", async {
            while changes.load(Ordering::SeqCst) == 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
    }
    let now = tool_names(&client).await;
    assert!(now.contains(&"late__echo".to_owned()), "{now:?}");
    let hung = server(&host.status().await, "hung")["state"].clone();
    assert!(hung == "starting" || hung == "restarting", "{hung}");
}

/// A port in use fails the host at once, before any server starts.
#[tokio::test]
async fn a_busy_port_fails_before_any_server_starts() {
    let dir = ConfigDir::new("busy");
    let started = dir.0.join("started");
    let script = format!("touch {}; exec {MCP} serve everything", started.display());
    let config =
        dir.write(&json!({"mcpServers": {"s": {"command": "sh", "args": ["-c", script]}}}));
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let output = within(
        "the host to give up",
        tokio::process::Command::new(MCP)
            .args(["host", "--http", &addr, "--config"])
            .arg(&config)
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&addr), "{stderr}");
    assert!(!started.exists(), "a server was started: {stderr}");
}

/// Without a terminal (as Claude Desktop starts `mcp host --stdio`), VS
/// Code inputs come from `--input`, an inputs file, the environment or
/// their defaults, and the log says which, never the values; an input
/// none of them gives stops only its server, saying how to give it.
#[tokio::test]
async fn inputs_are_given_without_a_terminal() {
    let dir = ConfigDir::new("inputs");
    let config = dir.write(&json!({
        "inputs": [
            {"id": "greeting", "type": "promptString", "description": "Greeting", "default": "hello-default"},
            {"id": "flagged", "type": "promptString", "description": "Flagged", "password": true},
            {"id": "filed", "type": "promptString", "description": "Filed", "password": true},
            {"id": "env-one", "type": "promptString", "description": "From the environment"},
            {"id": "missing", "type": "promptString", "description": "Never given"}
        ],
        "servers": {
            "e": {"command": "srv", "env": {
                "A": "${input:greeting}", "B": "${input:flagged}",
                "C": "${input:filed}", "D": "${input:env-one}"
            }},
            "f": {"command": "srv", "env": {"X": "${input:missing}"}}
        }
    }));
    let inputs_file = dir.0.join("inputs.env");
    std::fs::write(
        &inputs_file,
        "# given in a file\nfiled=\"value-from-file\"\n",
    )
    .unwrap();
    // setsid: no controlling terminal, whoever runs the tests.
    let output = tokio::process::Command::new("setsid")
        .arg(MCP)
        .args([
            "host",
            "--print-config",
            "--input",
            "flagged=value-from-flag",
        ])
        .arg("--inputs-file")
        .arg(&inputs_file)
        .arg("--config")
        .arg(&config)
        .env("MCP_INPUT_ENV_ONE", "value-from-env")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let env = &printed["servers"][0]["transport"]["env"];
    assert_eq!(env["A"], "hello-default", "{printed}");
    assert_eq!(env["B"], "value-from-flag");
    assert_eq!(env["C"], "value-from-file");
    assert_eq!(env["D"], "value-from-env");
    assert_eq!(printed["servers"].as_array().map(Vec::len), Some(1));
    assert_eq!(printed["problems"][0]["server"], "f", "{printed}");
    let problem = printed["problems"][0]["message"].to_string();
    assert!(problem.contains("--input missing=VALUE"), "{problem}");
    assert!(problem.contains("MCP_INPUT_MISSING"), "{problem}");
    for said in ["\"greeting\"", "\"flagged\"", "\"filed\"", "\"env-one\""] {
        assert!(stderr.contains(said), "{said} not in: {stderr}");
    }
    assert!(!stderr.contains("value-from"), "{stderr}");
    assert!(!stderr.contains("hello-default"), "{stderr}");
}
