//! The tools: reading, listing, searching, writing, editing, moving.

use super::*;

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
