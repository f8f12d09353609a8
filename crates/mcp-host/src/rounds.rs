//! A 2026-07-28 client's call to a server of an earlier revision, where
//! the server asks the client something in the middle of the call
//! (sampling, elicitation). The later revision has no requests from server
//! to client: it answers `input_required` and the client sends the call
//! again with the answers. So the host keeps the upstream call running,
//! turns the server's question into an `input_required` round whose
//! `requestState` names the held call, and when the client comes back,
//! hands the answer to the waiting server and goes on waiting for the
//! call's end (or its next question).
//!
//! A held call lives at most [`HELD_TTL`] between rounds; one the client
//! abandons is dropped then, which cancels it upstream.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use mcp_core::HandlerResult;
use mcp_schema::{ErrorObject, error_codes};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::expiring::Expiring;
use crate::params::Params;
use crate::upstream::Question;

/// How `requestState` values of held calls begin.
pub(crate) const STATE_PREFIX: &str = "mcp-host/held:";

/// How long a held call waits for the client to come back.
pub(crate) const HELD_TTL: Duration = Duration::from_secs(300);

/// Held calls at most; the oldest go first beyond it.
const MAX_HELD: usize = 1024;

type Answer = oneshot::Sender<Result<Value, ErrorObject>>;

/// An upstream call in progress and the questions it asked.
pub(crate) struct HeldCall {
    call: Pin<Box<dyn Future<Output = HandlerResult> + Send>>,
    questions: mpsc::UnboundedReceiver<Question>,
    waiting: BTreeMap<String, Answer>,
    asked: u64,
}

impl HeldCall {
    /// A call whose server's questions arrive on `questions`.
    pub(crate) fn new(
        call: Pin<Box<dyn Future<Output = HandlerResult> + Send>>,
        questions: mpsc::UnboundedReceiver<Question>,
    ) -> HeldCall {
        HeldCall {
            call,
            questions,
            waiting: BTreeMap::new(),
            asked: 0,
        }
    }
}

/// The held calls of a host, by `requestState`.
pub(crate) struct HeldCalls {
    calls: Expiring<HeldCall>,
}

impl Default for HeldCalls {
    fn default() -> Self {
        HeldCalls {
            calls: Expiring::new(STATE_PREFIX, HELD_TTL, MAX_HELD),
        }
    }
}

impl HeldCalls {
    fn hold(&self, call: HeldCall) -> String {
        self.calls.keep(call)
    }

    /// The held call a retry's `requestState` names, with the client's
    /// answers handed to the questions waiting for them. `None` when the
    /// state is not one of the host's.
    pub(crate) fn resume(&self, params: &Params) -> Option<Result<HeldCall, ErrorObject>> {
        let token = params
            .str("requestState")
            .filter(|s| s.starts_with(STATE_PREFIX))?;
        let Some(mut call) = self.calls.take(&token) else {
            return Some(Err(ErrorObject::invalid_params(
                "requestState names no call in progress (it ended, or waited too long); \
                 send the request again without it",
            )));
        };
        let responses = params.value("inputResponses");
        let responses = responses.as_ref().and_then(Value::as_object);
        for (key, answer) in std::mem::take(&mut call.waiting) {
            let given = responses.and_then(|r| r.get(&key)).cloned();
            let _ = answer.send(given.ok_or_else(|| {
                ErrorObject::invalid_params(format!("the client gave no answer to {key:?}"))
            }));
        }
        Some(Ok(call))
    }

    /// Runs a call until it ends, or until its server asks something: then
    /// the call is held and the client gets the questions as an
    /// `input_required` round. `cancelled` is the client's cancellation of
    /// the request being answered now.
    pub(crate) async fn drive(
        &self,
        mut call: HeldCall,
        cancelled: &CancellationToken,
    ) -> HandlerResult {
        enum Event {
            Done(HandlerResult),
            Asked(Question),
            Cancelled,
        }
        let event = tokio::select! {
            result = &mut call.call => Event::Done(result),
            Some(question) = call.questions.recv() => Event::Asked(question),
            _ = cancelled.cancelled() => Event::Cancelled,
        };
        let first = match event {
            Event::Done(result) => return result,
            Event::Cancelled => {
                return Err(ErrorObject::new(
                    error_codes::REQUEST_CANCELLED,
                    "the client cancelled the request",
                ));
            }
            Event::Asked(question) => question,
        };
        let mut asked = Map::new();
        let mut next = Some(first);
        while let Some(question) = next {
            call.asked += 1;
            let key = format!("host-{}", call.asked);
            asked.insert(
                key.clone(),
                json!({"method": question.method, "params": question.params}),
            );
            call.waiting.insert(key, question.answer);
            next = call.questions.try_recv().ok();
        }
        let token = self.hold(call);
        mcp_schema::jsonrpc::to_raw(&json!({
            "resultType": "input_required",
            "inputRequests": asked,
            "requestState": token,
        }))
        .map_err(ErrorObject::internal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(method: &str) -> (Question, oneshot::Receiver<Result<Value, ErrorObject>>) {
        let (answer, answered) = oneshot::channel();
        (
            Question {
                method: method.to_owned(),
                params: json!({"m": method}),
                answer,
            },
            answered,
        )
    }

    #[tokio::test]
    async fn a_question_becomes_a_round_and_the_answer_goes_back() {
        let held = HeldCalls::default();
        let (tx, rx) = mpsc::unbounded_channel();
        let (q, answered) = question("sampling/createMessage");
        tx.send(q).unwrap();
        let call = HeldCall::new(
            Box::pin(async move {
                let answer = answered.await.unwrap()?;
                mcp_schema::jsonrpc::to_raw(&json!({"got": answer})).map_err(ErrorObject::internal)
            }),
            rx,
        );
        let never = CancellationToken::new();
        let round: Value =
            serde_json::from_str(held.drive(call, &never).await.unwrap().get()).unwrap();
        assert_eq!(round["resultType"], "input_required");
        assert_eq!(
            round["inputRequests"]["host-1"],
            json!({"method": "sampling/createMessage", "params": {"m": "sampling/createMessage"}})
        );
        let state = round["requestState"].as_str().unwrap();
        assert!(state.starts_with(STATE_PREFIX));

        let retry = params(json!({
            "requestState": state,
            "inputResponses": {"host-1": {"role": "assistant"}},
        }));
        let call = held.resume(&retry).unwrap().unwrap();
        let done: Value =
            serde_json::from_str(held.drive(call, &never).await.unwrap().get()).unwrap();
        assert_eq!(done, json!({"got": {"role": "assistant"}}));
        // The state is used up.
        assert!(held.resume(&retry).unwrap().is_err());
        // Not the host's state: none of its business.
        let foreign = params(json!({"requestState": "upstream-state"}));
        assert!(held.resume(&foreign).is_none());
    }

    fn params(value: Value) -> Params {
        Params::read_parsed(Some(&value.to_string())).unwrap()
    }

    #[tokio::test]
    async fn a_missing_answer_is_an_error_for_the_waiting_server() {
        let held = HeldCalls::default();
        let (tx, rx) = mpsc::unbounded_channel();
        let (q, answered) = question("elicitation/create");
        tx.send(q).unwrap();
        let call = HeldCall::new(
            Box::pin(async move {
                match answered.await.unwrap() {
                    Ok(_) => Err(ErrorObject::internal("unexpected answer")),
                    Err(e) => Err(e),
                }
            }),
            rx,
        );
        let never = CancellationToken::new();
        let round: Value =
            serde_json::from_str(held.drive(call, &never).await.unwrap().get()).unwrap();
        let retry = params(json!({"requestState": round["requestState"]}));
        let call = held.resume(&retry).unwrap().unwrap();
        let error = held.drive(call, &never).await.unwrap_err();
        assert!(error.message.contains("no answer"), "{error:?}");
    }
}
