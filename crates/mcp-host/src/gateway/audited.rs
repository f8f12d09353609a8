//! The audit record of a request the gateway answers: begun when the
//! request arrives, finished with its outcome, and recorded as cancelled
//! when the request is dropped unanswered (the client cancelled it or
//! left).

use std::time::Instant;

use mcp_core::{HandlerResult, Owner, RequestContext, SessionName};
use mcp_schema::methods;

use super::target::Target;
use crate::audit::{AuditLog, AuditRecord, now_ms, round_digest};
use crate::host::Host;
use crate::params::Params;
use crate::policy::Verdict;

/// A request's record while it is answered.
pub(super) struct Audited {
    log: AuditLog,
    record: Option<AuditRecord>,
    started: Instant,
    /// Whether the request is of a revision before 2026-07-28, which has
    /// no `input_required` rounds.
    legacy: bool,
}

impl Audited {
    /// Begins the record of a request of `method` with `params` (as the
    /// gateway read them; none when they are not an object): who asks,
    /// what, and which server it goes to.
    pub(super) fn begin(
        log: &AuditLog,
        host: &Host,
        method: &str,
        params: Option<&Params>,
        target: Option<&Target>,
        verdict: Option<&Verdict>,
        ctx: &RequestContext,
    ) -> Audited {
        let empty = Params::default();
        let params = params.unwrap_or(&empty);
        let target_name = params
            .str("name")
            .or_else(|| params.str("uri"))
            .map(|t| t.into_owned());
        let settings = log.settings();
        let arguments = settings
            .arguments
            .then(|| params.raw("arguments").map(|a| a.get()))
            .flatten();
        let record = AuditRecord {
            time_ms: now_ms(),
            method: method.to_owned(),
            target: target_name,
            server: target.map(|t| t.server.clone()),
            decision: verdict.map(|v| v.decision.as_str()),
            rule: verdict.map(|v| v.decided_by().to_owned()),
            flags: target.and_then(|t| flags_of(host, t)),
            caller: ctx
                .extensions()
                .get::<Owner>()
                .map(|owner| owner.as_str().to_owned()),
            client: ctx
                .negotiated
                .client_info
                .as_ref()
                .map(|info| format!("{} {}", info.name, info.version)),
            session: ctx
                .peer
                .extensions()
                .get::<SessionName>()
                .map(|name| name.0.to_string()),
            revision: ctx.revision.as_str().to_owned(),
            outcome: "cancelled",
            arguments: arguments.map(|a| truncated(a, settings.max_argument_bytes).to_owned()),
            arguments_bytes: arguments.map(|a| i64::try_from(a.len()).unwrap_or(i64::MAX)),
            answers_round: (!ctx.revision.is_legacy())
                .then(|| params.str("requestState").map(|state| round_digest(&state)))
                .flatten(),
            ..AuditRecord::default()
        };
        Audited {
            log: log.clone(),
            record: Some(record),
            started: Instant::now(),
            legacy: ctx.revision.is_legacy(),
        }
    }

    /// Records how the request ended, and how a person answered where
    /// one was asked.
    pub(super) fn finish(mut self, result: &HandlerResult, answered: Option<&'static str>) {
        let Some(record) = self.record.as_mut() else {
            return;
        };
        record.answer = answered;
        match result {
            Ok(raw) if record.method == methods::TOOLS_CALL && is_tool_error(raw.get()) => {
                record.outcome = "tool_error";
            }
            Ok(raw) => {
                record.outcome = "ok";
                if !self.legacy {
                    record.asks_round = round_asked(raw.get());
                }
            }
            Err(error) => {
                record.outcome = "error";
                record.error_code = Some(error.code);
                record.error_message = Some(error.message.clone());
            }
        }
    }
}

impl Drop for Audited {
    fn drop(&mut self) {
        if let Some(mut record) = self.record.take() {
            record.duration_ms = self.started.elapsed().as_secs_f64() * 1000.0;
            self.log.record(record);
        }
    }
}

/// The digest of the `requestState` an `input_required` result asks its
/// retry to bring back, if `result` is one.
fn round_asked(result: &str) -> Option<String> {
    if !super::forward::asks_for_input(result) {
        return None;
    }
    let (mut input_required, mut state) = (false, None);
    for member in mcp_schema::json_scan::Members::of(result)? {
        if member.key_is("resultType") {
            input_required = member.value == "\"input_required\"";
        } else if member.key_is("requestState") {
            state = serde_json::from_str::<String>(member.value).ok();
        }
    }
    state
        .filter(|_| input_required)
        .map(|state| round_digest(&state))
}

/// What `target`'s definition holds that is aimed at the model, if
/// anything.
fn flags_of(host: &Host, target: &Target) -> Option<String> {
    let listing = host.upstream(target.route.upstream).ok()?.listing();
    let flags = listing.flags(target.kind.as_str(), &target.route.original);
    (!flags.is_empty()).then(|| {
        let names: Vec<&str> = flags.iter().map(|f| f.as_str()).collect();
        names.join(",")
    })
}

/// Whether a tool's result says it failed (`isError: true`), found by a
/// scan of its top-level members rather than a second parse.
pub(super) fn is_tool_error(result: &str) -> bool {
    mcp_schema::json_scan::Members::of(result)
        .is_some_and(|mut members| members.any(|m| m.key_is("isError") && m.value == "true"))
}

/// The longest start of `text` of at most `max` bytes, cut at a character.
fn truncated(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_error_is_found_at_the_top_level_only() {
        assert!(is_tool_error(r#"{"content":[],"isError":true}"#));
        assert!(is_tool_error(r#"{"isError" : true }"#));
        assert!(!is_tool_error(r#"{"content":[],"isError":false}"#));
        assert!(!is_tool_error(r#"{"content":[{"isError":true}]}"#));
        assert!(!is_tool_error(r#"{"content":[]}"#));
        assert!(!is_tool_error("[]"));
    }

    #[test]
    fn arguments_are_cut_at_a_character() {
        assert_eq!(truncated("abc", 5), "abc");
        assert_eq!(truncated("aéb", 2), "a");
        assert_eq!(truncated("aéb", 3), "aé");
    }
}
