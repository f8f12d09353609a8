//! `mcp audit`: the records of an audit file written by the host's own
//! audit log, filtered, as JSON lines and as a table, and followed as new
//! ones are written.

mod support;

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use mcp_host::audit::{AuditLog, AuditRecord, AuditSettings};
use support::MCP;

fn record(target: &str, server: &str, decision: Option<&'static str>) -> AuditRecord {
    let mut record = AuditRecord::default();
    record.time_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    record.method = "tools/call".into();
    record.target = Some(target.into());
    record.server = Some(server.into());
    record.revision = "2025-11-25".into();
    record.outcome = "ok";
    record.decision = decision;
    record.rule = decision.map(|_| "the default".to_owned());
    record
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_are_shown_filtered_and_followed() {
    let dir = std::env::temp_dir().join(format!("mcp-audit-command-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("audit.db");
    let log = AuditLog::open(AuditSettings::new(&path)).unwrap();
    log.record(record("memory__read_graph", "memory", Some("allow")));
    log.record(record("time__now", "time", None));
    log.flush(Duration::from_secs(10)).await;

    let run = |args: &[&str]| {
        let output = Command::new(MCP)
            .arg("audit")
            .arg(&path)
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let lines = run(&["--server", "memory", "--json"]);
    let rows: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{lines}");
    assert_eq!(rows[0]["target"], "memory__read_graph");
    assert_eq!(rows[0]["decision"], "allow");
    let table = run(&["--since", "1h"]);
    assert!(table.starts_with("TIME"), "{table}");
    assert!(
        table.contains("time__now") && table.contains("allow (the default)"),
        "{table}"
    );
    assert!(run(&["--decision", "deny"]).is_empty());

    let mut follow = Command::new(MCP)
        .arg("audit")
        .arg(&path)
        .args(["--follow", "--json", "--limit", "1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(follow.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("time__now"), "{first}");
    log.record(record("git__status", "git", None));
    log.flush(Duration::from_secs(10)).await;
    let next = lines.next().unwrap().unwrap();
    assert!(next.contains("git__status"), "{next}");
    follow.kill().unwrap();
    let _ = follow.wait();
    std::fs::remove_dir_all(&dir).ok();
}
