//! Hooks the settings file configures: a command run for each call, or an
//! HTTP endpoint posted to.
//!
//! ```toml
//! [[hooks]]
//! name = "shell guard"          # how refusals and the log name it
//! command = ["python3", "./hooks/guard.py"] # or: url = "http://127.0.0.1:9000/hook"
//! headers = { Authorization = "Bearer ..." } # with url
//! when = "before"               # before | after | both
//! server = "shell"              # which calls: globs over the server's name
//! tool = "run_*"                # and the item's (or prompt = , resource = )
//! timeout = 5                   # seconds; a hook that does not answer in time refuses
//! ```
//!
//! The hook gets one JSON object, on its standard input or as the POST's
//! body: `{"hook": "before" | "after", "caller", "client_id", "client",
//! "server", "kind", "name", "arguments", "result"}` (`result` after the
//! call). It answers with one JSON object on its standard output or as the
//! response's body:
//!
//! - nothing (or `{}`, or HTTP 204): the call goes on as it is;
//! - `{"decision": "deny", "reason": "..."}`: the call is refused;
//! - `{"arguments": {...}}` (before): the call is sent with these;
//! - `{"result": {...}}` (after): the client gets this result instead.
//!
//! A command that exits with a status other than 0 refuses, with the last
//! line of its standard error as the reason; so does an HTTP status other
//! than 200 and 204, a timeout, and an answer that is not such an object.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use mcp_core::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{After, Before, CallHook, HookCall};
use crate::glob::Pattern;
use crate::webhook::Webhook;

/// How long a hook has to answer unless its settings say.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest a hook may be given to answer.
const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// The most a hook command's answer may hold.
const MAX_ANSWER_BYTES: u64 = 16 << 20;

/// `[[hooks]]`: one hook as the settings file writes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct HookSettings {
    /// How refusals and the log name it (default: `hook N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The command and its arguments, run for each call (a program path
    /// starting with `./` or `../` is the settings file's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// The endpoint posted to for each call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers of each POST (with `url`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// When it runs.
    #[serde(default)]
    pub when: When,
    /// The calls it sees: a glob over the server's name in the config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// A glob over tools' names at their server: it sees tools only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A glob over prompts' names: it sees prompts only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// A glob over resources' URIs: it sees resources only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Seconds it has to answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
}

/// When a hook runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum When {
    /// Before the call is forwarded.
    #[default]
    Before,
    /// On its result.
    After,
    /// Both.
    Both,
}

/// A hook the settings configure.
#[derive(Debug)]
pub struct ExternalHook {
    name: String,
    runs: Runs,
    when: When,
    server: Option<Pattern>,
    item: Option<(&'static str, Pattern)>,
    timeout: Duration,
}

#[derive(Debug)]
enum Runs {
    Command(Vec<String>),
    Http(Webhook),
}

impl ExternalHook {
    /// The hook `settings` write, the `number`th (from 1); an error names
    /// what cannot be used.
    pub fn compile(settings: &HookSettings, number: usize) -> Result<ExternalHook, String> {
        let error = |e: String| format!("[[hooks]] #{number}: {e}");
        let glob = |key: &str, pattern: &Option<String>| {
            pattern
                .as_deref()
                .map(|p| Pattern::new(p).map_err(|e| error(format!("{key} = {p:?}: {e}"))))
                .transpose()
        };
        let runs = match (&settings.command[..], &settings.url) {
            ([], Some(url)) => Runs::Http(Webhook::new(url, &settings.headers).map_err(error)?),
            ([_, ..], None) if settings.headers.is_empty() => {
                Runs::Command(settings.command.clone())
            }
            ([_, ..], None) => return Err(error("headers go with url".into())),
            ([], None) => return Err(error("names neither command nor url".into())),
            ([_, ..], Some(_)) => return Err(error("names both command and url".into())),
        };
        let mut item = None;
        for (kind, key, pattern) in [
            ("tool", "tool", &settings.tool),
            ("prompt", "prompt", &settings.prompt),
            ("resource", "resource", &settings.resource),
        ] {
            if let Some(pattern) = glob(key, pattern)? {
                if item.is_some() {
                    return Err(error(
                        "names at most one of tool, prompt and resource".into(),
                    ));
                }
                item = Some((kind, pattern));
            }
        }
        let timeout = match settings.timeout {
            Some(s) if s.is_finite() && s > 0.0 && s <= MAX_TIMEOUT.as_secs_f64() => {
                Duration::from_secs_f64(s)
            }
            Some(s) => {
                return Err(error(format!(
                    "timeout must be seconds in (0, 3600], not {s}"
                )));
            }
            None => DEFAULT_TIMEOUT,
        };
        Ok(ExternalHook {
            name: settings
                .name
                .clone()
                .unwrap_or_else(|| format!("hook {number}")),
            runs,
            when: settings.when,
            server: glob("server", &settings.server)?,
            item,
            timeout,
        })
    }

    /// Asks the hook about `input`, within its timeout.
    async fn ask(&self, input: Value) -> Result<Map<String, Value>, String> {
        let asking = async {
            match &self.runs {
                Runs::Command(command) => run_command(command, &input).await,
                Runs::Http(webhook) => post(webhook, &input).await,
            }
        };
        let answer = tokio::time::timeout(self.timeout, asking)
            .await
            .map_err(|_| format!("no answer within {:?}", self.timeout))??;
        let text = answer.trim();
        if text.is_empty() {
            return Ok(Map::new());
        }
        match serde_json::from_str(text) {
            Ok(Value::Object(map)) => Ok(map),
            _ => Err(format!(
                "its answer is not a JSON object: {:?}",
                shortened(text)
            )),
        }
    }
}

impl CallHook for ExternalHook {
    fn name(&self) -> &str {
        &self.name
    }

    fn sees(&self, call: &HookCall) -> bool {
        self.server
            .as_ref()
            .is_none_or(|s| s.is_match(&call.server))
            && self
                .item
                .as_ref()
                .is_none_or(|(kind, p)| *kind == call.kind && p.is_match(&call.name))
    }

    fn before<'a>(&'a self, call: &'a HookCall) -> BoxFuture<'a, Result<Before, String>> {
        Box::pin(async move {
            if self.when == When::After {
                return Ok(Before::Go);
            }
            let mut answer = self.ask(input("before", call, None)).await?;
            if let Some(reason) = refused(&answer) {
                return Ok(Before::Refuse(reason));
            }
            match answer.remove("arguments") {
                None => Ok(Before::Go),
                Some(Value::Object(arguments)) => Ok(Before::Rewrite(arguments)),
                Some(_) => Err("its \"arguments\" is not an object".into()),
            }
        })
    }

    fn after<'a>(
        &'a self,
        call: &'a HookCall,
        result: &'a Value,
    ) -> BoxFuture<'a, Result<After, String>> {
        Box::pin(async move {
            if self.when == When::Before {
                return Ok(After::Keep);
            }
            let mut answer = self.ask(input("after", call, Some(result))).await?;
            if let Some(reason) = refused(&answer) {
                return Ok(After::Refuse(reason));
            }
            match answer.remove("result") {
                None => Ok(After::Keep),
                Some(result @ Value::Object(_)) => Ok(After::Replace(result)),
                Some(_) => Err("its \"result\" is not an object".into()),
            }
        })
    }
}

/// What a hook is given.
fn input(hook: &str, call: &HookCall, result: Option<&Value>) -> Value {
    let mut input = json!(call);
    input["hook"] = hook.into();
    if let Some(result) = result {
        input["result"] = result.clone();
    }
    input
}

/// The reason of an answer that refuses.
fn refused(answer: &Map<String, Value>) -> Option<String> {
    match answer.get("decision").and_then(Value::as_str) {
        Some("deny") => Some(
            answer
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("no reason given")
                .to_owned(),
        ),
        _ => None,
    }
}

/// Runs `command` with `input` on its standard input; its standard
/// output, or why it failed.
async fn run_command(command: &[String], input: &Value) -> Result<String, String> {
    let (program, args) = command.split_first().ok_or("no command")?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{program} cannot be started: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let body = input.to_string();
    let writing = async move {
        // A hook that does not read its input is not an error.
        let _ = stdin.write_all(body.as_bytes()).await;
        drop(stdin);
    };
    let mut stdout = child
        .stdout
        .take()
        .ok_or("no stdout")?
        .take(MAX_ANSWER_BYTES);
    let mut stderr = child.stderr.take().ok_or("no stderr")?.take(64 << 10);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let reading = async {
        let (o, e) = tokio::join!(stdout.read_to_end(&mut out), stderr.read_to_end(&mut err));
        o.and(e)
    };
    let ((), read) = tokio::join!(writing, reading);
    read.map_err(|e| format!("its output cannot be read: {e}"))?;
    let status = child.wait().await.map_err(|e| e.to_string())?;
    if !status.success() {
        let err = String::from_utf8_lossy(&err);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(format!(
            "{program} exited with {status}: {}",
            shortened(last)
        ));
    }
    String::from_utf8(out).map_err(|_| "its output is not UTF-8".into())
}

/// Posts `input` to `webhook`; the response's body, or why it failed.
async fn post(webhook: &Webhook, input: &Value) -> Result<String, String> {
    match webhook.post(input).await? {
        (reqwest::StatusCode::NO_CONTENT, _) => Ok(String::new()),
        (reqwest::StatusCode::OK, body) => Ok(body),
        (status, _) => Err(format!("{} answered {status}", webhook.url())),
    }
}

/// `text`, cut to 200 characters for a message.
fn shortened(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}
