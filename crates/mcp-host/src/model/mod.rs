//! Model providers: the host's own language model, for sampling answered
//! at the host and for `mcp chat`.
//!
//! Two wire protocols cover nearly every provider: OpenAI's Chat
//! Completions (OpenAI, Ollama, llama.cpp's server, vLLM, LM Studio and
//! most hosted gateways; [`openai`]) and Anthropic's Messages
//! ([`anthropic`]). Both are spoken over `reqwest`, whole or streamed
//! (server-sent events), with retries on 429 and 5xx that honour
//! `Retry-After` (`model/transport.rs`). A conversation is held in the neutral
//! [`Conversation`] form, which [`sampling`] maps to and from MCP's
//! `sampling/createMessage`. Keys are read from the environment and never
//! logged or shown.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub mod anthropic;
pub mod openai;
pub mod sampling;
mod transport;

pub use transport::ModelError;

/// Which wire protocol a provider speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI's Chat Completions, `POST {base_url}/chat/completions`.
    #[default]
    Openai,
    /// Anthropic's Messages, `POST {base_url}/messages`.
    Anthropic,
}

/// `[model]` (and each `[models.NAME]`) in the settings file: one model
/// at one provider.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ModelSettings {
    /// The wire protocol: `openai` (any OpenAI-compatible server) or
    /// `anthropic`.
    #[serde(default)]
    pub provider: ProviderKind,
    /// Where the API is: `https://api.openai.com/v1` by default for
    /// `openai`, `https://api.anthropic.com/v1` for `anthropic`;
    /// `http://127.0.0.1:11434/v1` for Ollama.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The model's name at the provider.
    pub model: String,
    /// The environment variable holding the API key (default
    /// `OPENAI_API_KEY` or `ANTHROPIC_API_KEY`); a local server needs
    /// none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Seconds a whole answer may take (default 120).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Retries on 429, 5xx and lost connections (default 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    /// The most tokens an answer may have when the request does not say
    /// (Anthropic requires a number; default 1024).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// For choosing among models by a request's preferences: how cheap
    /// (0 to 1, higher is cheaper).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// How fast (0 to 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    /// How capable (0 to 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intelligence: Option<f64>,
}

impl ModelSettings {
    /// A model `model` at an OpenAI-compatible server at `base_url`.
    pub fn openai(base_url: &str, model: &str) -> Self {
        ModelSettings {
            provider: ProviderKind::Openai,
            base_url: Some(base_url.to_owned()),
            model: model.to_owned(),
            ..Default::default()
        }
    }

    /// A model `model` at an Anthropic Messages server at `base_url`.
    pub fn anthropic(base_url: &str, model: &str) -> Self {
        ModelSettings {
            provider: ProviderKind::Anthropic,
            base_url: Some(base_url.to_owned()),
            model: model.to_owned(),
            ..Default::default()
        }
    }

    /// Checks the values (a URL that parses, a model name, priorities in
    /// range); `key` names the table in errors.
    pub fn check(&self, key: &str) -> Result<(), String> {
        if self.model.trim().is_empty() {
            return Err(format!("{key}.model must name a model"));
        }
        let base = self.base_url();
        let parsed = reqwest::Url::parse(&base)
            .map_err(|e| format!("{key}.base_url {base:?} is not a URL: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("{key}.base_url {base:?} must be http or https"));
        }
        if let Some(timeout) = self.timeout
            && !(timeout.is_finite() && timeout > 0.0 && timeout <= 86_400.0)
        {
            return Err(format!(
                "{key}.timeout must be seconds in (0, 86400], not {timeout}"
            ));
        }
        for (value, name) in [
            (self.cost, "cost"),
            (self.speed, "speed"),
            (self.intelligence, "intelligence"),
        ] {
            if let Some(value) = value
                && !(0.0..=1.0).contains(&value)
            {
                return Err(format!("{key}.{name} must be in [0, 1], not {value}"));
            }
        }
        if self.max_tokens == Some(0) {
            return Err(format!("{key}.max_tokens must be positive"));
        }
        Ok(())
    }

    /// The base URL, the provider's default where unset, without a
    /// trailing slash.
    pub fn base_url(&self) -> String {
        let base = self.base_url.as_deref().unwrap_or(match self.provider {
            ProviderKind::Openai => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com/v1",
        });
        base.trim_end_matches('/').to_owned()
    }

    /// The environment variable holding the key.
    pub fn key_variable(&self) -> &str {
        self.api_key_env.as_deref().unwrap_or(match self.provider {
            ProviderKind::Openai => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        })
    }
}

/// Who speaks a [`Message`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Speaker {
    /// The person (or the server asking, in sampling).
    User,
    /// The model.
    Assistant,
}

/// One part of a message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64 `data` of type `mime_type`.
    Image {
        /// Base64 bytes.
        data: String,
        /// Its MIME type.
        mime_type: String,
    },
    /// The model asks to use a tool.
    ToolUse {
        /// Names this use; its result refers to it.
        id: String,
        /// The tool.
        name: String,
        /// The arguments (a JSON object).
        input: Map<String, Value>,
    },
    /// What a tool use gave.
    ToolResult {
        /// The use it answers.
        id: String,
        /// The result as text.
        text: String,
        /// Whether the tool failed.
        is_error: bool,
    },
}

/// One turn of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub speaker: Speaker,
    /// What they say.
    pub parts: Vec<Part>,
}

impl Message {
    /// A text message from `speaker`.
    pub fn text(speaker: Speaker, text: impl Into<String>) -> Self {
        Message {
            speaker,
            parts: vec![Part::Text { text: text.into() }],
        }
    }
}

/// A tool the model may use.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: Option<String>,
    /// The JSON Schema of its arguments.
    pub input_schema: Map<String, Value>,
}

/// Whether the model may, must or must not use the tools.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum ToolMode {
    /// The model decides.
    #[default]
    Auto,
    /// At least one tool.
    Required,
    /// None.
    None,
    /// This one tool.
    Named(String),
}

/// What the model is asked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Conversation {
    /// The system prompt.
    pub system: Option<String>,
    /// The turns so far.
    pub messages: Vec<Message>,
    /// The most tokens to produce; the model's default where unset.
    pub max_tokens: Option<u64>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Sequences that end the answer.
    pub stop: Vec<String>,
    /// Tools offered.
    pub tools: Vec<ToolSpec>,
    /// How the tools may be used.
    pub tool_mode: ToolMode,
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// It finished its turn.
    EndTurn,
    /// It reached the token limit.
    MaxTokens,
    /// It produced a stop sequence.
    StopSequence,
    /// It asks to use tools.
    ToolUse,
    /// Another reason, as the provider names it.
    Other(String),
}

impl Stop {
    /// The MCP `stopReason`.
    pub fn as_mcp(&self) -> &str {
        use mcp_schema::sampling::stop_reason;
        match self {
            Stop::EndTurn => stop_reason::END_TURN,
            Stop::MaxTokens => stop_reason::MAX_TOKENS,
            Stop::StopSequence => stop_reason::STOP_SEQUENCE,
            Stop::ToolUse => stop_reason::TOOL_USE,
            Stop::Other(other) => other,
        }
    }
}

/// Tokens used by one answer, as the provider counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Of the prompt.
    pub input_tokens: u64,
    /// Of the answer.
    pub output_tokens: u64,
}

/// The model's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// The model that answered, as the provider names it.
    pub model: String,
    /// Text and tool uses, in order.
    pub parts: Vec<Part>,
    /// Why it stopped.
    pub stop: Stop,
    /// Tokens used, where the provider says.
    pub usage: Option<Usage>,
}

impl Reply {
    /// The text parts, joined.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|part| match part {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// Sees an answer's text as it streams in.
pub type OnText<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// One configured model, ready to be asked. Cheap to clone.
#[derive(Clone)]
pub struct Model {
    inner: Arc<ModelInner>,
}

struct ModelInner {
    settings: ModelSettings,
    http: reqwest::Client,
    key: Option<transport::Key>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("provider", &self.inner.settings.provider)
            .field("base_url", &self.inner.settings.base_url())
            .field("model", &self.inner.settings.model)
            .field("key", &self.inner.key.as_ref().map(|_| "(set)"))
            .finish()
    }
}

/// How long an answer may take where the settings do not say.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Retries where the settings do not say.
const DEFAULT_RETRIES: u32 = 3;

/// The answer's length where neither the request nor the settings say.
pub const DEFAULT_MAX_TOKENS: u64 = 1024;

impl Model {
    /// The model `settings` describe, its key read from the environment
    /// now. An error where the settings do not check.
    pub fn new(settings: ModelSettings) -> Result<Model, String> {
        settings.check("model")?;
        let key = std::env::var(settings.key_variable())
            .ok()
            .filter(|key| !key.is_empty())
            .map(transport::Key::new);
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("the HTTP client cannot be made: {e}"))?;
        Ok(Model {
            inner: Arc::new(ModelInner {
                settings,
                http,
                key,
            }),
        })
    }

    /// Its settings.
    pub fn settings(&self) -> &ModelSettings {
        &self.inner.settings
    }

    /// The model's name at its provider.
    pub fn name(&self) -> &str {
        &self.inner.settings.model
    }

    /// Asks the model, streaming the answer when `on_text` wants to see
    /// it as it comes.
    pub async fn complete(
        &self,
        conversation: &Conversation,
        on_text: Option<OnText<'_>>,
    ) -> Result<Reply, ModelError> {
        let settings = &self.inner.settings;
        let max_tokens = conversation
            .max_tokens
            .or(settings.max_tokens)
            .unwrap_or(DEFAULT_MAX_TOKENS);
        let stream = on_text.is_some();
        let (path, body) = match settings.provider {
            ProviderKind::Openai => (
                "/chat/completions",
                openai::request(&settings.model, conversation, max_tokens, stream),
            ),
            ProviderKind::Anthropic => (
                "/messages",
                anthropic::request(&settings.model, conversation, max_tokens, stream),
            ),
        };
        let call = transport::Call {
            http: &self.inner.http,
            url: format!("{}{path}", settings.base_url()),
            provider: settings.provider,
            key: self.inner.key.as_ref(),
            model: &settings.model,
            retries: settings.retries.unwrap_or(DEFAULT_RETRIES),
        };
        let timeout = settings
            .timeout
            .map(Duration::from_secs_f64)
            .unwrap_or(DEFAULT_TIMEOUT);
        let answer = async {
            let response = call.send(&body).await?;
            match (settings.provider, on_text) {
                (ProviderKind::Openai, None) => openai::reply(&transport::json(response).await?),
                (ProviderKind::Openai, Some(on_text)) => {
                    openai::stream(response, &settings.model, on_text).await
                }
                (ProviderKind::Anthropic, None) => {
                    anthropic::reply(&transport::json(response).await?)
                }
                (ProviderKind::Anthropic, Some(on_text)) => {
                    anthropic::stream(response, on_text).await
                }
            }
        };
        tokio::time::timeout(timeout, answer)
            .await
            .map_err(|_| ModelError::Timeout(timeout))?
    }
}
