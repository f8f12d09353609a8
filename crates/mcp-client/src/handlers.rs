//! What the application answers when a server asks something of the
//! client: sampling, elicitation and roots, plus the notifications it
//! wants to see. One set of handlers serves both eras: legacy servers send
//! requests, modern servers return `input_required` results that the
//! client answers with the same handlers.

use std::future::Future;
use std::sync::{Arc, RwLock};

use mcp_core::sync::RwLockExt as _;
use mcp_core::{BoxFuture, HandlerResult, IncomingRequest, Peer, RequestContext, Service};
use mcp_schema::jsonrpc::{self, Notification};
use mcp_schema::{
    CreateMessageRequestParams, CreateMessageResult, ElicitAction, ElicitRequestParams,
    ElicitResult, ElicitValue, ErrorObject, InputRequest, InputResponse, ListRootsResult, Root,
    methods,
};

type SamplingFn = dyn Fn(CreateMessageRequestParams) -> BoxFuture<'static, Result<CreateMessageResult, ErrorObject>>
    + Send
    + Sync;
type ElicitationFn = dyn Fn(ElicitRequestParams) -> BoxFuture<'static, Result<ElicitResult, ErrorObject>>
    + Send
    + Sync;
type NotificationFn = dyn Fn(&Notification) + Send + Sync;

/// The application's handlers, shared by the session engine (legacy
/// requests) and the multi-round-trip loop (modern `input_required`).
#[derive(Clone, Default)]
pub(crate) struct Handlers {
    pub(crate) sampling: Option<Arc<SamplingFn>>,
    pub(crate) sampling_tools: bool,
    pub(crate) elicitation: Option<Arc<ElicitationFn>>,
    pub(crate) elicitation_url: bool,
    pub(crate) roots: Option<Arc<RwLock<Vec<Root>>>>,
    pub(crate) notifications: Vec<Arc<NotificationFn>>,
}

impl Handlers {
    pub(crate) fn set_sampling<F, Fut>(&mut self, handler: F)
    where
        F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, ErrorObject>> + Send + 'static,
    {
        self.sampling = Some(Arc::new(move |p| Box::pin(handler(p))));
    }

    pub(crate) fn set_elicitation<F, Fut>(&mut self, handler: F)
    where
        F: Fn(ElicitRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, ErrorObject>> + Send + 'static,
    {
        self.elicitation = Some(Arc::new(move |p| Box::pin(handler(p))));
    }

    /// Samples with the application's handler.
    pub(crate) async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        match &self.sampling {
            Some(handler) => handler(params).await,
            None => Err(ErrorObject::method_not_found(
                methods::SAMPLING_CREATE_MESSAGE,
            )),
        }
    }

    /// Elicits with the application's handler; in form mode, fields the
    /// user left out get the schema's defaults.
    pub(crate) async fn elicit(
        &self,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorObject> {
        let Some(handler) = &self.elicitation else {
            return Err(ErrorObject::method_not_found(methods::ELICITATION_CREATE));
        };
        if matches!(params, ElicitRequestParams::Url(_)) && !self.elicitation_url {
            return Err(ErrorObject::invalid_params(
                "this client does not support URL-mode elicitation",
            ));
        }
        let defaults = form_defaults(&params);
        let mut result = handler(params).await?;
        if result.action == ElicitAction::Accept && !defaults.is_empty() {
            let content = result.content.get_or_insert_with(Default::default);
            for (field, value) in defaults {
                content.entry(field).or_insert(value);
            }
        }
        Ok(result)
    }

    /// The current roots.
    pub(crate) fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        match &self.roots {
            Some(roots) => Ok(ListRootsResult::new(roots.read_locked().clone())),
            None => Err(ErrorObject::method_not_found(methods::ROOTS_LIST)),
        }
    }

    /// Answers one input request of a modern `input_required` result.
    pub(crate) async fn answer(&self, request: InputRequest) -> Result<InputResponse, ErrorObject> {
        Ok(match request {
            InputRequest::CreateMessage(p) => InputResponse::CreateMessage(self.sample(p).await?),
            InputRequest::Elicit(p) => InputResponse::Elicit(self.elicit(p).await?),
            InputRequest::ListRoots(_) => InputResponse::ListRoots(self.list_roots()?),
        })
    }

    pub(crate) fn notify(&self, notification: &Notification) {
        for handler in &self.notifications {
            handler(notification);
        }
    }
}

/// The `default` of each field of a form, as elicitation values.
fn form_defaults(params: &ElicitRequestParams) -> Vec<(String, ElicitValue)> {
    let ElicitRequestParams::Form(form) = params else {
        return Vec::new();
    };
    let Ok(schema) = serde_json::to_value(&form.requested_schema) else {
        return Vec::new();
    };
    let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) else {
        return Vec::new();
    };
    properties
        .iter()
        .filter_map(|(name, property)| {
            let default = property.get("default")?.clone();
            let value = serde_json::from_value(default).ok()?;
            Some((name.clone(), value))
        })
        .collect()
}

/// The client role's service: answers the server's requests with the
/// handlers and hands notifications to the application (and to the
/// client's own bookkeeping).
pub(crate) struct ClientService {
    pub(crate) handlers: Handlers,
    pub(crate) on_notification: Box<dyn Fn(&Notification) + Send + Sync>,
}

impl Service for ClientService {
    fn handle_request(
        &self,
        request: IncomingRequest,
        _ctx: RequestContext,
    ) -> BoxFuture<'static, HandlerResult> {
        let handlers = self.handlers.clone();
        Box::pin(async move {
            let params = request.params.as_deref();
            match request.method.as_str() {
                methods::SAMPLING_CREATE_MESSAGE => {
                    let result = handlers.sample(jsonrpc::from_params(params)?).await?;
                    jsonrpc::to_raw(&result).map_err(ErrorObject::internal)
                }
                methods::ELICITATION_CREATE => {
                    let result = handlers.elicit(jsonrpc::from_params(params)?).await?;
                    jsonrpc::to_raw(&result).map_err(ErrorObject::internal)
                }
                methods::ROOTS_LIST => {
                    jsonrpc::to_raw(&handlers.list_roots()?).map_err(ErrorObject::internal)
                }
                other => Err(ErrorObject::method_not_found(other)),
            }
        })
    }

    fn handle_notification(
        &self,
        notification: Notification,
        _peer: Peer,
    ) -> BoxFuture<'static, ()> {
        (self.on_notification)(&notification);
        self.handlers.notify(&notification);
        Box::pin(async {})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_schema::{ElicitRequestFormParams, ElicitationSchema};
    use serde_json::json;

    #[tokio::test]
    async fn form_defaults_fill_what_the_user_left_out() {
        let mut handlers = Handlers::default();
        handlers.set_elicitation(|_| async {
            let mut content = std::collections::BTreeMap::new();
            content.insert("name".to_owned(), ElicitValue::String("Ada".into()));
            Ok(ElicitResult::accept(content))
        });
        let schema: ElicitationSchema = serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "nobody"},
                "age": {"type": "integer", "default": 36},
                "note": {"type": "string"}
            }
        }))
        .unwrap();
        let params = ElicitRequestFormParams::new("Who?", schema).into();
        let result = handlers.elicit(params).await.unwrap();
        let content = serde_json::to_value(result.content).unwrap();
        assert_eq!(content, json!({"name": "Ada", "age": 36}));
    }

    #[tokio::test]
    async fn missing_handlers_are_method_not_found() {
        let handlers = Handlers::default();
        let error = handlers.list_roots().unwrap_err();
        assert_eq!(error.code, mcp_schema::error_codes::METHOD_NOT_FOUND);
    }
}
