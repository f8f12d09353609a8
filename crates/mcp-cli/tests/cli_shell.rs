//! `mcp shell`: one connection, commands at a prompt, Tab completion of
//! names, the transcript on request, and the history kept between runs.
#![cfg(target_os = "linux")]

mod support;

use support::everything;
use support::pty::Terminal;

#[test]
fn a_shell_session_completes_calls_reads_and_remembers() {
    let folder = std::env::temp_dir().join(format!("mcp-shell-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("a folder");
    let history = folder.join("history");
    let history_var = history.to_str().expect("a UTF-8 path");
    let env = [("MCP_SHELL_HISTORY", history_var)];
    let mut terminal = Terminal::run_with(&["shell", "-s", &everything()], &env);
    let prompt = terminal.wait_for("mcp> ", 0);

    // Tab completes the tool's name, then its argument's.
    terminal.type_keys("tool ech\t");
    let completed = terminal.wait_for("echo ", prompt);
    terminal.type_keys("tex\t");
    let argument = terminal.wait_for("text=", completed);
    terminal.type_keys("hello-shell\r");
    let answered = terminal.wait_for("hello-shell", argument + "hello-shell".len());

    // The transcript shows the request and the result. (Each command is
    // typed once its prompt is shown, as a person does.)
    let next = terminal.wait_for("mcp> ", answered);
    terminal.type_keys("transcript on\r");
    let next = terminal.wait_for("mcp> ", next + 1);
    terminal.type_keys("read test://static-text\r");
    let sent = terminal.wait_for("-> resources/read", next);
    let received = terminal.wait_for("<- ", sent);

    // A wrong command is told, and the shell goes on.
    let next = terminal.wait_for("mcp> ", received);
    terminal.type_keys("frobnicate\r");
    let told = terminal.wait_for("no command \"frobnicate\"", next);
    terminal.wait_for("mcp> ", told);
    terminal.type_keys("quit\r");
    let (status, seen) = terminal.finish();
    assert!(status.success(), "{seen}");
    assert!(told > 0);
    let kept = std::fs::read_to_string(&history).expect("the history was saved");
    assert!(kept.contains("tool echo text=hello-shell"), "{kept}");
    let _ = std::fs::remove_dir_all(&folder);
}
