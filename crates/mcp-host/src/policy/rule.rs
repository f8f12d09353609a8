//! One policy rule: as the settings file writes it, and compiled.

use std::collections::BTreeMap;

use crate::glob::Pattern;
use serde::{Deserialize, Serialize};

use super::arguments::{ArgumentRules, ArgumentSettings};
use super::{Asked, Decision, Hints, Kind};

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
    /// Claims of the caller's token, by name (each a glob over the claim's
    /// value, or over any one of its values where it is a list).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub claim: BTreeMap<String, String>,
    /// The client's own name, `clientInfo.name` (glob): self-reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The view the request came through (glob over `[views.NAME]`
    /// names); a rule with it never matches requests to the whole
    /// catalog.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view: Option<String>,
    /// The tool is read-only (`readOnlyHint`): believed from trusted
    /// servers only; the rule covers tools only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The tool may destroy (`destructiveHint`), likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling the tool again does nothing more (`idempotentHint`),
    /// likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The tool reaches beyond the server (`openWorldHint`), likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
    /// What the request's arguments must be, by argument (see
    /// [`super::arguments`]); for tools and prompts.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arguments: BTreeMap<String, ArgumentSettings>,
}

/// A rule ready to match.
#[derive(Clone, Debug)]
pub struct Rule {
    /// What it decides.
    pub decision: Decision,
    /// Its name.
    pub name: std::sync::Arc<str>,
    server: Option<Pattern>,
    item: Option<(Kind, Pattern)>,
    caller: Option<Pattern>,
    scope: Option<String>,
    client_id: Option<Pattern>,
    claims: Vec<(String, Pattern)>,
    client: Option<Pattern>,
    view: Option<Pattern>,
    /// What the tool's annotations must say, where the rule says.
    hints: Hints<Option<bool>>,
    /// What the arguments must be, where the rule says.
    arguments: ArgumentRules,
}

impl Rule {
    /// The rule `settings` writes, the `number`th of the file (from 1);
    /// an error names the key that cannot be used.
    pub fn compile(settings: &RuleSettings, number: usize) -> Result<Rule, String> {
        let glob = |key: &str, pattern: &Option<String>| -> Result<Option<Pattern>, String> {
            pattern
                .as_deref()
                .map(|p| {
                    Pattern::new(p).map_err(|e| format!("[[policy]] #{number}: {key} = {p:?}: {e}"))
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
        let names_hints = [
            settings.read_only,
            settings.destructive,
            settings.idempotent,
            settings.open_world,
        ]
        .iter()
        .any(Option::is_some);
        if names_hints && matches!(item, Some((kind, _)) if kind != Kind::Tool) {
            return Err(format!(
                "[[policy]] #{number}: read_only, destructive, idempotent and open_world are \
                 about tools"
            ));
        }
        if !settings.arguments.is_empty() && matches!(item, Some((Kind::Resource, _))) {
            return Err(format!(
                "[[policy]] #{number}: a resource is read without arguments"
            ));
        }
        Ok(Rule {
            arguments: ArgumentRules::compile(&settings.arguments, number)?,
            decision: settings.decision,
            name: settings
                .name
                .clone()
                .unwrap_or_else(|| format!("policy rule {number}"))
                .into(),
            server: glob("server", &settings.server)?,
            item,
            caller: glob("caller", &settings.caller)?,
            scope: settings.scope.clone(),
            client_id: glob("client_id", &settings.client_id)?,
            claims: settings
                .claim
                .iter()
                .map(|(name, p)| {
                    let compiled = Pattern::new(p)
                        .map_err(|e| format!("[[policy]] #{number}: claim.{name} = {p:?}: {e}"))?;
                    Ok((name.clone(), compiled))
                })
                .collect::<Result<_, String>>()?,
            client: glob("client", &settings.client)?,
            view: glob("view", &settings.view)?,
            hints: Hints {
                read_only: settings.read_only,
                destructive: settings.destructive,
                idempotent: settings.idempotent,
                open_world: settings.open_world,
            },
        })
    }

    /// Whether every key the rule sets matches `asked`.
    pub fn matches(&self, asked: &Asked<'_>) -> bool {
        self.unmatched(asked).is_none()
    }

    /// Why the rule does not match `asked` (the first key that does not),
    /// or `None` when it does.
    pub fn why_not(&self, asked: &Asked<'_>) -> Option<String> {
        let pattern = |matcher: &Option<Pattern>| {
            matcher.as_ref().map(|m| m.text.clone()).unwrap_or_default()
        };
        let caller = asked.caller;
        let shown = |value: Option<&str>| match value {
            Some(value) => format!("{value:?}"),
            None => "none".to_owned(),
        };
        Some(match self.unmatched(asked)? {
            Key::Server => format!(
                "server {:?} is not {:?}",
                asked.server,
                pattern(&self.server)
            ),
            Key::Item => {
                let (kind, name) = self.item.as_ref().expect("an item key");
                if *kind != asked.kind {
                    format!(
                        "it is about a {}, not a {}",
                        kind.as_str(),
                        asked.kind.as_str()
                    )
                } else {
                    format!("{} {:?} is not {:?}", kind.as_str(), asked.name, name.text)
                }
            }
            Key::Caller => format!(
                "caller {:?} is not {:?}",
                caller.name(),
                pattern(&self.caller)
            ),
            Key::Scope => format!(
                "the caller's scopes {:?} lack {:?}",
                caller.scopes,
                self.scope.as_deref().unwrap_or_default()
            ),
            Key::ClientId => format!(
                "client id {} is not {:?}",
                shown(caller.client_id.as_deref()),
                pattern(&self.client_id)
            ),
            Key::Claim => (self.claims.iter())
                .find(|(name, pattern)| !caller.claim(name).iter().any(|v| pattern.is_match(v)))
                .map(|(name, pattern)| {
                    format!(
                        "claim {name:?} ({:?}) is not {:?}",
                        caller.claim(name),
                        pattern.text
                    )
                })
                .unwrap_or_default(),
            Key::Client => format!(
                "client {} is not {:?}",
                shown(caller.client_name.as_deref()),
                pattern(&self.client)
            ),
            Key::View => format!(
                "the request came through {}, not view {:?}",
                match caller.view.as_deref() {
                    Some(view) => format!("view {view:?}"),
                    None => "the whole catalog".to_owned(),
                },
                pattern(&self.view)
            ),
            Key::Hints => match &asked.hints {
                None => "annotations are about tools".to_owned(),
                Some(hints) => format!(
                    "the tool's annotations ({}) are not {}",
                    hints.describe(),
                    self.hints.describe_wanted()
                ),
            },
            Key::Arguments => match asked.arguments {
                None => "the arguments are not known".to_owned(),
                Some(arguments) => self.arguments.why_not(arguments).unwrap_or_default(),
            },
        })
    }

    /// The first key the rule sets that `asked` does not match.
    fn unmatched(&self, asked: &Asked<'_>) -> Option<Key> {
        let caller = asked.caller;
        let optional = |matcher: &Option<Pattern>, value: Option<&str>| match matcher {
            None => true,
            Some(matcher) => value.is_some_and(|v| matcher.is_match(v)),
        };
        if !optional(&self.server, Some(asked.server)) {
            return Some(Key::Server);
        }
        let item = self
            .item
            .as_ref()
            .is_none_or(|(kind, name)| *kind == asked.kind && name.is_match(asked.name));
        if !item {
            return Some(Key::Item);
        }
        if !optional(&self.caller, Some(caller.name())) {
            return Some(Key::Caller);
        }
        let scope = self
            .scope
            .as_ref()
            .is_none_or(|scope| caller.scopes.iter().any(|s| s == scope));
        if !scope {
            return Some(Key::Scope);
        }
        if !optional(&self.client_id, caller.client_id.as_deref()) {
            return Some(Key::ClientId);
        }
        let claims = self.claims.iter().all(|(name, pattern)| {
            caller
                .claim(name)
                .iter()
                .any(|value| pattern.is_match(value))
        });
        if !claims {
            return Some(Key::Claim);
        }
        if !optional(&self.client, caller.client_name.as_deref()) {
            return Some(Key::Client);
        }
        if !optional(&self.view, caller.view.as_deref()) {
            return Some(Key::View);
        }
        if !self.hints.is_empty() {
            let Some(hints) = &asked.hints else {
                return Some(Key::Hints);
            };
            if !self.hints.allow(hints) {
                return Some(Key::Hints);
            }
        }
        if !self.arguments.is_empty() {
            let holds = match asked.arguments {
                Some(arguments) => self.arguments.hold(arguments),
                // Not known (a list): the rule is taken as the most the
                // request could be allowed, so a list hides only what
                // every call is denied.
                None => self.decision != Decision::Deny,
            };
            if !holds {
                return Some(Key::Arguments);
            }
        }
        None
    }

    /// Whether the rule looks at tools' annotations.
    pub fn reads_hints(&self) -> bool {
        !self.hints.is_empty()
    }

    /// Whether the rule looks at the request's arguments.
    pub fn reads_arguments(&self) -> bool {
        !self.arguments.is_empty()
    }
}

/// A key of a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    View,
    Server,
    Item,
    Caller,
    Scope,
    ClientId,
    Claim,
    Client,
    Hints,
    Arguments,
}
