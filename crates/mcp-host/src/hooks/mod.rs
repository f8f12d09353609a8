//! Guard hooks: code that sees each call before the host forwards it and
//! its result before the client gets it, and may refuse or rewrite
//! either.
//!
//! A hook is a [`CallHook`]: an embedding application implements the
//! trait, and the settings file configures external ones, a command or an
//! HTTP endpoint (see [`external`]). Hooks see tool calls, prompts got
//! and resources read, after the policy and a person's consent, in the
//! order they are given; the first refusal ends the call. A hook that
//! fails (an error, a timeout, an answer that cannot be read) refuses: a
//! guard fails closed.
//!
//! The result a hook sees is the server's whole JSON-RPC `result`. A
//! 2026-07-28 `input_required` round and a call run as a task are passed
//! on without the after-hooks: they are not the call's result.

use std::sync::Arc;

use mcp_core::BoxFuture;
use serde::Serialize;
use serde_json::{Map, Value};

pub mod external;

use crate::policy::{Caller, Kind};

/// The JSON-RPC error code of a call a hook refused (the policy's).
pub const REFUSED: i64 = crate::policy::DENIED;

/// A call, as hooks see it.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct HookCall {
    /// The caller's OAuth subject, `anonymous` without one.
    pub caller: String,
    /// The OAuth client the caller's token was issued to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The client's own name (`clientInfo`): self-reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The server's name in the config.
    pub server: String,
    /// `tool`, `prompt` or `resource`.
    pub kind: &'static str,
    /// The item's name (a resource's URI) at its server.
    pub name: String,
    /// The call's arguments (a tool's or a prompt's), as they will be
    /// sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
}

impl HookCall {
    /// The call of `kind` `name` at `server`, by `caller`.
    pub fn new(caller: &Caller, server: &str, kind: Kind, name: &str) -> HookCall {
        HookCall {
            caller: caller.name().to_owned(),
            client_id: caller.client_id.clone(),
            client: caller.client_name.clone(),
            server: server.to_owned(),
            kind: kind.as_str(),
            name: name.to_owned(),
            arguments: None,
        }
    }
}

/// What a hook says before a call.
#[derive(Clone, Debug, PartialEq)]
pub enum Before {
    /// It goes on as it is.
    Go,
    /// It goes on with these arguments instead.
    Rewrite(Map<String, Value>),
    /// It is refused, for this reason.
    Refuse(String),
}

/// What a hook says of a call's result.
#[derive(Clone, Debug, PartialEq)]
pub enum After {
    /// The client gets it as it is.
    Keep,
    /// The client gets this result instead.
    Replace(Value),
    /// The client gets an error instead, for this reason.
    Refuse(String),
}

/// A hook: sees calls before they are forwarded and results before they
/// are answered. An error refuses the call.
pub trait CallHook: Send + Sync {
    /// How refusals and the log name it.
    fn name(&self) -> &str;

    /// Whether it sees `call` at all (before and after).
    fn sees(&self, call: &HookCall) -> bool {
        let _ = call;
        true
    }

    /// What becomes of `call` before it is forwarded.
    fn before<'a>(&'a self, call: &'a HookCall) -> BoxFuture<'a, Result<Before, String>> {
        let _ = call;
        Box::pin(async { Ok(Before::Go) })
    }

    /// What becomes of `result`, the answer to `call`.
    fn after<'a>(
        &'a self,
        call: &'a HookCall,
        result: &'a Value,
    ) -> BoxFuture<'a, Result<After, String>> {
        let _ = (call, result);
        Box::pin(async { Ok(After::Keep) })
    }
}

/// The hooks of a host, in order.
#[derive(Clone, Default)]
pub struct Hooks {
    each: Vec<Arc<dyn CallHook>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.each.iter().map(|h| h.name()).collect();
        f.debug_tuple("Hooks").field(&names).finish()
    }
}

/// Why a hook refused a call: its name and its reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The hook's name.
    pub hook: String,
    /// What it said (or why it failed).
    pub reason: String,
}

impl Refusal {
    fn by(hook: &dyn CallHook, reason: String) -> Refusal {
        Refusal {
            hook: hook.name().to_owned(),
            reason,
        }
    }

    /// The JSON-RPC error the client gets.
    pub fn to_error(&self, call: &HookCall) -> mcp_schema::ErrorObject {
        mcp_schema::ErrorObject::new(
            REFUSED,
            format!(
                "{} {:?} of server {:?} is refused by hook {:?}: {}",
                call.kind, call.name, call.server, self.hook, self.reason
            ),
        )
        .with_data(serde_json::json!({"hook": self.hook, "server": call.server}))
    }
}

impl Hooks {
    /// `hooks`, in order.
    pub fn new(hooks: Vec<Arc<dyn CallHook>>) -> Hooks {
        Hooks { each: hooks }
    }

    /// Adds `hook` after the others.
    pub fn push(&mut self, hook: Arc<dyn CallHook>) {
        self.each.push(hook);
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.each.is_empty()
    }

    /// Whether some hook sees `call`.
    pub fn see(&self, call: &HookCall) -> bool {
        self.each.iter().any(|h| h.sees(call))
    }

    /// Runs the before-hooks on `call` in order, each seeing the
    /// arguments the ones before it left; the first refusal ends it.
    /// Whether the arguments were rewritten.
    pub async fn before(&self, call: &mut HookCall) -> Result<bool, Refusal> {
        let mut rewritten = false;
        for hook in &self.each {
            if !hook.sees(call) {
                continue;
            }
            let refusal = |reason| Refusal::by(hook.as_ref(), reason);
            match hook.before(call).await {
                Ok(Before::Go) => {}
                Ok(Before::Rewrite(arguments)) => {
                    tracing::info!(hook = hook.name(), call = %call.name, "a hook rewrote the arguments");
                    call.arguments = Some(arguments);
                    rewritten = true;
                }
                Ok(Before::Refuse(reason)) => return Err(refusal(reason)),
                Err(error) => return Err(refusal(format!("the hook failed: {error}"))),
            }
        }
        Ok(rewritten)
    }

    /// Runs the after-hooks on `result` in order, each seeing the result
    /// the ones before it left; the first refusal ends it. Whether the
    /// result was replaced.
    pub async fn after(&self, call: &HookCall, result: &mut Value) -> Result<bool, Refusal> {
        let mut replaced = false;
        for hook in &self.each {
            if !hook.sees(call) {
                continue;
            }
            let refusal = |reason| Refusal::by(hook.as_ref(), reason);
            match hook.after(call, result).await {
                Ok(After::Keep) => {}
                Ok(After::Replace(value)) => {
                    tracing::info!(hook = hook.name(), call = %call.name, "a hook replaced the result");
                    *result = value;
                    replaced = true;
                }
                Ok(After::Refuse(reason)) => return Err(refusal(reason)),
                Err(error) => return Err(refusal(format!("the hook failed: {error}"))),
            }
        }
        Ok(replaced)
    }
}

/// Whether `result` is a call's own result, which after-hooks see: not a
/// 2026-07-28 `input_required` round, nor a task's creation.
pub fn is_final(result: &Value) -> bool {
    let round = result.get("resultType").and_then(Value::as_str) == Some("input_required");
    !round && result.get("task").is_none()
}

#[cfg(test)]
mod tests;
