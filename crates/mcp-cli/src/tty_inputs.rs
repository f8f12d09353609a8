//! `${input:id}` asked of a person at the controlling terminal.

use mcp_host::config::{InputProvider, InputSpec};

/// Asks for `${input:id}` on the controlling terminal (not stdin, which
/// may carry MCP messages); secrets are typed without echo.
pub(crate) struct TtyInputs;

impl InputProvider for TtyInputs {
    fn ask(&self, input: &InputSpec) -> Result<String, String> {
        use std::io::{BufRead, Write};
        let prompt = match &input.default {
            Some(default) => format!("{} [{default}]: ", input.description),
            None => format!("{}: ", input.description),
        };
        let no_terminal = |e: std::io::Error| {
            format!(
                "input {:?} ({}) needs a person at a terminal: {e}",
                input.id, input.description
            )
        };
        let answer = if input.password {
            rpassword::prompt_password(&prompt).map_err(no_terminal)?
        } else {
            let tty = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/tty")
                .map_err(no_terminal)?;
            let mut writer = &tty;
            writer.write_all(prompt.as_bytes()).map_err(no_terminal)?;
            let mut line = String::new();
            std::io::BufReader::new(&tty)
                .read_line(&mut line)
                .map_err(no_terminal)?;
            line.trim_end_matches(['\r', '\n']).to_owned()
        };
        match (answer.is_empty(), &input.default) {
            (true, Some(default)) => Ok(default.clone()),
            _ => Ok(answer),
        }
    }
}
