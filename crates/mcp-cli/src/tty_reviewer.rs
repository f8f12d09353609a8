//! The terminal as the person who reviews sampling at the host: a
//! server's request to the host's model is shown whole (server, model,
//! system prompt, messages, limits, tools) on the controlling terminal,
//! where the person sends it, edits its last message, or refuses it; then
//! the model's reply is shown before the server gets it.

use std::fmt::Write as _;

use mcp_core::BoxFuture;
use mcp_host::sampler::{Reviewed, Reviewer};
use mcp_schema::{
    CreateMessageRequestParams, CreateMessageResult, Role, SamplingContent,
    SamplingMessageContentBlock, TextContent,
};

use crate::tty::Tty;

/// Asks at `/dev/tty`, one review at a time.
#[derive(Default)]
pub(crate) struct TtyReviewer {
    turn: tokio::sync::Mutex<()>,
}

const REQUEST_CHOICES: &str = "Send it to the model? [y]es, [e]dit the last message, [n]o: ";
const REPLY_CHOICES: &str = "Give this reply to the server? [y]es, [n]o: ";

impl Reviewer for TtyReviewer {
    fn name(&self) -> &str {
        "terminal"
    }

    fn reachable(&self) -> bool {
        crate::tty::reachable()
    }

    fn review_request<'a>(
        &'a self,
        server: &'a str,
        model: &'a str,
        request: &'a CreateMessageRequestParams,
    ) -> BoxFuture<'a, Result<Reviewed, String>> {
        Box::pin(async move {
            let _turn = self.turn.lock().await;
            let tty = Tty::new()?;
            tty.say(&describe_request(server, model, request))?;
            let mut request = request.clone();
            loop {
                tty.say(REQUEST_CHOICES)?;
                match first_letter(&tty.line().await?) {
                    Some('y') => return Ok(Reviewed::Send(Box::new(request))),
                    Some('e') => {
                        tty.say("The last message, on one line: ")?;
                        let text = tty.line().await?;
                        if let Some(last) = request.messages.last_mut() {
                            last.content = SamplingContent::Single(
                                SamplingMessageContentBlock::Text(TextContent::new(text)),
                            );
                        }
                        tty.say(&format!(
                            "Now: {}\n",
                            message_text(&request.messages[request.messages.len() - 1].content)
                        ))?;
                    }
                    _ => return Ok(Reviewed::Refuse),
                }
            }
        })
    }

    fn review_reply<'a>(
        &'a self,
        server: &'a str,
        reply: &'a CreateMessageResult,
    ) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            let _turn = self.turn.lock().await;
            let tty = Tty::new()?;
            let stop = reply.stop_reason.as_deref().unwrap_or("unknown");
            tty.say(&format!(
                "\nThe model {} answered server {server:?} (stop: {stop}):\n  {}\n",
                reply.model,
                message_text(&reply.content)
            ))?;
            tty.say(REPLY_CHOICES)?;
            Ok(first_letter(&tty.line().await?) == Some('y'))
        })
    }
}

fn first_letter(line: &str) -> Option<char> {
    line.trim().to_ascii_lowercase().chars().next()
}

/// The request as a person reads it.
fn describe_request(server: &str, model: &str, request: &CreateMessageRequestParams) -> String {
    let mut text = format!(
        "\nServer {server:?} asks the host's model {model:?} (at most {} tokens",
        request.max_tokens
    );
    if let Some(temperature) = request.temperature {
        let _ = write!(text, ", temperature {temperature}");
    }
    text.push_str("):\n");
    if let Some(system) = &request.system_prompt {
        let _ = writeln!(text, "  system: {}", system.trim());
    }
    for message in &request.messages {
        let who = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let _ = writeln!(text, "  {who}: {}", message_text(&message.content));
    }
    if let Some(tools) = request.tools.as_ref().filter(|t| !t.is_empty()) {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let _ = writeln!(text, "  tools offered: {}", names.join(", "));
    }
    if let Some(stop) = &request.stop_sequences {
        let _ = writeln!(text, "  stops at: {stop:?}");
    }
    text
}

/// A message's blocks in a line each: text as it is, the rest named.
fn message_text(content: &SamplingContent) -> String {
    let parts: Vec<String> = content
        .blocks()
        .iter()
        .map(|block| match block {
            SamplingMessageContentBlock::Text(text) => text.text.trim().to_owned(),
            SamplingMessageContentBlock::Image(image) => format!("[image, {}]", image.mime_type),
            SamplingMessageContentBlock::Audio(audio) => format!("[audio, {}]", audio.mime_type),
            SamplingMessageContentBlock::ToolUse(tool_use) => format!(
                "[uses tool {} with {}]",
                tool_use.name,
                serde_json::Value::Object(tool_use.input.clone())
            ),
            SamplingMessageContentBlock::ToolResult(result) => {
                format!("[result of {}]", result.tool_use_id)
            }
        })
        .collect();
    parts.join("\n  ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_schema::SamplingMessage;

    #[test]
    fn a_request_is_shown_whole() {
        let mut request =
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text("What is 2+2?")], 50);
        request.system_prompt = Some("Be exact.".into());
        request.temperature = Some(0.2);
        let shown = describe_request("calc", "smollm2", &request);
        assert_eq!(
            shown,
            "\nServer \"calc\" asks the host's model \"smollm2\" (at most 50 tokens, temperature 0.2):\n  system: Be exact.\n  user: What is 2+2?\n"
        );
    }
}
