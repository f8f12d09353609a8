//! The SQLite server through `mcp-client` over a real session, in a legacy
//! revision (2025-11-25) and in 2026-07-28, on a database file each test
//! makes: schema and row resources, the tools, and the refusals that keep
//! a read-only server read-only.

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_builtin::sqlite::{Config, server};
use mcp_client::{Client, ClientError, RequestOptions};
use mcp_schema::{
    CallToolResult, CompleteArgument, CompleteRequestParams, CompletionReference, ProtocolVersion,
    ResourceContents, ResourceTemplateReference,
};
use serde_json::{Value, json};
use support::{connect_in_process, within};

const ERAS: [ProtocolVersion; 2] = [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28];

/// A directory of its own under the system's temporary directory, removed
/// when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mcp-sqlite-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("create the scratch directory");
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A shop: users, orders referring to users (with an index), grades with a
/// composite key, notes without a declared key, and a view.
fn shop(dir: &Scratch) -> PathBuf {
    let path = dir.path("shop.db");
    let conn = rusqlite::Connection::open(&path).expect("create the database");
    conn.execute_batch(
        r#"
        CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL, avatar BLOB);
        CREATE TABLE orders (
            id INTEGER PRIMARY KEY,
            user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            total INTEGER DEFAULT 0
        );
        CREATE INDEX orders_by_user ON orders(user_id);
        CREATE TABLE grades (student INTEGER, subject TEXT, grade TEXT,
                             PRIMARY KEY (student, subject)) WITHOUT ROWID;
        CREATE TABLE notes (body TEXT);
        CREATE TABLE "odd ""name""/x" (k TEXT PRIMARY KEY, v TEXT);
        CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
        INSERT INTO users VALUES (1, 'Ada', 9.5, x'00ff07'), (2, 'Brian', NULL, NULL),
                                 (3, 'Chloé', 7.25, NULL);
        INSERT INTO orders (user_id, total) VALUES (1, 120), (1, 30), (2, 9007199254740993);
        INSERT INTO grades VALUES (1, 'math', 'A'), (1, 'art', 'B');
        INSERT INTO notes VALUES ('first'), ('second');
        INSERT INTO "odd ""name""/x" VALUES ('a/b c', 'slash');
        "#,
    )
    .expect("fill the database");
    path
}

async fn connect(config: Config, era: ProtocolVersion) -> Client {
    let server = server(config).expect("the server starts");
    connect_in_process(&server, era).await
}

/// The server for `config` over Streamable HTTP on a free loopback port,
/// and a client of it in revision `era`.
async fn connect_over_http(config: Config, era: ProtocolVersion) -> Client {
    let server = server(config).expect("the server starts");
    support::connect_over_http(&server, era).await
}

async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    within(tool, client.call_tool(tool, args))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// The structured content of a successful call.
async fn ok(client: &Client, tool: &str, args: Value) -> Value {
    let result = call(client, tool, args.clone()).await;
    assert!(
        !result.is_error(),
        "{tool} {args} failed: {}",
        text(&result)
    );
    result
        .structured_content
        .unwrap_or_else(|| panic!("{tool} gives structured content"))
}

/// The message of a failed call.
async fn refused(client: &Client, tool: &str, args: Value) -> String {
    let result = call(client, tool, args.clone()).await;
    assert!(
        result.is_error(),
        "{tool} {args} should fail, gave {}",
        text(&result)
    );
    text(&result)
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .collect::<Vec<_>>()
        .join("")
}

async fn read_json(client: &Client, uri: &str) -> Value {
    let result = within(uri, client.read_resource(uri))
        .await
        .unwrap_or_else(|e| panic!("read {uri}: {e}"));
    let [ResourceContents::Text(contents)] = result.contents.as_slice() else {
        panic!(
            "{uri}: one text content expected, got {:?}",
            result.contents
        )
    };
    assert_eq!(contents.mime_type.as_deref(), Some("application/json"));
    serde_json::from_str(&contents.text).expect("JSON text")
}

async fn read_error(client: &Client, uri: &str) -> mcp_schema::ErrorObject {
    match within(uri, client.read_resource(uri)).await {
        Err(ClientError::Request(mcp_core::RequestError::Rpc(e))) => e,
        other => panic!("{uri} should be an error, got {other:?}"),
    }
}

/// The row count of `table`, read straight from the file.
fn count(path: &Path, table: &str) -> i64 {
    let conn = rusqlite::Connection::open(path).expect("open");
    conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .expect("count")
}

#[tokio::test]
async fn a_read_only_server_lists_only_reading_tools_with_honest_hints() {
    let dir = Scratch::new();
    let db = shop(&dir);
    for era in ERAS {
        let client = connect(Config::new(&db), era).await;
        let tools = within("tools/list", client.list_all_tools()).await.unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        names.sort();
        assert_eq!(
            names,
            ["describe_table", "explain", "list_tables", "query"],
            "{era}"
        );
        for tool in &tools {
            let hints = tool.annotations.as_ref().expect("annotations");
            assert_eq!(hints.read_only_hint, Some(true), "{}", tool.name);
            assert_eq!(hints.open_world_hint, Some(false), "{}", tool.name);
            assert!(tool.title.is_some(), "{}", tool.name);
            assert!(tool.output_schema.is_some(), "{}", tool.name);
        }
        let tables = ok(&client, "list_tables", json!({})).await;
        let names: Vec<&str> = tables["tables"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "big_orders",
                "grades",
                "notes",
                "odd \"name\"/x",
                "orders",
                "users"
            ]
        );
        assert_eq!(tables["tables"][0]["type"], "view");
        assert_eq!(tables["tables"][1]["without_rowid"], true);
    }
}

#[tokio::test]
async fn a_write_server_adds_the_writing_tools_annotated_as_they_behave() {
    let dir = Scratch::new();
    let db = shop(&dir);
    for era in ERAS {
        let client = connect(Config::new(&db).write(true), era).await;
        let tools = within("tools/list", client.list_all_tools()).await.unwrap();
        let hints = |name: &str| {
            let tool = tools.iter().find(|t| t.name == name).expect(name);
            let h = tool.annotations.clone().unwrap();
            (
                h.read_only_hint,
                h.destructive_hint,
                h.idempotent_hint,
                h.open_world_hint,
            )
        };
        let f = Some(false);
        let t = Some(true);
        assert_eq!(hints("query"), (t, f, t, f));
        assert_eq!(hints("execute"), (f, t, f, f));
        assert_eq!(hints("insert_row"), (f, f, f, f));
        assert_eq!(hints("update_row"), (f, t, t, f));
        assert_eq!(hints("delete_row"), (f, t, t, f));
        assert_eq!(tools.len(), 8, "{era}");
    }
}

#[tokio::test]
async fn each_table_has_a_schema_resource_and_each_row_a_uri() {
    let dir = Scratch::new();
    let db = shop(&dir);
    for era in ERAS {
        let client = connect(Config::new(&db), era).await;
        let resources = within("resources/list", client.list_all_resources())
            .await
            .unwrap();
        let mut uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
        uris.sort();
        assert_eq!(
            uris,
            [
                "sqlite:///grades",
                "sqlite:///notes",
                "sqlite:///odd%20%22name%22%2Fx",
                "sqlite:///orders",
                "sqlite:///users",
            ],
            "{era}"
        );
        let orders = read_json(&client, "sqlite:///orders").await;
        assert_eq!(orders["primary_key"], json!(["id"]));
        assert_eq!(orders["columns"][1]["name"], "user_id");
        assert_eq!(orders["columns"][1]["type"], "INTEGER");
        assert_eq!(orders["columns"][1]["not_null"], true);
        assert_eq!(orders["columns"][2]["default"], "0");
        assert_eq!(orders["foreign_keys"][0]["references"], "users");
        assert_eq!(orders["foreign_keys"][0]["columns"], json!(["user_id"]));
        assert_eq!(orders["foreign_keys"][0]["on_delete"], "CASCADE");
        assert_eq!(orders["indexes"][0]["name"], "orders_by_user");
        assert_eq!(orders["indexes"][0]["columns"], json!(["user_id"]));

        let templates = within("templates", client.list_all_resource_templates())
            .await
            .unwrap();
        assert_eq!(templates[0].uri_template, "sqlite:///{table}/{key}");

        let ada = read_json(&client, "sqlite:///users/1").await;
        assert_eq!(
            ada,
            json!({"id": 1, "name": "Ada", "score": 9.5, "avatar": {"$base64": "AP8H"}})
        );
        let grade = read_json(&client, "sqlite:///grades/%5B1%2C%22art%22%5D").await;
        assert_eq!(grade, json!({"student": 1, "subject": "art", "grade": "B"}));
        let note = read_json(&client, "sqlite:///notes/2").await;
        assert_eq!(note, json!({"body": "second"}));
        let odd = read_json(&client, "sqlite:///odd%20%22name%22%2Fx/a%2Fb%20c").await;
        assert_eq!(odd, json!({"k": "a/b c", "v": "slash"}));

        let missing = read_error(&client, "sqlite:///users/99").await;
        assert_eq!(missing.code, era.resource_not_found_code(), "{era}");
        let no_table = read_error(&client, "sqlite:///nothing/1").await;
        assert_eq!(no_table.code, era.resource_not_found_code(), "{era}");

        let completion = within(
            "complete",
            client.complete(CompleteRequestParams {
                meta: None,
                reference: CompletionReference::ResourceTemplate(ResourceTemplateReference {
                    uri: "sqlite:///{table}/{key}".into(),
                }),
                argument: CompleteArgument {
                    name: "table".into(),
                    value: "o".into(),
                },
                context: None,
            }),
        )
        .await
        .unwrap();
        assert_eq!(completion.completion.values, ["odd \"name\"/x", "orders"]);
    }
}

#[tokio::test]
async fn query_binds_parameters_and_returns_values_faithfully() {
    let dir = Scratch::new();
    let db = shop(&dir);
    for era in ERAS {
        let client = connect(Config::new(&db), era).await;
        let by_position = ok(
            &client,
            "query",
            json!({"sql": "SELECT id, name, score, avatar FROM users WHERE id <= ? ORDER BY id",
                   "params": [2]}),
        )
        .await;
        assert_eq!(
            by_position["columns"],
            json!(["id", "name", "score", "avatar"])
        );
        assert_eq!(
            by_position["rows"],
            json!([[1, "Ada", 9.5, {"$base64": "AP8H"}], [2, "Brian", null, null]])
        );
        assert_eq!(by_position["truncated"], false);
        assert_eq!(by_position["row_count"], 2);

        let by_name = ok(
            &client,
            "query",
            json!({"sql": "SELECT total FROM orders WHERE user_id = :user AND total > @least",
                   "params": {"user": 2, "@least": 0}}),
        )
        .await;
        assert_eq!(by_name["rows"], json!([[9007199254740993_i64]]));

        let blob = ok(
            &client,
            "query",
            json!({"sql": "SELECT name FROM users WHERE avatar = ?",
                   "params": [{"$base64": "AP8H"}]}),
        )
        .await;
        assert_eq!(blob["rows"], json!([["Ada"]]));

        let hostile = ok(
            &client,
            "query",
            json!({"sql": "SELECT count(*) FROM users WHERE name = ?",
                   "params": ["x' OR '1'='1"]}),
        )
        .await;
        assert_eq!(
            hostile["rows"],
            json!([[0]]),
            "a parameter is a value, never SQL"
        );

        let missing = refused(
            &client,
            "query",
            json!({"sql": "SELECT * FROM users WHERE id = ?"}),
        )
        .await;
        assert!(missing.contains("1 parameter"), "{missing}");
    }
}

#[tokio::test]
async fn a_query_stops_at_its_row_cap_and_says_so() {
    let dir = Scratch::new();
    let db = shop(&dir);
    for era in ERAS {
        let client = connect(Config::new(&db).default_rows(2), era).await;
        let capped = ok(
            &client,
            "query",
            json!({"sql": "WITH RECURSIVE s(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM s WHERE value < 50) SELECT value FROM s"}),
        )
        .await;
        assert_eq!(capped["rows"], json!([[1], [2]]));
        assert_eq!(capped["truncated"], true);
        assert!(capped["notice"].as_str().unwrap().contains("max_rows"));
        let asked = ok(
            &client,
            "query",
            json!({"sql": "WITH RECURSIVE s(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM s WHERE value < 50) SELECT value FROM s", "max_rows": 50}),
        )
        .await;
        assert_eq!(asked["row_count"], 50);
        assert_eq!(asked["truncated"], false);
    }
}

#[tokio::test]
async fn explain_shows_the_plan_without_running_the_statement() {
    let dir = Scratch::new();
    let db = shop(&dir);
    for era in ERAS {
        let client = connect(Config::new(&db), era).await;
        let plan = ok(
            &client,
            "explain",
            json!({"sql": "SELECT * FROM orders WHERE user_id = ?"}),
        )
        .await;
        let tree = plan["tree"].as_str().unwrap();
        assert!(tree.contains("USING INDEX orders_by_user"), "{tree}");
        let delete = ok(&client, "explain", json!({"sql": "DELETE FROM notes"})).await;
        assert!(delete["plan"].is_array());
        assert_eq!(count(&db, "notes"), 2, "explain does not run the statement");
    }
}

#[tokio::test]
async fn describe_table_injection_through_the_table_name() {
    let dir = Scratch::new();
    let db = shop(&dir);
    for era in ERAS {
        for write in [false, true] {
            let client = connect(Config::new(&db).write(write), era).await;
            for hostile in [
                "users); DROP TABLE users; --",
                "users; DROP TABLE orders",
                "users') UNION SELECT 1,2,3,4,5,6 --",
            ] {
                let message = refused(&client, "describe_table", json!({"table": hostile})).await;
                assert!(message.contains("no table or view is named"), "{message}");
            }
            if write {
                let message = refused(
                    &client,
                    "insert_row",
                    json!({"table": "notes\" (body) VALUES ('x'); DROP TABLE users; --",
                           "values": {}}),
                )
                .await;
                assert!(message.contains("no table is named"), "{message}");
                let message = refused(
                    &client,
                    "update_row",
                    json!({"table": "users", "key": 1, "values": {"name\" = 'x', \"id": "y"}}),
                )
                .await;
                assert!(message.contains("has no column"), "{message}");
            }
            let odd = ok(
                &client,
                "describe_table",
                json!({"table": "odd \"name\"/x"}),
            )
            .await;
            assert_eq!(odd["primary_key"], json!(["k"]));
            assert_eq!(count(&db, "users"), 3);
            assert_eq!(count(&db, "orders"), 3);
        }
    }
}

#[tokio::test]
async fn select_then_commit_then_drop_is_refused() {
    let dir = Scratch::new();
    let db = shop(&dir);
    for era in ERAS {
        let client = connect(Config::new(&db).write(true), era).await;
        for tool in ["query", "execute", "explain"] {
            for sql in [
                "SELECT 1; COMMIT; DROP TABLE users",
                "SELECT 1; DROP TABLE users",
                "SELECT 1;\nDROP TABLE users; -- trailing",
            ] {
                let message = refused(&client, tool, json!({"sql": sql})).await;
                assert!(
                    message.contains("only one SQL statement"),
                    "{tool}: {message}"
                );
            }
        }
        let message = refused(&client, "execute", json!({"sql": "COMMIT"})).await;
        assert!(message.contains("transaction control"), "{message}");
        let trailing = ok(
            &client,
            "query",
            json!({"sql": "SELECT 1; -- a comment\n  "}),
        )
        .await;
        assert_eq!(trailing["rows"], json!([[1]]));
        assert_eq!(count(&db, "users"), 3);
    }
}

#[tokio::test]
async fn attach_is_refused() {
    let dir = Scratch::new();
    let db = shop(&dir);
    let other = dir.path("other.db");
    for era in ERAS {
        let client = connect(Config::new(&db).write(true), era).await;
        let attach = format!("ATTACH DATABASE '{}' AS other", other.display());
        for tool in ["query", "execute"] {
            let message = refused(&client, tool, json!({"sql": attach})).await;
            assert!(message.contains("ATTACH is refused"), "{tool}: {message}");
        }
        let copy = format!("VACUUM INTO '{}'", other.display());
        let message = refused(&client, "execute", json!({"sql": copy})).await;
        assert!(
            message.contains("ATTACH is refused"),
            "VACUUM INTO: {message}"
        );
        let message = refused(&client, "query", json!({"sql": "DETACH DATABASE main"})).await;
        assert!(message.contains("DETACH is refused"), "{message}");
        assert!(!other.exists(), "ATTACH created {}", other.display());
    }
}

#[tokio::test]
async fn load_extension_is_refused() {
    let dir = Scratch::new();
    let db = shop(&dir);
    for era in ERAS {
        let client = connect(Config::new(&db).write(true), era).await;
        for tool in ["query", "execute"] {
            for sql in [
                "SELECT load_extension('/tmp/evil.so')",
                "SELECT LOAD_EXTENSION('/tmp/evil.so', 'entry')",
            ] {
                let message = refused(&client, tool, json!({"sql": sql})).await;
                assert!(
                    message.contains("load_extension is refused"),
                    "{tool}: {message}"
                );
            }
        }
    }
}

#[tokio::test]
async fn writing_pragma_is_refused_read_only() {
    let dir = Scratch::new();
    let db = shop(&dir);
    for era in ERAS {
        let client = connect(Config::new(&db), era).await;
        for sql in [
            "PRAGMA user_version = 7",
            "PRAGMA query_only = OFF",
            "PRAGMA writable_schema = ON",
            "PRAGMA journal_mode = DELETE",
        ] {
            let message = refused(&client, "query", json!({"sql": sql})).await;
            assert!(
                message.contains("changes a setting") || message.contains("only pragmas that read"),
                "{sql}: {message}"
            );
        }
        let version = ok(&client, "query", json!({"sql": "PRAGMA user_version"})).await;
        assert_eq!(version["rows"], json!([[0]]));
        let info = ok(&client, "query", json!({"sql": "PRAGMA table_info(users)"})).await;
        assert_eq!(info["row_count"], 4);
    }
}

#[tokio::test]
async fn a_write_through_query_is_refused() {
    let dir = Scratch::new();
    let db = shop(&dir);
    for era in ERAS {
        for write in [false, true] {
            let client = connect(Config::new(&db).write(write), era).await;
            for sql in [
                "DELETE FROM users",
                "WITH doomed AS (SELECT id FROM users) DELETE FROM users WHERE id IN doomed",
                "INSERT INTO notes VALUES ('sneaky') RETURNING body",
                "UPDATE users SET name = 'x' RETURNING id",
                "DROP TABLE notes",
                "CREATE TABLE sneaky (x)",
                "VACUUM",
            ] {
                let message = refused(&client, "query", json!({"sql": sql})).await;
                assert!(
                    message.contains("only statements that read"),
                    "{sql}: {message}"
                );
            }
            assert_eq!(count(&db, "users"), 3);
            assert_eq!(count(&db, "notes"), 2);
        }
    }
}

#[tokio::test]
async fn a_runaway_query_ends_within_its_budget() {
    let dir = Scratch::new();
    let db = shop(&dir);
    for era in ERAS {
        let config = Config::new(&db).time_budget(Duration::from_millis(200));
        let client = connect(config, era).await;
        let message = refused(
            &client,
            "query",
            json!({"sql": "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) \
                           SELECT count(*) FROM n"}),
        )
        .await;
        assert!(
            message.contains("ran past its time budget of 200 ms"),
            "{message}"
        );
        let after = ok(
            &client,
            "query",
            json!({"sql": "SELECT count(*) FROM users"}),
        )
        .await;
        assert_eq!(after["rows"], json!([[3]]), "the connection still serves");
    }
}

#[tokio::test]
async fn a_cancelled_query_is_stopped_and_frees_the_connection() {
    let dir = Scratch::new();
    let db = shop(&dir);
    for era in ERAS {
        // A budget far beyond the test's own bounds: only the cancellation
        // can stop the statement in time for the next call.
        let config = Config::new(&db).time_budget(Duration::from_secs(3600));
        let client = connect(config, era).await;
        let runaway = json!({"sql": "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) \
                                     SELECT count(*) FROM n"});
        let gave_up = within(
            "the abandoned call",
            client.call_tool_with(
                "query",
                runaway,
                RequestOptions::new().timeout(Duration::from_millis(300)),
            ),
        )
        .await;
        assert!(gave_up.is_err(), "the runaway query returned: {gave_up:?}");
        let after = ok(
            &client,
            "query",
            json!({"sql": "SELECT count(*) FROM users"}),
        )
        .await;
        assert_eq!(after["rows"], json!([[3]]), "{era}");
    }
}

#[tokio::test]
async fn the_row_tools_insert_update_and_delete_by_key() {
    let dir = Scratch::new();
    let db = shop(&dir);
    for era in ERAS {
        let client = connect(Config::new(&db).write(true), era).await;
        let inserted = ok(
            &client,
            "insert_row",
            json!({"table": "users", "values": {"name": "Dmitri", "avatar": {"$base64": "AQI="}}}),
        )
        .await;
        assert_eq!(inserted["changes"], 1);
        let uri = inserted["uri"].as_str().unwrap().to_owned();
        let id = inserted["last_insert_rowid"].as_i64().unwrap();
        assert_eq!(uri, format!("sqlite:///users/{id}"));
        let row = read_json(&client, &uri).await;
        assert_eq!(row["avatar"], json!({"$base64": "AQI="}));

        let updated = ok(
            &client,
            "update_row",
            json!({"table": "users", "key": id, "values": {"score": 3.5}}),
        )
        .await;
        assert_eq!(updated["changes"], 1);
        assert_eq!(read_json(&client, &uri).await["score"], 3.5);

        let grade = ok(
            &client,
            "insert_row",
            json!({"table": "grades", "values": {"student": 2, "subject": "music", "grade": "C"}}),
        )
        .await;
        assert_eq!(grade["uri"], "sqlite:///grades/%5B2%2C%22music%22%5D");
        ok(
            &client,
            "update_row",
            json!({"table": "grades", "key": {"student": 2, "subject": "music"},
                   "values": {"grade": "A"}}),
        )
        .await;
        assert_eq!(
            read_json(&client, "sqlite:///grades/%5B2%2C%22music%22%5D").await["grade"],
            "A"
        );
        let half_key = refused(
            &client,
            "delete_row",
            json!({"table": "grades", "key": {"student": 2}}),
        )
        .await;
        assert!(half_key.contains("subject"), "{half_key}");
        let deleted = ok(
            &client,
            "delete_row",
            json!({"table": "grades", "key": [2, "music"]}),
        )
        .await;
        assert_eq!(deleted["changes"], 1);
        let again = ok(
            &client,
            "delete_row",
            json!({"table": "grades", "key": [2, "music"]}),
        )
        .await;
        assert_eq!(again["changes"], 0);

        let nothing = refused(
            &client,
            "update_row",
            json!({"table": "users", "key": 999, "values": {"name": "x"}}),
        )
        .await;
        assert!(nothing.contains("no row"), "{nothing}");
        let orphan = refused(
            &client,
            "insert_row",
            json!({"table": "orders", "values": {"user_id": 999, "total": 1}}),
        )
        .await;
        assert!(orphan.contains("FOREIGN KEY constraint failed"), "{orphan}");
        let view = refused(
            &client,
            "delete_row",
            json!({"table": "big_orders", "key": 1}),
        )
        .await;
        assert!(view.contains("is a view"), "{view}");

        ok(&client, "delete_row", json!({"table": "users", "key": id})).await;
        assert_eq!(count(&db, "users"), 3);
    }
}

#[tokio::test]
async fn insert_row_only_adds_even_where_the_table_would_replace() {
    let dir = Scratch::new();
    let db = dir.path("replacing.db");
    rusqlite::Connection::open(&db)
        .expect("create the database")
        .execute_batch(
            "CREATE TABLE tags (id INTEGER PRIMARY KEY, name TEXT UNIQUE ON CONFLICT REPLACE);
             INSERT INTO tags VALUES (1, 'red');",
        )
        .expect("fill the database");
    for era in ERAS {
        let client = connect(Config::new(&db).write(true), era).await;
        let tools = within("tools/list", client.list_all_tools()).await.unwrap();
        let hints = tools
            .iter()
            .find(|t| t.name == "insert_row")
            .and_then(|t| t.annotations.clone())
            .expect("insert_row is annotated");
        assert_eq!(hints.destructive_hint, Some(false), "{era}");
        let message = refused(
            &client,
            "insert_row",
            json!({"table": "tags", "values": {"id": 2, "name": "red"}}),
        )
        .await;
        assert!(message.contains("UNIQUE constraint failed"), "{message}");
        let kept = ok(
            &client,
            "query",
            json!({"sql": "SELECT id, name FROM tags"}),
        )
        .await;
        assert_eq!(kept["rows"], json!([[1, "red"]]), "{era}");
    }
}

#[tokio::test]
async fn execute_reports_changes_and_keeps_the_resources_in_step() {
    let dir = Scratch::new();
    let db = dir.path("fresh.db");
    for (n, era) in ERAS.into_iter().enumerate() {
        let client = connect(Config::new(&db).write(true), era).await;
        let table = format!("t{n}");
        ok(
            &client,
            "execute",
            json!({"sql": format!("CREATE TABLE {table} (id INTEGER PRIMARY KEY, v TEXT)")}),
        )
        .await;
        let inserted = ok(
            &client,
            "execute",
            json!({"sql": format!("INSERT INTO {table} (v) VALUES (?), (?)"), "params": ["a", "b"]}),
        )
        .await;
        assert_eq!(inserted["changes"], 2);
        assert_eq!(inserted["last_insert_rowid"], 2);
        assert_eq!(inserted["columns"], json!([]), "no RETURNING, no columns");
        assert_eq!(inserted["rows"], json!([]));
        assert_eq!(inserted["truncated"], false);
        let returned = ok(
            &client,
            "execute",
            json!({"sql": format!("UPDATE {table} SET v = upper(v) RETURNING v")}),
        )
        .await;
        assert_eq!(returned["columns"], json!(["v"]));
        assert_eq!(returned["rows"], json!([["A"], ["B"]]));
        client.invalidate_cache();
        let resources = within("resources/list", client.list_all_resources())
            .await
            .unwrap();
        assert!(
            resources
                .iter()
                .any(|r| r.uri == format!("sqlite:///{table}")),
            "{resources:?}"
        );
        let dropped = ok(
            &client,
            "execute",
            json!({"sql": format!("DROP TABLE {table}")}),
        )
        .await;
        assert_eq!(dropped["changes"], 0, "DROP TABLE changes no row");
        client.invalidate_cache();
        let resources = within("resources/list", client.list_all_resources())
            .await
            .unwrap();
        assert!(resources.is_empty(), "{resources:?}");
    }
}

#[tokio::test]
async fn over_streamable_http_the_server_reads_and_refuses_alike() {
    let dir = Scratch::new();
    let db = shop(&dir);
    for era in ERAS {
        let client = connect_over_http(Config::new(&db), era).await;
        let rows = ok(
            &client,
            "query",
            json!({"sql": "SELECT name FROM users WHERE score > :least ORDER BY id",
                   "params": {"least": 8}}),
        )
        .await;
        assert_eq!(rows["rows"], json!([["Ada"]]), "{era}");
        let brian = read_json(&client, "sqlite:///users/2").await;
        assert_eq!(brian["name"], "Brian");
        let message = refused(
            &client,
            "query",
            json!({"sql": "SELECT 1; COMMIT; DROP TABLE users"}),
        )
        .await;
        assert!(message.contains("only one SQL statement"), "{message}");
        let missing = read_error(&client, "sqlite:///users/42").await;
        assert_eq!(missing.code, era.resource_not_found_code(), "{era}");
        assert_eq!(count(&db, "users"), 3);
    }
}

#[tokio::test]
async fn a_missing_file_is_an_error_without_write() {
    let dir = Scratch::new();
    let missing = dir.path("missing.db");
    let Err(error) = server(Config::new(&missing)) else {
        panic!("a read-only server started on a missing file");
    };
    assert!(error.to_string().contains("the file must exist"), "{error}");
    assert!(!missing.exists());
}
