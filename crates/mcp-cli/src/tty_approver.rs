//! The terminal as an approver: a request the policy marks `ask` is shown
//! on the controlling terminal (not stdin, which may carry MCP messages)
//! and the person answers there. Reading does not block a thread, so a
//! question that times out leaves nothing reading the terminal.

use std::io::{Read as _, Write as _};

use mcp_core::BoxFuture;
use mcp_host::consent::{Approval, ApprovalRequest, Approver, Scope};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

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
        open().is_ok()
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

fn open() -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/tty")
}

/// The controlling terminal, read without blocking a thread.
struct Tty(AsyncFd<std::fs::File>);

impl Tty {
    fn new() -> Result<Tty, String> {
        let tty = open().map_err(|e| format!("no terminal: {e}"))?;
        // SAFETY: a `File` owns its descriptor, open until it is dropped
        // with the `AsyncFd` that owns it, and always gives that one.
        unsafe { AsyncFd::register_with_interest(tty, Interest::READABLE) }
            .map(Tty)
            .map_err(|e| format!("the terminal cannot be read: {e}"))
    }

    fn say(&self, text: &str) -> Result<(), String> {
        let mut tty = self.0.get_ref();
        tty.write_all(text.as_bytes())
            .and_then(|()| tty.flush())
            .map_err(|e| format!("the terminal cannot be written: {e}"))
    }

    /// The next line typed (the terminal hands over whole lines).
    async fn line(&self) -> Result<String, String> {
        let mut typed = Vec::new();
        loop {
            let mut ready = self
                .0
                .readable()
                .await
                .map_err(|e| format!("the terminal cannot be read: {e}"))?;
            let mut buffer = [0u8; 1024];
            let read = ready.try_io(|tty| tty.get_ref().read(&mut buffer));
            match read {
                Err(_would_block) => continue,
                Ok(Err(error)) => return Err(format!("the terminal cannot be read: {error}")),
                Ok(Ok(0)) => return Err("the terminal was closed".into()),
                Ok(Ok(n)) => {
                    typed.extend_from_slice(&buffer[..n]);
                    if let Some(end) = typed.iter().position(|b| *b == b'\n') {
                        typed.truncate(end);
                        return Ok(String::from_utf8_lossy(&typed).trim_end().to_owned());
                    }
                }
            }
        }
    }
}
