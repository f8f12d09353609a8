//! The person at the terminal stands in for what a server may ask of the
//! client: they write the model's reply to a sampling request and fill in
//! elicitation forms. Off a terminal these requests are refused with a
//! clear error.

use std::io::IsTerminal;
use std::sync::Arc;

use dialoguer::console::Term;
use mcp_schema::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorObject,
};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::sync::Mutex;

use crate::form::{Outcome, fill};
use crate::stderr::{ask_err, print_err};
use mcp_core::sync::MutexExt as _;

/// Reads answers from stdin, one question at a time.
#[derive(Clone)]
pub struct Terminal {
    lines: Arc<Mutex<Lines<BufReader<Stdin>>>>,
    interactive: bool,
    refused: Arc<std::sync::Mutex<Option<String>>>,
}

impl Terminal {
    /// The process's terminal (interactive only when stdin and stderr are
    /// terminals).
    pub fn new() -> Self {
        Terminal {
            lines: Arc::new(Mutex::new(BufReader::new(tokio::io::stdin()).lines())),
            interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
            refused: Arc::default(),
        }
    }

    /// What this program refused to ask of the user for the server, if
    /// anything (the server's error that follows is this refusal).
    pub fn refusal(&self) -> Option<String> {
        self.refused.locked().clone()
    }

    fn refuse(&self, what: &str) -> Result<(), ErrorObject> {
        if self.interactive {
            return Ok(());
        }
        let why = format!(
            "the server asked for {what}, which needs a person at a terminal, and stdin is not one"
        );
        self.refused.locked().get_or_insert_with(|| why.clone());
        Err(ErrorObject::internal(why))
    }

    async fn ask(
        &self,
        lines: &mut Lines<BufReader<Stdin>>,
        prompt: &str,
    ) -> Result<String, ErrorObject> {
        ask_err(prompt);
        match lines.next_line().await {
            Ok(Some(line)) => Ok(line.trim_end().to_owned()),
            _ => Err(ErrorObject::internal("stdin closed")),
        }
    }

    /// The person writes the model's reply.
    pub async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        self.refuse("a model reply (sampling)")?;
        let mut lines = self.lines.lock().await;
        print_err("\n-- The server asks for a model reply. Its messages:");
        if let Some(system) = &params.system_prompt {
            print_err(&format!("[system] {system}"));
        }
        for message in &params.messages {
            let text = serde_json::to_string(&message.content).unwrap_or_default();
            print_err(&format!("[{:?}] {text}", message.role));
        }
        let reply = self.ask(&mut lines, "Reply (empty line refuses): ").await?;
        if reply.is_empty() {
            return Err(ErrorObject::internal("the user refused to answer"));
        }
        Ok(CreateMessageResult::assistant_text("human", reply))
    }

    /// The person fills in the form (or visits the URL).
    pub async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        self.refuse("user input (elicitation)")?;
        let mut lines = self.lines.lock().await;
        let form = match params {
            ElicitRequestParams::Url(url) => {
                print_err(&format!("\n-- {}\nOpen: {}", url.message, url.url));
                let answer = self
                    .ask(&mut lines, "Press Enter when done, or type `decline`: ")
                    .await?;
                return Ok(if answer == "decline" {
                    ElicitResult::decline()
                } else {
                    ElicitResult::accept(Default::default())
                });
            }
            ElicitRequestParams::Form(form) => form,
        };
        // The form is drawn and read on the terminal itself, blocking.
        drop(lines);
        let outcome = tokio::task::spawn_blocking(move || fill(&form, &Term::stderr()))
            .await
            .map_err(ErrorObject::internal)?
            .map_err(|e| ErrorObject::internal(format!("the form could not be asked: {e}")))?;
        Ok(match outcome {
            Outcome::Accept(content) => ElicitResult::accept(content),
            Outcome::Decline => ElicitResult::decline(),
            Outcome::Cancel => ElicitResult::cancel(),
        })
    }
}
