//! Rate limits: `[[limits]]` rules in the settings file, each a budget of
//! requests per second, minute or hour, kept per caller, per server or
//! per tool (GCRA, with `governor`: a budget of N a minute allows a burst
//! of N, and one more each 60/N seconds).
//!
//! ```toml
//! [[limits]]
//! server = "memory"        # the server's name in the config; glob (optional)
//! tool = "create_*"        # the tool's name at its server; glob (optional: the rule covers tool calls)
//! method = "tools/call"    # the method; glob (optional)
//! per = "caller"           # whose budget: caller (default) | server | tool
//! rate = "20/minute"       # N/second | N/minute | N/hour
//! preset = "create"        # instead of method and rate: read | invoke_tool | create | update | delete | default
//! destructive = true       # the tool's annotations (also read_only, idempotent), believed from trusted servers only
//! name = "memory writes"   # how errors and the audit name it
//! ```
//!
//! Presets, as the usual operation budgets mapped to MCP: `read` (lists,
//! `resources/read`, `prompts/get`, completions: 100 a minute),
//! `invoke_tool` (every tool call: 50), `create` (calls of tools neither
//! read-only nor destructive: 20), `update` (destructive, idempotent: 20),
//! `delete` (destructive, not idempotent: 10), `default` (every other
//! method: 10). A preset's rate can be changed with `rate`.
//!
//! Every rule that matches a request counts it; the first whose budget is
//! spent refuses it, with error [`LIMITED`] saying which rule and when to
//! retry. Budgets are counted in memory, or, where the host is given
//! [`SharedBudgets`] (several instances on one Redis), there: one budget
//! for all the instances.

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use governor::{DefaultKeyedRateLimiter, Quota};
use mcp_schema::{ErrorObject, methods};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::glob::Pattern;
use crate::policy::Hints;

/// The JSON-RPC error code of a request refused by a rate limit (in the
/// range JSON-RPC leaves to servers).
pub const LIMITED: i64 = -32029;

/// The methods that read: the `read` preset's.
const READS: [&str; 7] = [
    methods::TOOLS_LIST,
    methods::RESOURCES_LIST,
    methods::RESOURCES_TEMPLATES_LIST,
    methods::RESOURCES_READ,
    methods::PROMPTS_LIST,
    methods::PROMPTS_GET,
    methods::COMPLETION_COMPLETE,
];

/// Whose budget a rule keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// Each caller (the OAuth subject; `anonymous` without OAuth) has one.
    #[default]
    Caller,
    /// Each server has one, shared by every caller.
    Server,
    /// Each tool (or prompt, or resource) has one, shared by every caller.
    Tool,
}

/// `[[limits]]`: one rule as the settings file writes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LimitSettings {
    /// How errors and the audit name it (default: `limit N`, or the
    /// preset's name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A preset: `read`, `invoke_tool`, `create`, `update`, `delete`,
    /// `default`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// The view the request comes through (glob over `[views.NAME]`
    /// names): the rule then counts only requests through that view.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view: Option<String>,
    /// The server's name in the config (glob).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// A tool's name at its server (glob): the rule covers tool calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The method (glob).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Whose budget.
    #[serde(default)]
    pub per: Per,
    /// `N/second`, `N/minute` or `N/hour` (a preset has its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
    /// The tool is read-only (`readOnlyHint`), believed from trusted
    /// servers only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The tool may destroy (`destructiveHint`), likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling the tool again does nothing more (`idempotentHint`),
    /// likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
}

/// What a rule matches methods by.
#[derive(Debug)]
enum Methods {
    /// Any method.
    Any,
    /// Methods matching a glob.
    Glob(Pattern),
    /// The reads.
    Reads,
    /// Every method but the reads and tool calls.
    Others,
}

impl Methods {
    fn matches(&self, method: &str) -> bool {
        match self {
            Methods::Any => true,
            Methods::Glob(pattern) => pattern.is_match(method),
            Methods::Reads => READS.contains(&method),
            Methods::Others => !READS.contains(&method) && method != methods::TOOLS_CALL,
        }
    }
}

/// Budgets kept outside the host, shared with other instances.
pub trait SharedBudgets: Send + Sync + std::fmt::Debug {
    /// Spends one unit of budget `key`, which allows a burst of `burst`
    /// and one more each `interval`: `None` when spent, else how long
    /// until a unit is free; an error where the store cannot be reached
    /// (the budget is then counted in this instance's memory).
    fn spend<'a>(
        &'a self,
        key: &'a str,
        interval: Duration,
        burst: u32,
    ) -> futures::future::BoxFuture<'a, Result<Option<Duration>, String>>;
}

/// A rule ready to count.
struct LimitRule {
    name: String,
    /// As written: `20/minute`.
    rate: String,
    /// One more unit each.
    interval: Duration,
    /// Units at once.
    burst: u32,
    view: Option<Pattern>,
    server: Option<Pattern>,
    tool: Option<Pattern>,
    methods: Methods,
    hints: Hints<Option<bool>>,
    per: Per,
    limiter: DefaultKeyedRateLimiter<String>,
}

impl std::fmt::Debug for LimitRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LimitRule")
            .field("name", &self.name)
            .field("rate", &self.rate)
            .field("per", &self.per)
            .finish_non_exhaustive()
    }
}

/// A request as the limits see it.
#[derive(Clone, Copy, Debug)]
pub struct Metered<'a> {
    /// Who asks (the OAuth subject, or `anonymous`).
    pub caller: &'a str,
    /// The method.
    pub method: &'a str,
    /// The view the request came through, if it came through one.
    pub view: Option<&'a str>,
    /// The server's name in the config, where the request reaches one.
    pub server: Option<&'a str>,
    /// The tool, prompt or resource at its server, where it names one.
    pub item: Option<&'a str>,
    /// A tool's annotations as believed, for a tool call.
    pub hints: Option<Hints<bool>>,
}

/// A request a rule refused.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// The rule's name.
    pub rule: String,
    /// Its rate, as written.
    pub rate: String,
    /// Whose budget was spent.
    pub per: Per,
    /// How long until the request would be let through.
    pub retry_after: Duration,
}

impl Refusal {
    /// The JSON-RPC error the client gets.
    pub fn to_error(&self) -> ErrorObject {
        let seconds = self.retry_after.as_secs_f64();
        let whose = match self.per {
            Per::Caller => "this caller's",
            Per::Server => "this server's",
            Per::Tool => "this tool's",
        };
        let message = format!(
            "rate limit {:?} ({}, {whose} budget) reached; retry in {seconds:.1} s",
            self.rule, self.rate
        );
        ErrorObject::new(LIMITED, message).with_data(json!({
            "limit": self.rule,
            "rate": self.rate,
            "per": self.per,
            "retryAfterSeconds": seconds,
        }))
    }
}

/// Every `[[limits]]` rule, compiled.
#[derive(Debug, Default)]
pub struct Limits {
    rules: Vec<LimitRule>,
}

/// A preset's methods, hints and rate.
fn preset(name: &str) -> Option<(Methods, Hints<Option<bool>>, &'static str)> {
    let calls = || Methods::Glob(Pattern::new(methods::TOOLS_CALL).expect("a plain name"));
    let hints = |read_only, destructive, idempotent| Hints {
        read_only,
        destructive,
        idempotent,
        open_world: None,
    };
    Some(match name {
        "read" => (Methods::Reads, Hints::default(), "100/minute"),
        "invoke_tool" => (calls(), Hints::default(), "50/minute"),
        "create" => (calls(), hints(Some(false), Some(false), None), "20/minute"),
        "update" => (calls(), hints(None, Some(true), Some(true)), "20/minute"),
        "delete" => (calls(), hints(None, Some(true), Some(false)), "10/minute"),
        "default" => (Methods::Others, Hints::default(), "10/minute"),
        _ => return None,
    })
}

/// The quota `rate` writes (`N/second`, `N/minute` or `N/hour`), its
/// interval and its burst.
pub(crate) fn quota(rate: &str) -> Result<(Quota, Duration, u32), String> {
    let (count, per) = rate
        .split_once('/')
        .ok_or_else(|| format!("rate {rate:?} must be N/second, N/minute or N/hour"))?;
    let count: NonZeroU32 = count
        .trim()
        .parse()
        .map_err(|_| format!("rate {rate:?}: {count:?} is not a positive whole number"))?;
    let period = match per.trim() {
        "second" | "s" => Duration::from_secs(1),
        "minute" | "min" | "m" => Duration::from_secs(60),
        "hour" | "h" => Duration::from_secs(3600),
        other => {
            return Err(format!(
                "rate {rate:?}: {other:?} is not second, minute or hour"
            ));
        }
    };
    let interval = period / count.get();
    Quota::with_period(interval)
        .map(|quota| (quota.allow_burst(count), interval, count.get()))
        .ok_or_else(|| format!("rate {rate:?} is too fast"))
}

impl LimitRule {
    fn compile(settings: &LimitSettings, number: usize) -> Result<LimitRule, String> {
        let at = |e: String| format!("[[limits]] #{number}: {e}");
        let glob = |key: &str, pattern: &Option<String>| -> Result<Option<Pattern>, String> {
            pattern
                .as_deref()
                .map(|p| Pattern::new(p).map_err(|e| at(format!("{key} = {p:?}: {e}"))))
                .transpose()
        };
        let preset = match settings.preset.as_deref() {
            Some(name) => Some(preset(name).ok_or_else(|| {
                at(format!(
                    "preset {name:?} is not read, invoke_tool, create, update, delete or default"
                ))
            })?),
            None => None,
        };
        let (mut methods, mut hints, preset_rate) = match preset {
            Some((methods, hints, rate)) => (methods, hints, Some(rate)),
            None => (Methods::Any, Hints::default(), None),
        };
        if let Some(method) = glob("method", &settings.method)? {
            methods = Methods::Glob(method);
        }
        let tool = glob("tool", &settings.tool)?;
        for (wanted, key) in [
            (&mut hints.read_only, settings.read_only),
            (&mut hints.destructive, settings.destructive),
            (&mut hints.idempotent, settings.idempotent),
        ] {
            if key.is_some() {
                *wanted = key;
            }
        }
        let rate = settings
            .rate
            .as_deref()
            .or(preset_rate)
            .ok_or_else(|| {
                at("a rule needs a rate (N/second, N/minute, N/hour) or a preset".into())
            })?
            .to_owned();
        let (quota, interval, burst) = quota(&rate).map_err(at)?;
        Ok(LimitRule {
            name: settings
                .name
                .clone()
                .or_else(|| settings.preset.clone())
                .unwrap_or_else(|| format!("limit {number}")),
            limiter: DefaultKeyedRateLimiter::keyed(quota),
            interval,
            burst,
            rate,
            view: glob("view", &settings.view)?,
            server: glob("server", &settings.server)?,
            tool,
            methods,
            hints,
            per: settings.per,
        })
    }

    fn matches(&self, request: &Metered<'_>) -> bool {
        let calls_tool = request.method == methods::TOOLS_CALL;
        let reads_hints = self.hints != Hints::default();
        self.methods.matches(request.method)
            && self
                .view
                .as_ref()
                .is_none_or(|view| request.view.is_some_and(|v| view.is_match(v)))
            && self
                .server
                .as_ref()
                .is_none_or(|server| request.server.is_some_and(|s| server.is_match(s)))
            && self.tool.as_ref().is_none_or(|tool| {
                calls_tool && request.item.is_some_and(|item| tool.is_match(item))
            })
            && (!reads_hints
                || calls_tool && request.hints.is_some_and(|hints| self.hints.allow(&hints)))
    }

    /// Spends one unit of `key`'s budget in memory.
    fn spend_here(&self, key: &String) -> Result<(), Refusal> {
        self.limiter
            .check_key(key)
            .map_err(|not_until| self.refusal(not_until.wait_time_from(Instant::now())))
    }

    fn refusal(&self, retry_after: Duration) -> Refusal {
        Refusal {
            rule: self.name.clone(),
            rate: self.rate.clone(),
            per: self.per,
            retry_after,
        }
    }

    /// Whose budget `request` spends under this rule.
    fn key(&self, request: &Metered<'_>) -> String {
        match self.per {
            Per::Caller => request.caller.to_owned(),
            Per::Server => request.server.unwrap_or_default().to_owned(),
            Per::Tool => format!(
                "{}\u{1f}{}",
                request.server.unwrap_or_default(),
                request.item.unwrap_or_default()
            ),
        }
    }
}

impl Limits {
    /// The rules `settings` write, in order; an error names the rule and
    /// the key that cannot be used.
    pub fn compile(settings: &[LimitSettings]) -> Result<Limits, String> {
        let rules = settings
            .iter()
            .enumerate()
            .map(|(index, rule)| LimitRule::compile(rule, index + 1))
            .collect::<Result<_, _>>()?;
        Ok(Limits { rules })
    }

    /// Whether there is no rule (nothing is counted).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether some rule reads tools' annotations.
    pub fn reads_hints(&self) -> bool {
        self.rules.iter().any(|rule| rule.hints != Hints::default())
    }

    /// Counts `request` against every rule that matches it; the first
    /// whose budget is spent refuses it.
    pub fn check(&self, request: &Metered<'_>) -> Result<(), Refusal> {
        for rule in &self.rules {
            if rule.matches(request) {
                rule.spend_here(&rule.key(request))?;
            }
        }
        Ok(())
    }

    /// [`Limits::check`], with the budgets in `shared` (each rule's keys
    /// under its name); where `shared` cannot be reached, in memory.
    pub async fn check_shared(
        &self,
        request: &Metered<'_>,
        shared: &dyn SharedBudgets,
    ) -> Result<(), Refusal> {
        for rule in &self.rules {
            if !rule.matches(request) {
                continue;
            }
            let key = rule.key(request);
            let shared_key = format!("{}\u{1f}{key}", rule.name);
            match shared.spend(&shared_key, rule.interval, rule.burst).await {
                Ok(None) => {}
                Ok(Some(wait)) => return Err(rule.refusal(wait)),
                Err(error) => {
                    tracing::warn!(%error, limit = %rule.name, "shared budgets unreachable; counted here");
                    rule.spend_here(&key)?;
                }
            }
        }
        Ok(())
    }

    /// Forgets the budgets that are full again, so that the keys of
    /// callers gone quiet take no memory.
    pub fn forget_idle(&self) {
        for rule in &self.rules {
            rule.limiter.retain_recent();
            rule.limiter.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests;
