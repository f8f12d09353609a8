//! `mcp resources`, `read`, `prompts`, `prompt`, `info`, `tools --json`
//! and `tool --schema` run as real processes against `mcp serve
//! everything`, a child of theirs over stdio.

mod support;

use base64::Engine as _;
use serde_json::Value;
use support::{everything, mcp, stderr, stdout};

/// `mcp ARGS` against `everything`, which must succeed; its stdout.
async fn ok(args: &[&str]) -> String {
    let server = everything();
    let mut all = args.to_vec();
    all.extend(["-s", &server]);
    let output = mcp(&all).await;
    assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    stdout(&output)
}

/// `mcp ARGS` against `everything`, which must fail; its stderr.
async fn fails(args: &[&str]) -> String {
    let server = everything();
    let mut all = args.to_vec();
    all.extend(["-s", &server]);
    let output = mcp(&all).await;
    assert!(!output.status.success(), "{args:?}: {}", stdout(&output));
    stderr(&output)
}

/// `mcp ARGS --json` against `everything`, parsed.
async fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let text = ok(&all).await;
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: {e}: {text}"))
}

#[tokio::test]
async fn resources_and_templates_as_tables_and_json() {
    let table = ok(&["resources"]).await;
    let line = |start: &str| {
        table
            .lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no {start} in {table}"))
            .to_owned()
    };
    assert!(table.starts_with("URI "), "{table}");
    assert!(
        line("test://static-text ").contains("text/plain"),
        "{table}"
    );
    assert!(
        line("test://static-binary ").contains("image/png"),
        "{table}"
    );
    assert!(line("URI TEMPLATE ").contains("MIME TYPE"), "{table}");
    assert!(
        line("test://template/{id}/data ").contains("application/json"),
        "{table}"
    );

    let listing = json(&["resources"]).await;
    let resources = listing["resources"].as_array().expect("resources");
    assert_eq!(resources.len(), 3, "{listing}");
    let watched = resources
        .iter()
        .find(|r| r["uri"] == "test://watched-resource")
        .expect("the watched resource");
    assert_eq!(
        watched["description"],
        "Changes when update_watched_resource is called; subscribe to hear of it"
    );
    assert_eq!(
        listing["resourceTemplates"][0]["uriTemplate"],
        "test://template/{id}/data"
    );
}

#[tokio::test]
async fn read_prints_text_and_tells_or_saves_binary() {
    assert_eq!(
        ok(&["read", "test://static-text"]).await,
        "This is the content of the static text resource.\n"
    );
    let data: Value = serde_json::from_str(&ok(&["read", "test://template/42/data"]).await)
        .expect("the template's JSON");
    assert_eq!(data["data"], "Data for ID: 42");

    let png = base64::engine::general_purpose::STANDARD
        .decode(mcp_builtin::everything::PNG_BASE64)
        .unwrap();
    let told = ok(&["read", "test://static-binary"]).await;
    assert!(told.contains("image/png"), "{told}");
    assert!(told.contains(&format!("{} bytes", png.len())), "{told}");
    assert!(told.contains("--out"), "{told}");

    let file = std::env::temp_dir().join(format!("mcp-cli-read-{}.png", std::process::id()));
    let path = file.display().to_string();
    ok(&["read", "test://static-binary", "--out", &path]).await;
    assert_eq!(std::fs::read(&file).unwrap(), png);
    let _ = std::fs::remove_file(&file);

    let result = json(&["read", "test://static-binary"]).await;
    assert_eq!(
        result["contents"][0]["blob"],
        mcp_builtin::everything::PNG_BASE64
    );
    let error = fails(&["read", "test://no-such-thing"]).await;
    assert!(error.contains("test://no-such-thing"), "{error}");
}

#[tokio::test]
async fn prompts_list_and_render() {
    let table = ok(&["prompts"]).await;
    let line = table
        .lines()
        .find(|l| l.starts_with("test_prompt_with_arguments "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(line.contains("arg1* arg2*"), "{line}");
    assert!(line.contains("A prompt with two arguments"), "{line}");

    let listing = json(&["prompts"]).await;
    let prompts = listing["prompts"].as_array().expect("prompts");
    let with_arguments = prompts
        .iter()
        .find(|p| p["name"] == "test_prompt_with_arguments")
        .expect("listed");
    assert_eq!(
        with_arguments["arguments"][0]["description"],
        "First test argument"
    );

    let text = ok(&[
        "prompt",
        "test_prompt_with_arguments",
        "arg1=one",
        "arg2=two words",
    ])
    .await;
    assert_eq!(
        text,
        "[user]\nPrompt with arguments: arg1='one', arg2='two words'\n"
    );
    let text = ok(&[
        "prompt",
        "test_prompt_with_embedded_resource",
        "resourceUri=test://static-text",
    ])
    .await;
    assert!(text.contains("(resource test://static-text)"), "{text}");
    assert!(
        text.contains("Embedded resource content for testing."),
        "{text}"
    );
    let text = ok(&["prompt", "test_prompt_with_image"]).await;
    assert!(text.contains("(image: image/png, "), "{text}");

    let result = json(&["prompt", "test_simple_prompt"]).await;
    assert_eq!(
        result["messages"][0]["content"]["text"],
        "This is a simple prompt for testing."
    );

    let error = fails(&["prompt", "test_prompt_with_arguments", "arg1=one"]).await;
    assert!(error.contains("arg2=VALUE"), "{error}");
    let error = fails(&["prompt", "no_such_prompt"]).await;
    assert!(error.contains("test_simple_prompt"), "{error}");
}

#[tokio::test]
async fn info_tells_the_server_era_revision_and_capabilities() {
    let text = ok(&["info", "--era", "2025-06-18"]).await;
    let field = |label: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{label}:")))
            .unwrap_or_else(|| panic!("no {label} in {text}"))
            .trim()
            .to_owned()
    };
    assert!(field("Server").starts_with("mcp-everything "), "{text}");
    assert_eq!(field("Era"), "legacy");
    assert_eq!(field("Revision"), "2025-06-18");
    assert!(
        field("Capabilities").contains("tools (listChanged)"),
        "{text}"
    );
    assert!(field("Capabilities").contains("resources ("), "{text}");
    assert!(
        text.contains("Instructions:\n  Exercises every MCP feature."),
        "{text}"
    );

    let info = json(&["info", "--era", "modern"]).await;
    assert_eq!(info["era"], "modern");
    assert_eq!(info["protocolVersion"], "2026-07-28");
    assert_eq!(info["serverInfo"]["name"], "mcp-everything");
    assert_eq!(info["capabilities"]["prompts"]["listChanged"], true);
    assert!(
        info["instructions"]
            .as_str()
            .is_some_and(|i| i.contains("calculate")),
        "{info}"
    );
}

#[tokio::test]
async fn tools_as_json_and_one_tool_schema() {
    let listing = json(&["tools"]).await;
    let tools = listing["tools"].as_array().expect("tools");
    let table = ok(&["tools"]).await;
    assert_eq!(tools.len(), table.lines().count() - 1, "{table}");
    let echo = tools.iter().find(|t| t["name"] == "echo").expect("echo");
    assert_eq!(echo["inputSchema"]["required"][0], "text");

    let schema: Value = serde_json::from_str(&ok(&["tool", "add", "--schema"]).await).unwrap();
    assert_eq!(schema["name"], "add");
    assert_eq!(
        schema["inputSchema"]["required"],
        serde_json::json!(["a", "b"])
    );
    assert_eq!(
        schema["outputSchema"]["properties"]["sum"]["type"],
        "number"
    );
    let schema: Value = serde_json::from_str(&ok(&["tool", "echo", "--schema"]).await).unwrap();
    assert!(schema.get("outputSchema").is_none(), "{schema}");

    let error = fails(&["tool", "nope", "--schema"]).await;
    assert!(error.contains("has no tool"), "{error}");
}
