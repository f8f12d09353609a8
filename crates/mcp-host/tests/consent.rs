//! Consent through the gateway, in both eras: a request the policy marks
//! `ask` is put to the calling client by elicitation (a request for a
//! legacy client, an `input_required` round for a 2026-07-28 one) or to
//! a registered approver; the person's answer (once, for the session,
//! always, no, with edited arguments) decides it, grants are kept for
//! their scope, and the audit records each answer. The upstream is
//! `mcp_builtin::everything` over loopback HTTP.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{Client, EraChoice};
use mcp_host::config::{HostConfig, ServerConfig};
use mcp_host::consent::{Approval, ApprovalRequest, Approver, GuardStore, Scope};
use mcp_host::{AuditLog, AuditSettings, Host, HostOptions, HostSettings};
use mcp_schema::{ElicitRequestParams, ElicitResult, ElicitValue, ProtocolVersion};
use serde_json::{Value, json};

mod support;
use support::{Scratch, gateway_client, on_http, within};

const ERAS: [ProtocolVersion; 2] = [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28];

/// A person who answers each form with the next of `answers` (a decision,
/// and arguments to put instead), and remembers what was asked.
#[derive(Default)]
struct Person {
    answers: Mutex<Vec<(&'static str, Option<Value>)>>,
    asked: Mutex<Vec<String>>,
}

impl Person {
    fn answering(answers: Vec<(&'static str, Option<Value>)>) -> Arc<Person> {
        Arc::new(Person {
            answers: Mutex::new(answers),
            asked: Mutex::default(),
        })
    }

    fn answer(&self, params: ElicitRequestParams) -> ElicitResult {
        let ElicitRequestParams::Form(form) = params else {
            panic!("a form is asked")
        };
        self.asked.lock().unwrap().push(form.message);
        let (decision, arguments) = self.answers.lock().unwrap().remove(0);
        let mut content = BTreeMap::new();
        content.insert("decision".to_owned(), ElicitValue::String(decision.into()));
        if let Some(arguments) = arguments {
            content.insert(
                "arguments".into(),
                ElicitValue::String(arguments.to_string()),
            );
        }
        ElicitResult::accept(content)
    }

    fn times_asked(&self) -> usize {
        self.asked.lock().unwrap().len()
    }
}

async fn person_client(host: &Host, era: ProtocolVersion, person: &Arc<Person>) -> Client {
    named_client(host, "consent-tests", era, person).await
}

async fn named_client(
    host: &Host,
    name: &str,
    era: ProtocolVersion,
    person: &Arc<Person>,
) -> Client {
    let person = Arc::clone(person);
    let builder = Client::builder(name, "1.0")
        .era(EraChoice::Pinned(era))
        .on_elicitation(move |params| {
            let answer = person.answer(params);
            async move { Ok(answer) }
        });
    gateway_client(host, builder).await
}

async fn host_asking(options_of: impl FnOnce(&mut HostOptions)) -> Host {
    let settings = "[[policy]]\ndecision = \"ask\"\ntool = \"echo\"\nname = \"echo asks\"\n";
    host_with(settings, options_of).await
}

/// A host of `everything` under the policy of `settings`.
async fn host_with(settings: &str, options_of: impl FnOnce(&mut HostOptions)) -> Host {
    let url = on_http(mcp_builtin::everything::server()).await;
    let mut options = HostSettings::parse(settings).unwrap().options().unwrap();
    options_of(&mut options);
    let host = Host::start(
        HostConfig {
            servers: vec![ServerConfig::remote("everything", &url).namespace("")],
            problems: Vec::new(),
        },
        options,
    );
    host.wait_started(Duration::from_secs(20)).await;
    host
}

async fn echo(client: &Client, message: &str) -> Result<String, String> {
    within("echo", client.call_tool("echo", json!({"text": message})))
        .await
        .map(|result| result.content[0].as_text().unwrap_or_default().to_owned())
        .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_calling_client_is_asked_and_its_answer_holds_for_its_scope() {
    let scratch = Scratch::new("consent");
    let audit = scratch.file("audit.db");
    let host = host_asking(|options| {
        options.audit = Some(AuditLog::open(AuditSettings::new(&audit)).unwrap());
    })
    .await;
    for era in ERAS {
        let person = Person::answering(vec![
            ("allow-once", Some(json!({"text": "edited"}))),
            ("deny", None),
            ("allow-session", None),
        ]);
        let client = person_client(&host, era, &person).await;
        assert_eq!(
            echo(&client, "hi").await.unwrap(),
            "edited",
            "{era}: the edited arguments are sent"
        );
        let asked = person.asked.lock().unwrap()[0].clone();
        for shown in [
            "\"everything\"",
            "echo",
            "\"text\"",
            "echo asks",
            "http://127.0.0.1:",
        ] {
            assert!(asked.contains(shown), "{era}: {shown} in {asked}");
        }
        let refused = echo(&client, "no").await.unwrap_err();
        assert!(refused.contains("refused"), "{era}: {refused}");
        assert_eq!(echo(&client, "a").await.unwrap(), "a");
        assert_eq!(echo(&client, "b").await.unwrap(), "b");
        assert_eq!(person.times_asked(), 3, "{era}: the session's grant holds");

        // Another session is asked again (a 2026-07-28 client's session
        // is its caller and its name).
        let other = Person::answering(vec![("allow-once", None)]);
        let second = named_client(&host, "another-client", era, &other).await;
        assert_eq!(echo(&second, "c").await.unwrap(), "c");
        assert_eq!(other.times_asked(), 1, "{era}");
    }
    host.shutdown(Duration::from_secs(5)).await;
    drop(host);
    let connection = rusqlite::Connection::open(&audit).unwrap();
    let answers: Vec<Option<String>> = connection
        .prepare("SELECT answer FROM audit WHERE method = 'tools/call' ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let some = |s: &str| Some(s.to_owned());
    let legacy = vec![
        some("allowed-once"),
        some("denied"),
        some("allowed-session"),
        some("granted"),
        some("allowed-once"),
    ];
    // A 2026-07-28 call asked by a round is recorded twice: the round,
    // then the retry with the answer.
    let modern = vec![
        some("asked"),
        some("allowed-once"),
        some("asked"),
        some("denied"),
        some("asked"),
        some("allowed-session"),
        some("granted"),
        some("asked"),
        some("allowed-once"),
    ];
    assert_eq!(answers, [legacy, modern].concat());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_for_always_is_kept_in_the_store() {
    let scratch = Scratch::new("consent-always");
    let store_path = scratch.file("guard.db");
    let store = Arc::new(GuardStore::open(&store_path).unwrap());
    let host = host_asking(|options| options.consent.store = Some(Arc::clone(&store))).await;
    let person = Person::answering(vec![("allow-always", None)]);
    let client = person_client(&host, ProtocolVersion::V2025_11_25, &person).await;
    assert_eq!(echo(&client, "a").await.unwrap(), "a");
    for era in ERAS {
        let nobody = Person::answering(Vec::new());
        let later = person_client(&host, era, &nobody).await;
        assert_eq!(echo(&later, "b").await.unwrap(), "b", "{era}");
        assert_eq!(nobody.times_asked(), 0, "{era}");
    }
    host.shutdown(Duration::from_secs(5)).await;
    let rows: i64 = rusqlite::Connection::open(&store_path)
        .unwrap()
        .query_row("SELECT count(*) FROM grants WHERE name = 'echo'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(rows, 1);
}

/// An approver of the application's own (a terminal) that allows once.
struct Terminal(AtomicUsize);

impl Approver for Terminal {
    fn name(&self) -> &str {
        "terminal"
    }

    fn reachable(&self) -> bool {
        true
    }

    fn ask<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> mcp_core::BoxFuture<'a, Result<Approval, String>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        assert!(request.describe().contains("echo"));
        Box::pin(async {
            Ok(Approval {
                allowed: true,
                scope: Scope::Once,
                arguments: None,
            })
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_approver_answers_for_a_client_without_elicitation() {
    let terminal = Arc::new(Terminal(AtomicUsize::new(0)));
    let registered = Arc::clone(&terminal);
    let host = host_asking(move |options| options.consent.registered.push(registered)).await;
    for era in ERAS {
        let client = gateway_client(
            &host,
            Client::builder("consent-tests", "1.0").era(EraChoice::Pinned(era)),
        )
        .await;
        assert_eq!(echo(&client, "t").await.unwrap(), "t", "{era}");
    }
    assert_eq!(terminal.0.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_approver_or_no_answer_in_time_refuses() {
    let host = host_asking(|options| options.consent.timeout = Duration::from_millis(300)).await;
    for era in ERAS {
        let silent = gateway_client(
            &host,
            Client::builder("consent-tests", "1.0").era(EraChoice::Pinned(era)),
        )
        .await;
        let refused = echo(&silent, "x").await.unwrap_err();
        assert!(
            refused.contains("no approver could be asked"),
            "{era}: {refused}"
        );
    }
    let slow = gateway_client(
        &host,
        Client::builder("consent-tests", "1.0")
            .era(EraChoice::Pinned(ProtocolVersion::V2025_11_25))
            .on_elicitation(|_| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok(ElicitResult::accept(BTreeMap::new()))
            }),
    )
    .await;
    let refused = echo(&slow, "x").await.unwrap_err();
    assert!(refused.contains("not approved within"), "{refused}");
}

/// Arguments a person edits are decided again: an edit cannot take a call
/// where a rule over arguments denies it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_arguments_are_decided_again() {
    let settings = r#"
[[policy]]
decision = "ask"
tool = "echo"

[[policy]]
decision = "deny"
name = "nothing forbidden"
tool = "echo"
arguments.text = { glob = "*forbidden*" }
"#;
    let host = host_with(settings, |_| {}).await;
    for era in ERAS {
        let person = Person::answering(vec![
            ("allow-once", Some(json!({"text": "a forbidden text"}))),
            ("allow-once", Some(json!({"text": "fine"}))),
        ]);
        let client = person_client(&host, era, &person).await;
        let refused = echo(&client, "hi").await.unwrap_err();
        assert!(refused.contains("nothing forbidden"), "{era}: {refused}");
        assert_eq!(echo(&client, "hi").await.unwrap(), "fine", "{era}");
        let denied = echo(&client, "forbidden at first").await.unwrap_err();
        assert!(denied.contains("nothing forbidden"), "{era}: {denied}");
        assert_eq!(person.times_asked(), 2, "{era}: a denied call asks no one");
    }
    host.shutdown(Duration::from_secs(5)).await;
}

/// The `http` approver: an operator's endpoint is posted each request
/// (with the caller and the arguments) and its answer decides, in both
/// eras, for a client that cannot be asked itself; an endpoint that fails
/// is an approver not reached, and the call is refused saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operators_endpoint_approves_over_http() {
    use axum::routing::post;
    let posted: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = Arc::clone(&posted);
    let app = axum::Router::new()
        .route(
            "/approve",
            post(move |body: String| {
                let seen = Arc::clone(&seen);
                async move {
                    let body: Value = serde_json::from_str(&body).unwrap();
                    let text = body["arguments"]["text"].as_str().unwrap_or("").to_owned();
                    seen.lock().unwrap().push(body);
                    let answer = match text.as_str() {
                        "edit me" => {
                            json!({"decision": "allow-once", "arguments": {"text": "edited by ops"}})
                        }
                        _ => json!({"decision": "deny"}),
                    };
                    answer.to_string()
                }
            }),
        )
        .route(
            "/broken",
            post(|| async { axum::http::StatusCode::BAD_GATEWAY }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let settings = |path: &str| {
        format!(
            "[guard]\napprovers = [\"http\"]\n[guard.http]\nurl = \"http://{address}{path}\"\n\
             [[policy]]\ndecision = \"ask\"\ntool = \"echo\"\nname = \"echo asks\"\n"
        )
    };
    let host = host_with(&settings("/approve"), |_| {}).await;
    for era in ERAS {
        let client = gateway_client(
            &host,
            Client::builder("consent-tests", "1.0").era(EraChoice::Pinned(era)),
        )
        .await;
        assert_eq!(
            echo(&client, "edit me").await.unwrap(),
            "edited by ops",
            "{era}"
        );
        let refused = echo(&client, "no").await.unwrap_err();
        assert!(refused.contains("refused"), "{era}: {refused}");
        let body = posted.lock().unwrap()[0].clone();
        assert_eq!(body["caller"], "anonymous");
        assert_eq!(body["client"], "consent-tests");
        assert_eq!(body["server"], "everything");
        assert_eq!(body["kind"], "tool");
        assert_eq!(body["name"], "echo");
        assert_eq!(body["reason"], "echo asks");
        assert!(
            body["server_identity"]
                .as_str()
                .unwrap()
                .starts_with("http://127.0.0.1:")
        );
        assert!(body["text"].as_str().unwrap().contains("Caller: anonymous"));
        posted.lock().unwrap().clear();
    }
    host.shutdown(Duration::from_secs(5)).await;

    let host = host_with(&settings("/broken"), |_| {}).await;
    let client = gateway_client(&host, Client::builder("consent-tests", "1.0")).await;
    let refused = echo(&client, "x").await.unwrap_err();
    assert!(
        refused.contains("the http could not be asked") && refused.contains("502"),
        "{refused}"
    );
    host.shutdown(Duration::from_secs(5)).await;
}

/// A person who thinks for `think` before allowing once.
struct Slow(Duration);

impl Approver for Slow {
    fn name(&self) -> &str {
        "terminal"
    }

    fn reachable(&self) -> bool {
        true
    }

    fn ask<'a>(
        &'a self,
        _request: &'a ApprovalRequest,
    ) -> mcp_core::BoxFuture<'a, Result<Approval, String>> {
        Box::pin(async move {
            tokio::time::sleep(self.0).await;
            Ok(Approval {
                allowed: true,
                scope: Scope::Once,
                arguments: None,
            })
        })
    }
}

/// While a person thinks longer than the client's request timeout, a
/// client that asked for progress hears that its call waits, and does not
/// time out, in both eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_keeps_a_waiting_client_from_timing_out() {
    let host = host_asking(|options| {
        options
            .consent
            .registered
            .push(Arc::new(Slow(Duration::from_millis(1200))));
        options.consent.keepalive = Duration::from_millis(150);
    })
    .await;
    for era in ERAS {
        let client = gateway_client(
            &host,
            Client::builder("consent-tests", "1.0").era(EraChoice::Pinned(era)),
        )
        .await;
        let heard = Arc::new(Mutex::new(Vec::new()));
        let notes = Arc::clone(&heard);
        let options = mcp_core::RequestOptions::new()
            .timeout(Duration::from_millis(500))
            .on_progress(move |progress| {
                notes
                    .lock()
                    .unwrap()
                    .push(progress.message.unwrap_or_default());
            });
        let result = within(
            "the call",
            client.call_tool_with("echo", json!({"text": "patient"}), options),
        )
        .await
        .unwrap_or_else(|e| panic!("{era}: {e}"));
        assert_eq!(result.content[0].as_text(), Some("patient"), "{era}");
        let heard = heard.lock().unwrap().clone();
        assert!(heard.len() >= 3, "{era}: {heard:?}");
        assert!(
            heard.iter().all(|m| m == "waiting for a person's approval"),
            "{era}: {heard:?}"
        );
    }
    host.shutdown(Duration::from_secs(5)).await;
}
