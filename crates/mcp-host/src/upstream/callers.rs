//! The downstream requests in flight on an upstream, and the server's own
//! requests (sampling, elicitation, roots) sent back to one of their
//! clients: as a request to a legacy client, or as a question of an
//! `input_required` round for a 2026-07-28 one.

use std::sync::Arc;

use mcp_core::{Negotiated, Peer, RequestOptions};
use mcp_schema::ErrorObject;
use serde::Serialize;
use tokio::sync::mpsc;

use super::{Upstream, lock};

/// A downstream request in flight on this upstream, which a server's own
/// request (sampling, elicitation) made meanwhile is sent back to.
pub(super) struct Caller {
    key: u64,
    peer: Peer,
    negotiated: Arc<Negotiated>,
    /// How this client is asked what the server asks.
    asked: Asked,
}

/// How a downstream client is asked what a server asks it mid-call.
#[derive(Clone)]
pub(crate) enum Asked {
    /// A legacy client: by a request on its session.
    Request,
    /// A 2026-07-28 client: in an `input_required` round of its call; the
    /// question goes to the call's handling, which answers it later.
    Round(mpsc::UnboundedSender<Question>),
}

/// A server's request to a 2026-07-28 client, waiting for its answer.
#[derive(Debug)]
pub(crate) struct Question {
    /// `sampling/createMessage`, `elicitation/create` or `roots/list`.
    pub(crate) method: String,
    /// Its params.
    pub(crate) params: serde_json::Value,
    /// Where the client's answer goes.
    pub(crate) answer: tokio::sync::oneshot::Sender<Result<serde_json::Value, ErrorObject>>,
}

/// Removes a registered caller when the call ends.
pub(crate) struct CallerGuard {
    upstream: Arc<Upstream>,
    key: u64,
}

impl Drop for CallerGuard {
    fn drop(&mut self) {
        lock(&self.upstream.callers).1.retain(|c| c.key != self.key);
    }
}

impl Upstream {
    /// Registers the downstream request behind a call, so that what the
    /// server asks meanwhile can be sent to that client.
    pub(crate) fn register_caller(
        self: &Arc<Self>,
        peer: &Peer,
        negotiated: &Arc<Negotiated>,
        asked: Asked,
    ) -> CallerGuard {
        let mut callers = lock(&self.callers);
        callers.0 += 1;
        let key = callers.0;
        callers.1.push(Caller {
            key,
            peer: peer.clone(),
            negotiated: Arc::clone(negotiated),
            asked,
        });
        CallerGuard {
            upstream: Arc::clone(self),
            key,
        }
    }

    /// The newest caller in flight whose client can be asked and declared
    /// what `declares` looks for.
    fn caller_for(
        &self,
        declares: impl Fn(&Negotiated) -> bool,
    ) -> Option<(Peer, Asked, Arc<Negotiated>)> {
        lock(&self.callers)
            .1
            .iter()
            .rev()
            .find(|c| {
                let reachable = match &c.asked {
                    Asked::Request => !c.peer.is_closed(),
                    Asked::Round(questions) => !questions.is_closed(),
                };
                reachable && declares(&c.negotiated)
            })
            .map(|c| (c.peer.clone(), c.asked.clone(), Arc::clone(&c.negotiated)))
    }

    /// The peers of the downstream requests in flight on this server.
    pub(crate) fn caller_peers(&self) -> Vec<Peer> {
        lock(&self.callers)
            .1
            .iter()
            .map(|c| c.peer.clone())
            .collect()
    }

    /// Sends a request the server made to the client whose call is in
    /// flight on it, or refuses it clearly. The audit log records each such
    /// request, where there is one.
    pub(super) async fn ask_caller<P: Serialize + Sync, R: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        declares: impl Fn(&Negotiated) -> bool,
    ) -> Result<R, ErrorObject> {
        let Some(audit) = &self.options.audit else {
            return self.ask_caller_now(method, params, declares).await;
        };
        let started = std::time::Instant::now();
        let mut record = crate::audit::AuditRecord {
            time_ms: crate::audit::now_ms(),
            method: method.to_owned(),
            server: Some(self.config.name.clone()),
            ..Default::default()
        };
        let asked = self.caller_for(&declares);
        if let Some((peer, _, negotiated)) = &asked {
            record.client = negotiated
                .client_info
                .as_ref()
                .map(|info| format!("{} {}", info.name, info.version));
            record.revision = negotiated
                .revision
                .map(|revision| revision.as_str().to_owned())
                .unwrap_or_default();
            record.session = peer
                .extensions()
                .get::<mcp_core::SessionName>()
                .map(|name| name.0.to_string());
            record.caller = peer
                .extensions()
                .get::<mcp_core::Owner>()
                .map(|owner| owner.as_str().to_owned());
        }
        let answer = self.ask_caller_now(method, params, declares).await;
        record.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        match &answer {
            Ok(_) => record.outcome = "ok",
            Err(error) => {
                record.outcome = "error";
                record.error_code = Some(error.code);
                record.error_message = Some(error.message.clone());
            }
        }
        audit.record(record);
        answer
    }

    async fn ask_caller_now<P: Serialize + Sync, R: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        declares: impl Fn(&Negotiated) -> bool,
    ) -> Result<R, ErrorObject> {
        let Some((peer, asked, _)) = self.caller_for(declares) else {
            return Err(ErrorObject::new(
                mcp_schema::error_codes::INTERNAL_ERROR,
                format!(
                    "{method} from server {:?}: no client with a call in flight on this server \
                     declared that it can answer it",
                    self.config.name
                ),
            ));
        };
        match asked {
            Asked::Request => peer
                .request(method, params, RequestOptions::new())
                .await
                .map_err(ErrorObject::from),
            Asked::Round(questions) => {
                let (answer, answered) = tokio::sync::oneshot::channel();
                let question = Question {
                    method: method.to_owned(),
                    params: serde_json::to_value(params).map_err(ErrorObject::internal)?,
                    answer,
                };
                questions
                    .send(question)
                    .map_err(|_| ErrorObject::internal("the client's call has ended"))?;
                let answer = answered.await.map_err(|_| {
                    ErrorObject::internal("the client did not answer before its call ended")
                })??;
                serde_json::from_value(answer).map_err(|e| {
                    ErrorObject::invalid_params(format!("the client's answer to {method}: {e}"))
                })
            }
        }
    }
}
