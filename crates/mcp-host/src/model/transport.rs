//! One request to a provider: the key in the right header, retries on
//! 429, 5xx and lost connections (waiting as `Retry-After` says, else
//! backing off), and errors that say what went wrong and what to do.

use std::time::Duration;

use serde_json::Value;

use super::ProviderKind;

/// An API key; shown nowhere.
pub(super) struct Key(String);

impl Key {
    pub(super) fn new(key: String) -> Key {
        Key(key)
    }
}

/// Why a model could not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The provider refused the key (401 or 403).
    #[error("the provider refused the API key ({status}): {message}; check {variable}")]
    Unauthorized {
        /// The HTTP status.
        status: u16,
        /// The provider's words.
        message: String,
        /// The environment variable the key is read from.
        variable: String,
    },
    /// The provider has no such model.
    #[error("the provider has no model {model:?}: {message}")]
    UnknownModel {
        /// The model asked for.
        model: String,
        /// The provider's words.
        message: String,
    },
    /// The conversation is longer than the model's context.
    #[error("the conversation does not fit the model's context: {0}")]
    ContextLength(String),
    /// Still refused for load after every retry.
    #[error("the provider is busy ({status}) after {attempts} attempts: {message}")]
    Busy {
        /// The last HTTP status.
        status: u16,
        /// Attempts made.
        attempts: u32,
        /// The provider's words.
        message: String,
    },
    /// Another refusal.
    #[error("the provider answered {status}: {message}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The provider's words.
        message: String,
    },
    /// The provider could not be reached.
    #[error("the provider at {url} cannot be reached: {message}")]
    Unreachable {
        /// Where it was asked.
        url: String,
        /// Why.
        message: String,
    },
    /// No whole answer in time.
    #[error("the model did not answer within {0:?}")]
    Timeout(Duration),
    /// An answer that cannot be read.
    #[error("the provider's answer cannot be read: {0}")]
    Invalid(String),
}

/// Waits before a retry where the provider does not say, doubling from
/// this.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// The longest wait before a retry, whatever `Retry-After` says.
const MAX_WAIT: Duration = Duration::from_secs(30);

/// One request to a provider.
pub(super) struct Call<'a> {
    pub(super) http: &'a reqwest::Client,
    pub(super) url: String,
    pub(super) provider: ProviderKind,
    pub(super) key: Option<&'a Key>,
    pub(super) model: &'a str,
    pub(super) retries: u32,
}

impl Call<'_> {
    /// Posts `body`, retrying what may succeed later; a response with a
    /// success status, or the error its failure means.
    pub(super) async fn send(&self, body: &Value) -> Result<reqwest::Response, ModelError> {
        let body = serde_json::to_vec(body).map_err(|e| ModelError::Invalid(e.to_string()))?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = attempt > self.retries;
            let sent = self.request(body.clone()).send().await;
            let response = match sent {
                Ok(response) => response,
                Err(error) if !last && (error.is_connect() || error.is_request()) => {
                    tokio::time::sleep(backoff(attempt)).await;
                    continue;
                }
                Err(error) => {
                    return Err(ModelError::Unreachable {
                        url: self.url.clone(),
                        message: without_url(&error),
                    });
                }
            };
            let status = response.status().as_u16();
            if response.status().is_success() {
                return Ok(response);
            }
            let wait = retry_after(response.headers());
            let text = error_text(response).await;
            let message = provider_message(&text);
            if matches!(status, 429 | 500 | 502 | 503 | 504 | 529) {
                if last {
                    return Err(ModelError::Busy {
                        status,
                        attempts: attempt,
                        message,
                    });
                }
                tokio::time::sleep(wait.unwrap_or_else(|| backoff(attempt)).min(MAX_WAIT)).await;
                continue;
            }
            return Err(self.refusal(status, message));
        }
    }

    fn request(&self, body: Vec<u8>) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        match self.provider {
            ProviderKind::Openai => {
                if let Some(key) = self.key {
                    request = request.bearer_auth(&key.0);
                }
            }
            ProviderKind::Anthropic => {
                request = request.header("anthropic-version", "2023-06-01");
                if let Some(key) = self.key {
                    request = request.header("x-api-key", &key.0);
                }
            }
        }
        request
    }

    /// The error a refusal with `status` means.
    fn refusal(&self, status: u16, message: String) -> ModelError {
        let lower = message.to_ascii_lowercase();
        let about_model = lower.contains("model");
        if status == 401 || status == 403 {
            let variable = match self.provider {
                ProviderKind::Openai => "the variable named by api_key_env (OPENAI_API_KEY)",
                ProviderKind::Anthropic => "the variable named by api_key_env (ANTHROPIC_API_KEY)",
            };
            ModelError::Unauthorized {
                status,
                message,
                variable: variable.to_owned(),
            }
        } else if lower.contains("context length")
            || lower.contains("context_length")
            || lower.contains("context window")
            || lower.contains("maximum context")
            || lower.contains("prompt is too long")
            || lower.contains("exceeds the context")
        {
            ModelError::ContextLength(message)
        } else if about_model
            && (status == 404 || lower.contains("not found") || lower.contains("does not exist"))
        {
            ModelError::UnknownModel {
                model: self.model.to_owned(),
                message,
            }
        } else if status == 404 {
            ModelError::Refused {
                status,
                message: format!(
                    "{message} (no such path: {}; is base_url right? it usually ends in /v1)",
                    self.url
                ),
            }
        } else {
            ModelError::Refused { status, message }
        }
    }
}

/// The wait before retry `attempt` (1, 2, ...) where the provider does not
/// say.
fn backoff(attempt: u32) -> Duration {
    FIRST_BACKOFF
        .saturating_mul(1 << attempt.saturating_sub(1).min(6))
        .min(MAX_WAIT)
}

/// What `Retry-After` (seconds or an HTTP date) or OpenAI's
/// `retry-after-ms` asks.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = text("retry-after")?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The provider's own words in an error body: `error.message` (OpenAI,
/// Anthropic), `message` or `detail`, else the body itself, shortened.
pub(super) fn provider_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let found = parsed.as_ref().and_then(|value| {
        [
            value.pointer("/error/message"),
            value.get("error").filter(|e| e.is_string()),
            value.get("message"),
            value.get("detail"),
        ]
        .into_iter()
        .flatten()
        .next()
        .map(|found| match found {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
    });
    let text = found.unwrap_or_else(|| body.trim().to_owned());
    if text.is_empty() {
        return "(no message)".into();
    }
    let mut shown: String = text.chars().take(500).collect();
    if shown.len() < text.len() {
        shown.push_str("...");
    }
    shown
}

/// A reqwest error's text without the URL (which it repeats).
fn without_url(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    if let Some(source) = std::error::Error::source(error) {
        text = source.to_string();
    }
    text
}

/// The most an answer may hold, whole or streamed: far beyond any
/// model's reply, and memory stays bounded whatever the provider sends.
pub(super) const MAX_ANSWER_BYTES: usize = 16 << 20;

/// The most of an error's body that is read for its message.
const MAX_ERROR_BYTES: usize = 64 << 10;

/// The body of `response`, at most `max` bytes: `Err(true)` where it is
/// longer (what was read is dropped), `Err(false)` where it was cut off.
async fn body_within(response: reqwest::Response, max: usize) -> Result<Vec<u8>, (bool, String)> {
    use futures::StreamExt as _;
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| (false, e.to_string()))?;
        if body.len() + chunk.len() > max {
            let room = max - body.len();
            body.extend_from_slice(&chunk[..room]);
            return Err((true, String::from_utf8_lossy(&body).into_owned()));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// An error's body, as much as is read for its message.
async fn error_text(response: reqwest::Response) -> String {
    match body_within(response, MAX_ERROR_BYTES).await {
        Ok(body) => String::from_utf8_lossy(&body).into_owned(),
        Err((_, read)) => read,
    }
}

/// A whole JSON answer.
pub(super) async fn json(response: reqwest::Response) -> Result<Value, ModelError> {
    let bytes = body_within(response, MAX_ANSWER_BYTES)
        .await
        .map_err(|(long, why)| {
            ModelError::Invalid(if long {
                format!("the answer is longer than {MAX_ANSWER_BYTES} bytes")
            } else {
                format!("the answer was cut off: {why}")
            })
        })?;
    serde_json::from_slice(&bytes).map_err(|e| ModelError::Invalid(format!("not JSON: {e}")))
}

/// Reads a streamed answer's server-sent events, handing each event's
/// data to `on_data` until it says the stream is done (`Ok(true)`) or
/// the stream ends.
pub(super) async fn events(
    response: reqwest::Response,
    mut on_data: impl FnMut(Option<&str>, &str) -> Result<bool, ModelError>,
) -> Result<(), ModelError> {
    use futures::StreamExt as _;
    let mut parser = mcp_http::sse::SseParser::new();
    let mut body = response.bytes_stream();
    let mut read = 0;
    while let Some(chunk) = body.next().await {
        let chunk =
            chunk.map_err(|e| ModelError::Invalid(format!("the stream was cut off: {e}")))?;
        read += chunk.len();
        if read > MAX_ANSWER_BYTES {
            return Err(ModelError::Invalid(format!(
                "the streamed answer is longer than {MAX_ANSWER_BYTES} bytes"
            )));
        }
        for event in parser.feed(&chunk) {
            if on_data(event.event.as_deref(), &event.data)? {
                return Ok(());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provider_message_is_found_where_each_provider_puts_it() {
        assert_eq!(
            provider_message(r#"{"error":{"message":"bad key","type":"x"}}"#),
            "bad key"
        );
        assert_eq!(
            provider_message(
                r#"{"type":"error","error":{"type":"not_found_error","message":"model: x"}}"#
            ),
            "model: x"
        );
        assert_eq!(provider_message(r#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(provider_message("plain words\n"), "plain words");
        assert_eq!(provider_message(""), "(no message)");
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        let mut dated = reqwest::header::HeaderMap::new();
        let later = std::time::SystemTime::now() + Duration::from_secs(100);
        dated.insert(
            "retry-after",
            httpdate::fmt_http_date(later).parse().unwrap(),
        );
        let wait = retry_after(&dated).unwrap();
        assert!(wait > Duration::from_secs(95) && wait <= Duration::from_secs(100));
        dated.insert("retry-after", "soon".parse().unwrap());
        assert_eq!(retry_after(&dated), None);
    }

    #[test]
    fn backoff_doubles_up_to_a_cap() {
        assert_eq!(backoff(1), Duration::from_millis(500));
        assert_eq!(backoff(2), Duration::from_secs(1));
        assert_eq!(backoff(20), MAX_WAIT);
    }
}
