//! The client: connects over any transport, settles the protocol era, and
//! offers a typed call for every server feature.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::try_join_all;
use mcp_core::{
    ClientIdentity, Negotiated, Peer, RequestError, RequestOptions, Role, RunningSession,
    SessionConfig, Transport,
};
use mcp_schema::jsonrpc::{self, Notification};
use mcp_schema::{
    CallToolResult, ClientCapabilities, CompleteRequestParams, CompleteResult,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationCapability, ErrorObject, GetPromptResult, Implementation, InputRequiredResult,
    InputResponse, InputResponses, JsonObject, ListRootsResult, LoggingLevel, ProtocolVersion,
    ReadResourceResult, Root, RootsCapability, SamplingCapability, ServerCapabilities, methods,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::cache::ListCache;
use crate::error::ClientError;
use crate::handlers::{ClientService, Handlers};
use crate::handshake::{ServerSide, discover, initialize, modern_meta, probe};
use crate::listing::{Listing, PromptListing, ResourceListing, TemplateListing, ToolListing};
use mcp_core::sync::{MutexExt as _, RwLockExt as _};

/// Which protocol era to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum EraChoice {
    /// Try `server/discover` (2026-07-28); if the server does not know it,
    /// fall back to `initialize`.
    #[default]
    Auto,
    /// Exactly this revision: `initialize` for a legacy one, per-request
    /// metadata for 2026-07-28.
    Pinned(ProtocolVersion),
}

impl std::str::FromStr for EraChoice {
    type Err = String;

    /// `auto`, `legacy` (the latest legacy revision), `modern` (the latest
    /// revision), or a revision such as `2025-06-18`.
    fn from_str(text: &str) -> Result<EraChoice, String> {
        match text {
            "auto" => Ok(EraChoice::Auto),
            "legacy" => Ok(EraChoice::Pinned(ProtocolVersion::LATEST_LEGACY)),
            "modern" => Ok(EraChoice::Pinned(ProtocolVersion::LATEST)),
            revision => revision
                .parse::<ProtocolVersion>()
                .map(EraChoice::Pinned)
                .map_err(|_| {
                    format!(
                        "unknown era {revision:?}: auto, legacy, modern or one of {}",
                        ProtocolVersion::supported_strings().join(", ")
                    )
                }),
        }
    }
}

/// How many `input_required` rounds a request may take by default.
const DEFAULT_MAX_ROUNDS: usize = 8;

/// How long `server/discover` is waited for alone before `initialize` is
/// sent too (era `Auto`), by default: a legacy server that ignores unknown
/// requests is then reached, and a slow server's late answer to the probe
/// is still used.
const PROBE_PATIENCE: Duration = Duration::from_secs(10);

/// Builds a [`Client`]: identity, handlers and era, then
/// [`connect`](ClientBuilder::connect) over a transport.
pub struct ClientBuilder {
    info: Implementation,
    handlers: Handlers,
    era: EraChoice,
    request_timeout: Option<Duration>,
    max_rounds: usize,
    extensions: BTreeMap<String, JsonObject>,
    probe_patience: Duration,
}

impl ClientBuilder {
    /// A client named `name` at `version`, with no handlers.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        ClientBuilder {
            info: Implementation::new(name, version),
            handlers: Handlers::default(),
            era: EraChoice::Auto,
            request_timeout: None,
            max_rounds: DEFAULT_MAX_ROUNDS,
            extensions: BTreeMap::new(),
            probe_patience: PROBE_PATIENCE,
        }
    }

    /// Answers `sampling/createMessage` (declares the `sampling` capability).
    pub fn on_sampling<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut:
            std::future::Future<Output = Result<CreateMessageResult, ErrorObject>> + Send + 'static,
    {
        self.handlers.set_sampling(handler);
        self
    }

    /// Declares that the sampling handler accepts `tools` and `toolChoice`.
    pub fn sampling_tools(mut self, supported: bool) -> Self {
        self.handlers.sampling_tools = supported;
        self
    }

    /// Answers `elicitation/create` (declares form-mode elicitation).
    /// Fields the user leaves out of an accepted form get the schema's
    /// defaults.
    pub fn on_elicitation<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ElicitRequestParams) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<ElicitResult, ErrorObject>> + Send + 'static,
    {
        self.handlers.set_elicitation(handler);
        self
    }

    /// Declares URL-mode elicitation too (the handler gets
    /// [`ElicitRequestParams::Url`] requests).
    pub fn elicitation_url(mut self, supported: bool) -> Self {
        self.handlers.elicitation_url = supported;
        self
    }

    /// Offers these roots (declares `roots` with `listChanged`); change
    /// them later with [`Client::set_roots`].
    pub fn roots(mut self, roots: Vec<Root>) -> Self {
        self.handlers.roots = Some(Arc::new(std::sync::RwLock::new(roots)));
        self
    }

    /// Sees every notification the server sends.
    pub fn on_notification(
        mut self,
        handler: impl Fn(&Notification) + Send + Sync + 'static,
    ) -> Self {
        self.handlers.notifications.push(Arc::new(handler));
        self
    }

    /// Chooses the era (default [`EraChoice::Auto`]).
    pub fn era(mut self, era: EraChoice) -> Self {
        self.era = era;
        self
    }

    /// With era [`EraChoice::Auto`], how long `server/discover` is waited
    /// for alone before `initialize` is sent too (default 10 s). Either
    /// answer is used, whichever era the server settles on; the handshake
    /// as a whole may take as long as [`request_timeout`](Self::request_timeout).
    pub fn probe_patience(mut self, patience: Duration) -> Self {
        self.probe_patience = patience;
        self
    }

    /// The default wait for a response (progress extends it).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = Some(timeout);
        self
    }

    /// How many `input_required` rounds one request may take.
    pub fn max_input_rounds(mut self, rounds: usize) -> Self {
        self.max_rounds = rounds.max(1);
        self
    }

    /// Declares an extension capability (2026-07-28 `extensions`), e.g.
    /// `io.modelcontextprotocol/tasks`.
    pub fn extension(mut self, name: impl Into<String>, settings: JsonObject) -> Self {
        self.extensions.insert(name.into(), settings);
        self
    }

    fn capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        if self.handlers.sampling.is_some() {
            caps.sampling = Some(SamplingCapability {
                tools: self.handlers.sampling_tools.then(JsonObject::new),
                ..Default::default()
            });
        }
        if self.handlers.elicitation.is_some() {
            caps.elicitation = Some(ElicitationCapability {
                form: Some(JsonObject::new()),
                url: self.handlers.elicitation_url.then(JsonObject::new),
            });
        }
        if self.handlers.roots.is_some() {
            caps.roots = Some(RootsCapability {
                list_changed: Some(true),
            });
        }
        if !self.extensions.is_empty() {
            caps.extensions = Some(self.extensions.clone());
        }
        caps
    }

    /// Starts the session over `transport` and settles the era: returns
    /// once the client is ready for calls.
    pub async fn connect(self, transport: Transport) -> Result<Client, ClientError> {
        let identity = Arc::new(ClientIdentity::new(self.info.clone(), self.capabilities()));
        let cache = Arc::new(ListCache::default());
        let service = ClientService {
            handlers: self.handlers.clone(),
            on_notification: {
                let cache = Arc::clone(&cache);
                Box::new(move |n: &Notification| cache.on_notification(&n.method))
            },
        };
        let mut config = SessionConfig::new(Role::Client(Arc::clone(&identity)));
        if let Some(timeout) = self.request_timeout {
            config = config.request_timeout(timeout);
        }
        let session = mcp_core::serve(transport, Arc::new(service), config);
        let peer = session.peer().clone();
        let meta = modern_meta(&identity);
        let outcome = match self.era {
            EraChoice::Auto => probe(&peer, &identity, &meta, self.probe_patience).await,
            EraChoice::Pinned(version) if version.is_legacy() => {
                initialize(&peer, &identity, version).await
            }
            EraChoice::Pinned(_) => discover(&peer, &meta).await,
        };
        let server = match outcome {
            Ok(server) => server,
            Err(e) => {
                peer.close();
                return Err(e);
            }
        };
        peer.set_negotiated(Negotiated::for_client(
            server.revision,
            &identity,
            server.info.clone(),
            server.capabilities.clone(),
        ));
        if server.revision.is_legacy() {
            peer.notify(methods::NOTIFICATION_INITIALIZED, &json!({}))
                .await?;
        }
        Ok(Client {
            inner: Arc::new(Inner {
                peer,
                session: Mutex::new(Some(session)),
                server,
                handlers: self.handlers,
                meta: Mutex::new(meta),
                max_rounds: self.max_rounds,
                cache,
            }),
        })
    }
}

/// A connection to one MCP server. Cheap to clone; every clone talks to
/// the same session.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    peer: Peer,
    session: Mutex<Option<RunningSession>>,
    server: ServerSide,
    handlers: Handlers,
    meta: Mutex<Map<String, Value>>,
    max_rounds: usize,
    cache: Arc<ListCache>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("revision", &self.inner.server.revision)
            .field("server", &self.inner.server.info)
            .finish()
    }
}

/// Only `resultType` of a modern result, to spot `input_required` without
/// reading the rest.
#[derive(serde::Deserialize)]
struct ResultTypeProbe<'a> {
    #[serde(rename = "resultType", borrow, default)]
    result_type: Option<&'a str>,
}

impl Client {
    /// Starts building a client.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ClientBuilder {
        ClientBuilder::new(name, version)
    }

    /// The revision in force.
    pub fn revision(&self) -> ProtocolVersion {
        self.inner.server.revision
    }

    /// The server's name and version, if it said.
    pub fn server_info(&self) -> Option<&Implementation> {
        self.inner.server.info.as_ref()
    }

    /// What the server declared.
    pub fn server_capabilities(&self) -> &ServerCapabilities {
        &self.inner.server.capabilities
    }

    /// The server's instructions, if any.
    pub fn instructions(&self) -> Option<&str> {
        self.inner.server.instructions.as_deref()
    }

    /// The session's engine handle (for what the typed API does not cover).
    pub fn peer(&self) -> &Peer {
        &self.inner.peer
    }

    fn is_modern(&self) -> bool {
        !self.inner.server.revision.is_legacy()
    }

    /// Sends any request and returns its raw result. In the modern era the
    /// per-request `_meta` is added and `input_required` rounds are
    /// answered with the handlers until the final result arrives.
    pub async fn request_raw(
        &self,
        method: &str,
        params: Value,
        options: RequestOptions,
    ) -> Result<Box<RawValue>, ClientError> {
        let mut params = params_object(method, params)?;
        let mut rounds = 0;
        loop {
            let raw = self.params_on_wire(&params)?;
            let raw = self
                .inner
                .peer
                .request_raw(method, raw, options.clone())
                .await?;
            if !self.is_modern() {
                return Ok(raw);
            }
            let probe: ResultTypeProbe =
                serde_json::from_str(raw.get()).map_err(|e| invalid(method, e))?;
            if probe.result_type != Some("input_required") {
                return Ok(raw);
            }
            rounds += 1;
            if rounds > self.inner.max_rounds {
                return Err(ClientError::TooManyRounds {
                    method: method.to_owned(),
                    rounds: rounds - 1,
                });
            }
            let required: InputRequiredResult =
                serde_json::from_str(raw.get()).map_err(|e| invalid(method, e))?;
            let answers = self
                .answer(required.input_requests.unwrap_or_default())
                .await?;
            params.insert("inputResponses".to_owned(), answers);
            match required.request_state {
                Some(state) => params.insert("requestState".to_owned(), Value::String(state)),
                None => params.remove("requestState"),
            };
        }
    }

    /// The params of a request as this client puts them on the wire: in
    /// the modern era with the per-request `_meta` merged in, in the legacy
    /// era as given (`None` when empty). For a caller that sends the same
    /// request itself many times, like a load generator.
    pub fn wire_params(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Option<Box<RawValue>>, ClientError> {
        self.params_on_wire(&params_object(method, params)?)
    }

    fn params_on_wire(
        &self,
        params: &Map<String, Value>,
    ) -> Result<Option<Box<RawValue>>, ClientError> {
        let raw = if self.is_modern() {
            // Serialized under the lock, straight from the shared `_meta`:
            // no copy per request.
            let meta = self.inner.meta.locked();
            let own = match params.get("_meta") {
                Some(Value::Object(own)) => Some(own),
                _ => None,
            };
            let body = MetaParams {
                meta: MergedMeta { shared: &meta, own },
                params,
            };
            Some(jsonrpc::to_raw(&body))
        } else {
            (!params.is_empty()).then(|| jsonrpc::to_raw(params))
        };
        raw.transpose()
            .map_err(|e| RequestError::Invalid(e.to_string()).into())
    }

    /// Answers every input request concurrently with the handlers.
    async fn answer(&self, requests: mcp_schema::InputRequests) -> Result<Value, ClientError> {
        let answers = self.answer_input_requests(requests).await?;
        serde_json::to_value(answers).map_err(|e| invalid("inputResponses", e))
    }

    /// Answers the questions a server put (a modern `input_required`
    /// result, or a task waiting for input in the 2026-07-28 tasks
    /// extension) with this client's handlers, all at once, keyed as
    /// asked: the `inputResponses` to send back.
    pub async fn answer_input_requests(
        &self,
        requests: mcp_schema::InputRequests,
    ) -> Result<InputResponses, ClientError> {
        let handlers = &self.inner.handlers;
        let answers = try_join_all(requests.into_iter().map(|(key, request)| async move {
            handlers
                .answer(request)
                .await
                .map(|answer: InputResponse| (key, answer))
        }))
        .await
        .map_err(|e| ClientError::Request(RequestError::Rpc(e)))?;
        Ok(answers.into_iter().collect())
    }

    /// Sends any request and deserializes its result.
    pub async fn request<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        options: RequestOptions,
    ) -> Result<R, ClientError> {
        let params = serde_json::to_value(params).map_err(|e| invalid(method, e))?;
        self.call(method, params, options).await
    }

    /// A request whose params are JSON already; its result typed.
    async fn call<R: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
        options: RequestOptions,
    ) -> Result<R, ClientError> {
        let raw = self.request_raw(method, params, options).await?;
        serde_json::from_str(raw.get()).map_err(|e| invalid(method, e))
    }

    /// Checks the server is alive: `ping`, or in 2026-07-28 (which has no
    /// `ping`) the lightest request there is, `server/discover`.
    pub async fn ping(&self) -> Result<(), ClientError> {
        let method = if self.is_modern() {
            methods::SERVER_DISCOVER
        } else {
            methods::PING
        };
        self.call::<Value>(method, json!({}), RequestOptions::new())
            .await
            .map(drop)
    }

    /// One page of tools.
    pub async fn list_tools(
        &self,
        cursor: Option<&str>,
    ) -> Result<mcp_schema::ListToolsResult, ClientError> {
        self.page::<ToolListing>(cursor).await
    }

    /// Every tool, walking all pages (cached as long as the server allows).
    pub async fn list_all_tools(&self) -> Result<Vec<mcp_schema::Tool>, ClientError> {
        self.list_all::<ToolListing>().await
    }

    /// Calls a tool with `arguments` (a JSON object).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_with(name, arguments, RequestOptions::new())
            .await
    }

    /// Calls a tool with options: a timeout, a progress callback.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        let params = json!({ "name": name, "arguments": arguments });
        self.call(methods::TOOLS_CALL, params, options).await
    }

    /// One page of resources.
    pub async fn list_resources(
        &self,
        cursor: Option<&str>,
    ) -> Result<mcp_schema::ListResourcesResult, ClientError> {
        self.page::<ResourceListing>(cursor).await
    }

    /// Every resource, walking all pages.
    pub async fn list_all_resources(&self) -> Result<Vec<mcp_schema::Resource>, ClientError> {
        self.list_all::<ResourceListing>().await
    }

    /// One page of resource templates.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<&str>,
    ) -> Result<mcp_schema::ListResourceTemplatesResult, ClientError> {
        self.page::<TemplateListing>(cursor).await
    }

    /// Every resource template, walking all pages.
    pub async fn list_all_resource_templates(
        &self,
    ) -> Result<Vec<mcp_schema::ResourceTemplate>, ClientError> {
        self.list_all::<TemplateListing>().await
    }

    /// Reads a resource.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        self.call(
            methods::RESOURCES_READ,
            json!({ "uri": uri }),
            RequestOptions::new(),
        )
        .await
    }

    /// Asks for `notifications/resources/updated` about `uri` (legacy era;
    /// the modern era uses `subscriptions/listen`).
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), ClientError> {
        self.legacy_only(methods::RESOURCES_SUBSCRIBE)?;
        self.call::<Value>(
            methods::RESOURCES_SUBSCRIBE,
            json!({ "uri": uri }),
            RequestOptions::new(),
        )
        .await
        .map(drop)
    }

    /// Stops updates about `uri` (legacy era).
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), ClientError> {
        self.legacy_only(methods::RESOURCES_UNSUBSCRIBE)?;
        self.call::<Value>(
            methods::RESOURCES_UNSUBSCRIBE,
            json!({ "uri": uri }),
            RequestOptions::new(),
        )
        .await
        .map(drop)
    }

    /// Opens a `subscriptions/listen` stream (2026-07-28) for the
    /// notifications `filter` asks for. They reach the `on_notification`
    /// handlers (and a `list_changed` drops the cached list); the first is
    /// `notifications/subscriptions/acknowledged`, saying what the server
    /// grants. Resolves when the server ends the stream; drop the future
    /// to stop listening (over HTTP that closes the stream). Legacy
    /// servers send `list_changed` unasked and take
    /// [`subscribe_resource`](Client::subscribe_resource) instead.
    pub async fn listen(
        &self,
        filter: mcp_schema::SubscriptionFilter,
    ) -> Result<mcp_schema::SubscriptionsListenResult, ClientError> {
        if !self.is_modern() {
            return Err(ClientError::Unsupported(format!(
                "{} does not exist in protocol revision {}",
                methods::SUBSCRIPTIONS_LISTEN,
                self.revision()
            )));
        }
        // A listen stream lasts as long as the caller wants.
        const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
        let options = RequestOptions::new()
            .timeout(FOREVER)
            .max_total_timeout(FOREVER);
        self.call(
            methods::SUBSCRIPTIONS_LISTEN,
            json!({ "notifications": filter }),
            options,
        )
        .await
    }

    /// One page of prompts.
    pub async fn list_prompts(
        &self,
        cursor: Option<&str>,
    ) -> Result<mcp_schema::ListPromptsResult, ClientError> {
        self.page::<PromptListing>(cursor).await
    }

    /// Every prompt, walking all pages.
    pub async fn list_all_prompts(&self) -> Result<Vec<mcp_schema::Prompt>, ClientError> {
        self.list_all::<PromptListing>().await
    }

    /// Gets a prompt with its arguments filled in.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult, ClientError> {
        let params = json!({ "name": name, "arguments": arguments });
        self.call(methods::PROMPTS_GET, params, RequestOptions::new())
            .await
    }

    /// Asks for completions of a prompt or template argument.
    pub async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, ClientError> {
        self.request(methods::COMPLETION_COMPLETE, &params, RequestOptions::new())
            .await
    }

    /// Sets the level of log messages the server sends: `logging/setLevel`
    /// in the legacy era, the per-request `_meta` log level in the modern
    /// era (from the next request on).
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<(), ClientError> {
        if self.is_modern() {
            let value = serde_json::to_value(level).map_err(|e| invalid("logLevel", e))?;
            self.inner
                .meta
                .locked()
                .insert(mcp_schema::META_LOG_LEVEL.to_owned(), value);
            return Ok(());
        }
        self.call::<Value>(
            methods::LOGGING_SET_LEVEL,
            json!({ "level": level }),
            RequestOptions::new(),
        )
        .await
        .map(drop)
    }

    /// Replaces the roots offered to the server and, in the legacy era,
    /// tells it they changed.
    pub async fn set_roots(&self, roots: Vec<Root>) -> Result<(), ClientError> {
        let Some(current) = &self.inner.handlers.roots else {
            return Err(ClientError::Unsupported(
                "this client was built without roots".into(),
            ));
        };
        *current.write_locked() = roots;
        if !self.is_modern() {
            self.inner
                .peer
                .notify(methods::NOTIFICATION_ROOTS_LIST_CHANGED, &json!({}))
                .await?;
        }
        Ok(())
    }

    /// The roots currently offered.
    pub fn roots(&self) -> Option<ListRootsResult> {
        self.inner.handlers.list_roots().ok()
    }

    /// Forgets cached lists (they are also forgotten when the server says
    /// a list changed, or when its cache hint runs out).
    pub fn invalidate_cache(&self) {
        self.inner.cache.clear();
    }

    /// Ends the session: the transport closes (a child server sees EOF, an
    /// HTTP session is deleted) and pending calls fail.
    pub async fn close(&self) {
        self.inner.peer.close();
        let session = self.inner.session.locked().take();
        if let Some(session) = session {
            session.wait().await;
        }
    }

    fn legacy_only(&self, method: &str) -> Result<(), ClientError> {
        if self.is_modern() {
            return Err(ClientError::Unsupported(format!(
                "{method} does not exist in protocol revision {}; use subscriptions/listen",
                self.revision()
            )));
        }
        Ok(())
    }

    async fn page<L: Listing>(&self, cursor: Option<&str>) -> Result<L::Page, ClientError> {
        let params = match cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        self.call(L::METHOD, params, RequestOptions::new()).await
    }

    async fn list_all<L: Listing>(&self) -> Result<Vec<L::Item>, ClientError> {
        if let Some(items) = self.inner.cache.get::<L::Item>(L::METHOD) {
            return Ok(items);
        }
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        let mut ttl = None;
        loop {
            let page = self.page::<L>(cursor.as_deref()).await?;
            let (mut found, next, page_ttl) = L::split(page);
            ttl = ttl.or(page_ttl);
            items.append(&mut found);
            match next {
                Some(next) if seen.insert(next.clone()) => cursor = Some(next),
                Some(next) => {
                    return Err(invalid(
                        L::METHOD,
                        format!("the cursor {next:?} came back twice"),
                    ));
                }
                None => break,
            }
        }
        if let Some(ms) = ttl.filter(|ms| *ms > 0) {
            self.inner
                .cache
                .put(L::METHOD, items.clone(), Duration::from_millis(ms));
        }
        Ok(items)
    }
}

/// The params of a modern request: `_meta` first, then the caller's
/// members (its own `_meta` already merged).
struct MetaParams<'a> {
    meta: MergedMeta<'a>,
    params: &'a Map<String, Value>,
}

/// The client's `_meta` with the caller's own members on top (the
/// caller's win).
struct MergedMeta<'a> {
    shared: &'a Map<String, Value>,
    own: Option<&'a Map<String, Value>>,
}

impl Serialize for MergedMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        for (key, value) in self.shared {
            if !self.own.is_some_and(|own| own.contains_key(key)) {
                map.serialize_entry(key, value)?;
            }
        }
        for (key, value) in self.own.into_iter().flatten() {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl Serialize for MetaParams<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("_meta", &self.meta)?;
        for (key, value) in self.params {
            if key != "_meta" {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

/// A request's params as the object they must be (`null` is none).
fn params_object(method: &str, params: Value) -> Result<Map<String, Value>, ClientError> {
    match params {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(ClientError::Unsupported(format!(
            "params of {method} must be an object, not {other}"
        ))),
    }
}

fn invalid(method: &str, error: impl std::fmt::Display) -> ClientError {
    ClientError::InvalidResult {
        method: method.to_owned(),
        message: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callers_meta_members_win() {
        let shared = json!({"a": 1, "b": 2});
        let own = json!({"b": 3, "c": 4});
        let params = json!({"_meta": own, "name": "x"});
        let body = MetaParams {
            meta: MergedMeta {
                shared: shared.as_object().unwrap(),
                own: own.as_object(),
            },
            params: params.as_object().unwrap(),
        };
        assert_eq!(
            serde_json::to_value(&body).unwrap(),
            json!({"_meta": {"a": 1, "b": 3, "c": 4}, "name": "x"})
        );
    }
}
