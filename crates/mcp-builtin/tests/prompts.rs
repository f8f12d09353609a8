//! The prompt library served to `mcp-client` over an in-memory transport
//! (and Streamable HTTP on a loopback socket for versions and watching),
//! in a legacy revision (2025-11-25) and in 2026-07-28, with real prompt
//! files in a temporary directory: listing, rendering (`{{#if}}`,
//! `{{#each}}` over JSON lists), strict variables, versions, completion,
//! broken files, watching, and the default library's email reply.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_builtin::prompts::{self, META_VERSION, META_VERSIONS, PromptsConfig};
use mcp_client::{Client, ClientError, EraChoice};
use mcp_core::RequestError;
use mcp_schema::{ErrorObject, GetPromptResult, ProtocolVersion, Role, error_codes};
use mcp_server::Server;
use serde_json::json;

/// Both eras.
const ERAS: [ProtocolVersion; 2] = [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28];

/// The bound on anything the tests wait for (never asserted as a timing).
const WAIT: Duration = Duration::from_secs(30);

const SUMMARIZE_1_9: &str = "---
name: summarize
version: 1.9.0
description: Summarizes a text (old).
arguments:
  - name: text
    description: The text.
    required: true
---
OLD {{text}}
";

const SUMMARIZE_1_10: &str = "---
name: summarize
version: 1.10.0
description: Summarizes a text for an audience.
tags: [writing]
author: Jane Doe
arguments:
  - name: text
    description: The text to summarize.
    required: true
  - name: audience
    description: Who reads the summary.
    enum: [engineers, managers, everyone]
  - name: points
    description: Points to keep, as a JSON array.
---
Summarize this{{#if audience}} for {{audience}}{{else}} for anyone{{/if}}:

{{text}}
{{#each points}}
- Keep: {{this}}
{{else}}
(no points to keep)
{{/each}}
";

const DIALOGUE: &str = "---
name: dialogue
version: 1.0.0
description: A question and the start of an answer.
arguments:
  - name: question
    required: true
---
{{question}}
<!-- role: assistant -->
Let me think about {{question}}
";

const UNDECLARED: &str = "---
name: undeclared
version: 1.0.0
description: Uses a variable it does not declare.
---
Hello {{recipient}}
";

const BROKEN_TEMPLATE: &str = "---
name: broken
version: 1.0.0
description: An unclosed block.
---
{{#if x}} never closed
";

const BAD_YAML: &str = "---
name: [unclosed
---
Hi
";

const NO_NAME: &str = "---
version: 1.0.0
---
Hi
";

fn write(dir: &Path, file: &str, text: &str) {
    std::fs::write(dir.join(file), text).unwrap();
}

/// A library directory: `summarize` in two versions (whose file names sort
/// the other way round), `dialogue`, `undeclared`, and broken files.
fn library() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "summarize-1.9.0.md", SUMMARIZE_1_9);
    write(dir.path(), "summarize-1.10.0.md", SUMMARIZE_1_10);
    write(dir.path(), "dialogue.md", DIALOGUE);
    write(dir.path(), "undeclared.md", UNDECLARED);
    write(dir.path(), "broken.md", BROKEN_TEMPLATE);
    write(dir.path(), "bad-yaml.md", BAD_YAML);
    write(dir.path(), "no-name.md", NO_NAME);
    write(dir.path(), "notes.txt", "not a prompt");
    dir
}

/// How a test client reaches the server.
#[derive(Clone, Copy, Debug)]
enum Wire {
    /// An in-memory pair of transports.
    Memory,
    /// Streamable HTTP on a loopback socket.
    Http,
}

/// A client of `server` in `revision`, over an in-memory transport,
/// recording the notifications it receives.
async fn connect(server: &Server, revision: ProtocolVersion) -> (Client, Arc<Mutex<Vec<String>>>) {
    connect_over(Wire::Memory, server, revision).await
}

/// Both wires, each in both eras.
fn wires_and_eras() -> Vec<(Wire, ProtocolVersion)> {
    [Wire::Memory, Wire::Http]
        .into_iter()
        .flat_map(|wire| ERAS.map(|revision| (wire, revision)))
        .collect()
}

/// A client of `server` in `revision` over `wire`, recording the
/// notifications it receives.
async fn connect_over(
    wire: Wire,
    server: &Server,
    revision: ProtocolVersion,
) -> (Client, Arc<Mutex<Vec<String>>>) {
    let client_side = match wire {
        Wire::Memory => {
            let (server_side, client_side) = mcp_core::Transport::pair();
            let _session = mcp_core::serve(
                server_side,
                Arc::new(server.clone()),
                server.session_config(),
            );
            client_side
        }
        Wire::Http => {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let endpoint = mcp_http::McpEndpoint::new(
                Arc::new(server.clone()),
                server.session_config(),
                mcp_http::HttpConfig::loopback(port),
            );
            tokio::spawn(mcp_http::serve(
                listener,
                endpoint,
                std::future::pending::<()>(),
            ));
            let config = mcp_http::HttpClientConfig::new(format!("http://127.0.0.1:{port}/mcp"))
                .transport(mcp_http::HttpTransportKind::StreamableHttp);
            mcp_http::client::connect(config)
                .await
                .unwrap()
                .into_transport()
        }
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let client = tokio::time::timeout(
        WAIT,
        Client::builder("prompts-tests", "1.0.0")
            .on_notification(move |n| log.lock().unwrap().push(n.method.clone()))
            .era(EraChoice::Pinned(revision))
            .connect(client_side),
    )
    .await
    .expect("connected in time")
    .expect("connected");
    assert_eq!(client.revision(), revision);
    (client, seen)
}

fn unwatched(dir: &Path) -> Server {
    prompts::server(PromptsConfig::directory(dir).watch(false)).expect("the library loads")
}

fn args(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn texts(result: &GetPromptResult) -> Vec<(Role, String)> {
    result
        .messages
        .iter()
        .map(|m| (m.role, m.content.as_text().unwrap_or_default().to_owned()))
        .collect()
}

fn text(result: &GetPromptResult) -> String {
    assert_eq!(result.messages.len(), 1, "{result:?}");
    texts(result).remove(0).1
}

fn rpc_error(outcome: Result<GetPromptResult, ClientError>) -> ErrorObject {
    match outcome {
        Err(ClientError::Request(RequestError::Rpc(error))) => error,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

#[tokio::test]
async fn lists_each_prompt_once_with_its_newest_arguments_and_a_version_argument() {
    let dir = library();
    let server = unwatched(dir.path());
    for revision in ERAS {
        let (client, _) = connect(&server, revision).await;
        let listed = client.list_all_prompts().await.unwrap();
        let names: Vec<&str> = listed.iter().map(|p| p.name.as_str()).collect();
        // `broken` is listed (its get says why); the files without a
        // readable name are only logged.
        assert_eq!(
            names,
            ["broken", "dialogue", "summarize", "undeclared"],
            "{revision}"
        );
        let summarize = listed.iter().find(|p| p.name == "summarize").unwrap();
        assert_eq!(
            summarize.description.as_deref(),
            Some("Summarizes a text for an audience.")
        );
        let arguments = summarize.arguments.as_ref().unwrap();
        let described: Vec<(&str, Option<bool>)> = arguments
            .iter()
            .map(|a| (a.name.as_str(), a.required))
            .collect();
        assert_eq!(
            described,
            [
                ("text", Some(true)),
                ("audience", Some(false)),
                ("points", Some(false)),
                ("version", Some(false))
            ]
        );
        let version = arguments.iter().find(|a| a.name == "version").unwrap();
        assert!(
            version
                .description
                .as_deref()
                .unwrap()
                .contains("1.10.0, 1.9.0"),
            "{version:?}"
        );
        // The versions are listed in the prompt's `_meta` too, newest first.
        let versions = summarize
            .meta
            .as_ref()
            .and_then(|meta| meta.get("io.github.mcp/versions"))
            .cloned();
        assert_eq!(versions, Some(json!(["1.10.0", "1.9.0"])), "{summarize:?}");
        let broken = listed.iter().find(|p| p.name == "broken").unwrap();
        assert!(
            broken
                .description
                .as_deref()
                .unwrap()
                .contains("unavailable"),
            "{broken:?}"
        );
        client.close().await;
    }
}

#[tokio::test]
async fn renders_if_else_and_each_over_a_json_list() {
    let dir = library();
    let server = unwatched(dir.path());
    for revision in ERAS {
        let (client, _) = connect(&server, revision).await;
        let full = client
            .get_prompt(
                "summarize",
                args(&[
                    ("text", "Rust 2024 is out. <b>Upgrade</b> & enjoy."),
                    ("audience", "engineers"),
                    ("points", r#"["the edition", "the date"]"#),
                ]),
            )
            .await
            .unwrap();
        assert_eq!(
            full.description.as_deref(),
            Some("Summarizes a text for an audience.")
        );
        // No HTML escaping; block helpers alone on their lines leave no
        // blank lines.
        assert_eq!(
            text(&full),
            "Summarize this for engineers:\n\nRust 2024 is out. <b>Upgrade</b> & enjoy.\n- Keep: the edition\n- Keep: the date"
        );
        let bare = client
            .get_prompt("summarize", args(&[("text", "Short.")]))
            .await
            .unwrap();
        assert_eq!(
            text(&bare),
            "Summarize this for anyone:\n\nShort.\n(no points to keep)"
        );
        // Text that is not a JSON list stays text.
        let not_json = client
            .get_prompt("summarize", args(&[("text", "[draft")]))
            .await
            .unwrap();
        assert!(text(&not_json).contains("\n[draft\n"), "{not_json:?}");
        client.close().await;
    }
}

#[tokio::test]
async fn role_markers_make_several_messages() {
    let dir = library();
    let server = unwatched(dir.path());
    for revision in ERAS {
        let (client, _) = connect(&server, revision).await;
        let result = client
            .get_prompt("dialogue", args(&[("question", "lifetimes")]))
            .await
            .unwrap();
        assert_eq!(
            texts(&result),
            [
                (Role::User, "lifetimes".to_owned()),
                (Role::Assistant, "Let me think about lifetimes".to_owned())
            ]
        );
        client.close().await;
    }
}

#[tokio::test]
async fn an_undefined_variable_is_an_error_naming_it() {
    let dir = library();
    let server = unwatched(dir.path());
    for revision in ERAS {
        let (client, _) = connect(&server, revision).await;
        let error = rpc_error(client.get_prompt("undeclared", args(&[])).await);
        assert_eq!(error.code, error_codes::INVALID_PARAMS, "{error:?}");
        assert!(error.message.contains("`recipient`"), "{error:?}");
        // Given, it renders.
        let given = client
            .get_prompt("undeclared", args(&[("recipient", "Ada")]))
            .await
            .unwrap();
        assert_eq!(text(&given), "Hello Ada");
        // A required argument left out is refused before rendering.
        let missing = rpc_error(client.get_prompt("summarize", args(&[])).await);
        assert_eq!(missing.code, error_codes::INVALID_PARAMS, "{missing:?}");
        assert!(missing.message.contains("\"text\""), "{missing:?}");
        // An enumerated argument takes only its values.
        let outside = rpc_error(
            client
                .get_prompt("summarize", args(&[("text", "t"), ("audience", "cats")]))
                .await,
        );
        assert_eq!(outside.code, error_codes::INVALID_PARAMS, "{outside:?}");
        assert!(
            outside.message.contains("engineers, managers, everyone"),
            "{outside:?}"
        );
        client.close().await;
    }
}

#[tokio::test]
async fn the_newest_semantic_version_is_served_unless_the_version_argument_picks_another() {
    let dir = library();
    let server = unwatched(dir.path());
    for (wire, revision) in wires_and_eras() {
        let (client, _) = connect_over(wire, &server, revision).await;
        let newest = client
            .get_prompt("summarize", args(&[("text", "T")]))
            .await
            .unwrap();
        assert!(text(&newest).starts_with("Summarize this"), "{newest:?}");
        let meta = newest.meta.as_ref().expect("_meta");
        assert_eq!(meta[META_VERSIONS], json!(["1.10.0", "1.9.0"]));
        assert_eq!(meta[META_VERSION], "1.10.0");
        assert_eq!(meta["io.github.mcp/about"]["author"], "Jane Doe");

        let old = client
            .get_prompt("summarize", args(&[("text", "T"), ("version", "1.9.0")]))
            .await
            .unwrap();
        assert_eq!(text(&old), "OLD T");
        assert_eq!(old.description.as_deref(), Some("Summarizes a text (old)."));
        assert_eq!(old.meta.as_ref().unwrap()[META_VERSION], "1.9.0");

        // An empty version (a field left blank) is the newest; an empty
        // optional argument counts as left out.
        let blank = client
            .get_prompt(
                "summarize",
                args(&[
                    ("text", "T"),
                    ("version", ""),
                    ("audience", ""),
                    ("points", ""),
                ]),
            )
            .await
            .unwrap();
        assert_eq!(blank.meta.as_ref().unwrap()[META_VERSION], "1.10.0");
        assert!(
            text(&blank).starts_with("Summarize this for anyone:"),
            "{blank:?}"
        );

        for unknown in ["2.0.0", "latest"] {
            let error = rpc_error(
                client
                    .get_prompt("summarize", args(&[("text", "T"), ("version", unknown)]))
                    .await,
            );
            assert_eq!(error.code, error_codes::INVALID_PARAMS, "{error:?}");
            assert!(error.message.contains("1.10.0, 1.9.0"), "{error:?}");
        }
        client.close().await;
    }
}

#[tokio::test]
async fn two_files_with_one_name_and_version_serve_the_first_by_path() {
    let dir = library();
    let copy = SUMMARIZE_1_10.replace("Summarize this", "COPY");
    write(dir.path(), "zz-copy.md", &copy);
    let server = unwatched(dir.path());
    let (client, _) = connect(&server, ProtocolVersion::V2026_07_28).await;
    let served = client
        .get_prompt("summarize", args(&[("text", "T")]))
        .await
        .unwrap();
    assert!(text(&served).starts_with("Summarize this"), "{served:?}");
    let library = prompts::PromptLibrary::load(dir.path()).unwrap();
    let lost = library
        .problems()
        .iter()
        .find(|p| p.source == "zz-copy.md")
        .expect("the later file is reported");
    assert!(lost.reason.contains("summarize-1.10.0.md"), "{lost}");
    client.close().await;
}

#[tokio::test]
async fn completes_versions_and_enumerated_values() {
    let dir = library();
    let server = unwatched(dir.path());
    for revision in ERAS {
        let (client, _) = connect(&server, revision).await;
        let complete = |argument: &str, value: &str| {
            serde_json::from_value(json!({
                "ref": {"type": "ref/prompt", "name": "summarize"},
                "argument": {"name": argument, "value": value}
            }))
            .unwrap()
        };
        let versions = client.complete(complete("version", "1.")).await.unwrap();
        assert_eq!(versions.completion.values, ["1.10.0", "1.9.0"]);
        let versions = client.complete(complete("version", "1.1")).await.unwrap();
        assert_eq!(versions.completion.values, ["1.10.0"]);
        let audiences = client.complete(complete("audience", "")).await.unwrap();
        assert_eq!(
            audiences.completion.values,
            ["engineers", "managers", "everyone"]
        );
        let audiences = client.complete(complete("audience", "ma")).await.unwrap();
        assert_eq!(audiences.completion.values, ["managers"]);
        client.close().await;
    }
}

#[tokio::test]
async fn a_broken_file_keeps_out_only_itself_and_its_get_says_why() {
    let dir = library();
    let server = unwatched(dir.path());
    let library = prompts::PromptLibrary::load(dir.path()).unwrap();
    let mut broken: Vec<&str> = library
        .problems()
        .iter()
        .map(|p| p.source.as_str())
        .collect();
    broken.sort();
    assert_eq!(broken, ["bad-yaml.md", "broken.md", "no-name.md"]);
    for revision in ERAS {
        let (client, _) = connect(&server, revision).await;
        let error = rpc_error(client.get_prompt("broken", args(&[])).await);
        assert_eq!(error.code, error_codes::INTERNAL_ERROR, "{error:?}");
        assert!(error.message.contains("broken.md"), "{error:?}");
        assert!(error.message.contains("template"), "{error:?}");
        let fine = client
            .get_prompt("dialogue", args(&[("question", "q")]))
            .await
            .unwrap();
        assert_eq!(fine.messages.len(), 2);
        client.close().await;
    }
}

/// Waits until `seen` holds `count` notifications `method`.
async fn notified(seen: &Arc<Mutex<Vec<String>>>, method: &str, count: usize) {
    let wait = async {
        while seen.lock().unwrap().iter().filter(|m| *m == method).count() < count {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(WAIT, wait)
        .await
        .unwrap_or_else(|_| panic!("no {method} (#{count}) within {WAIT:?}"));
}

/// Waits until the listing has (or lacks) `name`.
async fn listed(client: &Client, name: &str, present: bool) {
    let wait = async {
        loop {
            let names = client.list_all_prompts().await.unwrap();
            if names.iter().any(|p| p.name == name) == present {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(WAIT, wait)
        .await
        .unwrap_or_else(|_| panic!("{name} listed: {present} never came"));
}

#[tokio::test]
async fn adding_editing_and_removing_a_file_changes_the_catalog_and_tells_the_client() {
    const LIST_CHANGED: &str = "notifications/prompts/list_changed";
    for (wire, revision) in wires_and_eras() {
        let dir = library();
        let config = PromptsConfig::directory(dir.path()).debounce(Duration::from_millis(50));
        let server = prompts::server(config).unwrap();
        let (client, seen) = connect_over(wire, &server, revision).await;
        let listening = (revision == ProtocolVersion::V2026_07_28).then(|| {
            let filter = mcp_schema::SubscriptionFilter {
                prompts_list_changed: Some(true),
                ..Default::default()
            };
            let client = client.clone();
            tokio::spawn(async move { client.listen(filter).await })
        });
        if listening.is_some() {
            notified(&seen, "notifications/subscriptions/acknowledged", 1).await;
        }
        listed(&client, "greeting", false).await;

        let greeting = "---\nname: greeting\nversion: 1.0.0\ndescription: Greets.\narguments:\n  - name: who\n    required: true\n---\nHello {{who}}!\n";
        write(dir.path(), "greeting.md", greeting);
        notified(&seen, LIST_CHANGED, 1).await;
        listed(&client, "greeting", true).await;
        let hello = client
            .get_prompt("greeting", args(&[("who", "Ada")]))
            .await
            .unwrap();
        assert_eq!(text(&hello), "Hello Ada!");

        // A new version beside it: served, and the old one still there.
        let count = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|m| *m == LIST_CHANGED)
            .count();
        write(
            dir.path(),
            "greeting-2.md",
            &greeting.replace("1.0.0", "2.0.0").replace("Hello", "Hi"),
        );
        notified(&seen, LIST_CHANGED, count + 1).await;
        let wait = async {
            loop {
                let result = client.get_prompt("greeting", args(&[("who", "Ada")])).await;
                if result.is_ok_and(|r| text(&r) == "Hi Ada!") {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::time::timeout(WAIT, wait)
            .await
            .expect("version 2.0.0 served");
        let old = client
            .get_prompt("greeting", args(&[("who", "Ada"), ("version", "1.0.0")]))
            .await
            .unwrap();
        assert_eq!(text(&old), "Hello Ada!");

        let count = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|m| *m == LIST_CHANGED)
            .count();
        std::fs::remove_file(dir.path().join("greeting.md")).unwrap();
        std::fs::remove_file(dir.path().join("greeting-2.md")).unwrap();
        notified(&seen, LIST_CHANGED, count + 1).await;
        listed(&client, "greeting", false).await;
        if let Some(listening) = listening {
            listening.abort();
        }
        client.close().await;
    }
}

/// The default library's email reply, rendered word for word.
#[tokio::test]
async fn the_default_email_reply_renders_to_the_expected_text() {
    let server = prompts::server(PromptsConfig::default()).unwrap();
    for revision in ERAS {
        let (client, _) = connect(&server, revision).await;
        let names: Vec<String> = client
            .list_all_prompts()
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(
            names,
            [
                "code-function",
                "data-analysis-report",
                "email-reply",
                "product-description"
            ]
        );
        let reply = client
            .get_prompt(
                "email-reply",
                args(&[
                    ("sender", "Alice Martin"),
                    (
                        "email",
                        "Hi Bob,\n\nCould we move Thursday's review to Friday morning? \
                         And could you bring the Q3 figures?\n\nThanks,\nAlice",
                    ),
                    ("tone", "friendly"),
                    (
                        "points",
                        r#"["Friday at 10:00 works for me", "I will bring the Q3 figures"]"#,
                    ),
                    ("signature", "Bob Stone, Finance"),
                ]),
            )
            .await
            .unwrap();
        assert_eq!(
            text(&reply),
            "Write a reply to this email from Alice Martin:

<email>
Hi Bob,

Could we move Thursday's review to Friday morning? And could you bring the Q3 figures?

Thanks,
Alice
</email>

Use a friendly tone.

The reply must make these points, in this order:
- Friday at 10:00 works for me
- I will bring the Q3 figures

Sign it as: Bob Stone, Finance

Write only the body of the email: no subject line, no commentary. Keep it under 200 words."
        );
        let plain = client
            .get_prompt(
                "email-reply",
                args(&[("sender", "Alice"), ("email", "Are you in?")]),
            )
            .await
            .unwrap();
        assert_eq!(
            text(&plain),
            "Write a reply to this email from Alice:

<email>
Are you in?
</email>

Use a professional tone.

Answer every question the email asks; promise nothing it does not ask for.

Leave it unsigned.

Write only the body of the email: no subject line, no commentary. Keep it under 200 words."
        );
        client.close().await;
    }
}

/// Every default prompt renders with its required arguments alone and
/// with every argument given.
#[tokio::test]
async fn every_default_prompt_renders() {
    let server = prompts::server(PromptsConfig::default()).unwrap();
    let (client, _) = connect(&server, ProtocolVersion::V2026_07_28).await;
    for prompt in client.list_all_prompts().await.unwrap() {
        let arguments = prompt.arguments.clone().unwrap_or_default();
        let required: BTreeMap<String, String> = arguments
            .iter()
            .filter(|a| a.required == Some(true))
            .map(|a| {
                let is_list = a
                    .description
                    .as_deref()
                    .unwrap_or_default()
                    .contains("JSON array");
                let value = if is_list {
                    format!(r#"["<{}>"]"#, a.name)
                } else {
                    format!("<{}>", a.name)
                };
                (a.name.clone(), value)
            })
            .collect();
        let minimal = client.get_prompt(&prompt.name, required.clone()).await;
        let minimal = minimal.unwrap_or_else(|e| panic!("{}: {e}", prompt.name));
        assert!(text(&minimal).contains("<"), "{}", prompt.name);
    }
    let product = client
        .get_prompt(
            "product-description",
            args(&[
                ("product", "Trail watch"),
                ("features", r#"["waterproof to 50 m", "10-day battery"]"#),
                ("length", "short"),
                ("keywords", r#"["running watch", "GPS"]"#),
            ]),
        )
        .await
        .unwrap();
    let product = text(&product);
    assert!(
        product.contains("- waterproof to 50 m\n- 10-day battery\n"),
        "{product}"
    );
    assert!(product.contains("two or three sentences"), "{product}");
    assert!(product.contains("running watch, GPS."), "{product}");
    // A list given as plain text is an error that says how to give it.
    let error = rpc_error(
        client
            .get_prompt(
                "product-description",
                args(&[("product", "Trail watch"), ("features", "waterproof")]),
            )
            .await,
    );
    assert_eq!(error.code, error_codes::INVALID_PARAMS, "{error:?}");
    assert!(error.message.contains("`features`"), "{error:?}");
    assert!(error.message.contains("JSON array"), "{error:?}");
    let code = client
        .get_prompt(
            "code-function",
            args(&[
                ("language", "Rust"),
                ("task", "parse a date"),
                ("tests", "no"),
            ]),
        )
        .await
        .unwrap();
    assert!(!text(&code).contains("unit tests"), "{}", text(&code));
    client.close().await;
}
