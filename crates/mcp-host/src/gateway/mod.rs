//! Gateway mode: the host's catalog served as one MCP server, on any
//! transport the engine and `mcp-http` offer, to clients of either era.
//!
//! Each request is resolved in the catalog and forwarded to its upstream
//! with the upstream's own name or URI; its progress comes back, its
//! cancellation goes on (dropping the forwarded request cancels it
//! upstream), and the upstream's result or error is passed back as it
//! came. The two sides' eras are independent: a 2026-07-28 upstream's
//! `input_required` result goes to a 2026-07-28 client as it is (the
//! retry, routed by name, reaches the same upstream with `requestState`
//! untouched), and is answered for a legacy client by asking it the same
//! questions as requests; a legacy upstream's own requests (sampling,
//! elicitation) go to the legacy client whose call is in flight on it.

use std::sync::Arc;

use mcp_core::{
    BoxFuture, HandlerResult, IncomingRequest, Peer, RequestContext, ResourceSubscriptions, Role,
    ServerIdentity, Service, SessionConfig, SessionLogLevel, TaskScope, box_future,
};
use mcp_schema::header_params::HeaderParam;
use mcp_schema::jsonrpc;
use mcp_schema::{
    ErrorObject, Implementation, LoggingLevel, ServerCapabilities, SubscriptionFilter, methods,
    subscription_meta,
};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

mod audited;
mod consent;
mod discovery;
mod forward;
mod guard;
mod hooked;
mod measured;
mod observed;
mod pages;
mod results;
mod target;
mod task_bridge;

use crate::catalog::{Catalog, Route};
use crate::host::Host;
use crate::params::Params;
use crate::policy::{Caller, Decision, Verdict};
use crate::upstream::Item;
use audited::Audited;
use consent::Settled;
use forward::forward;
use measured::Measured;
use observed::Observed;
pub use observed::{Decided, DecisionObserver};
pub use pages::ListOf;
use results::rewrite_uris;
use target::Target;

/// The host's catalog as an MCP server: all of it, or one view of it.
#[derive(Clone)]
pub struct Gateway {
    host: Host,
    identity: Arc<ServerIdentity>,
    /// The view served, where this serves one.
    view: Option<Arc<crate::views::View>>,
    /// The view's tools indexed for search (discovery mode).
    index: Arc<discovery::IndexCache>,
    /// Told what was decided for each request, where someone asked.
    observer: Option<DecisionObserver>,
}

/// Where a request by name or URI goes: its upstream, and the name or URI
/// that upstream knows the item by where it is not the one the client
/// used (read from the catalog once, so the request's own is not read
/// again nor the catalog's copied when nothing changes).
#[derive(Debug)]
struct Destination {
    upstream: usize,
    renamed: Option<String>,
}

impl Destination {
    /// The destination of `route`, asked for as `asked`.
    fn of(route: &Route, asked: &str) -> Destination {
        Destination {
            upstream: route.upstream,
            renamed: (route.original != asked).then(|| route.original.clone()),
        }
    }

    /// Sets member `key` of `params` to the upstream's name, where it has
    /// another.
    fn rename(&self, params: &mut Params, key: &str) -> Result<(), ErrorObject> {
        match &self.renamed {
            Some(original) => params.set(key, original),
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").finish_non_exhaustive()
    }
}

/// Keeps `identity`'s instructions those of the servers in the catalog,
/// while both the host and the identity live.
fn follow_instructions(host: &Host, identity: &Arc<ServerIdentity>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let mut events = host.events();
    let host = host.downgrade();
    let identity = Arc::downgrade(identity);
    runtime.spawn(async move {
        while let Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) | Ok(_) =
            events.recv().await
        {
            let (Some(host), Some(identity)) = (host.upgrade(), identity.upgrade()) else {
                return;
            };
            identity.set_instructions(host.catalog().instructions.clone());
        }
    });
}

fn capabilities() -> ServerCapabilities {
    serde_json::from_value(json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": true},
        "completions": {},
        "logging": {},
        "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
        "extensions": {(mcp_schema::EXTENSION_TASKS): {}},
    }))
    .unwrap_or_default()
}

impl Gateway {
    /// A gateway in front of `host`, called `name`. Its instructions are
    /// the upstreams', kept up to date as servers come and go.
    pub fn new(host: Host, name: &str, version: &str) -> Gateway {
        let identity = ServerIdentity::new(Implementation::new(name, version), capabilities());
        identity.set_instructions(host.catalog().instructions.clone());
        let identity = Arc::new(identity);
        follow_instructions(&host, &identity);
        Gateway {
            host,
            identity,
            view: None,
            index: Arc::default(),
            observer: None,
        }
    }

    /// A gateway in front of `view` of `host`'s catalog, called `name`:
    /// its lists hold the view's items only (or, in discovery mode, the
    /// three discovery tools), and what is outside it cannot be reached
    /// through it. Its instructions are the view's, else its servers'.
    pub fn for_view(host: Host, view: crate::views::View, name: &str, version: &str) -> Gateway {
        let mut gateway = Gateway::new(host, name, version);
        if let Some(own) = &view.instructions {
            let identity = ServerIdentity::new(Implementation::new(name, version), capabilities());
            identity.set_instructions(Some(own.clone()));
            gateway.identity = Arc::new(identity);
        }
        gateway.view = Some(Arc::new(view));
        gateway
    }

    /// The same gateway, telling `observer` what it decided for each
    /// request it answers (for an in-process client that shows it, as
    /// the console does).
    pub fn observed(mut self, observer: DecisionObserver) -> Gateway {
        self.observer = Some(observer);
        self
    }

    /// Whether `caller` sees an item of `list` of `catalog` (the host's
    /// catalog now) through this gateway, as its `*/list` answers show
    /// them: the policy's filter, definitions held back since they
    /// changed, and the view.
    pub fn sees<'a>(
        &'a self,
        catalog: &'a Catalog,
        caller: Caller,
    ) -> impl Fn(ListOf, &Item) -> bool + 'a {
        let visible = guard::filters_lists(&self.host)
            .then(|| guard::Visible::new(&self.host, catalog, caller));
        let servers = self.host.upstream_names();
        move |list, item| {
            visible.as_ref().is_none_or(|v| v.shows(list, item))
                && self.view_shows(catalog, &servers, list, item)
        }
    }

    /// The engine settings for serving the gateway.
    pub fn session_config(&self) -> SessionConfig {
        SessionConfig::new(Role::Server(Arc::clone(&self.identity)))
    }

    /// The host behind it.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The request path: what it reaches is resolved once (`target`),
    /// decided by the policy (`verdict`, where there is one), then
    /// forwarded; the audit record around it reads the same values.
    ///
    /// Also how a person answered, where one was asked (for the audit).
    async fn answer(
        self,
        method: String,
        mut params: Result<Params, ErrorObject>,
        target: Option<Result<Target, ErrorObject>>,
        verdict: Option<Verdict>,
        ctx: RequestContext,
    ) -> (HandlerResult, Option<&'static str>) {
        let mut answered = None;
        let scan = match &target {
            Some(Ok(target)) => guard::SecretsOf::of(&self.host, target),
            _ => None,
        };
        if let (Some(verdict), Some(Ok(target))) = (&verdict, &target)
            && let Err(error) = guard::enforce(verdict, target)
        {
            return (Err(error), None);
        }
        // Within the budgets, before anyone is asked; a 2026-07-28 retry
        // that brings the answer to an approval round was counted when
        // the round was sent.
        if !self.host.limits().is_empty()
            && !self.answers_approval_round(params.as_ref().ok())
            && let Err(refusal) = self.metered(&method, target.as_ref(), &ctx).await
        {
            return (Err(refusal.to_error()), None);
        }
        if let (Some(verdict), Some(Ok(target)), Ok(request)) = (&verdict, &target, &mut params)
            && verdict.decision == Decision::Ask
        {
            let _asking = self.host.asking();
            match consent::settle(&self.host, verdict, target, &method, request, &ctx).await {
                Settled::Go(how) => {
                    answered = Some(how);
                    if let Err(error) =
                        guard::recheck_edited(&self.host, target, request, &ctx, self.view_name())
                    {
                        return (Err(error), answered);
                    }
                }
                Settled::Reply(round) => return (Ok(round), Some("asked")),
                Settled::Refused(error, how) => return (Err(error), Some(how)),
            }
        }
        let hooked = match (&target, &mut params) {
            (Some(Ok(target)), Ok(request)) if !self.host.hooks().is_empty() => {
                match hooked::before(&self.host, target, request, &ctx).await {
                    Ok(call) => call,
                    Err(error) => return (Err(error), answered),
                }
            }
            _ => None,
        };
        let host = (scan.is_some() || hooked.is_some()).then(|| self.host.clone());
        let result = self.dispatch(method, params, target, ctx).await;
        let result = match (&hooked, &host, result) {
            (Some(call), Some(host), Ok(result)) => hooked::after(host, call, result).await,
            (_, _, result) => result,
        };
        let result = match (scan, host, result) {
            (Some(scan), Some(host), Ok(result)) => scan.apply(&host, result),
            (_, _, result) => result,
        };
        (result, answered)
    }

    /// Whether `params` answer an approval round the host sent and waits
    /// on (its `requestState`, a random token, names it).
    fn answers_approval_round(&self, params: Option<&Params>) -> bool {
        params
            .and_then(|params| params.str("requestState"))
            .filter(|state| state.starts_with(crate::consent::APPROVAL_STATE))
            .is_some_and(|token| self.host.consent().1.holds(&token))
    }

    /// Counts a request against the rate limits.
    async fn metered(
        &self,
        method: &str,
        target: Option<&Result<Target, ErrorObject>>,
        ctx: &RequestContext,
    ) -> Result<(), crate::limits::Refusal> {
        let limits = self.host.limits();
        let target = target.and_then(|t| t.as_ref().ok());
        let caller = Caller::of(ctx);
        let hints = match target {
            Some(target) if limits.reads_hints() => target.hints(&self.host),
            _ => None,
        };
        let request = crate::limits::Metered {
            caller: caller.name(),
            method,
            view: self.view_name(),
            server: target.map(|t| t.server.as_str()),
            item: target.map(|t| t.route.original.as_str()),
            hints,
        };
        match self.host.shared_budgets() {
            Some(shared) => limits.check_shared(&request, shared).await,
            None => limits.check(&request),
        }
    }

    async fn dispatch(
        self,
        method: String,
        params: Result<Params, ErrorObject>,
        target: Option<Result<Target, ErrorObject>>,
        ctx: RequestContext,
    ) -> HandlerResult {
        let method = method.as_str();
        // The engine has read `_meta` into the context: the params are read
        // without it (a 2026-07-28 client's is large, and repeated each
        // time), and what of it goes on is taken from the context.
        let params = params?;
        if let Some(list) = ListOf::asked_by(method) {
            let params = params.into_map()?;
            if list == ListOf::Tools && self.view.as_ref().is_some_and(|v| v.discovery) {
                return pages::whole(list, &discovery::tools(), ctx.revision);
            }
            let catalog = self.host.catalog();
            if !guard::filters_lists(&self.host) && self.view.is_none() {
                return pages::page(&catalog, list, &params, ctx.revision, None);
            }
            let shows = self.sees(&catalog, Caller::through(&ctx, self.view_name()));
            return pages::page(&catalog, list, &params, ctx.revision, Some(&shows));
        }
        let target = target.transpose()?;
        match method {
            methods::TOOLS_CALL => {
                let target = named(target)?;
                let to = Destination::of(&target.route, &target.asked);
                let upstream = to.upstream;
                let result = self.call_tool(to, params, &ctx).await?;
                let client = TaskScope::of(&ctx);
                self.host.task_routes().record(&result, upstream, &client);
                Ok(self.links_as_shown(result, upstream))
            }
            methods::PROMPTS_GET => {
                let target = named(target)?;
                let to = Destination::of(&target.route, &target.asked);
                let upstream = to.upstream;
                let result = self.forward(to, "name", method, params, &ctx).await?;
                Ok(self.links_as_shown(result, upstream))
            }
            methods::RESOURCES_READ => {
                let Target { route, asked, .. } = named(target)?;
                let to = Destination::of(&route, &asked);
                let rewritten = to.renamed.is_some();
                let result = self.forward(to, "uri", method, params, &ctx).await?;
                // Read under a rewritten URI: the contents say that URI.
                Ok(if rewritten {
                    rewrite_uris(result, |uri| (uri == route.original).then(|| asked.clone()))
                } else {
                    result
                })
            }
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
                self.subscription(method, params, named(target)?, &ctx)
                    .await
            }
            methods::COMPLETION_COMPLETE => self.complete(params.into_map()?, &ctx).await,
            methods::LOGGING_SET_LEVEL => {
                let level: LoggingLevel = params
                    .raw("level")
                    .and_then(|l| serde_json::from_str(l.get()).ok())
                    .ok_or_else(|| ErrorObject::invalid_params("\"level\" must be a log level"))?;
                SessionLogLevel::choose(ctx.peer.extensions(), level);
                for upstream in self.host.upstreams() {
                    upstream.want_log_level(level);
                }
                to_result(&json!({}))
            }
            methods::SUBSCRIPTIONS_LISTEN => self.listen(params.into_map()?, ctx).await,
            methods::TASKS_GET
            | methods::TASKS_RESULT
            | methods::TASKS_CANCEL
            | methods::TASKS_UPDATE => self.task_request(method, params, &ctx).await,
            methods::TASKS_LIST => self.task_list(&ctx).await,
            other => Err(ErrorObject::method_not_found(other)),
        }
    }

    /// A result of upstream `index` with the resource URIs it hands out
    /// (links, embedded resources) as the catalog shows them, where that
    /// upstream's URIs are shown rewritten.
    fn links_as_shown(&self, result: Box<RawValue>, index: usize) -> Box<RawValue> {
        let catalog = self.host.catalog();
        if !catalog.rewrites(index) {
            return result;
        }
        rewrite_uris(result, |uri| catalog.rewritten_link(index, uri))
    }

    /// Forwards a request to its upstream, with `key` (the name or URI)
    /// set to the upstream's own.
    async fn forward(
        &self,
        to: Destination,
        key: &str,
        method: &str,
        mut params: Params,
        ctx: &RequestContext,
    ) -> HandlerResult {
        to.rename(&mut params, key)?;
        let upstream = self.host.upstream_for(to.upstream, ctx).await?;
        forward(&upstream, method, params, ctx, self.host.held_calls()).await
    }

    /// `tools/call`, passed on as it is, or bridged between the eras'
    /// tasks: a 2025-11-25 client's task-augmented call to a 2026-07-28
    /// upstream, or a 2026-07-28 client's call of a 2025-11-25 tool that
    /// runs only as a task.
    async fn call_tool(
        &self,
        to: Destination,
        mut params: Params,
        ctx: &RequestContext,
    ) -> HandlerResult {
        let upstream = self.host.upstream_for(to.upstream, ctx).await?;
        let held = self.host.held_calls();
        let as_task = params.raw("task").is_some() && task_bridge::bridges(ctx, &upstream);
        let as_legacy_task = !as_task
            && task_bridge::bridges_to_legacy(ctx, &upstream)
            && self.runs_only_as_task(&params);
        to.rename(&mut params, "name")?;
        if as_task {
            task_bridge::call_as_task(&upstream, params, ctx, held).await
        } else if as_legacy_task {
            task_bridge::call_legacy_task(&upstream, params, ctx, held).await
        } else {
            forward(&upstream, methods::TOOLS_CALL, params, ctx, held).await
        }
    }

    /// Whether the tool `params` name, as the catalog shows it, runs only
    /// as a task.
    fn runs_only_as_task(&self, params: &Params) -> bool {
        let Some(exposed) = params.str("name") else {
            return false;
        };
        (self.host.catalog())
            .tool_definition(&exposed)
            .is_some_and(task_bridge::task_required)
    }

    async fn subscription(
        &self,
        method: &str,
        params: Params,
        target: Target,
        ctx: &RequestContext,
    ) -> HandlerResult {
        let Target {
            route,
            asked: exposed,
            ..
        } = target;
        let upstream = self.host.upstream_for(route.upstream, ctx).await?;
        // The upstream's subscription is shared by every client; the host
        // keeps each client's own and passes updates only to those that
        // asked. It is never unsubscribed upstream while a client may
        // still want it.
        if method == methods::RESOURCES_SUBSCRIBE {
            let client = upstream.client()?;
            if !client.revision().is_legacy() {
                upstream.subscribe(&route.original);
            } else if crate::upstream::subscribes(&client) {
                let mut upstream_params = params.clone();
                upstream_params.set_str("uri", &route.original)?;
                forward(
                    &upstream,
                    method,
                    upstream_params,
                    ctx,
                    self.host.held_calls(),
                )
                .await?;
            }
        }
        let subscribe = method == methods::RESOURCES_SUBSCRIBE;
        ResourceSubscriptions::change(ctx.peer.extensions(), exposed, subscribe);
        to_result(&json!({}))
    }

    async fn complete(
        &self,
        mut params: Map<String, Value>,
        ctx: &RequestContext,
    ) -> HandlerResult {
        let reference = params
            .get("ref")
            .and_then(Value::as_object)
            .cloned()
            .ok_or_else(|| ErrorObject::invalid_params("\"ref\" must be an object"))?;
        let catalog = self.host.catalog();
        let (route, key) = match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let name = reference
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let route = catalog.prompt(name).cloned().ok_or_else(|| {
                    ErrorObject::invalid_params(format!("unknown prompt: {name}"))
                })?;
                (route, "name")
            }
            Some("ref/resource") => {
                let uri = reference
                    .get("uri")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let route = catalog.resource(uri).ok_or_else(|| {
                    ErrorObject::invalid_params(format!("unknown resource: {uri}"))
                })?;
                (route, "uri")
            }
            _ => {
                return Err(ErrorObject::invalid_params(
                    "\"ref.type\" must be ref/prompt or ref/resource",
                ));
            }
        };
        let mut reference = reference;
        reference.insert(key.to_owned(), Value::String(route.original.clone()));
        params.insert("ref".into(), Value::Object(reference));
        let upstream = self.host.upstream_for(route.upstream, ctx).await?;
        let declared = upstream
            .client()?
            .server_capabilities()
            .completions
            .is_some();
        if !declared {
            // Nothing to suggest: an empty completion, not an error.
            return to_result(&json!({"completion": {"values": [], "hasMore": false}}));
        }
        forward(
            &upstream,
            methods::COMPLETION_COMPLETE,
            Params::from_map(params)?,
            ctx,
            self.host.held_calls(),
        )
        .await
    }

    /// A request about one task, sent to the upstream that runs it.
    async fn task_request(
        &self,
        method: &str,
        params: Params,
        ctx: &RequestContext,
    ) -> HandlerResult {
        if !ctx.revision.is_legacy() {
            let declared = ctx
                .client_capabilities()
                .extensions
                .as_ref()
                .is_some_and(|e| e.contains_key(mcp_schema::EXTENSION_TASKS));
            if !declared {
                let mut extensions = std::collections::BTreeMap::new();
                extensions.insert(mcp_schema::EXTENSION_TASKS.to_owned(), Default::default());
                return Err(mcp_schema::MissingRequiredClientCapabilityData {
                    required_capabilities: mcp_schema::ClientCapabilities {
                        extensions: Some(extensions),
                        ..Default::default()
                    },
                }
                .into_error(format!(
                    "{method} needs the client capability extensions[\"{}\"]",
                    mcp_schema::EXTENSION_TASKS
                )));
            }
        }
        let id = params
            .str("taskId")
            .ok_or_else(|| ErrorObject::invalid_params("\"taskId\" must be a string"))?;
        let id = id.as_ref();
        let owner = (self.host.task_routes())
            .route(id, &TaskScope::of(ctx))
            .ok_or_else(|| ErrorObject::invalid_params(format!("unknown task: {id}")))?;
        let upstream = self.host.upstream_for(owner, ctx).await?;
        let held = self.host.held_calls();
        if task_bridge::bridges(ctx, &upstream) {
            return task_bridge::task_request(&upstream, method, params, ctx, held).await;
        }
        if task_bridge::bridges_to_legacy(ctx, &upstream) {
            return task_bridge::legacy_task_request(&upstream, method, params, ctx, held).await;
        }
        forward(&upstream, method, params, ctx, self.host.held_calls()).await
    }

    /// `tasks/list`: the tasks this client started, as every upstream
    /// running some lists them (one page from each). An upstream lists
    /// the tasks of every client of the host: only this client's are
    /// shown.
    async fn task_list(&self, ctx: &RequestContext) -> HandlerResult {
        let asker = TaskScope::of(ctx);
        let mut tasks = Vec::new();
        for upstream in self.host.upstreams() {
            let Ok(client) = upstream.client() else {
                continue;
            };
            if task_bridge::bridges(ctx, &upstream) {
                let ids = self.host.task_routes().of(&asker, upstream.index());
                let held = self.host.held_calls();
                tasks.extend(task_bridge::list(&upstream, ids, ctx, held).await);
                continue;
            }
            let lists = client
                .server_capabilities()
                .tasks
                .as_ref()
                .is_some_and(|t| t.list.is_some());
            if !lists {
                continue;
            }
            let raw = forward(
                &upstream,
                methods::TASKS_LIST,
                Params::default(),
                ctx,
                self.host.held_calls(),
            )
            .await?;
            let mut page: Map<String, Value> =
                serde_json::from_str(raw.get()).map_err(ErrorObject::internal)?;
            if let Some(Value::Array(items)) = page.remove("tasks") {
                let routes = self.host.task_routes();
                tasks.extend(items.into_iter().filter(|item| {
                    item.get("taskId")
                        .and_then(Value::as_str)
                        .and_then(|id| routes.route(id, &asker))
                        == Some(upstream.index())
                }));
            }
        }
        to_result(&json!({ "tasks": tasks }))
    }

    /// A 2026-07-28 `subscriptions/listen` stream: open until the client
    /// cancels it or goes away.
    async fn listen(self, params: Map<String, Value>, ctx: RequestContext) -> HandlerResult {
        let filter: SubscriptionFilter = params
            .get("notifications")
            .cloned()
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| ErrorObject::invalid_params(format!("notifications: {e}")))?
            .unwrap_or_default();
        if filter.task_ids.is_some() {
            return Err(ErrorObject::invalid_params(
                "notifications about tasks are not routed through this host",
            ));
        }
        let mut ack = Map::new();
        ack.insert("_meta".into(), Value::Object(subscription_meta(&ctx.id)));
        ack.insert(
            "notifications".into(),
            serde_json::to_value(&filter).unwrap_or_default(),
        );
        ctx.peer
            .notify(methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, &ack)
            .await
            .map_err(ErrorObject::internal)?;
        let uris: Vec<String> = filter.resources().cloned().collect();
        let _registered =
            (self.host.downstream()).listen(&ctx.peer, &ctx.id, filter, self.view.clone());
        // The servers of the resources asked for send their updates.
        for uri in &uris {
            self.host.subscribe_upstream(uri).await;
            self.host.tell_subscribed(uri);
        }
        std::future::pending::<()>().await;
        unreachable!("a pending future never completes")
    }
}

impl Gateway {
    /// The name of the view this gateway serves, if it serves one.
    fn view_name(&self) -> Option<&str> {
        self.view.as_deref().map(|view| view.name.as_str())
    }

    /// `target`, where this gateway's view holds it.
    fn within_view(&self, target: Target) -> Result<Target, ErrorObject> {
        let Some(view) = &self.view else {
            return Ok(target);
        };
        let holds = match target.kind {
            crate::policy::Kind::Tool => self.view_has_tool(&target.server, &target.asked),
            _ => view.has_server(&target.server),
        };
        if holds {
            return Ok(target);
        }
        Err(ErrorObject::invalid_params(format!(
            "unknown {}: {} (not in view {:?})",
            target.kind.as_str(),
            target.asked,
            view.name
        )))
    }
}

/// A call of a discovery view's own tool: the view, the tool and its
/// arguments.
type DiscoveryCall = Box<(Arc<crate::views::View>, String, Map<String, Value>)>;

impl Gateway {
    /// The answer to a request: a discovery view's own tool's, or
    /// [`Gateway::answer`]'s.
    async fn respond(
        self,
        discovery: Option<DiscoveryCall>,
        method: String,
        params: Result<Params, ErrorObject>,
        target: Option<Result<Target, ErrorObject>>,
        verdict: Option<Verdict>,
        ctx: RequestContext,
    ) -> (HandlerResult, Option<&'static str>) {
        match discovery {
            Some(call) => {
                let (view, name, arguments) = *call;
                (self.discovery_call(view, name, arguments, ctx).await, None)
            }
            None => self.answer(method, params, target, verdict, ctx).await,
        }
    }
}

/// The target of a method that always has one.
fn named(target: Option<Target>) -> Result<Target, ErrorObject> {
    target.ok_or_else(|| ErrorObject::internal("the request names nothing to reach"))
}

fn to_result<T: Serialize + ?Sized>(value: &T) -> HandlerResult {
    jsonrpc::to_raw(value).map_err(ErrorObject::internal)
}

impl Service for Gateway {
    fn handle_request(
        &self,
        request: IncomingRequest,
        ctx: RequestContext,
    ) -> BoxFuture<'static, HandlerResult> {
        let gateway = self.clone();
        if !self.host.is_settled() {
            // The first requests find the servers that come up quickly.
            return Box::pin(async move {
                gateway.host.settled().await;
                gateway.handle_request(request, ctx).await
            });
        }
        let params = Params::read_parsed(request.params_past_meta().as_deref());
        let method = request.method;
        // A discovery view's own tools are answered here, counted and
        // audited as calls that reach no server.
        let discovery = match (&self.view, &params) {
            (Some(view), Ok(params)) if view.discovery && method == methods::TOOLS_CALL => params
                .str("name")
                .filter(|n| discovery::is_discovery_tool(n))
                .map(|name| {
                    let arguments = params
                        .raw("arguments")
                        .and_then(|raw| serde_json::from_str(raw.get()).ok())
                        .unwrap_or_default();
                    Box::new((Arc::clone(view), name.into_owned(), arguments))
                }),
            _ => None,
        };
        let target = params
            .as_ref()
            .ok()
            .filter(|_| discovery.is_none())
            .and_then(|params| Target::of(&self.host, &method, params, &ctx))
            .map(|target| target.and_then(|target| self.within_view(target)));
        let verdict = match (&target, &params) {
            (Some(Ok(target)), Ok(params)) => {
                guard::decide(&self.host, target, params, &ctx, self.view_name())
            }
            _ => None,
        };
        let measured = self.host.keeps_metrics().then(|| {
            let target = target.as_ref().and_then(|t| t.as_ref().ok());
            Measured::begin(&self.host, &method, target, &ctx)
        });
        let traced = self.host.keeps_traces().then(|| {
            let target = target.as_ref().and_then(|t| t.as_ref().ok());
            crate::traces::request_span(
                &method,
                target.map(|t| t.server.as_str()),
                target.map(|t| t.asked.as_str()),
                &ctx.meta.other,
                ctx.extensions().get::<mcp_http::TraceContext>().as_deref(),
            )
        });
        let observed = (self.observer.as_ref()).map(|o| Observed::begin(o, &ctx, verdict.as_ref()));
        let answering = match self.host.audit() {
            None => box_future(move || async move {
                let (result, answered) = gateway
                    .respond(discovery, method, params, target, verdict, ctx)
                    .await;
                if let Some(observed) = observed {
                    observed.finish(answered);
                }
                if let Some(measured) = measured {
                    measured.finish(&result);
                }
                result
            }),
            Some(log) => {
                let audited = Audited::begin(
                    log,
                    &self.host,
                    &method,
                    params.as_ref().ok(),
                    target.as_ref().and_then(|t| t.as_ref().ok()),
                    verdict.as_ref(),
                    &ctx,
                );
                box_future(move || async move {
                    let (result, answered) = gateway
                        .respond(discovery, method, params, target, verdict, ctx)
                        .await;
                    audited.finish(&result, answered);
                    if let Some(observed) = observed {
                        observed.finish(answered);
                    }
                    if let Some(measured) = measured {
                        measured.finish(&result);
                    }
                    result
                })
            }
        };
        match traced {
            None => answering,
            Some(span) => Box::pin(async move {
                use tracing::Instrument as _;
                let result = answering.instrument(span.clone()).await;
                if let Err(error) = &result {
                    crate::traces::failed(&span, &error.message);
                }
                result
            }),
        }
    }

    fn session_ready(&self, peer: &Peer) {
        self.host
            .downstream()
            .session_ready(peer, self.view.clone());
    }

    fn tool_header_params(&self, name: &str) -> Option<Arc<[HeaderParam]>> {
        self.host.catalog().header_params(name)
    }

    fn session_closed(&self, peer: &Peer) {
        if peer.negotiated().is_none() {
            return;
        }
        self.host.downstream().session_closed(peer);
        // Its grants for the session end with it (not with a copy that
        // goes on on another instance).
        let extensions = peer.extensions();
        if extensions.get::<mcp_core::ContinuesElsewhere>().is_none()
            && let Some(name) = extensions.get::<mcp_core::SessionName>()
        {
            let holder = crate::consent::session_holder(&name.0);
            self.host.consent().1.grants.forget(&holder);
        }
    }
}
