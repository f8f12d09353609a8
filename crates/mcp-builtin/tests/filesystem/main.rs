//! The file system server over a real session with `mcp-client`, in both
//! eras (2025-11-25 with `initialize`, 2026-07-28 stateless), on a fixture
//! tree in a temporary directory: containment (each escape it blocks has a
//! test named for it), the tools, resources and change notifications.

mod containment;
mod resources;
mod tools;

#[path = "../support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_builtin::filesystem::{Config, Limits};
use mcp_client::{Client, EraChoice, RequestOptions};
use mcp_schema::{
    CallToolResult, CompleteResult, ContentBlock, ProtocolVersion, ResourceContents, Root,
};
use serde_json::{Value, json};
use support::serve_http;

const ERAS: [ProtocolVersion; 2] = [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28];

/// The fixture: `data/` is served; `data2/` beside it (a shared prefix)
/// and `outside/` are not.
struct Fixture {
    _temp: tempfile::TempDir,
    base: PathBuf,
    data: PathBuf,
}

fn write(path: &Path, content: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn fixture() -> Fixture {
    let temp = tempfile::tempdir().unwrap();
    let base = temp.path().canonicalize().unwrap();
    let data = base.join("data");
    write(&data.join("hello.txt"), b"hello\nworld\n");
    write(&data.join("lines.txt"), b"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
    write(
        &data.join("src/main.rs"),
        b"fn main() {\n    let greeting = \"hi\";\n    println!(\"{greeting}\");\n}\n",
    );
    write(
        &data.join("src/lib.rs"),
        b"pub fn add(a: u8, b: u8) -> u8 {\n    a + b\n}\n",
    );
    write(&data.join("notes/a.md"), b"# A\nTODO: write more\n");
    write(&data.join("notes/deep/b.md"), b"# B\n");
    write(&data.join("big.bin"), &[0u8; 3000]);
    write(&data.join("pixel.png"), b"\x89PNG\r\n\x1a\nfake");
    write(&data.join(".env"), b"SECRET=inside-env");
    write(&data.join("keys/id_rsa"), b"PRIVATE KEY");
    write(&data.join(".ssh/config"), b"Host *");
    write(&data.join("swap/file.txt"), b"inside");
    write(&base.join("data2/secret.txt"), b"outside-secret");
    write(&base.join("outside/file.txt"), b"OUTSIDE-CONTENT");
    std::os::unix::fs::symlink(base.join("data2/secret.txt"), data.join("link_out")).unwrap();
    std::os::unix::fs::symlink(base.join("outside"), data.join("dir_out")).unwrap();
    std::os::unix::fs::symlink("hello.txt", data.join("link_in")).unwrap();
    std::os::unix::fs::symlink(".env", data.join("innocent.txt")).unwrap();
    Fixture {
        _temp: temp,
        base,
        data,
    }
}

type Seen = Arc<Mutex<Vec<(String, String)>>>;

async fn connect_with(config: Config, era: ProtocolVersion) -> (Client, Seen) {
    connect_with_roots(config, era, None).await
}

async fn connect_with_roots(
    config: Config,
    era: ProtocolVersion,
    roots: Option<Vec<Root>>,
) -> (Client, Seen) {
    let server = mcp_builtin::filesystem::server(config).expect("server");
    let (server_side, client_side) = mcp_core::Transport::pair();
    let _session = mcp_core::serve(
        server_side,
        Arc::new(server.clone()),
        server.session_config(),
    );
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let mut builder = Client::builder("fs-tests", "1.0.0");
    if let Some(roots) = roots {
        builder = builder.roots(roots);
    }
    let client = tokio::time::timeout(
        Duration::from_secs(10),
        builder
            .era(EraChoice::Pinned(era))
            .on_notification(move |n| {
                let params = n
                    .params
                    .as_ref()
                    .map(|p| p.get().to_owned())
                    .unwrap_or_default();
                log.lock().unwrap().push((n.method.clone(), params));
            })
            .connect(client_side),
    )
    .await
    .expect("connect in time")
    .expect("connect");
    assert_eq!(client.revision(), era);
    (client, seen)
}

async fn connect(fixture: &Fixture, era: ProtocolVersion) -> Client {
    connect_with(Config::new([&fixture.data]), era).await.0
}

async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    tokio::time::timeout(Duration::from_secs(20), client.call_tool(tool, args))
        .await
        .unwrap_or_else(|_| panic!("{tool} in time"))
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Asserts the call failed as a tool error and never shows `forbidden`
/// (when not empty).
async fn refused(client: &Client, tool: &str, args: Value, forbidden: &str) -> String {
    let result = call(client, tool, args.clone()).await;
    let message = text(&result);
    assert!(
        result.is_error(),
        "{tool} {args} was not refused: {message}"
    );
    assert!(
        forbidden.is_empty() || !message.contains(forbidden),
        "{tool} {args} leaked: {message}"
    );
    message
}
