//! `mcp host --audit` on a disk that fills up: a real `mcp host` process
//! whose audit file is on a small tmpfs mounted in a mount namespace of
//! its own (`unshare -m`, so nothing of it outlives the host), filled to
//! the last byte while the host serves. The host keeps answering, its
//! status says the audit log is failing and why, and once there is room
//! again every record kept meanwhile is written: none lost.

#![cfg(target_os = "linux")]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use mcp_client::{Client, EraChoice};
use mcp_schema::ProtocolVersion;
use serde_json::{Value, json};

mod support;

use support::MCP;
use support::needs::Need;

/// A folder of its own, removed at the end.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} took more than 60 s"))
}

/// A tmpfs mounted in a mount namespace of the test's own.
static MOUNT: Need = Need::new(
    "a tmpfs mounted in a mount namespace of its own",
    "this machine does not let it mount one (unshare -m)",
    "run the tests as root (or with CAP_SYS_ADMIN)",
    ".ci/run must run as root (or with CAP_SYS_ADMIN)",
    can_mount,
);

/// Whether this machine lets a process mount a tmpfs in a namespace of its
/// own (root, or the capability).
fn can_mount() -> bool {
    std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

async fn status(base: &str) -> Value {
    reqwest::get(format!("{base}/status"))
        .await
        .expect("status answers")
        .json()
        .await
        .expect("status is JSON")
}

/// Waits until the audit part of the status satisfies `done`.
async fn audit_until(base: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    within(what, async {
        loop {
            let audit = status(base).await["audit"].clone();
            if done(&audit) {
                return audit;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
}

async fn echo(client: &Client, text: &str) {
    let result = within("echo", client.call_tool("e__echo", json!({ "text": text })))
        .await
        .expect("the call is answered");
    assert_eq!(
        serde_json::to_value(&result.content).unwrap()[0]["text"],
        text
    );
}

/// Fills the file system that `dir` is on, to the last byte it takes.
fn fill(dir: &Path) {
    let mut filler = std::fs::File::create(dir.join("filler")).unwrap();
    let chunk = vec![0u8; 4096];
    loop {
        if let Err(error) = filler.write_all(&chunk) {
            assert_eq!(error.raw_os_error(), Some(libc::ENOSPC), "{error}");
            break;
        }
    }
    // What is left is less than a block: a byte at a time takes it.
    while filler.write_all(&[0]).is_ok() {}
}

#[tokio::test]
async fn a_full_disk_under_the_audit_log_stops_nothing_and_loses_nothing() {
    if !MOUNT.met() {
        return;
    }
    let scratch =
        Scratch(std::env::temp_dir().join(format!("mcp-audit-full-{}", std::process::id())));
    let disk = scratch.0.join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    let config = scratch.0.join("servers.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"e": {"command": MCP, "args": ["serve", "everything"]}}}).to_string(),
    )
    .unwrap();
    let settings = scratch.0.join("host.toml");
    std::fs::write(
        &settings,
        "[audit]\narguments = true\npath = \"disk/audit.db\"\n",
    )
    .unwrap();

    // The tmpfs is mounted over `disk` in the host's own mount namespace;
    // the host is exec'd in its place, so its pid is the namespace's.
    let mut command = tokio::process::Command::new("unshare");
    command
        .args([
            "-m",
            "sh",
            "-c",
            "mount -t tmpfs -o size=1m tmpfs \"$0\" && exec \"$@\"",
        ])
        .arg(&disk)
        .args([MCP, "host", "--config"])
        .arg(&config)
        .arg("--settings")
        .arg(&settings)
        .args(["--http", "127.0.0.1:0"])
        .stderr(Stdio::null());
    let (mut host, url) = support::spawn_endpoint(&mut command).await;
    let base = url.trim_end_matches("/mcp").to_owned();
    let pid = host.id().unwrap();
    // The host's view of the folder: the tmpfs.
    let mounted = PathBuf::from(format!("/proc/{pid}/root")).join(disk.strip_prefix("/").unwrap());
    assert!(
        mounted.join("audit.db").exists(),
        "the audit file is on the tmpfs"
    );
    assert!(
        !disk.join("audit.db").exists(),
        "and not in the folder under it"
    );

    let transport = mcp_http::client::connect(mcp_http::HttpClientConfig::new(url.clone()))
        .await
        .unwrap()
        .into_transport();
    let client = within(
        "connect",
        Client::builder("audit-full", "1.0")
            .era(EraChoice::Pinned(ProtocolVersion::V2025_11_25))
            .connect(transport),
    )
    .await
    .expect("connect");

    for n in 0..5 {
        echo(&client, &format!("before {n}")).await;
    }
    audit_until(&base, "the first records", |a| {
        a["written"].as_u64() >= Some(5)
    })
    .await;

    fill(&mounted);
    // Calls carrying more than the room left, recorded with their
    // arguments: the host answers every one.
    let big = "x".repeat(8000);
    for n in 0..30 {
        echo(&client, &format!("{big} {n}")).await;
    }
    let failing = audit_until(&base, "the audit log to fail", |a| {
        a["state"] == "failing" && a["pending"].as_u64() > Some(0)
    })
    .await;
    let error = failing["lastError"].as_str().unwrap_or_default();
    assert!(error.contains("full"), "{failing}");
    assert!(failing["failingSinceMs"].as_i64().is_some(), "{failing}");
    // Other clients are served as before.
    let other = {
        let transport = mcp_http::client::connect(mcp_http::HttpClientConfig::new(url.clone()))
            .await
            .unwrap()
            .into_transport();
        within(
            "connect",
            Client::builder("audit-full-2", "1.0")
                .era(EraChoice::Pinned(ProtocolVersion::V2026_07_28))
                .connect(transport),
        )
        .await
        .expect("a second client connects")
    };
    echo(&other, "while full").await;

    std::fs::remove_file(mounted.join("filler")).unwrap();
    let recovered = audit_until(&base, "the audit log to recover", |a| {
        a["state"] == "ok" && a["pending"] == 0
    })
    .await;
    assert_eq!(recovered["lost"], 0, "{recovered}");
    assert_eq!(recovered["lastError"], Value::Null, "{recovered}");

    // SQLite resolves the /proc/PID/root link to this namespace's root:
    // the file and its write-ahead log are read from a copy.
    let copy = scratch.0.join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    for file in ["audit.db", "audit.db-wal"] {
        std::fs::copy(mounted.join(file), copy.join(file)).unwrap();
    }
    let db = rusqlite::Connection::open(copy.join("audit.db")).unwrap();
    let mut select = db
        .prepare("SELECT arguments, outcome, server, client FROM audit WHERE method = 'tools/call' ORDER BY id")
        .unwrap();
    let calls: Vec<(String, String, String, String)> = select
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let texts: Vec<String> = calls
        .iter()
        .map(|(arguments, outcome, server, _)| {
            assert_eq!((outcome.as_str(), server.as_str()), ("ok", "e"));
            let arguments: Value = serde_json::from_str(arguments).unwrap();
            arguments["text"]
                .as_str()
                .unwrap()
                .chars()
                .rev()
                .take_while(|c| *c != ' ')
                .collect::<String>()
                .chars()
                .rev()
                .collect()
        })
        .collect();
    let mut expected: Vec<String> = (0..5).map(|n| n.to_string()).collect();
    expected.extend((0..30).map(|n| n.to_string()));
    expected.push("full".into());
    assert_eq!(texts, expected, "every call, in order");

    // SAFETY: kill(2) on the host this test started.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    let exit = within("the host to exit", host.wait()).await.unwrap();
    assert!(exit.success(), "{exit:?}");
}
