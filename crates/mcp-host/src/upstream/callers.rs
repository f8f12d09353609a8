//! The downstream requests in flight on an upstream, and the server's own
//! requests (sampling, elicitation, roots) sent back to one of their
//! clients: as a request to a legacy client, or as a question of an
//! `input_required` round for a 2026-07-28 one.

use std::sync::Arc;

use mcp_core::{Negotiated, Peer, RequestOptions};
use mcp_schema::ErrorObject;
use serde::Serialize;
use tokio::sync::mpsc;

use super::Upstream;
use mcp_core::sync::MutexExt as _;

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
        self.upstream
            .callers
            .locked()
            .1
            .retain(|c| c.key != self.key);
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
        let mut callers = self.callers.locked();
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

    /// Whose call a request the server makes now belongs to.
    pub(super) fn whose(&self) -> Whose {
        let callers = self.callers.locked();
        let mut reachable = callers.1.iter().rev().filter(|c| match &c.asked {
            Asked::Request => !c.peer.is_closed(),
            Asked::Round(questions) => !questions.is_closed(),
        });
        let Some(newest) = reachable.next() else {
            return Whose::Nobody;
        };
        let session = newest.peer.session_key();
        let mut others: Vec<usize> = reachable
            .map(|c| c.peer.session_key())
            .filter(|key| *key != session)
            .collect();
        others.sort_unstable();
        others.dedup();
        if others.is_empty() {
            Whose::One(
                newest.peer.clone(),
                newest.asked.clone(),
                Arc::clone(&newest.negotiated),
            )
        } else {
            Whose::Several(others.len() + 1)
        }
    }

    /// The peers of the downstream requests in flight on this server.
    pub(crate) fn caller_peers(&self) -> Vec<Peer> {
        self.callers
            .locked()
            .1
            .iter()
            .map(|c| c.peer.clone())
            .collect()
    }

    /// Sends a request the server made to the client whose call is in
    /// flight on it, where that client is known and declared what
    /// `declares` looks for, or refuses it clearly. The audit log records
    /// each such request, where there is one.
    pub(super) async fn ask_caller<P: Serialize + Sync, R: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        declares: impl Fn(&Negotiated) -> bool,
    ) -> Result<R, ErrorObject> {
        let started = std::time::Instant::now();
        let whose = self.whose();
        let answer = match &whose {
            Whose::One(peer, asked, negotiated) if declares(negotiated) => {
                ask(peer, asked, method, params).await
            }
            Whose::One(..) => Err(self.cannot_ask(
                method,
                "the client whose call is in flight on it did not declare that it can answer it",
            )),
            Whose::Nobody => Err(self.cannot_ask(method, "no client has a call in flight on it")),
            Whose::Several(n) => Err(self.cannot_ask(method, &several(*n))),
        };
        self.audit_asked(method, started, &whose, &answer, None);
        answer
    }

    /// The error for a request of the server's that no client is asked.
    pub(super) fn cannot_ask(&self, method: &str, why: &str) -> ErrorObject {
        ErrorObject::new(
            mcp_schema::error_codes::INTERNAL_ERROR,
            format!("{method} from server {:?}: {why}", self.config.name),
        )
    }

    /// Records a question of a 2026-07-28 round this server put in the
    /// call of `peer`'s client, which that (legacy) client answered.
    pub(crate) fn audit_round_question<R>(
        &self,
        method: &str,
        started: std::time::Instant,
        (peer, negotiated): (&Peer, &Arc<Negotiated>),
        answer: &Result<R, ErrorObject>,
    ) {
        let whose = Whose::One(peer.clone(), Asked::Request, Arc::clone(negotiated));
        self.audit_asked(method, started, &whose, answer, None);
    }

    /// Records a request the server made: whose call it was (where
    /// known), how it ended, and what the host's model did with it.
    pub(super) fn audit_asked<R>(
        &self,
        method: &str,
        started: std::time::Instant,
        whose: &Whose,
        answer: &Result<R, ErrorObject>,
        at_host: Option<(&crate::sampler::Answered, &str)>,
    ) {
        let Some(audit) = &self.options.audit else {
            return;
        };
        let mut record = crate::audit::AuditRecord {
            time_ms: crate::audit::now_ms() - started.elapsed().as_millis() as i64,
            method: method.to_owned(),
            server: Some(self.config.name.clone()),
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            ..Default::default()
        };
        if let Whose::One(peer, _, negotiated) = whose {
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
        if let Some((answered, why)) = at_host {
            record.target = answered.by.clone();
            record.answer = answered.answer;
            record.flags = answered.flags.map(str::to_owned);
            record.rule = Some(why.to_owned());
        }
        match answer {
            Ok(_) => record.outcome = "ok",
            Err(error) => {
                record.outcome = "error";
                record.error_code = Some(error.code);
                record.error_message = Some(error.message.clone());
            }
        }
        audit.record(record);
    }
}

/// Whose call a request the server makes belongs to.
pub(super) enum Whose {
    /// The one client with calls in flight on this server.
    One(Peer, Asked, Arc<Negotiated>),
    /// No call is in flight.
    Nobody,
    /// Calls of this many clients are in flight: on one shared connection
    /// nothing ties the server's request to the call that caused it.
    Several(usize),
}

/// Why a request cannot go to a client when `n` have calls in flight.
pub(super) fn several(n: usize) -> String {
    format!(
        "{n} clients have calls in flight on it, on one shared connection, and the host \
         cannot tell whose call asked; it asks no other user's client"
    )
}

/// Asks `peer` what the server asked: a request on a legacy session, or
/// a question of a 2026-07-28 call's `input_required` round.
async fn ask<P: Serialize + Sync, R: serde::de::DeserializeOwned>(
    peer: &Peer,
    asked: &Asked,
    method: &str,
    params: &P,
) -> Result<R, ErrorObject> {
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
