//! A request's progress as a bar on stderr, drawn only when stderr is a
//! terminal, and cleared before the result is printed. Whatever else is
//! written on stderr meanwhile goes above the bar.

use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mcp_core::sync::MutexExt as _;
use mcp_schema::ProgressNotificationParams;

/// Steps of a bar whose total is known: progress is shown in tenths of
/// a percent.
const STEPS: u64 = 1000;

/// The bar on screen, if one is.
static BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

fn with_bar<T>(f: impl FnOnce(&mut Option<ProgressBar>) -> T) -> T {
    f(&mut BAR.locked())
}

/// A progress callback that draws the bar, when stderr is a terminal.
pub fn progress_bar() -> Option<impl Fn(ProgressNotificationParams) + Send + Sync + 'static> {
    std::io::stderr().is_terminal().then_some(show)
}

/// Draws one progress update.
fn show(update: ProgressNotificationParams) {
    let message = update.message.unwrap_or_default();
    let total = update.total.filter(|t| *t > 0.0);
    with_bar(|bar| {
        let bar = bar.get_or_insert_with(new_bar);
        match total {
            Some(total) => {
                let done = (update.progress / total).clamp(0.0, 1.0);
                bar.set_style(determinate());
                bar.set_length(STEPS);
                bar.set_position((done * STEPS as f64).round() as u64);
                bar.set_message(message);
            }
            None => {
                bar.set_style(indeterminate());
                bar.set_message(format!("{} {message}", update.progress));
                bar.tick();
            }
        }
    });
}

fn new_bar() -> ProgressBar {
    ProgressBar::with_draw_target(Some(STEPS), ProgressDrawTarget::stderr())
}

fn determinate() -> ProgressStyle {
    ProgressStyle::with_template("[{bar:30}] {percent:>3}% {wide_msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("#>-")
}

fn indeterminate() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {wide_msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

/// Takes the bar off the screen (before a result is printed).
pub fn clear() {
    if let Some(bar) = with_bar(Option::take) {
        bar.finish_and_clear();
    }
}

/// Runs `write` (something written on stderr) with the bar, if there is
/// one, off the screen; the bar comes back below it.
pub fn above<T>(write: impl FnOnce() -> T) -> T {
    let bar = with_bar(|bar| bar.clone());
    match bar {
        Some(bar) => bar.suspend(write),
        None => write(),
    }
}
