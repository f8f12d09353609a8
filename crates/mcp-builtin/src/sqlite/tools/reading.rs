//! The tools offered in every mode: `list_tables`, `describe_table`,
//! `query`, `explain`.

use std::sync::Arc;

use mcp_server::{Context, HandlerError, NoArguments, ToolDef};
use serde_json::Value;

use super::{
    DescribeArgs, ExplainArgs, ExplainOutput, Params, PlanStep, QueryArgs, QueryOutput, TableList,
    hints,
};
use crate::sqlite::Database;
use crate::sqlite::engine::Session;
use crate::sqlite::schema;
use crate::sqlite::statements;

/// `list_tables`: the tables and views.
pub(super) fn list_tables(database: &Arc<Database>) -> ToolDef {
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

/// `describe_table`: one table's columns, keys and indexes.
pub(super) fn describe_table(database: &Arc<Database>) -> ToolDef {
    let database = Arc::clone(database);
    ToolDef::structured(
        "describe_table",
        "Describes a table or view: its columns and types, primary key, foreign keys, indexes \
         and CREATE statement.",
        move |args: DescribeArgs, _: Context| {
            let database = Arc::clone(&database);
            async move {
                let table = args.table;
                let described = database.describe(&table).await?;
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

/// `query`: one read-only statement's rows, within the caps.
pub(super) fn query(database: &Arc<Database>) -> ToolDef {
    let database = Arc::clone(database);
    ToolDef::structured(
        "query",
        "Runs one read-only SQL statement and returns its rows (at most `max_rows`, 1000 unless \
         asked). Values go in `params`, bound to `?` or `:name` placeholders. The statement is \
         stopped when it runs past the server's time budget.",
        move |args: QueryArgs, ctx: Context| {
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
                    .run_until_cancelled(&ctx, move |session| {
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
                        statements::bind(&mut statement, params.as_ref())?;
                        statements::read_rows(session, &mut statement, max_rows, max_bytes)
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

/// `explain`: a statement's query plan, without running it.
pub(super) fn explain(database: &Arc<Database>) -> ToolDef {
    let database = Arc::clone(database);
    ToolDef::structured(
        "explain",
        "Shows SQLite's query plan for one SQL statement (EXPLAIN QUERY PLAN) without running \
         it: which tables are scanned and which indexes are used.",
        move |args: ExplainArgs, ctx: Context| {
            let database = Arc::clone(&database);
            async move {
                let params = args.params.map(Params::into_value);
                let sql = args.sql;
                let plan = database
                    .reader
                    .run_until_cancelled(&ctx, move |session| {
                        plan_of(session, &sql, params.as_ref())
                    })
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
        statements::bind(&mut statement, params)?;
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
