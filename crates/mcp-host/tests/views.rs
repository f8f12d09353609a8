//! Views of the catalog: a view lists only its servers' and tools' items
//! and refuses the others; a discovery view over 2,000 tools of 20 servers
//! lists its three tools, whose search finds the tool twenty queries
//! written for this test mean among its first three, and a call through
//! `call_tool` is audited as a direct call is (and the discovery tools'
//! own calls as calls of no server). The upstreams are
//! `mcp_server` servers over loopback HTTP.

use std::time::Duration;

use mcp_client::{Client, EraChoice};
use mcp_host::audit::{AuditQuery, query};
use mcp_host::config::{HostConfig, ServerConfig};
use mcp_host::{AuditLog, AuditSettings, Gateway, Host, HostOptions, HostSettings};
use mcp_schema::ProtocolVersion;
use mcp_server::{Context, HandlerError, Server, ToolDef};
use serde_json::{Value, json};

mod support;
use support::{Scratch, on_http, within};

/// The domains of the generated servers: one server each.
const DOMAINS: [&str; 20] = [
    "calendar",
    "email",
    "weather",
    "github",
    "files",
    "database",
    "crm",
    "billing",
    "maps",
    "music",
    "news",
    "stocks",
    "translate",
    "images",
    "chat",
    "tickets",
    "docs",
    "contacts",
    "tasks",
    "wiki",
];
/// What each server's tools do, to what: 10 × 10 tools a server.
const VERBS: [(&str, &str); 10] = [
    ("create", "Creates a new"),
    ("delete", "Deletes an existing"),
    ("list", "Lists every"),
    ("get", "Fetches one"),
    ("update", "Changes the fields of a"),
    ("search", "Finds by keywords each"),
    ("archive", "Moves to the archive a"),
    ("export", "Writes out as a CSV file a"),
    ("share", "Gives another person access to a"),
    ("count", "Tells how many there are of each"),
];
const OBJECTS: [&str; 10] = [
    "item",
    "folder",
    "label",
    "comment",
    "attachment",
    "owner",
    "template",
    "report",
    "reminder",
    "permission",
];

/// A server of `domain` with its 100 tools, each echoing its own name.
fn domain_server(domain: &'static str) -> Server {
    let mut server = Server::builder(domain, "1.0");
    for (verb, saying) in VERBS {
        for object in OBJECTS {
            let name = format!("{verb}_{object}");
            let description = format!("{saying} {object} in the {domain} service.");
            let answer = format!("{domain}:{name}");
            server = server.tool(ToolDef::new(
                name,
                description,
                move |_: serde_json::Map<String, Value>, _: Context| {
                    let answer = answer.clone();
                    async move { Ok::<_, HandlerError>(answer) }
                },
            ));
        }
    }
    server.build()
}

/// A host of the 20 domain servers (each namespaced by its domain) and
/// the view settings `settings`, auditing into `audit`.
async fn host(settings: &str, audit: &std::path::Path) -> (Host, HostSettings) {
    let mut servers = Vec::new();
    for domain in DOMAINS {
        let url = on_http(domain_server(domain)).await;
        servers.push(ServerConfig::remote(domain, &url));
    }
    let settings = HostSettings::parse(settings).unwrap();
    let mut options: HostOptions = settings.options().unwrap();
    options.audit = Some(AuditLog::open(AuditSettings::new(audit)).unwrap());
    let host = Host::start(
        HostConfig {
            servers,
            problems: Vec::new(),
        },
        options,
    );
    host.wait_started(Duration::from_secs(60)).await;
    assert_eq!(host.catalog().tools().len(), 2_000);
    (host, settings)
}

async fn client_of(gateway: Gateway, era: EraChoice) -> Client {
    let (server_side, client_side) = mcp_core::Transport::pair();
    let _session = mcp_core::serve(
        server_side,
        std::sync::Arc::new(gateway.clone()),
        gateway.session_config(),
    );
    within(
        "connect",
        Client::builder("views", "1.0")
            .era(era)
            .connect(client_side),
    )
    .await
    .expect("connect")
}

fn view_gateway(host: &Host, settings: &HostSettings, name: &str) -> Gateway {
    let view = settings
        .views()
        .unwrap()
        .into_iter()
        .find(|v| v.name == name)
        .unwrap();
    Gateway::for_view(host.clone(), view, name, "1.0")
}

const SETTINGS: &str = r#"
[views.planning]
servers = ["calendar", "tasks"]
tools = ["*_reminder", "*_item"]
instructions = "Plan the week."

[views.everything]
discovery = true
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_lists_and_reaches_only_its_items() {
    let scratch = Scratch::new("views-plain");
    let (host, settings) = host(SETTINGS, &scratch.file("audit.db")).await;
    for era in [
        EraChoice::Pinned(ProtocolVersion::V2025_11_25),
        EraChoice::Pinned(ProtocolVersion::V2026_07_28),
    ] {
        let client = client_of(view_gateway(&host, &settings, "planning"), era).await;
        let tools = within("list", client.list_all_tools()).await.unwrap();
        let mut names: Vec<String> = tools.into_iter().map(|t| t.name).collect();
        names.sort();
        // Two servers, ten verbs, two objects.
        assert_eq!(names.len(), 40, "{names:?}");
        assert!(
            names.contains(&"calendar__create_reminder".to_owned()),
            "{names:?}"
        );
        assert!(
            names
                .iter()
                .all(|n| n.starts_with("calendar__") || n.starts_with("tasks__"))
        );
        let called = within(
            "a call in the view",
            client.call_tool("tasks__delete_item", json!({})),
        )
        .await
        .unwrap();
        assert_eq!(
            serde_json::to_value(&called.content).unwrap()[0]["text"],
            "tasks:delete_item"
        );
        for outside in ["tasks__delete_folder", "email__delete_item"] {
            let refused = within("a call outside", client.call_tool(outside, json!({}))).await;
            let error = refused.expect_err("outside the view");
            let error = error.rpc().expect("a JSON-RPC error");
            assert!(error.message.contains("not in view"), "{}", error.message);
        }
        if era == EraChoice::Pinned(ProtocolVersion::V2025_11_25) {
            assert_eq!(client.instructions(), Some("Plan the week."));
        }
    }
}

/// Twenty queries, as a person might write them, and the tool each means.
const QUERIES: [(&str, &str); 20] = [
    ("delete a calendar reminder", "calendar__delete_reminder"),
    ("create a new email folder", "email__create_folder"),
    (
        "how many weather reports are there",
        "weather__count_report",
    ),
    (
        "share a github template with someone",
        "github__share_template",
    ),
    (
        "export files permissions as csv",
        "files__export_permission",
    ),
    (
        "archive an old database comment",
        "database__archive_comment",
    ),
    ("find crm owners by keywords", "crm__search_owner"),
    ("fetch one billing attachment", "billing__get_attachment"),
    ("change the label of a map", "maps__update_label"),
    ("list every music folder", "music__list_folder"),
    ("news item archive", "news__archive_item"),
    ("stocks report csv export", "stocks__export_report"),
    (
        "give access to a translate template",
        "translate__share_template",
    ),
    ("delete image attachment", "images__delete_attachment"),
    ("new chat reminder", "chat__create_reminder"),
    ("count tickets per owner", "tickets__count_owner"),
    ("update docs comment fields", "docs__update_comment"),
    ("get one contacts label", "contacts__get_label"),
    ("list every tasks permission", "tasks__list_permission"),
    ("search wiki items by keywords", "wiki__search_item"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discovery_view_finds_calls_and_audits_among_two_thousand_tools() {
    let scratch = Scratch::new("views-discovery");
    let audit_file = scratch.file("audit.db");
    let (host, settings) = host(SETTINGS, &audit_file).await;
    let client = client_of(
        view_gateway(&host, &settings, "everything"),
        EraChoice::Pinned(ProtocolVersion::V2026_07_28),
    )
    .await;
    let tools = within("list", client.list_all_tools()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["search_tools", "describe_tool", "call_tool"]);

    let mut misses = Vec::new();
    for (query, wanted) in QUERIES {
        let found = within(
            "search",
            client.call_tool("search_tools", json!({"query": query, "limit": 3})),
        )
        .await
        .unwrap();
        let structured = found.structured_content.clone().unwrap_or_default();
        let top: Vec<&str> = structured["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        if !top.contains(&wanted) {
            misses.push(format!("{query:?}: {top:?}, not {wanted}"));
        }
    }
    assert!(misses.is_empty(), "{misses:#?}");

    let described = within(
        "describe",
        client.call_tool("describe_tool", json!({"name": "maps__share_owner"})),
    )
    .await
    .unwrap();
    let definition = described.structured_content.unwrap();
    assert_eq!(definition["name"], "maps__share_owner");
    assert!(definition["inputSchema"].is_object());

    let called = within(
        "call through call_tool",
        client.call_tool(
            "call_tool",
            json!({"name": "weather__get_report", "arguments": {}}),
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        serde_json::to_value(&called.content).unwrap()[0]["text"],
        "weather:get_report"
    );
    let direct = within(
        "a direct call",
        client.call_tool("weather__get_report", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(called.content.len(), direct.content.len());

    host.audit().unwrap().flush(Duration::from_secs(10)).await;
    let mut filter = AuditQuery::default();
    filter.target = Some("weather__get_report".into());
    filter.limit = 10;
    let rows = query(&audit_file, &filter).unwrap();
    assert_eq!(
        rows.len(),
        2,
        "the call through call_tool and the direct one"
    );
    for row in &rows {
        assert_eq!(row.method, "tools/call");
        assert_eq!(row.server.as_deref(), Some("weather"));
        assert_eq!(row.outcome, "ok");
    }
    // The discovery tools' own calls are records too, of no server.
    for (tool, calls) in [("search_tools", QUERIES.len()), ("call_tool", 1)] {
        let mut filter = AuditQuery::default();
        filter.target = Some(tool.into());
        filter.limit = 100;
        let rows = query(&audit_file, &filter).unwrap();
        assert_eq!(rows.len(), calls, "{tool}");
        assert!(rows.iter().all(|r| r.server.is_none() && r.outcome == "ok"));
    }
}

/// A client of `gateway` in `era` that passes on the methods of the
/// notifications it gets.
async fn watching_client(
    gateway: Gateway,
    era: EraChoice,
) -> (Client, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let (seen, notifications) = tokio::sync::mpsc::unbounded_channel();
    let (server_side, client_side) = mcp_core::Transport::pair();
    let _session = mcp_core::serve(
        server_side,
        std::sync::Arc::new(gateway.clone()),
        gateway.session_config(),
    );
    let builder = Client::builder("views", "1.0")
        .era(era)
        .on_notification(move |n| {
            let _ = seen.send(n.method.clone());
        });
    let client = within("connect", builder.connect(client_side))
        .await
        .expect("connect");
    (client, notifications)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_change_reaches_only_the_views_of_its_server() {
    let everything = on_http(mcp_builtin::everything::server()).await;
    let calendar = on_http(domain_server("calendar")).await;
    let settings = HostSettings::parse(
        "[views.e]\nservers = [\"everything\"]\n\n[views.c]\nservers = [\"calendar\"]\n",
    )
    .unwrap();
    let host = Host::start(
        HostConfig {
            servers: vec![
                ServerConfig::remote("everything", &everything),
                ServerConfig::remote("calendar", &calendar),
            ],
            problems: Vec::new(),
        },
        settings.options().unwrap(),
    );
    host.wait_started(Duration::from_secs(20)).await;
    let legacy = EraChoice::Pinned(ProtocolVersion::V2025_11_25);
    let (on_e, mut heard_by_e) = watching_client(view_gateway(&host, &settings, "e"), legacy).await;
    let (_on_c, mut heard_by_c) =
        watching_client(view_gateway(&host, &settings, "c"), legacy).await;
    let (_on_all, mut heard_by_all) =
        watching_client(Gateway::new(host.clone(), "all", "1.0"), legacy).await;
    within(
        "the change",
        on_e.call_tool("everything__test_trigger_tool_change", json!({})),
    )
    .await
    .unwrap();
    for heard in [&mut heard_by_e, &mut heard_by_all] {
        within("tools/list_changed", async {
            while let Some(method) = heard.recv().await {
                if method == "notifications/tools/list_changed" {
                    return;
                }
            }
        })
        .await;
    }
    // The calendar view's lists did not change: it hears nothing of it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut heard = Vec::new();
    while let Ok(method) = heard_by_c.try_recv() {
        heard.push(method);
    }
    assert!(
        !heard.iter().any(|m| m.ends_with("list_changed")),
        "{heard:?}"
    );
    host.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_views_own_rules_hold_through_that_view_only() {
    let scratch = Scratch::new("views-rules");
    let settings = format!(
        "{SETTINGS}\n[[policy]]\ndecision = \"deny\"\nview = \"planning\"\ntool = \"delete_*\"\nname = \"no deletes while planning\"\n"
    );
    let (host, settings) = host(&settings, &scratch.file("audit.db")).await;
    let era = EraChoice::Pinned(ProtocolVersion::V2025_11_25);
    let planning = client_of(view_gateway(&host, &settings, "planning"), era).await;
    let names: Vec<String> = within("list", planning.list_all_tools())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names.len(), 36, "the four deletes are hidden: {names:?}");
    assert!(!names.iter().any(|n| n.contains("__delete_")), "{names:?}");
    let refused = within(
        "a delete",
        planning.call_tool("tasks__delete_item", json!({})),
    )
    .await
    .expect_err("denied in the view");
    let error = refused.rpc().expect("a JSON-RPC error");
    assert_eq!(error.code, -32003, "{}", error.message);
    assert!(
        error.message.contains("no deletes while planning"),
        "{}",
        error.message
    );
    // The whole catalog is not the view: the same call goes through.
    let whole = client_of(Gateway::new(host.clone(), "all", "1.0"), era).await;
    let called = within(
        "the same call",
        whole.call_tool("tasks__delete_item", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(
        serde_json::to_value(&called.content).unwrap()[0]["text"],
        "tasks:delete_item"
    );
}
