use std::sync::Mutex;

use mcp_schema::SamplingMessage;

use super::*;

/// A person who answers as told, and remembers what they saw.
struct Person {
    request: Reviewed,
    reply: bool,
    saw: Mutex<Vec<String>>,
}

impl Reviewer for Person {
    fn name(&self) -> &str {
        "test"
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
        self.saw.lock().unwrap().push(format!(
            "{server} {model} {} ({} tokens)",
            request.messages[0].content.blocks()[0].as_text().unwrap(),
            request.max_tokens
        ));
        Box::pin(async move { Ok(self.request.clone()) })
    }

    fn review_reply<'a>(
        &'a self,
        _: &'a str,
        _: &'a CreateMessageResult,
    ) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move { Ok(self.reply) })
    }
}

fn options(settings: &str) -> SamplingOptions {
    SamplingOptions {
        models: vec![ModelSettings::openai("http://127.0.0.1:9/v1", "local")],
        settings: toml::from_str(settings).unwrap(),
        ..Default::default()
    }
}

fn ask() -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hello")], 4000)
}

#[test]
fn the_mode_defaults_to_the_client_then_the_host_where_a_model_is_configured() {
    let sampler = Sampler::new(options("")).unwrap();
    assert_eq!(sampler.mode("any"), SamplingMode::ClientThenHost);
    let sampler = Sampler::new(options(
        "mode = \"client\"\n[servers.everything]\nmode = \"host\"\napprove = \"allow\"",
    ))
    .unwrap();
    assert_eq!(sampler.mode("any"), SamplingMode::Client);
    assert_eq!(sampler.mode("everything"), SamplingMode::Host);
    let without_model = Sampler::new(SamplingOptions::default()).unwrap();
    assert_eq!(without_model.mode("any"), SamplingMode::Client);
    assert!(!without_model.has_model());
}

#[test]
fn settings_that_cannot_work_are_refused_with_their_key() {
    let mut no_model = options("mode = \"host\"");
    no_model.models.clear();
    let error = Sampler::new(no_model).err().unwrap();
    assert!(error.contains("no [model]"), "{error}");
    let error = Sampler::new(options("[servers.a]\nrate = \"5/fortnight\""))
        .err()
        .unwrap();
    assert!(error.starts_with("sampling.servers.a.rate"), "{error}");
    let error = Sampler::new(options("max_tokens = 0")).err().unwrap();
    assert!(error.contains("sampling.max_tokens"), "{error}");
    assert!(toml::from_str::<SamplingSettings>("mode = \"model\"").is_err());
}

#[tokio::test]
async fn nobody_to_ask_refuses_and_says_how_to_let_the_model_answer() {
    let sampler = Sampler::new(options("")).unwrap();
    let mut answered = Answered::default();
    let error = sampler.answer("s", ask(), &mut answered).await.unwrap_err();
    assert_eq!(error.code, REFUSED);
    assert!(
        error.message.contains("approve = \"allow\""),
        "{}",
        error.message
    );
    assert_eq!(answered.answer, Some("unreachable"));
    assert_eq!(answered.by.as_deref(), Some("local"));
}

#[tokio::test]
async fn a_person_who_refuses_stops_the_request_before_the_model() {
    let person = Arc::new(Person {
        request: Reviewed::Refuse,
        reply: true,
        saw: Mutex::default(),
    });
    let mut options = options("");
    options.reviewers.push(person.clone());
    let sampler = Sampler::new(options).unwrap();
    let mut answered = Answered::default();
    let error = sampler
        .answer("srv", ask(), &mut answered)
        .await
        .unwrap_err();
    assert_eq!(error.code, REFUSED);
    assert_eq!(answered.answer, Some("denied"));
    assert_eq!(
        *person.saw.lock().unwrap(),
        ["srv local hello (4000 tokens)"]
    );
}

#[tokio::test]
async fn an_approved_request_goes_to_the_model_capped_and_its_failure_is_clear() {
    let mut edited = ask();
    edited.messages = vec![SamplingMessage::user_text("edited")];
    let person = Arc::new(Person {
        request: Reviewed::Send(Box::new(edited)),
        reply: true,
        saw: Mutex::default(),
    });
    let mut options = options("max_tokens = 100");
    options.models[0].retries = Some(0);
    options.reviewers.push(person.clone());
    let sampler = Sampler::new(options).unwrap();
    let mut answered = Answered::default();
    // Nothing listens on port 9: the model cannot be reached.
    let error = sampler.answer("s", ask(), &mut answered).await.unwrap_err();
    assert!(
        error.message.contains("cannot be reached"),
        "{}",
        error.message
    );
    assert_eq!(answered.answer, Some("allowed-once"));
    // The person saw the request cut to the cap: 4,000 tokens asked, 100 allowed.
    assert_eq!(*person.saw.lock().unwrap(), ["s local hello (100 tokens)"]);
}

#[tokio::test]
async fn a_server_over_its_rate_is_refused_with_when_to_retry() {
    let mut options = options("approve = \"allow\"\nrate = \"1/hour\"");
    options.models[0].retries = Some(0);
    let sampler = Sampler::new(options).unwrap();
    let mut answered = Answered::default();
    let first = sampler.answer("s", ask(), &mut answered).await.unwrap_err();
    assert!(
        first.message.contains("cannot be reached"),
        "{}",
        first.message
    );
    let second = sampler.answer("s", ask(), &mut answered).await.unwrap_err();
    assert_eq!(second.code, crate::limits::LIMITED);
    assert!(second.data.unwrap()["retryAfterSeconds"].as_f64().unwrap() > 3000.0);
}

#[tokio::test]
async fn a_server_past_its_token_budget_is_refused() {
    let mut options = options("approve = \"allow\"\ntokens = \"150/hour\"");
    options.models[0].retries = Some(0);
    let sampler = Sampler::new(options).unwrap();
    let mut answered = Answered::default();
    let mut small = ask();
    small.max_tokens = 100;
    // Spends 100 of 150 (the model is not there, but the budget is spent).
    let first = sampler
        .answer("s", small.clone(), &mut answered)
        .await
        .unwrap_err();
    assert!(
        first.message.contains("cannot be reached"),
        "{}",
        first.message
    );
    let second = sampler.answer("s", small, &mut answered).await.unwrap_err();
    assert_eq!(second.code, crate::limits::LIMITED, "{}", second.message);
    assert!(
        second.message.contains("token budget"),
        "{}",
        second.message
    );
    // Asking more than the whole budget is refused outright.
    let other = sampler.answer("t", ask(), &mut answered).await.unwrap_err();
    assert_eq!(other.code, REFUSED, "{}", other.message);
    assert!(
        other.message.contains("more than its whole budget"),
        "{}",
        other.message
    );
}
