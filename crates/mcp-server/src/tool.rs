//! Tools: an async function with typed arguments, like an axum handler.
//! The input schema comes from the argument type (schemars, JSON Schema
//! 2020-12); arguments are validated against it before the handler runs.

use std::future::Future;
use std::sync::Arc;

use mcp_core::{BoxFuture, box_future};
use mcp_schema::header_params::{HeaderParam, header_params, plain_annotated_types};
use mcp_schema::{CallToolResult, JsonObject, TaskSupport, Tool, ToolAnnotations, ToolExecution};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::{Context, HandlerError};

/// The arguments of a tool that takes none.
#[derive(Debug, Clone, Default, serde::Deserialize, JsonSchema)]
pub struct NoArguments {}

type ToolFn = dyn Fn(JsonObject, Context) -> BoxFuture<'static, Result<CallToolResult, HandlerError>>
    + Send
    + Sync;

/// A tool: its description for `tools/list` and its handler.
#[derive(Clone)]
pub struct ToolDef {
    pub(crate) tool: Tool,
    pub(crate) validator: Option<Arc<jsonschema::Validator>>,
    pub(crate) handler: Arc<ToolFn>,
    pub(crate) header_params: Option<Arc<[HeaderParam]>>,
    pub(crate) deferred_task: bool,
    pub(crate) required_scopes: Option<Arc<[String]>>,
}

impl std::fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDef").field("tool", &self.tool).finish()
    }
}

/// What a tool handler may return.
pub trait IntoToolResult {
    /// The `tools/call` result.
    fn into_tool_result(self) -> CallToolResult;
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> CallToolResult {
        self
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

fn schema_of<T: JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("title");
    }
    schema
}

fn parse_args<A: DeserializeOwned>(args: JsonObject) -> Result<A, HandlerError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| HandlerError::invalid_params(format!("arguments: {e}")))
}

impl ToolDef {
    /// A tool whose arguments are `A` (its schema is the tool's input
    /// schema) and whose handler returns text or a [`CallToolResult`].
    pub fn new<A, F, Fut, R>(
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, HandlerError>> + Send + 'static,
        R: IntoToolResult,
    {
        let handler = Arc::new(handler);
        let tool = Tool::new(name, schema_of::<A>()).with_description(description);
        ToolDef::from_parts(tool, move |args, ctx| {
            let handler = Arc::clone(&handler);
            async move {
                let args = parse_args::<A>(args)?;
                handler(args, ctx)
                    .await
                    .map(IntoToolResult::into_tool_result)
            }
        })
    }

    /// A tool with typed output: `O` becomes the output schema, the value
    /// fills `structuredContent` (and a text block for older clients).
    pub fn structured<A, O, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + JsonSchema + 'static,
        F: Fn(A, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, HandlerError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let tool = Tool::new(name, schema_of::<A>())
            .with_description(description)
            .with_output_schema(schema_of::<O>());
        ToolDef::from_parts(tool, move |args, ctx| {
            let handler = Arc::clone(&handler);
            async move {
                let args = parse_args::<A>(args)?;
                let output = handler(args, ctx).await?;
                let value = serde_json::to_value(output).map_err(HandlerError::failed)?;
                Ok(CallToolResult::structured(value))
            }
        })
    }

    /// A tool described by hand (a verbatim input schema, say) whose handler
    /// takes the raw argument object.
    pub fn from_parts<F, Fut>(tool: Tool, handler: F) -> Self
    where
        F: Fn(JsonObject, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, HandlerError>> + Send + 'static,
    {
        let mut tool = tool;
        // Clients that refuse a nullable type on a header-mirrored argument
        // would drop the tool: an optional argument is left out instead.
        plain_annotated_types(&mut tool.input_schema);
        let schema = Value::Object(tool.input_schema.clone());
        let validator = match jsonschema::validator_for(&schema) {
            Ok(v) => Some(Arc::new(v)),
            Err(e) => {
                tracing::warn!(tool = %tool.name, "input schema does not compile, arguments go unchecked: {e}");
                None
            }
        };
        let header_params = match header_params(&schema) {
            Ok(params) if params.is_empty() => None,
            Ok(params) => Some(params.into()),
            Err(e) => {
                tracing::warn!(tool = %tool.name, "{e}; clients on HTTP will refuse this tool");
                None
            }
        };
        ToolDef {
            tool,
            validator,
            handler: Arc::new(move |args, ctx| box_future(|| handler(args, ctx))),
            header_params,
            deferred_task: false,
            required_scopes: None,
        }
    }

    /// Sets a human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.tool.title = Some(title.into());
        self
    }

    /// Sets behaviour hints (read-only, destructive, idempotent, open-world).
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.tool.annotations = Some(annotations);
        self
    }

    /// Declares whether calls may (or must) run as tasks: in 2025-11-25
    /// the client asks with `params.task` (shown to it as
    /// `execution.taskSupport`); in 2026-07-28 the server runs the call as a
    /// task when the client declared the tasks extension. Default
    /// [`TaskSupport::Forbidden`].
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.tool.execution = Some(ToolExecution {
            task_support: Some(support),
        });
        self
    }

    /// Lets a call that would run as a task (2026-07-28, client declared
    /// the tasks extension) start as an ordinary request instead: it
    /// gathers input in `input_required` rounds and becomes a task only
    /// when the handler calls [`Context::continue_as_task`].
    pub fn deferred_task(mut self) -> Self {
        self.deferred_task = true;
        self
    }

    /// Declares the OAuth scopes a caller must hold to call this tool. An
    /// HTTP endpoint behind an authorization layer refuses callers that lack
    /// them with a `403 insufficient_scope` challenge naming these scopes,
    /// before the handler runs.
    pub fn required_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let scopes: Vec<String> = scopes.into_iter().map(Into::into).collect();
        self.required_scopes = (!scopes.is_empty()).then(|| scopes.into());
        self
    }

    /// The scopes declared with [`ToolDef::required_scopes`].
    pub fn scopes(&self) -> &[String] {
        self.required_scopes.as_deref().unwrap_or(&[])
    }

    /// Whether calls may or must run as tasks.
    pub(crate) fn tasks(&self) -> TaskSupport {
        self.tool
            .execution
            .as_ref()
            .and_then(|e| e.task_support)
            .unwrap_or_default()
    }

    /// The tool as listed.
    pub fn tool(&self) -> &Tool {
        &self.tool
    }

    /// Checks arguments against the input schema and hands them back; the
    /// message lists every violation with its location.
    pub(crate) fn check_arguments(&self, args: JsonObject) -> Result<JsonObject, String> {
        let Some(validator) = &self.validator else {
            return Ok(args);
        };
        let instance = Value::Object(args);
        if validator.is_valid(&instance) {
            let Value::Object(args) = instance else {
                unreachable!("built as an object just above")
            };
            return Ok(args);
        }
        let problems: Vec<String> = validator
            .iter_errors(&instance)
            .map(|e| {
                let path = e.instance_path().to_string();
                if path.is_empty() {
                    e.to_string()
                } else {
                    format!("{path}: {e}")
                }
            })
            .collect();
        Err(format!(
            "invalid arguments for {}: {}",
            self.tool.name,
            problems.join("; ")
        ))
    }
}
