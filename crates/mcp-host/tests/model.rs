//! The host's model providers against real servers: the OpenAI-compatible
//! client against llama-cpp-python's server with SmolLM2-135M (wire
//! shapes, forced tool calls, streaming, stop reasons and usage; never
//! the wording of a tiny model's answer), and both clients against a
//! scripted server that answers as the providers' published references
//! describe (the Anthropic Messages API, retries, errors).

mod support {
    #[path = "fake_provider.rs"]
    pub mod fake_provider;
    #[path = "local_model.rs"]
    pub mod local_model;
    #[allow(dead_code)]
    #[path = "../../../mcp-redis/tests/support/needs.rs"]
    pub mod needs;
}

use std::sync::Mutex;
use std::time::{Duration, Instant};

use mcp_host::model::{
    Conversation, Message, Model, ModelError, ModelSettings, Part, Speaker, Stop, ToolMode,
    ToolSpec, sampling,
};
use mcp_schema::{CreateMessageRequestParams, SamplingMessage};
use serde_json::json;
use support::fake_provider::{Answer, FakeProvider};
use support::local_model::{LocalModel, MODEL, MODEL_NAME};

fn add_tool() -> ToolSpec {
    ToolSpec {
        name: "add".into(),
        description: Some("Adds two integers".into()),
        input_schema: serde_json::from_value(json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        }))
        .unwrap(),
    }
}

fn ask(text: &str, max_tokens: u64) -> Conversation {
    Conversation {
        messages: vec![Message::text(Speaker::User, text)],
        max_tokens: Some(max_tokens),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openai_client_talks_to_llama_cpp_whole_streamed_and_with_tools() {
    if !MODEL.met() {
        return;
    }
    let server = tokio::task::spawn_blocking(LocalModel::start)
        .await
        .unwrap();
    let model = Model::new(ModelSettings::openai(&server.base_url, MODEL_NAME)).unwrap();

    // A whole answer: text, a stop reason, usage within the limit.
    let reply = model.complete(&ask("Say hello.", 12), None).await.unwrap();
    assert_eq!(reply.model, MODEL_NAME);
    assert!(
        matches!(reply.stop, Stop::EndTurn | Stop::MaxTokens),
        "{reply:?}"
    );
    assert!(!reply.text().is_empty(), "{reply:?}");
    let usage = reply.usage.expect("llama.cpp counts tokens");
    assert!(
        usage.input_tokens > 0 && (1..=12).contains(&usage.output_tokens),
        "{usage:?}"
    );
    // Three tokens at most: a long answer stops for its length.
    let short = model
        .complete(&ask("Write a long story about a dragon.", 3), None)
        .await
        .unwrap();
    assert_eq!(short.stop, Stop::MaxTokens, "{short:?}");

    // Streamed: the pieces arrive one by one and make the whole text.
    let pieces = Mutex::new(Vec::new());
    let on_text = |text: &str| pieces.lock().unwrap().push(text.to_owned());
    let streamed = model
        .complete(&ask("Count to five.", 16), Some(&on_text))
        .await
        .unwrap();
    let pieces = pieces.into_inner().unwrap();
    assert!(pieces.len() > 1, "{pieces:?}");
    assert_eq!(pieces.concat(), streamed.text());
    assert!(matches!(streamed.stop, Stop::EndTurn | Stop::MaxTokens));

    // A forced tool call: its name and JSON arguments as the schema says.
    let mut conversation = ask("Add 2 and 3.", 64);
    conversation.tools = vec![add_tool()];
    conversation.tool_mode = ToolMode::Named("add".into());
    let called = model.complete(&conversation, None).await.unwrap();
    assert_eq!(called.stop, Stop::ToolUse, "{called:?}");
    let Some(Part::ToolUse { id, name, input }) = called.parts.last().cloned() else {
        panic!("no tool use: {called:?}")
    };
    assert_eq!(name, "add");
    assert!(input["a"].is_i64() && input["b"].is_i64(), "{input:?}");

    // The same streamed: the call's name once, its arguments whole.
    let ignore = |_: &str| {};
    let streamed_call = model.complete(&conversation, Some(&ignore)).await.unwrap();
    assert_eq!(streamed_call.stop, Stop::ToolUse, "{streamed_call:?}");
    let Some(Part::ToolUse { name, input, .. }) = streamed_call.parts.last() else {
        panic!("no tool use: {streamed_call:?}")
    };
    assert_eq!(name, "add");
    assert!(input["a"].is_i64() && input["b"].is_i64(), "{input:?}");

    // The result goes back, and the model answers in words.
    conversation.messages.push(Message {
        speaker: Speaker::Assistant,
        parts: called.parts.clone(),
    });
    conversation.messages.push(Message {
        speaker: Speaker::User,
        parts: vec![Part::ToolResult {
            id,
            text: "5".into(),
            is_error: false,
        }],
    });
    conversation.tool_mode = ToolMode::None;
    conversation.max_tokens = Some(16);
    let answered = model.complete(&conversation, None).await.unwrap();
    assert!(
        matches!(answered.stop, Stop::EndTurn | Stop::MaxTokens),
        "{answered:?}"
    );
    assert!(!answered.text().is_empty());

    // A sampling request through the mapping: a valid MCP result.
    let mut params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("Hello!")], 8);
    params.system_prompt = Some("You are terse.".into());
    let reply = model
        .complete(&sampling::conversation(&params).unwrap(), None)
        .await
        .unwrap();
    let result = serde_json::to_value(sampling::result(reply)).unwrap();
    assert_eq!(result["role"], "assistant");
    assert_eq!(result["model"], MODEL_NAME);
    assert_eq!(result["content"]["type"], "text");
    assert!(
        ["endTurn", "maxTokens"].contains(&result["stopReason"].as_str().unwrap()),
        "{result}"
    );
    assert!(
        result["_meta"][sampling::USAGE_META]["outputTokens"]
            .as_u64()
            .unwrap()
            <= 8
    );
}

#[tokio::test]
async fn the_anthropic_client_speaks_the_messages_api_whole_and_streamed() {
    let message = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [
            {"type": "text", "text": "I will add."},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 25, "output_tokens": 9}
    });
    let stream = Answer::events(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-test", "content": [], "stop_reason": null, "usage": {"input_tokens": 12, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        ("ping", json!({"type": "ping"})),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_2", "name": "add", "input": {}}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"a\": 1,"}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": " \"b\": 4}"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 15}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]);
    let provider = FakeProvider::start(vec![Answer::json(200, message), stream]).await;
    // SAFETY: this test binary's tests set no other variable and read
    // this one only here.
    unsafe { std::env::set_var("TEST_ANTHROPIC_KEY", "sk-ant-test") };
    let mut settings = ModelSettings::anthropic(&provider.base_url, "claude-test");
    settings.api_key_env = Some("TEST_ANTHROPIC_KEY".into());
    let model = Model::new(settings).unwrap();
    assert!(!format!("{model:?}").contains("sk-ant-test"), "{model:?}");

    let mut conversation = ask("Add 2 and 3.", 100);
    conversation.system = Some("Use tools.".into());
    conversation.tools = vec![add_tool()];
    let reply = model.complete(&conversation, None).await.unwrap();
    assert_eq!(reply.stop, Stop::ToolUse);
    assert_eq!(reply.model, "claude-test");
    assert_eq!(reply.text(), "I will add.");
    assert!(
        matches!(&reply.parts[1], Part::ToolUse { id, input, .. } if id == "toolu_1" && input["b"] == 3)
    );
    assert_eq!(reply.usage.unwrap().input_tokens, 25);

    let pieces = Mutex::new(String::new());
    let on_text = |text: &str| pieces.lock().unwrap().push_str(text);
    let streamed = model.complete(&conversation, Some(&on_text)).await.unwrap();
    assert_eq!(pieces.into_inner().unwrap(), "Hello");
    assert_eq!(streamed.text(), "Hello");
    assert!(
        matches!(&streamed.parts[1], Part::ToolUse { input, .. } if input["a"] == 1 && input["b"] == 4)
    );
    assert_eq!(streamed.stop, Stop::ToolUse);
    let usage = streamed.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (12, 15));

    let seen = provider.seen();
    assert_eq!(seen.len(), 2);
    for request in &seen {
        assert_eq!(request.path, "/v1/messages");
        assert_eq!(request.header("x-api-key"), Some("sk-ant-test"));
        assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(request.header("authorization"), None);
        assert_eq!(request.body["system"], "Use tools.");
        assert_eq!(request.body["max_tokens"], 100);
        assert_eq!(
            request.body["tools"][0]["input_schema"]["required"],
            json!(["a", "b"])
        );
        assert_eq!(request.body["tool_choice"], json!({"type": "auto"}));
    }
    assert_eq!(seen[0].body.get("stream"), None);
    assert_eq!(seen[1].body["stream"], true);
}

#[tokio::test]
async fn busy_answers_are_retried_as_retry_after_says_and_refusals_are_named() {
    let ok = json!({
        "model": "m", "choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]
    });
    let provider = FakeProvider::start(vec![
        Answer::json(429, json!({"error": {"message": "slow down"}})).with("retry-after", "1"),
        Answer::json(503, json!({"error": {"message": "overloaded"}})).with("retry-after-ms", "10"),
        Answer::json(200, ok),
        Answer::json(
            401,
            json!({"error": {"message": "Incorrect API key provided"}}),
        ),
        Answer::json(
            404,
            json!({"error": {"message": "The model `nope` does not exist"}}),
        ),
        Answer::json(
            400,
            json!({"error": {"message": "This model's maximum context length is 2048 tokens"}}),
        ),
        Answer::json(429, json!({"error": {"message": "quota"}})),
        Answer::json(429, json!({"error": {"message": "quota"}})),
    ])
    .await;
    let mut settings = ModelSettings::openai(&provider.base_url, "m");
    settings.retries = Some(2);
    let model = Model::new(settings).unwrap();
    let started = Instant::now();
    let reply = model.complete(&ask("hi", 5), None).await.unwrap();
    assert_eq!(reply.text(), "ok");
    assert_eq!(reply.stop, Stop::EndTurn);
    // The first retry waited the second Retry-After asked for.
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(provider.seen().len(), 3);

    let error = model.complete(&ask("hi", 5), None).await.unwrap_err();
    assert!(
        matches!(error, ModelError::Unauthorized { status: 401, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("OPENAI_API_KEY"), "{error}");
    let error = model.complete(&ask("hi", 5), None).await.unwrap_err();
    assert!(matches!(error, ModelError::UnknownModel { .. }), "{error}");
    let error = model.complete(&ask("hi", 5), None).await.unwrap_err();
    assert!(matches!(error, ModelError::ContextLength(_)), "{error}");
    // Two retries at most: three attempts, then a clear error.
    let mut settings = ModelSettings::openai(&provider.base_url, "m");
    settings.retries = Some(1);
    let model = Model::new(settings).unwrap();
    let error = model.complete(&ask("hi", 5), None).await.unwrap_err();
    assert!(
        matches!(
            error,
            ModelError::Busy {
                status: 429,
                attempts: 2,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(provider.seen().len(), 8);
    assert_eq!(provider.seen()[0].path, "/v1/chat/completions");
}

#[tokio::test]
async fn a_provider_that_is_not_there_is_said_so() {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let mut settings = ModelSettings::openai(&format!("http://127.0.0.1:{port}/v1"), "m");
    settings.retries = Some(0);
    let error = Model::new(settings)
        .unwrap()
        .complete(&ask("hi", 5), None)
        .await
        .unwrap_err();
    assert!(matches!(error, ModelError::Unreachable { .. }), "{error}");
    assert!(Model::new(ModelSettings::openai("ftp://x", "m")).is_err());
    assert!(Model::new(ModelSettings::openai("http://x/v1", " ")).is_err());
}

#[tokio::test]
async fn an_answer_too_long_is_refused_whole_or_streamed() {
    // Past the 16 MiB every answer is held to: a provider cannot make the
    // host hold what it likes.
    let huge = "x".repeat(17 << 20);
    let whole = Answer::json(200, json!({"choices": [{"message": {"content": huge}}]}));
    let mut streamed = Answer::events(&[]);
    streamed.body = format!(
        "data: {}\n\n",
        json!({"choices": [{"delta": {"content": huge}}]})
    );
    let provider = FakeProvider::start(vec![whole, streamed]).await;
    let model = Model::new(ModelSettings::openai(&provider.base_url, "m")).unwrap();
    let error = model.complete(&ask("hi", 5), None).await.unwrap_err();
    assert!(error.to_string().contains("longer than"), "{error}");
    let ignore = |_: &str| {};
    let error = model
        .complete(&ask("hi", 5), Some(&ignore))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("longer than"), "{error}");
}
