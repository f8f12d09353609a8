//! How a turn is shown: the model's words on stdout as they stream in, a
//! spinner on stderr while it thinks (where stderr is a terminal), and
//! each tool call and its result in a compact line on stderr.

use std::io::{IsTerminal as _, Write as _};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use mcp_core::sync::MutexExt as _;
use serde_json::{Map, Value};

/// Sees a turn as it happens.
pub(crate) trait View: Send + Sync {
    /// Whether the model's words are shown as they come.
    fn streams(&self) -> bool;
    /// A piece of the model's words.
    fn text(&self, piece: &str);
    /// The model is asked.
    fn step_started(&self);
    /// The model answered (or was stopped).
    fn step_ended(&self);
    /// A tool is about to be called.
    fn tool_call(&self, name: &str, input: &Map<String, Value>);
    /// What it gave.
    fn tool_result(&self, name: &str, text: &str, is_error: bool);
}

/// The terminal's view (or a pipe's: no spinner there).
pub(crate) struct Plain {
    stream: bool,
    spinner: Mutex<Option<ProgressBar>>,
    wrote: Mutex<bool>,
}

/// How much of a tool's result the line shows.
const SHOWN: usize = 160;

impl Plain {
    /// Shows the model's words on stdout as they come where `stream`.
    pub(crate) fn new(stream: bool) -> Self {
        Plain {
            stream,
            spinner: Mutex::new(None),
            wrote: Mutex::new(false),
        }
    }

    fn stop_spinner(&self) {
        if let Some(spinner) = self.spinner.locked().take() {
            spinner.finish_and_clear();
        }
    }

    /// Ends the line the model's words were written on, if any.
    pub(crate) fn end_line(&self) {
        let mut wrote = self.wrote.locked();
        if *wrote {
            println!();
            *wrote = false;
        }
    }
}

impl View for Plain {
    fn streams(&self) -> bool {
        self.stream
    }

    fn text(&self, piece: &str) {
        self.stop_spinner();
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(piece.as_bytes());
        let _ = stdout.flush();
        *self.wrote.locked() = true;
    }

    fn step_started(&self) {
        if !std::io::stderr().is_terminal() {
            return;
        }
        let spinner = ProgressBar::new_spinner().with_message("thinking");
        spinner.set_style(
            ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        spinner.enable_steady_tick(Duration::from_millis(100));
        *self.spinner.locked() = Some(spinner);
    }

    fn step_ended(&self) {
        self.stop_spinner();
        self.end_line();
    }

    fn tool_call(&self, name: &str, input: &Map<String, Value>) {
        self.end_line();
        eprintln!("-> {name} {}", Value::Object(input.clone()));
    }

    fn tool_result(&self, name: &str, text: &str, is_error: bool) {
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut shown: String = flat.chars().take(SHOWN).collect();
        if shown.len() < flat.len() {
            shown.push_str("...");
        }
        let mark = if is_error { "failed" } else { "gave" };
        eprintln!("<- {name} {mark}: {shown}");
    }
}
