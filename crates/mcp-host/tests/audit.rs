//! The audit log of a host between real servers on loopback HTTP and
//! clients of both eras: one record per request, with what was asked, the
//! server that answered and how it ended, including the calls that failed,
//! the tool errors, and the calls a client left.

use std::time::Duration;

use mcp_client::{Client, EraChoice, RequestOptions};
use mcp_host::config::{HostConfig, ServerConfig};
use mcp_host::{AuditLog, AuditSettings, Host, HostOptions};
use mcp_schema::ProtocolVersion;
use mcp_server::{Context, HandlerError, NoArguments, Server, ToolDef};
use serde_json::{Value, json};
use tokio::sync::mpsc;

mod support;

use support::{Scratch, gateway_client, on_http};

const LEGACY: EraChoice = EraChoice::Pinned(ProtocolVersion::V2025_11_25);
const MODERN: EraChoice = EraChoice::Pinned(ProtocolVersion::V2026_07_28);

/// `echo`, `fail` (a tool error) and `wait` (until cancelled; says on
/// `started` when it begins).
fn probe(started: mpsc::UnboundedSender<()>) -> Server {
    Server::builder("probe", "1.0")
        .tool(ToolDef::new(
            "echo",
            "Echoes",
            |args: serde_json::Map<String, Value>, _ctx: Context| async move {
                Ok::<_, HandlerError>(format!("probe: {}", args["text"].as_str().unwrap_or("")))
            },
        ))
        .tool(ToolDef::new(
            "fail",
            "Fails",
            |_: NoArguments, _ctx: Context| async move {
                Err::<String, _>(HandlerError::failed("it broke"))
            },
        ))
        .tool(ToolDef::new(
            "wait",
            "Waits until cancelled",
            move |_: NoArguments, ctx: Context| {
                let started = started.clone();
                async move {
                    let _ = started.send(());
                    ctx.cancelled().await;
                    Ok::<_, HandlerError>(String::new())
                }
            },
        ))
        .build()
}

async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} took more than 20 s"))
}

async fn connect(host: &Host, era: EraChoice) -> Client {
    gateway_client(host, Client::builder("audit-tests", "2.5").era(era)).await
}

/// A client of `era` of `host` (once its servers have started) that
/// confirms whatever a server asks.
async fn started_with_confirming_client(host: &Host, era: EraChoice) -> Client {
    host.wait_started(Duration::from_secs(20)).await;
    let confirming = Client::builder("audit-tests", "2.5")
        .era(era)
        .on_elicitation(|_| async {
            let mut content = std::collections::BTreeMap::new();
            content.insert("confirm".to_owned(), mcp_schema::ElicitValue::Bool(true));
            Ok(mcp_schema::ElicitResult::accept(content))
        });
    gateway_client(host, confirming).await
}

/// The records, oldest first: the columns that do not depend on timing.
fn records(path: &std::path::Path) -> Vec<Value> {
    let connection = rusqlite::Connection::open(path).unwrap();
    let mut select = connection
        .prepare(
            "SELECT method, target, server, client, revision, outcome, error_code, \
             error_message, arguments, arguments_bytes, session, caller, time_ms, duration_ms \
             FROM audit ORDER BY id",
        )
        .unwrap();
    select
        .query_map([], |row| {
            let text = |i| row.get::<_, Option<String>>(i);
            let time_ms: i64 = row.get(12)?;
            let duration_ms: f64 = row.get(13)?;
            assert!(time_ms > 1_700_000_000_000 && duration_ms >= 0.0);
            Ok(json!({
                "method": text(0)?,
                "target": text(1)?,
                "server": text(2)?,
                "client": text(3)?,
                "revision": text(4)?,
                "outcome": text(5)?,
                "errorCode": row.get::<_, Option<i64>>(6)?,
                "errorMessage": text(7)?,
                "arguments": text(8)?,
                "argumentsBytes": row.get::<_, Option<i64>>(9)?,
                "session": text(10)?,
                "caller": text(11)?,
            }))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[tokio::test]
async fn every_request_is_recorded_with_its_outcome_in_both_eras() {
    let scratch = Scratch::new("audit");
    let path = scratch.file("audit.db");
    let (started, mut starts) = mpsc::unbounded_channel();
    let probe_url = on_http(probe(started)).await;
    let mut settings = AuditSettings::new(&path);
    settings.arguments = true;
    settings.max_argument_bytes = 20;
    let mut options = HostOptions::default();
    options.audit = Some(AuditLog::open(settings).unwrap());
    let host = Host::start(
        HostConfig {
            servers: vec![ServerConfig::remote("probe", &probe_url)],
            problems: Vec::new(),
        },
        options,
    );
    host.wait_started(Duration::from_secs(20)).await;

    let mut expected = Vec::new();
    for (era, revision) in [(LEGACY, "2025-11-25"), (MODERN, "2026-07-28")] {
        let client = connect(&host, era).await;
        let record = |method: &str, target: Option<&str>, server: Option<&str>, outcome: &str| {
            json!({
                "method": method, "target": target, "server": server,
                "client": "audit-tests 2.5", "revision": revision, "outcome": outcome,
                "errorCode": null, "errorMessage": null, "arguments": null,
                "argumentsBytes": null, "session": null, "caller": null,
            })
        };
        within("list", client.list_all_tools()).await.unwrap();
        expected.push(record("tools/list", None, None, "ok"));

        let long = "a long text that is cut";
        let echoed = within(
            "echo",
            client.call_tool("probe__echo", json!({"text": long})),
        )
        .await
        .unwrap();
        assert_ne!(echoed.is_error, Some(true));
        let mut echo = record("tools/call", Some("probe__echo"), Some("probe"), "ok");
        let arguments = json!({"text": long}).to_string();
        echo["arguments"] = json!(&arguments[..20]);
        echo["argumentsBytes"] = json!(arguments.len());
        expected.push(echo);

        let failed = within("fail", client.call_tool("probe__fail", json!({})))
            .await
            .unwrap();
        assert_eq!(failed.is_error, Some(true));
        let mut fail = record(
            "tools/call",
            Some("probe__fail"),
            Some("probe"),
            "tool_error",
        );
        fail["arguments"] = json!("{}");
        fail["argumentsBytes"] = json!(2);
        expected.push(fail);

        let unknown = within("unknown", client.call_tool("probe__nope", json!({}))).await;
        assert!(unknown.is_err());
        let mut nope = record("tools/call", Some("probe__nope"), None, "error");
        nope["errorCode"] = json!(-32602);
        nope["errorMessage"] = json!("Invalid params: unknown tool: probe__nope");
        nope["arguments"] = json!("{}");
        nope["argumentsBytes"] = json!(2);
        expected.push(nope);

        // A call the client leaves: recorded as cancelled.
        let waiting = {
            let client = client.clone();
            tokio::spawn(async move {
                client
                    .request::<_, Value>(
                        "tools/call",
                        &json!({"name": "probe__wait", "arguments": {}}),
                        RequestOptions::new(),
                    )
                    .await
            })
        };
        within("the wait to start", starts.recv()).await.unwrap();
        waiting.abort();
        client.close().await;
        let mut left = record(
            "tools/call",
            Some("probe__wait"),
            Some("probe"),
            "cancelled",
        );
        left["arguments"] = json!("{}");
        left["argumentsBytes"] = json!(2);
        expected.push(left);

        // The cancelled call is recorded when the host lets it go.
        let audit = host.audit().unwrap().clone();
        let want = expected.len() as u64;
        within("the records", async {
            loop {
                audit.flush(Duration::from_secs(5)).await;
                if audit.status().written >= want {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
    }
    // The handshakes (initialize, server/discover) are the engine's to
    // answer, not the gateway's: every other request is there, in order.
    assert_eq!(records(&path), expected);
    let status = host.status().audit.unwrap();
    assert_eq!((status.state, status.lost), ("ok", 0), "{status:?}");
    host.shutdown(Duration::from_secs(5)).await;
}

/// A server's own request to the client (sampling here, from a server
/// spoken to in the legacy era, where it is a request of its own) is
/// recorded too: which server asked, which client answered, and how it
/// ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_question_to_a_client_is_recorded() {
    let scratch = Scratch::new("audit-asked");
    let path = scratch.file("audit.db");
    let url = on_http(mcp_builtin::everything::server()).await;
    let mut options = HostOptions::default();
    options.audit = Some(AuditLog::open(AuditSettings::new(&path)).unwrap());
    let host = Host::start(
        HostConfig {
            servers: vec![
                ServerConfig::remote("everything", &url)
                    .namespace("")
                    .era("legacy")
                    .unwrap(),
            ],
            problems: Vec::new(),
        },
        options,
    );
    host.wait_started(Duration::from_secs(20)).await;
    for era in [LEGACY, MODERN] {
        let builder = Client::builder("audit-tests", "2.5")
            .era(era)
            .on_sampling(|_| async {
                Ok(mcp_schema::CreateMessageResult::assistant_text(
                    "m", "Paris",
                ))
            });
        let client = gateway_client(&host, builder).await;
        let answer = within(
            "test_sampling",
            client.call_tool("test_sampling", json!({"prompt": "Capital of France?"})),
        )
        .await
        .unwrap();
        assert!(
            answer.content[0]
                .as_text()
                .unwrap_or_default()
                .contains("Paris"),
            "{answer:?}"
        );
    }
    host.shutdown(Duration::from_secs(5)).await;
    drop(host);
    let connection = rusqlite::Connection::open(&path).unwrap();
    let asked: Vec<(String, Option<String>, Option<String>, String)> = connection
        .prepare(
            "SELECT method, server, client, outcome FROM audit \
             WHERE method = 'sampling/createMessage' ORDER BY id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let one = (
        "sampling/createMessage".to_owned(),
        Some("everything".to_owned()),
        Some("audit-tests 2.5".to_owned()),
        "ok".to_owned(),
    );
    assert_eq!(asked, vec![one.clone(), one], "one per era");
}

/// A 2026-07-28 server's question in a round of a legacy client's call
/// (the host asks the client by a request of its session) is a row of its
/// own, as a legacy server's request would be.
#[tokio::test]
async fn a_modern_servers_question_answered_by_a_legacy_client_is_a_row() {
    let scratch = Scratch::new("audit-rounds");
    let path = scratch.file("audit.db");
    let url = on_http(mcp_builtin::everything::server()).await;
    let mut options = HostOptions::default();
    options.audit = Some(AuditLog::open(AuditSettings::new(&path)).unwrap());
    let host = Host::start(
        HostConfig {
            servers: vec![
                ServerConfig::remote("everything", &url)
                    .namespace("")
                    .era("modern")
                    .unwrap(),
            ],
            problems: Vec::new(),
        },
        options,
    );
    let client = started_with_confirming_client(&host, LEGACY).await;
    let deleted = within(
        "confirm_delete",
        client.call_tool("confirm_delete", json!({"filename": "a.txt"})),
    )
    .await
    .unwrap();
    assert_eq!(deleted.content[0].as_text(), Some("Deleted a.txt"));
    host.shutdown(Duration::from_secs(5)).await;
    let rows = records(&path);
    let asked = rows
        .iter()
        .find(|r| r["method"] == "elicitation/create")
        .unwrap_or_else(|| panic!("no row of the question: {rows:?}"));
    assert_eq!(asked["server"], "everything");
    assert_eq!(asked["client"], "audit-tests 2.5");
    assert_eq!(asked["revision"], "2025-11-25");
    assert_eq!(asked["outcome"], "ok");
    assert!(
        rows.iter()
            .any(|r| r["method"] == "tools/call" && r["target"] == "confirm_delete")
    );
}

/// A 2026-07-28 client's call that takes `input_required` rounds (the
/// server asks twice, through a legacy upstream's questions and a modern
/// one's rounds) is one conversation in the audit: each retry names the
/// first request, found by the state the round asked it to bring back,
/// and the query of that conversation returns them all in order.
#[tokio::test]
async fn a_modern_calls_rounds_are_one_conversation() {
    let scratch = Scratch::new("audit-conversation");
    let path = scratch.file("audit.db");
    let url = on_http(mcp_builtin::everything::server()).await;
    let mut options = HostOptions::default();
    options.audit = Some(AuditLog::open(AuditSettings::new(&path)).unwrap());
    let servers = ["legacy", "modern"]
        .map(|era| {
            ServerConfig::remote(era, &url)
                .namespace(era)
                .era(era)
                .unwrap()
        })
        .to_vec();
    let host = Host::start(
        HostConfig {
            servers,
            problems: Vec::new(),
        },
        options,
    );
    let client = started_with_confirming_client(&host, MODERN).await;
    for era in ["legacy", "modern"] {
        let deleted = within(
            "confirm_delete",
            client.call_tool(
                &format!("{era}__confirm_delete"),
                json!({"filename": "a.txt"}),
            ),
        )
        .await
        .unwrap();
        assert_eq!(deleted.content[0].as_text(), Some("Deleted a.txt"));
        let plain = within(
            "echo",
            client.call_tool(&format!("{era}__echo"), json!({"text": "hi"})),
        )
        .await
        .unwrap();
        assert_ne!(plain.is_error, Some(true));
    }
    host.shutdown(Duration::from_secs(5)).await;
    for era in ["legacy", "modern"] {
        let mut asked = mcp_host::audit::AuditQuery::default();
        asked.target = Some(format!("{era}__confirm_delete"));
        let calls = mcp_host::audit::query(&path, &asked).unwrap();
        assert!(calls.len() >= 2, "{era}: a call and its retry: {calls:?}");
        let first = calls[0].id;
        assert_eq!(
            calls[0].conversation, None,
            "{era}: the first request starts it"
        );
        for retry in &calls[1..] {
            assert_eq!(retry.conversation, Some(first), "{era}: {calls:?}");
        }
        let mut whole = mcp_host::audit::AuditQuery::default();
        whole.conversation = Some(first);
        let conversation = mcp_host::audit::query(&path, &whole).unwrap();
        let ids: Vec<i64> = conversation.iter().map(|r| r.id).collect();
        assert_eq!(ids, calls.iter().map(|r| r.id).collect::<Vec<_>>(), "{era}");
        let mut echoed = mcp_host::audit::AuditQuery::default();
        echoed.target = Some(format!("{era}__echo"));
        let echoes = mcp_host::audit::query(&path, &echoed).unwrap();
        assert_eq!(echoes.len(), 1);
        assert_eq!(
            echoes[0].conversation, None,
            "a call without rounds stands alone"
        );
    }
}
