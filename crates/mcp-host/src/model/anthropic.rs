//! Anthropic's Messages API: a [`Conversation`] as a request body, and
//! the answer (whole, or streamed as `message_start`, `content_block_*`
//! and `message_delta` events) as a [`Reply`].

use serde_json::{Map, Value, json};

use super::{Conversation, ModelError, OnText, Part, Reply, Speaker, Stop, ToolMode, Usage};

/// The request body for `conversation`.
pub fn request(model: &str, conversation: &Conversation, max_tokens: u64, stream: bool) -> Value {
    let messages: Vec<Value> = conversation
        .messages
        .iter()
        .map(|message| {
            let role = match message.speaker {
                Speaker::User => "user",
                Speaker::Assistant => "assistant",
            };
            let content: Vec<Value> = message.parts.iter().map(block).collect();
            json!({"role": role, "content": content})
        })
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("max_tokens".into(), json!(max_tokens));
    if let Some(system) = &conversation.system {
        body.insert("system".into(), json!(system));
    }
    body.insert("messages".into(), Value::Array(messages));
    if let Some(temperature) = conversation.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if !conversation.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(conversation.stop));
    }
    if !conversation.tools.is_empty() {
        let tools: Vec<Value> = conversation
            .tools
            .iter()
            .map(|tool| {
                let mut spec = Map::new();
                spec.insert("name".into(), json!(tool.name));
                if let Some(description) = &tool.description {
                    spec.insert("description".into(), json!(description));
                }
                spec.insert(
                    "input_schema".into(),
                    Value::Object(tool.input_schema.clone()),
                );
                Value::Object(spec)
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &conversation.tool_mode {
            ToolMode::Auto => json!({"type": "auto"}),
            ToolMode::Required => json!({"type": "any"}),
            ToolMode::None => json!({"type": "none"}),
            ToolMode::Named(name) => json!({"type": "tool", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
    }
    if stream {
        body.insert("stream".into(), json!(true));
    }
    Value::Object(body)
}

fn block(part: &Part) -> Value {
    match part {
        Part::Text { text } => json!({"type": "text", "text": text}),
        Part::Image { data, mime_type } => json!({
            "type": "image",
            "source": {"type": "base64", "media_type": mime_type, "data": data},
        }),
        Part::ToolUse { id, name, input } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
        Part::ToolResult { id, text, is_error } => json!({
            "type": "tool_result",
            "tool_use_id": id,
            "content": text,
            "is_error": is_error,
        }),
    }
}

fn stop(reason: Option<&str>) -> Stop {
    match reason {
        None | Some("end_turn") => Stop::EndTurn,
        Some("max_tokens") => Stop::MaxTokens,
        Some("stop_sequence") => Stop::StopSequence,
        Some("tool_use") => Stop::ToolUse,
        Some(other) => Stop::Other(other.to_owned()),
    }
}

fn part(block: &Value) -> Result<Option<Part>, ModelError> {
    Ok(match block["type"].as_str() {
        Some("text") => Some(Part::Text {
            text: block["text"].as_str().unwrap_or_default().to_owned(),
        }),
        Some("tool_use") => {
            let input = match &block["input"] {
                Value::Object(input) => input.clone(),
                Value::Null => Map::new(),
                other => {
                    return Err(ModelError::Invalid(format!(
                        "a tool use whose input is not an object: {other}"
                    )));
                }
            };
            Some(Part::ToolUse {
                id: block["id"].as_str().unwrap_or_default().to_owned(),
                name: block["name"].as_str().unwrap_or_default().to_owned(),
                input,
            })
        }
        // Thinking and other blocks are not part of the answer.
        _ => None,
    })
}

/// A whole answer (`"type": "message"`).
pub fn reply(body: &Value) -> Result<Reply, ModelError> {
    let content = body["content"]
        .as_array()
        .ok_or_else(|| ModelError::Invalid(format!("no content in {body}")))?;
    let mut parts = Vec::new();
    for block in content {
        parts.extend(part(block)?);
    }
    let usage = body.get("usage").and_then(|u| {
        Some(Usage {
            input_tokens: u.get("input_tokens")?.as_u64()?,
            output_tokens: u.get("output_tokens")?.as_u64()?,
        })
    });
    Ok(Reply {
        model: body["model"].as_str().unwrap_or_default().to_owned(),
        parts,
        stop: stop(body["stop_reason"].as_str()),
        usage,
    })
}

/// A block being streamed in: its start, and the JSON of a tool use's
/// input as it arrives.
struct StreamedBlock {
    start: Value,
    text: String,
    json: String,
}

/// A streamed answer; text is handed to `on_text` as it comes.
pub async fn stream(response: reqwest::Response, on_text: OnText<'_>) -> Result<Reply, ModelError> {
    let mut model = String::new();
    let mut blocks: Vec<StreamedBlock> = Vec::new();
    let mut reason = None;
    let mut usage = Usage::default();
    let mut counted = false;
    super::transport::events(response, |event, data| {
        let value: Value = serde_json::from_str(data)
            .map_err(|e| ModelError::Invalid(format!("a streamed event is not JSON: {e}")))?;
        let kind = event.or(value["type"].as_str()).unwrap_or_default();
        match kind {
            "message_start" => {
                model = value
                    .pointer("/message/model")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                if let Some(n) = value
                    .pointer("/message/usage/input_tokens")
                    .and_then(Value::as_u64)
                {
                    usage.input_tokens = n;
                    counted = true;
                }
            }
            "content_block_start" => {
                if blocks.len() >= 1024 {
                    return Err(ModelError::Invalid("more than 1024 blocks".into()));
                }
                blocks.push(StreamedBlock {
                    start: value["content_block"].clone(),
                    text: String::new(),
                    json: String::new(),
                });
            }
            "content_block_delta" => {
                let index = value["index"].as_u64().unwrap_or(0) as usize;
                let Some(block) = blocks.get_mut(index) else {
                    return Err(ModelError::Invalid(format!(
                        "a delta for block {index}, which did not start"
                    )));
                };
                let delta = &value["delta"];
                match delta["type"].as_str() {
                    Some("text_delta") => {
                        let more = delta["text"].as_str().unwrap_or_default();
                        on_text(more);
                        block.text.push_str(more);
                    }
                    Some("input_json_delta") => {
                        block
                            .json
                            .push_str(delta["partial_json"].as_str().unwrap_or_default());
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    reason = Some(r.to_owned());
                }
                if let Some(n) = value
                    .pointer("/usage/output_tokens")
                    .and_then(Value::as_u64)
                {
                    usage.output_tokens = n;
                    counted = true;
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                return Err(ModelError::Refused {
                    status: 200,
                    message: super::transport::provider_message(data),
                });
            }
            _ => {}
        }
        Ok(false)
    })
    .await?;
    let mut parts = Vec::new();
    for block in blocks {
        let mut start = block.start;
        match start["type"].as_str() {
            Some("text") => {
                let mut text = start["text"].as_str().unwrap_or_default().to_owned();
                text.push_str(&block.text);
                parts.push(Part::Text { text });
            }
            Some("tool_use") if !block.json.trim().is_empty() => {
                let input: Value = serde_json::from_str(&block.json).map_err(|e| {
                    ModelError::Invalid(format!("a tool use's streamed input is not JSON: {e}"))
                })?;
                start["input"] = input;
                parts.extend(part(&start)?);
            }
            _ => parts.extend(part(&start)?),
        }
    }
    Ok(Reply {
        model,
        parts,
        stop: stop(reason.as_deref()),
        usage: counted.then_some(usage),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Message, ToolSpec};

    #[test]
    fn a_conversation_is_written_as_the_messages_api_wants_it() {
        let conversation = Conversation {
            system: Some("Be brief.".into()),
            messages: vec![
                Message::text(Speaker::User, "Add"),
                Message {
                    speaker: Speaker::Assistant,
                    parts: vec![Part::ToolUse {
                        id: "t1".into(),
                        name: "add".into(),
                        input: Map::new(),
                    }],
                },
                Message {
                    speaker: Speaker::User,
                    parts: vec![Part::ToolResult {
                        id: "t1".into(),
                        text: "3".into(),
                        is_error: false,
                    }],
                },
            ],
            tools: vec![ToolSpec {
                name: "add".into(),
                description: None,
                input_schema: Map::new(),
            }],
            tool_mode: ToolMode::Required,
            stop: vec!["\n\n".into()],
            ..Default::default()
        };
        assert_eq!(
            request("claude", &conversation, 100, false),
            json!({
                "model": "claude",
                "max_tokens": 100,
                "system": "Be brief.",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "Add"}]},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "add", "input": {}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "3", "is_error": false}]},
                ],
                "stop_sequences": ["\n\n"],
                "tools": [{"name": "add", "input_schema": {}}],
                "tool_choice": {"type": "any"},
            })
        );
    }

    #[test]
    fn an_answer_is_read_with_its_stop_and_usage() {
        let reply = reply(&json!({
            "type": "message", "model": "claude-x", "role": "assistant",
            "content": [{"type": "text", "text": "Let me add."}, {"type": "tool_use", "id": "t2", "name": "add", "input": {"a": 1}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 20, "output_tokens": 7}
        }))
        .unwrap();
        assert_eq!(reply.stop, Stop::ToolUse);
        assert_eq!(reply.text(), "Let me add.");
        assert_eq!(reply.usage.unwrap().output_tokens, 7);
        assert!(matches!(&reply.parts[1], Part::ToolUse { name, .. } if name == "add"));
    }
}
