//! Asking the person before the model's tool call runs: the tool and its
//! arguments are shown on the terminal; yes, no, or always for this tool
//! (for the rest of the conversation). `--yes` runs every call unasked;
//! with no terminal to ask at, a call is refused and the model told so.

use std::collections::HashSet;
use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::tty::Tty;
use mcp_core::sync::MutexExt as _;

/// Who allows the model's tool calls.
pub(crate) struct ToolApproval {
    everything: bool,
    always: Mutex<HashSet<String>>,
}

impl ToolApproval {
    /// Asks about each call, unless `everything` is allowed.
    pub(crate) fn new(everything: bool) -> Self {
        ToolApproval {
            everything,
            always: Mutex::default(),
        }
    }

    /// Whether the call of `name` with `input` may run; an error (to tell
    /// the model) when no one can be asked.
    pub(crate) async fn allows(
        &self,
        name: &str,
        input: &Map<String, Value>,
    ) -> Result<bool, String> {
        if self.everything || self.always.locked().contains(name) {
            return Ok(true);
        }
        if !crate::tty::reachable() {
            return Err(format!(
                "the call of {name} was not run: no terminal to ask the user at (run with --yes to allow tool calls)"
            ));
        }
        let tty = Tty::new()?;
        tty.say(&format!(
            "Run {name} with {}? [y]es, [n]o, [a]lways for this tool: ",
            Value::Object(input.clone())
        ))?;
        let line = tty.line().await?;
        Ok(match line.trim().to_ascii_lowercase().chars().next() {
            Some('y') => true,
            Some('a') => {
                self.always.locked().insert(name.to_owned());
                true
            }
            _ => false,
        })
    }
}
