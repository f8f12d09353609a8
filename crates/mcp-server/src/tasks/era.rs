//! Whether a call runs as a task, by the era of the request: asked for
//! (2025-11-25) or decided by the server (2026-07-28, extension).

use std::time::Duration;

use mcp_core::RequestContext;
use mcp_schema::{
    ClientCapabilities, ErrorObject, JsonObject, MissingRequiredClientCapabilityData, TaskMetadata,
    TaskSupport, error_codes,
};

use crate::tool::ToolDef;

/// How a `tools/call` runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum CallMode {
    /// Answered with the tool's result.
    Direct,
    /// Run as a task kept this long (`None`: the store's default).
    Task(Option<Duration>),
}

/// Whether the client declared the tasks extension on this request.
pub(crate) fn declares_tasks_extension(caps: &ClientCapabilities) -> bool {
    caps.extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(mcp_schema::EXTENSION_TASKS))
}

/// The -32021 error for a request that needs the tasks extension.
pub(crate) fn tasks_extension_required(what: &str) -> ErrorObject {
    let mut extensions = std::collections::BTreeMap::new();
    extensions.insert(mcp_schema::EXTENSION_TASKS.to_owned(), JsonObject::new());
    MissingRequiredClientCapabilityData {
        required_capabilities: ClientCapabilities {
            extensions: Some(extensions),
            ..Default::default()
        },
    }
    .into_error(format!(
        "{what} needs the client capability extensions[\"{}\"]",
        mcp_schema::EXTENSION_TASKS
    ))
}

/// Decides how a call of `tool` runs, from the tool's task support, the
/// revision and what the client asked or declared.
pub(crate) fn call_mode(
    tool: &ToolDef,
    requested: Option<&TaskMetadata>,
    ctx: &RequestContext,
) -> Result<CallMode, ErrorObject> {
    let support = tool.tasks();
    let name = &tool.tool().name;
    let revision = ctx.revision;
    if revision.has_core_tasks() {
        return match (support, requested) {
            (TaskSupport::Forbidden, Some(_)) => Err(ErrorObject::new(
                error_codes::METHOD_NOT_FOUND,
                format!("Tool {name} does not support task-augmented calls"),
            )),
            (TaskSupport::Required, None) => Err(ErrorObject::new(
                error_codes::METHOD_NOT_FOUND,
                format!("Tool {name} must be called as a task (params.task)"),
            )),
            (_, Some(task)) => Ok(CallMode::Task(task.ttl.map(Duration::from_millis))),
            (_, None) => Ok(CallMode::Direct),
        };
    }
    if revision.has_tasks_extension() {
        let declared = declares_tasks_extension(ctx.client_capabilities());
        return match support {
            TaskSupport::Forbidden => Ok(CallMode::Direct),
            _ if declared => Ok(CallMode::Task(None)),
            TaskSupport::Optional => Ok(CallMode::Direct),
            TaskSupport::Required => Err(tasks_extension_required(&format!("Tool {name}"))),
        };
    }
    match support {
        TaskSupport::Required => Err(ErrorObject::new(
            error_codes::METHOD_NOT_FOUND,
            format!("Tool {name} runs only as a task, which protocol revision {revision} lacks"),
        )),
        _ => Ok(CallMode::Direct),
    }
}
