//! The client that the official MCP conformance suite drives
//! (`conformance client --command mcp-conformance-client`): started as
//! `mcp-conformance-client URL` with the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO`, the revision in
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` and, for some scenarios, a JSON
//! context in `MCP_CONFORMANCE_CONTEXT`. It does what a scenario expects
//! of a client, through the ordinary client API, and always exits within
//! its deadline.

use std::process::ExitCode;
use std::time::Duration;

use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use mcp_auth::client::{
    ClientKey, Grant, HeadlessUserAgent, OAuthClient, OAuthClientConfig, Registration,
};
use mcp_client::{Client, EraChoice, RequestOptions};
use mcp_schema::{
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitValue, ErrorObject,
    ProtocolVersion,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The suite gives each scenario 30 s; finish before that, whatever happens.
const DEADLINE: Duration = Duration::from_secs(25);

const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

#[tokio::main]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: mcp-conformance-client URL (scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let code = match tokio::time::timeout(DEADLINE, run(&url, &scenario)).await {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(error)) => {
            eprintln!("{scenario}: {error:#}");
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!("{scenario}: gave up after {DEADLINE:?}");
            ExitCode::FAILURE
        }
    };
    // Leave no background task (a stream that never ends) keeping us alive.
    std::process::exit(if code == ExitCode::SUCCESS { 0 } else { 1 });
}

/// The era the suite asks for, if it names one we speak.
fn era() -> EraChoice {
    std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .ok()
        .and_then(|v| v.parse::<ProtocolVersion>().ok())
        .map_or(EraChoice::Auto, EraChoice::Pinned)
}

/// Accepts every form: fields with a default are left out (the client
/// fills them in from the schema), the others get a plausible value.
fn accept_form(params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
    let ElicitRequestParams::Form(form) = params else {
        return Ok(ElicitResult::accept(Default::default()));
    };
    let schema = serde_json::to_value(&form.requested_schema).unwrap_or_default();
    let mut content = std::collections::BTreeMap::new();
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        if property.get("default").is_some() {
            continue;
        }
        let value = match property["type"].as_str() {
            Some("boolean") => ElicitValue::Bool(true),
            Some("integer") => ElicitValue::Integer(1),
            Some("number") => ElicitValue::Number(1.0),
            _ => match property["enum"].as_array().and_then(|e| e.first()) {
                Some(Value::String(first)) => ElicitValue::String(first.clone()),
                _ => ElicitValue::String("conformance".into()),
            },
        };
        content.insert(name.clone(), value);
    }
    Ok(ElicitResult::accept(content))
}

/// The suite's client id metadata document URL (it is never fetched).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Any absolute redirect URI does: the suite's authorization endpoints
/// redirect at once, and the redirect is read, not followed.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The OAuth client for an `auth/...` scenario, from its context.
fn oauth(url: &str, scenario: &str) -> Result<Option<Arc<OAuthClient>>> {
    if !scenario.starts_with("auth/") {
        return Ok(None);
    }
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let agent = Arc::new(HeadlessUserAgent::new(REDIRECT_URI));
    let mut config = OAuthClientConfig::new("mcp-conformance-client", agent)
        .client_metadata_url(CLIENT_METADATA_URL);
    let text = |key: &str| context[key].as_str().map(str::to_owned);
    if let Some(client_id) = text("client_id") {
        let secret = text("client_secret");
        let method = match (&secret, text("private_key_pem")) {
            (_, Some(pem)) => {
                let algorithm = text("signing_algorithm").unwrap_or_else(|| "ES256".into());
                config = config.client_key(ClientKey::new(pem, algorithm));
                "private_key_jwt"
            }
            (Some(_), None) => "client_secret_basic",
            (None, None) => "none",
        };
        config = config.registration(Registration::new(client_id, secret, method));
    }
    if scenario.starts_with("auth/client-credentials") {
        config = config.grant(Grant::ClientCredentials);
    }
    if let Some(assertion) = text("valid_jwt") {
        config = config.grant(Grant::JwtBearer { assertion });
    }
    if let (Some(endpoint), Some(id_token)) = (text("idp_token_endpoint"), text("idp_id_token")) {
        config = config.grant(Grant::IdentityAssertion {
            idp_token_endpoint: endpoint,
            id_token,
            idp_client_id: text("idp_client_id"),
        });
    }
    Ok(Some(Arc::new(OAuthClient::new(url, config)?)))
}

async fn connect(url: &str, scenario: &str) -> Result<Client> {
    let mut http = mcp_http::HttpClientConfig::new(url);
    if let Some(oauth) = oauth(url, scenario)? {
        http = http.authorizer(oauth);
    }
    let transport = mcp_http::client::connect(http)
        .await
        .with_context(|| format!("cannot reach {url}"))?
        .into_transport();
    Client::builder("mcp-conformance-client", env!("CARGO_PKG_VERSION"))
        .on_elicitation(|p| async move { accept_form(p) })
        .on_sampling(|_| async {
            Ok(CreateMessageResult::assistant_text(
                "conformance-model",
                "ok",
            ))
        })
        .roots(Vec::new())
        .request_timeout(Duration::from_secs(20))
        .era(era())
        .connect(transport)
        .await
        .context("cannot start the session")
}

async fn run(url: &str, scenario: &str) -> Result<()> {
    let client = connect(url, scenario).await?;
    let outcome = drive(&client, scenario).await;
    client.close().await;
    outcome
}

/// Calls `name`, reporting (not stopping at) a failure.
async fn call(client: &Client, name: &str, arguments: Value) -> bool {
    match client.call_tool(name, arguments).await {
        Ok(_) => true,
        Err(error) => {
            eprintln!("tools/call {name}: {error}");
            false
        }
    }
}

async fn drive(client: &Client, scenario: &str) -> Result<()> {
    let tools = client.list_all_tools().await?;
    let mut ok = true;
    match scenario {
        "tools_call" => ok &= call(client, "add_numbers", json!({"a": 5, "b": 3})).await,
        "elicitation-sep1034-client-defaults" => {
            ok &= call(client, "test_client_elicitation_defaults", json!({})).await;
        }
        "sse-retry" => ok &= call(client, "test_reconnection", json!({})).await,
        "sep-2322-client-request-state" => {
            for tool in &tools {
                ok &= call(client, &tool.name, json!({})).await;
            }
        }
        "http-standard-headers" => {
            ok &= call(client, "test_headers", json!({})).await;
            let resources = client.list_all_resources().await?;
            if let Some(first) = resources.first() {
                client.read_resource(&first.uri).await?;
            }
            client.list_all_prompts().await?;
            client.get_prompt("test_prompt", Default::default()).await?;
        }
        "http-custom-headers" => {
            let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
                .ok()
                .and_then(|c| serde_json::from_str(&c).ok())
                .unwrap_or_default();
            for planned in context["toolCalls"].as_array().into_iter().flatten() {
                let name = planned["name"].as_str().unwrap_or_default();
                ok &= call(client, name, planned["arguments"].clone()).await;
            }
        }
        // Tools with invalid x-mcp-header annotations were left out of the
        // list by the transport; the rest are called.
        "http-invalid-tool-headers" => {
            for tool in &tools {
                ok &= call(client, &tool.name, json!({"region": "us-west1"})).await;
            }
        }
        "json-schema-2020-12-preservation" => {
            let Some(tool) = tools.iter().find(|t| t.name == "json_schema_2020_12_tool") else {
                bail!("the server lists no json_schema_2020_12_tool");
            };
            let schema = Value::Object(tool.input_schema.clone());
            ok &= call(client, "json_schema_echo", json!({"schema": schema})).await;
        }
        s if s.starts_with("sep-2640-") => {
            load_skills(client, s == "sep-2640-client-no-prefetch").await?
        }
        // The protected servers of the authorization scenarios offer one
        // tool; calling it may need more scope (step-up).
        s if s.starts_with("auth/") && tools.iter().any(|t| t.name == "test-tool") => {
            ok &= call(client, "test-tool", json!({})).await;
        }
        // initialize, request-metadata, json-schema-ref-no-deref: the
        // handshake and the list are the whole exchange.
        _ => {}
    }
    if !ok {
        bail!("some calls failed");
    }
    Ok(())
}

/// Skills (extension `io.modelcontextprotocol/skills`): lists them and,
/// unless only listing, loads each skill's SKILL.md, checks it against
/// the listing (size, digest, frontmatter) and only then reads the skill's
/// other files.
async fn load_skills(client: &Client, list_only: bool) -> Result<()> {
    let capabilities = serde_json::to_value(client.server_capabilities())?;
    if capabilities["extensions"].get(SKILLS_EXTENSION).is_none() {
        bail!("the server does not offer {SKILLS_EXTENSION}");
    }
    let listed: Value = client
        .request("skills/list", &json!({}), RequestOptions::new())
        .await?;
    if list_only {
        return Ok(());
    }
    for skill in listed["skills"].as_array().into_iter().flatten() {
        let main_uri = skill["uri"].as_str().unwrap_or_default();
        let files: Vec<&Value> = skill["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .collect();
        let Some(entry) = files.iter().find(|f| f["uri"] == main_uri) else {
            eprintln!("{main_uri}: not among the skill's resources");
            continue;
        };
        let read = client.read_resource(main_uri).await?;
        let text = serde_json::to_value(&read)?["contents"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if let Err(why) = verify_skill(&text, entry, &skill["frontmatter"]) {
            eprintln!("{main_uri}: refused: {why}");
            continue;
        }
        for file in files.iter().filter(|f| f["uri"] != main_uri) {
            if let Some(uri) = file["uri"].as_str() {
                client.read_resource(uri).await?;
            }
        }
    }
    Ok(())
}

/// Checks a skill's main file against what the listing promised.
fn verify_skill(text: &str, entry: &Value, frontmatter: &Value) -> Result<(), String> {
    if let Some(size) = entry["size"].as_u64()
        && size != text.len() as u64
    {
        return Err(format!("{} bytes, the listing says {size}", text.len()));
    }
    if let Some(digest) = entry["digest"].as_str() {
        let actual = format!("sha256:{:x}", Sha256::digest(text.as_bytes()));
        if !digest.eq_ignore_ascii_case(&actual) {
            return Err(format!("digest {actual}, the listing says {digest}"));
        }
    }
    let found = parse_frontmatter(text);
    for (key, promised) in frontmatter.as_object().into_iter().flatten() {
        let promised = promised.as_str().unwrap_or_default();
        if found.get(key.as_str()).map(String::as_str) != Some(promised) {
            return Err(format!("frontmatter {key} differs from the listing"));
        }
    }
    Ok(())
}

/// The `key: value` lines between the leading `---` fences.
fn parse_frontmatter(text: &str) -> std::collections::HashMap<&str, String> {
    let mut lines = text.lines();
    let mut found = std::collections::HashMap::new();
    if lines.next().map(str::trim) != Some("---") {
        return found;
    }
    for line in lines.take_while(|l| l.trim() != "---") {
        if let Some((key, value)) = line.split_once(':') {
            let value = value.trim().trim_matches('"').trim_matches('\'');
            found.insert(key.trim(), value.to_owned());
        }
    }
    found
}
