//! Two hosts sharing the guard's decisions (as `mcp host --redis` does,
//! here through an in-memory `SharedGuard`): a grant for always made on
//! one holds on the other, a 2026-07-28 caller's grant for the session
//! too, and the retry of an approval round sent by one is taken by the
//! other. Each host keeps its own store; the upstream is
//! `mcp_builtin::everything` over loopback HTTP.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use mcp_client::{Client, EraChoice};
use mcp_core::BoxFuture;
use mcp_host::config::{HostConfig, ServerConfig};
use mcp_host::consent::GuardStore;
use mcp_host::consent::shared::{Entries, SharedGuard};
use mcp_host::{Host, HostSettings};
use mcp_schema::{ElicitRequestParams, ElicitResult, ElicitValue, ProtocolVersion};
use serde_json::{Value, json};
use tokio::sync::broadcast;

mod support;
use support::{Scratch, gateway_client, on_http, within};

/// The shared log and rounds, in memory.
#[derive(Debug)]
struct Memory {
    log: Mutex<Vec<String>>,
    appended: broadcast::Sender<String>,
    waiting: Mutex<HashMap<String, String>>,
}

impl SharedGuard for Memory {
    fn publish<'a>(&'a self, entry: &'a str) -> BoxFuture<'a, Result<(), String>> {
        self.log.lock().unwrap().push(entry.to_owned());
        let _ = self.appended.send(entry.to_owned());
        Box::pin(async { Ok(()) })
    }

    fn follow(&self) -> Entries {
        let past: Vec<Result<String, String>> =
            self.log.lock().unwrap().iter().cloned().map(Ok).collect();
        let next = tokio_stream_of(self.appended.subscribe());
        Box::pin(futures::stream::iter(past).chain(next))
    }

    fn put_waiting<'a>(
        &'a self,
        token: &'a str,
        entry: &'a str,
        _ttl: Duration,
    ) -> BoxFuture<'a, Result<(), String>> {
        self.waiting
            .lock()
            .unwrap()
            .insert(token.to_owned(), entry.to_owned());
        Box::pin(async { Ok(()) })
    }

    fn take_waiting<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Option<String>, String>> {
        let taken = self.waiting.lock().unwrap().remove(token);
        Box::pin(async { Ok(taken) })
    }
}

fn tokio_stream_of(
    receiver: broadcast::Receiver<String>,
) -> impl futures::Stream<Item = Result<String, String>> + Send + 'static {
    futures::stream::unfold(receiver, |mut receiver| async move {
        loop {
            match receiver.recv().await {
                Ok(entry) => return Some((Ok(entry), receiver)),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
}

async fn host(url: &str, store: &std::path::Path, shared: &Arc<Memory>) -> Host {
    let settings = format!(
        "[guard]\nstore = {:?}\n[[policy]]\ndecision = \"ask\"\ntool = \"echo\"\n",
        store.display().to_string()
    );
    let mut options = HostSettings::parse(&settings).unwrap().options().unwrap();
    let store = Arc::new(GuardStore::open(store).unwrap());
    options.consent.store = Some(Arc::clone(&store));
    options.supervisor.pins = Some(store);
    options.shared_guard = Some(Arc::clone(shared) as Arc<dyn SharedGuard>);
    let host = Host::start(
        HostConfig {
            servers: vec![ServerConfig::remote("everything", url).namespace("")],
            problems: Vec::new(),
        },
        options,
    );
    host.wait_started(Duration::from_secs(20)).await;
    host
}

/// Two hosts of one `everything`, sharing their guard, each with a store
/// of its own in `scratch`.
async fn two_hosts(scratch: &Scratch) -> (Host, Host, Arc<Memory>) {
    let url = on_http(mcp_builtin::everything::server()).await;
    let shared = Arc::new(Memory {
        log: Mutex::default(),
        appended: broadcast::channel(64).0,
        waiting: Mutex::default(),
    });
    let one = host(&url, &scratch.file("one.db"), &shared).await;
    let other = host(&url, &scratch.file("other.db"), &shared).await;
    (one, other, shared)
}

/// A client of `era` whose person answers every question with `decision`
/// (`None`: it declares no elicitation, and cannot be asked).
async fn client(host: &Host, era: ProtocolVersion, decision: Option<&'static str>) -> Client {
    let mut builder = Client::builder("shared-tests", "1.0").era(EraChoice::Pinned(era));
    if let Some(decision) = decision {
        builder = builder.on_elicitation(move |_: ElicitRequestParams| async move {
            let content =
                BTreeMap::from([("decision".to_owned(), ElicitValue::String(decision.into()))]);
            Ok(ElicitResult::accept(content))
        });
    }
    gateway_client(host, builder).await
}

async fn echo(client: &Client, text: &str) -> Result<String, String> {
    within("echo", client.call_tool("echo", json!({"text": text})))
        .await
        .map(|r| r.content[0].as_text().unwrap_or_default().to_owned())
        .map_err(|e| e.to_string())
}

/// Retries `what` until it succeeds: the other host applies shared
/// decisions as they arrive.
async fn eventually(
    what: &str,
    mut attempt: impl AsyncFnMut() -> Result<String, String>,
) -> String {
    within(what, async {
        loop {
            if let Ok(done) = attempt().await {
                return done;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_made_on_one_host_holds_on_the_other() {
    let scratch = Scratch::new("shared-guard");
    let (one, other, shared) = two_hosts(&scratch).await;

    // For always, by a legacy client on one: a client on the other that
    // cannot be asked is let through.
    let asked = client(&one, ProtocolVersion::V2025_11_25, Some("allow-always")).await;
    assert_eq!(echo(&asked, "first").await.unwrap(), "first");
    let unaskable = client(&other, ProtocolVersion::V2025_11_25, None).await;
    let done = eventually("the grant to reach the other host", async || {
        echo(&unaskable, "second").await
    })
    .await;
    assert_eq!(done, "second");
    // The definitions each pinned as first seen are in the shared log.
    let log = shared.log.lock().unwrap().clone();
    assert!(
        log.iter()
            .any(|e| e.contains("\"entry\":\"pin\"") && e.contains("\"echo\"")),
        "{log:?}"
    );
    one.shutdown(Duration::from_secs(5)).await;
    other.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_session_grant_and_an_approval_round_cross_hosts() {
    let scratch = Scratch::new("shared-guard-modern");
    let (one, other, _) = two_hosts(&scratch).await;
    let modern = ProtocolVersion::V2026_07_28;

    // The round comes from one; its retry, with the answer, goes to the
    // other, which takes the round from the shared ones.
    let on_one = client(&one, modern, Some("allow-once")).await;
    let wire = on_one
        .wire_params(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hop"}}),
        )
        .unwrap();
    let round = within(
        "the round",
        on_one
            .peer()
            .request_raw("tools/call", wire, mcp_core::RequestOptions::new()),
    )
    .await
    .unwrap();
    let round: Value = serde_json::from_str(round.get()).unwrap();
    assert_eq!(round["resultType"], "input_required", "{round}");
    let requests = serde_json::from_value(round["inputRequests"].clone()).unwrap();
    let answers = on_one.answer_input_requests(requests).await.unwrap();
    let on_other = client(&other, modern, None).await;
    let retry = json!({
        "name": "echo",
        "arguments": {"text": "hop"},
        "inputResponses": answers,
        "requestState": round["requestState"],
    });
    let retry_on = |client: &Client| {
        let (client, retry) = (client.clone(), retry.clone());
        async move {
            within(
                "the retry",
                client.request_raw("tools/call", retry, mcp_core::RequestOptions::new()),
            )
            .await
        }
    };
    let retried = retry_on(&on_other).await.unwrap();
    let retried: Value = serde_json::from_str(retried.get()).unwrap();
    assert_eq!(retried["content"][0]["text"], "hop", "{retried}");
    // Once: the host that sent the round does not take it again.
    let again = retry_on(&on_one).await.unwrap_err().to_string();
    assert!(again.contains("requestState names no approval"), "{again}");

    // For the session, on one: the same caller and client on the other
    // are not asked again.
    let for_session = client(&one, modern, Some("allow-session")).await;
    assert_eq!(echo(&for_session, "a").await.unwrap(), "a");
    let done = eventually("the session grant to reach the other host", async || {
        echo(&on_other, "b").await
    })
    .await;
    assert_eq!(done, "b");
    one.shutdown(Duration::from_secs(5)).await;
    other.shutdown(Duration::from_secs(5)).await;
}
