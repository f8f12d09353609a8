//! OpenAI's Chat Completions, as OpenAI, Ollama, llama.cpp's server,
//! vLLM, LM Studio and most gateways speak it: a [`Conversation`] as a
//! request body, and the answer (whole, or streamed as
//! `chat.completion.chunk` events) as a [`Reply`].

use serde_json::{Map, Value, json};

use super::{Conversation, ModelError, OnText, Part, Reply, Speaker, Stop, ToolMode, Usage};

/// The request body for `conversation`.
pub fn request(model: &str, conversation: &Conversation, max_tokens: u64, stream: bool) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = &conversation.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in &conversation.messages {
        match message.speaker {
            Speaker::User => user_messages(&message.parts, &mut messages),
            Speaker::Assistant => messages.push(assistant_message(&message.parts)),
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("max_tokens".into(), json!(max_tokens));
    if let Some(temperature) = conversation.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if !conversation.stop.is_empty() {
        body.insert("stop".into(), json!(conversation.stop));
    }
    if !conversation.tools.is_empty() && conversation.tool_mode != ToolMode::None {
        let tools: Vec<Value> = conversation
            .tools
            .iter()
            .map(|tool| {
                let mut function = Map::new();
                function.insert("name".into(), json!(tool.name));
                if let Some(description) = &tool.description {
                    function.insert("description".into(), json!(description));
                }
                function.insert(
                    "parameters".into(),
                    Value::Object(tool.input_schema.clone()),
                );
                json!({"type": "function", "function": function})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &conversation.tool_mode {
            ToolMode::Auto => json!("auto"),
            ToolMode::Required => json!("required"),
            ToolMode::None => json!("none"),
            ToolMode::Named(name) => json!({"type": "function", "function": {"name": name}}),
        };
        body.insert("tool_choice".into(), choice);
    }
    if stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

/// A user turn: its tool results as `tool` messages first (OpenAI wants
/// them right after the assistant's calls), then the rest as one `user`
/// message.
fn user_messages(parts: &[Part], messages: &mut Vec<Value>) {
    let mut content = Vec::new();
    for part in parts {
        match part {
            Part::ToolResult { id, text, is_error } => {
                let text = if *is_error {
                    format!("(the tool failed) {text}")
                } else {
                    text.clone()
                };
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": text}));
            }
            Part::Text { text } => content.push(json!({"type": "text", "text": text})),
            Part::Image { data, mime_type } => content.push(json!({
                "type": "image_url",
                "image_url": {"url": format!("data:{mime_type};base64,{data}")},
            })),
            Part::ToolUse { .. } => {}
        }
    }
    if content.is_empty() {
        return;
    }
    // Plain text as a string: every server takes that, not all take parts.
    let only_text = content.iter().all(|c| c["type"] == "text");
    let content = if only_text {
        let texts: Vec<&str> = content.iter().filter_map(|c| c["text"].as_str()).collect();
        json!(texts.join("\n"))
    } else {
        Value::Array(content)
    };
    messages.push(json!({"role": "user", "content": content}));
}

fn assistant_message(parts: &[Part]) -> Value {
    let mut text = String::new();
    let mut calls = Vec::new();
    for part in parts {
        match part {
            Part::Text { text: more } => text.push_str(more),
            Part::ToolUse { id, name, input } => calls.push(json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": Value::Object(input.clone()).to_string()},
            })),
            Part::Image { .. } | Part::ToolResult { .. } => {}
        }
    }
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    // Text, even empty beside tool calls: some servers take no `null`
    // there, and some templates read it.
    message.insert("content".into(), json!(text));
    if !calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(message)
}

/// The stop a `finish_reason` means.
fn stop(reason: Option<&str>) -> Stop {
    match reason {
        None | Some("stop") => Stop::EndTurn,
        Some("length") => Stop::MaxTokens,
        Some("tool_calls" | "function_call") => Stop::ToolUse,
        Some(other) => Stop::Other(other.to_owned()),
    }
}

fn usage(value: Option<&Value>) -> Option<Usage> {
    let value = value?;
    Some(Usage {
        input_tokens: value.get("prompt_tokens")?.as_u64()?,
        output_tokens: value.get("completion_tokens")?.as_u64()?,
    })
}

/// A tool call's arguments, which the API gives as a JSON text.
fn arguments(name: &str, text: &str) -> Result<Map<String, Value>, ModelError> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str(text) {
        Ok(Value::Object(arguments)) => Ok(arguments),
        _ => Err(ModelError::Invalid(format!(
            "the model called {name:?} with arguments that are not a JSON object: {text}"
        ))),
    }
}

/// A whole answer (`chat.completion`).
pub fn reply(body: &Value) -> Result<Reply, ModelError> {
    let choice = body
        .pointer("/choices/0")
        .ok_or_else(|| ModelError::Invalid(format!("no choices in {body}")))?;
    let message = &choice["message"];
    let mut parts = Vec::new();
    if let Some(text) = message["content"].as_str()
        && !text.is_empty()
    {
        parts.push(Part::Text {
            text: text.to_owned(),
        });
    }
    for call in message["tool_calls"].as_array().into_iter().flatten() {
        let name = call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .ok_or_else(|| ModelError::Invalid(format!("a tool call without a name: {call}")))?;
        let text = call
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or("");
        parts.push(Part::ToolUse {
            id: call["id"].as_str().unwrap_or(name).to_owned(),
            name: name.to_owned(),
            input: arguments(name, text)?,
        });
    }
    Ok(Reply {
        model: body["model"].as_str().unwrap_or_default().to_owned(),
        parts,
        stop: stop(choice["finish_reason"].as_str()),
        usage: usage(body.get("usage")),
    })
}

/// A tool call being streamed in.
#[derive(Default)]
struct StreamedCall {
    id: String,
    name: String,
    arguments: String,
}

/// A streamed answer: `chat.completion.chunk` events until `[DONE]`;
/// text is handed to `on_text` as it comes.
pub async fn stream(
    response: reqwest::Response,
    model: &str,
    on_text: OnText<'_>,
) -> Result<Reply, ModelError> {
    let mut text = String::new();
    let mut calls: Vec<StreamedCall> = Vec::new();
    let mut finish = None;
    let mut used = None;
    let mut answered_by = model.to_owned();
    super::transport::events(response, |_, data| {
        if data.trim() == "[DONE]" {
            return Ok(true);
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| ModelError::Invalid(format!("a streamed chunk is not JSON: {e}")))?;
        if let Some(error) = chunk.get("error") {
            return Err(ModelError::Refused {
                status: 200,
                message: super::transport::provider_message(&json!({ "error": error }).to_string()),
            });
        }
        if let Some(name) = chunk["model"].as_str() {
            answered_by = name.to_owned();
        }
        if let Some(u) = usage(chunk.get("usage").filter(|u| !u.is_null())) {
            used = Some(u);
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(false);
        };
        let delta = &choice["delta"];
        if let Some(more) = delta["content"].as_str()
            && !more.is_empty()
        {
            on_text(more);
            text.push_str(more);
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"].as_u64().unwrap_or(calls.len() as u64) as usize;
            if index > 1024 {
                return Err(ModelError::Invalid(format!("a tool call numbered {index}")));
            }
            while calls.len() <= index {
                calls.push(StreamedCall::default());
            }
            let streamed = &mut calls[index];
            if let Some(id) = call["id"].as_str() {
                streamed.id = id.to_owned();
            }
            // The name comes whole (some servers repeat it in each chunk).
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str)
                && !name.is_empty()
            {
                name.clone_into(&mut streamed.name);
            }
            if let Some(more) = call.pointer("/function/arguments").and_then(Value::as_str) {
                streamed.arguments.push_str(more);
            }
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            finish = Some(reason.to_owned());
        }
        Ok(false)
    })
    .await?;
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(Part::Text { text });
    }
    for call in calls {
        let id = if call.id.is_empty() {
            call.name.clone()
        } else {
            call.id
        };
        let input = arguments(&call.name, &call.arguments)?;
        parts.push(Part::ToolUse {
            id,
            name: call.name,
            input,
        });
    }
    Ok(Reply {
        model: answered_by,
        parts,
        stop: stop(finish.as_deref()),
        usage: used,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Message, ToolSpec};

    #[test]
    fn a_conversation_with_tools_is_written_as_chat_completions_wants_it() {
        let mut input = Map::new();
        input.insert("city".into(), json!("Paris"));
        let conversation = Conversation {
            system: Some("Be brief.".into()),
            messages: vec![
                Message::text(Speaker::User, "Weather?"),
                Message {
                    speaker: Speaker::Assistant,
                    parts: vec![Part::ToolUse {
                        id: "c1".into(),
                        name: "weather".into(),
                        input,
                    }],
                },
                Message {
                    speaker: Speaker::User,
                    parts: vec![
                        Part::ToolResult {
                            id: "c1".into(),
                            text: "sunny".into(),
                            is_error: false,
                        },
                        Part::Image {
                            data: "AAAA".into(),
                            mime_type: "image/png".into(),
                        },
                    ],
                },
            ],
            max_tokens: None,
            temperature: Some(0.5),
            stop: vec!["END".into()],
            tools: vec![ToolSpec {
                name: "weather".into(),
                description: Some("The weather".into()),
                input_schema: serde_json::from_value(json!({"type": "object"})).unwrap(),
            }],
            tool_mode: ToolMode::Named("weather".into()),
        };
        let body = request("m", &conversation, 64, true);
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Weather?"},
                    {"role": "assistant", "content": "", "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}
                    ]},
                    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                    {"role": "user", "content": [
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
                    ]},
                ],
                "max_tokens": 64,
                "temperature": 0.5,
                "stop": ["END"],
                "tools": [{"type": "function", "function": {"name": "weather", "description": "The weather", "parameters": {"type": "object"}}}],
                "tool_choice": {"type": "function", "function": {"name": "weather"}},
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
    }

    #[test]
    fn an_answer_with_a_tool_call_is_read_with_its_stop_and_usage() {
        let reply = reply(&json!({
            "model": "smol",
            "choices": [{"message": {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 1}"}}
            ]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
        }))
        .unwrap();
        assert_eq!(reply.model, "smol");
        assert_eq!(reply.stop, Stop::ToolUse);
        assert_eq!(
            reply.usage,
            Some(Usage {
                input_tokens: 10,
                output_tokens: 3
            })
        );
        let Part::ToolUse { id, name, input } = &reply.parts[0] else {
            panic!("{:?}", reply.parts)
        };
        assert_eq!((id.as_str(), name.as_str()), ("call_1", "add"));
        assert_eq!(input["a"], 1);
        let bad = super::reply(&json!({"choices": [{"message": {"tool_calls": [
            {"id": "x", "function": {"name": "add", "arguments": "{not json"}}
        ]}}]}));
        assert!(
            matches!(bad, Err(ModelError::Invalid(ref m)) if m.contains("add")),
            "{bad:?}"
        );
        assert_eq!(
            super::reply(
                &json!({"choices": [{"message": {"content": "hi"}, "finish_reason": "length"}]})
            )
            .unwrap()
            .stop,
            Stop::MaxTokens
        );
    }
}
