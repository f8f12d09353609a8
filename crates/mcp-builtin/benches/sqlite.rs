//! The SQLite server's `query` tool returning 100 000 rows, in process:
//! `mcp-client` over [`mcp_core::Transport::pair`] to the server, so the
//! figure covers the whole call (argument checks, the connection thread,
//! reading and converting the rows, the structured result serialized and
//! read back), on a real database file of 100 000 rows (an integer key, a
//! short text, a real).
//!
//! Run: `cargo bench -p mcp-builtin --bench sqlite`

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcp_builtin::sqlite::{Config, server};
use mcp_client::{Client, EraChoice};
use mcp_schema::ProtocolVersion;
use serde_json::json;
use tokio::runtime::Runtime;

/// How many rows the table holds and the query returns.
const ROWS: usize = 100_000;

/// A database file of [`ROWS`] rows in the system's temporary directory.
fn database() -> PathBuf {
    let path = std::env::temp_dir().join(format!("mcp-sqlite-bench-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let conn = rusqlite::Connection::open(&path).expect("create the database");
    conn.execute_batch(&format!(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL);
         INSERT INTO items (name, price)
           WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {ROWS})
           SELECT 'item number ' || i, i * 0.25 FROM n;"
    ))
    .expect("fill the database");
    path
}

fn query_100k_rows(c: &mut Criterion) {
    let runtime = Runtime::new().expect("a runtime");
    let path = database();
    let config = Config::new(&path)
        .max_rows(ROWS)
        .max_result_bytes(256 << 20);
    let server = server(config).expect("the server starts");
    let client = runtime.block_on(async {
        let (server_side, client_side) = mcp_core::Transport::pair();
        let _session = mcp_core::serve(
            server_side,
            Arc::new(server.clone()),
            server.session_config(),
        );
        Client::builder("sqlite-bench", "1.0.0")
            .era(EraChoice::Pinned(ProtocolVersion::V2026_07_28))
            .connect(client_side)
            .await
            .expect("connect")
    });
    let arguments = json!({"sql": "SELECT id, name, price FROM items", "max_rows": ROWS});

    let mut group = c.benchmark_group("sqlite");
    group.sample_size(10);
    group.throughput(Throughput::Elements(ROWS as u64));
    group.bench_function("query_100k_rows", |b| {
        b.to_async(&runtime).iter(|| async {
            let result = client
                .call_tool("query", arguments.clone())
                .await
                .expect("query");
            let rows = &result.structured_content.as_ref().expect("structured")["row_count"];
            assert_eq!(rows, ROWS, "every row comes back");
            black_box(result)
        })
    });
    group.finish();
    let _ = std::fs::remove_file(&path);
}

criterion_group!(benches, query_100k_rows);
criterion_main!(benches);
