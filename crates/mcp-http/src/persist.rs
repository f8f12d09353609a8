//! Keeping a legacy session's record in a shared [`SessionStore`] up to
//! date, and replaying it into a session loaded on another instance.
//!
//! The record changes with `initialize` (written by the session manager)
//! and with the requests that change what a server remembers of a session:
//! `logging/setLevel`, `resources/subscribe` and `resources/unsubscribe`.
//! [`Recording`] wraps the endpoint's service for legacy sessions: when one
//! of those succeeds, the record is written before the response goes out,
//! so the client never hears of a change another instance would not know.
//! A session loaded elsewhere gets the same requests replayed
//! ([`restoring_requests`]), so the server there holds the same state
//! without knowing where it came from.

use std::sync::Arc;
use std::time::Duration;

use mcp_core::{BoxFuture, HandlerResult, IncomingRequest, Peer, RequestContext, Service};
use mcp_schema::header_params::HeaderParam;
use mcp_schema::jsonrpc::{self, ErrorObject, Frame, Message, Notification, Request, RequestId};
use mcp_schema::{LoggingLevel, ResourceRequestParams, SetLevelRequestParams, methods};

use crate::session_store::{SessionRecord, SessionStore, SessionStoreError};

/// A session's record and where it is kept; in the session's extensions.
pub(crate) struct Persisted {
    id: Arc<str>,
    store: Arc<dyn SessionStore>,
    ttl: Duration,
    /// Held while a change is written, so writes land in the order made.
    record: tokio::sync::Mutex<SessionRecord>,
    /// Told of each change, for the other instances.
    relay: Option<Arc<dyn crate::relay::ResponseRelay>>,
}

impl Persisted {
    pub(crate) fn new(
        id: Arc<str>,
        store: Arc<dyn SessionStore>,
        ttl: Duration,
        record: SessionRecord,
    ) -> Self {
        Persisted {
            id,
            store,
            ttl,
            record: tokio::sync::Mutex::new(record),
            relay: None,
        }
    }

    /// Tells `relay` of each change.
    pub(crate) fn with_relay(
        mut self,
        relay: Option<Arc<dyn crate::relay::ResponseRelay>>,
    ) -> Self {
        self.relay = relay;
        self
    }

    /// Takes `fresh`, the record as another instance changed it; the
    /// requests that bring this copy of the session up to it (a level
    /// set, subscriptions made and ended). Made through the session, they
    /// change nothing more here.
    pub(crate) async fn follow(&self, fresh: SessionRecord) -> Vec<Frame> {
        let mut record = self.record.lock().await;
        let mut changes = SessionRecord::new(fresh.revision.clone());
        if fresh.log_level != record.log_level {
            changes.log_level = fresh.log_level;
        }
        changes.subscriptions = fresh
            .subscriptions
            .difference(&record.subscriptions)
            .cloned()
            .collect();
        let ended: Vec<String> = record
            .subscriptions
            .difference(&fresh.subscriptions)
            .cloned()
            .collect();
        *record = fresh;
        let mut frames = restoring_requests(&changes);
        for (n, uri) in ended.into_iter().enumerate() {
            if let Ok(params) = jsonrpc::to_raw(&serde_json::json!({ "uri": uri })) {
                frames.push(Frame::Single(Message::Request(Request {
                    id: RequestId::String(format!("session-follow-{n}").into()),
                    method: methods::RESOURCES_UNSUBSCRIBE.to_owned(),
                    params: Some(params),
                })));
            }
        }
        frames
    }

    /// Writes the record as it is.
    pub(crate) async fn save(&self) -> Result<(), SessionStoreError> {
        let record = self.record.lock().await;
        self.store.save(&self.id, &record, self.ttl).await
    }

    /// Applies `change` and writes the record.
    async fn apply(&self, change: Change) -> Result<(), SessionStoreError> {
        let mut record = self.record.lock().await;
        let changed = match change {
            Change::Level(level) => record.log_level.replace(level) != Some(level),
            Change::Subscribe(uri) => record.subscriptions.insert(uri),
            Change::Unsubscribe(uri) => record.subscriptions.remove(&uri),
        };
        if !changed {
            // Already so (a copy following another instance's change).
            return Ok(());
        }
        self.store.save(&self.id, &record, self.ttl).await?;
        drop(record);
        if let Some(relay) = &self.relay {
            relay.session_changed(&self.id).await;
        }
        Ok(())
    }
}

/// A change a request makes to a session's record.
enum Change {
    Level(LoggingLevel),
    Subscribe(String),
    Unsubscribe(String),
}

impl Change {
    /// The change `request` makes if it succeeds; `None` for most requests
    /// (and for malformed params, which the service refuses).
    fn of(request: &IncomingRequest) -> Option<Change> {
        let method = request.method.as_str();
        if method != methods::LOGGING_SET_LEVEL
            && method != methods::RESOURCES_SUBSCRIBE
            && method != methods::RESOURCES_UNSUBSCRIBE
        {
            return None;
        }
        let params = request.params_past_meta()?;
        match method {
            methods::LOGGING_SET_LEVEL => serde_json::from_str::<SetLevelRequestParams>(&params)
                .ok()
                .map(|p| Change::Level(p.level)),
            methods::RESOURCES_SUBSCRIBE => serde_json::from_str::<ResourceRequestParams>(&params)
                .ok()
                .map(|p| Change::Subscribe(p.uri)),
            _ => serde_json::from_str::<ResourceRequestParams>(&params)
                .ok()
                .map(|p| Change::Unsubscribe(p.uri)),
        }
    }
}

/// The endpoint's service, for legacy sessions kept in a shared store:
/// records what changes a session's record, and holds each answer until
/// the resource updates raised before it are stored, where set.
pub(crate) struct Recording {
    pub(crate) service: Arc<dyn Service>,
    pub(crate) updates: Option<crate::fanout::UpdateQueue>,
}

impl Service for Recording {
    fn handle_request(
        &self,
        request: IncomingRequest,
        ctx: RequestContext,
    ) -> BoxFuture<'static, HandlerResult> {
        let change = Change::of(&request)
            .and_then(|change| Some((change, ctx.peer.extensions().get::<Persisted>()?)));
        let handling = self.service.handle_request(request, ctx);
        let updates = self.updates.clone();
        if change.is_none() && updates.is_none() {
            return handling;
        }
        Box::pin(async move {
            let result = handling.await;
            if let Some(updates) = updates {
                updates.stored().await;
            }
            let result = result?;
            if let Some((change, persisted)) = change {
                persisted.apply(change).await.map_err(|error| {
                    tracing::warn!(session = %persisted.id, %error, "cannot record a session change");
                    ErrorObject::internal(format!("{error}; try again"))
                })?;
            }
            Ok(result)
        })
    }

    fn handle_notification(
        &self,
        notification: Notification,
        peer: Peer,
    ) -> BoxFuture<'static, ()> {
        self.service.handle_notification(notification, peer)
    }

    fn session_ready(&self, peer: &Peer) {
        self.service.session_ready(peer)
    }

    fn session_closed(&self, peer: &Peer) {
        self.service.session_closed(peer)
    }

    fn tool_header_params(&self, name: &str) -> Option<Arc<[HeaderParam]>> {
        self.service.tool_header_params(name)
    }

    fn tool_required_scopes(&self, name: &str) -> Option<Arc<[String]>> {
        self.service.tool_required_scopes(name)
    }
}

/// The requests that bring a freshly loaded session to the state of its
/// record: its log level, then each subscription.
pub(crate) fn restoring_requests(record: &SessionRecord) -> Vec<Frame> {
    let mut frames = Vec::new();
    let mut push = |method: &str, params: serde_json::Value| {
        let n = frames.len();
        if let Ok(params) = jsonrpc::to_raw(&params) {
            frames.push(Frame::Single(Message::Request(Request {
                id: RequestId::String(format!("session-restore-{n}").into()),
                method: method.to_owned(),
                params: Some(params),
            })));
        }
    };
    if let Some(level) = record.log_level {
        push(
            methods::LOGGING_SET_LEVEL,
            serde_json::json!({ "level": level }),
        );
    }
    for uri in &record.subscriptions {
        push(
            methods::RESOURCES_SUBSCRIBE,
            serde_json::json!({ "uri": uri }),
        );
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_read_from_the_requests_that_make_them() {
        let request = |method: &str, params: &str| {
            IncomingRequest::new(
                method,
                Some(serde_json::value::RawValue::from_string(params.to_owned()).unwrap()),
            )
        };
        assert!(matches!(
            Change::of(&request("logging/setLevel", r#"{"level":"error"}"#)),
            Some(Change::Level(LoggingLevel::Error))
        ));
        assert!(matches!(
            Change::of(&request("resources/subscribe", r#"{"uri":"a://b"}"#)),
            Some(Change::Subscribe(uri)) if uri == "a://b"
        ));
        assert!(matches!(
            Change::of(&request("resources/unsubscribe", r#"{"uri":"a://b"}"#)),
            Some(Change::Unsubscribe(uri)) if uri == "a://b"
        ));
        assert!(Change::of(&request("tools/call", r#"{"name":"x"}"#)).is_none());
        assert!(Change::of(&request("logging/setLevel", r#"{"level":"loud"}"#)).is_none());
    }

    #[test]
    fn a_record_is_restored_by_its_level_then_its_subscriptions() {
        let mut record = SessionRecord::new("2025-06-18");
        record.log_level = Some(LoggingLevel::Debug);
        record.subscriptions.insert("a://1".to_owned());
        record.subscriptions.insert("a://2".to_owned());
        let methods: Vec<String> = restoring_requests(&record)
            .into_iter()
            .map(|frame| match frame {
                Frame::Single(Message::Request(r)) => {
                    format!("{} {}", r.method, r.params.unwrap().get())
                }
                _ => panic!("not a request"),
            })
            .collect();
        assert_eq!(
            methods,
            [
                r#"logging/setLevel {"level":"debug"}"#,
                r#"resources/subscribe {"uri":"a://1"}"#,
                r#"resources/subscribe {"uri":"a://2"}"#,
            ]
        );
    }
}
