//! The Streamable HTTP endpoint: POST, GET and DELETE on one path, for
//! legacy sessions (`Mcp-Session-Id`) and stateless 2026-07-28 requests.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use futures::FutureExt as _;
use mcp_core::{BoxFuture, DirectSession, FrameSink, Owner, Service, SessionConfig, box_future};
use mcp_schema::ErrorObject;
use tokio_util::sync::CancellationToken;
use tower::Layer;

use crate::config::HttpConfig;
use crate::guard::{GuardLayer, Guarded};
use crate::legacy_sse::LegacySessions;
use crate::session::{Lookup, SessionManager};

mod get_delete;
mod handling;
mod post;
pub(crate) mod read;
pub(crate) mod reply;
mod stream;

use get_delete::{handle_delete, handle_get};
use post::handle_post;
pub(crate) use read::poll_once;

/// The session id header.
pub const SESSION_ID: &str = "mcp-session-id";
/// The protocol version header.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The 2026-07-28 method header.
pub const METHOD: &str = "mcp-method";
/// The 2026-07-28 name header (tool, prompt or resource of the request).
pub const NAME: &str = "mcp-name";
/// The resumption header.
pub const LAST_EVENT_ID: &str = "last-event-id";

/// The MCP headers as header names, found in a request without parsing
/// the name on every lookup.
pub(crate) mod names {
    use axum::http::HeaderName;

    pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static(super::SESSION_ID);
    pub(crate) const PROTOCOL_VERSION: HeaderName =
        HeaderName::from_static(super::PROTOCOL_VERSION);
    pub(crate) const METHOD: HeaderName = HeaderName::from_static(super::METHOD);
    pub(crate) const NAME: HeaderName = HeaderName::from_static(super::NAME);
    pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static(super::LAST_EVENT_ID);
}

/// An MCP endpoint over Streamable HTTP, ready to be mounted in an axum
/// router.
pub struct McpEndpoint {
    pub(crate) service: Arc<dyn Service>,
    /// Shared by every session and stateless request of the endpoint.
    pub(crate) session_config: Arc<SessionConfig>,
    pub(crate) config: HttpConfig,
    sessions: Arc<SessionManager>,
    pub(crate) legacy_sse: Arc<LegacySessions>,
    pub(crate) websockets: Arc<crate::ws::Connections>,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for McpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpEndpoint")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl crate::serving::Serving for McpEndpoint {
    fn service(&self) -> &Arc<dyn Service> {
        &self.service
    }

    fn session_config(&self) -> &SessionConfig {
        &self.session_config
    }

    fn config(&self) -> &HttpConfig {
        &self.config
    }

    fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }
}

impl crate::legacy_sse::LegacyHost for McpEndpoint {
    fn legacy_sessions(&self) -> &Arc<LegacySessions> {
        &self.legacy_sse
    }
}

impl crate::ws::WebSocketHost for McpEndpoint {
    fn websockets(&self) -> &Arc<crate::ws::Connections> {
        &self.websockets
    }
}

impl McpEndpoint {
    /// An endpoint serving `service` with these engine and HTTP settings.
    pub fn new(
        service: Arc<dyn Service>,
        session_config: SessionConfig,
        config: HttpConfig,
    ) -> Arc<Self> {
        let mut session_config = session_config;
        if config.response_relay.is_some() {
            // Sessions continue on other instances, whose requests to the
            // client are told apart by their ids: each instance numbers
            // from its own random point (below 2^52, which JavaScript
            // clients read exactly).
            session_config.first_request_id = rand::random_range(1..1i64 << 52);
        }
        let session_config = Arc::new(session_config);
        let service = match &config.task_relay {
            Some(relay) => Arc::new(crate::task_relay::TaskRouting {
                inner: service,
                relay: Arc::clone(relay),
            }) as Arc<dyn Service>,
            None => service,
        };
        let sessions =
            SessionManager::new(&config, Arc::clone(&service), Arc::clone(&session_config));
        Arc::new(McpEndpoint {
            service,
            session_config,
            config,
            sessions,
            legacy_sse: Arc::default(),
            websockets: Arc::default(),
            shutdown: CancellationToken::new(),
        })
    }

    /// The axum router: the endpoint at its path, and (unless turned off)
    /// the legacy HTTP+SSE paths and the WebSocket path, each behind the
    /// Host/Origin guard; bodies are read within the limit.
    ///
    /// The guard wraps each route rather than the router, and the
    /// endpoint's own path is one service that picks the handler by method
    /// itself, so a call does not go through a boxed, cloned service per
    /// layer.
    pub fn router(self: &Arc<Self>) -> axum::Router {
        let guard = GuardLayer::new(Arc::clone(&self.config.origin_policy));
        let mut router = axum::Router::new().route_service(&self.config.path, self.path_service());
        let guarded =
            |route: MethodRouter<Arc<McpEndpoint>>| route.layer::<_, Infallible>(guard.clone());
        let mut taken = vec![self.config.path.as_str()];
        if let Some(sse_path) = &self.config.legacy_sse_path {
            let message_path = &self.config.legacy_message_path;
            if !taken.contains(&sse_path.as_str())
                && !taken.contains(&message_path.as_str())
                && sse_path != message_path
            {
                router = router
                    .route(
                        sse_path,
                        guarded(get(crate::legacy_sse::handle_sse::<McpEndpoint>)),
                    )
                    .route(
                        message_path,
                        guarded(post(crate::legacy_sse::handle_message::<McpEndpoint>)),
                    );
                taken.push(sse_path);
                taken.push(message_path);
            } else {
                tracing::warn!(
                    sse_path,
                    message_path,
                    "legacy SSE paths clash with another path; not mounted"
                );
            }
        }
        if let Some(ws_path) = &self.config.websocket_path {
            if taken.contains(&ws_path.as_str()) {
                tracing::warn!(
                    ws_path,
                    "WebSocket path clashes with another path; not mounted"
                );
            } else {
                router = router.route(
                    ws_path,
                    guarded(get(crate::ws::handle_upgrade::<McpEndpoint>)),
                );
            }
        }
        router.with_state(Arc::clone(self))
    }

    /// What answers the endpoint's own path: the Host/Origin guard, then
    /// POST, GET or DELETE.
    pub(crate) fn path_service(self: &Arc<Self>) -> Guarded<Answer> {
        GuardLayer::new(Arc::clone(&self.config.origin_policy)).layer(Answer(Arc::clone(self)))
    }

    /// Hands a client's answer that another instance received (see
    /// [`crate::relay::ResponseRelay`]) to the session it belongs to, if
    /// this instance holds it; whether it did.
    pub async fn take_forwarded(&self, session: &str, message: &str) -> bool {
        let Some(session) = self.sessions.held(session) else {
            return false;
        };
        let Ok(frame) = mcp_schema::jsonrpc::Message::parse_frame(message) else {
            return false;
        };
        session.take_sent_of(&frame);
        session.handle(frame, None).await;
        true
    }

    /// Answers a request about a task that runs here, which another
    /// instance received (see [`crate::task_relay::TaskRelay`]): in the
    /// legacy session it came in (loaded here if need be), or on its own
    /// in the 2026-07-28 era. The JSON-RPC response's text.
    pub async fn answer_relayed(&self, relayed: crate::task_relay::RelayedRequest) -> String {
        let failed = |error: ErrorObject| {
            serde_json::json!({"jsonrpc": "2.0", "id": "relayed", "error": error}).to_string()
        };
        let frame = match mcp_schema::jsonrpc::Message::parse_frame(&relayed.request) {
            Ok(frame) => frame,
            Err(error) => return failed(ErrorObject::invalid_request(format!("{error:?}"))),
        };
        let extensions = Some(crate::task_relay::relayed_extensions(&relayed));
        let answer = match &relayed.session {
            Some(id) => {
                let owner = relayed.owner.clone().map(Owner::new);
                match self.sessions.find(id, owner.as_ref()).await {
                    Lookup::Found(session) => {
                        // In use, as a request's open stream keeps it,
                        // until answered.
                        session.touch();
                        let _in_use = session.stream_opened();
                        session.answer(frame, extensions).await
                    }
                    _ => {
                        return failed(ErrorObject::invalid_request(
                            "unknown or expired session; start a new one with initialize",
                        ));
                    }
                }
            }
            None => {
                let sink = Arc::new(handling::ResponseSink::new(self.config.queue_limits()));
                let session = DirectSession::for_one_message(
                    sink as Arc<dyn FrameSink>,
                    Arc::clone(&self.service),
                    Arc::clone(&self.session_config),
                );
                let answer = session.answer_parsed(frame.into(), extensions).await;
                session.close();
                answer
            }
        };
        answer
            .filter(|text| !text.is_empty())
            .unwrap_or_else(|| failed(ErrorObject::internal("the request was not answered")))
    }

    /// Brings this instance's copy of session `id`, if it holds one, up to
    /// the settings (log level, subscriptions) another instance stored
    /// for it (see [`crate::relay::ResponseRelay::session_changed`]).
    pub async fn refresh_session(&self, id: &str) {
        self.sessions.refresh(id).await
    }

    /// How many legacy sessions are live.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// How many legacy HTTP+SSE sessions are live.
    pub fn legacy_sse_session_count(&self) -> usize {
        self.legacy_sse.len()
    }

    /// How many WebSocket sessions are live.
    pub fn websocket_session_count(&self) -> usize {
        self.websockets.len()
    }

    /// The event store's figures: events and bytes held, events evicted.
    pub fn event_store_stats(&self) -> crate::event_store::EventStoreStats {
        self.config.event_store.stats()
    }

    /// Starts shutting down: open SSE streams end (their events stay
    /// stored, so clients can resume elsewhere); requests in flight go on.
    pub fn shutdown(&self) {
        self.shutdown.cancel();
    }

    /// Ends every session's engine (Streamable HTTP, legacy HTTP+SSE and
    /// WebSocket); the last step of a shutdown.
    pub fn close_sessions(&self) {
        self.sessions.close_all();
        self.legacy_sse.close_all();
        self.websockets.close_all();
    }

    /// Resolves when [`McpEndpoint::shutdown`] was called.
    pub async fn shutting_down(&self) {
        self.shutdown.cancelled().await
    }
}

/// The endpoint's path (past the guard) as a service: POST, GET or
/// DELETE, each request's future boxed on its own (see [`Answer::respond`]).
#[derive(Clone)]
pub(crate) struct Answer(Arc<McpEndpoint>);

impl Answer {
    /// The response to `request`. A request's future is large, and would
    /// be copied on every move; it is made here, in place of an async
    /// wrapper, so that it holds neither the whole request nor the futures
    /// of the other methods.
    pub(crate) fn respond(
        endpoint: &Arc<McpEndpoint>,
        request: Request,
    ) -> BoxFuture<'static, Result<Response, Infallible>> {
        let endpoint = Arc::clone(endpoint);
        match *request.method() {
            Method::POST => {
                let (parts, body) = request.into_parts();
                box_future(move || {
                    handle_post(endpoint, parts.headers, parts.extensions, body).map(Ok)
                })
            }
            Method::GET => Box::pin(async move {
                let owner = request.extensions().get::<Owner>();
                Ok(handle_get(&endpoint, request.headers(), owner).await)
            }),
            Method::DELETE => Box::pin(async move {
                let owner = request.extensions().get::<Owner>();
                Ok(handle_delete(&endpoint, request.headers(), owner).await)
            }),
            _ => {
                let refusal = (
                    StatusCode::METHOD_NOT_ALLOWED,
                    [(header::ALLOW, "GET,POST,DELETE")],
                );
                Box::pin(std::future::ready(Ok(refusal.into_response())))
            }
        }
    }
}

impl tower::Service<Request> for Answer {
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        Answer::respond(&self.0, request)
    }
}
