//! `mcp serve prompts DIR` as a real child process over stdio, driven by
//! `mcp prompts` and `mcp prompt NAME k=v`: a library of two versions of a
//! prompt and a broken file, and the built-in default library.

mod support;

use support::{MCP, mcp, stderr, stdout};

/// A prompt directory under the system's temporary directory, removed
/// when dropped.
struct PromptDir(std::path::PathBuf);

impl PromptDir {
    fn new(name: &str) -> PromptDir {
        let dir =
            std::env::temp_dir().join(format!("mcp-serve-prompts-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        PromptDir(dir)
    }

    fn write(&self, file: &str, text: &str) {
        std::fs::write(self.0.join(file), text).expect("a prompt file");
    }

    /// `mcp serve prompts DIR`, as a `--server` command line.
    fn server(&self) -> String {
        format!("{MCP} serve prompts {}", self.0.display())
    }
}

impl Drop for PromptDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const GREETING_1_9: &str = "---
name: greeting
version: 1.9.0
description: Greets someone (old).
arguments:
  - name: who
    required: true
---
Hello {{who}}.
";

const GREETING_1_10: &str = "---
name: greeting
version: 1.10.0
description: Greets someone, listing their topics.
arguments:
  - name: who
    description: Whom to greet.
    required: true
  - name: topics
    description: What to talk about, as a JSON array.
---
Hi {{who}}!
{{#each topics}}
- {{this}}
{{/each}}
";

#[tokio::test]
async fn serve_prompts_lists_and_renders_versions_of_a_directory() {
    let dir = PromptDir::new("versions");
    dir.write("greeting-a.md", GREETING_1_10);
    dir.write("greeting-b.md", GREETING_1_9);
    dir.write("broken.md", "---\nname: [\n---\n");
    let server = dir.server();

    let output = mcp(&["prompts", "-s", &server]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let table = stdout(&output);
    let line = table
        .lines()
        .find(|l| l.starts_with("greeting "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(line.contains("who* topics version"), "{line}");
    assert!(
        line.contains("Greets someone, listing their topics."),
        "{line}"
    );

    let output = mcp(&[
        "prompt",
        "greeting",
        "who=Ada",
        r#"topics=["engines", "poetry"]"#,
        "-s",
        &server,
    ])
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).ends_with("[user]\nHi Ada!\n- engines\n- poetry\n"),
        "{}",
        stdout(&output)
    );

    let output = mcp(&[
        "prompt",
        "greeting",
        "who=Ada",
        "version=1.9.0",
        "-s",
        &server,
    ])
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).ends_with("[user]\nHello Ada.\n"),
        "{}",
        stdout(&output)
    );

    let output = mcp(&[
        "prompt",
        "greeting",
        "who=Ada",
        "version=3.0.0",
        "-s",
        &server,
    ])
    .await;
    assert!(!output.status.success(), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("1.10.0, 1.9.0"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn serve_prompts_without_a_directory_serves_the_default_library() {
    let server = format!("{MCP} serve prompts");
    let output = mcp(&["prompts", "-s", &server]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let table = stdout(&output);
    for name in [
        "code-function",
        "data-analysis-report",
        "email-reply",
        "product-description",
    ] {
        assert!(table.contains(name), "{name}: {table}");
    }
    let output = mcp(&[
        "prompt",
        "email-reply",
        "sender=Alice",
        "email=Are you in?",
        "-s",
        &server,
    ])
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("from Alice:\n\n<email>\nAre you in?\n</email>\n"),
        "{}",
        stdout(&output)
    );
}
