use std::path::PathBuf;
use std::time::Duration;

use super::*;

/// A directory of its own for one test, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("mcp-host-audit-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn call(n: usize) -> AuditRecord {
    AuditRecord {
        time_ms: now_ms(),
        duration_ms: 1.5,
        method: "tools/call".into(),
        target: Some(format!("tool{n}")),
        server: Some("everything".into()),
        revision: "2025-11-25".into(),
        outcome: "ok",
        ..AuditRecord::default()
    }
}

/// A call whose record is larger than a page of the file, so that it
/// cannot fit in the room left on a page.
fn big_call(n: usize) -> AuditRecord {
    AuditRecord {
        arguments: Some("x".repeat(5000)),
        arguments_bytes: Some(5000),
        ..call(n)
    }
}

/// Runs `f` on the writer's connection.
fn run_on(log: &AuditLog, f: impl FnOnce(&rusqlite::Connection) + Send + 'static) {
    log.sender.send(Message::Run(Box::new(f))).unwrap();
}

fn targets(path: &Path) -> Vec<String> {
    let connection = rusqlite::Connection::open(path).unwrap();
    let mut select = connection
        .prepare("SELECT target FROM audit ORDER BY id")
        .unwrap();
    select
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Makes the file refuse to grow past its size now, as a full disk does.
fn fill_up(connection: &rusqlite::Connection) {
    let pages: i64 = connection
        .query_row("PRAGMA page_count", [], |row| row.get(0))
        .unwrap();
    connection
        .pragma_update(None, "max_page_count", pages)
        .unwrap();
}

fn make_room(connection: &rusqlite::Connection) {
    connection
        .pragma_update(None, "max_page_count", 1_000_000)
        .unwrap();
}

#[tokio::test]
async fn records_every_field_and_trims_to_its_most() {
    let scratch = Scratch::new("fields");
    let path = scratch.0.join("audit.db");
    let mut settings = AuditSettings::new(&path);
    settings.max_records = 100;
    let log = AuditLog::open(settings).unwrap();
    let mut failed = call(0);
    failed.outcome = "error";
    failed.error_code = Some(-32602);
    failed.error_message = Some("unknown tool: nope".into());
    failed.caller = Some(r#"["https://issuer","alice","cli"]"#.into());
    failed.client = Some("inspector 1.0".into());
    failed.session = Some("abc".into());
    failed.arguments = Some(r#"{"a":1}"#.into());
    failed.arguments_bytes = Some(7);
    failed.decision = Some("deny");
    failed.rule = Some("no deletes".into());
    failed.flags = Some("injection".into());
    failed.answer = Some("denied");
    failed.answers_round = Some("0a1b".into());
    failed.asks_round = Some("2c3d".into());
    log.record(failed.clone());
    log.flush(Duration::from_secs(10)).await;

    let connection = rusqlite::Connection::open(&path).unwrap();
    let row = connection
        .query_row(
            "SELECT time_ms, duration_ms, method, target, server, caller, client, session, \
             revision, outcome, error_code, error_message, arguments, arguments_bytes, \
             decision, rule, flags, answer, answers_round, asks_round FROM audit",
            [],
            |r| {
                Ok(AuditRecord {
                    time_ms: r.get(0)?,
                    duration_ms: r.get(1)?,
                    method: r.get(2)?,
                    target: r.get(3)?,
                    server: r.get(4)?,
                    caller: r.get(5)?,
                    client: r.get(6)?,
                    session: r.get(7)?,
                    revision: r.get(8)?,
                    outcome: if r.get::<_, String>(9)? == "error" {
                        "error"
                    } else {
                        "other"
                    },
                    error_code: r.get(10)?,
                    error_message: r.get(11)?,
                    arguments: r.get(12)?,
                    arguments_bytes: r.get(13)?,
                    decision: r
                        .get::<_, Option<String>>(14)?
                        .map(|d| if d == "deny" { "deny" } else { "other" }),
                    rule: r.get(15)?,
                    flags: r.get(16)?,
                    answer: r
                        .get::<_, Option<String>>(17)?
                        .map(|a| if a == "denied" { "denied" } else { "other" }),
                    answers_round: r.get(18)?,
                    asks_round: r.get(19)?,
                })
            },
        )
        .unwrap();
    assert_eq!(row, failed);

    // More than the file keeps: the oldest go, the newest stay.
    for n in 1..=2000 {
        log.record(call(n));
    }
    log.flush(Duration::from_secs(10)).await;
    let status = log.status();
    assert_eq!(
        (status.state, status.written, status.pending, status.lost),
        ("ok", 2001, 0, 0)
    );
    let kept = targets(&path);
    assert!(kept.len() <= 1100, "{} records kept", kept.len());
    assert_eq!(kept.last().map(String::as_str), Some("tool2000"));
}

#[tokio::test]
async fn a_full_file_keeps_the_records_until_there_is_room() {
    let scratch = Scratch::new("full");
    let path = scratch.0.join("audit.db");
    let log = AuditLog::open(AuditSettings::new(&path)).unwrap();
    log.record(big_call(0));
    log.flush(Duration::from_secs(10)).await;

    run_on(&log, fill_up);
    for n in 1..=300 {
        log.record(big_call(n));
    }
    log.flush(Duration::from_secs(10)).await;
    let status = log.status();
    assert_eq!(status.state, "failing", "{status:?}");
    assert!(
        status
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("full")),
        "{status:?}"
    );
    assert!(status.failing_since_ms.is_some());
    assert_eq!((status.written, status.pending, status.lost), (1, 300, 0));

    run_on(&log, make_room);
    // Tried again within a second or so.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while log.status().state != "ok" && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let status = log.status();
    assert_eq!(
        (status.state, status.written, status.pending, status.lost),
        ("ok", 301, 0, 0),
        "{status:?}"
    );
    assert_eq!(status.last_error, None);
    let expected: Vec<String> = (0..=300).map(|n| format!("tool{n}")).collect();
    assert_eq!(targets(&path), expected);
}

#[tokio::test]
async fn a_backlog_past_its_bound_loses_the_newest_and_counts_them() {
    let scratch = Scratch::new("backlog");
    let path = scratch.0.join("audit.db");
    let mut settings = AuditSettings::new(&path);
    settings.backlog = 50;
    let log = AuditLog::open(settings).unwrap();
    log.record(big_call(0));
    log.flush(Duration::from_secs(10)).await;

    run_on(&log, fill_up);
    for n in 1..=200 {
        log.record(big_call(n));
    }
    log.flush(Duration::from_secs(10)).await;
    let status = log.status();
    assert_eq!(
        (status.written, status.pending, status.lost),
        (1, 50, 150),
        "{status:?}"
    );

    run_on(&log, make_room);
    log.flush(Duration::from_secs(10)).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while log.status().pending > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let expected: Vec<String> = (0..=50).map(|n| format!("tool{n}")).collect();
    assert_eq!(targets(&path), expected);
}

#[test]
fn a_file_that_cannot_be_opened_is_refused_at_start() {
    let error = AuditLog::open(AuditSettings::new("/nonexistent/dir/audit.db")).unwrap_err();
    assert!(error.contains("/nonexistent/dir/audit.db"), "{error}");
}

#[tokio::test]
async fn records_older_than_the_file_keeps_go_at_start_and_as_it_grows() {
    let scratch = Scratch::new("age");
    let path = scratch.0.join("audit.db");
    let day = 86_400_000;
    let old = |n: usize, days: i64| AuditRecord {
        time_ms: now_ms() - days * day,
        ..call(n)
    };
    let log = AuditLog::open(AuditSettings::new(&path)).unwrap();
    log.record(old(0, 40));
    log.record(old(1, 20));
    log.record(old(2, 0));
    log.flush(Duration::from_secs(10)).await;
    drop(log);

    // Opened again keeping 30 days: the 40-day-old record goes at once.
    let mut settings = AuditSettings::new(&path);
    settings.max_age = Some(Duration::from_secs(30 * 86_400));
    let log = AuditLog::open(settings.clone()).unwrap();
    assert_eq!(targets(&path), ["tool1", "tool2"]);

    // Keeping 10 days: the 20-day-old one goes at once, and records too old
    // when written go at the next trim, every 1,024 records.
    drop(log);
    settings.max_age = Some(Duration::from_secs(10 * 86_400));
    let log = AuditLog::open(settings).unwrap();
    assert!(!targets(&path).contains(&"tool1".to_owned()));
    for n in 3..1030 {
        log.record(old(n, 15));
    }
    log.flush(Duration::from_secs(10)).await;
    let kept = targets(&path);
    assert_eq!(kept.first().map(String::as_str), Some("tool2"));
    assert!(
        kept.len() < 100,
        "the 15-day-old records went too: {}",
        kept.len()
    );
}

#[tokio::test]
async fn a_file_of_an_older_host_gets_the_new_columns_in_place() {
    let scratch = Scratch::new("migrate");
    let path = scratch.0.join("old.db");
    {
        let old = rusqlite::Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE audit (id INTEGER PRIMARY KEY, time_ms INTEGER NOT NULL, \
             duration_ms REAL NOT NULL, method TEXT NOT NULL, target TEXT, server TEXT, \
             caller TEXT, client TEXT, session TEXT, revision TEXT NOT NULL, \
             outcome TEXT NOT NULL, error_code INTEGER, error_message TEXT, arguments TEXT, \
             arguments_bytes INTEGER);
             INSERT INTO audit (time_ms, duration_ms, method, revision, outcome)
               VALUES (1, 1.0, 'ping', '2025-11-25', 'ok');",
        )
        .unwrap();
    }
    let log = AuditLog::open(AuditSettings::new(&path)).unwrap();
    let mut decided = call(1);
    decided.decision = Some("allow");
    decided.rule = Some("the default".into());
    log.record(decided);
    log.flush(Duration::from_secs(10)).await;
    let connection = rusqlite::Connection::open(&path).unwrap();
    let rows: Vec<(String, Option<String>, Option<String>)> = connection
        .prepare("SELECT method, decision, rule FROM audit ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        rows,
        vec![
            ("ping".into(), None, None),
            (
                "tools/call".into(),
                Some("allow".into()),
                Some("the default".into())
            ),
        ]
    );
}

#[tokio::test]
async fn records_are_read_back_by_what_they_say() {
    let scratch = Scratch::new("query");
    let path = scratch.0.join("audit.db");
    let log = AuditLog::open(AuditSettings::new(&path)).unwrap();
    let mut denied = call(1);
    denied.server = Some("memory".into());
    denied.outcome = "error";
    denied.decision = Some("deny");
    denied.rule = Some("no deletes".into());
    denied.caller = Some(r#"["https://issuer","bob","cli"]"#.into());
    for record in [call(0), denied, call(2)] {
        log.record(record);
    }
    log.flush(Duration::from_secs(10)).await;
    let read = |q: AuditQuery| -> Vec<String> {
        query(&path, &q)
            .unwrap()
            .into_iter()
            .map(|row| row.target.unwrap_or_default())
            .collect()
    };
    assert_eq!(read(AuditQuery::default()), ["tool0", "tool1", "tool2"]);
    let only = |f: fn(&mut AuditQuery)| {
        let mut q = AuditQuery::default();
        f(&mut q);
        q
    };
    assert_eq!(read(only(|q| q.server = Some("memory".into()))), ["tool1"]);
    assert_eq!(read(only(|q| q.decision = Some("deny".into()))), ["tool1"]);
    assert_eq!(
        read(only(|q| q.outcome = Some("ok".into()))),
        ["tool0", "tool2"]
    );
    assert_eq!(read(only(|q| q.caller = Some("bob".into()))), ["tool1"]);
    assert_eq!(
        read(only(|q| q.limit = 2)),
        ["tool1", "tool2"],
        "the newest, oldest first"
    );
    assert_eq!(read(only(|q| q.after_id = Some(2))), ["tool2"]);
    assert!(read(only(|q| q.since_ms = Some(now_ms() + 60_000))).is_empty());
    let row = &query(&path, &only(|q| q.decision = Some("deny".into()))).unwrap()[0];
    assert_eq!(row.rule.as_deref(), Some("no deletes"));
    assert!(
        row.time.ends_with('Z') && row.time.contains('T'),
        "{}",
        row.time
    );
}

#[tokio::test]
async fn activity_counts_each_servers_requests_per_slot() {
    let scratch = Scratch::new("activity");
    let path = scratch.0.join("audit.db");
    let log = AuditLog::open(AuditSettings::new(&path)).unwrap();
    let now = now_ms();
    let at = |ms_ago: i64, server: &str, outcome: &'static str, ms: f64| AuditRecord {
        time_ms: now - ms_ago,
        duration_ms: ms,
        server: Some(server.into()),
        outcome,
        ..call(0)
    };
    log.record(at(30_000, "a", "ok", 2.0));
    log.record(at(40_000, "a", "error", 4.0));
    log.record(at(130_000, "a", "ok", 9.0));
    log.record(at(10_000, "b", "ok", 1.0));
    log.record(at(7_200_000, "b", "ok", 1.0)); // outside the window
    log.flush(Duration::from_secs(5)).await;
    let servers = activity(&path, now, 60_000, 60).unwrap();
    let names: Vec<&str> = servers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    let a = &servers[0].1;
    assert_eq!(a.len(), 60);
    assert_eq!((a[59].requests, a[59].errors, a[59].mean_ms), (2, 1, 3.0));
    assert_eq!((a[57].requests, a[57].mean_ms), (1, 9.0));
    let b = &servers[1].1;
    assert_eq!(b.iter().map(|s| s.requests).sum::<u64>(), 1);
}
