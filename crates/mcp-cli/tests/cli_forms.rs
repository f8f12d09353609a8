//! Elicitation forms asked of the person at the terminal: in the order of
//! the server's schema, each answer checked before the next field.
#![cfg(target_os = "linux")]

mod support;

use support::everything;
use support::pty::Terminal;

/// `everything`'s `test_elicitation` lists `username` before `email`; the
/// form asks them in that order (not alphabetically), and the server gets
/// both answers: in a request of its own (legacy) and in an
/// `input_required` result (2026-07-28).
#[test]
fn a_form_asks_its_fields_in_the_schemas_order() {
    asks_in_order("legacy");
    asks_in_order("modern");
}

fn asks_in_order(era: &str) {
    let mut terminal = Terminal::run(&[
        "tool",
        "-s",
        &everything(),
        "--era",
        era,
        "test_elicitation",
        "message=Who are you?",
    ]);
    let asked = terminal.wait_for("Answer it?", 0);
    terminal.type_keys("\r");
    let username = terminal.wait_for("username", asked);
    assert!(
        !terminal.seen()[asked..].contains("email"),
        "email was asked before username:\n{}",
        terminal.seen()
    );
    terminal.type_keys("ada\r");
    let email = terminal.wait_for("email", username);
    terminal.type_keys("ada@example.org\r");
    let (status, seen) = terminal.finish();
    assert!(status.success(), "{seen}");
    let answer = &seen[email..];
    // The server's own account of what it received, both fields filled.
    assert!(answer.contains("action=accept"), "{answer}");
    assert!(answer.contains(r#""email":"ada@example.org""#), "{answer}");
    assert!(answer.contains(r#""username":"ada""#), "{answer}");
}

/// Declining at the start sends `decline`, and no field is asked.
#[test]
fn a_form_can_be_declined_before_any_field() {
    let mut terminal = Terminal::run(&[
        "tool",
        "-s",
        &everything(),
        "test_elicitation",
        "message=Who are you?",
    ]);
    let asked = terminal.wait_for("Answer it?", 0);
    // Down to "Decline", then Enter.
    terminal.type_keys("\x1b[B\r");
    let (status, seen) = terminal.finish();
    assert!(status.success(), "{seen}");
    assert!(seen[asked..].contains("action=decline"), "{seen}");
    assert!(!seen[asked..].contains("User's response"), "{seen}");
}
