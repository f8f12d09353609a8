//! The tools: `list_tables`, `describe_table`, `query` and `explain`
//! always; `execute`, `insert_row`, `update_row` and `delete_row` only
//! when the server may write.

use std::sync::Arc;

use mcp_schema::ToolAnnotations;
use mcp_server::{Context, HandlerError, NoArguments, ToolDef};
use rusqlite::types::Value as SqlValue;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Database;
use super::engine::{self, Session};
use super::resources;
use super::schema::{self, RowKey, TableSchema, TableSummary, quote};
use super::values;

/// Hints for a tool: whether it only reads, may destroy, and may be
/// repeated to no further effect. None of them reaches beyond the file.
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

/// What a change did.
#[derive(Debug, Serialize, JsonSchema)]
struct ChangeOutput {
    /// How many rows the statement inserted, updated or deleted.
    changes: u64,
    /// The rowid of the last row inserted on this connection.
    last_insert_rowid: i64,
    /// The row's resource URI (the row tools).
    #[serde(skip_serializing_if = "Option::is_none")]
    uri: Option<String>,
    /// The column names of rows it returned (`RETURNING`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    columns: Vec<String>,
    /// Rows it returned (`RETURNING`), in column order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    rows: Vec<Vec<Value>>,
    /// Whether it returned more rows than these.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    truncated: bool,
}

/// The tools offered in every mode.
pub fn reading(database: &Arc<Database>) -> Vec<ToolDef> {
    vec![
        list_tables(database),
        describe_table(database),
        query(database),
        explain(database),
    ]
}

/// The tools offered only when the server may write.
pub fn writing(database: &Arc<Database>) -> Vec<ToolDef> {
    vec![
        execute(database),
        insert_row(database),
        update_row(database),
        delete_row(database),
    ]
}

fn list_tables(database: &Arc<Database>) -> ToolDef {
    let database = Arc::clone(database);
    ToolDef::structured(
        "list_tables",
        "Lists the tables and views of the database with their column counts.",
        move |_: NoArguments, _: Context| {
            let database = Arc::clone(&database);
            async move {
                let tables = database
                    .reader
                    .run(|session| schema::list_tables(session).map_err(|e| session.explain(e)))
                    .await?
                    .map_err(HandlerError::failed)?;
                Ok(TableList { tables })
            }
        },
    )
    .title("List tables")
    .annotations(hints(true, false, true))
}

fn describe_table(database: &Arc<Database>) -> ToolDef {
    let database = Arc::clone(database);
    ToolDef::structured(
        "describe_table",
        "Describes a table or view: its columns and types, primary key, foreign keys, indexes \
         and CREATE statement.",
        move |args: DescribeArgs, _: Context| {
            let database = Arc::clone(&database);
            async move {
                let table = args.table;
                let name = table.clone();
                let described = database
                    .reader
                    .run(move |session| {
                        schema::describe(session, &name).map_err(|e| session.explain(e))
                    })
                    .await?
                    .map_err(HandlerError::failed)?;
                described.ok_or_else(|| {
                    HandlerError::failed(format!(
                        "no table or view is named {table:?}: `list_tables` lists them"
                    ))
                })
            }
        },
    )
    .title("Describe a table")
    .annotations(hints(true, false, true))
}

fn query(database: &Arc<Database>) -> ToolDef {
    let database = Arc::clone(database);
    ToolDef::structured(
        "query",
        "Runs one read-only SQL statement and returns its rows (at most `max_rows`, 1000 unless \
         asked). Values go in `params`, bound to `?` or `:name` placeholders. The statement is \
         stopped when it runs past the server's time budget.",
        move |args: QueryArgs, _: Context| {
            let database = Arc::clone(&database);
            async move {
                let config = &database.config;
                let max_rows = args
                    .max_rows
                    .unwrap_or(config.default_rows)
                    .clamp(1, config.max_rows);
                let (ceiling, max_bytes) = (config.max_rows, config.max_result_bytes);
                let can_write = database.writer.is_some();
                let params = args.params.map(Params::into_value);
                let sql = args.sql;
                let rows = database
                    .reader
                    .run(move |session| {
                        let mut statement = session.prepare_one(&sql)?;
                        if !statement.readonly() {
                            return Err(if can_write {
                                "`query` runs only statements that read, and this one would change \
                                 the database: run it with `execute`"
                                    .to_owned()
                            } else {
                                "`query` runs only statements that read, and this one would change \
                                 the database; this server is read-only"
                                    .to_owned()
                            });
                        }
                        engine::bind(&mut statement, params.as_ref())?;
                        engine::read_rows(session, &mut statement, max_rows, max_bytes)
                    })
                    .await?
                    .map_err(HandlerError::failed)?;
                let notice = rows.truncated.then(|| {
                    if rows.rows.len() >= max_rows {
                        format!(
                            "stopped after {max_rows} rows; ask for more with `max_rows` (up to \
                             {ceiling}), or narrow the query (WHERE, LIMIT/OFFSET)"
                        )
                    } else {
                        format!(
                            "stopped after {} rows: the result reached the size cap of about \
                             {max_bytes} bytes; select fewer or smaller columns, or page with \
                             LIMIT/OFFSET",
                            rows.rows.len()
                        )
                    }
                });
                Ok(QueryOutput {
                    row_count: rows.rows.len(),
                    columns: rows.columns,
                    rows: rows.rows,
                    truncated: rows.truncated,
                    notice,
                })
            }
        },
    )
    .title("Query (read-only)")
    .annotations(hints(true, false, true))
}

fn explain(database: &Arc<Database>) -> ToolDef {
    let database = Arc::clone(database);
    ToolDef::structured(
        "explain",
        "Shows SQLite's query plan for one SQL statement (EXPLAIN QUERY PLAN) without running \
         it: which tables are scanned and which indexes are used.",
        move |args: ExplainArgs, _: Context| {
            let database = Arc::clone(&database);
            async move {
                let params = args.params.map(Params::into_value);
                let sql = args.sql;
                let plan = database
                    .reader
                    .run(move |session| plan_of(session, &sql, params.as_ref()))
                    .await?
                    .map_err(HandlerError::failed)?;
                let tree = render_plan(&plan);
                Ok(ExplainOutput { plan, tree })
            }
        },
    )
    .title("Explain a query plan")
    .annotations(hints(true, false, true))
}

fn plan_of(session: &Session, sql: &str, params: Option<&Value>) -> Result<Vec<PlanStep>, String> {
    drop(session.prepare_one(sql)?);
    let mut statement = session.prepare_one(&format!("EXPLAIN QUERY PLAN {sql}"))?;
    if params.is_some() {
        engine::bind(&mut statement, params)?;
    }
    let mut rows = statement.raw_query();
    let mut plan = Vec::new();
    loop {
        match rows.next() {
            Ok(Some(row)) => plan.push(PlanStep {
                id: row.get(0).map_err(|e| session.explain(e))?,
                parent: row.get(1).map_err(|e| session.explain(e))?,
                detail: row.get(3).map_err(|e| session.explain(e))?,
            }),
            Ok(None) => return Ok(plan),
            Err(e) => return Err(session.explain(e)),
        }
    }
}

fn render_plan(plan: &[PlanStep]) -> String {
    fn depth(plan: &[PlanStep], step: &PlanStep) -> usize {
        let mut depth = 0;
        let mut parent = step.parent;
        while parent != 0 && depth < plan.len() {
            depth += 1;
            parent = plan.iter().find(|s| s.id == parent).map_or(0, |s| s.parent);
        }
        depth
    }
    plan.iter()
        .map(|step| format!("{}{}", "  ".repeat(depth(plan, step)), step.detail))
        .collect::<Vec<_>>()
        .join("\n")
}

fn writer(database: &Database) -> Result<&engine::Worker, HandlerError> {
    database
        .writer
        .as_ref()
        .ok_or_else(|| HandlerError::failed("this server is read-only (started without --write)"))
}

fn execute(database: &Arc<Database>) -> ToolDef {
    let database = Arc::clone(database);
    ToolDef::structured(
        "execute",
        "Runs one SQL statement that changes the database (INSERT, UPDATE, DELETE, CREATE, DROP, \
         ALTER...) in a transaction of its own, and returns how many rows it changed and the last \
         inserted rowid (and rows it returns with RETURNING). Values go in `params`.",
        move |args: ExecuteArgs, ctx: Context| {
            let database = Arc::clone(&database);
            async move {
                let config = &database.config;
                let (max_rows, max_bytes) = (config.default_rows, config.max_result_bytes);
                let params = args.params.map(Params::into_value);
                let sql = args.sql;
                let outcome = writer(&database)?
                    .run(move |session| {
                        let mut statement = session.prepare_one(&sql)?;
                        engine::bind(&mut statement, params.as_ref())?;
                        let rows = engine::read_rows(session, &mut statement, max_rows, max_bytes)?;
                        drop(statement);
                        Ok::<_, String>(ChangeOutput {
                            changes: session.conn().changes(),
                            last_insert_rowid: session.conn().last_insert_rowid(),
                            uri: None,
                            columns: if rows.rows.is_empty() {
                                Vec::new()
                            } else {
                                rows.columns
                            },
                            rows: rows.rows,
                            truncated: rows.truncated,
                        })
                    })
                    .await?;
                resources::refresh(&database, ctx.server()).await;
                outcome.map_err(HandlerError::failed)
            }
        },
    )
    .title("Execute a statement")
    .annotations(hints(false, true, false))
}

/// The table `name` for a row tool, with its key: refused for a view or a
/// table whose rows have no key.
fn table_for_rows(session: &Session, name: &str) -> Result<(TableSchema, RowKey), String> {
    let table = schema::describe(session, name)
        .map_err(|e| session.explain(e))?
        .ok_or_else(|| format!("no table is named {name:?}: `list_tables` lists them"))?;
    if table.kind == "view" {
        return Err(format!(
            "{name:?} is a view: its rows cannot be changed by key"
        ));
    }
    let key = RowKey::of(&table).ok_or_else(|| {
        format!("the rows of {name:?} have no key to name them by: use `execute`")
    })?;
    Ok((table, key))
}

/// The schema's spelling of each column named in `values`, with the value
/// to bind; refused for a column the table lacks or one it generates.
fn columns_and_values(
    table: &TableSchema,
    values: &Map<String, Value>,
) -> Result<Vec<(String, SqlValue)>, String> {
    values
        .iter()
        .map(|(name, value)| {
            let column = table
                .columns
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(name))
                .ok_or_else(|| {
                    format!(
                        "table {:?} has no column {name:?} (its columns: {})",
                        table.name,
                        table
                            .columns
                            .iter()
                            .map(|c| c.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?;
            if column.generated {
                return Err(format!(
                    "column {name:?} is generated: it cannot be written"
                ));
            }
            Ok((
                column.name.clone(),
                values::from_json(value, &format!("values.{name}"))?,
            ))
        })
        .collect()
}

fn insert_row(database: &Arc<Database>) -> ToolDef {
    let database = Arc::clone(database);
    ToolDef::structured(
        "insert_row",
        "Inserts one row into a table, given its values by column name, and returns the new \
         row's URI and rowid.",
        move |args: InsertArgs, _: Context| {
            let database = Arc::clone(&database);
            async move {
                let max_bytes = database.config.max_result_bytes;
                writer(&database)?
                    .run(move |session| {
                        let (table, key) = table_for_rows(session, &args.table)?;
                        let assigned = columns_and_values(&table, &args.values)?;
                        let returning = key
                            .columns()
                            .iter()
                            .map(|c| quote(c))
                            .collect::<Vec<_>>()
                            .join(", ");
                        let sql = if assigned.is_empty() {
                            format!(
                                "INSERT INTO main.{} DEFAULT VALUES RETURNING {returning}",
                                quote(&table.name)
                            )
                        } else {
                            format!(
                                "INSERT INTO main.{} ({}) VALUES ({}) RETURNING {returning}",
                                quote(&table.name),
                                assigned
                                    .iter()
                                    .map(|(c, _)| quote(c))
                                    .collect::<Vec<_>>()
                                    .join(", "),
                                (1..=assigned.len())
                                    .map(|i| format!("?{i}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        };
                        let values: Vec<SqlValue> =
                            assigned.into_iter().map(|(_, value)| value).collect();
                        let (returned, changes, last_insert_rowid) =
                            engine::run_statement(session, &sql, &values, 1, max_bytes)?;
                        let uri = returned.rows.first().map(|row| {
                            let key_values: Vec<SqlValue> =
                                row.iter().map(json_to_sql_lossless).collect();
                            resources::row_uri(&table.name, &key.uri_key(&key_values))
                        });
                        Ok::<_, String>(ChangeOutput {
                            changes,
                            last_insert_rowid,
                            uri,
                            columns: Vec::new(),
                            rows: Vec::new(),
                            truncated: false,
                        })
                    })
                    .await?
                    .map_err(HandlerError::failed)
            }
        },
    )
    .title("Insert a row")
    .annotations(hints(false, false, false))
}

/// A value read back from SQLite as JSON, bound again.
fn json_to_sql_lossless(value: &Value) -> SqlValue {
    values::from_json(value, "key").unwrap_or_else(|_| SqlValue::Text(value.to_string()))
}

fn update_row(database: &Arc<Database>) -> ToolDef {
    let database = Arc::clone(database);
    ToolDef::structured(
        "update_row",
        "Changes columns of the one row of a table with the given primary key (the rowid for a \
         table without one). Fails when no row has that key.",
        move |args: UpdateArgs, _: Context| {
            let database = Arc::clone(&database);
            async move {
                writer(&database)?
                    .run(move |session| {
                        let (table, key) = table_for_rows(session, &args.table)?;
                        let key_values = key.parse_tool_key(&args.key)?;
                        let assigned = columns_and_values(&table, &args.values)?;
                        if assigned.is_empty() {
                            return Err::<ChangeOutput, String>(
                                "`values` names no column to change".to_owned(),
                            );
                        }
                        let sql = format!(
                            "UPDATE main.{} SET {} WHERE {}",
                            quote(&table.name),
                            assigned
                                .iter()
                                .enumerate()
                                .map(|(i, (c, _))| format!("{} = ?{}", quote(c), i + 1))
                                .collect::<Vec<_>>()
                                .join(", "),
                            key.where_clause(assigned.len() + 1)
                        );
                        let values: Vec<SqlValue> = assigned
                            .into_iter()
                            .map(|(_, value)| value)
                            .chain(key_values.iter().cloned())
                            .collect();
                        let (_, changes, last_insert_rowid) =
                            engine::run_statement(session, &sql, &values, 1, 1)?;
                        if changes == 0 {
                            return Err(format!(
                                "no row of {:?} has the key {}: nothing was changed",
                                table.name, args.key
                            ));
                        }
                        Ok(ChangeOutput {
                            changes,
                            last_insert_rowid,
                            uri: Some(resources::row_uri(&table.name, &key.uri_key(&key_values))),
                            columns: Vec::new(),
                            rows: Vec::new(),
                            truncated: false,
                        })
                    })
                    .await?
                    .map_err(HandlerError::failed)
            }
        },
    )
    .title("Update a row")
    .annotations(hints(false, true, true))
}

fn delete_row(database: &Arc<Database>) -> ToolDef {
    let database = Arc::clone(database);
    ToolDef::structured(
        "delete_row",
        "Deletes the one row of a table with the given primary key (the rowid for a table \
         without one). Deleting a row that is not there changes nothing (`changes: 0`).",
        move |args: DeleteArgs, _: Context| {
            let database = Arc::clone(&database);
            async move {
                writer(&database)?
                    .run(move |session| {
                        let (table, key) = table_for_rows(session, &args.table)?;
                        let key_values = key.parse_tool_key(&args.key)?;
                        let sql = format!(
                            "DELETE FROM main.{} WHERE {}",
                            quote(&table.name),
                            key.where_clause(1)
                        );
                        let (_, changes, last_insert_rowid) =
                            engine::run_statement(session, &sql, &key_values, 1, 1)?;
                        Ok::<_, String>(ChangeOutput {
                            changes,
                            last_insert_rowid,
                            uri: None,
                            columns: Vec::new(),
                            rows: Vec::new(),
                            truncated: false,
                        })
                    })
                    .await?
                    .map_err(HandlerError::failed)
            }
        },
    )
    .title("Delete a row")
    .annotations(hints(false, true, true))
}
