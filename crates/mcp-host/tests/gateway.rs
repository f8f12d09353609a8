//! The host between real servers on loopback HTTP and clients of both eras:
//! names routed across namespaces, progress and cancellation across the
//! hop, list changes fanned out, a dead upstream contained, hot reload.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_client::{Client, EraChoice, RequestOptions};
use mcp_host::config::{HostConfig, ServerConfig};
use mcp_host::{Host, HostOptions, SupervisorOptions, UpstreamState};
use mcp_schema::ProtocolVersion;
use mcp_server::{Context, HandlerError, NoArguments, Server, ToolDef};
use serde_json::{Value, json};
use tokio::sync::mpsc;

mod support;

use support::{gateway_client, on_http, on_http_endpoint};

const LEGACY: EraChoice = EraChoice::Pinned(ProtocolVersion::V2025_11_25);
const MODERN: EraChoice = EraChoice::Pinned(ProtocolVersion::V2026_07_28);

/// Reports "cancelled" when the call it lives in ends: a cancelled call is
/// told (its context's token) or dropped.
struct Ended(mpsc::UnboundedSender<&'static str>);

impl Drop for Ended {
    fn drop(&mut self) {
        let _ = self.0.send("cancelled");
    }
}

/// A server whose `wait` tool reports on `events` when it starts and when
/// it is cancelled. While it waits it reports progress (when asked): a
/// 2026-07-28 request over HTTP is cancelled by closing its response, which
/// the server notices when it next writes to it.
fn probe(events: mpsc::UnboundedSender<&'static str>) -> Server {
    Server::builder("probe", "1.0")
        .tool(ToolDef::new(
            "wait",
            "Waits until cancelled",
            move |_: NoArguments, ctx: Context| {
                let events = events.clone();
                async move {
                    let _ = events.send("started");
                    let _ended = Ended(events);
                    let mut step = 0.0;
                    loop {
                        tokio::select! {
                            _ = ctx.cancelled() => break,
                            _ = tokio::time::sleep(Duration::from_millis(50)) => {
                                step += 1.0;
                                ctx.progress(step, None, None).await;
                            }
                        }
                    }
                    Err::<String, _>(HandlerError::failed("cancelled"))
                }
            },
        ))
        .tool(ToolDef::new(
            "echo",
            "Echoes",
            |args: serde_json::Map<String, Value>, _ctx: Context| async move {
                Ok::<_, HandlerError>(format!("probe: {}", args["text"].as_str().unwrap_or("")))
            },
        ))
        .build()
}

fn quick() -> HostOptions {
    let mut options = HostOptions::default();
    options.supervisor = quick_supervisor();
    options
}

fn quick_supervisor() -> SupervisorOptions {
    let mut supervisor = SupervisorOptions::default();
    supervisor.connect_timeout = Duration::from_secs(10);
    supervisor.backoff_initial = Duration::from_millis(50);
    supervisor.backoff_max = Duration::from_millis(200);
    supervisor
}

/// A remote server entry spoken to in `era`.
fn server_of_era(name: &str, url: &str, era: &str) -> ServerConfig {
    ServerConfig::remote(name, url).era(era).unwrap()
}

async fn start(servers: Vec<ServerConfig>) -> Host {
    let host = Host::start(
        HostConfig {
            servers,
            problems: Vec::new(),
        },
        quick(),
    );
    host.wait_started(Duration::from_secs(20)).await;
    host
}

/// A client of `era` connected to the host's gateway over an in-memory
/// transport; every notification it gets is counted by method.
async fn client(
    host: &Host,
    era: EraChoice,
    seen: Option<mpsc::UnboundedSender<String>>,
) -> Client {
    let mut builder = Client::builder("gateway-tests", "1.0")
        .era(era)
        .on_sampling(|_| async {
            Ok(mcp_schema::CreateMessageResult::assistant_text(
                "m", "Paris",
            ))
        });
    if let Some(seen) = seen {
        builder = builder.on_notification(move |n| {
            let _ = seen.send(n.method.clone());
        });
    }
    gateway_client(host, builder).await
}

/// A host in front of `mcp_builtin::everything` over HTTP, spoken to in
/// `era`, its names unprefixed.
async fn everything_host(era: &str) -> Host {
    let everything_url = on_http(mcp_builtin::everything::server()).await;
    start(vec![
        server_of_era("everything", &everything_url, era).namespace(""),
    ])
    .await
}

async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} took more than 20 s"))
}

fn text(result: &mcp_schema::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn calls_are_routed_by_namespace_in_both_eras() {
    let (events, _) = mpsc::unbounded_channel();
    let probe_url = on_http(probe(events)).await;
    let everything_url = on_http(mcp_builtin::everything::server()).await;
    let host = start(vec![
        ServerConfig::remote("probe", &probe_url),
        ServerConfig::remote("everything", &everything_url).namespace(""),
    ])
    .await;
    let status = host.status();
    assert!(
        status
            .servers
            .iter()
            .all(|s| s.state == UpstreamState::Ready),
        "{status:?}"
    );
    for era in [LEGACY, MODERN] {
        let client = client(&host, era, None).await;
        let names: Vec<String> = client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert!(names.contains(&"probe__echo".to_owned()), "{names:?}");
        assert!(names.contains(&"echo".to_owned()), "unprefixed: {names:?}");
        assert!(!names.contains(&"probe__probe__echo".to_owned()));
        let probe = client
            .call_tool("probe__echo", json!({"text": "a"}))
            .await
            .unwrap();
        assert_eq!(text(&probe), "probe: a");
        let everything = client
            .call_tool("echo", json!({"text": "b"}))
            .await
            .unwrap();
        assert_eq!(text(&everything), "b");
        let unknown = client.call_tool("nope__echo", json!({})).await.unwrap_err();
        assert!(
            unknown.to_string().contains("unknown tool: nope__echo"),
            "{unknown}"
        );
        // A resource and a prompt of the unprefixed server.
        let prompts = client.list_all_prompts().await.unwrap();
        assert!(!prompts.is_empty());
        let resources = client.list_all_resources().await.unwrap();
        let read = client.read_resource(&resources[0].uri).await.unwrap();
        assert!(!read.contents.is_empty());
    }
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn progress_comes_back_across_the_hop() {
    let everything_url = on_http(mcp_builtin::everything::server()).await;
    let host = start(vec![ServerConfig::remote("e", &everything_url)]).await;
    for era in [LEGACY, MODERN] {
        let client = client(&host, era, None).await;
        let count = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&count);
        let options = RequestOptions::new().on_progress(move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
        });
        let result: Value = client
            .request(
                "tools/call",
                &json!({"name": "e__test_tool_with_progress", "arguments": {}}),
                options,
            )
            .await
            .unwrap();
        assert_ne!(result["isError"], json!(true), "{result}");
        assert_eq!(count.load(Ordering::SeqCst), 3, "0, 50 and 100 in {era:?}");
    }
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_client_that_goes_away_mid_call_cancels_the_upstream_call() {
    let (events, mut seen) = mpsc::unbounded_channel();
    let probe_url = on_http(probe(events)).await;
    let host = start(vec![ServerConfig::remote("probe", &probe_url)]).await;
    for era in [LEGACY, MODERN] {
        let client = client(&host, era, None).await;
        let call = {
            let client = client.clone();
            let progress = RequestOptions::new().on_progress(|_| {});
            tokio::spawn(async move {
                client
                    .request::<_, Value>(
                        "tools/call",
                        &json!({"name": "probe__wait", "arguments": {}}),
                        progress,
                    )
                    .await
            })
        };
        assert_eq!(
            within("the call to start", seen.recv()).await,
            Some("started")
        );
        call.abort();
        client.close().await;
        assert_eq!(
            within("the upstream call to be cancelled", seen.recv()).await,
            Some("cancelled"),
            "{era:?}"
        );
    }
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_legacy_servers_question_mid_call_reaches_clients_of_both_eras() {
    // The upstream speaks 2025-11-25: it asks the host for sampling in the
    // middle of the call. A legacy client is asked with a request; a
    // 2026-07-28 client gets an input_required round, and its retry
    // resumes the same upstream call.
    let everything_url = on_http(mcp_builtin::everything::server()).await;
    let host = start(vec![server_of_era("old", &everything_url, "2025-11-25")]).await;
    assert_eq!(
        host.status().servers[0].revision.as_deref(),
        Some("2025-11-25")
    );
    for era in [LEGACY, MODERN] {
        let client = client(&host, era, None).await;
        let result = client
            .call_tool(
                "old__test_sampling",
                json!({"prompt": "Capital of France?"}),
            )
            .await
            .unwrap_or_else(|e| panic!("{era:?}: {e}"));
        assert_eq!(text(&result), "LLM response: Paris", "{era:?}");
    }
    // A retry naming no held call is refused clearly.
    let client = client(&host, MODERN, None).await;
    let stale = client
        .request::<_, Value>(
            "tools/call",
            &json!({
                "name": "old__test_sampling",
                "arguments": {"prompt": "x"},
                "requestState": "mcp-host/held:0",
                "inputResponses": {}
            }),
            RequestOptions::new(),
        )
        .await
        .unwrap_err();
    assert!(
        stale.to_string().contains("names no call in progress"),
        "{stale}"
    );
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_legacy_session_the_server_forgot_is_started_again_unseen() {
    // The server loses its sessions (a restart behind the same address):
    // its 404 makes the host's client initialize again, and the call that
    // met it goes through.
    let (url, endpoint) = on_http_endpoint(mcp_builtin::everything::server()).await;
    let host = start(vec![server_of_era("s", &url, "legacy")]).await;
    let client = client(&host, MODERN, None).await;
    let first = client
        .call_tool("s__echo", json!({"text": "one"}))
        .await
        .unwrap();
    assert_eq!(text(&first), "one");
    assert_eq!(endpoint.session_count(), 1);
    endpoint.close_sessions();
    assert_eq!(endpoint.session_count(), 0);
    let second = client
        .call_tool("s__echo", json!({"text": "two"}))
        .await
        .unwrap();
    assert_eq!(text(&second), "two");
    assert_eq!(endpoint.session_count(), 1, "a new session");
    assert_eq!(host.status().servers[0].state, UpstreamState::Ready);
    assert_eq!(
        host.status().servers[0].restarts,
        0,
        "no restart was needed"
    );
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn log_messages_reach_the_caller_at_the_level_it_chose() {
    let everything_url = on_http(mcp_builtin::everything::server()).await;
    for upstream_era in ["legacy", "modern"] {
        let host = start(vec![server_of_era("s", &everything_url, upstream_era)]).await;
        let (tx, mut seen) = mpsc::unbounded_channel();
        let client = client(&host, LEGACY, Some(tx)).await;
        client
            .set_logging_level(mcp_schema::LoggingLevel::Warning)
            .await
            .unwrap();
        client
            .call_tool("s__test_logging_tool", json!({}))
            .await
            .unwrap();
        let mut messages = 0;
        while let Ok(Some(method)) =
            tokio::time::timeout(Duration::from_millis(300), seen.recv()).await
        {
            if method == "notifications/message" {
                messages += 1;
            }
        }
        assert_eq!(
            messages, 2,
            "warning and error, from a {upstream_era} server"
        );
        host.shutdown(Duration::from_secs(5)).await;
    }
}

#[tokio::test]
async fn resource_updates_reach_only_subscribers_from_servers_of_both_eras() {
    let everything_url = on_http(mcp_builtin::everything::server()).await;
    for upstream_era in ["legacy", "modern"] {
        let host = start(vec![server_of_era("s", &everything_url, upstream_era)]).await;
        let (tx, mut subscriber_seen) = mpsc::unbounded_channel();
        let subscriber = client(&host, LEGACY, Some(tx)).await;
        let (tx, mut other_seen) = mpsc::unbounded_channel();
        let other = client(&host, LEGACY, Some(tx)).await;
        subscriber
            .subscribe_resource("test://watched-resource")
            .await
            .unwrap();
        // A 2026-07-28 server is asked on a stream of its own, which opens
        // a moment later: the resource is changed until the update comes.
        within("the update", async {
            loop {
                other
                    .call_tool("s__update_watched_resource", json!({}))
                    .await
                    .unwrap();
                let waited = tokio::time::timeout(Duration::from_millis(500), async {
                    while let Some(method) = subscriber_seen.recv().await {
                        if method == "notifications/resources/updated" {
                            return;
                        }
                    }
                })
                .await;
                if waited.is_ok() {
                    return;
                }
            }
        })
        .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        while let Ok(method) = other_seen.try_recv() {
            assert_ne!(
                method, "notifications/resources/updated",
                "only the subscriber is told ({upstream_era} server)"
            );
        }
        host.shutdown(Duration::from_secs(5)).await;
    }
}

#[tokio::test]
async fn a_change_upstream_reaches_clients_as_list_changed() {
    let everything_url = on_http(mcp_builtin::everything::server()).await;
    let host = start(vec![ServerConfig::remote("e", &everything_url)]).await;
    let (tx, mut notifications) = mpsc::unbounded_channel();
    let client = client(&host, LEGACY, Some(tx)).await;
    let before = client.list_all_tools().await.unwrap().len();
    client
        .call_tool("e__test_trigger_tool_change", json!({}))
        .await
        .unwrap();
    within("tools/list_changed", async {
        while let Some(method) = notifications.recv().await {
            if method == "notifications/tools/list_changed" {
                return;
            }
        }
    })
    .await;
    let after = client.list_all_tools().await.unwrap();
    assert_eq!(after.len(), before + 1);
    assert!(after.iter().any(|t| t.name == "e__test_dynamic_tool"));
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_dead_upstream_is_contained_and_named() {
    // A port that was free a moment ago: nothing listens there.
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let everything_url = on_http(mcp_builtin::everything::server()).await;
    let host = start(vec![
        ServerConfig::remote("dead", format!("http://127.0.0.1:{dead}/mcp")),
        ServerConfig::remote("alive", &everything_url),
    ])
    .await;
    let status = host.status();
    let dead_status = &status.servers[0];
    assert_eq!(dead_status.state, UpstreamState::Restarting, "{status:?}");
    assert!(
        dead_status
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains(&dead.to_string())),
        "{dead_status:?}"
    );
    assert_eq!(status.servers[1].state, UpstreamState::Ready);
    let client = client(&host, MODERN, None).await;
    let result = client
        .call_tool("alive__echo", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(text(&result), "still here");
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn reload_starts_stops_and_restarts_only_what_changed() {
    let (events, _) = mpsc::unbounded_channel();
    let probe_url = on_http(probe(events)).await;
    let everything_url = on_http(mcp_builtin::everything::server()).await;
    let keep = ServerConfig::remote("keep", &everything_url);
    let host = start(vec![
        keep.clone(),
        ServerConfig::remote("gone", &everything_url),
    ])
    .await;
    let kept = Arc::clone(&host.upstreams()[0]);
    let mut events = host.events();
    // The added server comes first in the new config.
    let reloaded = host.reload(HostConfig {
        servers: vec![ServerConfig::remote("added", &probe_url), keep],
        problems: Vec::new(),
    });
    assert_eq!(reloaded.started, ["added"]);
    assert_eq!(reloaded.stopped, ["gone"]);
    within("the added server", async {
        loop {
            let names: Vec<String> = host
                .upstreams()
                .iter()
                .map(|u| u.name().to_owned())
                .collect();
            let ready = host
                .status()
                .servers
                .iter()
                .all(|s| s.state == UpstreamState::Ready);
            if names == ["keep", "added"] && ready && host.catalog().tool("added__echo").is_some() {
                return;
            }
            let _ = tokio::time::timeout(Duration::from_millis(100), events.recv()).await;
        }
    })
    .await;
    let catalog = host.catalog();
    assert!(catalog.tool("gone__echo").is_none());
    assert!(catalog.tool("keep__echo").is_some());
    assert!(
        Arc::ptr_eq(&kept, &host.upstreams()[0]),
        "the unchanged server kept its connection"
    );
    assert_eq!(kept.status().restarts, 0);
    assert_eq!(kept.status().state, UpstreamState::Ready);
    // The status shows them in the config's order.
    let shown: Vec<String> = host.status().servers.into_iter().map(|s| s.name).collect();
    assert_eq!(shown, ["added", "keep"]);
    host.shutdown(Duration::from_secs(5)).await;
}

/// `method` (`tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/list`)
/// about `task` (none for a list), answered within the tests' bound.
async fn about_task(
    client: &Client,
    method: &str,
    task: Option<&str>,
) -> Result<Value, mcp_client::ClientError> {
    let params = match task {
        Some(task) => json!({"taskId": task}),
        None => json!({}),
    };
    within(
        method,
        client.request(method, &params, RequestOptions::new()),
    )
    .await
}

#[tokio::test]
async fn a_task_is_reached_only_by_the_client_that_started_it() {
    let host = everything_host("legacy").await;
    let ada = client(&host, LEGACY, None).await;
    let bob = client(&host, LEGACY, None).await;
    let started: Value = within(
        "a task-augmented call",
        ada.request(
            "tools/call",
            &json!({"name": "slow_compute", "arguments": {"seconds": 0.2, "label": "ada's"},
                "task": {"ttl": 60000}}),
            RequestOptions::new(),
        ),
    )
    .await
    .expect("the task starts");
    let task = started["task"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();

    // Its client follows it, lists it and gets its result.
    let got: Value = about_task(&ada, "tasks/get", Some(&task))
        .await
        .expect("tasks/get");
    assert_eq!(got["taskId"], task.as_str());
    let listed: Value = about_task(&ada, "tasks/list", None)
        .await
        .expect("tasks/list");
    assert_eq!(listed["tasks"][0]["taskId"], task.as_str(), "{listed}");
    let result: Value = about_task(&ada, "tasks/result", Some(&task))
        .await
        .expect("tasks/result");
    assert_eq!(result["content"][0]["text"], "ada's: computed in 0.2 s");

    // Another client of the host (the same upstream session) does not
    // see it, by id or in its list.
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let refused = about_task(&bob, method, Some(&task)).await.unwrap_err();
        assert!(
            refused.to_string().contains("unknown task"),
            "{method}: {refused}"
        );
    }
    let listed: Value = about_task(&bob, "tasks/list", None)
        .await
        .expect("tasks/list");
    assert_eq!(listed["tasks"], json!([]), "{listed}");
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_legacy_clients_task_runs_on_a_modern_upstream() {
    let host = everything_host("modern").await;
    let asked = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&asked);
    let client = gateway_client(
        &host,
        Client::builder("gateway-tests", "1.0")
            .era(LEGACY)
            .on_elicitation(move |_| {
                counted.fetch_add(1, Ordering::SeqCst);
                async move {
                    let mut content = std::collections::BTreeMap::new();
                    content.insert("confirm".to_owned(), mcp_schema::ElicitValue::Bool(true));
                    Ok(mcp_schema::ElicitResult::accept(content))
                }
            }),
    )
    .await;
    let start_task = |name: &'static str, arguments: Value| {
        let client = client.clone();
        async move {
            let started: Value = within(
                "a task-augmented call",
                client.request(
                    "tools/call",
                    &json!({"name": name, "arguments": arguments, "task": {"ttl": 60000}}),
                    RequestOptions::new(),
                ),
            )
            .await
            .expect("the task starts");
            started["task"]["taskId"]
                .as_str()
                .unwrap_or_else(|| panic!("not a 2025-11-25 task: {started}"))
                .to_owned()
        }
    };

    // A task that computes: followed, then awaited, in the client's shapes.
    let task = start_task("slow_compute", json!({"seconds": 0.3, "label": "bridged"})).await;
    let got: Value = about_task(&client, "tasks/get", Some(&task))
        .await
        .expect("tasks/get");
    assert_eq!(got["taskId"], task.as_str(), "{got}");
    assert!(got.get("resultType").is_none(), "{got}");
    let result: Value = about_task(&client, "tasks/result", Some(&task))
        .await
        .expect("tasks/result");
    assert_eq!(
        result["content"][0]["text"], "bridged: computed in 0.3 s",
        "{result}"
    );

    // A task that waits for the client's answer, asked as the client's
    // revision asks.
    let task = start_task("confirm_delete", json!({"filename": "a.txt"})).await;
    let result: Value = about_task(&client, "tasks/result", Some(&task))
        .await
        .expect("tasks/result");
    assert_eq!(result["content"][0]["text"], "Deleted a.txt", "{result}");
    assert_eq!(asked.load(Ordering::SeqCst), 1);

    // A cancelled one.
    let task = start_task("slow_compute", json!({"seconds": 30, "label": "long"})).await;
    let cancelled: Value = client
        .request(
            "tasks/cancel",
            &json!({"taskId": task}),
            RequestOptions::new(),
        )
        .await
        .expect("tasks/cancel");
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let listed: Value = about_task(&client, "tasks/list", None)
        .await
        .expect("tasks/list");
    let statuses: Vec<&str> = listed["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|t| t["status"].as_str())
        .collect();
    assert_eq!(
        statuses,
        ["completed", "completed", "cancelled"],
        "{listed}"
    );
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_modern_clients_call_of_a_legacy_task_only_tool_runs_as_its_task() {
    let host = everything_host("legacy").await;
    let client = gateway_client(
        &host,
        Client::builder("gateway-tests", "1.0")
            .era(MODERN)
            .extension(mcp_schema::EXTENSION_TASKS, Default::default()),
    )
    .await;
    let started: Value = within(
        "a call of a tool that runs only as a task",
        client.request(
            "tools/call",
            &json!({"name": "failing_job", "arguments": {}}),
            RequestOptions::new(),
        ),
    )
    .await
    .expect("the task starts");
    assert_eq!(started["resultType"], "task", "{started}");
    let task = started["taskId"].as_str().expect("taskId").to_owned();

    // Polled until it ends: a tool's error is a completed task in this
    // revision, with the tool's result.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let done = loop {
        let got = about_task(&client, "tasks/get", Some(&task))
            .await
            .expect("tasks/get");
        assert_eq!(got["taskId"], task.as_str(), "{got}");
        if got["status"] != "working" {
            break got;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still working: {got}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true, "{done}");
    let said = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(said.contains("The job failed"), "{done}");
    // Cancelling an ended task is acknowledged.
    let cancelled = about_task(&client, "tasks/cancel", Some(&task))
        .await
        .expect("tasks/cancel");
    assert_eq!(cancelled["resultType"], "complete", "{cancelled}");
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_disabled_server_leaves_the_catalog_until_it_is_enabled() {
    let url = on_http(mcp_builtin::everything::server()).await;
    let keep = ServerConfig::remote("keep", &url);
    let off = ServerConfig::remote("off", &url);
    let host = start(vec![keep.clone(), off.clone()]).await;
    assert!(host.catalog().tool("off__echo").is_some());
    host.disable("off").unwrap();
    assert!(host.disable("off").is_err(), "not running any more");
    assert!(host.disable("nobody").is_err());
    within("the catalog without it", async {
        while host.catalog().tool("off__echo").is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(host.status().disabled, ["off"]);
    assert!(host.catalog().tool("keep__echo").is_some());

    // A reload with its entry still there keeps it disabled.
    let reloaded = host.reload(HostConfig {
        servers: vec![keep, off],
        problems: Vec::new(),
    });
    assert!(reloaded.started.is_empty(), "{reloaded:?}");
    assert_eq!(host.disabled(), ["off"]);

    host.enable("off").unwrap();
    assert!(host.enable("off").is_err(), "not disabled any more");
    within("the catalog with it again", async {
        while host.catalog().tool("off__echo").is_none() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(host.status().disabled.is_empty());
    host.shutdown(Duration::from_secs(5)).await;
}
