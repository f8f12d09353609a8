//! What a tool, prompt or resource handler gets: the request's context plus
//! the server's helpers (progress, logging, asking the client for input).
//!
//! Asking the client for input works the same in both eras. In the legacy
//! era the question goes to the client as a request tied to the call. In the
//! modern era the handler's `?` turns a missing answer into an
//! `input_required` result; the client answers and retries, the handler runs
//! again and this time finds the answer. Answers from earlier rounds travel
//! in a signed `requestState`, so handlers need not keep state anywhere.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_core::{RequestContext, RequestError, RequestOptions, SessionLogLevel};
use mcp_schema::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ErrorObject, InputRequest, InputRequests, InputResponses, ListRootsResult,
    LoggingLevel, LoggingMessageNotificationParams, ProtocolVersion, error_codes, methods,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cursor::Signer;
use mcp_core::sync::MutexExt as _;

/// Why a handler did not produce its result.
#[derive(Debug, Clone, PartialEq)]
pub enum HandlerError {
    /// The work failed. A tool reports it as a result with `isError: true`
    /// (the model can read it); elsewhere it is an internal error.
    Failed(String),
    /// The request itself is wrong: answered with this JSON-RPC error.
    Protocol(ErrorObject),
    /// The client must answer the input requests recorded on the context
    /// first (modern era). Produced by [`Context::elicit`] and friends.
    InputRequired,
    /// The call should go on as a task from here (a
    /// [`deferred_task`](crate::ToolDef::deferred_task) tool). Produced by
    /// [`Context::continue_as_task`].
    ContinueAsTask,
}

impl HandlerError {
    /// A failure with this message.
    pub fn failed(message: impl std::fmt::Display) -> Self {
        HandlerError::Failed(message.to_string())
    }

    /// A -32602 invalid-params error.
    pub fn invalid_params(message: impl std::fmt::Display) -> Self {
        HandlerError::Protocol(ErrorObject::invalid_params(message))
    }
}

impl From<ErrorObject> for HandlerError {
    fn from(e: ErrorObject) -> Self {
        HandlerError::Protocol(e)
    }
}

impl From<RequestError> for HandlerError {
    fn from(e: RequestError) -> Self {
        HandlerError::Failed(e.to_string())
    }
}

impl std::fmt::Display for HandlerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HandlerError::Failed(m) => f.write_str(m),
            HandlerError::Protocol(e) => write!(f, "{e}"),
            HandlerError::InputRequired => f.write_str("input required from the client"),
            HandlerError::ContinueAsTask => f.write_str("the call continues as a task"),
        }
    }
}

impl std::error::Error for HandlerError {}

/// The context of one tool call, prompt request or resource read.
#[derive(Clone)]
pub struct Context {
    /// The engine's view of the request.
    pub request: RequestContext,
    /// The server that made this context, with its type erased: the
    /// handler types name `Context` and the server holds the handlers, so
    /// naming the server here would tie this module and the server's into a
    /// circle. [`Context::server`] gives it back typed.
    server: ErasedServer,
    round: Arc<InputRound>,
    task_deferred: bool,
}

/// The server behind a [`Context`], as the server module hands it over.
pub(crate) type ErasedServer = Arc<dyn std::any::Any + Send + Sync>;

/// The modern-era exchange of one request: answers received so far, what
/// this round asks, and the handler's own state.
#[derive(Default)]
pub(crate) struct InputRound {
    responses: InputResponses,
    asked: Mutex<InputRequests>,
    state: Mutex<Option<Value>>,
}

/// What a sealed `requestState` holds.
#[derive(Serialize, Deserialize)]
struct SealedState {
    /// Which request this state belongs to (method and name).
    purpose: String,
    /// Unix time after which the state is refused.
    expires: u64,
    /// Answers of earlier rounds.
    responses: InputResponses,
    /// The handler's own state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state: Option<Value>,
}

const STATE_PURPOSE: &str = "request-state";

/// Which request a round of input belongs to: its method and the name of
/// the tool, prompt or resource, written `method:name` in sealed state.
/// Only written out when state is sealed or checked.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Purpose<'a> {
    /// The request's method, `tools/call` say.
    pub(crate) method: &'static str,
    /// The tool or prompt name, or the resource URI.
    pub(crate) name: &'a str,
}

impl Purpose<'_> {
    /// Whether `written` is this purpose as sealed state writes it.
    fn is(&self, written: &str) -> bool {
        written
            .strip_prefix(self.method)
            .and_then(|rest| rest.strip_prefix(':'))
            == Some(self.name)
    }
}

impl std::fmt::Display for Purpose<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.method, self.name)
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

impl InputRound {
    /// Opens the round of a request: verifies `requestState` (tampered,
    /// expired or foreign state is a -32602) and merges its answers with
    /// the ones sent now.
    pub(crate) fn open(
        signer: &Signer,
        purpose: Purpose<'_>,
        request_state: Option<&str>,
        responses: Option<InputResponses>,
    ) -> Result<InputRound, ErrorObject> {
        let mut round = InputRound::default();
        if let Some(token) = request_state {
            let sealed: SealedState = signer
                .open(STATE_PURPOSE, token)
                .and_then(|bytes| serde_json::from_slice(&bytes).ok())
                .ok_or_else(|| ErrorObject::invalid_params("requestState failed verification"))?;
            if !purpose.is(&sealed.purpose) {
                return Err(ErrorObject::invalid_params(
                    "requestState belongs to another request",
                ));
            }
            if sealed.expires < now_secs() {
                return Err(ErrorObject::invalid_params(
                    "requestState has expired; start again",
                ));
            }
            round.responses = sealed.responses;
            round.state = Mutex::new(sealed.state);
        }
        round.responses.extend(responses.unwrap_or_default());
        Ok(round)
    }

    /// The `input_required` result's parts: the questions and the sealed state.
    pub(crate) fn close(
        &self,
        signer: &Signer,
        purpose: Purpose<'_>,
        ttl: Duration,
    ) -> (InputRequests, String) {
        let asked = std::mem::take(&mut *self.asked.locked());
        let sealed = SealedState {
            purpose: purpose.to_string(),
            expires: now_secs() + ttl.as_secs(),
            responses: self.responses.clone(),
            state: self.state.locked().clone(),
        };
        let bytes = serde_json::to_vec(&sealed).unwrap_or_default();
        (asked, signer.seal(STATE_PURPOSE, &bytes))
    }

    /// A round of a task resumed after the client answered: every answer
    /// so far and the handler's state from the previous round.
    pub(crate) fn resume(responses: InputResponses, state: Option<Value>) -> InputRound {
        InputRound {
            responses,
            asked: Mutex::default(),
            state: Mutex::new(state),
        }
    }

    /// Ends a round of a task that asked for input: the questions, the
    /// handler's state and the answers it had.
    pub(crate) fn suspend(&self) -> (InputRequests, Option<Value>, InputResponses) {
        let asked = std::mem::take(&mut *self.asked.locked());
        let state = self.state.locked().clone();
        (asked, state, self.responses.clone())
    }

    pub(crate) fn has_questions(&self) -> bool {
        !self.asked.locked().is_empty()
    }
}

impl Context {
    pub(crate) fn new(request: RequestContext, server: ErasedServer, round: InputRound) -> Self {
        Context {
            request,
            server,
            round: Arc::new(round),
            task_deferred: false,
        }
    }

    /// Marks a call whose task has been deferred until the handler calls
    /// [`Context::continue_as_task`].
    pub(crate) fn with_task_deferred(mut self) -> Self {
        self.task_deferred = true;
        self
    }

    /// For a [`deferred_task`](crate::ToolDef::deferred_task) tool: the
    /// point where the call becomes a task. When the call is still an
    /// ordinary request that could run as a task, this returns
    /// [`HandlerError::ContinueAsTask`] (pass it on with `?`): the client
    /// gets the task's handle at once and the handler runs again inside the
    /// task, with every answer gathered so far, where this returns `Ok`.
    /// Everywhere else (already a task, or a client without tasks) it
    /// returns `Ok` and the handler simply goes on.
    pub fn continue_as_task(&self) -> Result<(), HandlerError> {
        if self.task_deferred {
            Err(HandlerError::ContinueAsTask)
        } else {
            Ok(())
        }
    }

    pub(crate) fn round(&self) -> &InputRound {
        &self.round
    }

    /// The request's exchange, kept past the handler that takes the context.
    pub(crate) fn shared_round(&self) -> Arc<InputRound> {
        Arc::clone(&self.round)
    }

    /// The server that made this context, erased; typed by
    /// [`Context::server`].
    pub(crate) fn erased_server(&self) -> &ErasedServer {
        &self.server
    }

    /// Sends a notification to the client outside this request: on a
    /// legacy HTTP session it goes to the session's standalone (GET)
    /// stream, wherever that stream is open, rather than to this request's
    /// response stream. Whether it was handed on.
    pub async fn notify_session<P: Serialize + ?Sized>(&self, method: &str, params: &P) -> bool {
        self.request
            .peer
            .related_to(None)
            .notify(method, params)
            .await
            .is_ok()
    }

    /// The revision the request is handled under.
    pub fn revision(&self) -> ProtocolVersion {
        self.request.revision
    }

    /// What the client declared it can do.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        self.request.client_capabilities()
    }

    /// A value the transport attached to this request, such as the
    /// principal an HTTP authorization layer authenticated
    /// (`ctx.extension::<mcp_auth::Principal>()`).
    pub fn extension<T: std::any::Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.request.extensions().get::<T>()
    }

    /// Whether the client cancelled the request.
    pub fn is_cancelled(&self) -> bool {
        self.request.is_cancelled()
    }

    /// Resolves when the client cancels the request.
    pub async fn cancelled(&self) {
        self.request.cancellation.cancelled().await
    }

    /// Reports progress if the client asked for it; see
    /// [`mcp_core::Progress::report`].
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        self.request.progress.report(progress, total, message).await
    }

    /// Sends a log message if the client wants this level: in the legacy
    /// era the session's `logging/setLevel` (everything when unset), in the
    /// modern era the request's `_meta` log level (nothing when unset).
    pub async fn log(
        &self,
        level: LoggingLevel,
        logger: Option<&str>,
        data: impl Serialize,
    ) -> bool {
        let threshold = if self.revision().is_legacy() {
            SessionLogLevel::of(self.request.peer.extensions())
        } else {
            match self.request.meta.log_level {
                Some(level) => Some(level),
                None => return false,
            }
        };
        if threshold.is_some_and(|min| level < min) {
            return false;
        }
        let Ok(data) = serde_json::to_value(data) else {
            return false;
        };
        let mut params = LoggingMessageNotificationParams::new(level, data);
        params.logger = logger.map(str::to_owned);
        self.request
            .peer
            .notify(methods::NOTIFICATION_MESSAGE, &params)
            .await
            .is_ok()
    }

    /// The handler's own state from the previous round (modern era).
    pub fn state(&self) -> Option<Value> {
        self.round.state.locked().clone()
    }

    /// Keeps `state` for the next round (modern era); it travels signed in
    /// `requestState`.
    pub fn set_state(&self, state: Value) {
        *self.round.state.locked() = Some(state);
    }

    /// Asks the user for input (form or URL elicitation).
    pub async fn elicit(
        &self,
        key: &str,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, HandlerError> {
        let declared = self.client_capabilities().elicitation.is_some();
        self.ask(key, InputRequest::Elicit(params), declared, "elicitation")
            .await
    }

    /// Asks the client's LLM for a completion.
    pub async fn create_message(
        &self,
        key: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, HandlerError> {
        let declared = self.client_capabilities().sampling.is_some();
        self.ask(
            key,
            InputRequest::CreateMessage(params),
            declared,
            "sampling",
        )
        .await
    }

    /// Asks the client for its roots.
    pub async fn list_roots(&self, key: &str) -> Result<ListRootsResult, HandlerError> {
        let declared = self.client_capabilities().roots.is_some();
        self.ask(key, InputRequest::ListRoots(None), declared, "roots")
            .await
    }

    async fn ask<R: DeserializeOwned>(
        &self,
        key: &str,
        request: InputRequest,
        declared: bool,
        capability: &str,
    ) -> Result<R, HandlerError> {
        if !self.revision().uses_input_required() {
            if !declared {
                return Err(HandlerError::failed(format!(
                    "the client does not support {capability}"
                )));
            }
            let method = request.method();
            // As text rather than `Value`, which would sort the members: a
            // form's fields go out in the order they were written.
            let params = match &request {
                InputRequest::CreateMessage(p) => serde_json::value::to_raw_value(p),
                InputRequest::Elicit(p) => serde_json::value::to_raw_value(p),
                InputRequest::ListRoots(_) => {
                    serde_json::value::to_raw_value(&serde_json::json!({}))
                }
            }
            .map_err(HandlerError::failed)?;
            return Ok(self
                .request
                .peer
                .request(method, &params, RequestOptions::new())
                .await?);
        }
        if let Some(answer) = self.round.responses.get(key) {
            let value = serde_json::to_value(answer).map_err(HandlerError::failed)?;
            return serde_json::from_value(value).map_err(|e| {
                HandlerError::invalid_params(format!(
                    "inputResponses[{key:?}] does not answer {}: {e}",
                    request.method()
                ))
            });
        }
        if !declared {
            let mut required = serde_json::Map::new();
            required.insert(capability.to_owned(), Value::Object(Default::default()));
            return Err(HandlerError::Protocol(
                ErrorObject::new(
                    error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    format!("this request needs the client's {capability} capability"),
                )
                .with_data(serde_json::json!({ "requiredCapabilities": required })),
            ));
        }
        self.round.asked.locked().insert(key.to_owned(), request);
        Err(HandlerError::InputRequired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALL_A: Purpose<'static> = Purpose {
        method: methods::TOOLS_CALL,
        name: "a:b",
    };

    /// State sealed for one request opens only for that request: same
    /// method and name, written the way sealed state writes it.
    #[test]
    fn sealed_state_opens_for_its_own_request_only() {
        let signer = Signer::random();
        let round = InputRound::resume(
            InputResponses::default(),
            Some(serde_json::json!({"step": 2})),
        );
        let (_, token) = round.close(&signer, CALL_A, Duration::from_secs(60));

        let reopened = InputRound::open(&signer, CALL_A, Some(&token), None).expect("same request");
        assert_eq!(
            *reopened.state.lock().unwrap(),
            Some(serde_json::json!({"step": 2}))
        );

        for other in [
            Purpose {
                method: methods::TOOLS_CALL,
                name: "a",
            },
            Purpose {
                method: methods::TOOLS_CALL,
                name: "a:b:c",
            },
            Purpose {
                method: methods::PROMPTS_GET,
                name: "a:b",
            },
        ] {
            let error = InputRound::open(&signer, other, Some(&token), None)
                .err()
                .unwrap_or_else(|| panic!("{other} opened state sealed for {CALL_A}"));
            assert!(error.message.contains("another request"), "{error:?}");
        }
    }

    #[test]
    fn purpose_is_written_method_colon_name() {
        assert_eq!(CALL_A.to_string(), "tools/call:a:b");
        assert!(CALL_A.is("tools/call:a:b"));
        assert!(!CALL_A.is("tools/call:a"));
        assert!(!CALL_A.is("tools/callx:a:b"));
        assert!(!CALL_A.is("tools/call"));
    }
}
