//! Sampling answered at the host, in both upstream eras: a server's
//! `sampling/createMessage` (a request from a legacy upstream, a question
//! of an `input_required` round from a 2026-07-28 one) reaches the host's
//! model when the calling client cannot answer it; a person reviews it
//! where `approve = "ask"`; it goes only to the client whose call caused
//! it, and where that cannot be told, to the host or nowhere. The model is
//! a scripted server answering as OpenAI's Chat Completions reference
//! describes (the real model is in `model.rs` and the CLI's tests); the
//! upstream is `mcp_builtin::everything` over loopback HTTP.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{Client, EraChoice};
use mcp_core::BoxFuture;
use mcp_host::config::{HostConfig, ServerConfig};
use mcp_host::sampler::{Reviewed, Reviewer};
use mcp_host::{AuditLog, AuditSettings, Host, HostSettings};
use mcp_schema::{
    CreateMessageRequestParams, CreateMessageResult, ProtocolVersion, SamplingMessage,
};
use serde_json::json;

#[allow(dead_code)]
#[path = "support/fake_provider.rs"]
mod fake_provider;
mod support;
use fake_provider::{Answer, FakeProvider};
use support::{Scratch, gateway_client, on_http, within};

/// The model's scripted answer.
fn model_says(text: &str) -> Answer {
    Answer::json(
        200,
        json!({
            "id": "c", "object": "chat.completion", "model": "scripted",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
        }),
    )
}

/// A host in front of `everything` (of `era`), whose model is `provider`.
async fn host_with_model(
    provider: &FakeProvider,
    era: &str,
    sampling: &str,
    audit: Option<&std::path::Path>,
    reviewer: Option<Arc<dyn Reviewer>>,
) -> Host {
    let url = on_http(mcp_builtin::everything::server()).await;
    let settings = format!(
        "[model]\nbase_url = \"{}\"\nmodel = \"scripted\"\nretries = 0\n[sampling]\n{sampling}\n",
        provider.base_url
    );
    let mut options = HostSettings::parse(&settings).unwrap().options().unwrap();
    if let Some(audit) = audit {
        options.audit = Some(AuditLog::open(AuditSettings::new(audit)).unwrap());
    }
    options.sampling.reviewers.extend(reviewer);
    let server = ServerConfig::remote("everything", &url)
        .namespace("")
        .era(era)
        .unwrap();
    let host = Host::start(
        HostConfig {
            servers: vec![server],
            problems: Vec::new(),
        },
        options,
    );
    host.wait_started(Duration::from_secs(20)).await;
    host
}

/// A client of the host that declares no sampling.
async fn plain_client(host: &Host, era: ProtocolVersion) -> Client {
    gateway_client(
        host,
        Client::builder("plain", "1.0").era(EraChoice::Pinned(era)),
    )
    .await
}

async fn sample_through(client: &Client, prompt: &str) -> Result<String, String> {
    let result = within(
        "test_sampling",
        client.call_tool("test_sampling", json!({"prompt": prompt})),
    )
    .await
    .map_err(|e| e.to_string())?;
    let text = result.content[0].as_text().unwrap_or_default().to_owned();
    if result.is_error == Some(true) {
        Err(text)
    } else {
        Ok(text)
    }
}

const CLIENT_ERAS: [ProtocolVersion; 2] =
    [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_model_answers_for_clients_that_cannot_in_both_eras() {
    let scratch = Scratch::new("sampling-host");
    for upstream_era in ["legacy", "modern"] {
        let provider = FakeProvider::start(vec![model_says("Bonjour"), model_says("Hallo")]).await;
        let audit = scratch.file(&format!("audit-{upstream_era}.db"));
        let host = host_with_model(
            &provider,
            upstream_era,
            "approve = \"allow\"",
            Some(&audit),
            None,
        )
        .await;
        for (era, expected) in CLIENT_ERAS.into_iter().zip(["Bonjour", "Hallo"]) {
            let client = plain_client(&host, era).await;
            let answer = sample_through(&client, "Greet me").await;
            assert_eq!(
                answer.as_deref(),
                Ok(format!("LLM response: {expected}").as_str()),
                "upstream {upstream_era}, client {era}"
            );
        }
        let seen = provider.seen();
        assert_eq!(seen.len(), 2, "upstream {upstream_era}");
        for request in &seen {
            assert_eq!(request.body["model"], "scripted");
            assert_eq!(request.body["max_tokens"], 100);
            assert_eq!(
                request.body["messages"],
                json!([{"role": "user", "content": "Greet me"}])
            );
        }
        host.shutdown(Duration::from_secs(5)).await;
        drop(host);
        let connection = rusqlite::Connection::open(&audit).unwrap();
        let rows: Vec<(String, Option<String>, Option<String>)> = connection
            .prepare(
                "SELECT outcome, target, rule FROM audit WHERE method = 'sampling/createMessage' ORDER BY id",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows.len(), 2, "upstream {upstream_era}: {rows:?}");
        for (outcome, target, rule) in rows {
            assert_eq!(outcome, "ok");
            assert_eq!(target.as_deref(), Some("scripted"));
            assert!(rule.unwrap().starts_with("sampling at the host"));
        }
    }
}

/// A person who edits the prompt, then answers the reply as told.
struct Editor {
    send_reply: Mutex<Vec<bool>>,
    saw: Mutex<Vec<String>>,
}

impl Reviewer for Editor {
    fn name(&self) -> &str {
        "editor"
    }

    fn reachable(&self) -> bool {
        true
    }

    fn review_request<'a>(
        &'a self,
        server: &'a str,
        model: &'a str,
        request: &'a CreateMessageRequestParams,
    ) -> BoxFuture<'a, Result<Reviewed, String>> {
        let text = request.messages[0].content.blocks()[0].as_text().unwrap();
        self.saw
            .lock()
            .unwrap()
            .push(format!("{server}/{model}: {text}"));
        let mut edited = request.clone();
        edited.messages = vec![SamplingMessage::user_text(format!("{text} (edited)"))];
        Box::pin(async move { Ok(Reviewed::Send(Box::new(edited))) })
    }

    fn review_reply<'a>(
        &'a self,
        _: &'a str,
        reply: &'a CreateMessageResult,
    ) -> BoxFuture<'a, Result<bool, String>> {
        let text = reply.content.blocks()[0].as_text().unwrap().to_owned();
        self.saw.lock().unwrap().push(format!("reply: {text}"));
        let send = self.send_reply.lock().unwrap().remove(0);
        Box::pin(async move { Ok(send) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_sees_and_edits_the_request_and_may_withhold_the_reply() {
    for upstream_era in ["legacy", "modern"] {
        let provider = FakeProvider::start(vec![model_says("one"), model_says("two")]).await;
        let editor = Arc::new(Editor {
            send_reply: Mutex::new(vec![true, false]),
            saw: Mutex::default(),
        });
        let host = host_with_model(&provider, upstream_era, "", None, Some(editor.clone())).await;
        let client = plain_client(&host, ProtocolVersion::V2025_11_25).await;
        assert_eq!(
            sample_through(&client, "Hi").await.as_deref(),
            Ok("LLM response: one")
        );
        let refused = sample_through(&client, "Again").await.unwrap_err();
        assert!(
            refused.contains("refused to send"),
            "{upstream_era}: {refused}"
        );
        assert_eq!(
            *editor.saw.lock().unwrap(),
            [
                "everything/scripted: Hi",
                "reply: one",
                "everything/scripted: Again",
                "reply: two"
            ],
            "{upstream_era}"
        );
        let seen = provider.seen();
        assert_eq!(seen[0].body["messages"][0]["content"], "Hi (edited)");
        assert_eq!(seen[1].body["messages"][0]["content"], "Again (edited)");
        host.shutdown(Duration::from_secs(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_anyone_to_ask_the_request_is_refused_and_the_model_not_asked() {
    let provider = FakeProvider::start(vec![model_says("never")]).await;
    let host = host_with_model(&provider, "legacy", "approve = \"ask\"", None, None).await;
    let client = plain_client(&host, ProtocolVersion::V2025_11_25).await;
    let refused = sample_through(&client, "Hi").await.unwrap_err();
    assert!(
        refused.contains("approve = \\\"allow\\\"") || refused.contains("approve = \"allow\""),
        "{refused}"
    );
    assert!(provider.seen().is_empty());
    host.shutdown(Duration::from_secs(5)).await;
}

/// A client that declares sampling and answers with `name`, counting
/// what it was asked.
async fn sampling_client(
    host: &Host,
    name: &'static str,
    asked: Arc<Mutex<Vec<String>>>,
) -> Client {
    let builder = Client::builder(name, "1.0")
        .era(EraChoice::Pinned(ProtocolVersion::V2025_11_25))
        .on_sampling(move |params: CreateMessageRequestParams| {
            let text = params.messages[0].content.blocks()[0]
                .as_text()
                .unwrap_or_default()
                .to_owned();
            asked.lock().unwrap().push(format!("{name}: {text}"));
            async move {
                Ok(CreateMessageResult::assistant_text(
                    name,
                    format!("{name} answers"),
                ))
            }
        });
    gateway_client(host, builder).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_goes_only_to_its_own_caller_or_the_host() {
    for (mode, host_answers) in [("client", false), ("client-then-host", true)] {
        let provider = FakeProvider::start(vec![model_says("from the host")]).await;
        let settings = format!("mode = \"{mode}\"\napprove = \"allow\"");
        let host = host_with_model(&provider, "legacy", &settings, None, None).await;
        let asked = Arc::new(Mutex::new(Vec::new()));
        let alice = sampling_client(&host, "alice", Arc::clone(&asked)).await;
        let bob = sampling_client(&host, "bob", Arc::clone(&asked)).await;

        // Alone on the server, a client is asked its own question.
        assert_eq!(
            sample_through(&alice, "mine").await.as_deref(),
            Ok("LLM response: alice answers"),
            "{mode}"
        );
        assert_eq!(*asked.lock().unwrap(), ["alice: mine"]);

        // With Alice's slow call in flight on the same connection, Bob's
        // question cannot be told from hers: never Alice's client.
        let caller = alice.clone();
        let slow = tokio::spawn(async move {
            caller
                .call_tool("test_tool_slow", json!({"durationMs": 3000}))
                .await
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        let answer = sample_through(&bob, "whose").await;
        if host_answers {
            assert_eq!(
                answer.as_deref(),
                Ok("LLM response: from the host"),
                "{mode}"
            );
        } else {
            let refused = answer.unwrap_err();
            assert!(
                refused.contains("2 clients have calls in flight"),
                "{refused}"
            );
        }
        assert_eq!(*asked.lock().unwrap(), ["alice: mine"], "{mode}");
        within("the slow call", slow).await.unwrap().unwrap();
        assert_eq!(provider.seen().len(), usize::from(host_answers));
        host.shutdown(Duration::from_secs(5)).await;
    }
}
