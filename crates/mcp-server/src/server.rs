//! The server: a catalog of tools, resources, templates and prompts that
//! can change while running, and the [`Service`] that answers every feature
//! request for it.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use foldhash::{HashMap, HashMapExt as _};
use mcp_core::{
    BoxFuture, HandlerResult, IncomingRequest, Peer, RequestContext, Role, ServerIdentity, Service,
    SessionConfig, Transport, box_future,
};
use mcp_schema::header_params::HeaderParam;
use mcp_schema::jsonrpc::{self, RequestId};
use mcp_schema::{
    CacheScope, CallToolResult, CompleteRequestParams, CompleteResult, CompletionReference,
    ContentBlock, ErrorObject, GetPromptRequestParams, Implementation, InputRequiredResult,
    ListChangedCapability, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, LoggingLevel, Meta, NotificationParams, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResult, ResourceRequestParams,
    ResourceUpdatedNotificationParams, ResourcesCapability, ServerCapabilities,
    SetLevelRequestParams, SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams, TaskNotificationParams, TaskRequestsCapability,
    TaskStatusNotificationParams, TaskToolsRequests, TasksCapability, methods,
};
use serde::Serialize;
use serde_json::Value;

use crate::compat;
use crate::context::{Context, HandlerError, InputRound, Purpose};
use crate::cursor::{Signer, page};
use crate::prompt::PromptDef;
use crate::resource::{ResourceDef, TemplateDef};
use crate::tasks::{
    CallMode, TaskConfig, TaskEntry, TaskOwner, TaskStore, call_mode, declares_tasks_extension,
    tasks_extension_required,
};
use crate::tool::ToolDef;

/// How long a modern-era `requestState` stays valid.
const DEFAULT_STATE_TTL: Duration = Duration::from_secs(15 * 60);

/// Builds a [`Server`].
#[derive(Debug)]
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    catalog: Catalog,
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
                identity: Arc::new(identity),
                catalog: RwLock::new(self.catalog),
                signer: Signer::random(),
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

#[derive(Debug, Default)]
struct Catalog {
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

impl Catalog {
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
}

struct Inner {
    identity: Arc<ServerIdentity>,
    catalog: RwLock<Catalog>,
    signer: Signer,
    page_size: usize,
    cache_ttl: Duration,
    state_ttl: Duration,
    /// Legacy sessions that completed their handshake, by session key.
    sessions: Mutex<HashMap<usize, Peer>>,
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

/// A legacy session's `logging/setLevel` choice.
#[derive(Debug, Default)]
pub(crate) struct SessionLogLevel(Mutex<Option<LoggingLevel>>);

impl SessionLogLevel {
    pub(crate) fn get(&self) -> Option<LoggingLevel> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A legacy session's resource subscriptions.
#[derive(Debug, Default)]
struct SessionSubscriptions(Mutex<HashSet<String>>);

/// Which list changed.
#[derive(Clone, Copy, Debug)]
enum ListKind {
    Tools,
    Resources,
    Prompts,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Server {
    /// Starts building a server called `name`, version `version`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            catalog: Catalog::default(),
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

    pub(crate) fn signer(&self) -> &Signer {
        &self.inner.signer
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
            spawn_notify(peer.clone(), methods::NOTIFICATION_TASKS_STATUS, &params);
        }
        if task.owner != TaskOwner::Anyone {
            return;
        }
        let mut detailed = None;
        for listener in lock(&self.inner.listeners).values() {
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
                spawn_notify(listener.peer.clone(), methods::NOTIFICATION_TASKS, &params);
            }
        }
    }

    fn read_catalog(&self) -> std::sync::RwLockReadGuard<'_, Catalog> {
        self.inner.catalog.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies `change`; when it reports a change, cursors handed out before
    /// go stale and clients are told the list changed.
    fn change_catalog(&self, kind: ListKind, change: impl FnOnce(&mut Catalog) -> bool) -> bool {
        let changed = {
            let mut catalog = self
                .inner
                .catalog
                .write()
                .unwrap_or_else(|p| p.into_inner());
            let changed = change(&mut catalog);
            if changed {
                catalog.generation += 1;
                if matches!(kind, ListKind::Tools) {
                    catalog.index_tools();
                }
            }
            changed
        };
        if changed {
            self.list_changed(kind);
        }
        changed
    }

    /// Adds (or replaces, by name) a tool; clients are told the list changed.
    pub fn add_tool(&self, tool: ToolDef) {
        self.change_catalog(ListKind::Tools, |c| {
            upsert(&mut c.tools, tool, |t| &t.tool.name)
        });
    }

    /// Removes a tool; returns whether it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.change_catalog(ListKind::Tools, |c| {
            remove(&mut c.tools, name, |t| &t.tool.name)
        })
    }

    /// Adds (or replaces, by URI) a resource.
    pub fn add_resource(&self, resource: ResourceDef) {
        self.change_catalog(ListKind::Resources, |c| {
            upsert(&mut c.resources, resource, |r| &r.resource.uri)
        });
    }

    /// Removes a resource; returns whether it existed.
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.change_catalog(ListKind::Resources, |c| {
            remove(&mut c.resources, uri, |r| &r.resource.uri)
        })
    }

    /// Adds (or replaces, by URI template) a resource template.
    pub fn add_template(&self, template: TemplateDef) {
        self.change_catalog(ListKind::Resources, |c| {
            upsert(&mut c.templates, template, |t| &t.template.uri_template)
        });
    }

    /// Removes a resource template; returns whether it existed.
    pub fn remove_template(&self, uri_template: &str) -> bool {
        self.change_catalog(ListKind::Resources, |c| {
            remove(&mut c.templates, uri_template, |t| &t.template.uri_template)
        })
    }

    /// Adds (or replaces, by name) a prompt.
    pub fn add_prompt(&self, prompt: PromptDef) {
        self.change_catalog(ListKind::Prompts, |c| {
            upsert(&mut c.prompts, prompt, |p| &p.prompt.name)
        });
    }

    /// Removes a prompt; returns whether it existed.
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.change_catalog(ListKind::Prompts, |c| {
            remove(&mut c.prompts, name, |p| &p.prompt.name)
        })
    }

    /// Every resource URI some client is subscribed to now: by a legacy
    /// session's `resources/subscribe`, or a `subscriptions/listen` stream.
    pub fn subscribed_resources(&self) -> BTreeSet<String> {
        let mut uris = BTreeSet::new();
        for peer in lock(&self.inner.sessions).values() {
            if let Some(subscriptions) = peer.extensions().get::<SessionSubscriptions>() {
                uris.extend(lock(&subscriptions.0).iter().cloned());
            }
        }
        for listener in lock(&self.inner.listeners).values() {
            uris.extend(
                listener
                    .filter
                    .resource_subscriptions
                    .iter()
                    .flatten()
                    .cloned(),
            );
        }
        uris
    }

    /// Runs the subscriptions hook, if there is one.
    fn subscriptions_changed(&self) {
        if let Some(hook) = &self.inner.on_subscriptions {
            (hook.0)(self);
        }
    }

    /// Tells every client subscribed to `uri` that it changed.
    pub fn notify_resource_updated(&self, uri: &str) {
        let params = ResourceUpdatedNotificationParams::new(uri);
        for peer in lock(&self.inner.sessions).values() {
            let subscribed = peer
                .extensions()
                .get::<SessionSubscriptions>()
                .is_some_and(|s| lock(&s.0).contains(uri));
            if subscribed {
                spawn_notify(
                    peer.clone(),
                    methods::NOTIFICATION_RESOURCES_UPDATED,
                    &params,
                );
            }
        }
        for listener in lock(&self.inner.listeners).values() {
            if listener
                .filter
                .resource_subscriptions
                .iter()
                .flatten()
                .any(|u| u == uri)
            {
                let mut params = params.clone();
                params.meta = Some(subscription_meta(&listener.id));
                spawn_notify(
                    listener.peer.clone(),
                    methods::NOTIFICATION_RESOURCES_UPDATED,
                    &params,
                );
            }
        }
    }

    fn list_changed(&self, kind: ListKind) {
        let method = match kind {
            ListKind::Tools => methods::NOTIFICATION_TOOLS_LIST_CHANGED,
            ListKind::Resources => methods::NOTIFICATION_RESOURCES_LIST_CHANGED,
            ListKind::Prompts => methods::NOTIFICATION_PROMPTS_LIST_CHANGED,
        };
        for peer in lock(&self.inner.sessions).values() {
            spawn_notify(peer.clone(), method, &NotificationParams::default());
        }
        for listener in lock(&self.inner.listeners).values() {
            let wanted = match kind {
                ListKind::Tools => listener.filter.tools_list_changed,
                ListKind::Resources => listener.filter.resources_list_changed,
                ListKind::Prompts => listener.filter.prompts_list_changed,
            };
            if wanted == Some(true) {
                let params = NotificationParams {
                    meta: Some(subscription_meta(&listener.id)),
                };
                spawn_notify(listener.peer.clone(), method, &params);
            }
        }
    }

    async fn dispatch(self, request: IncomingRequest, ctx: RequestContext) -> HandlerResult {
        // The engine has read `_meta` into the context: the typed params
        // are read past it.
        let past_meta = request.params_past_meta();
        let params = past_meta.as_deref();
        let revision = ctx.revision;
        match request.method.as_str() {
            methods::TOOLS_LIST => {
                let (mut tools, next) =
                    self.list("tools", params, |c| &c.tools, |t| t.tool.clone())?;
                if !revision.has_structured_output() {
                    tools.iter_mut().for_each(|t| t.output_schema = None);
                }
                if !revision.has_core_tasks() {
                    tools.iter_mut().for_each(|t| t.execution = None);
                }
                let mut result = ListToolsResult::new(tools);
                result.next_cursor = next;
                (result.ttl_ms, result.cache_scope) = self.cache_hints(revision);
                to_result(&result)
            }
            // Each call's params read in a statement of its own: a
            // temporary of the call's statement would be held across the
            // await, in every request's future.
            methods::TOOLS_CALL => {
                let params = call_params(params)?;
                self.call_tool(params, ctx).await
            }
            methods::RESOURCES_LIST => {
                let (resources, next) = self.list(
                    "resources",
                    params,
                    |c| &c.resources,
                    |r| r.resource.clone(),
                )?;
                let mut result = ListResourcesResult {
                    resources,
                    next_cursor: next,
                    ..Default::default()
                };
                (result.ttl_ms, result.cache_scope) = self.cache_hints(revision);
                to_result(&result)
            }
            methods::RESOURCES_TEMPLATES_LIST => {
                let (resource_templates, next) = self.list(
                    "templates",
                    params,
                    |c| &c.templates,
                    |t| t.template.clone(),
                )?;
                let mut result = ListResourceTemplatesResult {
                    resource_templates,
                    next_cursor: next,
                    ..Default::default()
                };
                (result.ttl_ms, result.cache_scope) = self.cache_hints(revision);
                to_result(&result)
            }
            methods::RESOURCES_READ => {
                let params = jsonrpc::from_params_text(params)?;
                self.read_resource(params, ctx).await
            }
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
                let uri = jsonrpc::from_params_text::<ResourceRequestParams>(params)?.uri;
                let subscriptions = ctx
                    .peer
                    .extensions()
                    .get_or_insert_with(SessionSubscriptions::default);
                let changed = if request.method == methods::RESOURCES_SUBSCRIBE {
                    lock(&subscriptions.0).insert(uri)
                } else {
                    lock(&subscriptions.0).remove(&uri)
                };
                if changed {
                    self.subscriptions_changed();
                }
                to_result(&serde_json::json!({}))
            }
            methods::PROMPTS_LIST => {
                let (prompts, next) =
                    self.list("prompts", params, |c| &c.prompts, |p| p.prompt.clone())?;
                let mut result = ListPromptsResult {
                    prompts,
                    next_cursor: next,
                    ..Default::default()
                };
                (result.ttl_ms, result.cache_scope) = self.cache_hints(revision);
                to_result(&result)
            }
            methods::PROMPTS_GET => {
                let params = jsonrpc::from_params_text(params)?;
                self.get_prompt(params, ctx).await
            }
            methods::COMPLETION_COMPLETE => self.complete(jsonrpc::from_params_text(params)?),
            methods::LOGGING_SET_LEVEL => {
                let level = jsonrpc::from_params_text::<SetLevelRequestParams>(params)?.level;
                let stored = ctx
                    .peer
                    .extensions()
                    .get_or_insert_with(SessionLogLevel::default);
                *lock(&stored.0) = Some(level);
                to_result(&serde_json::json!({}))
            }
            // Boxed: a long-lived stream, and the largest future here.
            methods::SUBSCRIPTIONS_LISTEN => {
                let params = jsonrpc::from_params_text(params)?;
                Box::pin(self.listen(params, ctx)).await
            }
            methods::TASKS_GET
            | methods::TASKS_RESULT
            | methods::TASKS_LIST
            | methods::TASKS_CANCEL
            | methods::TASKS_UPDATE => self.task_request(&request.method, params, ctx).await,
            other => Err(ErrorObject::method_not_found(other)),
        }
    }

    /// One page of a catalog list: the page is picked under the read lock,
    /// and only its items are described.
    fn list<D, T>(
        &self,
        kind: &str,
        params: Option<&str>,
        items: impl Fn(&Catalog) -> &Vec<Arc<D>>,
        describe: impl Fn(&D) -> T,
    ) -> Result<(Vec<T>, Option<String>), ErrorObject> {
        let cursor = jsonrpc::from_params_text::<PaginatedRequestParams>(params)?.cursor;
        let (chunk, next) = {
            let catalog = self.read_catalog();
            let signer = &self.inner.signer;
            page(
                signer,
                kind,
                catalog.generation,
                items(&catalog),
                cursor.as_deref(),
                self.inner.page_size,
            )?
        };
        Ok((chunk.iter().map(|item| describe(item)).collect(), next))
    }

    fn cache_hints(&self, revision: ProtocolVersion) -> (Option<u64>, Option<CacheScope>) {
        if revision.is_legacy() {
            (None, None)
        } else {
            (
                Some(self.inner.cache_ttl.as_millis() as u64),
                Some(CacheScope::Private),
            )
        }
    }

    fn context(
        &self,
        ctx: RequestContext,
        purpose: Purpose<'_>,
        state: Option<&str>,
        responses: Option<mcp_schema::InputResponses>,
    ) -> Result<Context, ErrorObject> {
        let round = if ctx.revision.uses_input_required() {
            InputRound::open(&self.inner.signer, purpose, state, responses)?
        } else {
            InputRound::default()
        };
        Ok(Context::new(ctx, self.clone(), round))
    }

    /// Turns a handler's outcome into the response: the result, an
    /// `input_required` result, or an error.
    fn finish<T: Serialize>(
        &self,
        outcome: Result<T, HandlerError>,
        round: &InputRound,
        purpose: Purpose<'_>,
        on_failure: impl FnOnce(String) -> HandlerResult,
    ) -> HandlerResult {
        match outcome {
            Ok(value) => to_result(&value),
            Err(HandlerError::InputRequired) if round.has_questions() => {
                let (requests, state) =
                    round.close(&self.inner.signer, purpose, self.inner.state_ttl);
                to_result(&InputRequiredResult::new(requests, Some(state)))
            }
            Err(HandlerError::InputRequired) => Err(ErrorObject::internal(
                "handler asked for input without a question",
            )),
            Err(HandlerError::ContinueAsTask) => Err(ErrorObject::internal(
                "only a deferred-task tool can continue as a task",
            )),
            Err(HandlerError::Protocol(e)) => Err(e),
            Err(HandlerError::Failed(message)) => on_failure(message),
        }
    }

    async fn call_tool(&self, mut params: CallParams<'_>, ctx: RequestContext) -> HandlerResult {
        let revision = ctx.revision;
        let tool = self.read_catalog().tool(&params.name).cloned();
        let Some(tool) = tool else {
            return Err(ErrorObject::invalid_params(format!(
                "unknown tool: {}",
                params.name
            )));
        };
        let mode = call_mode(&tool, params.task.as_ref(), &ctx)?;
        let args = match tool.check_arguments(params.arguments.take().unwrap_or_default()) {
            Ok(args) => args,
            // From 2025-11-25 on, the model sees bad arguments as a tool
            // error it can correct; before, they are a protocol error.
            Err(message) if revision >= ProtocolVersion::V2025_11_25 => {
                return to_result(&CallToolResult::error(message));
            }
            Err(message) => return Err(ErrorObject::invalid_params(message)),
        };
        // A deferred task starts as an ordinary request (2026-07-28 only:
        // in 2025-11-25 the client asked for a task and gets one at once).
        let deferred = match mode {
            CallMode::Task(ttl) if tool.deferred_task && !revision.has_core_tasks() => Some(ttl),
            CallMode::Task(ttl) => return self.start_task(tool, args, &params, ttl, ctx),
            CallMode::Direct => None,
        };
        let purpose = Purpose {
            method: methods::TOOLS_CALL,
            name: &params.name,
        };
        let mut ctx = self.context(
            ctx,
            purpose,
            params.request_state.as_deref(),
            params.input_responses,
        )?;
        // What a deferred task needs once the handler has the context.
        let task = deferred.map(|ttl| (ttl, args.clone(), ctx.request.clone()));
        if deferred.is_some() {
            ctx = ctx.with_task_deferred();
        }
        let round = ctx.shared_round();
        let outcome = (tool.handler)(args, ctx).await;
        if let (Err(HandlerError::ContinueAsTask), Some((ttl, args, request))) = (&outcome, task) {
            let (_, state, responses) = round.suspend();
            let round = InputRound::resume(responses, state);
            return self.launch_task(tool, args, ttl, request, round);
        }
        let outcome = outcome.map(|mut result| {
            if !revision.has_structured_output() {
                result.structured_content = None;
            }
            compat::downgrade_all(&mut result.content, revision);
            result
        });
        self.finish(outcome, &round, purpose, |message| {
            to_result(&CallToolResult::error(message))
        })
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        ctx: RequestContext,
    ) -> HandlerResult {
        let revision = ctx.revision;
        let uri = params.uri;
        let found = {
            let catalog = self.read_catalog();
            match catalog.resources.iter().find(|r| r.resource.uri == uri) {
                Some(r) => Some((Arc::clone(&r.read), BTreeMap::new())),
                None => catalog
                    .templates
                    .iter()
                    .find_map(|t| t.matches(&uri).map(|vars| (Arc::clone(&t.read), vars))),
            }
        };
        let Some((read, vars)) = found else {
            return Err(ErrorObject::new(
                revision.resource_not_found_code(),
                format!("Resource not found: {uri}"),
            )
            .with_data(serde_json::json!({ "uri": uri })));
        };
        let purpose = Purpose {
            method: methods::RESOURCES_READ,
            name: &uri,
        };
        let ctx = self.context(
            ctx,
            purpose,
            params.request_state.as_deref(),
            params.input_responses,
        )?;
        let round = ctx.shared_round();
        let outcome = read(uri.clone(), vars, ctx).await.map(|contents| {
            let mut result = ReadResourceResult::new(contents);
            (result.ttl_ms, result.cache_scope) = self.cache_hints(revision);
            result
        });
        self.finish(outcome, &round, purpose, |message| {
            Err(ErrorObject::internal(message))
        })
    }

    async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        ctx: RequestContext,
    ) -> HandlerResult {
        let prompt = self
            .read_catalog()
            .prompts
            .iter()
            .find(|p| p.prompt.name == params.name)
            .cloned();
        let Some(prompt) = prompt else {
            return Err(ErrorObject::invalid_params(format!(
                "unknown prompt: {}",
                params.name
            )));
        };
        let args: BTreeMap<String, String> =
            params.arguments.unwrap_or_default().into_iter().collect();
        prompt.check_arguments(&args).map_err(|e| match e {
            HandlerError::Protocol(e) => e,
            other => ErrorObject::invalid_params(other),
        })?;
        let purpose = Purpose {
            method: methods::PROMPTS_GET,
            name: &params.name,
        };
        let ctx = self.context(
            ctx,
            purpose,
            params.request_state.as_deref(),
            params.input_responses,
        )?;
        let revision = ctx.revision();
        let round = ctx.shared_round();
        let outcome = (prompt.handler)(args, ctx).await.map(|mut result| {
            for message in &mut result.messages {
                let content = std::mem::replace(&mut message.content, ContentBlock::text(""));
                message.content = compat::downgrade(content, revision);
            }
            result
        });
        self.finish(outcome, &round, purpose, |message| {
            Err(ErrorObject::internal(message))
        })
    }

    fn complete(&self, params: CompleteRequestParams) -> HandlerResult {
        let context = params.context.and_then(|c| c.arguments).unwrap_or_default();
        let catalog = self.read_catalog();
        let completer = match &params.reference {
            CompletionReference::Prompt(p) => {
                let prompt = catalog
                    .prompts
                    .iter()
                    .find(|d| d.prompt.name == p.name)
                    .ok_or_else(|| {
                        ErrorObject::invalid_params(format!("unknown prompt: {}", p.name))
                    })?;
                prompt.completers.get(&params.argument.name).cloned()
            }
            CompletionReference::ResourceTemplate(r) => {
                let template = catalog
                    .templates
                    .iter()
                    .find(|t| t.template.uri_template == r.uri)
                    .ok_or_else(|| {
                        ErrorObject::invalid_params(format!("unknown resource template: {}", r.uri))
                    })?;
                template.completers.get(&params.argument.name).cloned()
            }
        };
        drop(catalog);
        let values = completer
            .map(|c| c(&params.argument.value, &context))
            .unwrap_or_default();
        to_result(&CompleteResult::from_values(values))
    }

    async fn listen(
        &self,
        params: SubscriptionsListenRequestParams,
        ctx: RequestContext,
    ) -> HandlerResult {
        let requested = params.notifications;
        if requested.task_ids.is_some() && !declares_tasks_extension(ctx.client_capabilities()) {
            return Err(tasks_extension_required("notifications about tasks"));
        }
        // Everything this server can notify about is honoured.
        let agreed = requested.clone();
        let mut ack = SubscriptionsAcknowledgedNotificationParams {
            notifications: agreed.clone(),
            ..Default::default()
        };
        ack.meta = Some(subscription_meta(&ctx.id));
        ctx.peer
            .notify(methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, &ack)
            .await
            .map_err(ErrorObject::internal)?;
        let key = self.inner.next_listener.fetch_add(1, Ordering::Relaxed);
        let names_resources = agreed
            .resource_subscriptions
            .as_ref()
            .is_some_and(|uris| !uris.is_empty());
        lock(&self.inner.listeners).insert(
            key,
            Listener {
                peer: ctx.peer.clone(),
                id: ctx.id.clone(),
                filter: agreed,
            },
        );
        if names_resources {
            self.subscriptions_changed();
        }
        let _unregister = Unregister {
            server: self.clone(),
            key,
            names_resources,
        };
        // The stream lasts until the client cancels it or goes away; the
        // engine then drops this future, which unregisters the listener.
        std::future::pending::<()>().await;
        unreachable!("a pending future never completes")
    }
}

struct Unregister {
    server: Server,
    key: u64,
    names_resources: bool,
}

impl Drop for Unregister {
    fn drop(&mut self) {
        lock(&self.server.inner.listeners).remove(&self.key);
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

fn subscription_meta(id: &RequestId) -> Meta {
    let mut meta = Meta::new();
    meta.insert(
        mcp_schema::META_SUBSCRIPTION_ID.into(),
        serde_json::to_value(id).unwrap_or(Value::Null),
    );
    meta
}

fn spawn_notify<P: Serialize>(peer: Peer, method: &'static str, params: &P) {
    let Ok(params) = jsonrpc::to_raw(params) else {
        return;
    };
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            let _ = peer.notify_raw(method, Some(&params)).await;
        });
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
        lock(&self.inner.sessions).insert(peer.session_key(), peer.clone());
    }

    fn session_closed(&self, peer: &Peer) {
        // Only a session that completed a legacy handshake is listed or
        // owns tasks: each stateless request's own session has nothing to
        // undo, and takes no lock that every session shares.
        if peer.negotiated().is_none() {
            return;
        }
        lock(&self.inner.sessions).remove(&peer.session_key());
        if let Some(owner) = TaskOwner::of_session(peer) {
            self.inner.tasks.forget_owner(owner);
        }
        let had_subscriptions = peer
            .extensions()
            .get::<SessionSubscriptions>()
            .is_some_and(|s| !lock(&s.0).is_empty());
        if had_subscriptions {
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
        lock(&server.inner.sessions).len()
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
