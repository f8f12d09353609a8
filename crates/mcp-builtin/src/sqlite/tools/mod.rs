//! The tools: `list_tables`, `describe_table`, `query` and `explain`
//! always; `execute`, `insert_row`, `update_row` and `delete_row` only
//! when the server may write.

use std::sync::Arc;

use mcp_schema::ToolAnnotations;
use mcp_server::ToolDef;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Database;
use super::schema::TableSummary;

mod reading;
mod writing;

/// Hints for a tool: whether it only reads, may destroy, and may be
/// repeated to no further effect, for the statement the tool runs
/// (triggers the schema declares run as written). None of them reaches
/// beyond the file.
fn hints(read_only: bool, destructive: bool, idempotent: bool) -> ToolAnnotations {
    ToolAnnotations {
        title: None,
        read_only_hint: Some(read_only),
        destructive_hint: Some(destructive),
        idempotent_hint: Some(idempotent),
        open_world_hint: Some(false),
    }
}

/// Parameters bound to the statement's placeholders.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
enum Params {
    /// By position, for `?` and `?NNN` placeholders.
    Positional(Vec<Value>),
    /// By name, for `:name`, `@name` and `$name` placeholders (the key may
    /// omit the prefix).
    Named(Map<String, Value>),
}

impl Params {
    fn into_value(self) -> Value {
        match self {
            Params::Positional(items) => Value::Array(items),
            Params::Named(named) => Value::Object(named),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
struct DescribeArgs {
    /// The table or view.
    table: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct QueryArgs {
    /// One read-only SQL statement (SELECT, WITH, a reading PRAGMA...).
    /// Put values in `params`, never in the text.
    sql: String,
    /// Values for the statement's placeholders: an array by position
    /// (`?`), or an object by name (`:name`). A BLOB is
    /// `{"$base64": "..."}`.
    #[serde(default)]
    params: Option<Params>,
    /// The most rows to return (default 1000); the result says
    /// `truncated` when there were more.
    #[serde(default)]
    #[schemars(range(min = 1))]
    max_rows: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ExplainArgs {
    /// The SQL statement whose plan to show (it is not run).
    sql: String,
    /// Values for its placeholders, if the plan should see them.
    #[serde(default)]
    params: Option<Params>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ExecuteArgs {
    /// One SQL statement (INSERT, UPDATE, DELETE, CREATE, DROP, ALTER...).
    /// Put values in `params`, never in the text.
    sql: String,
    /// Values for the statement's placeholders: an array by position
    /// (`?`), or an object by name (`:name`).
    #[serde(default)]
    params: Option<Params>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct InsertArgs {
    /// The table.
    table: String,
    /// The new row's values by column name; columns left out take their
    /// defaults. A BLOB is `{"$base64": "..."}`.
    values: Map<String, Value>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct UpdateArgs {
    /// The table.
    table: String,
    /// The row's primary key: its value for a one-column key (the rowid
    /// for a table without one), or an object naming each key column.
    key: Value,
    /// The columns to change and their new values.
    values: Map<String, Value>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct DeleteArgs {
    /// The table.
    table: String,
    /// The row's primary key: its value for a one-column key (the rowid
    /// for a table without one), or an object naming each key column.
    key: Value,
}

/// The tables and views of the database.
#[derive(Debug, Serialize, JsonSchema)]
struct TableList {
    /// Each table and view, by name.
    tables: Vec<TableSummary>,
}

/// Rows a statement returned.
#[derive(Debug, Serialize, JsonSchema)]
struct QueryOutput {
    /// The column names, in order.
    columns: Vec<String>,
    /// Each row's values, in column order. A BLOB is `{"$base64": "..."}`.
    rows: Vec<Vec<Value>>,
    /// How many rows are here.
    row_count: usize,
    /// Whether the statement had more rows than returned.
    truncated: bool,
    /// What to do about a truncated result.
    #[serde(skip_serializing_if = "Option::is_none")]
    notice: Option<String>,
}

/// One step of a query plan.
#[derive(Debug, Serialize, JsonSchema)]
struct PlanStep {
    /// The step's id.
    id: i64,
    /// The id of the step it belongs to (0: the top).
    parent: i64,
    /// What SQLite does (`SCAN t`, `SEARCH t USING INDEX ...`).
    detail: String,
}

/// SQLite's plan for a statement.
#[derive(Debug, Serialize, JsonSchema)]
struct ExplainOutput {
    /// The steps, in SQLite's order.
    plan: Vec<PlanStep>,
    /// The plan as an indented tree.
    tree: String,
}

/// What `execute` did. Every field is always present: a statement
/// without `RETURNING` has no columns and no rows.
#[derive(Debug, Serialize, JsonSchema)]
struct ExecuteOutput {
    /// How many rows the statement inserted, updated or deleted.
    changes: u64,
    /// The rowid of the last row inserted on this connection.
    last_insert_rowid: i64,
    /// The column names of the rows it returns (`RETURNING`, or a query).
    columns: Vec<String>,
    /// The rows it returned, in column order. A BLOB is
    /// `{"$base64": "..."}`.
    rows: Vec<Vec<Value>>,
    /// Whether it returned more rows than these.
    truncated: bool,
}

/// What a row tool did.
#[derive(Debug, Serialize, JsonSchema)]
struct RowChange {
    /// How many rows were inserted, updated or deleted.
    changes: u64,
    /// The rowid of the last row inserted on this connection.
    last_insert_rowid: i64,
    /// The row's resource URI (absent once the row is deleted).
    #[serde(skip_serializing_if = "Option::is_none")]
    uri: Option<String>,
}

/// The tools offered in every mode.
pub fn reading(database: &Arc<Database>) -> Vec<ToolDef> {
    vec![
        reading::list_tables(database),
        reading::describe_table(database),
        reading::query(database),
        reading::explain(database),
    ]
}

/// The tools offered only when the server may write.
pub fn writing(database: &Arc<Database>) -> Vec<ToolDef> {
    vec![
        writing::execute(database),
        writing::insert_row(database),
        writing::update_row(database),
        writing::delete_row(database),
    ]
}
