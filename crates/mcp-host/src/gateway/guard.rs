//! The policy stage of the request path: each request's target decided
//! for its caller, refused where the policy says so, and the lists each
//! caller reads without what it is denied.

use mcp_core::RequestContext;
use mcp_schema::ErrorObject;
use serde_json::{Value, json};

use super::pages::ListOf;
use super::target::Target;
use crate::catalog::{Catalog, Route};
use crate::consent::OnChange;
use crate::host::Host;
use crate::params::Params;
use crate::policy::{self, Asked, Caller, Decision, Hints, Kind, Policy, Verdict};
use crate::secrets::{self, SecretScan};
use crate::upstream::Item;

/// What decides a request to an item whose definition changed since it
/// was pinned.
pub(super) const CHANGED: &str = "its definition changed since it was pinned";

/// The policy's verdict on `target` for the caller of `ctx`, and for an
/// item whose definition changed since it was pinned, what
/// `[guard] changed` says; `None` when everything is allowed (nothing is
/// decided, nothing recorded).
pub(super) fn decide(
    host: &Host,
    target: &Target,
    params: &Params,
    ctx: &RequestContext,
    view: Option<&str>,
) -> Option<Verdict> {
    let policy = host.policy();
    let changed = target.changed(host);
    if policy.allows_everything() && !changed {
        return None;
    }
    let caller = Caller::through(ctx, view);
    let mut verdict = decide_for(host, &policy, target, params, &caller);
    if changed && verdict.decision != Decision::Deny {
        let decision = match host.consent().0.on_change {
            OnChange::Ask => Decision::Ask,
            OnChange::Hide => Decision::Deny,
            OnChange::Warn => return Some(verdict),
        };
        verdict = Verdict {
            decision,
            rule: Some(CHANGED.into()),
        };
    }
    Some(verdict)
}

/// The policy's verdict on `target`, with `params`' arguments where a
/// rule reads them.
fn decide_for(
    host: &Host,
    policy: &Policy,
    target: &Target,
    params: &Params,
    caller: &Caller,
) -> Verdict {
    let hints = policy.reads_hints().then(|| target.hints(host)).flatten();
    let arguments = policy
        .reads_arguments()
        .then(|| params.value("arguments").unwrap_or(Value::Null));
    policy.decide(&Asked {
        caller,
        server: &target.server,
        kind: target.kind,
        name: &target.route.original,
        hints,
        arguments: arguments.as_ref(),
    })
}

/// Refuses a request whose arguments a person edited into what the
/// policy denies (the policy decided the arguments as first sent).
pub(super) fn recheck_edited(
    host: &Host,
    target: &Target,
    params: &Params,
    ctx: &RequestContext,
    view: Option<&str>,
) -> Result<(), ErrorObject> {
    let policy = host.policy();
    if !policy.reads_arguments() {
        return Ok(());
    }
    let verdict = decide_for(host, &policy, target, params, &Caller::through(ctx, view));
    enforce(&verdict, target)
}

/// Lets the request go on, or refuses it with an error that names the
/// rule that decided.
pub(super) fn enforce(verdict: &Verdict, target: &Target) -> Result<(), ErrorObject> {
    // `ask` is settled by the consent stage.
    if verdict.decision != Decision::Deny {
        return Ok(());
    }
    let message = format!(
        "{} {:?} of server {:?} is denied by {}",
        target.kind.as_str(),
        target.asked,
        target.server,
        verdict.decided_by()
    );
    let data = json!({
        "decision": verdict.decision,
        "rule": verdict.rule.as_deref(),
        "server": target.server,
    });
    Err(ErrorObject::new(policy::DENIED, message).with_data(data))
}

/// What one caller may see of the lists.
pub(super) struct Visible<'a> {
    policy: std::sync::Arc<Policy>,
    catalog: &'a Catalog,
    caller: Caller,
    /// The upstreams' config names, by index.
    servers: Vec<Option<String>>,
    /// The items held back because their definitions changed, by
    /// upstream index, where `[guard] changed = "hide"`.
    changed: Vec<Vec<(&'static str, String)>>,
    /// Whether each upstream is trusted (its annotations believed), by
    /// index.
    trusted: Vec<bool>,
}

/// Whether the lists must be filtered at all: a policy that may deny, or
/// changed definitions to hide.
pub(super) fn filters_lists(host: &Host) -> bool {
    !host.policy().allows_everything()
        || (host.pins().is_some() && host.consent().0.on_change == OnChange::Hide)
}

impl<'a> Visible<'a> {
    /// The lists of `catalog` as `caller` may see them.
    pub(super) fn new(host: &'a Host, catalog: &'a Catalog, caller: Caller) -> Self {
        let hide = host.pins().is_some() && host.consent().0.on_change == OnChange::Hide;
        let slots = host.upstream_slots();
        let trusted = slots
            .iter()
            .map(|u| u.as_ref().is_some_and(|u| u.config.trusted))
            .collect();
        let changed = slots
            .iter()
            .map(|upstream| match (upstream, host.pins()) {
                (Some(upstream), Some(pins)) if hide => upstream.listing().still_changed(
                    pins,
                    &upstream.config.name,
                    &upstream.config.identity(),
                ),
                _ => Vec::new(),
            })
            .collect();
        Visible {
            policy: host.policy_now(),
            catalog,
            caller,
            servers: host.upstream_names(),
            changed,
            trusted,
        }
    }

    /// Whether `item` of `list` is shown: not denied. Templates are
    /// shown; each URI read through one is decided when it is read.
    pub(super) fn shows(&self, list: ListOf, item: &Item) -> bool {
        let text = |key: &str| item.get(key).and_then(Value::as_str);
        let found: Option<(Kind, Route)> = match list {
            ListOf::Tools => text("name")
                .and_then(|name| self.catalog.tool(name).cloned())
                .map(|route| (Kind::Tool, route)),
            ListOf::Prompts => text("name")
                .and_then(|name| self.catalog.prompt(name).cloned())
                .map(|route| (Kind::Prompt, route)),
            ListOf::Resources => text("uri")
                .and_then(|uri| self.catalog.resource(uri))
                .map(|route| (Kind::Resource, route)),
            ListOf::Templates => return true,
        };
        let Some((kind, route)) = found else {
            return true;
        };
        let held = self.changed.get(route.upstream).is_some_and(|changed| {
            changed
                .iter()
                .any(|(k, name)| *k == kind.as_str() && *name == route.original)
        });
        if held {
            return false;
        }
        let server = self
            .servers
            .get(route.upstream)
            .and_then(Option::as_deref)
            .unwrap_or_default();
        let hints = (kind == Kind::Tool && self.policy.reads_hints()).then(|| {
            let trusted = self.trusted.get(route.upstream).copied().unwrap_or(false);
            Hints::believed(item.get("annotations"), trusted)
        });
        !self.policy.hides(&Asked {
            caller: &self.caller,
            server,
            kind,
            name: &route.original,
            hints,
            arguments: None,
        })
    }
}

/// A target whose server's results are scanned for secrets (see
/// [`crate::secrets`]).
pub(super) struct SecretsOf {
    scan: SecretScan,
    what: String,
}

impl SecretsOf {
    /// The scan of `target`'s results; `None` where they are not scanned.
    pub(super) fn of(host: &Host, target: &Target) -> Option<SecretsOf> {
        let scan = host.secret_scan(target.route.upstream);
        (scan != SecretScan::Off).then(|| SecretsOf {
            scan,
            what: format!(
                "{} {:?} of server {:?}",
                target.kind.as_str(),
                target.asked,
                target.server
            ),
        })
    }

    /// `result`, with its secrets replaced, or refused.
    pub(super) fn apply(
        self,
        host: &Host,
        result: Box<serde_json::value::RawValue>,
    ) -> Result<Box<serde_json::value::RawValue>, ErrorObject> {
        let own = host.own_secrets();
        match self.scan {
            SecretScan::Off => Ok(result),
            SecretScan::Redact => {
                let (redacted, kinds) = secrets::redact(result, &own);
                if !kinds.is_empty() {
                    tracing::warn!(
                        "{} answered what looks like a secret ({}); redacted",
                        self.what,
                        kinds.join(", ")
                    );
                }
                Ok(redacted)
            }
            SecretScan::Block => {
                let kinds = secrets::found_in(result.get(), &own);
                if kinds.is_empty() {
                    return Ok(result);
                }
                tracing::warn!(
                    "{} answered what looks like a secret ({}); refused",
                    self.what,
                    kinds.join(", ")
                );
                Err(ErrorObject::new(
                    policy::DENIED,
                    format!(
                        "the result of {} holds what looks like a secret ({}); this host refuses \
                         such results ([guard] secrets = \"block\")",
                        self.what,
                        kinds.join(", ")
                    ),
                ))
            }
        }
    }
}
