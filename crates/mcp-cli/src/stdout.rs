//! What the commands print on stdout, for a reader that may go away: a
//! closed pipe (`mcp bench | head -1`) ends the output, not the process.

use std::io::Write as _;

use anyhow::Result;
use serde::Serialize;

/// Writes `text` to stdout; a reader that went away is not an error.
pub(crate) fn print_out(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Writes `value` to stdout as indented JSON, on lines of its own.
pub(crate) fn print_json(value: &impl Serialize) -> Result<()> {
    print_out(&format!("{}\n", serde_json::to_string_pretty(value)?))
}
