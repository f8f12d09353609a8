//! The host's policy: rules over who may reach which server's tools,
//! prompts and resources, each deciding `allow`, `deny` or `ask`.
//!
//! Every request that names a tool, a prompt or a resource is decided
//! before it is forwarded, and the lists a caller reads leave out what it
//! is denied. Rules are written in the settings file:
//!
//! ```toml
//! [guard]
//! default = "allow"        # where no rule matches: allow | ask | deny
//!
//! [[policy]]
//! decision = "deny"        # allow | deny | ask
//! server = "memory"        # the server's name in the config; glob
//! tool = "delete_*"        # the name at its server; glob (or prompt = , resource = a URI glob)
//! caller = "bob"           # the OAuth subject ("anonymous" without OAuth); glob
//! scope = "admin"          # the caller's token holds this scope
//! client_id = "cli-*"      # the OAuth client; glob
//! client = "Claude*"       # the client's own name (clientInfo): a hint, no security boundary
//! name = "no deletes"      # how errors and the audit name the rule
//! ```
//!
//! A rule matches a request when each key it sets matches; a key left out
//! matches anything, and a rule naming none of `tool`, `prompt` and
//! `resource` covers every kind. Of the rules that match, a `deny` wins
//! over an `ask`, which wins over an `allow`; among rules of the winning
//! decision, the first in the file names it. Where none matches, the
//! `[guard] default` decides. Globs: `*` any run of characters, `?` one,
//! `[abc]` one of a set, `{a,b}` either.
//!
//! `ask` needs a person to approve the call; until an approver is
//! configured it refuses, saying so.

use std::fmt;

use serde::{Deserialize, Serialize};

mod caller;
mod rule;

pub use caller::Caller;
pub use rule::{Rule, RuleSettings};

/// The JSON-RPC error code of a request the policy refused (in the range
/// JSON-RPC leaves to servers).
pub const DENIED: i64 = -32003;

/// What a rule, or the default, decides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// The request goes on.
    #[default]
    Allow,
    /// A person approves the request first.
    Ask,
    /// The request is refused.
    Deny,
}

impl Decision {
    /// Its name in settings and in the audit.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kind of thing a request reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A tool (`tools/call`, `tools/list`).
    Tool,
    /// A prompt (`prompts/get`, `prompts/list`).
    Prompt,
    /// A resource (`resources/read`, subscriptions, `resources/list`).
    Resource,
}

impl Kind {
    /// Its name in messages, status and the audit.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Resource => "resource",
        }
    }
}

/// What is asked: by whom, of which server, which item.
#[derive(Clone, Copy, Debug)]
pub struct Asked<'a> {
    /// Who asks.
    pub caller: &'a Caller,
    /// The server's name in the config.
    pub server: &'a str,
    /// What kind of item.
    pub kind: Kind,
    /// The item's name or URI at its server.
    pub name: &'a str,
}

/// A decision and what made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// What was decided.
    pub decision: Decision,
    /// The rule that decided, by its name; `None`: the default.
    pub rule: Option<String>,
}

impl Verdict {
    /// How the audit and errors name what decided.
    pub fn decided_by(&self) -> &str {
        self.rule.as_deref().unwrap_or("the default")
    }
}

/// The rules and the default, as the settings file gives them.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    rules: Vec<Rule>,
    default: Decision,
}

impl Policy {
    /// `rules`, in order, with `default` where none matches.
    pub fn new(rules: Vec<Rule>, default: Decision) -> Policy {
        Policy { rules, default }
    }

    /// Whether every request is allowed whatever it asks: no rule, and
    /// the default allows. Lists are then not filtered at all.
    pub fn allows_everything(&self) -> bool {
        self.rules.is_empty() && self.default == Decision::Allow
    }

    /// Whether some request may be marked `ask`.
    pub fn can_ask(&self) -> bool {
        self.default == Decision::Ask || self.rules.iter().any(|r| r.decision == Decision::Ask)
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The decision where no rule matches.
    pub fn default_decision(&self) -> Decision {
        self.default
    }

    /// Decides `asked`.
    pub fn decide(&self, asked: &Asked<'_>) -> Verdict {
        let mut winner: Option<&Rule> = None;
        for rule in &self.rules {
            if !rule.matches(asked) {
                continue;
            }
            match winner {
                Some(best) if best.decision >= rule.decision => {}
                _ => winner = Some(rule),
            }
        }
        match winner {
            Some(rule) => Verdict {
                decision: rule.decision,
                rule: Some(rule.name.clone()),
            },
            None => Verdict {
                decision: self.default,
                rule: None,
            },
        }
    }

    /// Whether `asked` is denied: left out of the caller's lists.
    pub fn hides(&self, asked: &Asked<'_>) -> bool {
        self.decide(asked).decision == Decision::Deny
    }
}

#[cfg(test)]
mod tests;
