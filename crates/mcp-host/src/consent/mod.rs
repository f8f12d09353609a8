//! Consent: a person approves a request the policy marks `ask`.
//!
//! The request is shown as the person needs it: the server (and its
//! command line or URL), the tool, prompt or resource, its description
//! and annotations, the arguments (which the person may edit), and the
//! rule that asks. The answer is once, for the session, always, or no.
//! Grants are bound to the server's identity and to the definition the
//! person saw (a hash of it): a changed definition is asked about again.
//!
//! Approvers are asked in the configured order (`[guard] approvers`):
//! `client`, the client that made the call, by elicitation, where it
//! declared it; and any the embedding application registers
//! ([`Approver`]: the terminal for `mcp host`, the web console), and
//! `http`, an operator's endpoint (see [`http`]). With none reachable, or
//! no answer in time, the request is refused.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Mutex;

use mcp_core::BoxFuture;
use serde_json::{Map, Value, json};
use sha2::Digest as _;

use crate::policy::Kind;

pub mod http;
pub mod shared;
mod store;

use mcp_core::sync::MutexExt as _;
pub use store::{GuardStore, Pinned};

/// How long an approval is valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// This request only.
    Once,
    /// The rest of the client's session (a 2026-07-28 client: the same
    /// caller and client name, until the host restarts).
    Session,
    /// From now on, kept in the grant store.
    Always,
}

/// What a person answered.
#[derive(Clone, Debug, PartialEq)]
pub struct Approval {
    /// Whether the request may go on.
    pub allowed: bool,
    /// For how long, when allowed.
    pub scope: Scope,
    /// The arguments as the person edited them, if they did.
    pub arguments: Option<Map<String, Value>>,
}

impl Approval {
    /// How the audit names the answer.
    pub fn as_str(&self) -> &'static str {
        match (self.allowed, self.scope) {
            (false, _) => "denied",
            (true, Scope::Once) => "allowed-once",
            (true, Scope::Session) => "allowed-session",
            (true, Scope::Always) => "allowed-always",
        }
    }
}

/// What a person is asked to approve.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// Who asks: the caller's OAuth subject, `anonymous` without one.
    pub caller: String,
    /// The client's own name (`clientInfo`): self-reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The server's name in the config.
    pub server: String,
    /// How the server is run: its command line, or its URL.
    pub server_identity: String,
    /// What kind of item.
    pub kind: Kind,
    /// The name (or URI) as the client asked for it.
    pub name: String,
    /// The item's description, as its server gives it.
    pub description: Option<String>,
    /// The tool's annotations (as the server claims them).
    pub annotations: Option<Value>,
    /// The request's arguments.
    pub arguments: Option<Map<String, Value>>,
    /// Why a person is asked: the rule.
    pub reason: String,
    /// What changed in the definition since it was pinned (a diff), where
    /// that is why.
    pub changes: Option<String>,
}

impl ApprovalRequest {
    /// A request about `kind` `name` of server `server`; the rest empty.
    pub fn new(server: &str, kind: Kind, name: &str) -> Self {
        ApprovalRequest {
            caller: "anonymous".to_owned(),
            client: None,
            server: server.to_owned(),
            server_identity: String::new(),
            kind,
            name: name.to_owned(),
            description: None,
            annotations: None,
            arguments: None,
            reason: String::new(),
            changes: None,
        }
    }

    /// The request as one paragraph, for a terminal or a form's message.
    pub fn describe(&self) -> String {
        if self.kind == Kind::Server {
            return format!(
                "Run server {:?}? Its command line (or URL): {}\nAsked because {}.",
                self.server, self.server_identity, self.reason
            );
        }
        let mut text = format!(
            "Server {:?} ({}) asks to run {} {:?}",
            self.server,
            self.server_identity,
            self.kind.as_str(),
            self.name
        );
        if let Some(description) = &self.description {
            let _ = write!(text, ": {}", description.trim());
        }
        if let Some(annotations) = &self.annotations {
            let _ = write!(text, "\nAnnotations (as the server claims): {annotations}");
        }
        if let Some(arguments) = &self.arguments {
            let _ = write!(text, "\nArguments: {}", Value::Object(arguments.clone()));
        }
        let _ = write!(text, "\nCaller: {}", self.caller);
        if let Some(client) = &self.client {
            let _ = write!(text, " (client {client:?})");
        }
        let _ = write!(text, "\nAsked because of {}.", self.reason);
        if let Some(changes) = &self.changes {
            let _ = write!(text, "\nWhat changed:\n{}", changes.trim_end());
        }
        text
    }
}

/// Asks a person; registered by the embedding application (the terminal
/// of `mcp host`, a console).
pub trait Approver: Send + Sync + 'static {
    /// Its name in `[guard] approvers`.
    fn name(&self) -> &str;

    /// Whether a person can be asked this way now.
    fn reachable(&self) -> bool;

    /// Asks about `request`; an error when the person could not be asked
    /// (the next approver is tried).
    fn ask<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Result<Approval, String>>;
}

/// How requests the policy marks `ask` are put to a person.
#[derive(Clone)]
#[non_exhaustive]
pub struct ConsentOptions {
    /// The approvers, in the order they are tried: `client` (the caller,
    /// by elicitation) or the name of one of `registered`.
    pub order: Vec<String>,
    /// Approvers the embedding application provides.
    pub registered: Vec<std::sync::Arc<dyn Approver>>,
    /// How long a person has to answer; then the request is refused.
    pub timeout: std::time::Duration,
    /// Where grants for always are kept; without it, "always" holds for
    /// the session.
    pub store: Option<std::sync::Arc<GuardStore>>,
    /// What a request to an item whose definition changed since it was
    /// pinned gets (where definitions are pinned).
    pub on_change: OnChange,
    /// How often a client that asked for progress hears that its request
    /// still waits for a person, so that it does not time out.
    pub keepalive: std::time::Duration,
}

/// What becomes of an item whose definition changed since it was pinned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnChange {
    /// A person approves it first, shown what changed ("always" pins the
    /// new definition).
    #[default]
    Ask,
    /// It is left out of the lists and refused until approved.
    Hide,
    /// It is used; the change is logged and audited.
    Warn,
}

impl Default for ConsentOptions {
    /// The client, then the console (while a browser has it open), then
    /// the terminal; two minutes to answer; no store.
    fn default() -> Self {
        ConsentOptions {
            order: vec!["client".into(), "console".into(), "terminal".into()],
            registered: Vec::new(),
            timeout: std::time::Duration::from_secs(120),
            store: None,
            on_change: OnChange::Ask,
            keepalive: std::time::Duration::from_secs(10),
        }
    }
}

impl std::fmt::Debug for ConsentOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let registered: Vec<&str> = self.registered.iter().map(|a| a.name()).collect();
        f.debug_struct("ConsentOptions")
            .field("order", &self.order)
            .field("registered", &registered)
            .field("timeout", &self.timeout)
            .field("store", &self.store)
            .field("on_change", &self.on_change)
            .finish()
    }
}

/// The answers of the form, as the decision property gives them.
const DECISIONS: [(&str, &str); 4] = [
    ("allow-once", "Allow once"),
    ("allow-session", "Allow for this session"),
    ("allow-always", "Always allow"),
    ("deny", "Deny"),
];

/// The `elicitation/create` params that ask a person about `request`.
pub fn form(request: &ApprovalRequest) -> Value {
    let mut properties = Map::new();
    properties.insert(
        "decision".into(),
        json!({
            "type": "string",
            "title": "Decision",
            "enum": DECISIONS.iter().map(|(value, _)| *value).collect::<Vec<_>>(),
            "enumNames": DECISIONS.iter().map(|(_, title)| *title).collect::<Vec<_>>(),
        }),
    );
    if let Some(arguments) = &request.arguments {
        properties.insert(
            "arguments".into(),
            json!({
                "type": "string",
                "title": "Arguments (JSON; edit them to change what is sent)",
                "default": Value::Object(arguments.clone()).to_string(),
            }),
        );
    }
    json!({
        "mode": "form",
        "message": request.describe(),
        "requestedSchema": {
            "type": "object",
            "properties": properties,
            "required": ["decision"],
        },
    })
}

/// The person's answer in an `elicitation/create` result: anything but an
/// accepted form with an allowing decision is a refusal.
pub fn read_answer(result: &Value) -> Result<Approval, String> {
    let denied = Approval {
        allowed: false,
        scope: Scope::Once,
        arguments: None,
    };
    if result.get("action").and_then(Value::as_str) != Some("accept") {
        return Ok(denied);
    }
    let content = result.get("content").cloned().unwrap_or(Value::Null);
    let Some(scope) = allowed_for(content.get("decision").and_then(Value::as_str))? else {
        return Ok(denied);
    };
    let arguments = match content.get("arguments").and_then(Value::as_str) {
        None => None,
        Some(text) => match serde_json::from_str(text) {
            Ok(Value::Object(arguments)) => Some(arguments),
            _ => return Err("the edited arguments are not a JSON object".into()),
        },
    };
    Ok(Approval {
        allowed: true,
        scope,
        arguments,
    })
}

/// The scope an answer's decision allows for (`allow-once`,
/// `allow-session`, `allow-always`); `None` for `deny` or no decision.
fn allowed_for(decision: Option<&str>) -> Result<Option<Scope>, String> {
    match decision {
        Some("allow-once") => Ok(Some(Scope::Once)),
        Some("allow-session") => Ok(Some(Scope::Session)),
        Some("allow-always") => Ok(Some(Scope::Always)),
        Some("deny") | None => Ok(None),
        Some(other) => Err(format!("the answer {other:?} is none of the choices")),
    }
}

/// A definition's hash: SHA-256 over its JSON with the members of every
/// object in order, hex; two servers listing the same definition, in any
/// member order, hash alike.
pub fn definition_hash(definition: &Map<String, Value>) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(members) => {
                let mut keys: Vec<&String> = members.keys().collect();
                keys.sort();
                out.push('{');
                for (n, key) in keys.into_iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                    write(&members[key], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (n, item) in items.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut text = String::new();
    write(&Value::Object(definition.clone()), &mut text);
    let digest = sha2::Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a grant is bound to: the server's identity, the item and its
/// definition's hash.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GrantKey {
    /// The server's command line or URL.
    pub server_identity: String,
    /// What kind of item.
    pub kind: &'static str,
    /// Its name (or URI) at the server.
    pub name: String,
    /// Its definition's hash ([`definition_hash`]).
    pub definition: String,
}

/// Who holds the grants for the session of a legacy session named `name`
/// (its HTTP session id) in the host's table.
pub(crate) fn session_holder(name: &str) -> String {
    format!("session\u{1f}{name}")
}

/// Grants for the rest of a session: in a legacy session's extensions,
/// and in the host for 2026-07-28 callers.
#[derive(Default)]
pub(crate) struct SessionGrants(Mutex<HashSet<(String, GrantKey)>>);

impl SessionGrants {
    /// Whether `caller` was granted `key`.
    pub(crate) fn has(&self, caller: &str, key: &GrantKey) -> bool {
        let grants = self.0.locked();
        grants.contains(&(caller.to_owned(), key.clone()))
    }

    /// Grants `key` to `caller`.
    pub(crate) fn grant(&self, caller: &str, key: GrantKey) {
        let mut grants = self.0.locked();
        grants.insert((caller.to_owned(), key));
    }

    /// Forgets every grant of `caller` (its session ended).
    pub(crate) fn forget(&self, caller: &str) {
        self.0.locked().retain(|(holder, _)| holder != caller);
    }
}

/// How the `requestState` of a 2026-07-28 caller's approval round
/// begins.
pub(crate) const APPROVAL_STATE: &str = "mcp-host/approval:";

/// The key of the approval question in an `input_required` round.
pub(crate) const APPROVAL_KEY: &str = "mcp-host-approval";

/// How long an approval round waits for the caller's retry.
pub(crate) const PENDING_TTL: std::time::Duration = std::time::Duration::from_secs(600);

/// Approval rounds waiting at most; the oldest go first beyond it.
const MAX_PENDING: usize = 1024;

/// A 2026-07-28 caller's request waiting for the approval its retry
/// carries.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Pending {
    /// Who asked (the caller's key).
    pub(crate) caller: String,
    /// The method.
    pub(crate) method: String,
    /// The name or URI asked for.
    pub(crate) asked: String,
    /// Whether the other instances were given it too (then it is good
    /// only while they still hold it: one retry, wherever it goes).
    #[serde(default)]
    pub(crate) shared: bool,
}

impl Pending {
    /// Whether `other` waits for the same request.
    pub(crate) fn same(&self, other: &Pending) -> bool {
        (&self.caller, &self.method, &self.asked) == (&other.caller, &other.method, &other.asked)
    }
}

/// What the host keeps for 2026-07-28 callers, which have no session:
/// their grants for the session, and their approval rounds.
pub(crate) struct Waiting {
    pub(crate) grants: SessionGrants,
    pending: crate::expiring::Expiring<Pending>,
}

impl Default for Waiting {
    fn default() -> Self {
        Waiting {
            grants: SessionGrants::default(),
            pending: crate::expiring::Expiring::new(APPROVAL_STATE, PENDING_TTL, MAX_PENDING),
        }
    }
}

impl Waiting {
    /// Keeps `pending` for the caller's retry; the `requestState` naming it.
    pub(crate) fn hold(&self, pending: Pending) -> String {
        self.pending.keep(pending)
    }

    /// Marks the request `token` names as given to the other instances.
    pub(crate) fn shared(&self, token: &str) {
        self.pending.update(token, |pending| pending.shared = true);
    }

    /// Whether `token` names a request waiting for its approval now.
    pub(crate) fn holds(&self, token: &str) -> bool {
        self.pending.holds(token)
    }

    /// The request `token` names, once.
    pub(crate) fn take(&self, token: &str) -> Option<Pending> {
        self.pending.take(token)
    }
}

#[cfg(test)]
mod tests;
