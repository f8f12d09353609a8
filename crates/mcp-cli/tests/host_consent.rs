//! `mcp host` asking at its terminal: a call a rule marks `ask` is shown
//! on the host's controlling terminal (a pseudo-terminal here) and the
//! person's answer decides it: once, no, edited arguments, for the
//! session, always; `mcp tool` is the client, in both eras.
#![cfg(target_os = "linux")]

mod support;

use std::process::Output;

use support::MCP;
use support::pty::Terminal;

/// `mcp tool -s URL --era ERA echo text=TEXT`, run on a thread of its own
/// while the test answers at the host's terminal.
fn call(url: &str, era: &str, text: &str) -> std::thread::JoinHandle<Output> {
    let (url, era, text) = (url.to_owned(), era.to_owned(), text.to_owned());
    std::thread::spawn(move || {
        std::process::Command::new(MCP)
            .args([
                "tool",
                "-s",
                &url,
                "--era",
                &era,
                "e__echo",
                &format!("text={text}"),
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("mcp tool ran")
    })
}

fn answered(call: std::thread::JoinHandle<Output>) -> (bool, String) {
    let output = call.join().expect("the call's thread");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[test]
fn the_hosts_terminal_approves_refuses_and_edits() {
    let dir = std::env::temp_dir().join(format!("mcp-host-consent-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("servers.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {"e": {"command": MCP, "args": ["serve", "everything"]}}})
            .to_string(),
    )
    .unwrap();
    let settings = dir.join("host.toml");
    std::fs::write(
        &settings,
        "[guard]\napprovers = [\"terminal\"]\nstore = \"guard.db\"\n\n\
         [[policy]]\ndecision = \"ask\"\ntool = \"echo\"\nname = \"echo asks\"\n",
    )
    .unwrap();
    let (config, settings) = (config.to_str().unwrap(), settings.to_str().unwrap());
    let state = dir.to_str().unwrap();
    let mut terminal = Terminal::run_controlling(
        &[
            "host",
            "--http",
            "127.0.0.1:0",
            "--config",
            config,
            "--settings",
            settings,
        ],
        &[("XDG_STATE_HOME", state)],
    );
    let (url, end) = terminal.endpoint();

    // Once: shown with the server's command line, the arguments and the rule.
    let pending = call(&url, "legacy", "one");
    let asked = terminal.wait_for("Allow?", end);
    let question = terminal.seen()[end..asked].to_owned();
    for shown in [
        "\"e\"",
        "serve everything",
        "echo",
        "\"text\":\"one\"",
        "echo asks",
    ] {
        assert!(question.contains(shown), "{shown} in {question}");
    }
    terminal.type_keys("o\n");
    assert_eq!(answered(pending), (true, "one\n".to_owned()));

    // No.
    let pending = call(&url, "legacy", "two");
    let asked = terminal.wait_for("Allow?", asked + 1);
    terminal.type_keys("n\n");
    let (ok, said) = answered(pending);
    assert!(!ok && said.contains("refused"), "{said}");

    // Edited, then allowed for the session: a 2026-07-28 client's session
    // is its caller and name, so its next call is not asked.
    let pending = call(&url, "modern", "three");
    let asked = terminal.wait_for("Allow?", asked + 1);
    terminal.type_keys("e\n");
    let edit = terminal.wait_for("Arguments (a JSON object", asked);
    terminal.type_keys("{\"text\": \"edited\"}\n");
    let asked = terminal.wait_for("Allow?", edit);
    terminal.type_keys("s\n");
    assert_eq!(answered(pending), (true, "edited\n".to_owned()));
    assert_eq!(
        answered(call(&url, "modern", "four")),
        (true, "four\n".to_owned())
    );

    // Always: kept in the store; the next legacy session is not asked.
    let pending = call(&url, "legacy", "five");
    let asked = terminal.wait_for("Allow?", asked + 1);
    terminal.type_keys("a\n");
    assert_eq!(answered(pending), (true, "five\n".to_owned()));
    assert_eq!(
        answered(call(&url, "legacy", "six")),
        (true, "six\n".to_owned())
    );
    assert_eq!(
        terminal.seen()[asked + 1..].matches("Allow?").count(),
        0,
        "asked again:\n{}",
        terminal.seen()
    );
    assert!(dir.join("guard.db").exists());
    drop(terminal);
    std::fs::remove_dir_all(&dir).ok();
}

/// `mcp host approve SERVER [NAME]` pins what a changed definition is
/// now, in the store of the settings file; nothing waiting is an error.
#[test]
fn approve_pins_the_changed_definitions_of_a_server() {
    use mcp_host::consent::{GrantKey, GuardStore, Pinned};
    let dir = std::env::temp_dir().join(format!("mcp-host-approve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let settings = dir.join("host.toml");
    std::fs::write(&settings, "[guard]\nstore = \"guard.db\"\n").unwrap();
    let key = |definition: &str| GrantKey {
        server_identity: "mcp serve everything".into(),
        kind: "tool",
        name: "add".into(),
        definition: definition.into(),
    };
    {
        let store = GuardStore::open(&dir.join("guard.db")).unwrap();
        assert_eq!(store.check_pin("e", &key("v1"), "one"), Pinned::Same);
        assert_eq!(
            store.check_pin("e", &key("v2"), "two"),
            Pinned::Changed("one".into())
        );
    }
    let approve = |server: &str| {
        std::process::Command::new(MCP)
            .args(["host", "approve", server, "--settings"])
            .arg(&settings)
            .output()
            .expect("mcp host approve ran")
    };
    let other = approve("x");
    assert!(!other.status.success());
    assert!(String::from_utf8_lossy(&other.stderr).contains("waits for approval"));
    let approved = approve("e");
    assert!(approved.status.success(), "{approved:?}");
    assert_eq!(
        String::from_utf8_lossy(&approved.stdout),
        "approved: e tool add\n"
    );
    let store = GuardStore::open(&dir.join("guard.db")).unwrap();
    assert_eq!(store.check_pin("e", &key("v2"), "two"), Pinned::Same);
    std::fs::remove_dir_all(&dir).ok();
}

/// `mcp host explain` names the deciding rule and why each other one
/// does not match; `mcp host import-permissions` prints rules a settings
/// file reads back with the same decisions.
#[test]
fn explain_and_import_permissions() {
    let dir = std::env::temp_dir().join(format!("mcp-host-explain-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let claude = dir.join("settings.json");
    std::fs::write(
        &claude,
        r#"{"permissions": {"deny": ["mcp__memory__delete_*"], "allow": ["mcp__memory", "Bash(ls)"]}}"#,
    )
    .unwrap();
    let imported = std::process::Command::new(MCP)
        .args(["host", "import-permissions"])
        .arg(&claude)
        .output()
        .expect("mcp host import-permissions ran");
    assert!(imported.status.success(), "{imported:?}");
    let rules = String::from_utf8_lossy(&imported.stdout).into_owned();
    assert!(rules.contains("[[policy]]"), "{rules}");
    assert!(
        String::from_utf8_lossy(&imported.stderr).contains("Bash(ls)"),
        "what was left out is said"
    );
    let settings = dir.join("host.toml");
    let outside_data = r#"
[[policy]]
decision = "deny"
name = "data only"
server = "memory"
tool = "read_graph"
arguments.path = { outside = "/srv/data" }
"#;
    std::fs::write(&settings, format!("{rules}{outside_data}")).unwrap();

    let explain_with = |caller: &str, tool: &str, arguments: &str| {
        let output = std::process::Command::new(MCP)
            .args([
                "host",
                "explain",
                "--caller",
                caller,
                "memory",
                tool,
                "--arguments",
                arguments,
                "--settings",
            ])
            .arg(&settings)
            .output()
            .expect("mcp host explain ran");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let explain = |caller: &str, tool: &str| explain_with(caller, tool, "{}");
    let denied = explain("bob", "delete_entities");
    assert!(
        denied
            .starts_with("tool \"delete_entities\" of server \"memory\" for caller \"bob\": deny"),
        "{denied}"
    );
    assert!(denied.contains("mcp__memory__delete_*"), "{denied}");
    let allowed = explain("bob", "read_graph");
    assert!(allowed.contains(": allow"), "{allowed}");
    assert!(
        allowed.contains("no, tool \"read_graph\" is not \"delete_*\""),
        "{allowed}"
    );
    // A rule over arguments decides by them, and says which one failed.
    let outside = explain_with("bob", "read_graph", r#"{"path": "/srv/data/../etc/x"}"#);
    assert!(outside.contains(": deny (data only)"), "{outside}");
    let inside = explain_with("bob", "read_graph", r#"{"path": "/srv/data/x"}"#);
    assert!(inside.contains(": allow"), "{inside}");
    assert!(
        inside.contains(
            "data only (deny): no, argument \"path\" (\"/srv/data/x\") is not a path outside \
             /srv/data"
        ),
        "{inside}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
