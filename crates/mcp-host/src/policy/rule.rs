//! One policy rule: as the settings file writes it, and compiled.

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};

use super::{Asked, Decision, Kind};

/// `[[policy]]`: one rule as the settings file writes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RuleSettings {
    /// What the rule decides.
    pub decision: Decision,
    /// How errors and the audit name it (default: `policy rule N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The server's name in the config (glob).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// A tool's name at its server (glob): the rule covers tools only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A prompt's name at its server (glob): the rule covers prompts only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// A resource's URI at its server (glob): the rule covers resources
    /// only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// The caller's OAuth subject, `anonymous` without one (glob).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// A scope the caller's token must hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The OAuth client the caller's token was issued to (glob).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The client's own name, `clientInfo.name` (glob): self-reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

/// A rule ready to match.
#[derive(Clone, Debug)]
pub struct Rule {
    /// What it decides.
    pub decision: Decision,
    /// Its name.
    pub name: String,
    server: Option<GlobMatcher>,
    item: Option<(Kind, GlobMatcher)>,
    caller: Option<GlobMatcher>,
    scope: Option<String>,
    client_id: Option<GlobMatcher>,
    client: Option<GlobMatcher>,
}

impl Rule {
    /// The rule `settings` writes, the `number`th of the file (from 1);
    /// an error names the key that cannot be used.
    pub fn compile(settings: &RuleSettings, number: usize) -> Result<Rule, String> {
        let glob = |key: &str, pattern: &Option<String>| -> Result<Option<GlobMatcher>, String> {
            pattern
                .as_deref()
                .map(|p| {
                    Glob::new(p)
                        .map(|g| g.compile_matcher())
                        .map_err(|e| format!("[[policy]] #{number}: {key} = {p:?}: {e}"))
                })
                .transpose()
        };
        let items = [
            (Kind::Tool, "tool", &settings.tool),
            (Kind::Prompt, "prompt", &settings.prompt),
            (Kind::Resource, "resource", &settings.resource),
        ];
        let mut item = None;
        for (kind, key, pattern) in items {
            if let Some(matcher) = glob(key, pattern)? {
                if item.is_some() {
                    return Err(format!(
                        "[[policy]] #{number}: a rule names at most one of tool, prompt and resource"
                    ));
                }
                item = Some((kind, matcher));
            }
        }
        Ok(Rule {
            decision: settings.decision,
            name: settings
                .name
                .clone()
                .unwrap_or_else(|| format!("policy rule {number}")),
            server: glob("server", &settings.server)?,
            item,
            caller: glob("caller", &settings.caller)?,
            scope: settings.scope.clone(),
            client_id: glob("client_id", &settings.client_id)?,
            client: glob("client", &settings.client)?,
        })
    }

    /// Whether every key the rule sets matches `asked`.
    pub fn matches(&self, asked: &Asked<'_>) -> bool {
        let caller = asked.caller;
        let optional = |matcher: &Option<GlobMatcher>, value: Option<&str>| match matcher {
            None => true,
            Some(matcher) => value.is_some_and(|v| matcher.is_match(v)),
        };
        optional(&self.server, Some(asked.server))
            && self
                .item
                .as_ref()
                .is_none_or(|(kind, name)| *kind == asked.kind && name.is_match(asked.name))
            && optional(&self.caller, Some(caller.name()))
            && self
                .scope
                .as_ref()
                .is_none_or(|scope| caller.scopes.iter().any(|s| s == scope))
            && optional(&self.client_id, caller.client_id.as_deref())
            && optional(&self.client, caller.client_name.as_deref())
    }
}
