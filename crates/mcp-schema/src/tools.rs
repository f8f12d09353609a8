//! Tools: listing and calling.

use crate::result::{cached_result_struct, result_struct};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ContentBlock, Icon, InputResponses, JsonObject, Meta, TaskMetadata};

/// Hints about a tool's behaviour; untrusted unless the server is trusted.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// Whether a tool supports task-augmented calls (2025-11-25).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Calls must not be task-augmented (the default).
    #[default]
    Forbidden,
    /// Calls may be task-augmented.
    Optional,
    /// Calls must be task-augmented.
    Required,
}

/// Execution properties of a tool (2025-11-25).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether the tool supports task-augmented calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
}

/// A tool the server offers.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Tool metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Programmatic name.
    pub name: String,
    /// Human-readable name (2025-06-18 onwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does; a hint to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments (`"type": "object"`).
    pub input_schema: JsonObject,
    /// JSON Schema of `structuredContent` (2025-06-18 onwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    /// Behaviour hints (2025-03-26 onwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Execution properties (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// Icons (2025-11-25 onwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
}

impl Tool {
    /// A tool with a name and an input schema. A `Value` that is not an
    /// object becomes the empty-object schema `{"type": "object"}`; use
    /// [`Tool::try_new`] to refuse it instead.
    pub fn new(name: impl Into<String>, input_schema: Value) -> Self {
        let input_schema = match input_schema {
            Value::Object(map) => map,
            _ => empty_object_schema(),
        };
        Tool {
            name: name.into(),
            input_schema,
            ..Default::default()
        }
    }

    /// A tool with a name and an input schema, which must be a JSON object.
    pub fn try_new(name: impl Into<String>, input_schema: Value) -> Result<Self, Value> {
        match input_schema {
            Value::Object(_) => Ok(Tool::new(name, input_schema)),
            other => Err(other),
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the output schema (an object; anything else is ignored).
    pub fn with_output_schema(mut self, output_schema: Value) -> Self {
        if let Value::Object(map) = output_schema {
            self.output_schema = Some(map);
        }
        self
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }
}

/// The schema `{"type": "object"}`: an object with any members.
pub fn empty_object_schema() -> JsonObject {
    let mut map = JsonObject::new();
    map.insert("type".to_owned(), Value::String("object".to_owned()));
    map
}

/// Params of `tools/call`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The tool's name.
    pub name: String,
    /// The arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Run the call as a task (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Answers to a previous `input_required` result (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// Opaque state echoed from a previous `input_required` result (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

impl CallToolRequestParams {
    /// Calls `name` with `arguments` (an object; anything else means no arguments).
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        CallToolRequestParams {
            name: name.into(),
            arguments: match arguments {
                Value::Object(map) => Some(map),
                _ => None,
            },
            ..Default::default()
        }
    }
}

result_struct! {
    /// Result of `tools/call`. Tool failures are results with `isError: true`,
    /// not JSON-RPC errors.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct CallToolResult {
        /// Unstructured result.
        pub content: Vec<ContentBlock>,
        /// Structured result matching the tool's output schema (2025-06-18 onwards).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub structured_content: Option<Value>,
        /// Whether the tool failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub is_error: Option<bool>,
    }
}

impl CallToolResult {
    /// A successful result with these blocks.
    pub fn success(content: Vec<ContentBlock>) -> Self {
        CallToolResult {
            content,
            ..Default::default()
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::success(vec![ContentBlock::text(text)])
    }

    /// A failed result (`isError: true`) with one text block saying why.
    pub fn error(message: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(message)],
            is_error: Some(true),
            ..Default::default()
        }
    }

    /// A successful structured result; the same JSON is also given as a text
    /// block, for clients that do not read `structuredContent`.
    pub fn structured(value: Value) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(value.to_string())],
            structured_content: Some(value),
            ..Default::default()
        }
    }

    /// Whether this result reports a failure.
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }
}

cached_result_struct! {
    /// Result of `tools/list`.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ListToolsResult {
        /// One page of tools.
        pub tools: Vec<Tool>,
        /// Where the next page starts; absent on the last page.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub next_cursor: Option<String>,
    }
}

impl ListToolsResult {
    /// A last page holding `tools`.
    pub fn new(tools: Vec<Tool>) -> Self {
        ListToolsResult {
            tools,
            ..Default::default()
        }
    }
}
