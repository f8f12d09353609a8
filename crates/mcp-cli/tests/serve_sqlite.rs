//! `mcp serve sqlite` as a real child over stdio, driven by `mcp tool` and
//! `mcp read`: a database made with `--write`, then served read-only.

mod support;

use std::path::PathBuf;

use support::{MCP, mcp, stderr, stdout};

/// A directory of its own under the system's temporary directory, removed
/// when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("mcp-serve-sqlite-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the scratch directory");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn mcp_serve_sqlite_writes_with_write_and_only_reads_without() {
    let dir = Scratch::new();
    let db = dir.0.join("fruit.db");
    let writer = format!("{MCP} serve sqlite {} --write", db.display());
    let reader = format!("{MCP} serve sqlite {}", db.display());

    let output = mcp(&[
        "tool",
        "-s",
        &writer,
        "execute",
        "sql=CREATE TABLE fruit (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
    ])
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let output = mcp(&[
        "tool",
        "-s",
        &writer,
        "insert_row",
        "table=fruit",
        r#"values={"name": "apple"}"#,
    ])
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("sqlite:///fruit/1"),
        "{}",
        stdout(&output)
    );

    let output = mcp(&[
        "tool",
        "-s",
        &reader,
        "query",
        "sql=SELECT name FROM fruit WHERE id = ?",
        "params=[1]",
    ])
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("apple"), "{}", stdout(&output));

    let output = mcp(&["read", "-s", &reader, "sqlite:///fruit/1"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("\"apple\""), "{}", stdout(&output));

    let output = mcp(&["tool", "-s", &reader, "query", "sql=DROP TABLE fruit"]).await;
    assert!(!output.status.success(), "{}", stdout(&output));
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert!(said.contains("only statements that read"), "{said}");

    let output = mcp(&["tool", "-s", &reader, "execute", "sql=DROP TABLE fruit"]).await;
    assert!(!output.status.success(), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("has no tool"),
        "{}",
        stderr(&output)
    );

    let output = mcp(&["tool", "-s", &reader, "list_tables"]).await;
    assert!(stdout(&output).contains("fruit"), "{}", stdout(&output));
}
