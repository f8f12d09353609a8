//! A view of the catalog (see [`crate::views`]): what its lists show, and
//! in discovery mode its three tools, which search, describe and call the
//! view's tools.

use std::sync::{Arc, Mutex};

use mcp_core::{HandlerResult, IncomingRequest, RequestContext, Service as _};
use mcp_schema::{ErrorObject, methods};
use serde_json::{Map, Value, json};

use super::Gateway;
use super::pages::ListOf;
use crate::catalog::Catalog;
use crate::views::search::SearchIndex;
use crate::views::{CALL_TOOL, DESCRIBE_TOOL, SEARCH_TOOLS, View};
use mcp_core::sync::MutexExt as _;

/// How many matches `search_tools` returns unless asked for another number.
const DEFAULT_MATCHES: usize = 10;
/// The most it returns.
const MAX_MATCHES: usize = 50;

/// The search index of a view's tools, made again when the catalog changes.
#[derive(Default)]
pub(super) struct IndexCache(Mutex<Option<(Arc<Catalog>, Arc<SearchIndex>)>>);

/// The three tools of a discovery view, as listed.
pub(super) fn tools() -> Vec<crate::upstream::Item> {
    let tools = vec![
        json!({
            "name": SEARCH_TOOLS,
            "title": "Search tools",
            "description": "Finds the tools that can do something, by words: give what you \
                want to do; returns the best matches, best first, with their descriptions. \
                Then describe_tool gives one's arguments and call_tool calls it.",
            "inputSchema": {"type": "object", "properties": {
                "query": {"type": "string", "description": "What the tool should do, in words"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_MATCHES,
                          "description": "How many matches, at most (default 10)"}},
                "required": ["query"]},
            "annotations": {"readOnlyHint": true, "destructiveHint": false,
                            "idempotentHint": true, "openWorldHint": false}
        }),
        json!({
            "name": DESCRIBE_TOOL,
            "title": "Describe a tool",
            "description": "The whole definition of a tool found by search_tools: its \
                description, its arguments' schema, its annotations.",
            "inputSchema": {"type": "object", "properties": {
                "name": {"type": "string", "description": "The tool's name"}},
                "required": ["name"]},
            "annotations": {"readOnlyHint": true, "destructiveHint": false,
                            "idempotentHint": true, "openWorldHint": false}
        }),
        json!({
            "name": CALL_TOOL,
            "title": "Call a tool",
            "description": "Calls a tool found by search_tools, by name, with its arguments \
                (as describe_tool gives their schema); returns the tool's own result.",
            "inputSchema": {"type": "object", "properties": {
                "name": {"type": "string", "description": "The tool's name"},
                "arguments": {"type": "object", "description": "The tool's arguments"}},
                "required": ["name"]},
        }),
    ];
    tools
        .into_iter()
        .filter_map(|tool| match tool {
            Value::Object(tool) => Some(tool),
            _ => None,
        })
        .collect()
}

/// Whether `name` is one of a discovery view's tools.
pub(super) fn is_discovery_tool(name: &str) -> bool {
    matches!(name, SEARCH_TOOLS | DESCRIBE_TOOL | CALL_TOOL)
}

impl Gateway {
    /// Whether this gateway's view (if it has one) shows `item` of `list`.
    pub(super) fn view_shows(
        &self,
        catalog: &Catalog,
        servers: &[Option<String>],
        list: ListOf,
        item: &crate::upstream::Item,
    ) -> bool {
        let Some(view) = &self.view else {
            return true;
        };
        let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default();
        let server = |index: Option<usize>| {
            index
                .and_then(|i| servers.get(i).cloned().flatten())
                .unwrap_or_default()
        };
        match list {
            ListOf::Tools => {
                let name = text("name");
                view.has_tool(&server(catalog.tool(name).map(|r| r.upstream)), name)
            }
            ListOf::Prompts => {
                view.has_server(&server(catalog.prompt(text("name")).map(|r| r.upstream)))
            }
            ListOf::Resources => {
                view.has_server(&server(catalog.resource(text("uri")).map(|r| r.upstream)))
            }
            ListOf::Templates => view.has_server(&server(catalog.template(text("uriTemplate")))),
        }
    }

    /// Whether the view shows the tool a call names (as the catalog shows
    /// it), of server `server`.
    pub(super) fn view_has_tool(&self, server: &str, exposed: &str) -> bool {
        self.view
            .as_ref()
            .is_none_or(|view| view.has_tool(server, exposed))
    }

    /// The view's tools, indexed for search.
    fn index(&self, view: &View) -> Arc<SearchIndex> {
        let catalog = self.host.catalog();
        let mut cached = self.index.0.locked();
        if let Some((of, index)) = cached.as_ref()
            && Arc::ptr_eq(of, &catalog)
        {
            return Arc::clone(index);
        }
        let servers = self.host.upstream_names();
        let tools = catalog
            .tools()
            .iter()
            .filter(|tool| self.view_shows(&catalog, &servers, ListOf::Tools, tool));
        let index = Arc::new(SearchIndex::new(tools));
        tracing::debug!(view = %view.name, tools = index.len(), "search index made");
        *cached = Some((Arc::clone(&catalog), Arc::clone(&index)));
        index
    }

    /// A call of one of the discovery tools.
    pub(super) async fn discovery_call(
        self,
        view: Arc<View>,
        name: String,
        arguments: Map<String, Value>,
        ctx: RequestContext,
    ) -> HandlerResult {
        let text = |key: &str| -> Result<String, ErrorObject> {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| ErrorObject::invalid_params(format!("\"{key}\" must be a string")))
        };
        match name.as_str() {
            SEARCH_TOOLS => {
                let query = text("query")?;
                let limit = arguments
                    .get("limit")
                    .and_then(Value::as_u64)
                    .map_or(DEFAULT_MATCHES, |n| (n as usize).clamp(1, MAX_MATCHES));
                let index = self.index(&view);
                let catalog = self.host.catalog();
                let found: Vec<Value> = index
                    .search(&query, limit)
                    .into_iter()
                    .map(|(name, score)| {
                        let tool = catalog.tool_definition(name);
                        let said = |key: &str| tool.and_then(|t| t.get(key)).cloned();
                        json!({"name": name, "title": said("title"),
                               "description": said("description"),
                               "score": (score * 1000.0).round() / 1000.0})
                    })
                    .collect();
                let mut lines: Vec<String> = found
                    .iter()
                    .map(|tool| {
                        let description = tool["description"].as_str().unwrap_or_default();
                        let first = description.lines().next().unwrap_or_default();
                        format!("{}: {first}", tool["name"].as_str().unwrap_or_default())
                    })
                    .collect();
                if lines.is_empty() {
                    lines.push(format!("no tool matches {query:?}"));
                }
                result(lines.join("\n"), json!({ "tools": found }))
            }
            DESCRIBE_TOOL => {
                let wanted = text("name")?;
                let index_has = self.index(&view);
                let catalog = self.host.catalog();
                let servers = self.host.upstream_names();
                let tool = catalog
                    .tool_definition(&wanted)
                    .filter(|t| self.view_shows(&catalog, &servers, ListOf::Tools, t))
                    .ok_or_else(|| {
                        ErrorObject::invalid_params(format!(
                            "no tool {wanted:?} in view {:?} ({} tools; search_tools finds them)",
                            view.name,
                            index_has.len()
                        ))
                    })?;
                let text = serde_json::to_string_pretty(tool).unwrap_or_default();
                result(text, Value::Object(tool.clone()))
            }
            _ => {
                // CALL_TOOL: the same path as a direct call.
                let wanted = text("name")?;
                let mut params = Map::new();
                params.insert("name".into(), Value::String(wanted));
                params.insert(
                    "arguments".into(),
                    arguments.get("arguments").cloned().unwrap_or(json!({})),
                );
                let raw =
                    serde_json::value::to_raw_value(&params).map_err(ErrorObject::internal)?;
                let request = IncomingRequest::new(methods::TOOLS_CALL, Some(raw));
                self.handle_request(request, ctx).await
            }
        }
    }
}

/// A tool result of `text`, with `structured` as its structured content.
fn result(text: String, structured: Value) -> HandlerResult {
    super::to_result(&json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
    }))
}
