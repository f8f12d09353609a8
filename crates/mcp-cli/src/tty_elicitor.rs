//! The terminal as the person who answers a server's elicitation at the
//! host: a form is filled in on the controlling terminal (with the same
//! prompts as `mcp call`'s, each answer checked as it is typed), after a
//! line naming the server that asks; a page to open (URL mode) is shown
//! with its host first, and the person says whether they opened it.

use dialoguer::console::Term;
use mcp_core::BoxFuture;
use mcp_host::elicit::Elicitor;
use mcp_schema::{ElicitRequestParams, ElicitResult};

use crate::form::{Outcome, fill};
use crate::tty::Tty;

/// Asks at `/dev/tty`, one question at a time.
#[derive(Default)]
pub(crate) struct TtyElicitor {
    turn: tokio::sync::Mutex<()>,
}

impl Elicitor for TtyElicitor {
    fn name(&self) -> &str {
        "terminal"
    }

    fn reachable(&self) -> bool {
        crate::tty::reachable()
    }

    fn elicit<'a>(
        &'a self,
        server: &'a str,
        params: &'a ElicitRequestParams,
    ) -> BoxFuture<'a, Result<ElicitResult, String>> {
        Box::pin(async move {
            let _turn = self.turn.lock().await;
            match params {
                ElicitRequestParams::Url(page) => {
                    let tty = Tty::new()?;
                    let host = reqwest::Url::parse(&page.url)
                        .ok()
                        .and_then(|url| url.host_str().map(str::to_owned))
                        .unwrap_or_else(|| "(not a web address)".into());
                    tty.say(&format!(
                        "\nServer {server:?} asks you to open a page at {host}:\n  {}\n  {}\n\
                         Open it in your browser, then answer. Done? [y]es, [n]o (decline), [c]ancel: ",
                        page.message, page.url
                    ))?;
                    let line = tty.line().await?;
                    Ok(match line.trim().to_ascii_lowercase().chars().next() {
                        Some('y') => ElicitResult::accept(Default::default()),
                        Some('c') => ElicitResult::cancel(),
                        _ => ElicitResult::decline(),
                    })
                }
                ElicitRequestParams::Form(form) => {
                    let tty = Tty::new()?;
                    tty.say(&format!("\nServer {server:?} asks you:"))?;
                    drop(tty);
                    let form = form.clone();
                    // The form is drawn and read on the terminal itself,
                    // blocking: off the async workers.
                    let outcome = tokio::task::spawn_blocking(move || {
                        let (read, write) = terminal_files()?;
                        fill(&form, &Term::read_write_pair(read, write))
                    })
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| format!("the form could not be asked: {e}"))?;
                    Ok(match outcome {
                        Outcome::Accept(content) => ElicitResult::accept(content),
                        Outcome::Decline => ElicitResult::decline(),
                        Outcome::Cancel => ElicitResult::cancel(),
                    })
                }
            }
        })
    }
}

/// The controlling terminal, opened twice (blocking), to read and write.
fn terminal_files() -> std::io::Result<(std::fs::File, std::fs::File)> {
    let open = || {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
    };
    Ok((open()?, open()?))
}
