//! The agent's loop: the model answers, or asks for tools; each tool call
//! goes to the host's gateway (as any client's call would) once the
//! person allows it, and its result goes back to the model, until the
//! model answers in words or the steps run out. Ctrl-C stops the step
//! running; a tool call it stops is cancelled upstream.

use mcp_host::model::{
    Conversation, Message, Model, Part, Speaker, Stop, ToolMode, ToolSpec, Usage,
};
use mcp_schema::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Map, Value, json};

use super::ChatArgs;
use super::approve::ToolApproval;
use super::view::View;

/// Why a turn did not end with an answer.
pub(crate) enum Stopped {
    /// The person pressed Ctrl-C.
    Cancelled,
    /// Something failed (the model, the host).
    Failed(anyhow::Error),
}

impl From<anyhow::Error> for Stopped {
    fn from(error: anyhow::Error) -> Self {
        Stopped::Failed(error)
    }
}

/// A tool call of a turn, with its result.
pub(crate) struct Called {
    name: String,
    arguments: Map<String, Value>,
    result: String,
    is_error: bool,
}

/// What one prompt came to.
pub(crate) struct Turn {
    /// The model's last words.
    pub(crate) answer: String,
    /// Whether they were already written to stdout as they came.
    pub(crate) streamed: bool,
    calls: Vec<Called>,
    model: String,
    stop: Stop,
    usage: Option<Usage>,
}

impl Turn {
    /// The turn as `--json` prints it.
    pub(crate) fn to_json(&self) -> Value {
        let calls: Vec<Value> = self
            .calls
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "arguments": c.arguments,
                    "result": c.result,
                    "isError": c.is_error,
                })
            })
            .collect();
        json!({
            "answer": self.answer,
            "toolCalls": calls,
            "model": self.model,
            "stopReason": self.stop.as_mcp(),
            "usage": self.usage,
        })
    }
}

/// The model, the host's tools, and the conversation so far.
pub(crate) struct Agent {
    model: Model,
    client: mcp_client::Client,
    tools: Vec<ToolSpec>,
    /// The system prompt and the turns so far.
    pub(crate) conversation: Conversation,
    max_steps: usize,
    approval: ToolApproval,
}

impl Agent {
    /// An agent with `model`, the tools `client` lists, and `kept`'s
    /// turns.
    pub(crate) async fn new(
        model: Model,
        client: mcp_client::Client,
        kept: Conversation,
        args: &ChatArgs,
    ) -> anyhow::Result<Agent> {
        let mut agent = Agent {
            model,
            client,
            tools: Vec::new(),
            conversation: kept,
            max_steps: args.max_steps.max(1),
            approval: ToolApproval::new(args.yes),
        };
        if let Some(system) = &args.system {
            agent.conversation.system = Some(system.clone());
        }
        agent.refresh_tools().await?;
        Ok(agent)
    }

    /// Reads the host's tools again.
    pub(crate) async fn refresh_tools(&mut self) -> anyhow::Result<()> {
        let tools = self.client.list_all_tools().await?;
        self.tools = tools
            .into_iter()
            .map(|tool| ToolSpec {
                name: tool.name,
                description: tool.description,
                input_schema: tool.input_schema,
            })
            .collect();
        Ok(())
    }

    /// The tools offered to the model.
    pub(crate) fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// The model's name.
    pub(crate) fn model_name(&self) -> &str {
        self.model.name()
    }

    /// The host's gateway, as this agent's client.
    pub(crate) fn client(&self) -> &mcp_client::Client {
        &self.client
    }

    /// `text` as the parts of a person's message: each `@URI` naming a
    /// resource the host can read is attached after it; what could not be
    /// read is said in the second list.
    pub(crate) async fn user_parts(&self, text: &str) -> (Vec<Part>, Vec<String>) {
        let mut parts = vec![Part::Text {
            text: text.to_owned(),
        }];
        let mut problems = Vec::new();
        for mention in text.split_whitespace().filter_map(|w| w.strip_prefix('@')) {
            let uri = mention.trim_end_matches([',', '.', ';', ')']);
            if !uri.contains(':') {
                continue;
            }
            match self.client.read_resource(uri).await {
                Ok(read) => {
                    let mut attached = format!("Contents of {uri}:\n");
                    for contents in read.contents {
                        match contents {
                            ResourceContents::Text(text) => attached.push_str(&text.text),
                            ResourceContents::Blob(blob) => attached.push_str(&format!(
                                "[binary, {}]",
                                blob.mime_type.as_deref().unwrap_or("unknown type")
                            )),
                        }
                    }
                    parts.push(Part::Text { text: attached });
                }
                Err(error) => problems.push(format!("@{uri} was not attached: {error}")),
            }
        }
        (parts, problems)
    }

    /// Adds a person's message with `parts` and runs the turn.
    pub(crate) async fn ask(
        &mut self,
        parts: Vec<Part>,
        forced: Option<&str>,
        view: &dyn View,
    ) -> Result<Turn, Stopped> {
        self.conversation.messages.push(Message {
            speaker: Speaker::User,
            parts,
        });
        self.run(forced, view).await
    }

    /// Runs the model on the conversation as it is, using tools, until it
    /// answers in words.
    pub(crate) async fn run(
        &mut self,
        forced: Option<&str>,
        view: &dyn View,
    ) -> Result<Turn, Stopped> {
        if let Some(tool) = forced
            && !self.tools.iter().any(|t| t.name == tool)
        {
            return Err(Stopped::Failed(anyhow::anyhow!(
                "the host has no tool named {tool:?} (`mcp chat` lists them with /tools)"
            )));
        }
        let mut calls = Vec::new();
        let mut used: Option<Usage> = None;
        for step in 0..self.max_steps {
            // A forced tool is offered alone (a small model's context has
            // no room for every definition), then none.
            (self.conversation.tools, self.conversation.tool_mode) = match (forced, step) {
                (Some(tool), 0) => (
                    self.tools
                        .iter()
                        .filter(|t| t.name == tool)
                        .cloned()
                        .collect(),
                    ToolMode::Named(tool.to_owned()),
                ),
                (Some(_), _) => (Vec::new(), ToolMode::None),
                (None, _) => (self.tools.clone(), ToolMode::Auto),
            };
            view.step_started();
            let on_text = |piece: &str| view.text(piece);
            let streaming: Option<mcp_host::model::OnText<'_>> = view.streams().then_some(&on_text);
            let reply = tokio::select! {
                reply = self.model.complete(&self.conversation, streaming) => reply,
                _ = tokio::signal::ctrl_c() => {
                    view.step_ended();
                    return Err(Stopped::Cancelled);
                }
            };
            view.step_ended();
            let reply = reply.map_err(|e| Stopped::Failed(anyhow::anyhow!("the model: {e}")))?;
            if let Some(usage) = reply.usage {
                let total = used.get_or_insert_with(Usage::default);
                total.input_tokens += usage.input_tokens;
                total.output_tokens += usage.output_tokens;
            }
            self.conversation.messages.push(Message {
                speaker: Speaker::Assistant,
                parts: reply.parts.clone(),
            });
            let uses: Vec<(String, String, Map<String, Value>)> = reply
                .parts
                .iter()
                .filter_map(|part| match part {
                    Part::ToolUse { id, name, input } => {
                        Some((id.clone(), name.clone(), input.clone()))
                    }
                    _ => None,
                })
                .collect();
            if uses.is_empty() {
                return Ok(Turn {
                    answer: reply.text(),
                    streamed: view.streams(),
                    calls,
                    model: reply.model,
                    stop: reply.stop,
                    usage: used,
                });
            }
            let mut results = Vec::new();
            let mut cancelled = false;
            for (id, name, input) in uses {
                let (text, is_error) = if cancelled {
                    ("cancelled by the user".to_owned(), true)
                } else {
                    match self.call(&name, &input, view).await {
                        Some(answer) => answer,
                        None => {
                            cancelled = true;
                            ("cancelled by the user".to_owned(), true)
                        }
                    }
                };
                calls.push(Called {
                    name,
                    arguments: input,
                    result: text.clone(),
                    is_error,
                });
                results.push(Part::ToolResult { id, text, is_error });
            }
            // Every tool use gets its result, so the conversation stays
            // one the model takes, even after a cancel.
            self.conversation.messages.push(Message {
                speaker: Speaker::User,
                parts: results,
            });
            if cancelled {
                return Err(Stopped::Cancelled);
            }
        }
        Err(Stopped::Failed(anyhow::anyhow!(
            "the model did not answer within {} steps (--max-steps)",
            self.max_steps
        )))
    }

    /// One tool call, once allowed: its result as text and whether it
    /// failed; `None` when Ctrl-C cancelled it.
    async fn call(
        &self,
        name: &str,
        input: &Map<String, Value>,
        view: &dyn View,
    ) -> Option<(String, bool)> {
        view.tool_call(name, input);
        match self.approval.allows(name, input).await {
            Ok(true) => {}
            Ok(false) => {
                let refused = "the user refused this tool call".to_owned();
                view.tool_result(name, &refused, true);
                return Some((refused, true));
            }
            Err(why) => {
                view.tool_result(name, &why, true);
                return Some((why, true));
            }
        }
        let arguments = Value::Object(input.clone());
        // Dropping the call on Ctrl-C sends `notifications/cancelled`,
        // which the host passes to the server.
        let outcome = tokio::select! {
            outcome = self.client.call_tool(name, arguments) => outcome,
            _ = tokio::signal::ctrl_c() => {
                view.tool_result(name, "cancelled", true);
                return None;
            }
        };
        let (text, is_error) = match outcome {
            Ok(result) => (result_text(&result), result.is_error == Some(true)),
            Err(error) => (error.to_string(), true),
        };
        view.tool_result(name, &text, is_error);
        Some((text, is_error))
    }
}

/// A tool's result as the model reads it: its text, other content named,
/// else its structured content.
fn result_text(result: &CallToolResult) -> String {
    let mut parts = Vec::new();
    for block in &result.content {
        parts.push(match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => format!("[image, {}]", image.mime_type),
            ContentBlock::Audio(audio) => format!("[audio, {}]", audio.mime_type),
            other => serde_json::to_string(other).unwrap_or_default(),
        });
    }
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        return structured.to_string();
    }
    parts.join("\n")
}
