//! The last lines each child server wrote on stderr, kept to explain why
//! it failed. A child's stderr lines reach the log as events of target
//! `mcp_core::child` with its `pid`; [`Capture`] keeps the last
//! [`TAIL_LINES`] of them (at most [`TAIL_BYTES`]) per child, whatever the
//! log shows.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

use tracing::field::{Field, Visit};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::{Context, Layer};

/// Where the child-process transport logs its children's stderr lines.
const TARGET: &str = "mcp_core::child";

/// How many of a child's last stderr lines are kept.
pub const TAIL_LINES: usize = 20;

/// How many bytes of a child's last stderr lines are kept.
pub const TAIL_BYTES: usize = 4096;

/// The last lines of one child, and how many it wrote in all.
#[derive(Default)]
struct Tail {
    lines: VecDeque<String>,
    bytes: usize,
    written: u64,
}

impl Tail {
    fn push(&mut self, mut line: String) {
        if line.len() > TAIL_BYTES {
            let mut cut = TAIL_BYTES;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
        }
        self.bytes += line.len();
        self.lines.push_back(line);
        self.written += 1;
        while self.lines.len() > TAIL_LINES || self.bytes > TAIL_BYTES {
            match self.lines.pop_front() {
                Some(old) => self.bytes -= old.len(),
                None => break,
            }
        }
    }
}

static TAILS: Mutex<Option<HashMap<u32, Tail>>> = Mutex::new(None);

fn with_tails<T>(f: impl FnOnce(&mut HashMap<u32, Tail>) -> T) -> T {
    let mut tails = TAILS.lock().unwrap_or_else(|p| p.into_inner());
    f(tails.get_or_insert_with(HashMap::new))
}

/// The log layer that keeps the children's last stderr lines.
pub struct Capture;

impl Capture {
    /// The events [`Capture`] needs: the children's stderr lines.
    pub fn filter() -> Targets {
        Targets::new().with_target(TARGET, tracing::Level::INFO)
    }
}

/// The `pid` and the text of one stderr line's event.
#[derive(Default)]
struct LineFields {
    pid: Option<u64>,
    text: String,
}

impl Visit for LineFields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "pid" {
            self.pid = Some(value);
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.text.push_str(value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.text, "{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != TARGET {
            return;
        }
        let mut fields = LineFields::default();
        event.record(&mut fields);
        let Some(pid) = fields.pid.and_then(|p| u32::try_from(p).ok()) else {
            return;
        };
        with_tails(|tails| tails.entry(pid).or_default().push(fields.text));
    }
}

/// The last stderr lines of child `pid`, once it has stopped writing
/// them (waits at most half a second for the last ones to come in), and
/// forgets them.
pub async fn take(pid: u32) -> Vec<String> {
    let written = || with_tails(|tails| tails.get(&pid).map_or(0, |t| t.written));
    let mut seen = written();
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = written();
        if now == seen {
            break;
        }
        seen = now;
    }
    with_tails(|tails| tails.remove(&pid))
        .map(|tail| tail.lines.into())
        .unwrap_or_default()
}

/// Forgets the stderr lines of child `pid`.
pub fn forget(pid: u32) {
    with_tails(|tails| tails.remove(&pid));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_is_bounded_in_lines_and_bytes() {
        let mut tail = Tail::default();
        for i in 0..100 {
            tail.push(format!("line {i}"));
        }
        assert_eq!(tail.lines.len(), TAIL_LINES);
        assert_eq!(tail.lines.back().map(String::as_str), Some("line 99"));
        tail.push("é".repeat(TAIL_BYTES));
        assert_eq!(tail.lines.len(), 1);
        assert!(tail.bytes <= TAIL_BYTES);
        assert_eq!(tail.written, 101);
    }
}
