//! Tasks across instances: a task runs in the instance where the call
//! that started it arrived, but behind a load balancer without affinity
//! the client's `tasks/get`, `tasks/result`, `tasks/cancel` and
//! `tasks/update` may reach any instance. Each instance records the tasks
//! it starts with a [`TaskRelay`] (Redis implements it); one that gets a
//! request about a task running elsewhere has the runner answer it, and
//! `tasks/list` gathers the caller's tasks from every instance running
//! some. A task whose instance is gone is answered with a clear error.

use std::sync::Arc;
use std::time::Duration;

use mcp_core::{
    BoxFuture, Extensions, HandlerResult, IncomingRequest, Owner, Peer, RequestContext, Service,
    SessionName, TaskScope,
};
use mcp_schema::header_params::HeaderParam;
use mcp_schema::jsonrpc::Notification;
use mcp_schema::{ErrorObject, methods};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// How long a task is found where it runs when its result names no time
/// to live (and the longest it is found at all).
pub const MAX_TASK_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// How many pages of one instance's `tasks/list` are gathered at most.
const MAX_LIST_PAGES: usize = 50;

/// A request about a task, for the instance that runs it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RelayedRequest {
    /// The legacy session the request came in (none in the 2026-07-28
    /// era).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Who the transport authenticated the caller as, if anyone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The JSON-RPC request, as the client sent it.
    pub request: String,
}

/// Where instances record the tasks they run, and how one has another
/// answer a request about a task it runs.
pub trait TaskRelay: Send + Sync + 'static {
    /// Records that this instance runs task `task` of `scope` (a legacy
    /// session, or the caller of the 2026-07-28 era), for `ttl`.
    fn started(&self, scope: &str, task: &str, ttl: Duration) -> BoxFuture<'_, ()>;

    /// The instance that runs task `task`, when it is another one; `None`
    /// when it is this one, or nobody recorded it.
    fn runner(&self, task: &str) -> BoxFuture<'_, Result<Option<String>, ErrorObject>>;

    /// The other instances that run (or ran) tasks of `scope`.
    fn runners(&self, scope: &str) -> BoxFuture<'_, Vec<String>>;

    /// Has `instance` answer `request`: its JSON-RPC response. An error
    /// when the instance cannot be reached, or goes away before answering.
    fn ask(
        &self,
        instance: &str,
        request: RelayedRequest,
    ) -> BoxFuture<'_, Result<String, ErrorObject>>;
}

/// Marks a request another instance relayed here: it is answered here,
/// never relayed on.
#[derive(Debug)]
pub(crate) struct Relayed;

/// The extensions a relayed request is handled with.
pub(crate) fn relayed_extensions(request: &RelayedRequest) -> Arc<Extensions> {
    let extensions = Extensions::default();
    extensions.insert(Relayed);
    if let Some(owner) = &request.owner {
        extensions.insert(Owner::new(owner.as_str()));
    }
    Arc::new(extensions)
}

/// The endpoint's service, for instances that share their tasks' where-
/// abouts: relays requests about tasks running elsewhere.
pub(crate) struct TaskRouting {
    pub(crate) inner: Arc<dyn Service>,
    pub(crate) relay: Arc<dyn TaskRelay>,
}

impl Service for TaskRouting {
    fn handle_request(
        &self,
        request: IncomingRequest,
        ctx: RequestContext,
    ) -> BoxFuture<'static, HandlerResult> {
        // A legacy session that lives in this instance alone (over
        // WebSocket or HTTP+SSE) finds its tasks here.
        let unshared =
            ctx.revision.is_legacy() && ctx.peer.extensions().get::<SessionName>().is_none();
        if unshared {
            return self.inner.handle_request(request, ctx);
        }
        let relayed = ctx.extensions().get::<Relayed>().is_some();
        let method = request.method.as_str();
        if method == methods::TOOLS_CALL {
            let scope = TaskScope::of(&ctx).key();
            let relay = Arc::clone(&self.relay);
            let calling = self.inner.handle_request(request, ctx);
            return Box::pin(async move {
                let result = calling.await?;
                if let Some(task) = created_task(&result) {
                    relay.started(&scope, &task.id, task.ttl()).await;
                }
                Ok(result)
            });
        }
        if relayed {
            return self.inner.handle_request(request, ctx);
        }
        match method {
            methods::TASKS_GET
            | methods::TASKS_RESULT
            | methods::TASKS_CANCEL
            | methods::TASKS_UPDATE => {
                let Some(task) = task_id(request.params.as_deref()) else {
                    return self.inner.handle_request(request, ctx);
                };
                let (inner, relay) = (Arc::clone(&self.inner), Arc::clone(&self.relay));
                Box::pin(async move {
                    match relay.runner(&task).await {
                        Ok(Some(instance)) => {
                            let relayed = relayed_request(&request, &ctx);
                            let response = relay.ask(&instance, relayed).await?;
                            response_result(&response)
                        }
                        // Here, unknown, or the store is out of reach: what
                        // this instance knows is the best answer.
                        Ok(None) | Err(_) => inner.handle_request(request, ctx).await,
                    }
                })
            }
            methods::TASKS_LIST => {
                let (inner, relay) = (Arc::clone(&self.inner), Arc::clone(&self.relay));
                Box::pin(list_everywhere(inner, relay, request, ctx))
            }
            _ => self.inner.handle_request(request, ctx),
        }
    }

    fn handle_notification(
        &self,
        notification: Notification,
        peer: Peer,
    ) -> BoxFuture<'static, ()> {
        self.inner.handle_notification(notification, peer)
    }

    fn session_ready(&self, peer: &Peer) {
        self.inner.session_ready(peer)
    }

    fn session_closed(&self, peer: &Peer) {
        self.inner.session_closed(peer)
    }

    fn tool_header_params(&self, name: &str) -> Option<Arc<[HeaderParam]>> {
        self.inner.tool_header_params(name)
    }

    fn tool_required_scopes(&self, name: &str) -> Option<Arc<[String]>> {
        self.inner.tool_required_scopes(name)
    }
}

/// `request` as it goes to another instance.
fn relayed_request(request: &IncomingRequest, ctx: &RequestContext) -> RelayedRequest {
    relayed_with_params(request, ctx, request.params.as_deref())
}

fn relayed_with_params(
    request: &IncomingRequest,
    ctx: &RequestContext,
    params: Option<&RawValue>,
) -> RelayedRequest {
    // An id of its own: several requests of one session may be relayed
    // to the same instance at once (a client waiting on `tasks/result`
    // while it polls `tasks/get`).
    let mut text = format!(
        r#"{{"jsonrpc":"2.0","id":"relayed-{:016x}","method":"#,
        rand::random::<u64>()
    );
    text.push_str(&Value::from(request.method.as_str()).to_string());
    if let Some(params) = params {
        text.push_str(r#","params":"#);
        text.push_str(params.get());
    }
    text.push('}');
    RelayedRequest {
        session: ctx
            .peer
            .extensions()
            .get::<SessionName>()
            .map(|name| name.0.to_string()),
        owner: ctx
            .extensions()
            .get::<Owner>()
            .map(|owner| owner.as_str().to_owned()),
        request: text,
    }
}

/// The result or error of a JSON-RPC response's text.
fn response_result(response: &str) -> HandlerResult {
    #[derive(Deserialize)]
    struct Response {
        result: Option<Box<RawValue>>,
        error: Option<ErrorObject>,
    }
    let parsed: Response = serde_json::from_str(response).map_err(|error| {
        ErrorObject::internal(format!(
            "the instance running the task answered badly: {error}"
        ))
    })?;
    match (parsed.result, parsed.error) {
        (_, Some(error)) => Err(error),
        (Some(result), None) => Ok(result),
        (None, None) => Err(ErrorObject::internal(
            "the instance running the task answered nothing",
        )),
    }
}

/// `tasks/list` here and on every other instance that runs tasks of the
/// caller's: one page of them all, oldest first. With no other instance,
/// this one's pages as they are.
async fn list_everywhere(
    inner: Arc<dyn Service>,
    relay: Arc<dyn TaskRelay>,
    request: IncomingRequest,
    ctx: RequestContext,
) -> HandlerResult {
    let others = relay.runners(&TaskScope::of(&ctx).key()).await;
    if others.is_empty() {
        return inner.handle_request(request, ctx).await;
    }
    let mut first = params_object(request.params.as_deref());
    first.remove("cursor");
    let mut tasks = Vec::new();
    // This instance's pages, then the others', in turn.
    let sources = std::iter::once(None).chain(others.into_iter().map(Some));
    for instance in sources {
        let mut params = first.clone();
        for _ in 0..MAX_LIST_PAGES {
            let page_params = raw_params(&params)?;
            let page = match &instance {
                None => {
                    let here = IncomingRequest::new(request.method.clone(), Some(page_params));
                    inner.handle_request(here, ctx.clone()).await?
                }
                Some(instance) => {
                    let relayed = relayed_with_params(&request, &ctx, Some(&page_params));
                    let page = relay
                        .ask(instance, relayed)
                        .await
                        .and_then(|response| response_result(&response));
                    // An instance that is gone took its tasks with it; one
                    // that cannot list them is left out rather than
                    // failing the list.
                    match page {
                        Ok(page) => page,
                        Err(error) => {
                            tracing::debug!(%instance, error = %error.message, "tasks/list skips an instance");
                            break;
                        }
                    }
                }
            };
            if !take_page(&page, &mut tasks, &mut params)? {
                break;
            }
        }
    }
    tasks.sort_by(|a, b| list_order(a).cmp(&list_order(b)));
    tasks.dedup_by(|a, b| a.get("taskId") == b.get("taskId"));
    let result = serde_json::json!({ "tasks": tasks });
    serde_json::value::to_raw_value(&result).map_err(|e| ErrorObject::internal(e.to_string()))
}

/// Where a task goes in a gathered list: by creation time, then id.
fn list_order(task: &Value) -> (Option<&str>, Option<&str>) {
    let text = |name| task.get(name).and_then(Value::as_str);
    (text("createdAt"), text("taskId"))
}

/// The params of a request as an object (empty when absent).
fn params_object(params: Option<&RawValue>) -> Map<String, Value> {
    params
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default()
}

fn raw_params(params: &Map<String, Value>) -> Result<Box<RawValue>, ErrorObject> {
    serde_json::value::to_raw_value(params).map_err(|e| ErrorObject::internal(e.to_string()))
}

/// Adds a `tasks/list` page's tasks to `tasks`; whether another page
/// follows (its cursor then set in `params`).
fn take_page(
    page: &RawValue,
    tasks: &mut Vec<Value>,
    params: &mut Map<String, Value>,
) -> Result<bool, ErrorObject> {
    #[derive(Deserialize)]
    struct Page {
        #[serde(default)]
        tasks: Vec<Value>,
        #[serde(rename = "nextCursor")]
        next_cursor: Option<String>,
    }
    let page: Page = serde_json::from_str(page.get())
        .map_err(|e| ErrorObject::internal(format!("a tasks/list page: {e}")))?;
    tasks.extend(page.tasks);
    match page.next_cursor {
        Some(cursor) => {
            params.insert("cursor".to_owned(), Value::String(cursor));
            Ok(true)
        }
        None => Ok(false),
    }
}

/// The `taskId` a task request names.
fn task_id(params: Option<&RawValue>) -> Option<String> {
    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "taskId")]
        task_id: String,
    }
    let params: Params = serde_json::from_str(params?.get()).ok()?;
    Some(params.task_id)
}

/// A task a tool call's result created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedTask {
    /// Its id.
    pub id: String,
    /// Its time to live in milliseconds, if it has one.
    pub ttl_ms: Option<u64>,
}

impl CreatedTask {
    /// How long the task is found where it runs (at most a day).
    pub fn ttl(&self) -> Duration {
        self.ttl_ms
            .map(Duration::from_millis)
            .unwrap_or(MAX_TASK_TTL)
            .min(MAX_TASK_TTL)
    }
}

/// The task a result created: a 2026-07-28 result of type `task`
/// (top-level `taskId`) or a 2025-11-25 `CreateTaskResult` (`task`).
/// Only results that mention `taskId` are read.
pub fn created_task(result: &RawValue) -> Option<CreatedTask> {
    #[derive(Deserialize)]
    struct Inner {
        #[serde(rename = "taskId")]
        task_id: Option<String>,
        ttl: Option<u64>,
    }
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "taskId")]
        task_id: Option<String>,
        #[serde(rename = "ttlMs")]
        ttl: Option<u64>,
        task: Option<Inner>,
    }
    let text = result.get();
    if !text.contains("\"taskId\"") {
        return None;
    }
    let probe: Probe = serde_json::from_str(text).ok()?;
    match (probe.task_id, probe.task) {
        (Some(id), _) => Some(CreatedTask {
            id,
            ttl_ms: probe.ttl,
        }),
        (None, Some(inner)) => Some(CreatedTask {
            id: inner.task_id?,
            ttl_ms: inner.ttl,
        }),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn finds_the_task_of_either_era() {
        let legacy = raw(r#"{"task":{"taskId":"t1","status":"working","ttl":60000}}"#);
        assert_eq!(
            created_task(&legacy),
            Some(CreatedTask {
                id: "t1".into(),
                ttl_ms: Some(60_000)
            })
        );
        let modern = raw(r#"{"resultType":"task","taskId":"t2","status":"working"}"#);
        let task = created_task(&modern).unwrap();
        assert_eq!(task.id, "t2");
        assert_eq!(task.ttl(), MAX_TASK_TTL);
        let modern = raw(r#"{"resultType":"task","taskId":"t3","ttlMs":5000}"#);
        assert_eq!(created_task(&modern).unwrap().ttl(), Duration::from_secs(5));
        assert_eq!(created_task(&raw(r#"{"content":[]}"#)), None);
        assert_eq!(
            created_task(&raw(r#"{"content":[{"type":"text","text":"\"taskId\""}]}"#)),
            None
        );
    }

    #[test]
    fn a_response_gives_its_result_or_error() {
        let ok = response_result(r#"{"jsonrpc":"2.0","id":"relayed","result":{"a":1}}"#).unwrap();
        assert_eq!(ok.get(), r#"{"a":1}"#);
        let error = response_result(
            r#"{"jsonrpc":"2.0","id":"relayed","error":{"code":-32602,"message":"no"}}"#,
        )
        .unwrap_err();
        assert_eq!(error.code, -32602);
        assert!(response_result("not json").is_err());
    }

    #[test]
    fn a_page_adds_its_tasks_and_cursor() {
        let mut tasks = Vec::new();
        let mut params = Map::new();
        let more = take_page(
            &raw(r#"{"tasks":[{"taskId":"a"}],"nextCursor":"c1"}"#),
            &mut tasks,
            &mut params,
        )
        .unwrap();
        assert!(more);
        assert_eq!(params["cursor"], "c1");
        let more = take_page(
            &raw(r#"{"tasks":[{"taskId":"b"}]}"#),
            &mut tasks,
            &mut params,
        )
        .unwrap();
        assert!(!more);
        assert_eq!(tasks.len(), 2);
    }
}
