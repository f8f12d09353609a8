//! `mcp serve filesystem` over stdio, driven by `mcp tool` and `mcp read`:
//! the real binary on both ends, on a directory made by the test.

mod support;

use support::{MCP, mcp, stderr, stdout};

/// A directory holding `hello.txt` and a secret `.env`, removed on drop.
struct Tree(std::path::PathBuf);

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tree(name: &str) -> Tree {
    let dir = std::env::temp_dir().join(format!("mcp-serve-fs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hello.txt"), "hello from the tree\n").unwrap();
    std::fs::write(dir.join(".env"), "TOKEN=never-shown").unwrap();
    Tree(dir.canonicalize().unwrap())
}

#[tokio::test]
async fn serve_filesystem_reads_refuses_secrets_and_writes_only_when_allowed() {
    let tree = tree("rw");
    let dir = tree.0.display().to_string();
    let read_only = format!("{MCP} serve filesystem {dir}");

    let output = mcp(&["tool", "-s", &read_only, "read_text_file", "path=hello.txt"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("hello from the tree"),
        "{}",
        stdout(&output)
    );

    let output = mcp(&["read", "-s", &read_only, &format!("file://{dir}/hello.txt")]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "hello from the tree\n");

    let output = mcp(&["tool", "-s", &read_only, "read_text_file", "path=.env"]).await;
    let both = format!("{}{}", stdout(&output), stderr(&output));
    assert!(!both.contains("never-shown"), "{both}");
    assert!(both.contains("deny-list"), "{both}");

    let output = mcp(&[
        "tool",
        "-s",
        &read_only,
        "write_file",
        "path=new.txt",
        "content=x",
    ])
    .await;
    assert!(
        !output.status.success(),
        "write_file exists without --write"
    );
    assert!(!tree.0.join("new.txt").exists());

    let writable = format!("{MCP} serve filesystem {dir} --write");
    let output = mcp(&[
        "tool",
        "-s",
        &writable,
        "write_file",
        "path=new.txt",
        "content=written",
    ])
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(tree.0.join("new.txt")).unwrap(),
        "written"
    );
}
