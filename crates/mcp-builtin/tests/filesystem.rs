//! The file system server over a real session with `mcp-client`, in both
//! eras (2025-11-25 with `initialize`, 2026-07-28 stateless), on a fixture
//! tree in a temporary directory: containment (each escape it blocks has a
//! test named for it), the tools, resources and change notifications.

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

#[tokio::test]
async fn cve_2025_53110_sibling_directory_with_a_shared_prefix() {
    let f = fixture();
    for era in ERAS {
        let client = connect(&f, era).await;
        let sibling = f.base.join("data2/secret.txt");
        let message = refused(
            &client,
            "read_text_file",
            json!({"path": sibling}),
            "outside-secret",
        )
        .await;
        assert!(
            message.contains("outside the allowed directories"),
            "{message}"
        );
        refused(
            &client,
            "list_directory",
            json!({"path": f.base.join("data2")}),
            "secret.txt",
        )
        .await;
    }
}

#[tokio::test]
async fn cve_2025_53109_symlink_pointing_outside() {
    let f = fixture();
    for era in ERAS {
        let client = connect(&f, era).await;
        refused(
            &client,
            "read_text_file",
            json!({"path": "link_out"}),
            "outside-secret",
        )
        .await;
        refused(
            &client,
            "read_text_file",
            json!({"path": f.data.join("dir_out/file.txt")}),
            "OUTSIDE-CONTENT",
        )
        .await;
        refused(
            &client,
            "list_directory",
            json!({"path": "dir_out"}),
            "file.txt",
        )
        .await;
        let error = client
            .read_resource(&format!("file://{}", f.data.join("link_out").display()))
            .await
            .expect_err("a link pointing out is not a resource");
        assert_eq!(error.rpc().unwrap().code, era.resource_not_found_code());
        // A link that stays inside is followed.
        let inside = call(&client, "read_text_file", json!({"path": "link_in"})).await;
        assert_eq!(text(&inside), "hello\nworld\n");
    }
}

#[tokio::test]
async fn a_symlink_swapped_after_the_check_is_not_followed() {
    let f = fixture();
    let client = connect(&f, ProtocolVersion::V2026_07_28).await;
    let path = f.data.join("swap/file.txt");
    let first = call(&client, "read_text_file", json!({"path": path})).await;
    assert_eq!(text(&first), "inside");

    // The directory becomes a link to the outside between two reads.
    let swap = f.data.join("swap");
    let parked = f.data.join("swap.parked");
    std::fs::rename(&swap, &parked).unwrap();
    std::os::unix::fs::symlink(f.base.join("outside"), &swap).unwrap();
    refused(
        &client,
        "read_text_file",
        json!({"path": path}),
        "OUTSIDE-CONTENT",
    )
    .await;

    // And it flips back and forth while reads go on: every read gives the
    // inside content or a refusal, never the outside content.
    std::fs::remove_file(&swap).unwrap();
    std::fs::rename(&parked, &swap).unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flipper = {
        let (swap, parked, outside, stop) = (
            swap.clone(),
            parked.clone(),
            f.base.join("outside"),
            Arc::clone(&stop),
        );
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::fs::rename(&swap, &parked).unwrap();
                std::os::unix::fs::symlink(&outside, &swap).unwrap();
                std::fs::remove_file(&swap).unwrap();
                std::fs::rename(&parked, &swap).unwrap();
            }
        })
    };
    let mut inside_reads = 0;
    for _ in 0..200 {
        let result = call(&client, "read_text_file", json!({"path": path})).await;
        let body = text(&result);
        assert!(
            !body.contains("OUTSIDE-CONTENT"),
            "read the outside through a swapped link: {body}"
        );
        if !result.is_error() {
            assert_eq!(body, "inside");
            inside_reads += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    flipper.join().unwrap();
    let last = call(&client, "read_text_file", json!({"path": path})).await;
    assert_eq!(text(&last), "inside", "after {inside_reads} inside reads");
}

#[tokio::test]
async fn dot_dot_cannot_escape() {
    let f = fixture();
    for era in ERAS {
        let client = connect(&f, era).await;
        for path in [
            "../data2/secret.txt".to_owned(),
            "notes/../../data2/secret.txt".to_owned(),
            format!("{}/../data2/secret.txt", f.data.display()),
            "..".to_owned(),
        ] {
            refused(
                &client,
                "read_text_file",
                json!({"path": path}),
                "outside-secret",
            )
            .await;
        }
        refused(&client, "list_directory", json!({"path": ".."}), "data2").await;
        refused(
            &client,
            "search_files",
            json!({"path": "..", "pattern": "**"}),
            "secret",
        )
        .await;
    }
}

#[tokio::test]
async fn absolute_path_outside_is_refused() {
    let f = fixture();
    for era in ERAS {
        let client = connect(&f, era).await;
        refused(
            &client,
            "read_text_file",
            json!({"path": "/etc/passwd"}),
            "root:",
        )
        .await;
        refused(
            &client,
            "get_file_info",
            json!({"path": f.base.join("outside/file.txt")}),
            "size",
        )
        .await;
        let error = client
            .read_resource("file:///etc/passwd")
            .await
            .expect_err("outside is not a resource");
        assert_eq!(error.rpc().unwrap().code, era.resource_not_found_code());
    }
}

#[tokio::test]
async fn secret_files_are_refused_by_default() {
    let f = fixture();
    for era in ERAS {
        let client = connect(&f, era).await;
        for path in [".env", "keys/id_rsa", ".ssh/config", "innocent.txt"] {
            let message = refused(&client, "read_text_file", json!({"path": path}), "SECRET").await;
            assert!(message.contains("deny-list"), "{message}");
        }
        refused(&client, "list_directory", json!({"path": ".ssh"}), "config").await;
        let searched = call(
            &client,
            "search_content",
            json!({"path": ".", "pattern": "SECRET|PRIVATE|Host"}),
        )
        .await;
        assert_eq!(text(&searched), "No matches found");
        let error = client
            .read_resource(&format!("file://{}/.env", f.data.display()))
            .await
            .expect_err("a secret is not a resource");
        assert_eq!(error.rpc().unwrap().code, era.resource_not_found_code());
        let listed = client.list_all_resources().await.unwrap();
        assert!(
            listed.iter().all(|r| !r.uri.ends_with(".env")),
            "{listed:?}"
        );
    }
    // The operator can allow them, or deny more.
    let (client, _) = connect_with(
        Config::new([&f.data]).allow_secrets(true),
        ProtocolVersion::V2026_07_28,
    )
    .await;
    let env = call(&client, "read_text_file", json!({"path": ".env"})).await;
    assert_eq!(text(&env), "SECRET=inside-env");
    let (client, _) = connect_with(
        Config::new([&f.data]).deny("*.md"),
        ProtocolVersion::V2025_11_25,
    )
    .await;
    refused(
        &client,
        "read_text_file",
        json!({"path": "notes/a.md"}),
        "TODO",
    )
    .await;
}

#[tokio::test]
async fn read_only_by_default_and_every_official_tool_is_there() {
    let f = fixture();
    let official_reads = [
        "read_file",
        "read_text_file",
        "read_media_file",
        "read_multiple_files",
        "list_directory",
        "list_directory_with_sizes",
        "directory_tree",
        "search_files",
        "get_file_info",
        "list_allowed_directories",
    ];
    let official_writes = ["write_file", "edit_file", "create_directory", "move_file"];
    for era in ERAS {
        let client = connect(&f, era).await;
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        for name in official_reads.iter().chain(["search_content"].iter()) {
            assert!(names.contains(name), "{name} missing from {names:?}");
        }
        for name in official_writes
            .iter()
            .chain(["copy_file", "delete_file"].iter())
        {
            assert!(!names.contains(name), "{name} listed without --write");
        }
        for tool in &tools {
            let hints = tool.annotations.as_ref().expect("annotations");
            assert_eq!(hints.read_only_hint, Some(true), "{}", tool.name);
            assert_eq!(hints.open_world_hint, Some(false), "{}", tool.name);
            assert!(tool.title.is_some(), "{}", tool.name);
        }

        let (client, _) = connect_with(Config::new([&f.data]).write(true), era).await;
        let tools = client.list_all_tools().await.unwrap();
        let hint = |name: &str| {
            let tool = tools
                .iter()
                .find(|t| t.name == name)
                .unwrap_or_else(|| panic!("{name}"));
            let a = tool.annotations.clone().unwrap();
            (a.read_only_hint, a.destructive_hint, a.idempotent_hint)
        };
        assert_eq!(hint("write_file"), (Some(false), Some(true), Some(true)));
        assert_eq!(hint("edit_file"), (Some(false), Some(true), Some(false)));
        assert_eq!(
            hint("create_directory"),
            (Some(false), Some(false), Some(true))
        );
        assert_eq!(hint("move_file"), (Some(false), Some(true), Some(true)));
        assert_eq!(hint("delete_file"), (Some(false), Some(true), Some(true)));
        assert_eq!(hint("copy_file"), (Some(false), Some(false), Some(true)));
    }
}

#[tokio::test]
async fn reading_text_by_lines_with_a_cap_that_says_where_to_continue() {
    let f = fixture();
    let limits = Limits {
        max_read_bytes: 8,
        ..Limits::default()
    };
    for era in ERAS {
        let client = connect(&f, era).await;
        let head = call(
            &client,
            "read_text_file",
            json!({"path": "lines.txt", "head": 2}),
        )
        .await;
        assert_eq!(text(&head), "1\n2\n");
        let tail = call(
            &client,
            "read_text_file",
            json!({"path": "lines.txt", "tail": 2}),
        )
        .await;
        assert_eq!(text(&tail), "9\n10\n");
        let range = call(
            &client,
            "read_text_file",
            json!({"path": "lines.txt", "offset": 4, "limit": 3}),
        )
        .await;
        assert_eq!(text(&range), "4\n5\n6\n");
        if era.has_structured_output() {
            let structured = range.structured_content.clone().unwrap();
            assert_eq!(structured["startLine"], 4);
            assert_eq!(structured["endLine"], 6);
            assert_eq!(structured["truncated"], false);
        }
        refused(
            &client,
            "read_text_file",
            json!({"path": "lines.txt", "head": 1, "tail": 1}),
            "1\n",
        )
        .await;
        let deprecated = call(&client, "read_file", json!({"path": "hello.txt"})).await;
        assert_eq!(text(&deprecated), "hello\nworld\n");

        let (capped, _) = connect_with(Config::new([&f.data]).limits(limits.clone()), era).await;
        let cut = call(&capped, "read_text_file", json!({"path": "lines.txt"})).await;
        let body = text(&cut);
        assert!(body.starts_with("1\n2\n3\n4\n"), "{body}");
        assert!(body.contains("continue with offset=5"), "{body}");
        let next = call(
            &capped,
            "read_text_file",
            json!({"path": "lines.txt", "offset": 5}),
        )
        .await;
        assert!(text(&next).starts_with("5\n6\n7\n8\n"), "{}", text(&next));
    }
}

#[tokio::test]
async fn media_several_files_and_file_info() {
    let f = fixture();
    for era in ERAS {
        let client = connect(&f, era).await;
        let media = call(&client, "read_media_file", json!({"path": "pixel.png"})).await;
        match &media.content[0] {
            ContentBlock::Image(image) => {
                assert_eq!(image.mime_type, "image/png");
                assert_eq!(image.data, "iVBORw0KGgpmYWtl");
            }
            other => panic!("not an image: {other:?}"),
        }
        let many = call(
            &client,
            "read_multiple_files",
            json!({"paths": ["hello.txt", "missing.txt", ".env"]}),
        )
        .await;
        let body = text(&many);
        assert!(
            body.starts_with("hello.txt:\nhello\nworld\n\n\n---\nmissing.txt: Error - "),
            "{body}"
        );
        assert!(
            body.contains(".env: Error - ") && !body.contains("SECRET"),
            "{body}"
        );
        let info = call(&client, "get_file_info", json!({"path": "hello.txt"})).await;
        let body = text(&info);
        assert!(body.starts_with("size: 12\n"), "{body}");
        assert!(body.contains("isFile: true"), "{body}");
        let allowed = call(&client, "list_allowed_directories", json!({})).await;
        assert_eq!(
            text(&allowed),
            format!("Allowed directories:\n{}", f.data.display())
        );
    }
}

#[tokio::test]
async fn listing_tree_and_searches() {
    let f = fixture();
    for era in ERAS {
        let client = connect(&f, era).await;
        let listing = call(&client, "list_directory", json!({"path": "notes"})).await;
        assert_eq!(text(&listing), "[FILE] a.md\n[DIR] deep");
        let sized = call(
            &client,
            "list_directory_with_sizes",
            json!({"path": "src", "sortBy": "size"}),
        )
        .await;
        let body = text(&sized);
        let lines: Vec<&str> = body.lines().collect();
        assert!(lines[0].starts_with("[FILE] main.rs"), "{body}");
        assert!(lines[1].starts_with("[FILE] lib.rs"), "{body}");
        assert!(body.contains("Total: 2 files, 0 directories"), "{body}");

        let tree = call(&client, "directory_tree", json!({"path": "notes"})).await;
        let parsed: Value = serde_json::from_str(&text(&tree)).unwrap();
        assert_eq!(
            parsed,
            json!([
                {"name": "a.md", "type": "file"},
                {"name": "deep", "type": "directory", "children": [{"name": "b.md", "type": "file"}]}
            ])
        );
        let shallow = call(
            &client,
            "directory_tree",
            json!({"path": "notes", "maxDepth": 1}),
        )
        .await;
        assert!(
            text(&shallow).contains("\"truncated\": true"),
            "{}",
            text(&shallow)
        );

        let found = call(
            &client,
            "search_files",
            json!({"path": ".", "pattern": "**/*.md"}),
        )
        .await;
        let mut paths: Vec<String> = text(&found).lines().map(str::to_owned).collect();
        paths.sort();
        assert_eq!(
            paths,
            [f.data.join("notes/a.md"), f.data.join("notes/deep/b.md")]
                .map(|p| p.display().to_string())
        );
        let capped = call(
            &client,
            "search_files",
            json!({"path": ".", "pattern": "**/*.md", "maxResults": 1}),
        )
        .await;
        assert!(text(&capped).contains("[truncated"), "{}", text(&capped));
        let exact = call(
            &client,
            "search_files",
            json!({"path": ".", "pattern": "**/*.md", "maxResults": 2}),
        )
        .await;
        assert!(!text(&exact).contains("[truncated"), "{}", text(&exact));
        let top = call(
            &client,
            "search_files",
            json!({"path": ".", "pattern": "*.md"}),
        )
        .await;
        assert_eq!(text(&top), "No matches found");

        let grep = call(
            &client,
            "search_content",
            json!({"path": "src", "pattern": "greeting", "literal": true, "contextLines": 1}),
        )
        .await;
        let main = f.data.join("src/main.rs").display().to_string();
        assert_eq!(
            text(&grep),
            format!(
                "{main}-1-fn main() {{\n{main}:2:    let greeting = \"hi\";\n{main}:3:    println!(\"{{greeting}}\");\n{main}-4-}}\n"
            )
        );
        let capped = call(
            &client,
            "search_content",
            json!({"path": ".", "pattern": "^", "maxResults": 3}),
        )
        .await;
        let body = text(&capped);
        assert!(body.contains("[truncated"), "{body}");
        if era.has_structured_output() {
            assert_eq!(capped.structured_content.as_ref().unwrap()["matches"], 3);
        }
    }
}

#[tokio::test]
async fn writes_are_atomic_and_edits_explain_themselves() {
    let f = fixture();
    for era in ERAS {
        let (client, _) = connect_with(Config::new([&f.data]).write(true), era).await;
        let written = call(
            &client,
            "write_file",
            json!({"path": "new/out.txt", "content": "x"}),
        )
        .await;
        assert!(written.is_error(), "the parent does not exist yet");
        call(&client, "create_directory", json!({"path": "new"})).await;
        call(
            &client,
            "write_file",
            json!({"path": "new/out.txt", "content": "first\nsecond\n"}),
        )
        .await;
        assert_eq!(
            std::fs::read_to_string(f.data.join("new/out.txt")).unwrap(),
            "first\nsecond\n"
        );

        // A symlink at the target is replaced, never written through.
        let link = f.data.join("new/link.txt");
        std::os::unix::fs::symlink(f.base.join("outside/file.txt"), &link).unwrap();
        call(
            &client,
            "write_file",
            json!({"path": "new/link.txt", "content": "replaced"}),
        )
        .await;
        assert_eq!(
            std::fs::read_to_string(f.base.join("outside/file.txt")).unwrap(),
            "OUTSIDE-CONTENT"
        );
        assert!(
            !std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "replaced");
        refused(
            &client,
            "write_file",
            json!({"path": "../outside/file.txt", "content": "x"}),
            "",
        )
        .await;
        refused(
            &client,
            "write_file",
            json!({"path": ".env", "content": "x"}),
            "",
        )
        .await;

        let dry = call(
            &client,
            "edit_file",
            json!({"path": "new/out.txt", "edits": [{"oldText": "second", "newText": "2nd"}], "dryRun": true}),
        )
        .await;
        assert!(text(&dry).contains("-second\n+2nd\n"), "{}", text(&dry));
        assert_eq!(
            std::fs::read_to_string(f.data.join("new/out.txt")).unwrap(),
            "first\nsecond\n"
        );
        let failed = call(
            &client,
            "edit_file",
            json!({"path": "new/out.txt", "edits": [
                {"oldText": "first", "newText": "1st"},
                {"oldText": "second\nthird", "newText": "x"}
            ]}),
        )
        .await;
        assert!(failed.is_error());
        assert!(
            text(&failed).contains("edit 2 of 2 did not match"),
            "{}",
            text(&failed)
        );
        assert_eq!(
            std::fs::read_to_string(f.data.join("new/out.txt")).unwrap(),
            "first\nsecond\n"
        );
        call(
            &client,
            "edit_file",
            json!({"path": "new/out.txt", "edits": [{"oldText": "  second  ", "newText": "2nd"}]}),
        )
        .await;
        assert_eq!(
            std::fs::read_to_string(f.data.join("new/out.txt")).unwrap(),
            "first\n2nd\n"
        );

        call(
            &client,
            "copy_file",
            json!({"source": "new/out.txt", "destination": "new/copy.txt"}),
        )
        .await;
        refused(
            &client,
            "move_file",
            json!({"source": "new/out.txt", "destination": "new/copy.txt"}),
            "",
        )
        .await;
        call(
            &client,
            "move_file",
            json!({"source": "new/copy.txt", "destination": "new/moved.txt"}),
        )
        .await;
        assert!(!f.data.join("new/copy.txt").exists());
        assert_eq!(
            std::fs::read_to_string(f.data.join("new/moved.txt")).unwrap(),
            "first\n2nd\n"
        );
        refused(&client, "delete_file", json!({"path": "new"}), "").await;
        refused(&client, "delete_file", json!({"path": f.data}), "").await;
        call(
            &client,
            "delete_file",
            json!({"path": "new", "recursive": true}),
        )
        .await;
        assert!(!f.data.join("new").exists());
    }
}

#[tokio::test]
async fn a_move_removes_its_source_and_a_repeated_move_or_copy_changes_nothing() {
    let f = fixture();
    let (client, _) = connect_with(
        Config::new([&f.data]).write(true),
        ProtocolVersion::V2025_11_25,
    )
    .await;
    let tools = client.list_all_tools().await.unwrap();
    let hint = |name: &str| {
        let a = tools
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.annotations.clone())
            .unwrap_or_else(|| panic!("{name} is annotated"));
        (a.destructive_hint, a.idempotent_hint)
    };
    assert_eq!(hint("move_file"), (Some(true), Some(true)));
    assert_eq!(hint("copy_file"), (Some(false), Some(true)));

    let moved = json!({"source": "hello.txt", "destination": "moved.txt"});
    let done = call(&client, "move_file", moved.clone()).await;
    assert!(!done.is_error(), "{}", text(&done));
    assert!(!f.data.join("hello.txt").exists(), "the source is gone");
    std::fs::write(f.data.join("moved.txt"), "changed since").unwrap();
    refused(&client, "move_file", moved, "").await;
    assert_eq!(
        std::fs::read_to_string(f.data.join("moved.txt")).unwrap(),
        "changed since"
    );

    let copied = json!({"source": "lines.txt", "destination": "copy.txt"});
    let done = call(&client, "copy_file", copied.clone()).await;
    assert!(!done.is_error(), "{}", text(&done));
    std::fs::write(f.data.join("copy.txt"), "changed since").unwrap();
    refused(&client, "copy_file", copied, "").await;
    assert_eq!(
        std::fs::read_to_string(f.data.join("copy.txt")).unwrap(),
        "changed since"
    );
}

#[tokio::test]
async fn files_and_directories_are_resources() {
    let f = fixture();
    for era in ERAS {
        let (client, _) = connect_with(
            Config::new([&f.data]).limits(Limits {
                max_listed: 5,
                ..Limits::default()
            }),
            era,
        )
        .await;
        let listed = client.list_all_resources().await.unwrap();
        assert_eq!(listed.len(), 5, "{listed:?}");
        assert_eq!(listed[0].uri, format!("file://{}", f.data.display()));
        assert_eq!(listed[0].mime_type.as_deref(), Some("inode/directory"));

        let uri = format!("file://{}/hello.txt", f.data.display());
        let read = client.read_resource(&uri).await.unwrap();
        let ResourceContents::Text(file) = &read.contents[0] else {
            panic!("{read:?}")
        };
        assert_eq!(file.text, "hello\nworld\n");
        assert_eq!(file.mime_type.as_deref(), Some("text/plain"));

        let nested = client
            .read_resource(&format!("file://{}/src/main.rs", f.data.display()))
            .await
            .unwrap();
        assert!(
            matches!(&nested.contents[0], ResourceContents::Text(t) if t.text.starts_with("fn main"))
        );
        let dir = client
            .read_resource(&format!("file://{}/notes", f.data.display()))
            .await
            .unwrap();
        let ResourceContents::Text(listing) = &dir.contents[0] else {
            panic!()
        };
        assert_eq!(listing.mime_type.as_deref(), Some("inode/directory"));
        assert_eq!(listing.text, "[FILE] a.md\n[DIR] deep\n");
        let binary = client
            .read_resource(&format!("file://{}/big.bin", f.data.display()))
            .await
            .unwrap();
        assert!(
            matches!(&binary.contents[0], ResourceContents::Blob(b) if b.blob.starts_with("AAAA"))
        );
        let missing = client
            .read_resource(&format!("file://{}/missing.txt", f.data.display()))
            .await
            .expect_err("missing");
        assert_eq!(missing.rpc().unwrap().code, era.resource_not_found_code());

        let templates = client.list_all_resource_templates().await.unwrap();
        assert_eq!(templates[0].uri_template, "file:///{+path}");
        let typed = format!("{}/no", f.data.display())
            .trim_start_matches('/')
            .to_owned();
        let completed: CompleteResult = client
            .request(
                "completion/complete",
                &json!({
                    "ref": {"type": "ref/resource", "uri": "file:///{+path}"},
                    "argument": {"name": "path", "value": typed}
                }),
                RequestOptions::new(),
            )
            .await
            .unwrap();
        assert_eq!(completed.completion.values, [format!("{typed}tes/")]);
    }
}

#[tokio::test]
async fn watched_changes_reach_subscribers() {
    let f = fixture();
    let uri = format!("file://{}/hello.txt", f.data.display());
    for era in ERAS {
        let (client, seen) = connect_with(Config::new([&f.data]).watch(true), era).await;
        let listening = if era.is_legacy() {
            client.subscribe_resource(&uri).await.unwrap();
            None
        } else {
            let filter = mcp_schema::SubscriptionFilter {
                resources_list_changed: Some(true),
                resource_subscriptions: Some(vec![uri.clone()]),
                ..Default::default()
            };
            let client = client.clone();
            let task = tokio::spawn(async move { client.listen(filter).await });
            wait_for(&seen, "notifications/subscriptions/acknowledged", "").await;
            Some(task)
        };
        std::fs::write(f.data.join("hello.txt"), format!("changed in {era}\n")).unwrap();
        wait_for(&seen, "notifications/resources/updated", &uri).await;
        std::fs::write(f.data.join(format!("added-{era}.txt")), "new").unwrap();
        wait_for(&seen, "notifications/resources/list_changed", "").await;
        let listed = client.list_all_resources().await.unwrap();
        assert!(
            listed
                .iter()
                .any(|r| r.uri.ends_with(&format!("added-{era}.txt")))
        );
        // A secret changing tells nobody.
        assert!(
            !seen.lock().unwrap().iter().any(|(_, p)| p.contains(".env")),
            "{:?}",
            seen.lock().unwrap()
        );
        if let Some(task) = listening {
            task.abort();
        }
    }
}

#[tokio::test]
async fn a_subscription_alone_turns_watching_on_and_off() {
    let f = fixture();
    let uri = format!("file://{}/hello.txt", f.data.display());
    // No --watch: only the subscription makes changes known.
    let (client, seen) = connect_with(Config::new([&f.data]), ProtocolVersion::V2025_11_25).await;
    client.subscribe_resource(&uri).await.unwrap();
    std::fs::write(f.data.join("hello.txt"), "changed while subscribed\n").unwrap();
    wait_for(&seen, "notifications/resources/updated", &uri).await;
    client.unsubscribe_resource(&uri).await.unwrap();
    // Unsubscribed, the watcher is gone: a change is not noticed, though a
    // fresh subscription (after it) would be.
    seen.lock().unwrap().clear();
    std::fs::write(f.data.join("hello.txt"), "changed after\n").unwrap();
    client.subscribe_resource(&uri).await.unwrap();
    std::fs::write(f.data.join("hello.txt"), "changed again\n").unwrap();
    wait_for(&seen, "notifications/resources/updated", &uri).await;
}

/// Waits (up to 20 s) for a notification `method` whose params contain `needle`.
async fn wait_for(seen: &Seen, method: &str, needle: &str) {
    let found = async {
        loop {
            if seen
                .lock()
                .unwrap()
                .iter()
                .any(|(m, p)| m == method && p.contains(needle))
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), found)
        .await
        .unwrap_or_else(|_| panic!("no {method} with {needle}: {:?}", seen.lock().unwrap()));
}

#[tokio::test]
async fn client_roots_narrow_the_scope_and_never_widen_it() {
    let f = fixture();
    let root = |path: &Path| Root::new(format!("file://{}", path.display()), None);
    for era in ERAS {
        // A root inside: only that part is reachable.
        let (client, _) = connect_with_roots(
            Config::new([&f.data]),
            era,
            Some(vec![root(&f.data.join("notes"))]),
        )
        .await;
        let inside = call(&client, "read_text_file", json!({"path": "notes/a.md"})).await;
        assert!(text(&inside).contains("TODO"), "{}", text(&inside));
        refused(
            &client,
            "read_text_file",
            json!({"path": "hello.txt"}),
            "world",
        )
        .await;
        let allowed = call(&client, "list_allowed_directories", json!({})).await;
        assert_eq!(
            text(&allowed),
            format!("Allowed directories:\n{}", f.data.join("notes").display())
        );
        let error = client
            .read_resource(&format!("file://{}/hello.txt", f.data.display()))
            .await
            .expect_err("outside the roots is not a resource");
        assert_eq!(error.rpc().unwrap().code, era.resource_not_found_code());

        // A root outside grants nothing, not even what it names.
        let (client, _) = connect_with_roots(
            Config::new([&f.data]),
            era,
            Some(vec![root(&f.base.join("outside"))]),
        )
        .await;
        refused(
            &client,
            "read_text_file",
            json!({"path": "hello.txt"}),
            "world",
        )
        .await;
        refused(
            &client,
            "read_text_file",
            json!({"path": f.base.join("outside/file.txt")}),
            "OUTSIDE-CONTENT",
        )
        .await;

        // A root wider than the operator's directory grants that directory only.
        let (client, _) =
            connect_with_roots(Config::new([&f.data]), era, Some(vec![root(&f.base)])).await;
        let read = call(&client, "read_text_file", json!({"path": "hello.txt"})).await;
        assert_eq!(text(&read), "hello\nworld\n");
        refused(
            &client,
            "read_text_file",
            json!({"path": f.base.join("outside/file.txt")}),
            "OUTSIDE-CONTENT",
        )
        .await;
    }
}

/// Serves the server over Streamable HTTP on a free loopback port.
async fn on_http(config: Config) -> String {
    let server = mcp_builtin::filesystem::server(config).expect("server");
    serve_http(&server).await
}

#[tokio::test]
async fn over_streamable_http_in_both_eras() {
    let f = fixture();
    let url = on_http(Config::new([&f.data])).await;
    for era in ERAS {
        let transport = mcp_http::client::connect(mcp_http::HttpClientConfig::new(url.clone()))
            .await
            .unwrap()
            .into_transport();
        let client = tokio::time::timeout(
            Duration::from_secs(10),
            Client::builder("fs-tests", "1.0.0")
                .era(EraChoice::Pinned(era))
                .connect(transport),
        )
        .await
        .expect("connect in time")
        .expect("connect");
        assert_eq!(client.revision(), era);
        let read = call(&client, "read_text_file", json!({"path": "hello.txt"})).await;
        assert_eq!(text(&read), "hello\nworld\n");
        refused(
            &client,
            "read_text_file",
            json!({"path": "../data2/secret.txt"}),
            "outside-secret",
        )
        .await;
        let resource = client
            .read_resource(&format!("file://{}/notes/a.md", f.data.display()))
            .await
            .unwrap();
        let ResourceContents::Text(markdown) = &resource.contents[0] else {
            panic!("{resource:?}")
        };
        assert_eq!(markdown.mime_type.as_deref(), Some("text/markdown"));
        assert!(markdown.text.contains("TODO"));
    }
}
