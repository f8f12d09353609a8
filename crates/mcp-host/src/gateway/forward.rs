//! Sending a client's request on to its upstream: the params of the
//! upstream hop, progress back, cancellation on, and the rounds of input
//! either era needs across the hop.

use std::sync::Arc;

use mcp_core::{HandlerResult, RequestContext, RequestError, RequestOptions, SessionLogLevel};
use mcp_schema::jsonrpc;
use mcp_schema::text_search::TextSearch;
use mcp_schema::{ErrorObject, error_codes};
use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tracing::{Instrument as _, Span};

use super::results::adapt_result;
use crate::params::Params;
use crate::rounds::{HeldCall, HeldCalls};
use crate::upstream::{Asked, Upstream};
use crate::upstream_meta::ModernMeta;

/// How many `input_required` rounds the host answers for a legacy client.
const MAX_ROUNDS: usize = 8;

/// Progress updates of one call waiting to be passed on, at most.
const PROGRESS_QUEUE: usize = 64;

/// The params of a request to the upstream, `_meta` first. The client's
/// own `_meta` members go on, but not the protocol's: those of the upstream
/// hop are the host's to set. To a 2026-07-28 upstream the request says the
/// upstream's revision, the host's identity, the downstream client's own
/// capabilities (so the upstream asks only what that client can answer)
/// and the log level it chose; a legacy upstream settled all that at
/// `initialize`. Written in one pass, without copying the params; the
/// protocol's `_meta` is kept from the last request when it is the same.
fn upstream_params(
    upstream: &Upstream,
    client: &mcp_client::Client,
    params: &Params,
    ctx: &RequestContext,
    capabilities: &mcp_schema::ClientCapabilities,
    hop: Option<&Span>,
) -> Result<Option<Box<RawValue>>, ErrorObject> {
    let modern = (!client.revision().is_legacy()).then(|| ModernMeta {
        revision: client.revision(),
        capabilities,
        log_level: (ctx.meta.log_level).or_else(|| SessionLogLevel::of(ctx.peer.extensions())),
    });
    // A traced hop carries its own span's context, not the caller's.
    let traced = hop.map(|span| crate::traces::with_context(span, &ctx.meta.other));
    let own = traced.as_ref().unwrap_or(&ctx.meta.other);
    let has_own = own.keys().any(|key| !key.starts_with(PROTOCOL_META_PREFIX));
    let meta = match (modern, has_own) {
        (None, false) if params.is_empty() => return Ok(None),
        (None, false) => UpstreamMeta::None,
        (Some(modern), false) => UpstreamMeta::Written(
            upstream
                .meta_cache()
                .get(modern)
                .map_err(ErrorObject::internal)?,
        ),
        (modern, true) => UpstreamMeta::Merged { modern, own },
    };
    let wire = UpstreamParams { meta, params };
    jsonrpc::to_raw_sized(&wire, wire.size_hint())
        .map(Some)
        .map_err(ErrorObject::internal)
}

/// The prefix of the `_meta` members the protocol itself defines.
const PROTOCOL_META_PREFIX: &str = "io.modelcontextprotocol/";

/// See [`upstream_params`].
struct UpstreamParams<'a> {
    meta: UpstreamMeta<'a>,
    params: &'a Params,
}

/// The `_meta` of [`UpstreamParams`].
enum UpstreamMeta<'a> {
    /// None: a legacy upstream, and the client said nothing of its own.
    None,
    /// The protocol's members only, written before.
    Written(Arc<RawValue>),
    /// The protocol's members, if any, and the client's own.
    Merged {
        modern: Option<ModernMeta<'a>>,
        own: &'a Map<String, Value>,
    },
}

impl UpstreamParams<'_> {
    /// About how long they are written: each member's key and value, with
    /// four bytes for its quotes, colon and comma, and the braces.
    fn size_hint(&self) -> usize {
        let meta = match &self.meta {
            UpstreamMeta::None => 0,
            UpstreamMeta::Written(text) => "_meta".len() + 4 + text.get().len(),
            UpstreamMeta::Merged { .. } => 256,
        };
        let members: usize = self
            .params
            .iter()
            .map(|(key, value)| key.len() + 4 + value.get().len())
            .sum();
        // The braces, and no comma after the last member.
        2 + (meta + members).saturating_sub(1)
    }
}

impl Serialize for UpstreamMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            UpstreamMeta::None => s.serialize_none(),
            UpstreamMeta::Written(text) => text.serialize(s),
            UpstreamMeta::Merged { modern, own } => {
                let mut map = s.serialize_map(None)?;
                if let Some(modern) = modern {
                    modern.serialize_members(&mut map)?;
                }
                for (key, value) in own.iter() {
                    if !key.starts_with(PROTOCOL_META_PREFIX) {
                        map.serialize_entry(key, value)?;
                    }
                }
                map.end()
            }
        }
    }
}

impl Serialize for UpstreamParams<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if !matches!(self.meta, UpstreamMeta::None) {
            map.serialize_entry("_meta", &self.meta)?;
        }
        for (key, value) in self.params.iter() {
            if key != "_meta" {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

/// Sends `method` to `upstream` for the downstream request `ctx`: progress
/// back, cancellation on (by drop), rounds of input answered for a legacy
/// client, errors passed back as the upstream gave them.
pub(super) async fn forward(
    upstream: &Arc<Upstream>,
    method: &str,
    params: Params,
    ctx: &RequestContext,
    held: &HeldCalls,
) -> HandlerResult {
    forward_declaring(
        upstream,
        method,
        params,
        ctx,
        held,
        ctx.client_capabilities(),
    )
    .await
}

/// [`forward`], telling a 2026-07-28 upstream that the client has
/// `capabilities` (what the host adds to bridge the eras).
pub(super) async fn forward_declaring(
    upstream: &Arc<Upstream>,
    method: &str,
    mut params: Params,
    ctx: &RequestContext,
    held: &HeldCalls,
    capabilities: &mcp_schema::ClientCapabilities,
) -> HandlerResult {
    let client = upstream.client()?;
    let upstream_modern = !client.revision().is_legacy();
    if !upstream_modern && !ctx.revision.is_legacy() {
        return forward_in_rounds(upstream, client, method, params, ctx, held).await;
    }
    let _permit = upstream.permit().await?;
    let _caller = upstream.register_caller(&ctx.peer, &ctx.negotiated, Asked::Request);
    // Where the host answers sampling or elicitation for this server, a
    // 2026-07-28 upstream is told the client can.
    let with_host = upstream_modern
        .then(|| upstream.capabilities_with_host(capabilities))
        .flatten();
    let declared = with_host.as_ref().unwrap_or(capabilities);
    let hop = upstream
        .keeps_traces()
        .then(|| crate::traces::hop_span(upstream.name(), method));
    let mut rounds = 0;
    loop {
        let wire = upstream_params(upstream, &client, &params, ctx, declared, hop.as_ref())?;
        let raw = in_span(send(upstream, &client, method, wire, ctx), hop.as_ref()).await?;
        let needs_answers = upstream_modern
            && (ctx.revision.is_legacy()
                || with_host.is_some()
                || upstream.host_sampling().is_some())
            && asks_for_input(raw.get());
        if !needs_answers {
            return Ok(if upstream_modern {
                adapt_result(raw, ctx.revision.is_legacy())
            } else {
                raw
            });
        }
        let mut result: Map<String, Value> = serde_json::from_str(raw.get())
            .map_err(|e| ErrorObject::internal(format!("{method}: {e}")))?;
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return Ok(adapt_result(raw, true));
        }
        rounds += 1;
        if rounds > MAX_ROUNDS {
            return Err(ErrorObject::internal(format!(
                "server {:?} asked for input more than {MAX_ROUNDS} times",
                upstream.name()
            )));
        }
        let questions = match result.remove("inputRequests") {
            Some(Value::Object(questions)) => questions,
            _ => Map::new(),
        };
        let (for_host, for_client): (Map<String, Value>, Map<String, Value>) =
            questions.into_iter().partition(|(_, question)| {
                upstream.host_answers_question(
                    ctx.client_capabilities(),
                    question.get("method").and_then(Value::as_str).unwrap_or(""),
                    question.get("params").unwrap_or(&Value::Null),
                )
            });
        if !ctx.revision.is_legacy() && (!for_client.is_empty() || for_host.is_empty()) {
            // A 2026-07-28 client answers a round with questions of its
            // own itself: the round goes to it as the upstream put it.
            return Ok(adapt_result(raw, false));
        }
        let mut answers = if for_client.is_empty() {
            Map::new()
        } else {
            answer_for_legacy_client(upstream, ctx, for_client).await?
        };
        for (key, question) in for_host {
            let method = question.get("method").and_then(Value::as_str).unwrap_or("");
            let params = question.get("params").cloned().unwrap_or(Value::Null);
            answers.insert(key, upstream.answer_question(method, params).await?);
        }
        params.set("inputResponses", &answers)?;
        match result.remove("requestState") {
            Some(state) => params.set("requestState", &state)?,
            None => drop(params.remove("requestState")),
        };
    }
}

/// Whether a 2026-07-28 result may be an `input_required` round: it
/// mentions the word (a quick search, before the result is read).
pub(super) fn asks_for_input(result: &str) -> bool {
    static INPUT_REQUIRED: TextSearch = TextSearch::new("\"input_required\"");
    INPUT_REQUIRED.is_in(result)
}

/// A 2026-07-28 client's request to a server of an earlier revision: run
/// as a call the host can hold, so that what the server asks mid-call
/// becomes `input_required` rounds (see [`crate::rounds`]); a retry that
/// names a held call resumes it.
async fn forward_in_rounds(
    upstream: &Arc<Upstream>,
    client: mcp_client::Client,
    method: &str,
    params: Params,
    ctx: &RequestContext,
    held: &HeldCalls,
) -> HandlerResult {
    if let Some(resumed) = held.resume(&params) {
        return held.drive(resumed?, &ctx.cancellation).await;
    }
    let (questions, asked) = mpsc::unbounded_channel();
    let caller = upstream.register_caller(&ctx.peer, &ctx.negotiated, Asked::Round(questions));
    let (upstream, request, method) = (Arc::clone(upstream), ctx.clone(), method.to_owned());
    // Owned, so it can outlive this request while the client answers; the
    // held call is cancelled upstream by dropping it.
    let call = Box::pin(async move {
        let _caller = caller;
        let _permit = upstream.permit().await?;
        let hop = upstream
            .keeps_traces()
            .then(|| crate::traces::hop_span(upstream.name(), &method));
        let wire = upstream_params(
            &upstream,
            &client,
            &params,
            &request,
            request.client_capabilities(),
            hop.as_ref(),
        )?;
        in_span(
            send(&upstream, &client, &method, wire, &request),
            hop.as_ref(),
        )
        .await
    });
    held.drive(HeldCall::new(call, asked), &ctx.cancellation)
        .await
}

/// `hop` answered within `span`, marked failed where it fails.
async fn in_span(hop: impl Future<Output = HandlerResult>, span: Option<&Span>) -> HandlerResult {
    let Some(span) = span else {
        return hop.await;
    };
    let result = hop.instrument(span.clone()).await;
    if let Err(error) = &result {
        crate::traces::failed(span, &error.message);
    }
    result
}

/// One request to the upstream, with its progress passed back. The
/// client's cancellation drops this future (the engine races every handler
/// against it), which cancels the request upstream.
async fn send(
    upstream: &Upstream,
    client: &mcp_client::Client,
    method: &str,
    wire: Option<Box<RawValue>>,
    ctx: &RequestContext,
) -> HandlerResult {
    let timeout = upstream.request_timeout();
    let mut options = RequestOptions::new().timeout(timeout);
    let mut progress_rx = None;
    if ctx.progress.is_enabled() {
        // Bounded: a server that floods progress while the client reads
        // slowly loses updates (each says where the work is; the next one
        // supersedes it), never memory.
        let (tx, rx) = mpsc::channel(PROGRESS_QUEUE);
        options = options.on_progress(move |p| {
            let _ = tx.try_send(p);
        });
        progress_rx = Some(rx);
    }
    let call = client.peer().request_raw(method, wire, options);
    let outcome = match progress_rx.as_mut() {
        None => call.await,
        Some(rx) => {
            tokio::pin!(call);
            let outcome = loop {
                tokio::select! {
                    outcome = &mut call => break outcome,
                    Some(p) = rx.recv() => {
                        ctx.progress.report(p.progress, p.total, p.message.as_deref()).await;
                    }
                }
            };
            while let Ok(p) = rx.try_recv() {
                ctx.progress
                    .report(p.progress, p.total, p.message.as_deref())
                    .await;
            }
            outcome
        }
    };
    let failed = |message: String| {
        upstream.call_failed(&message);
        ErrorObject::internal(message)
    };
    match outcome {
        // A result is an object; anything else cannot be passed on.
        Ok(raw) if raw.get().starts_with('{') => Ok(raw),
        Ok(raw) => {
            let mut shown: String = raw.get().chars().take(80).collect();
            if shown.len() < raw.get().len() {
                shown.push_str("...");
            }
            Err(failed(format!(
                "server {:?} answered {method} with a result that is not an object: {shown}",
                upstream.name()
            )))
        }
        Err(RequestError::Rpc(error)) => Err(error),
        Err(RequestError::Timeout) => {
            let message = format!(
                "server {:?} did not answer {method} within {timeout:?}",
                upstream.name()
            );
            upstream.call_failed(&message);
            Err(ErrorObject::new(error_codes::REQUEST_TIMEOUT, message))
        }
        Err(RequestError::ConnectionClosed) => Err(failed(match upstream.cut_off_because() {
            Some(why) => format!(
                "server {:?} was disconnected during {method}: {why}",
                upstream.name()
            ),
            None => format!(
                "server {:?} closed the connection during {method}",
                upstream.name()
            ),
        })),
        Err(other) => Err(ErrorObject::internal(format!(
            "server {:?}: {other}",
            upstream.name()
        ))),
    }
}

/// Asks a legacy client each question of an `input_required` round, as
/// the requests that revision has; the answers keyed like the questions.
pub(super) async fn answer_for_legacy_client(
    upstream: &Upstream,
    ctx: &RequestContext,
    questions: Map<String, Value>,
) -> Result<Map<String, Value>, ErrorObject> {
    let peer = &ctx.peer;
    let asked = questions.into_iter().map(|(key, question)| async move {
        let method = question
            .get("method")
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorObject::internal("an input request without a method"))?
            .to_owned();
        let params = question
            .get("params")
            .map(jsonrpc::to_raw)
            .transpose()
            .map_err(ErrorObject::internal)?;
        let started = std::time::Instant::now();
        let answer = peer
            .request_raw(&method, params, RequestOptions::new())
            .await
            .map_err(|e| match e {
                RequestError::Rpc(error) => error,
                other => ErrorObject::internal(format!("{method} to the client: {other}")),
            });
        // A row of its own, as a legacy server's request would have.
        upstream.audit_round_question(&method, started, (peer, &ctx.negotiated), &answer);
        let answer: Value = serde_json::from_str(answer?.get()).map_err(ErrorObject::internal)?;
        Ok::<_, ErrorObject>((key, answer))
    });
    futures::future::try_join_all(asked)
        .await
        .map(|answers| answers.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_protocols_meta_stays_on_its_hop() {
        let own: Map<String, Value> = serde_json::from_value(json!({
            "io.modelcontextprotocol/related-task": {"taskId": "t"},
            "com.example/trace": "abc"
        }))
        .unwrap();
        let params = Params::read_parsed(Some(r#"{"name":"t","arguments":{"a":1}}"#)).unwrap();
        let capabilities: mcp_schema::ClientCapabilities =
            serde_json::from_value(json!({"sampling": {}})).unwrap();
        let legacy = UpstreamParams {
            meta: UpstreamMeta::Merged {
                modern: None,
                own: &own,
            },
            params: &params,
        };
        assert_eq!(
            serde_json::to_value(&legacy).unwrap(),
            json!({"_meta": {"com.example/trace": "abc"}, "name": "t", "arguments": {"a": 1}})
        );
        let protocol = ModernMeta {
            revision: mcp_schema::ProtocolVersion::V2026_07_28,
            capabilities: &capabilities,
            log_level: Some(mcp_schema::LoggingLevel::Info),
        };
        let modern = UpstreamParams {
            meta: UpstreamMeta::Merged {
                modern: Some(protocol),
                own: &own,
            },
            params: &params,
        };
        let text = serde_json::to_string(&modern).unwrap();
        assert!(
            text.starts_with(
                r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","#
            ),
            "{text}"
        );
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value["_meta"],
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "mcp-host", "version": env!("CARGO_PKG_VERSION")},
                "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
                "io.modelcontextprotocol/logLevel": "info",
                "com.example/trace": "abc"
            })
        );
        assert_eq!(value["arguments"], json!({"a": 1}));

        // Without members of the client's own, the protocol's `_meta` as
        // written before, the same members.
        let cache = crate::upstream_meta::MetaCache::default();
        let written = UpstreamParams {
            meta: UpstreamMeta::Written(cache.get(protocol).unwrap()),
            params: &params,
        };
        let value = serde_json::to_value(&written).unwrap();
        let mut protocol_only = json!({});
        for (key, member) in modern_meta_of(&text) {
            if key.starts_with(PROTOCOL_META_PREFIX) {
                protocol_only[key] = member;
            }
        }
        assert_eq!(value["_meta"], protocol_only);
        assert_eq!(value["name"], "t");
        // Sized for what is written, no keys needing escapes.
        let text = serde_json::to_string(&written).unwrap();
        assert_eq!(written.size_hint(), text.len(), "{text}");
        let plain = UpstreamParams {
            meta: UpstreamMeta::None,
            params: &params,
        };
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            r#"{"name":"t","arguments":{"a":1}}"#
        );
        assert_eq!(
            plain.size_hint(),
            r#"{"name":"t","arguments":{"a":1}}"#.len()
        );
    }

    fn modern_meta_of(text: &str) -> Map<String, Value> {
        let value: Value = serde_json::from_str(text).unwrap();
        value["_meta"].as_object().unwrap().clone()
    }
}
