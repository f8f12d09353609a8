//! Every ready server keeps the promise of its output schemas: each tool
//! that declares one is called with valid arguments (the writing tools
//! included, on a temporary directory, a temporary database and an API on
//! 127.0.0.1), and each result's `structuredContent` must validate against
//! that tool's `outputSchema`, as the official SDKs check it.

mod support;

use std::collections::BTreeSet;

use axum::Router;
use axum::http::{Method, Uri, header};
use axum::response::{IntoResponse, Response};
use mcp_client::Client;
use mcp_schema::ProtocolVersion;
use mcp_server::Server;
use serde_json::{Value, json};
use support::{connect_in_process, within};

const ERAS: [ProtocolVersion; 2] = [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28];

const PETSTORE: &str = include_str!("fixtures/petstore3.json");

/// Calls the tools of `server` in order in revision `era`, each with its
/// arguments, and checks each result against the tool's output schema;
/// every listed tool that declares an output schema must be called.
async fn check(server: &Server, era: ProtocolVersion, calls: &[(&str, Value)]) {
    let client = connect_in_process(server, era).await;
    let tools = within("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    let with_schema: BTreeSet<&str> = tools
        .iter()
        .filter(|t| t.output_schema.is_some())
        .map(|t| t.name.as_str())
        .collect();
    let called: BTreeSet<&str> = calls.iter().map(|(name, _)| *name).collect();
    let uncalled: Vec<_> = with_schema.difference(&called).collect();
    assert!(uncalled.is_empty(), "{era}: never called: {uncalled:?}");
    for (name, args) in calls {
        let tool = tools
            .iter()
            .find(|t| t.name == *name)
            .unwrap_or_else(|| panic!("{era}: no tool {name}"));
        let schema = Value::Object(
            tool.output_schema
                .clone()
                .unwrap_or_else(|| panic!("{era}: {name} has no output schema")),
        );
        let validator = jsonschema::validator_for(&schema)
            .unwrap_or_else(|e| panic!("{name}: its output schema does not compile: {e}"));
        let structured = structured_content(&client, name, args).await;
        let problems: Vec<String> = validator
            .iter_errors(&structured)
            .map(|e| format!("at {:?}: {e}", e.instance_path().to_string()))
            .collect();
        assert!(
            problems.is_empty(),
            "{era}: {name} {args} gave {structured}, against its output schema {schema}: {}",
            problems.join("; ")
        );
    }
}

/// The structured content of a successful call of `tool`.
async fn structured_content(client: &Client, tool: &str, args: &Value) -> Value {
    let result = within(tool, client.call_tool(tool, args.clone()))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    let text: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).collect();
    assert!(!result.is_error(), "{tool} {args} failed: {text:?}");
    result
        .structured_content
        .unwrap_or_else(|| panic!("{tool} {args} gave no structured content"))
}

#[tokio::test]
async fn filesystem_results_match_their_output_schemas() {
    for era in ERAS {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().canonicalize().unwrap();
        std::fs::write(dir.join("hello.txt"), "hello\nworld\n").unwrap();
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/notes.md"), "# Notes\nTODO: more\n").unwrap();
        let root = dir.to_str().unwrap();
        let config = mcp_builtin::filesystem::Config::new([&dir]).write(true);
        let server = mcp_builtin::filesystem::server(config).expect("the server starts");
        let edit = |old: &str, new: &str| json!([{"oldText": old, "newText": new}]);
        check(
            &server,
            era,
            &[
                ("list_allowed_directories", json!({})),
                ("list_directory", json!({"path": root})),
                (
                    "list_directory_with_sizes",
                    json!({"path": root, "sortBy": "size"}),
                ),
                ("directory_tree", json!({"path": root})),
                ("read_text_file", json!({"path": "hello.txt"})),
                ("read_text_file", json!({"path": "hello.txt", "head": 1})),
                ("read_file", json!({"path": "hello.txt"})),
                (
                    "read_multiple_files",
                    json!({"paths": ["hello.txt", "sub/notes.md", "missing.txt"]}),
                ),
                ("get_file_info", json!({"path": "sub"})),
                ("search_files", json!({"path": root, "pattern": "**/*.md"})),
                (
                    "search_content",
                    json!({"path": root, "pattern": "TODO", "contextLines": 1}),
                ),
                (
                    "write_file",
                    json!({"path": "new.txt", "content": "one\ntwo\n"}),
                ),
                (
                    "write_file",
                    json!({"path": "new.txt", "content": "one\nthree\n"}),
                ),
                (
                    "edit_file",
                    json!({"path": "new.txt", "edits": edit("three", "four")}),
                ),
                (
                    "edit_file",
                    json!({"path": "new.txt", "edits": edit("one", "1"), "dryRun": true}),
                ),
                ("create_directory", json!({"path": "made/deeper"})),
                (
                    "move_file",
                    json!({"source": "new.txt", "destination": "made/moved.txt"}),
                ),
                (
                    "copy_file",
                    json!({"source": "made/moved.txt", "destination": "copy.txt"}),
                ),
                ("delete_file", json!({"path": "copy.txt"})),
                ("delete_file", json!({"path": "made", "recursive": true})),
            ],
        )
        .await;
    }
}

#[tokio::test]
async fn sqlite_results_match_their_output_schemas_for_every_kind_of_statement() {
    let execute = |sql: &str, params: Value| ("execute", json!({"sql": sql, "params": params}));
    for era in ERAS {
        let temp = tempfile::tempdir().unwrap();
        let config = mcp_builtin::sqlite::Config::new(temp.path().join("shop.db")).write(true);
        let server = mcp_builtin::sqlite::server(config).expect("the server starts");
        check(
            &server,
            era,
            &[
                execute(
                    "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL)",
                    json!([]),
                ),
                execute(
                    "INSERT INTO items (name, price) VALUES (?, ?), (?, ?)",
                    json!(["pen", 1.5, "ink", 4]),
                ),
                execute(
                    "UPDATE items SET price = price * 2 WHERE name = :name",
                    json!({"name": "pen"}),
                ),
                execute(
                    "INSERT INTO items (name) VALUES ('cap') RETURNING id, name",
                    json!([]),
                ),
                execute(
                    "DELETE FROM items WHERE name = 'none' RETURNING id",
                    json!([]),
                ),
                execute("SELECT id, name FROM items ORDER BY id", json!([])),
                execute("CREATE INDEX items_by_name ON items(name)", json!([])),
                (
                    "insert_row",
                    json!({"table": "items", "values": {"name": "nib", "price": 0.5}}),
                ),
                (
                    "update_row",
                    json!({"table": "items", "key": 1, "values": {"price": 2}}),
                ),
                ("delete_row", json!({"table": "items", "key": 2})),
                ("list_tables", json!({})),
                ("describe_table", json!({"table": "items"})),
                (
                    "query",
                    json!({"sql": "SELECT * FROM items WHERE price > ?", "params": [0]}),
                ),
                (
                    "query",
                    json!({"sql": "SELECT * FROM items", "max_rows": 1}),
                ),
                (
                    "explain",
                    json!({"sql": "SELECT * FROM items WHERE name = ?", "params": ["pen"]}),
                ),
            ],
        )
        .await;
    }
}

/// What the test API answers: the uploaded bytes back for an upload, an
/// empty body for a DELETE, text for a logout, else JSON naming the
/// request.
async fn answer(method: Method, uri: Uri, body: axum::body::Bytes) -> Response {
    let path = uri.path().to_owned();
    if path.ends_with("/uploadImage") {
        ([(header::CONTENT_TYPE, "application/octet-stream")], body).into_response()
    } else if method == Method::DELETE {
        ().into_response()
    } else if path.ends_with("/user/logout") {
        "logged out".into_response()
    } else {
        axum::Json(json!({"method": method.as_str(), "path": path})).into_response()
    }
}

/// An HTTP API on 127.0.0.1 answering every request; its base URL.
async fn start_api() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let port = listener.local_addr().expect("its address").port();
    tokio::spawn(axum::serve(listener, Router::new().fallback(answer)).into_future());
    format!("http://127.0.0.1:{port}/api/v3")
}

#[tokio::test]
async fn openapi_results_match_their_output_schemas() {
    let base = start_api().await;
    let pet = json!({"id": 7, "name": "Rex", "photoUrls": [], "status": "available"});
    let user = json!({"id": 1, "username": "ada", "email": "ada@example.com"});
    for era in ERAS {
        let config = mcp_builtin::openapi::Config::from_text(PETSTORE)
            .base_url(base.clone())
            .allow_private_network(true);
        let server = within("the server", mcp_builtin::openapi::server(config))
            .await
            .expect("the server starts");
        check(
            &server,
            era,
            &[
                ("updatePet", json!({"body": pet})),
                ("addPet", json!({"body": pet})),
                ("findPetsByStatus", json!({"status": "available"})),
                ("findPetsByTags", json!({"tags": ["good"]})),
                ("getPetById", json!({"petId": 7})),
                (
                    "updatePetWithForm",
                    json!({"petId": 7, "name": "Max", "status": "sold"}),
                ),
                ("deletePet", json!({"petId": 7, "api_key": "key"})),
                ("uploadFile", json!({"petId": 7, "body": "AAEC/w=="})),
                ("getInventory", json!({})),
                (
                    "placeOrder",
                    json!({"body": {"id": 1, "petId": 7, "quantity": 1}}),
                ),
                ("getOrderById", json!({"orderId": 1})),
                ("deleteOrder", json!({"orderId": 1})),
                ("createUser", json!({"body": user})),
                ("createUsersWithListInput", json!({"body": [user]})),
                (
                    "loginUser",
                    json!({"username": "ada", "password": "secret"}),
                ),
                ("logoutUser", json!({})),
                ("getUserByName", json!({"username": "ada"})),
                ("updateUser", json!({"username": "ada", "body": user})),
                ("deleteUser", json!({"username": "ada"})),
            ],
        )
        .await;
    }
}

#[tokio::test]
async fn prompts_and_everything_results_match_their_output_schemas() {
    for era in ERAS {
        let prompts = mcp_builtin::prompts::server(mcp_builtin::prompts::PromptsConfig::default())
            .expect("the default library");
        check(&prompts, era, &[]).await;
        let everything = mcp_builtin::everything::server();
        check(&everything, era, &[("add", json!({"a": 2, "b": 3.5}))]).await;
    }
}
