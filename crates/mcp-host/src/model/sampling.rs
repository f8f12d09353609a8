//! MCP's `sampling/createMessage` both ways: its params as a
//! [`Conversation`], a [`Reply`] as its result, and the choice of model
//! by the request's `modelPreferences`.

use mcp_schema::{
    ContentBlock, CreateMessageRequestParams, CreateMessageResult, ErrorObject, ModelPreferences,
    Role, SamplingContent, SamplingMessageContentBlock, TextContent, ToolChoiceMode,
    ToolUseContent,
};
use serde_json::{Value, json};

use super::{Conversation, Message, Model, Part, Reply, Speaker, ToolMode, ToolSpec};

/// The `_meta` key under which a result carries the tokens used.
pub const USAGE_META: &str = "mcp-host/usage";

/// The conversation a sampling request asks for. Audio, which neither
/// wire protocol takes as input here, is refused.
pub fn conversation(params: &CreateMessageRequestParams) -> Result<Conversation, ErrorObject> {
    let mut messages = Vec::with_capacity(params.messages.len());
    for message in &params.messages {
        let speaker = match message.role {
            Role::User => Speaker::User,
            Role::Assistant => Speaker::Assistant,
        };
        let mut parts = Vec::new();
        for block in message.content.blocks() {
            parts.push(part(block)?);
        }
        messages.push(Message { speaker, parts });
    }
    let tools = params
        .tools
        .iter()
        .flatten()
        .map(|tool| ToolSpec {
            name: tool.name.clone(),
            description: tool.description.clone(),
            input_schema: tool.input_schema.clone(),
        })
        .collect();
    let tool_mode = match params.tool_choice.as_ref().and_then(|c| c.mode) {
        None | Some(ToolChoiceMode::Auto) => ToolMode::Auto,
        Some(ToolChoiceMode::Required) => ToolMode::Required,
        Some(ToolChoiceMode::None) => ToolMode::None,
    };
    Ok(Conversation {
        system: params.system_prompt.clone(),
        messages,
        max_tokens: Some(params.max_tokens),
        temperature: params.temperature,
        stop: params.stop_sequences.clone().unwrap_or_default(),
        tools,
        tool_mode,
    })
}

fn part(block: &SamplingMessageContentBlock) -> Result<Part, ErrorObject> {
    Ok(match block {
        SamplingMessageContentBlock::Text(text) => Part::Text {
            text: text.text.clone(),
        },
        SamplingMessageContentBlock::Image(image) => Part::Image {
            data: image.data.clone(),
            mime_type: image.mime_type.clone(),
        },
        SamplingMessageContentBlock::Audio(_) => {
            return Err(ErrorObject::invalid_params(
                "the host's model takes no audio in sampling requests",
            ));
        }
        SamplingMessageContentBlock::ToolUse(tool_use) => Part::ToolUse {
            id: tool_use.id.clone(),
            name: tool_use.name.clone(),
            input: tool_use.input.clone(),
        },
        SamplingMessageContentBlock::ToolResult(result) => Part::ToolResult {
            id: result.tool_use_id.clone(),
            text: result_text(&result.content, result.structured_content.as_ref()),
            is_error: result.is_error.unwrap_or(false),
        },
    })
}

/// A tool result as text: its text blocks, else its structured content,
/// else the blocks as JSON.
fn result_text(content: &[ContentBlock], structured: Option<&Value>) -> String {
    let texts: Vec<&str> = content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    if !texts.is_empty() {
        return texts.join("\n");
    }
    match structured {
        Some(structured) => structured.to_string(),
        None => serde_json::to_string(content).unwrap_or_default(),
    }
}

/// The sampling result a reply gives: its text and tool uses (one block
/// alone, else several), the stop reason, the model, and the tokens used
/// under `_meta` [`USAGE_META`].
pub fn result(reply: Reply) -> CreateMessageResult {
    let mut blocks: Vec<SamplingMessageContentBlock> = reply
        .parts
        .into_iter()
        .filter_map(|part| match part {
            Part::Text { text } => Some(SamplingMessageContentBlock::Text(TextContent::new(text))),
            Part::ToolUse { id, name, input } => {
                Some(SamplingMessageContentBlock::ToolUse(ToolUseContent {
                    meta: None,
                    id,
                    name,
                    input,
                }))
            }
            Part::Image { .. } | Part::ToolResult { .. } => None,
        })
        .collect();
    let content = match blocks.len() {
        0 => SamplingContent::text(""),
        1 => SamplingContent::Single(blocks.remove(0)),
        _ => SamplingContent::Multiple(blocks),
    };
    let meta = reply.usage.map(|usage| {
        let mut meta = mcp_schema::Meta::new();
        meta.insert(USAGE_META.into(), json!(usage));
        meta
    });
    CreateMessageResult {
        meta,
        role: Role::Assistant,
        content,
        model: reply.model,
        stop_reason: Some(reply.stop.as_mcp().to_owned()),
    }
}

/// The model for a request: the first of its name hints that is part of
/// a configured model's name; else, where it gives priorities, the model
/// that serves them best (each model's `cost`, `speed` and
/// `intelligence`, 0.5 where unset, weighed by them); else the first.
pub fn choose<'a>(
    models: &'a [Model],
    preferences: Option<&ModelPreferences>,
) -> Option<&'a Model> {
    let first = models.first()?;
    let Some(preferences) = preferences else {
        return Some(first);
    };
    for hint in preferences.hints.iter().flatten() {
        let Some(name) = hint.name.as_deref().map(str::to_ascii_lowercase) else {
            continue;
        };
        if name.is_empty() {
            continue;
        }
        if let Some(model) = models
            .iter()
            .find(|m| m.name().to_ascii_lowercase().contains(&name))
        {
            return Some(model);
        }
    }
    let weights = [
        preferences.cost_priority.unwrap_or(0.0),
        preferences.speed_priority.unwrap_or(0.0),
        preferences.intelligence_priority.unwrap_or(0.0),
    ];
    if weights.iter().all(|w| *w <= 0.0) {
        return Some(first);
    }
    let score = |model: &Model| {
        let s = model.settings();
        let traits = [s.cost, s.speed, s.intelligence].map(|t| t.unwrap_or(0.5));
        traits.iter().zip(weights).map(|(t, w)| t * w).sum::<f64>()
    };
    // The first of the best, so that ties keep the configured order.
    let mut best = first;
    for model in &models[1..] {
        if score(model) > score(best) {
            best = model;
        }
    }
    Some(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ModelSettings, Stop, Usage};
    use mcp_schema::{ModelHint, SamplingMessage, ToolChoice};

    fn model(name: &str, cost: f64, intelligence: f64) -> Model {
        let mut settings = ModelSettings::openai("http://127.0.0.1:9/v1", name);
        settings.cost = Some(cost);
        settings.intelligence = Some(intelligence);
        Model::new(settings).unwrap()
    }

    #[test]
    fn hints_then_priorities_choose_the_model() {
        let models = [
            model("gpt-small", 0.9, 0.2),
            model("claude-sonnet", 0.3, 0.9),
        ];
        let hinted = ModelPreferences {
            hints: Some(vec![
                ModelHint {
                    name: Some("opus".into()),
                },
                ModelHint {
                    name: Some("Sonnet".into()),
                },
            ]),
            ..Default::default()
        };
        assert_eq!(
            choose(&models, Some(&hinted)).unwrap().name(),
            "claude-sonnet"
        );
        let smart = ModelPreferences {
            intelligence_priority: Some(0.8),
            cost_priority: Some(0.1),
            ..Default::default()
        };
        assert_eq!(
            choose(&models, Some(&smart)).unwrap().name(),
            "claude-sonnet"
        );
        let cheap = ModelPreferences {
            cost_priority: Some(1.0),
            ..Default::default()
        };
        assert_eq!(choose(&models, Some(&cheap)).unwrap().name(), "gpt-small");
        assert_eq!(choose(&models, None).unwrap().name(), "gpt-small");
        assert!(choose(&[], None).is_none());
    }

    #[test]
    fn a_sampling_request_becomes_a_conversation_and_a_reply_its_result() {
        let mut params =
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 50);
        params.system_prompt = Some("sys".into());
        params.stop_sequences = Some(vec!["X".into()]);
        params.tool_choice = Some(ToolChoice {
            mode: Some(ToolChoiceMode::Required),
        });
        let conversation = conversation(&params).unwrap();
        assert_eq!(conversation.system.as_deref(), Some("sys"));
        assert_eq!(conversation.max_tokens, Some(50));
        assert_eq!(conversation.stop, ["X"]);
        assert_eq!(conversation.tool_mode, ToolMode::Required);
        assert_eq!(
            conversation.messages[0].parts,
            [Part::Text { text: "hi".into() }]
        );

        let result = result(Reply {
            model: "m".into(),
            parts: vec![Part::Text {
                text: "hello".into(),
            }],
            stop: Stop::MaxTokens,
            usage: Some(Usage {
                input_tokens: 3,
                output_tokens: 1,
            }),
        });
        let wire = serde_json::to_value(&result).unwrap();
        assert_eq!(
            wire,
            json!({
                "_meta": {"mcp-host/usage": {"inputTokens": 3, "outputTokens": 1}},
                "role": "assistant",
                "content": {"type": "text", "text": "hello"},
                "model": "m",
                "stopReason": "maxTokens",
            })
        );
    }

    #[test]
    fn audio_is_refused_clearly() {
        let message = SamplingMessage::new(
            Role::User,
            SamplingContent::Single(SamplingMessageContentBlock::Audio(
                mcp_schema::AudioContent::new("AAAA", "audio/wav"),
            )),
        );
        let error = conversation(&CreateMessageRequestParams::new(vec![message], 5)).unwrap_err();
        assert!(error.message.contains("audio"), "{}", error.message);
    }
}
