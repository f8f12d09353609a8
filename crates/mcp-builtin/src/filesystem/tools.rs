//! How the file system tools are declared: typed arguments, work done off
//! the async threads, a text reply for the model and structured content
//! where the result has a shape.

use std::sync::Arc;

use mcp_schema::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use mcp_server::{HandlerError, ToolDef};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::State;
use super::roots::{self, Access};
use super::scope::AccessError;

/// Arguments of a tool that takes one path.
#[derive(Debug, serde::Deserialize, JsonSchema)]
pub(crate) struct PathArgs {
    /// Absolute, or relative to the first allowed directory.
    pub path: String,
}

/// What a tool answers: content blocks, and structured content when the
/// tool declares an output schema.
pub(crate) struct Reply {
    pub content: Vec<ContentBlock>,
    pub structured: Option<Value>,
}

impl Reply {
    /// A text reply with the same facts as `structured`.
    pub fn with<O: Serialize>(text: impl Into<String>, structured: &O) -> Reply {
        Reply {
            content: vec![ContentBlock::text(text)],
            structured: serde_json::to_value(structured).ok(),
        }
    }
}

/// The annotations of a tool that only reads.
pub(crate) fn reads() -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: Some(true),
        destructive_hint: Some(false),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
        ..Default::default()
    }
}

/// The annotations of a tool that changes files: `destructive` when an
/// existing path may be overwritten or removed (a move removes its
/// source), `idempotent` when a second identical call changes nothing more
/// (a move or copy that finds its destination taken is refused).
pub(crate) fn writes(destructive: bool, idempotent: bool) -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: Some(false),
        destructive_hint: Some(destructive),
        idempotent_hint: Some(idempotent),
        open_world_hint: Some(false),
        ..Default::default()
    }
}

pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("title");
    }
    schema
}

/// A tool description with its metadata.
pub(crate) struct Spec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub annotations: ToolAnnotations,
    pub output: Option<Value>,
}

/// A tool whose handler `work` runs on a blocking thread with the
/// arguments `A` and what the request may reach (the shared state
/// narrowed to the client's roots); an [`AccessError`] becomes an
/// `isError` result saying why.
pub(crate) fn blocking<A, F>(spec: Spec, state: &Arc<State>, work: F) -> ToolDef
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, &Access) -> Result<Reply, AccessError> + Send + Sync + 'static,
{
    let mut tool = Tool::new(spec.name, schema_of::<A>()).with_description(spec.description);
    if let Some(output) = spec.output {
        tool = tool.with_output_schema(output);
    }
    let mut annotations = spec.annotations;
    annotations.title = Some(spec.title.to_owned());
    let work = Arc::new(work);
    let state = Arc::clone(state);
    ToolDef::from_parts(tool, move |args, ctx| {
        let work = Arc::clone(&work);
        let state = Arc::clone(&state);
        async move {
            let args: A = serde_json::from_value(Value::Object(args))
                .map_err(|e| HandlerError::invalid_params(format!("arguments: {e}")))?;
            let roots = roots::of(&ctx, &state.scope).await?;
            let reply =
                tokio::task::spawn_blocking(move || work(args, &Access::new(&state, roots)))
                    .await
                    .map_err(|e| HandlerError::failed(format!("the operation stopped: {e}")))?;
            match reply {
                Ok(reply) => Ok(CallToolResult {
                    content: reply.content,
                    structured_content: reply.structured,
                    ..Default::default()
                }),
                Err(e) => Ok(CallToolResult::error(e.to_string())),
            }
        }
    })
    .title(spec.title)
    .annotations(annotations)
}
