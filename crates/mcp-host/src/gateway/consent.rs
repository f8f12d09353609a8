//! The consent stage: a request the policy marks `ask` goes on only once
//! a person approved it, now or by an earlier grant.
//!
//! A legacy client that declared elicitation is sent `elicitation/create`
//! while the request waits; a 2026-07-28 client gets the question as an
//! `input_required` round, and its retry carries the answer. Approvers
//! the application registered (the terminal) are asked in the configured
//! order too. While a person thinks, a client that asked for progress
//! hears that the request waits, so it does not time out.

use std::time::Duration;

use mcp_core::RequestContext;
use mcp_schema::{ErrorObject, methods};
use serde_json::{Map, Value, json};

use super::target::{Definition, Target};
use crate::consent::shared::{self, GuardEntry};
use crate::consent::{
    APPROVAL_KEY, APPROVAL_STATE, Approval, ApprovalRequest, GrantKey, Pending, Scope,
    SessionGrants, form, read_answer,
};
use crate::host::Host;
use crate::params::Params;
use crate::policy::{self, Caller, Verdict};

/// How a request the policy marks `ask` goes on.
pub(super) enum Settled {
    /// It goes on; how it was approved, for the audit.
    Go(&'static str),
    /// The client is answered with this now (an approval round).
    Reply(Box<serde_json::value::RawValue>),
    /// It is refused; how, for the audit.
    Refused(ErrorObject, &'static str),
}

/// Settles a request the policy marks `ask`: by an earlier grant, by the
/// answer a retry carries, or by asking a person now. The arguments a
/// person edited replace those in `params`.
pub(super) async fn settle(
    host: &Host,
    verdict: &Verdict,
    target: &Target,
    method: &str,
    params: &mut Params,
    ctx: &RequestContext,
) -> Settled {
    let caller = Caller::of(ctx);
    let modern_key = format!(
        "{}\u{1f}{}",
        caller.name(),
        caller.client_name.as_deref().unwrap_or_default()
    );
    let Some(definition) = target.definition(host) else {
        return Settled::Refused(
            ErrorObject::internal("the server of that request is not running"),
            "unreachable",
        );
    };
    let key = definition.key.clone();
    let go_on = |approval: Approval, params: &mut Params| {
        apply(
            host,
            &caller,
            &modern_key,
            &definition,
            approval,
            params,
            ctx,
        )
    };
    if let Some(answer) = retried(host, &modern_key, method, target, params).await {
        return match answer {
            Ok(approval) => go_on(approval, params),
            Err(error) => Settled::Refused(error, "denied"),
        };
    }
    if granted(host, &caller, &modern_key, &key, ctx) {
        return Settled::Go("granted");
    }
    let mut request = approval_request(verdict, target, &definition, params);
    request.caller = caller.name().to_owned();
    request.client = caller.client_name.clone();
    let (options, waiting) = host.consent();
    let mut why_not = Vec::new();
    for approver in &options.order {
        let answer = if approver == "client" {
            if ctx.client_capabilities().elicitation.is_none() {
                why_not.push("the client declared no elicitation".to_owned());
                continue;
            }
            if !ctx.revision.is_legacy() {
                let pending = Pending {
                    caller: modern_key,
                    method: method.to_owned(),
                    asked: target.asked.clone(),
                    shared: false,
                };
                let token = waiting.hold(pending.clone());
                if let Some(shared) = host.shared_guard()
                    && shared::put_waiting(shared.as_ref(), &token, &pending).await
                {
                    waiting.shared(&token);
                }
                return round(&request, token);
            }
            let question = form(&request);
            let asking = ctx.peer.request::<_, Value>(
                methods::ELICITATION_CREATE,
                &question,
                // The wait below ends first, and cancels it.
                mcp_core::RequestOptions::new().timeout(options.timeout + Duration::from_secs(5)),
            );
            match waited(asking, (options.timeout, options.keepalive), ctx).await {
                Some(Ok(answer)) => read_answer(&answer),
                Some(Err(error)) => Err(error.to_string()),
                None => return timed_out(target, options.timeout),
            }
        } else {
            let Some(registered) = options
                .registered
                .iter()
                .find(|a| a.name() == approver && a.reachable())
            else {
                why_not.push(format!("no {approver} can be reached"));
                continue;
            };
            match waited(
                registered.ask(&request),
                (options.timeout, options.keepalive),
                ctx,
            )
            .await
            {
                Some(answer) => answer,
                None => return timed_out(target, options.timeout),
            }
        };
        match answer {
            Ok(approval) => return go_on(approval, params),
            Err(error) => {
                tracing::warn!(approver, %error, "an approver could not be asked");
                why_not.push(format!("the {approver} could not be asked: {error}"));
            }
        }
    }
    Settled::Refused(
        refusal(
            target,
            format!(
                "needs a person's approval ({}), and no approver could be asked ({})",
                verdict.decided_by(),
                why_not.join("; ")
            ),
        ),
        "unreachable",
    )
}

/// Who holds a grant for the session in the host's shared table: a
/// 2026-07-28 caller (`modern_key`), or a legacy session that has a name
/// the same on every instance (an HTTP session's id); `None` for a
/// session whose grants stay in it (stdio).
pub(super) fn grant_holder(ctx: &RequestContext, modern_key: &str) -> Option<String> {
    if !ctx.revision.is_legacy() {
        return Some(modern_key.to_owned());
    }
    let name = ctx.peer.extensions().get::<mcp_core::SessionName>()?;
    Some(crate::consent::session_holder(&name.0))
}

/// Whether an earlier grant covers the request: this session's, or one
/// for always.
fn granted(
    host: &Host,
    caller: &Caller,
    modern_key: &str,
    key: &GrantKey,
    ctx: &RequestContext,
) -> bool {
    let (options, waiting) = host.consent();
    let session = match grant_holder(ctx, modern_key) {
        Some(holder) => waiting.grants.has(&holder, key),
        None => ctx
            .peer
            .extensions()
            .get::<SessionGrants>()
            .is_some_and(|grants| grants.has("", key)),
    };
    session
        || options
            .store
            .as_ref()
            .is_some_and(|store| store.granted(caller.name(), key))
}

/// The answer a 2026-07-28 caller's retry carries for its approval round,
/// with the round's members taken out of `params`; `None` when the
/// request is no such retry.
async fn retried(
    host: &Host,
    modern_key: &str,
    method: &str,
    target: &Target,
    params: &mut Params,
) -> Option<Result<Approval, ErrorObject>> {
    let token = params
        .str("requestState")
        .filter(|state| state.starts_with(APPROVAL_STATE))?
        .into_owned();
    let responses = params.value("inputResponses");
    params.remove("requestState");
    params.remove("inputResponses");
    let expected = Pending {
        caller: modern_key.to_owned(),
        method: method.to_owned(),
        asked: target.asked.clone(),
        shared: false,
    };
    let (_, waiting) = host.consent();
    let mut found = waiting.take(&token);
    if let Some(shared) = host.shared_guard() {
        // Taken from the others too: a round they were given is good
        // once, wherever the retry went first.
        let elsewhere = shared::take_waiting(shared.as_ref(), &token).await;
        found = match (found, elsewhere) {
            (Some(here), None) if here.shared => None,
            (here, elsewhere) => here.or(elsewhere),
        };
    }
    if !found.is_some_and(|found| found.same(&expected)) {
        return Some(Err(ErrorObject::invalid_params(
            "requestState names no approval this request waits for (it was answered, or \
             waited too long); send the request again without it",
        )));
    }
    let answer = responses
        .as_ref()
        .and_then(|r| r.get(APPROVAL_KEY))
        .cloned()
        .unwrap_or(Value::Null);
    Some(read_answer(&answer).map_err(ErrorObject::invalid_params))
}

/// Goes on with a person's answer: a refusal, or a grant kept for its
/// scope and the arguments as edited.
fn apply(
    host: &Host,
    caller: &Caller,
    modern_key: &str,
    definition: &Definition,
    approval: Approval,
    params: &mut Params,
    ctx: &RequestContext,
) -> Settled {
    let key = definition.key.clone();
    let how = approval.as_str();
    if !approval.allowed {
        let error = ErrorObject::new(
            policy::DENIED,
            format!("the person asked refused {} {:?}", key.kind, key.name),
        )
        .with_data(json!({"decision": "ask", "answer": how}));
        return Settled::Refused(error, how);
    }
    if let Some(arguments) = approval.arguments
        && let Err(error) = params.set("arguments", &Value::Object(arguments))
    {
        return Settled::Refused(error, how);
    }
    let (options, waiting) = host.consent();
    let share = |entry| {
        if let Some(shared) = host.shared_guard() {
            shared::publish(shared, entry);
        }
    };
    let for_session = |key: GrantKey| match grant_holder(ctx, modern_key) {
        Some(holder) => {
            if let Some(shared) = host.shared_guard() {
                let (holder, key) = (holder.clone(), (&key).into());
                shared::publish(shared, GuardEntry::SessionGrant { holder, key });
            }
            waiting.grants.grant(&holder, key);
        }
        None => {
            ctx.peer
                .extensions()
                .get_or_insert_with(SessionGrants::default)
                .grant("", key);
        }
    };
    match approval.scope {
        Scope::Once => {}
        Scope::Session => for_session(key),
        Scope::Always => match &options.store {
            Some(store) => {
                // What the person saw is the definition from now on.
                if definition.changed.is_some() {
                    match store.repin(&key, &definition.text) {
                        Ok(()) => share(GuardEntry::Repin {
                            key: (&key).into(),
                            text: definition.text.clone(),
                        }),
                        Err(error) => {
                            tracing::warn!(%error, "the approved definition cannot be pinned");
                        }
                    }
                }
                match store.grant(caller.name(), &key) {
                    Ok(()) => share(GuardEntry::Grant {
                        caller: caller.name().to_owned(),
                        key: (&key).into(),
                    }),
                    Err(error) => {
                        tracing::warn!(%error, "a grant for always cannot be kept; it holds for the session");
                        for_session(key);
                    }
                }
            }
            None => for_session(key),
        },
    }
    Settled::Go(how)
}

/// What the person is shown about `target`.
fn approval_request(
    verdict: &Verdict,
    target: &Target,
    definition: &Definition,
    params: &Params,
) -> ApprovalRequest {
    let mut request = ApprovalRequest::new(&target.server, target.kind, &target.asked);
    request.server_identity = definition.key.server_identity.clone();
    request.description = definition.description.clone();
    request.annotations = definition.annotations.clone();
    request.arguments = match params.value("arguments") {
        Some(Value::Object(arguments)) => Some(arguments),
        _ => None,
    };
    request.reason = verdict.decided_by().to_owned();
    request.changes = definition.changed.clone();
    request
}

/// The `input_required` round that asks a 2026-07-28 client.
fn round(request: &ApprovalRequest, token: String) -> Settled {
    let mut questions = Map::new();
    questions.insert(
        APPROVAL_KEY.into(),
        json!({"method": methods::ELICITATION_CREATE, "params": form(request)}),
    );
    let round = json!({
        "resultType": "input_required",
        "inputRequests": questions,
        "requestState": token,
    });
    match mcp_schema::jsonrpc::to_raw(&round) {
        Ok(round) => Settled::Reply(round),
        Err(error) => Settled::Refused(ErrorObject::internal(error), "unreachable"),
    }
}

/// `asking`, or `None` after `timeout`; meanwhile, a client that asked
/// for progress hears every ten seconds that the request waits.
async fn waited<T>(
    asking: impl std::future::Future<Output = T>,
    (timeout, every): (Duration, Duration),
    ctx: &RequestContext,
) -> Option<T> {
    let keepalive = async {
        let mut ticks = tokio::time::interval(every);
        ticks.tick().await;
        let mut waited = 0.0;
        loop {
            ticks.tick().await;
            waited += every.as_secs_f64();
            ctx.progress
                .report(waited, None, Some("waiting for a person's approval"))
                .await;
        }
    };
    tokio::select! {
        answer = tokio::time::timeout(timeout, asking) => answer.ok(),
        _ = keepalive => None,
    }
}

fn timed_out(target: &Target, timeout: Duration) -> Settled {
    Settled::Refused(
        refusal(
            target,
            format!(
                "was not approved within {} s: the request is refused",
                timeout.as_secs()
            ),
        ),
        "timeout",
    )
}

fn refusal(target: &Target, why: String) -> ErrorObject {
    ErrorObject::new(
        policy::DENIED,
        format!(
            "{} {:?} of server {:?} {why}",
            target.kind.as_str(),
            target.asked,
            target.server
        ),
    )
    .with_data(json!({"decision": "ask", "server": target.server}))
}
