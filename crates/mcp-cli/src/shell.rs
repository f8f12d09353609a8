//! `mcp shell`: one connection to a server, then commands typed at a
//! prompt (list, call, read, get), with completion of command, tool,
//! prompt and argument names and of resource URIs, a history kept between
//! runs, and, on request, the transcript of each exchange.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use mcp_client::Client;
use mcp_core::RequestOptions;
use mcp_schema::{GetPromptResult, Prompt, ReadResourceResult, Tool};
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{Editor, Helper, Highlighter, Hinter, Validator};
use serde_json::{Value, json};

use crate::call::{ServerArgs, call_tool, result_text, tool_arguments, with_connection};
use crate::inspect::{contents_text, info_json};
use crate::listing::{prompt_table, prompt_text, resource_table, template_table};
use crate::stderr::print_err;
use crate::stdout::print_out;
use crate::target::explain;
use crate::target::{Connection, xdg_dir};
use crate::terminal::Terminal;
use crate::tool_table::{terminal_width, tool_table};
use mcp_core::sync::MutexExt as _;

/// The shell's commands, with what each does (`help` prints them).
const COMMANDS: &[(&str, &str)] = &[
    ("tools", "list the tools"),
    ("tool", "tool NAME key=value...: call a tool"),
    ("resources", "list the resources and templates"),
    ("read", "read URI: read a resource"),
    ("prompts", "list the prompts"),
    ("prompt", "prompt NAME key=value...: get a prompt"),
    ("info", "who the server is and what it declared"),
    ("call", "call METHOD [JSON]: send any request"),
    (
        "transcript",
        "transcript on|off: show each request and result as JSON",
    ),
    ("help", "this list"),
    ("quit", "leave (or Ctrl-D)"),
];

/// `mcp shell`: connects once and reads commands until `quit` or Ctrl-D.
pub async fn run(args: &ServerArgs) -> Result<()> {
    let terminal = Terminal::new();
    let wait = args.wait()?;
    with_connection(args, &terminal, async |c: &Connection| {
        session(&c.client, wait).await
    })
    .await
}

/// The names completion offers, refreshed when a listing is asked for.
#[derive(Default)]
struct Names {
    tools: Vec<Tool>,
    prompts: Vec<Prompt>,
    uris: Vec<String>,
}

impl Names {
    /// What the server offers now; what it cannot list stays empty.
    async fn load(client: &Client) -> Names {
        Names {
            tools: client.list_all_tools().await.unwrap_or_default(),
            prompts: client.list_all_prompts().await.unwrap_or_default(),
            uris: (client.list_all_resources().await.unwrap_or_default())
                .into_iter()
                .map(|r| r.uri)
                .collect(),
        }
    }

    /// The words that may complete the last word of `words` (the words
    /// before it given whole).
    fn candidates(&self, words: &[&str]) -> Vec<String> {
        match words {
            [] => COMMANDS.iter().map(|(c, _)| (*c).to_owned()).collect(),
            ["tool"] => self.tools.iter().map(|t| t.name.clone()).collect(),
            ["tool", name, ..] => self
                .tools
                .iter()
                .find(|t| t.name == *name)
                .and_then(|t| t.input_schema.get("properties"))
                .and_then(Value::as_object)
                .map(|p| p.keys().map(|k| format!("{k}=")).collect())
                .unwrap_or_default(),
            ["prompt"] => self.prompts.iter().map(|p| p.name.clone()).collect(),
            ["prompt", name, ..] => self
                .prompts
                .iter()
                .find(|p| p.name == *name)
                .and_then(|p| p.arguments.as_ref())
                .map(|a| a.iter().map(|a| format!("{}=", a.name)).collect())
                .unwrap_or_default(),
            ["read"] => self.uris.clone(),
            ["transcript"] => vec!["on".into(), "off".into()],
            _ => Vec::new(),
        }
    }
}

/// Completion for the line editor.
#[derive(Helper, Highlighter, Hinter, Validator)]
struct Completion {
    names: Arc<Mutex<Names>>,
}

impl Completer for Completion {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let (done, word) = before.split_at(start);
        let words: Vec<&str> = done.split_whitespace().collect();
        let names = self.names.locked();
        let pairs = names
            .candidates(&words)
            .into_iter()
            .filter(|c| c.starts_with(word))
            .map(|c| {
                let replacement = if c.ends_with('=') {
                    c.clone()
                } else {
                    format!("{c} ")
                };
                Pair {
                    display: c,
                    replacement,
                }
            })
            .collect();
        Ok((start, pairs))
    }
}

/// Where the shell's history is kept between runs.
fn history_file() -> std::path::PathBuf {
    if let Some(path) = std::env::var_os("MCP_SHELL_HISTORY") {
        return path.into();
    }
    xdg_dir("XDG_STATE_HOME", ".local/state").join("shell_history")
}

/// Reads and runs commands until the person leaves.
async fn session(client: &Client, wait: Duration) -> Result<()> {
    let names = Arc::new(Mutex::new(Names::load(client).await));
    let mut editor: Editor<Completion, FileHistory> =
        Editor::new().context("cannot start the line editor")?;
    editor.set_helper(Some(Completion {
        names: Arc::clone(&names),
    }));
    let history = history_file();
    let _ = editor.load_history(&history);
    print_err("Connected. Type `help` for the commands, Tab to complete, Ctrl-D to leave.");
    let mut shell = Shell {
        client,
        names,
        transcript: false,
        wait,
    };
    loop {
        let (line, back) = tokio::task::spawn_blocking(move || {
            let line = editor.readline("mcp> ");
            (line, editor)
        })
        .await
        .context("the line editor stopped")?;
        editor = back;
        let line = match line {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e).context("cannot read the command line"),
        };
        if line.trim().is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(line.as_str());
        match shell.run(&line).await {
            Ok(Step::Go) => {}
            Ok(Step::Leave) => break,
            Err(e) => print_err(&format!("error: {e:#}")),
        }
    }
    if let Some(folder) = history.parent() {
        let _ = std::fs::create_dir_all(folder);
    }
    let _ = editor.save_history(&history);
    Ok(())
}

/// What comes after a command.
enum Step {
    Go,
    Leave,
}

/// The connected shell's state.
struct Shell<'a> {
    client: &'a Client,
    names: Arc<Mutex<Names>>,
    transcript: bool,
    /// How long a task may take (`--timeout`).
    wait: Duration,
}

impl Shell<'_> {
    /// Runs one command line.
    async fn run(&mut self, line: &str) -> Result<Step> {
        let words = shlex::split(line).ok_or_else(|| anyhow!("unbalanced quotes"))?;
        let (command, rest) = words.split_first().context("no command")?;
        match (command.as_str(), rest) {
            ("quit" | "exit", _) => return Ok(Step::Leave),
            ("help", _) => {
                for (name, what) in COMMANDS {
                    print_out(&format!("{name:<12} {what}\n"))?;
                }
            }
            ("tools", []) => {
                let tools = self.client.list_all_tools().await.map_err(explain)?;
                print_out(&tool_table(&tools, terminal_width()))?;
                self.names().tools = tools;
            }
            ("tool", [name, pairs @ ..]) => self.tool(name, pairs).await?,
            ("resources", []) => {
                let resources = self.client.list_all_resources().await.map_err(explain)?;
                let templates =
                    (self.client.list_all_resource_templates().await).map_err(explain)?;
                print_out(&resource_table(&resources, terminal_width()))?;
                if !templates.is_empty() {
                    print_out(&template_table(&templates, terminal_width()))?;
                }
                self.names().uris = resources.into_iter().map(|r| r.uri).collect();
            }
            ("read", [uri]) => {
                let result: ReadResourceResult = self
                    .exchange("resources/read", json!({ "uri": uri }))
                    .await?;
                print_out(&contents_text(&result.contents, ""))?;
            }
            ("prompts", []) => {
                let prompts = self.client.list_all_prompts().await.map_err(explain)?;
                print_out(&prompt_table(&prompts, terminal_width()))?;
                self.names().prompts = prompts;
            }
            ("prompt", [name, pairs @ ..]) => {
                let arguments = string_pairs(pairs)?;
                let params = json!({ "name": name, "arguments": arguments });
                let result: GetPromptResult = self.exchange("prompts/get", params).await?;
                print_out(&prompt_text(&result))?;
            }
            ("info", []) => {
                print_out(&format!("{}\n", pretty(&info_json(self.client))))?;
            }
            ("call", [method, params @ ..]) => {
                let params: Value = match params {
                    [] => json!({}),
                    [text] => serde_json::from_str(text)
                        .with_context(|| format!("the params {text:?} are not JSON"))?,
                    _ => bail!("call METHOD [JSON]: quote the JSON as one word"),
                };
                let result: Value = self.exchange(method, params).await?;
                if !self.transcript {
                    print_out(&format!("{}\n", pretty(&result)))?;
                }
            }
            ("transcript", [switch]) => {
                self.transcript = match switch.as_str() {
                    "on" => true,
                    "off" => false,
                    other => bail!("transcript on or off, not {other:?}"),
                };
            }
            (command, _) => match COMMANDS.iter().find(|(name, _)| *name == command) {
                Some((_, usage)) => bail!("usage: {usage}"),
                None => bail!("no command {command:?}; `help` lists them"),
            },
        }
        Ok(Step::Go)
    }

    fn names(&self) -> std::sync::MutexGuard<'_, Names> {
        self.names.locked()
    }

    /// Calls tool `name` with `key=value` arguments typed by its schema.
    async fn tool(&mut self, name: &str, pairs: &[String]) -> Result<()> {
        let tool = self.names().tools.iter().find(|t| t.name == name).cloned();
        let tool = match tool {
            Some(tool) => tool,
            None => {
                let tools = self.client.list_all_tools().await.map_err(explain)?;
                let found = tools.iter().find(|t| t.name == name).cloned();
                self.names().tools = tools;
                found.ok_or_else(|| anyhow!("the server has no tool {name:?}"))?
            }
        };
        let arguments = tool_arguments(&tool, pairs)?;
        if self.transcript {
            let params = json!({ "name": name, "arguments": arguments });
            print_err(&format!("-> tools/call {}", pretty(&params)));
        }
        // A tool that runs as a task is followed to its end; the transcript
        // shows the call and its final result, not the polls between.
        let result = call_tool(
            self.client,
            &tool,
            arguments,
            false,
            RequestOptions::new(),
            self.wait,
        )
        .await?;
        if self.transcript {
            print_err(&format!("<- {}", pretty(&json!(result))));
        }
        let text = result_text(&result);
        if result.is_error == Some(true) {
            bail!("the tool failed: {text}");
        }
        print_out(&format!("{text}\n"))
    }

    /// Sends one request, showing it and its result when the transcript
    /// is on; the result typed.
    async fn exchange<R: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
    ) -> Result<R> {
        if self.transcript {
            print_err(&format!("-> {method} {}", pretty(&params)));
        }
        let result: Value = self
            .client
            .request(method, &params, RequestOptions::new())
            .await
            .map_err(explain)?;
        if self.transcript {
            print_err(&format!("<- {}", pretty(&result)));
        }
        serde_json::from_value(result).with_context(|| format!("the result of {method}"))
    }
}

/// `key=value` words as a map of strings.
fn string_pairs(pairs: &[String]) -> Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .map(|pair| {
            pair.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .ok_or_else(|| anyhow!("{pair:?} is not key=value"))
        })
        .collect()
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_offers_what_fits_the_words_before() {
        let tool: Tool = serde_json::from_value(json!({"name": "echo", "inputSchema": {
            "type": "object", "properties": {"message": {"type": "string"}}}}))
        .unwrap();
        let names = Names {
            tools: vec![tool],
            prompts: Vec::new(),
            uris: vec!["file:///a".into()],
        };
        assert!(names.candidates(&[]).contains(&"tools".to_owned()));
        assert_eq!(names.candidates(&["tool"]), ["echo"]);
        assert_eq!(names.candidates(&["tool", "echo"]), ["message="]);
        assert_eq!(names.candidates(&["read"]), ["file:///a"]);
        assert!(names.candidates(&["tool", "nope"]).is_empty());
    }
}
