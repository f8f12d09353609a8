//! The terminal as an approver: a request the policy marks `ask` is shown
//! on the controlling terminal (not stdin, which may carry MCP messages)
//! and the person answers there. Reading does not block a thread, so a
//! question that times out leaves nothing reading the terminal.

use mcp_core::BoxFuture;
use mcp_host::consent::{Approval, ApprovalRequest, Approver, Scope};

use crate::tty::Tty;

/// Asks at `/dev/tty`, one question at a time.
#[derive(Default)]
pub(crate) struct TtyApprover {
    turn: tokio::sync::Mutex<()>,
}

const CHOICES: &str = "Allow? [o]nce, for the [s]ession, [a]lways, [e]dit the arguments, [n]o: ";

impl Approver for TtyApprover {
    fn name(&self) -> &str {
        "terminal"
    }

    fn reachable(&self) -> bool {
        crate::tty::reachable()
    }

    fn ask<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Result<Approval, String>> {
        Box::pin(async move {
            let _turn = self.turn.lock().await;
            let tty = Tty::new()?;
            tty.say(&format!("\n{}\n", request.describe()))?;
            let mut arguments = None;
            loop {
                tty.say(CHOICES)?;
                let line = tty.line().await?;
                let scope = match line.trim().to_ascii_lowercase().chars().next() {
                    Some('o') => Scope::Once,
                    Some('s') => Scope::Session,
                    Some('a') => Scope::Always,
                    Some('e') => {
                        tty.say("Arguments (a JSON object, on one line): ")?;
                        match serde_json::from_str(&tty.line().await?) {
                            Ok(serde_json::Value::Object(edited)) => arguments = Some(edited),
                            _ => tty.say("That is not a JSON object; the arguments are kept.\n")?,
                        }
                        continue;
                    }
                    _ => {
                        return Ok(Approval {
                            allowed: false,
                            scope: Scope::Once,
                            arguments: None,
                        });
                    }
                };
                return Ok(Approval {
                    allowed: true,
                    scope,
                    arguments,
                });
            }
        })
    }
}
