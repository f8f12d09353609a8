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
//! claim.groups = "admins"  # a claim of the token; glob (over each value of a list)
//! client = "Claude*"       # the client's own name (clientInfo): a hint, no security boundary
//! destructive = true       # the tool's annotations (also read_only, idempotent, open_world),
//!                          # believed from servers marked "trusted": true in the config only
//! name = "no deletes"      # how errors and the audit name the rule
//! arguments.path = { outside = "~/projects" }  # the request's arguments, see below
//! ```
//!
//! `arguments` matches a tool's or a prompt's arguments, one matcher per
//! argument (see [`arguments`] for every matcher): `equals`, `one_of`,
//! `glob`, `inside` and `outside` (a path, resolved first), `present`.
//! A list is decided without arguments, as the most any call could be
//! allowed: a rule that denies only some arguments leaves the tool
//! listed.
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

pub mod arguments;
mod caller;
pub mod import;
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A tool (`tools/call`, `tools/list`).
    Tool,
    /// A prompt (`prompts/get`, `prompts/list`).
    Prompt,
    /// A resource (`resources/read`, subscriptions, `resources/list`).
    Resource,
    /// A server itself, to be run (only asked of a person: see
    /// [`crate::trust`]; no rule is about it).
    Server,
}

impl Kind {
    /// Its name in messages, status and the audit.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Resource => "resource",
            Kind::Server => "server",
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
    /// A tool's annotations as believed ([`Hints::believed`]); `None`
    /// for what is not a tool.
    pub hints: Option<Hints<bool>>,
    /// The request's arguments (`null` or an object), where a rule reads
    /// them ([`Policy::reads_arguments`]); `None`: not known, as for a
    /// list.
    pub arguments: Option<&'a serde_json::Value>,
}

/// What a tool's annotations say of it (or, in a rule, what they must
/// say: `Option<bool>`, `None` for anything).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hints<T> {
    /// `readOnlyHint`.
    pub read_only: T,
    /// `destructiveHint`.
    pub destructive: T,
    /// `idempotentHint`.
    pub idempotent: T,
    /// `openWorldHint`.
    pub open_world: T,
}

impl Hints<bool> {
    /// What a tool's `annotations` say, where its server is `trusted`;
    /// elsewhere (and for a hint left out) the specification's cautious
    /// defaults: not read-only, destructive, not idempotent, open world.
    pub fn believed(annotations: Option<&serde_json::Value>, trusted: bool) -> Hints<bool> {
        let claimed = |key: &str, default: bool| {
            trusted
                .then(|| annotations?.get(key)?.as_bool())
                .flatten()
                .unwrap_or(default)
        };
        Hints {
            read_only: claimed("readOnlyHint", false),
            destructive: claimed("destructiveHint", true),
            idempotent: claimed("idempotentHint", false),
            open_world: claimed("openWorldHint", true),
        }
    }

    fn pairs(&self) -> [(&'static str, bool); 4] {
        [
            ("read_only", self.read_only),
            ("destructive", self.destructive),
            ("idempotent", self.idempotent),
            ("open_world", self.open_world),
        ]
    }

    /// As `read_only = false, destructive = true, ...`.
    pub fn describe(&self) -> String {
        let pairs: Vec<String> = self
            .pairs()
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        pairs.join(", ")
    }
}

impl Hints<Option<bool>> {
    fn is_empty(&self) -> bool {
        *self == Hints::default()
    }

    /// Whether `hints` say what these want.
    pub(crate) fn allow(&self, hints: &Hints<bool>) -> bool {
        let wants = |want: Option<bool>, is: bool| want.is_none_or(|want| want == is);
        wants(self.read_only, hints.read_only)
            && wants(self.destructive, hints.destructive)
            && wants(self.idempotent, hints.idempotent)
            && wants(self.open_world, hints.open_world)
    }

    /// What these want, as `read_only = true, ...`.
    fn describe_wanted(&self) -> String {
        let wanted = [
            ("read_only", self.read_only),
            ("destructive", self.destructive),
            ("idempotent", self.idempotent),
            ("open_world", self.open_world),
        ];
        let pairs: Vec<String> = wanted
            .iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k} = {v}")))
            .collect();
        pairs.join(", ")
    }
}

/// A decision and what made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// What was decided.
    pub decision: Decision,
    /// The rule that decided, by its name; `None`: the default.
    pub rule: Option<std::sync::Arc<str>>,
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
    /// Whether some rule looks at tools' annotations.
    reads_hints: bool,
    /// Whether some rule looks at requests' arguments.
    reads_arguments: bool,
}

impl Policy {
    /// `rules`, in order, with `default` where none matches.
    pub fn new(rules: Vec<Rule>, default: Decision) -> Policy {
        let reads_hints = rules.iter().any(Rule::reads_hints);
        let reads_arguments = rules.iter().any(Rule::reads_arguments);
        Policy {
            rules,
            default,
            reads_hints,
            reads_arguments,
        }
    }

    /// Whether every request is allowed whatever it asks: no rule, and
    /// the default allows. Lists are then not filtered at all.
    pub fn allows_everything(&self) -> bool {
        self.rules.is_empty() && self.default == Decision::Allow
    }

    /// Whether some rule looks at tools' annotations (they are read only
    /// then).
    pub fn reads_hints(&self) -> bool {
        self.reads_hints
    }

    /// Whether some rule looks at requests' arguments (they are read
    /// only then).
    pub fn reads_arguments(&self) -> bool {
        self.reads_arguments
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
                rule: Some(std::sync::Arc::clone(&rule.name)),
            },
            None => Verdict {
                decision: self.default,
                rule: None,
            },
        }
    }

    /// How `asked` is decided: the verdict, and for each rule in order
    /// its name, its decision, and why it does not match (`None`: it
    /// does).
    pub fn explain(&self, asked: &Asked<'_>) -> (Verdict, Vec<(String, Decision, Option<String>)>) {
        let rules = self
            .rules
            .iter()
            .map(|rule| (rule.name.to_string(), rule.decision, rule.why_not(asked)))
            .collect();
        (self.decide(asked), rules)
    }

    /// Whether `asked` is denied: left out of the caller's lists.
    pub fn hides(&self, asked: &Asked<'_>) -> bool {
        self.decide(asked).decision == Decision::Deny
    }
}

#[cfg(test)]
mod tests;
