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

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp_core::{
    BoxFuture, HandlerResult, IncomingRequest, Peer, RequestContext, RequestError, RequestOptions,
    Role, ServerIdentity, Service, SessionConfig, box_future,
};
use mcp_schema::header_params::HeaderParam;
use mcp_schema::jsonrpc;
use mcp_schema::{
    ErrorObject, Implementation, LoggingLevel, META_CLIENT_CAPABILITIES, META_CLIENT_INFO,
    META_LOG_LEVEL, META_PROTOCOL_VERSION, META_SERVER_INFO, ServerCapabilities,
    SubscriptionFilter, error_codes, methods,
};
use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::catalog::Route;
use crate::downstream::{LogLevel, Subscriptions, subscription_meta};
use crate::host::Host;
use crate::rounds::{HeldCall, HeldCalls};
use crate::upstream::{Asked, Item, Upstream};

/// How many `input_required` rounds the host answers for a legacy client.
const MAX_ROUNDS: usize = 8;

/// Progress updates of one call waiting to be passed on, at most.
const PROGRESS_QUEUE: usize = 64;

/// Items per page of the host's lists.
const PAGE_SIZE: usize = 100;

/// The host's catalog as an MCP server.
#[derive(Clone)]
pub struct Gateway {
    host: Host,
    identity: Arc<ServerIdentity>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").finish_non_exhaustive()
    }
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
    /// the upstreams' as they are now (call after
    /// [`Host::wait_started`]).
    pub fn new(host: Host, name: &str, version: &str) -> Gateway {
        let mut identity = ServerIdentity::new(Implementation::new(name, version), capabilities());
        if let Some(instructions) = host.catalog().instructions.clone() {
            identity = identity.with_instructions(instructions);
        }
        Gateway {
            host,
            identity: Arc::new(identity),
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

    async fn dispatch(self, request: IncomingRequest, ctx: RequestContext) -> HandlerResult {
        let method = request.method.as_str();
        // The engine has read `_meta` into the context: the params are read
        // without it (a 2026-07-28 client's is large, and repeated each
        // time), and what of it goes on is taken from the context.
        let mut params = read_params(request.params_past_meta().as_deref())?;
        params.remove("_meta");
        match method {
            methods::TOOLS_LIST => self.page(ListOf::Tools, &params, &ctx),
            methods::PROMPTS_LIST => self.page(ListOf::Prompts, &params, &ctx),
            methods::RESOURCES_LIST => self.page(ListOf::Resources, &params, &ctx),
            methods::RESOURCES_TEMPLATES_LIST => self.page(ListOf::Templates, &params, &ctx),
            methods::TOOLS_CALL => {
                let route = self.by_name(&params, "tool", |c, n| c.tool(n).cloned())?;
                let upstream = route.upstream;
                let result = self.forward(route, "name", method, params, &ctx).await?;
                self.host.inner.tasks.record(&result, upstream);
                Ok(self.links_as_shown(result, upstream))
            }
            methods::PROMPTS_GET => {
                let route = self.by_name(&params, "prompt", |c, n| c.prompt(n).cloned())?;
                let upstream = route.upstream;
                let result = self.forward(route, "name", method, params, &ctx).await?;
                Ok(self.links_as_shown(result, upstream))
            }
            methods::RESOURCES_READ => {
                let route = self.by_uri(&params, &ctx)?;
                let asked = params
                    .get("uri")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let original = route.original.clone();
                let result = self.forward(route, "uri", method, params, &ctx).await?;
                // Read under a rewritten URI: the contents say that URI.
                Ok(if asked == original {
                    result
                } else {
                    rewrite_uris(result, |uri| (uri == original).then(|| asked.clone()))
                })
            }
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
                self.subscription(method, params, &ctx).await
            }
            methods::COMPLETION_COMPLETE => self.complete(params, &ctx).await,
            methods::LOGGING_SET_LEVEL => {
                let level: LoggingLevel = params
                    .get("level")
                    .cloned()
                    .and_then(|l| serde_json::from_value(l).ok())
                    .ok_or_else(|| ErrorObject::invalid_params("\"level\" must be a log level"))?;
                let stored = ctx.peer.extensions().get_or_insert_with(LogLevel::default);
                *stored.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(level);
                for upstream in self.host.upstreams() {
                    upstream.want_log_level(level);
                }
                to_result(&json!({}))
            }
            methods::SUBSCRIPTIONS_LISTEN => self.listen(params, ctx).await,
            methods::TASKS_GET
            | methods::TASKS_RESULT
            | methods::TASKS_CANCEL
            | methods::TASKS_UPDATE => self.task_request(method, params, &ctx).await,
            methods::TASKS_LIST => self.task_list(&ctx).await,
            other => Err(ErrorObject::method_not_found(other)),
        }
    }

    /// One page of a merged list.
    fn page(
        &self,
        list: ListOf,
        params: &Map<String, Value>,
        ctx: &RequestContext,
    ) -> HandlerResult {
        let offset = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(cursor)) => decode_cursor(list, cursor)?,
            Some(_) => return Err(ErrorObject::invalid_params("\"cursor\" must be a string")),
        };
        let catalog = self.host.catalog();
        let items = match list {
            ListOf::Tools => &catalog.tools,
            ListOf::Prompts => &catalog.prompts,
            ListOf::Resources => &catalog.resources,
            ListOf::Templates => &catalog.templates,
        };
        let end = (offset + PAGE_SIZE).min(items.len());
        let chunk = items.get(offset..end).unwrap_or_default();
        let next = (end < items.len()).then(|| encode_cursor(list, end));
        let revision = ctx.revision;
        let hints = (!revision.is_legacy()).then_some(CACHE_HINTS);
        if list == ListOf::Tools
            && (!revision.has_structured_output() || !revision.has_core_tasks())
        {
            let adapted: Vec<Item> = chunk
                .iter()
                .map(|tool| {
                    let mut tool = tool.clone();
                    if !revision.has_structured_output() {
                        tool.remove("outputSchema");
                    }
                    if !revision.has_core_tasks() {
                        tool.remove("execution");
                    }
                    tool
                })
                .collect();
            return to_result(&Page {
                key: list.key(),
                items: &adapted,
                next,
                hints,
            });
        }
        to_result(&Page {
            key: list.key(),
            items: chunk,
            next,
            hints,
        })
    }

    fn by_name(
        &self,
        params: &Map<String, Value>,
        kind: &str,
        find: impl Fn(&crate::Catalog, &str) -> Option<Route>,
    ) -> Result<Route, ErrorObject> {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorObject::invalid_params("\"name\" must be a string"))?;
        find(&self.host.catalog(), name).ok_or_else(|| {
            // A name of a server that is down says so, rather than that
            // the name is unknown.
            self.host
                .down_server_of(name)
                .unwrap_or_else(|| ErrorObject::invalid_params(format!("unknown {kind}: {name}")))
        })
    }

    fn by_uri(
        &self,
        params: &Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<Route, ErrorObject> {
        let uri = params
            .get("uri")
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorObject::invalid_params("\"uri\" must be a string"))?;
        let catalog = self.host.catalog();
        catalog.resource(uri).ok_or_else(|| {
            let candidates = catalog.ambiguous(uri);
            if candidates.is_empty() {
                return ErrorObject::new(
                    ctx.revision.resource_not_found_code(),
                    format!("Resource not found: {uri}"),
                )
                .with_data(json!({ "uri": uri }));
            }
            ErrorObject::new(
                ctx.revision.resource_not_found_code(),
                format!(
                    "Resource not found: {uri} is served by more than one server; read one of {}",
                    candidates.join(", ")
                ),
            )
            .with_data(json!({ "uri": uri, "candidates": candidates }))
        })
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

    /// Forwards a request to the route's upstream, with `key` (the name
    /// or URI) set to the upstream's own.
    async fn forward(
        &self,
        route: Route,
        key: &str,
        method: &str,
        mut params: Map<String, Value>,
        ctx: &RequestContext,
    ) -> HandlerResult {
        params.insert(key.to_owned(), Value::String(route.original));
        let upstream = self.host.upstream(route.upstream)?;
        forward(&upstream, method, params, ctx, &self.host.inner.held).await
    }

    async fn subscription(
        &self,
        method: &str,
        params: Map<String, Value>,
        ctx: &RequestContext,
    ) -> HandlerResult {
        let route = self.by_uri(&params, ctx)?;
        let exposed = params
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let upstream = self.host.upstream(route.upstream)?;
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
                upstream_params.insert("uri".into(), Value::String(route.original));
                forward(
                    &upstream,
                    method,
                    upstream_params,
                    ctx,
                    &self.host.inner.held,
                )
                .await?;
            }
        }
        let subscriptions = ctx
            .peer
            .extensions()
            .get_or_insert_with(Subscriptions::default);
        let mut set = subscriptions.0.lock().unwrap_or_else(|p| p.into_inner());
        if method == methods::RESOURCES_SUBSCRIBE {
            set.insert(exposed);
        } else {
            set.remove(&exposed);
        }
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
        let upstream = self.host.upstream(route.upstream)?;
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
            params,
            ctx,
            &self.host.inner.held,
        )
        .await
    }

    /// A request about one task, sent to the upstream that runs it.
    async fn task_request(
        &self,
        method: &str,
        params: Map<String, Value>,
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
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorObject::invalid_params("\"taskId\" must be a string"))?;
        let owner = self
            .host
            .inner
            .tasks
            .owner(id)
            .ok_or_else(|| ErrorObject::invalid_params(format!("unknown task: {id}")))?;
        let upstream = self.host.upstream(owner)?;
        forward(&upstream, method, params, ctx, &self.host.inner.held).await
    }

    /// `tasks/list`: every upstream's tasks that this client may see, one
    /// page from each.
    async fn task_list(&self, ctx: &RequestContext) -> HandlerResult {
        let mut tasks = Vec::new();
        for upstream in self.host.upstreams() {
            let Ok(client) = upstream.client() else {
                continue;
            };
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
                Map::new(),
                ctx,
                &self.host.inner.held,
            )
            .await?;
            let mut page: Map<String, Value> =
                serde_json::from_str(raw.get()).map_err(ErrorObject::internal)?;
            if let Some(Value::Array(items)) = page.remove("tasks") {
                for item in &items {
                    if let Some(id) = item.get("taskId").and_then(Value::as_str) {
                        self.host.inner.tasks.remember(id, upstream.index());
                    }
                }
                tasks.extend(items);
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
        ack.insert("_meta".into(), subscription_meta(&ctx.id));
        ack.insert(
            "notifications".into(),
            serde_json::to_value(&filter).unwrap_or_default(),
        );
        ctx.peer
            .notify(methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, &ack)
            .await
            .map_err(ErrorObject::internal)?;
        let _registered = self
            .host
            .inner
            .downstream
            .listen(&ctx.peer, &ctx.id, filter);
        std::future::pending::<()>().await;
        unreachable!("a pending future never completes")
    }
}

/// Which merged list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ListOf {
    Tools,
    Prompts,
    Resources,
    Templates,
}

impl ListOf {
    fn key(self) -> &'static str {
        match self {
            ListOf::Tools => "tools",
            ListOf::Prompts => "prompts",
            ListOf::Resources => "resources",
            ListOf::Templates => "resourceTemplates",
        }
    }
}

/// How long a 2026-07-28 client may keep a list (milliseconds), and for
/// whom: the host's lists change when an upstream's do, and each change is
/// also announced on `subscriptions/listen` streams.
const CACHE_HINTS: (u64, &str) = (5_000, "private");

/// A page of a list, serialized without copying its items.
struct Page<'a> {
    key: &'static str,
    items: &'a [Item],
    next: Option<String>,
    hints: Option<(u64, &'static str)>,
}

impl Serialize for Page<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry(self.key, self.items)?;
        if let Some(next) = &self.next {
            map.serialize_entry("nextCursor", next)?;
        }
        if let Some((ttl, scope)) = self.hints {
            map.serialize_entry("ttlMs", &ttl)?;
            map.serialize_entry("cacheScope", scope)?;
        }
        map.end()
    }
}

fn encode_cursor(list: ListOf, offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("{}:{offset}", list.key()))
}

fn decode_cursor(list: ListOf, cursor: &str) -> Result<usize, ErrorObject> {
    URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| {
            let (key, offset) = text.split_once(':')?;
            (key == list.key()).then(|| offset.parse().ok()).flatten()
        })
        .ok_or_else(|| ErrorObject::invalid_params(format!("invalid cursor for {}", list.key())))
}

fn read_params(params: Option<&str>) -> Result<Map<String, Value>, ErrorObject> {
    match params {
        None => Ok(Map::new()),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| ErrorObject::invalid_params(format!("params must be an object: {e}"))),
    }
}

fn to_result<T: Serialize + ?Sized>(value: &T) -> HandlerResult {
    jsonrpc::to_raw(value).map_err(ErrorObject::internal)
}

/// The params of a request to the upstream, `_meta` first. The client's
/// own `_meta` members go on, but not the protocol's: those of the upstream
/// hop are the host's to set. To a 2026-07-28 upstream the request says the
/// upstream's revision, the host's identity, the downstream client's own
/// capabilities (so the upstream asks only what that client can answer)
/// and the log level it chose; a legacy upstream settled all that at
/// `initialize`. Written in one pass, without copying the params.
fn upstream_params(
    client: &mcp_client::Client,
    params: &Map<String, Value>,
    ctx: &RequestContext,
) -> Result<Option<Box<RawValue>>, ErrorObject> {
    let modern = (!client.revision().is_legacy()).then(|| ModernMeta {
        revision: client.revision().as_str(),
        capabilities: ctx.client_capabilities(),
        log_level: ctx.meta.log_level.or_else(|| {
            ctx.peer
                .extensions()
                .get::<LogLevel>()
                .and_then(|l| *l.0.lock().unwrap_or_else(|p| p.into_inner()))
        }),
    });
    let own = &ctx.meta.other;
    let passes = |key: &String| !key.starts_with(PROTOCOL_META_PREFIX);
    if modern.is_none() && params.is_empty() && !own.keys().any(passes) {
        return Ok(None);
    }
    let body = UpstreamParams {
        modern,
        own,
        params,
    };
    jsonrpc::to_raw(&body)
        .map(Some)
        .map_err(ErrorObject::internal)
}

/// The prefix of the `_meta` members the protocol itself defines.
const PROTOCOL_META_PREFIX: &str = "io.modelcontextprotocol/";

/// What a 2026-07-28 request says about its client.
struct ModernMeta<'a> {
    revision: &'a str,
    capabilities: &'a mcp_schema::ClientCapabilities,
    log_level: Option<LoggingLevel>,
}

/// See [`upstream_params`].
struct UpstreamParams<'a> {
    modern: Option<ModernMeta<'a>>,
    own: &'a Map<String, Value>,
    params: &'a Map<String, Value>,
}

/// The `_meta` of [`UpstreamParams`].
struct UpstreamMeta<'a>(&'a UpstreamParams<'a>);

/// The host as a client of its upstreams.
const HOST_INFO: (&str, &str) = ("mcp-host", env!("CARGO_PKG_VERSION"));

impl Serialize for UpstreamMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some(modern) = &self.0.modern {
            map.serialize_entry(META_PROTOCOL_VERSION, modern.revision)?;
            let info: std::collections::BTreeMap<&str, &str> =
                [("name", HOST_INFO.0), ("version", HOST_INFO.1)].into();
            map.serialize_entry(META_CLIENT_INFO, &info)?;
            map.serialize_entry(META_CLIENT_CAPABILITIES, modern.capabilities)?;
            if let Some(level) = modern.log_level {
                map.serialize_entry(META_LOG_LEVEL, &level)?;
            }
        }
        for (key, value) in self.0.own {
            if !key.starts_with(PROTOCOL_META_PREFIX) {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

impl Serialize for UpstreamParams<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        let has_own = self
            .own
            .keys()
            .any(|k| !k.starts_with(PROTOCOL_META_PREFIX));
        if self.modern.is_some() || has_own {
            map.serialize_entry("_meta", &UpstreamMeta(self))?;
        }
        for (key, value) in self.params {
            if key != "_meta" {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

/// Sends `method` to `upstream` for the downstream request `ctx`: progress
/// back, cancellation on (by drop), rounds of input answered for a legacy
/// client, errors passed back as the upstream gave them.
async fn forward(
    upstream: &Arc<Upstream>,
    method: &str,
    mut params: Map<String, Value>,
    ctx: &RequestContext,
    held: &HeldCalls,
) -> HandlerResult {
    let client = upstream.client()?;
    let upstream_modern = !client.revision().is_legacy();
    if !upstream_modern && !ctx.revision.is_legacy() {
        return forward_in_rounds(upstream, client, method, params, ctx, held).await;
    }
    let _permit = upstream.permit().await;
    let _caller = upstream.register_caller(&ctx.peer, &ctx.negotiated, Asked::Request);
    let mut rounds = 0;
    loop {
        let wire = upstream_params(&client, &params, ctx)?;
        let raw = send(
            upstream,
            &client,
            method,
            wire,
            ctx,
            Some(&ctx.cancellation),
        )
        .await?;
        let needs_answers =
            upstream_modern && ctx.revision.is_legacy() && raw.get().contains("\"input_required\"");
        if !needs_answers {
            return Ok(if upstream_modern {
                adapt_result(raw, ctx.revision.is_legacy())
            } else {
                raw
            });
        }
        let mut result: Map<String, Value> = serde_json::from_str(raw.get())
            .map_err(|e| ErrorObject::internal(format!("{method}: {e}")))?;
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return Ok(adapt_result(raw, true));
        }
        rounds += 1;
        if rounds > MAX_ROUNDS {
            return Err(ErrorObject::internal(format!(
                "server {:?} asked for input more than {MAX_ROUNDS} times",
                upstream.name()
            )));
        }
        let questions = match result.remove("inputRequests") {
            Some(Value::Object(questions)) => questions,
            _ => Map::new(),
        };
        let answers = answer_for_legacy_client(&ctx.peer, questions).await?;
        params.insert("inputResponses".into(), Value::Object(answers));
        match result.remove("requestState") {
            Some(state) => params.insert("requestState".into(), state),
            None => params.remove("requestState"),
        };
    }
}

/// A 2026-07-28 client's request to a server of an earlier revision: run
/// as a call the host can hold, so that what the server asks mid-call
/// becomes `input_required` rounds (see [`crate::rounds`]); a retry that
/// names a held call resumes it.
async fn forward_in_rounds(
    upstream: &Arc<Upstream>,
    client: mcp_client::Client,
    method: &str,
    params: Map<String, Value>,
    ctx: &RequestContext,
    held: &HeldCalls,
) -> HandlerResult {
    if let Some(resumed) = held.resume(&params) {
        return held.drive(resumed?, &ctx.cancellation).await;
    }
    let (questions, asked) = mpsc::unbounded_channel();
    let caller = upstream.register_caller(&ctx.peer, &ctx.negotiated, Asked::Round(questions));
    let (upstream, request, method) = (Arc::clone(upstream), ctx.clone(), method.to_owned());
    // Owned, so it can outlive this request while the client answers; the
    // held call is cancelled upstream by dropping it.
    let call = Box::pin(async move {
        let _caller = caller;
        let _permit = upstream.permit().await;
        let wire = upstream_params(&client, &params, &request)?;
        send(&upstream, &client, &method, wire, &request, None).await
    });
    held.drive(HeldCall::new(call, asked), &ctx.cancellation)
        .await
}

/// One request to the upstream, with its progress passed back; given the
/// client's cancellation, it ends (and is cancelled upstream) when that
/// fires.
async fn send(
    upstream: &Upstream,
    client: &mcp_client::Client,
    method: &str,
    wire: Option<Box<RawValue>>,
    ctx: &RequestContext,
    cancellation: Option<&tokio_util::sync::CancellationToken>,
) -> HandlerResult {
    let timeout = upstream.request_timeout();
    let mut options = RequestOptions::new().timeout(timeout);
    let mut progress_rx = None;
    if ctx.progress.is_enabled() {
        // Bounded: a server that floods progress while the client reads
        // slowly loses updates (each says where the work is; the next one
        // supersedes it), never memory.
        let (tx, rx) = mpsc::channel(PROGRESS_QUEUE);
        options = options.on_progress(move |p| {
            let _ = tx.try_send(p);
        });
        progress_rx = Some(rx);
    }
    // The client's cancellation (or its going away) drops the upstream
    // request, which cancels it there too.
    let cancelled = cancellation.cloned().unwrap_or_default();
    let call = async move {
        tokio::select! {
            outcome = client.peer().request_raw(method, wire, options) => outcome,
            _ = cancelled.cancelled() => Err(RequestError::Rpc(ErrorObject::new(
                error_codes::REQUEST_CANCELLED,
                "the client cancelled the request",
            ))),
        }
    };
    let outcome = match progress_rx.as_mut() {
        None => call.await,
        Some(rx) => {
            tokio::pin!(call);
            let outcome = loop {
                tokio::select! {
                    outcome = &mut call => break outcome,
                    Some(p) = rx.recv() => {
                        ctx.progress.report(p.progress, p.total, p.message.as_deref()).await;
                    }
                }
            };
            while let Ok(p) = rx.try_recv() {
                ctx.progress
                    .report(p.progress, p.total, p.message.as_deref())
                    .await;
            }
            outcome
        }
    };
    outcome.map_err(|e| match e {
        RequestError::Rpc(error) => error,
        RequestError::Timeout => ErrorObject::new(
            error_codes::REQUEST_TIMEOUT,
            format!(
                "server {:?} did not answer {method} within {timeout:?}",
                upstream.name()
            ),
        ),
        RequestError::ConnectionClosed => ErrorObject::internal(format!(
            "server {:?} closed the connection during {method}",
            upstream.name()
        )),
        other => ErrorObject::internal(format!("server {:?}: {other}", upstream.name())),
    })
}

/// An upstream's result as the client should see it: without the
/// upstream's own identity in `_meta` (the host is the server this client
/// talks to; in 2026-07-28 the engine adds the host's), and for a legacy
/// client without `resultType`, which its revision does not have. Only
/// the top-level members are read, and only when the text mentions one of
/// these keys.
fn adapt_result(raw: Box<RawValue>, legacy_client: bool) -> Box<RawValue> {
    let text = raw.get();
    let has_type = legacy_client && text.contains("\"resultType\"");
    if !has_type && !text.contains(META_SERVER_INFO) {
        return raw;
    }
    let Ok(members) = members_of(text) else {
        return raw;
    };
    let mut out = String::with_capacity(text.len());
    out.push('{');
    for (key, value) in members {
        let value: std::borrow::Cow<'_, str> = match key.as_ref() {
            "resultType" if legacy_client => continue,
            "_meta" => match serde_json::from_str::<Map<String, Value>>(value.get()) {
                Ok(mut meta) => {
                    meta.remove(META_SERVER_INFO);
                    if meta.is_empty() {
                        continue;
                    }
                    serde_json::to_string(&meta).map_or(value.get().into(), Into::into)
                }
                Err(_) => value.get().into(),
            },
            _ => value.get().into(),
        };
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(key.as_ref()).unwrap_or_default());
        out.push(':');
        out.push_str(&value);
    }
    out.push('}');
    RawValue::from_string(out).unwrap_or(raw)
}

/// `result` with every `uri` member, at any depth, that `rewrite` maps
/// replaced by what it maps to; untouched when nothing is mapped.
fn rewrite_uris(result: Box<RawValue>, rewrite: impl Fn(&str) -> Option<String>) -> Box<RawValue> {
    fn walk(value: &mut Value, rewrite: &dyn Fn(&str) -> Option<String>) -> bool {
        let mut changed = false;
        match value {
            Value::Object(members) => {
                for (key, member) in members.iter_mut() {
                    if key == "uri"
                        && let Some(new) = member.as_str().and_then(rewrite)
                    {
                        *member = Value::String(new);
                        changed = true;
                    } else {
                        changed |= walk(member, rewrite);
                    }
                }
            }
            Value::Array(items) => {
                for item in items {
                    changed |= walk(item, rewrite);
                }
            }
            _ => {}
        }
        changed
    }
    let Ok(mut value) = serde_json::from_str::<Value>(result.get()) else {
        return result;
    };
    if !walk(&mut value, &rewrite) {
        return result;
    }
    jsonrpc::to_raw(&value).unwrap_or(result)
}

type Member<'a> = (std::borrow::Cow<'a, str>, &'a RawValue);

/// The top-level members of a JSON object, values unparsed, in order.
fn members_of(text: &str) -> Result<Vec<Member<'_>>, serde_json::Error> {
    struct Members<'a>(Vec<Member<'a>>);
    impl<'de> serde::Deserialize<'de> for Members<'de> {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visitor;
            impl<'de> serde::de::Visitor<'de> for Visitor {
                type Value = Members<'de>;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<Members<'de>, A::Error> {
                    let mut members = Vec::new();
                    while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                        members.push((key, map.next_value::<&'de RawValue>()?));
                    }
                    Ok(Members(members))
                }
            }
            d.deserialize_map(Visitor)
        }
    }
    serde_json::from_str::<Members<'_>>(text).map(|m| m.0)
}

/// Asks a legacy client each question of an `input_required` round, as
/// the requests that revision has; the answers keyed like the questions.
async fn answer_for_legacy_client(
    peer: &Peer,
    questions: Map<String, Value>,
) -> Result<Map<String, Value>, ErrorObject> {
    let asked = questions.into_iter().map(|(key, question)| async move {
        let method = question
            .get("method")
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorObject::internal("an input request without a method"))?
            .to_owned();
        let params = question
            .get("params")
            .map(jsonrpc::to_raw)
            .transpose()
            .map_err(ErrorObject::internal)?;
        let answer = peer
            .request_raw(&method, params, RequestOptions::new())
            .await
            .map_err(|e| match e {
                RequestError::Rpc(error) => error,
                other => ErrorObject::internal(format!("{method} to the client: {other}")),
            })?;
        let answer: Value = serde_json::from_str(answer.get()).map_err(ErrorObject::internal)?;
        Ok::<_, ErrorObject>((key, answer))
    });
    futures::future::try_join_all(asked)
        .await
        .map(|answers| answers.into_iter().collect())
}

impl Service for Gateway {
    fn handle_request(
        &self,
        request: IncomingRequest,
        ctx: RequestContext,
    ) -> BoxFuture<'static, HandlerResult> {
        let gateway = self.clone();
        box_future(move || gateway.dispatch(request, ctx))
    }

    fn session_ready(&self, peer: &Peer) {
        self.host.inner.downstream.session_ready(peer);
    }

    fn tool_header_params(&self, name: &str) -> Option<Arc<[HeaderParam]>> {
        self.host.catalog().header_params(name)
    }

    fn session_closed(&self, peer: &Peer) {
        if peer.negotiated().is_none() {
            return;
        }
        self.host.inner.downstream.session_closed(peer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_what_they_did_not_make() {
        let cursor = encode_cursor(ListOf::Tools, 200);
        assert_eq!(decode_cursor(ListOf::Tools, &cursor).unwrap(), 200);
        assert!(
            decode_cursor(ListOf::Prompts, &cursor).is_err(),
            "another list's cursor"
        );
        assert!(decode_cursor(ListOf::Tools, "!!!").is_err());
        assert!(decode_cursor(ListOf::Tools, &URL_SAFE_NO_PAD.encode("tools:x")).is_err());
    }

    #[test]
    fn the_protocols_meta_stays_on_its_hop() {
        let own: Map<String, Value> = serde_json::from_value(json!({
            "io.modelcontextprotocol/related-task": {"taskId": "t"},
            "com.example/trace": "abc"
        }))
        .unwrap();
        let params: Map<String, Value> =
            serde_json::from_value(json!({"name": "t", "arguments": {"a": 1}})).unwrap();
        let capabilities: mcp_schema::ClientCapabilities =
            serde_json::from_value(json!({"sampling": {}})).unwrap();
        let legacy = UpstreamParams {
            modern: None,
            own: &own,
            params: &params,
        };
        assert_eq!(
            serde_json::to_value(&legacy).unwrap(),
            json!({"_meta": {"com.example/trace": "abc"}, "name": "t", "arguments": {"a": 1}})
        );
        let modern = UpstreamParams {
            modern: Some(ModernMeta {
                revision: "2026-07-28",
                capabilities: &capabilities,
                log_level: Some(LoggingLevel::Info),
            }),
            own: &own,
            params: &params,
        };
        let text = serde_json::to_string(&modern).unwrap();
        assert!(
            text.starts_with(
                r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","#
            ),
            "{text}"
        );
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value["_meta"],
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "mcp-host", "version": env!("CARGO_PKG_VERSION")},
                "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
                "io.modelcontextprotocol/logLevel": "info",
                "com.example/trace": "abc"
            })
        );
        assert_eq!(value["arguments"], json!({"a": 1}));
    }

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn results_lose_the_upstreams_identity_and_legacy_ones_their_type() {
        let text = r#"{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}},"content":[{"type":"text","text":"\"resultType\""}],"isError":false}"#;
        assert_eq!(
            adapt_result(raw(text), true).get(),
            r#"{"content":[{"type":"text","text":"\"resultType\""}],"isError":false}"#
        );
        assert_eq!(
            adapt_result(raw(text), false).get(),
            r#"{"resultType":"complete","content":[{"type":"text","text":"\"resultType\""}],"isError":false}"#
        );
        // Other _meta members stay; text without either key is not touched.
        let kept = r#"{"_meta":{"io.modelcontextprotocol/serverInfo":{},"k":1},"a":[1, 2]}"#;
        assert_eq!(
            adapt_result(raw(kept), true).get(),
            r#"{"_meta":{"k":1},"a":[1, 2]}"#
        );
        let plain = r#"{"content": [] }"#;
        assert_eq!(adapt_result(raw(plain), true).get(), plain);
    }
}
