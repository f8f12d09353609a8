//! The server: a catalog of tools, resources, templates and prompts that
//! can change while running, and the [`Service`] that answers every feature
//! request for it.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use foldhash::{HashMap, HashMapExt as _};
use mcp_core::{
    BoxFuture, HandlerResult, IncomingRequest, Outbox, Peer, RequestContext, ResourceSubscriptions,
    Role, ServerIdentity, Service, SessionConfig, SessionLogLevel, TaskScope, Transport,
    box_future,
};
use mcp_schema::header_params::HeaderParam;
use mcp_schema::jsonrpc::{self, RequestId};
use mcp_schema::{
    CacheScope, CallToolResult, CompleteRequestParams, CompleteResult, CompletionReference,
    ContentBlock, ErrorObject, GetPromptRequestParams, Implementation, InputRequiredResult,
    ListChangedCapability, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, NotificationParams, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResult, ResourceRequestParams,
    ResourceUpdatedNotificationParams, ResourcesCapability, ServerCapabilities,
    SetLevelRequestParams, SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams, TaskNotificationParams, TaskRequestsCapability,
    TaskStatusNotificationParams, TaskToolsRequests, TasksCapability, methods, subscription_meta,
};
use serde::Serialize;

use crate::compat;
use crate::context::{Context, HandlerError, InputRound, Purpose};
use crate::cursor::{Signer, page};
use crate::prompt::PromptDef;
use crate::resource::{ResourceDef, TemplateDef};
use crate::tasks::{
    CallMode, TaskConfig, TaskEntry, TaskStore, call_mode, declares_tasks_extension,
    tasks_extension_required,
};
use crate::tool::ToolDef;
use mcp_core::sync::{MutexExt as _, RwLockExt as _};

mod catalog;
mod handlers;
mod notify;

/// How long a modern-era `requestState` stays valid.
const DEFAULT_STATE_TTL: Duration = Duration::from_secs(15 * 60);

/// Builds a [`Server`].
#[derive(Debug)]
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    catalog: Definitions,
    page_size: usize,
    cache_ttl: Option<Duration>,
    task_config: TaskConfig,
    on_subscriptions: Option<SubscriptionsHook>,
}

/// Called when the set of subscribed resources may have changed.
#[derive(Clone)]
struct SubscriptionsHook(Arc<dyn Fn(&Server) + Send + Sync>);

impl std::fmt::Debug for SubscriptionsHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SubscriptionsHook")
    }
}

impl ServerBuilder {
    /// Adds a tool.
    pub fn tool(mut self, tool: ToolDef) -> Self {
        self.catalog.tools.push(Arc::new(tool));
        self
    }

    /// Adds a resource.
    pub fn resource(mut self, resource: ResourceDef) -> Self {
        self.catalog.resources.push(Arc::new(resource));
        self
    }

    /// Adds a resource template.
    pub fn template(mut self, template: TemplateDef) -> Self {
        self.catalog.templates.push(Arc::new(template));
        self
    }

    /// Adds a prompt.
    pub fn prompt(mut self, prompt: PromptDef) -> Self {
        self.catalog.prompts.push(Arc::new(prompt));
        self
    }

    /// Sets the instructions given to clients.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Sets how many items a list page holds (default 100).
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self
    }

    /// Lets modern-era clients cache list results for `ttl` (default: not
    /// at all, `ttlMs: 0`).
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = Some(ttl);
        self
    }

    /// Calls `hook` whenever the resources clients are subscribed to change
    /// (a `resources/subscribe` or `unsubscribe`, a session with
    /// subscriptions closing, a `subscriptions/listen` stream naming
    /// resources opening or closing), so a server can watch only while
    /// someone listens; [`Server::subscribed_resources`] tells which.
    pub fn on_subscriptions_changed(
        mut self,
        hook: impl Fn(&Server) + Send + Sync + 'static,
    ) -> Self {
        self.on_subscriptions = Some(SubscriptionsHook(Arc::new(hook)));
        self
    }

    /// Sets the limits of the task store (how many tasks, how long they
    /// are kept, how often clients should poll).
    pub fn tasks(mut self, config: TaskConfig) -> Self {
        self.task_config = config;
        self
    }

    /// The server. Every feature is declared (with `listChanged`), so
    /// tools, resources and prompts can be added later; tasks too, as the
    /// 2025-11-25 `tasks` capability and the 2026-07-28 extension (each
    /// revision sees only its own).
    pub fn build(mut self) -> Server {
        self.catalog.index_tools();
        let listed = Some(ListChangedCapability::with_list_changed(true));
        let capabilities = ServerCapabilities {
            tools: listed.clone(),
            prompts: listed,
            resources: Some(ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
            }),
            logging: Some(Default::default()),
            completions: Some(Default::default()),
            tasks: Some(TasksCapability {
                list: Some(Default::default()),
                cancel: Some(Default::default()),
                requests: Some(TaskRequestsCapability {
                    tools: Some(TaskToolsRequests {
                        call: Some(Default::default()),
                    }),
                    ..Default::default()
                }),
            }),
            extensions: Some(BTreeMap::from([(
                mcp_schema::EXTENSION_TASKS.to_owned(),
                Default::default(),
            )])),
            ..Default::default()
        };
        let identity = ServerIdentity::new(self.info, capabilities);
        let identity = match self.instructions {
            Some(instructions) => identity.with_instructions(instructions),
            None => identity,
        };
        Server {
            inner: Arc::new(Inner {
                broadcast: std::sync::OnceLock::new(),
                identity: Arc::new(identity),
                catalog: RwLock::new(self.catalog),
                signer: RwLock::new(Signer::random()),
                page_size: self.page_size,
                cache_ttl: self.cache_ttl.unwrap_or_default(),
                state_ttl: DEFAULT_STATE_TTL,
                sessions: Mutex::new(HashMap::new()),
                listeners: Mutex::new(HashMap::new()),
                next_listener: AtomicU64::new(1),
                tasks: TaskStore::new(self.task_config),
                on_subscriptions: self.on_subscriptions,
            }),
        }
    }
}

/// What this server defines (its tools, resources, templates and
/// prompts), as it stands: not to be confused with a host's catalog, which
/// merges several servers'.
#[derive(Debug, Default)]
struct Definitions {
    tools: Vec<Arc<ToolDef>>,
    resources: Vec<Arc<ResourceDef>>,
    templates: Vec<Arc<TemplateDef>>,
    prompts: Vec<Arc<PromptDef>>,
    /// Bumped on every change; cursors from before a change are stale.
    generation: u64,
    /// Where each tool is in `tools`, by name (the first, where a builder
    /// was given two of one name).
    tool_index: HashMap<String, usize>,
}

impl Definitions {
    /// The tool named `name`.
    fn tool(&self, name: &str) -> Option<&Arc<ToolDef>> {
        self.tool_index.get(name).map(|&i| &self.tools[i])
    }

    /// Indexes the tools again: at build, and by `Server::change_catalog`
    /// after every change to them.
    fn index_tools(&mut self) {
        self.tool_index.clear();
        for (i, tool) in self.tools.iter().enumerate().rev() {
            self.tool_index.insert(tool.tool.name.clone(), i);
        }
    }
}

/// A modern-era `subscriptions/listen` stream.
struct Listener {
    peer: Peer,
    id: RequestId,
    filter: SubscriptionFilter,
    /// The server-wide notifications waiting to go to it.
    waiting: Arc<Waiting>,
}

/// A server-wide change: every instance of a server that serves the same
/// clients tells its own (see [`Server::set_broadcast`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ServerEvent {
    /// A resource changed (`notifications/resources/updated`).
    ResourceUpdated {
        /// The resource.
        uri: String,
    },
    /// The tools changed.
    ToolsListChanged,
    /// The resources or templates changed.
    ResourcesListChanged,
    /// The prompts changed.
    PromptsListChanged,
}

/// Where server-wide changes go for other instances.
struct Broadcast(Arc<dyn Fn(&ServerEvent) + Send + Sync>);

struct Inner {
    /// Server-wide changes for other instances, once set.
    broadcast: std::sync::OnceLock<Broadcast>,
    identity: Arc<ServerIdentity>,
    catalog: RwLock<Definitions>,
    signer: RwLock<Signer>,
    page_size: usize,
    cache_ttl: Duration,
    state_ttl: Duration,
    /// Legacy sessions that completed their handshake, by session key,
    /// with the server-wide notifications waiting to go to each.
    sessions: Mutex<HashMap<usize, (Peer, Arc<Waiting>)>>,
    listeners: Mutex<HashMap<u64, Listener>>,
    next_listener: AtomicU64,
    tasks: TaskStore,
    on_subscriptions: Option<SubscriptionsHook>,
}

/// An MCP server. Cheap to clone; all clones are the same server, which
/// may serve many sessions at once.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("info", self.inner.identity.info())
            .finish()
    }
}

impl Server {
    /// The context a handler gets for `request` on this server.
    pub(crate) fn handler_context(&self, request: RequestContext, round: InputRound) -> Context {
        Context::new(request, Arc::clone(&self.inner) as _, round)
    }
}

impl Context {
    /// The server this request runs on (to add or remove tools, notify
    /// resource updates ...): a handle, cheap to clone.
    pub fn server(&self) -> Server {
        let inner = Arc::downcast::<Inner>(Arc::clone(self.erased_server()))
            .unwrap_or_else(|_| unreachable!("a context is made by Server::handler_context"));
        Server { inner }
    }
}

/// Which list changed.
#[derive(Clone, Copy, Debug)]
enum ListKind {
    Tools,
    Resources,
    Prompts,
}

impl Server {
    /// Starts building a server called `name`, version `version`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            catalog: Definitions::default(),
            page_size: 100,
            cache_ttl: None,
            task_config: TaskConfig::default(),
            on_subscriptions: None,
        }
    }

    /// Who the server is and what it declares.
    pub fn identity(&self) -> &Arc<ServerIdentity> {
        &self.inner.identity
    }

    /// The engine settings for serving this server.
    pub fn session_config(&self) -> SessionConfig {
        SessionConfig::new(Role::Server(Arc::clone(&self.inner.identity)))
    }

    /// Serves one session over `transport` until the peer hangs up.
    pub async fn serve(&self, transport: Transport) {
        mcp_core::serve(transport, Arc::new(self.clone()), self.session_config())
            .wait()
            .await
    }

    /// Serves one session over this process's stdin and stdout.
    pub async fn serve_stdio(&self) {
        self.serve(mcp_core::stdio::stdio()).await
    }

    pub(crate) fn task_store(&self) -> &TaskStore {
        &self.inner.tasks
    }

    pub(crate) fn signer(&self) -> Signer {
        self.inner.signer.read_locked().clone()
    }

    /// Signs cursors and `requestState` with a key derived from `secret`
    /// from now on (see [`Signer::from_secret`]), instead of the random
    /// key of each server: instances that serve the same clients behind
    /// one load balancer must share it. Tokens issued before are refused.
    pub fn set_state_key(&self, secret: &[u8]) {
        *self.inner.signer.write_locked() = Signer::from_secret(secret);
    }

    pub(crate) fn page_size(&self) -> usize {
        self.inner.page_size
    }

    /// Tells whoever follows `task` that it changed: its legacy session
    /// (`notifications/tasks/status`), or the modern `subscriptions/listen`
    /// streams that asked for its id (`notifications/tasks`).
    pub(crate) fn task_changed(&self, task: &TaskEntry) {
        if let Some(peer) = &task.notify {
            let params = TaskStatusNotificationParams {
                meta: None,
                task: task.task(),
            };
            let mut outbox = Outbox::new();
            outbox.push(peer, methods::NOTIFICATION_TASKS_STATUS, &params, ());
            outbox.send();
        }
        if task.owner != TaskScope::Anyone {
            return;
        }
        let mut detailed = None;
        let mut outbox = Outbox::new();
        for listener in self.inner.listeners.locked().values() {
            let wanted = listener
                .filter
                .task_ids
                .iter()
                .flatten()
                .any(|id| *id == task.id);
            if wanted {
                let params = TaskNotificationParams {
                    meta: Some(subscription_meta(&listener.id)),
                    task: detailed.get_or_insert_with(|| task.detailed()).clone(),
                };
                outbox.push(&listener.peer, methods::NOTIFICATION_TASKS, &params, ());
            }
        }
        outbox.send();
    }
}

struct Unregister {
    server: Server,
    key: u64,
    names_resources: bool,
}

impl Drop for Unregister {
    fn drop(&mut self) {
        self.server.inner.listeners.locked().remove(&self.key);
        if self.names_resources {
            self.server.subscriptions_changed();
        }
    }
}

/// Puts `item` in place of the one with the same key, or at the end.
/// Always a change.
fn upsert<T>(items: &mut Vec<Arc<T>>, item: T, key: impl Fn(&T) -> &String) -> bool {
    match items.iter().position(|i| key(i) == key(&item)) {
        Some(at) => items[at] = Arc::new(item),
        None => items.push(Arc::new(item)),
    }
    true
}

/// Removes the item with key `name`; whether there was one.
fn remove<T>(items: &mut Vec<Arc<T>>, name: &str, key: impl Fn(&T) -> &String) -> bool {
    let before = items.len();
    items.retain(|i| key(i) != name);
    items.len() != before
}

/// The list changes waiting to go to one client: a legacy session or a
/// `subscriptions/listen` stream. A change raised while the same
/// `list_changed` still waits is told by that one, which goes out after it
/// (and the client reads the list then): so a flood of changes costs a
/// client at most one waiting notification per list, not a task per
/// change. (Resource updates are told one by one.)
#[derive(Default)]
struct Waiting {
    /// One bit per [`ListKind`] whose `list_changed` waits.
    lists: AtomicU8,
}

impl Waiting {
    /// Marks the `list_changed` of `kind` as waiting; `None` if it was.
    fn claim_list(self: &Arc<Self>, kind: ListKind) -> Option<Claim> {
        let bit = 1 << kind as u8;
        let was = self.lists.fetch_or(bit, Ordering::AcqRel);
        (was & bit == 0).then(|| Claim {
            waiting: Arc::clone(self),
            bit,
        })
    }
}

/// A `list_changed` marked as waiting, until this is dropped.
struct Claim {
    waiting: Arc<Waiting>,
    /// Its list's bit.
    bit: u8,
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.waiting.lists.fetch_and(!self.bit, Ordering::AcqRel);
    }
}

pub(crate) fn to_result<T: Serialize + ?Sized>(value: &T) -> HandlerResult {
    jsonrpc::to_raw(value).map_err(ErrorObject::internal)
}

impl Service for Server {
    fn handle_request(
        &self,
        request: IncomingRequest,
        ctx: RequestContext,
    ) -> BoxFuture<'static, HandlerResult> {
        let server = self.clone();
        box_future(move || server.dispatch(request, ctx))
    }

    fn session_ready(&self, peer: &Peer) {
        self.inner
            .sessions
            .locked()
            .insert(peer.session_key(), (peer.clone(), Arc::default()));
    }

    fn session_closed(&self, peer: &Peer) {
        // Only a session that completed a legacy handshake is listed or
        // owns tasks: each stateless request's own session has nothing to
        // undo, and takes no lock that every session shares.
        if peer.negotiated().is_none() {
            return;
        }
        self.inner.sessions.locked().remove(&peer.session_key());
        // A session that goes on elsewhere keeps its tasks here: they are
        // reached from there, and end with their time to live.
        let continues = peer.extensions().get::<mcp_core::ContinuesElsewhere>();
        if let (Some(owner), None) = (TaskScope::of_session(peer), continues) {
            self.inner.tasks.forget_owner(owner);
        }
        if ResourceSubscriptions::any(peer.extensions()) {
            self.subscriptions_changed();
        }
    }

    fn tool_header_params(&self, name: &str) -> Option<Arc<[HeaderParam]>> {
        self.read_catalog()
            .tool(name)
            .and_then(|t| t.header_params.clone())
    }

    fn tool_required_scopes(&self, name: &str) -> Option<Arc<[String]>> {
        self.read_catalog()
            .tool(name)
            .and_then(|t| t.required_scopes.clone())
    }
}

/// `tools/call` params as the server reads them: a `_meta` the dispatch
/// did not already cut off is skipped, not built into values, since the
/// engine has read it into the request's context; the name is borrowed
/// from the params' text where it has no escapes.
#[derive(Debug, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallParams<'p> {
    /// The tool's name.
    #[serde(borrow)]
    pub(crate) name: Cow<'p, str>,
    /// Its arguments.
    #[serde(default)]
    pub(crate) arguments: Option<mcp_schema::JsonObject>,
    /// Asks for the call to run as a task.
    #[serde(default)]
    pub(crate) task: Option<mcp_schema::TaskMetadata>,
    /// The answers to an earlier round's input requests.
    #[serde(default)]
    pub(crate) input_responses: Option<mcp_schema::InputResponses>,
    /// The state an earlier round handed the client.
    #[serde(default)]
    pub(crate) request_state: Option<String>,
}

/// Reads `tools/call` params (see [`CallParams`]).
fn call_params(params: Option<&str>) -> Result<CallParams<'_>, ErrorObject> {
    jsonrpc::from_params_text(params)
}

#[cfg(test)]
mod call_params_tests {
    use super::*;
    use mcp_schema::CallToolRequestParams;

    #[test]
    fn call_params_keep_every_member_but_meta() {
        // Every member named, so a member added to the type must be read
        // here too.
        let sent = CallToolRequestParams {
            meta: Some(serde_json::from_str(r#"{"progressToken": 1}"#).unwrap()),
            name: "echo".to_owned(),
            arguments: Some(serde_json::from_str(r#"{"text": "hi"}"#).unwrap()),
            task: Some(serde_json::from_str(r#"{"ttl": 1000}"#).unwrap()),
            input_responses: Some(serde_json::from_str(r#"{"a": {"action": "cancel"}}"#).unwrap()),
            request_state: Some("state".to_owned()),
        };
        let raw = jsonrpc::to_raw(&sent).unwrap();
        let read = call_params(Some(raw.get())).unwrap();
        let CallToolRequestParams {
            meta: _,
            name,
            arguments,
            task,
            input_responses,
            request_state,
        } = sent;
        assert_eq!(
            read,
            CallParams {
                name: Cow::Owned(name),
                arguments,
                task,
                input_responses,
                request_state,
            }
        );
        assert!(
            matches!(read.name, Cow::Borrowed(_)),
            "borrowed from the text"
        );
        let escaped = call_params(Some(r#"{"name": "e\u0063ho"}"#)).unwrap();
        assert_eq!(escaped.name, "echo");
        assert!(call_params(Some("{}")).is_err());
    }
}

#[cfg(test)]
mod session_list_tests {
    use super::*;
    use mcp_core::{FrameKind, InboundFrame, OutboundFrame, Transport};
    use std::time::Duration;

    fn listed(server: &Server) -> usize {
        server.inner.sessions.locked().len()
    }

    async fn send(client: &Transport, text: &str) {
        let frame = OutboundFrame {
            text: text.to_owned(),
            related: None,
            kind: FrameKind::Request,
        };
        client.outbound.send(frame).await.expect("server runs");
    }

    /// Waits until `listed` reaches `count` (bounded).
    async fn until_listed(server: &Server, count: usize) {
        let waited = tokio::time::timeout(Duration::from_secs(5), async {
            while listed(server) != count {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        assert!(
            waited.is_ok(),
            "{} sessions listed, not {count}",
            listed(server)
        );
    }

    #[tokio::test]
    async fn a_legacy_session_is_listed_once_ready_and_unlisted_when_it_ends() {
        let server = Server::builder("list-test", "0.0.1").build();
        let (server_side, mut client) = Transport::pair();
        let serving = tokio::spawn({
            let server = server.clone();
            async move { server.serve(server_side).await }
        });
        send(
            &client,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        )
        .await;
        let answer = client.inbound.recv().await;
        assert!(
            matches!(&answer, Some(InboundFrame::Text(text)) if text.contains("\"result\"")),
            "{answer:?}"
        );
        assert_eq!(listed(&server), 0, "not ready before initialized");
        send(
            &client,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        )
        .await;
        until_listed(&server, 1).await;
        drop(client);
        serving.await.expect("session ends");
        until_listed(&server, 0).await;
    }
}
