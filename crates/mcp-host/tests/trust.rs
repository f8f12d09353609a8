//! Server trust: a server from a workspace's files, or one a reload adds
//! or changes the command line of (where reloads are not trusted), is
//! held until a person trusts it: the approvers are asked with its exact
//! command line (or URL), "always" is kept in the guard's store, a
//! refusal leaves it held, and `Host::trust` starts it by hand.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_host::config::{HostConfig, ServerConfig};
use mcp_host::consent::{Approval, ApprovalRequest, Approver, GuardStore, Scope};
use mcp_host::trust::TrustOptions;
use mcp_host::{Host, HostOptions};

mod support;
use support::{Scratch, on_http, within};

/// A person at the console who answers each question with the next
/// answer, and remembers what was asked.
struct Person {
    answers: Mutex<Vec<Option<Scope>>>,
    asked: Mutex<Vec<String>>,
}

impl Approver for Person {
    fn name(&self) -> &str {
        "console"
    }

    fn reachable(&self) -> bool {
        true
    }

    fn ask<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> mcp_core::BoxFuture<'a, Result<Approval, String>> {
        self.asked.lock().unwrap().push(request.describe());
        let answer = self.answers.lock().unwrap().remove(0);
        Box::pin(async move {
            Ok(Approval {
                allowed: answer.is_some(),
                scope: answer.unwrap_or(Scope::Once),
                arguments: None,
            })
        })
    }
}

fn person(answers: Vec<Option<Scope>>) -> Arc<Person> {
    Arc::new(Person {
        answers: Mutex::new(answers),
        asked: Mutex::default(),
    })
}

fn options(person: &Arc<Person>, store: &Arc<GuardStore>, reloads: bool) -> HostOptions {
    let mut options = HostOptions::default();
    options.consent.registered.push(person.clone());
    let mut trust = TrustOptions::default();
    trust.reloads = reloads;
    trust.store = Some(Arc::clone(store));
    options.trust = trust;
    options
}

async fn until_running(host: &Host, names: &[&str]) {
    within("the servers to run", async {
        loop {
            let running: Vec<String> = host
                .upstreams()
                .iter()
                .map(|u| u.name().to_owned())
                .collect();
            if running == names {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_server_runs_once_a_person_trusts_it() {
    let scratch = Scratch::new("trust-workspace");
    let store = Arc::new(GuardStore::open(&scratch.file("guard.db")).unwrap());
    let url = on_http(mcp_builtin::everything::server()).await;
    let config = || HostConfig {
        servers: vec![
            ServerConfig::remote("own", &url),
            ServerConfig::remote("theirs", &url).from_workspace(true),
        ],
        problems: Vec::new(),
    };
    let asked = person(vec![None]);
    let host = Host::start(config(), options(&asked, &store, true));
    within("the refusal", async {
        while !host.untrusted().first().is_some_and(|u| u.denied) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let held = &host.untrusted()[0];
    assert_eq!(held.name, "theirs");
    assert_eq!(held.identity, url);
    assert!(
        held.reason.starts_with("it comes from the workspace file"),
        "{}",
        held.reason
    );
    let question = asked.asked.lock().unwrap()[0].clone();
    assert!(
        question.contains("Run server \"theirs\"") && question.contains(&url),
        "{question}"
    );
    assert_eq!(host.upstreams().len(), 1, "only the operator's runs");
    assert!(host.status().untrusted[0].denied);

    // By hand, kept in the store.
    host.trust("theirs").unwrap();
    until_running(&host, &["own", "theirs"]).await;
    assert!(host.trust("theirs").is_err(), "no longer waits");
    host.shutdown(Duration::from_secs(5)).await;
    let never_asked = person(Vec::new());
    let again = Host::start(config(), options(&never_asked, &store, true));
    until_running(&again, &["own", "theirs"]).await;
    assert!(never_asked.asked.lock().unwrap().is_empty());
    again.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_asks_for_what_it_adds_or_runs_otherwise() {
    let scratch = Scratch::new("trust-reload");
    let store = Arc::new(GuardStore::open(&scratch.file("guard.db")).unwrap());
    let url = on_http(mcp_builtin::everything::server()).await;
    let other = on_http(mcp_builtin::everything::server()).await;
    let config = |servers: Vec<ServerConfig>| HostConfig {
        servers,
        problems: Vec::new(),
    };
    let asked = person(vec![Some(Scope::Always), Some(Scope::Once)]);
    let host = Host::start(
        config(vec![ServerConfig::remote("a", &url)]),
        options(&asked, &store, false),
    );
    until_running(&host, &["a"]).await;
    assert!(
        asked.asked.lock().unwrap().is_empty(),
        "the start is the operator's"
    );

    let reloaded = host.reload(config(vec![
        ServerConfig::remote("a", &url),
        ServerConfig::remote("b", &url),
    ]));
    assert_eq!(reloaded.held, ["b"]);
    until_running(&host, &["a", "b"]).await;
    assert!(asked.asked.lock().unwrap()[0].contains("a reload added it"));
    assert!(store.trusts("b", &url).unwrap(), "always is kept");

    // A new timeout is no new command line; a new URL is.
    let mut slower = ServerConfig::remote("a", &url);
    slower.timeout = Some(Duration::from_secs(9));
    let reloaded = host.reload(config(vec![
        slower.clone(),
        ServerConfig::remote("b", &other),
    ]));
    assert_eq!(reloaded.started, ["a"]);
    assert_eq!(reloaded.held, ["b"]);
    until_running(&host, &["a", "b"]).await;
    let questions = asked.asked.lock().unwrap().clone();
    assert!(
        questions[1].contains("a reload changed its command line"),
        "{questions:?}"
    );
    assert!(!store.trusts("b", &other).unwrap(), "once is not kept");
    host.shutdown(Duration::from_secs(5)).await;

    // Trusted reloads ask nothing.
    let quiet = person(Vec::new());
    let host = Host::start(config(vec![]), options(&quiet, &store, true));
    let reloaded = host.reload(config(vec![ServerConfig::remote("c", &other)]));
    assert_eq!(reloaded.started, ["c"]);
    host.shutdown(Duration::from_secs(5)).await;
}
