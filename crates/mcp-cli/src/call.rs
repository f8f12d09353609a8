//! `mcp call` and `mcp tool`: one request to a server, for
//! scripts (JSON on stdout) and for people (plain text).

use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use mcp_client::{Client, EraChoice, RequestOptions};
use mcp_schema::{CallToolResult, TaskSupport, Tool, methods};
use serde_json::{Map, Value, json};

use crate::progress::{self, progress_bar};
use crate::server_log::{ServerLog, parse_server_log};
use crate::stdout::{print_json, print_out};
use crate::target::{Connection, explain};
use crate::task;
use crate::terminal::Terminal;

/// What every client command shares: the server, the era, the timeout.
#[derive(clap::Args, Debug, Clone)]
pub struct ServerArgs {
    /// The server: an http(s):// or ws(s):// URL, HOST:PORT (meaning
    /// http://HOST:PORT/mcp), or a command line run as a child over stdio
    /// (e.g. "mcp serve everything"); with --config, a server's name in
    /// the config file.
    #[arg(long, short = 's', value_name = "URL_OR_COMMAND")]
    pub server: String,
    #[command(flatten)]
    pub reach: crate::server_config::ReachArgs,
    /// The protocol era: auto (server/discover, else initialize), legacy,
    /// modern, or a revision such as 2025-06-18.
    #[arg(long, default_value = "auto", value_parser = parse_era)]
    pub era: EraChoice,
    /// The server's log messages shown on stderr, from this level up:
    /// debug, info, notice, warning, error, critical, alert, emergency,
    /// or off. A server that declares logging is asked for this level.
    #[arg(long, default_value = "info", value_name = "LEVEL", value_parser = parse_server_log)]
    pub server_log: ServerLog,
    /// Seconds to wait for the server: to take the connection and start
    /// the MCP session, then for each answer (progress extends the wait).
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
    /// Seconds a server's sign-in page waits for you before mcp gives up
    /// (apart from --timeout).
    #[arg(long, default_value_t = 300.0, value_name = "SECONDS")]
    pub sign_in_timeout: f64,
    /// Do not open a browser to sign in: show the address, and take the
    /// address the browser comes back to pasted on stdin (or the redirect
    /// to mcp, if that browser is on this computer).
    #[arg(long)]
    pub no_browser: bool,
}

/// Reads `--era`.
pub fn parse_era(text: &str) -> Result<EraChoice, String> {
    text.parse()
}

impl ServerArgs {
    async fn connect(&self, terminal: &Terminal) -> Result<Connection> {
        let server = self.reach.resolve(&self.server, self.era)?;
        let (target, setup) = (&server.target, &server.setup);
        let sign_in = self.sign_in()?;
        Connection::open_within(
            target,
            setup,
            server.era,
            terminal,
            self.wait()?,
            self.server_log,
            &sign_in,
        )
        .await
    }

    /// How to sign in: `--sign-in-timeout`, checked.
    pub fn sign_in(&self) -> Result<crate::target::SignIn> {
        let wait = Duration::try_from_secs_f64(self.sign_in_timeout)
            .ok()
            .filter(|d| !d.is_zero())
            .context("--sign-in-timeout must be a positive number of seconds")?;
        Ok(crate::target::SignIn {
            wait,
            browser: !self.no_browser,
            ..Default::default()
        })
    }

    /// `--timeout`, checked.
    pub(crate) fn wait(&self) -> Result<Duration> {
        Duration::try_from_secs_f64(self.timeout)
            .ok()
            .filter(|d| !d.is_zero())
            .context("--timeout must be a positive number of seconds")
    }

    fn options(&self) -> Result<RequestOptions> {
        let mut options = RequestOptions::new().timeout(self.wait()?);
        if let Some(bar) = progress_bar() {
            options = options.on_progress(bar);
        }
        Ok(options)
    }
}

/// Runs `f` with a connection whose server's questions `terminal`
/// answers, closing it whatever happens. A failure that follows a
/// question refused for want of a terminal is told as that refusal.
pub(crate) async fn with_connection<T>(
    args: &ServerArgs,
    terminal: &Terminal,
    f: impl AsyncFnOnce(&Connection) -> Result<T>,
) -> Result<T> {
    let connection = args.connect(terminal).await?;
    let outcome = f(&connection).await;
    progress::clear();
    connection.close().await;
    match (outcome, terminal.refusal()) {
        (Err(_), Some(why)) => Err(refused(&why)),
        (outcome, _) => outcome,
    }
}

/// The error of a request that failed because this program refused what
/// the server asked.
fn refused(why: &str) -> anyhow::Error {
    anyhow!("{why}, so mcp refused it")
}

fn json_arg(text: &str, what: &str) -> Result<Value> {
    serde_json::from_str(text).with_context(|| format!("{what} is not JSON: {text}"))
}

/// `mcp call`: prints the raw JSON result; a tool's error result
/// (`isError: true`) is printed too, and fails the command.
pub async fn call(args: &ServerArgs, method: &str, rest: &[String]) -> Result<()> {
    let params = match (method, rest) {
        (_, []) => Value::Object(Map::new()),
        ("tools/call", [name, more @ ..]) if !name.trim_start().starts_with('{') => {
            let arguments = match more {
                [] => Value::Object(Map::new()),
                [arguments] => json_arg(arguments, "the tool's arguments")?,
                _ => bail!("tools/call takes a tool name and one JSON object of arguments"),
            };
            serde_json::json!({ "name": name, "arguments": arguments })
        }
        (_, [params]) => json_arg(params, "params")?,
        _ => bail!("{method} takes one JSON object of params"),
    };
    let options = args.options()?;
    let terminal = Terminal::new();
    let result = with_connection(args, &terminal, async |c: &Connection| {
        c.client
            .request_raw(method, params, options)
            .await
            .map_err(explain)
    })
    .await?;
    let value: Value = serde_json::from_str(result.get())?;
    print_json(&value)?;
    if method == "tools/call" && value.get("isError") == Some(&Value::Bool(true)) {
        if let Some(why) = terminal.refusal() {
            return Err(refused(&why));
        }
        bail!("the tool reported an error (isError: true); its result is on stdout");
    }
    Ok(())
}

/// Builds a tool's arguments from `key=value` words, typed by its schema:
/// text for a string; JSON for a number, a boolean or an object; for an
/// array, a JSON array as it is, anything else as its one item (typed by
/// the array's items).
pub(crate) fn tool_arguments(tool: &Tool, pairs: &[String]) -> Result<Value> {
    let properties = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object);
    let mut arguments = Map::new();
    for pair in pairs {
        let (key, text) = pair
            .split_once('=')
            .ok_or_else(|| anyhow!("{pair:?} is not key=value"))?;
        let schema = properties.and_then(|p| p.get(key));
        let value = match schema.and_then(type_of) {
            Some("array") => match serde_json::from_str(text) {
                Ok(array @ Value::Array(_)) => array,
                _ => {
                    let items = schema.and_then(|s| s.get("items"));
                    Value::Array(vec![typed_value(key, items, text)?])
                }
            },
            _ => typed_value(key, schema, text)?,
        };
        arguments.insert(key.to_owned(), value);
    }
    Ok(Value::Object(arguments))
}

/// The type a property's schema names (the first, of a list of types
/// other than `null`).
fn type_of(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(ty) => Some(ty),
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null"),
        _ => None,
    }
}

/// `text` as the value `schema` describes: text for a string, JSON for
/// another type, and without a type JSON if it reads as JSON, else text.
fn typed_value(key: &str, schema: Option<&Value>, text: &str) -> Result<Value> {
    match schema.and_then(type_of) {
        Some("string") => Ok(Value::String(text.to_owned())),
        Some(ty) => json_arg(text, &format!("{key} ({} {ty})", article(ty))),
        None => Ok(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))),
    }
}

/// `an` before a word said with a vowel first, else `a`.
fn article(word: &str) -> &'static str {
    match word.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u' | 'A' | 'E' | 'I' | 'O' | 'U') => "an",
        _ => "a",
    }
}

/// `mcp tool`: calls one tool with `key=value` arguments and prints its
/// text; a tool error goes to stderr with a non-zero exit.
/// `task` runs the call as a task where the tool allows it.
pub async fn tool(args: &ServerArgs, name: &str, pairs: &[String], task: bool) -> Result<()> {
    let options = args.options()?;
    let wait = args.wait()?;
    let terminal = Terminal::new();
    let result = with_connection(args, &terminal, async |c: &Connection| {
        let tools = c.client.list_all_tools().await.map_err(explain)?;
        let Some(tool) = tools.iter().find(|t| t.name == name) else {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            bail!(
                "the server has no tool {name:?}; it has: {}",
                names.join(", ")
            );
        };
        let arguments = tool_arguments(tool, pairs)?;
        call_tool(&c.client, tool, arguments, task, options, wait).await
    })
    .await?;
    let text = result_text(&result);
    if result.is_error == Some(true) {
        if let Some(why) = terminal.refusal() {
            return Err(refused(&why));
        }
        bail!("the tool failed: {text}");
    }
    if let Some(why) = terminal.refusal() {
        // The server went on without the answer it asked for.
        crate::stderr::print_err(&format!("note: {why}"));
    }
    print_out(&format!("{text}\n"))
}

/// Calls `tool`, as a task where it must run as one or where `task` asks
/// and it may (2025-11-25), or where the server chooses (2026-07-28);
/// a task's result is waited for at most `wait`.
pub(crate) async fn call_tool(
    client: &Client,
    tool: &Tool,
    arguments: Value,
    task: bool,
    options: RequestOptions,
    wait: Duration,
) -> Result<CallToolResult> {
    let name = &tool.name;
    let support = tool.execution.as_ref().and_then(|e| e.task_support);
    let as_task = match support.unwrap_or_default() {
        TaskSupport::Required => true,
        TaskSupport::Optional => task,
        TaskSupport::Forbidden if task => bail!("{name} does not run as a task"),
        TaskSupport::Forbidden => false,
    };
    let revision = client.revision();
    if revision.has_core_tasks() && as_task {
        return task::call_as_task(client, name, arguments, options, wait).await;
    }
    if revision.has_tasks_extension() {
        // The server decides whether the call runs as a task.
        let params = json!({ "name": name, "arguments": arguments });
        let result: Value = client
            .request(methods::TOOLS_CALL, &params, options)
            .await
            .map_err(explain)?;
        return task::call_outcome(client, name, result, wait).await;
    }
    if as_task {
        bail!(
            "{name} {} as a task, and tasks need protocol revision 2025-11-25 or later \
             (this server speaks {revision})",
            if task {
                "was asked to run"
            } else {
                "runs only"
            }
        );
    }
    client
        .call_tool_with(name, arguments, options)
        .await
        .map_err(explain)
}

/// A tool result for people: its text blocks, other blocks as JSON, or
/// the structured content when there is nothing else.
pub(crate) fn result_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = result
        .content
        .iter()
        .map(|c| match c.as_text() {
            Some(text) => text.to_owned(),
            None => serde_json::to_string(c).unwrap_or_default(),
        })
        .collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(serde_json::to_string_pretty(structured).unwrap_or_default());
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(schema: Value) -> Tool {
        serde_json::from_value(
            json!({"name": "t", "description": "Does things", "inputSchema": schema}),
        )
        .unwrap()
    }

    #[test]
    fn key_value_arguments_follow_the_schema() {
        let t = tool(json!({"type": "object", "properties": {
            "text": {"type": "string"}, "count": {"type": "integer"}, "flag": {"type": "boolean"}},
            "required": ["text"]}));
        let pairs = [
            "text=42",
            "count=7",
            "flag=true",
            "extra={\"a\":1}",
            "other=plain",
        ]
        .map(String::from);
        assert_eq!(
            tool_arguments(&t, &pairs).unwrap(),
            json!({"text": "42", "count": 7, "flag": true, "extra": {"a": 1}, "other": "plain"})
        );
        let error = tool_arguments(&t, &["count=many".to_owned()]).unwrap_err();
        assert_eq!(error.to_string(), "count (an integer) is not JSON: many");
        assert!(tool_arguments(&t, &["novalue".to_owned()]).is_err());
    }

    #[test]
    fn an_array_takes_one_item_or_a_json_array() {
        let t = tool(json!({"type": "object", "properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "counts": {"type": ["array", "null"], "items": {"type": "integer"}},
            "any": {"type": "array"},
            "filter": {"type": "object"}}}));
        let arguments = |pairs: &[&str]| {
            tool_arguments(&t, &pairs.iter().map(|p| p.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(
            arguments(&["tags=a", "counts=3", "any=x"]).unwrap(),
            json!({"tags": ["a"], "counts": [3], "any": ["x"]})
        );
        assert_eq!(
            arguments(&[r#"tags=["a","b"]"#, "counts=[1,2]", "tags2=1"]).unwrap(),
            json!({"tags": ["a", "b"], "counts": [1, 2], "tags2": 1})
        );
        assert_eq!(arguments(&["tags=1"]).unwrap(), json!({"tags": ["1"]}));
        assert_eq!(
            arguments(&["counts=x"]).unwrap_err().to_string(),
            "counts (an integer) is not JSON: x"
        );
        assert_eq!(
            arguments(&["filter=x"]).unwrap_err().to_string(),
            "filter (an object) is not JSON: x"
        );
    }

    #[test]
    fn eras_by_name() {
        assert_eq!(parse_era("auto"), Ok(EraChoice::Auto));
        assert_eq!(
            parse_era("2025-06-18"),
            Ok(EraChoice::Pinned(mcp_schema::ProtocolVersion::V2025_06_18))
        );
        assert!(parse_era("1999-01-01").is_err());
    }
}
