//! The tools offered only with `--write`: `execute`, `insert_row`,
//! `update_row`, `delete_row`.

use std::sync::Arc;

use mcp_server::{Context, HandlerError, ToolDef};
use rusqlite::types::Value as SqlValue;
use serde_json::{Map, Value};

use super::{
    DeleteArgs, ExecuteArgs, ExecuteOutput, InsertArgs, Params, RowChange, UpdateArgs, hints,
};
use crate::sqlite::Database;
use crate::sqlite::engine::Session;
use crate::sqlite::resources;
use crate::sqlite::schema::{self, RowKey, TableSchema, quote};
use crate::sqlite::statements;
use crate::sqlite::values;
use crate::sqlite::worker::Worker;

fn writer(database: &Database) -> Result<&Worker, HandlerError> {
    database
        .writer
        .as_ref()
        .ok_or_else(|| HandlerError::failed("this server is read-only (started without --write)"))
}

/// `execute`: one statement that changes the database.
pub(super) fn execute(database: &Arc<Database>) -> ToolDef {
    let database = Arc::clone(database);
    ToolDef::structured(
        "execute",
        "Runs one SQL statement that changes the database (INSERT, UPDATE, DELETE, CREATE, DROP, \
         ALTER...) in a transaction of its own, and returns how many rows it changed, the last \
         inserted rowid, and the columns and rows it returns (with RETURNING; empty otherwise). \
         Values go in `params`.",
        move |args: ExecuteArgs, ctx: Context| {
            let database = Arc::clone(&database);
            async move {
                let config = &database.config;
                let (max_rows, max_bytes) = (config.default_rows, config.max_result_bytes);
                let params = args.params.map(Params::into_value);
                let sql = args.sql;
                let outcome = writer(&database)?
                    .run_until_cancelled(&ctx, move |session| {
                        let total_before = session.conn().total_changes();
                        let mut statement = session.prepare_one(&sql)?;
                        statements::bind(&mut statement, params.as_ref())?;
                        let rows =
                            statements::read_rows(session, &mut statement, max_rows, max_bytes)?;
                        drop(statement);
                        Ok::<_, String>(ExecuteOutput {
                            changes: statements::changes_since(session, total_before),
                            last_insert_rowid: session.conn().last_insert_rowid(),
                            columns: rows.columns,
                            rows: rows.rows,
                            truncated: rows.truncated,
                        })
                    })
                    .await?;
                resources::refresh(&database, &ctx.server()).await;
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

/// `insert_row`: one new row from values by column name. It only adds:
/// `OR ABORT` overrides any `ON CONFLICT REPLACE` the table declares, so a
/// conflict is an error rather than a replaced row.
pub(super) fn insert_row(database: &Arc<Database>) -> ToolDef {
    let database = Arc::clone(database);
    ToolDef::structured(
        "insert_row",
        "Inserts one row into a table, given its values by column name, and returns the new \
         row's URI and rowid. A row whose key or unique values are taken already is refused, \
         never replaced.",
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
                                "INSERT OR ABORT INTO main.{} DEFAULT VALUES RETURNING {returning}",
                                quote(&table.name)
                            )
                        } else {
                            format!(
                                "INSERT OR ABORT INTO main.{} ({}) VALUES ({}) RETURNING {returning}",
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
                            statements::run_statement(session, &sql, &values, 1, max_bytes)?;
                        let uri = returned.rows.first().map(|row| {
                            let key_values: Vec<SqlValue> =
                                row.iter().map(json_to_sql_lossless).collect();
                            resources::row_uri(&table.name, &key.uri_key(&key_values))
                        });
                        Ok::<_, String>(RowChange {
                            changes,
                            last_insert_rowid,
                            uri,
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

/// `update_row`: new values for the row with a given key.
pub(super) fn update_row(database: &Arc<Database>) -> ToolDef {
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
                            return Err::<RowChange, String>(
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
                            statements::run_statement(session, &sql, &values, 1, 1)?;
                        if changes == 0 {
                            return Err(format!(
                                "no row of {:?} has the key {}: nothing was changed",
                                table.name, args.key
                            ));
                        }
                        Ok(RowChange {
                            changes,
                            last_insert_rowid,
                            uri: Some(resources::row_uri(&table.name, &key.uri_key(&key_values))),
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

/// `delete_row`: removes the row with a given key.
pub(super) fn delete_row(database: &Arc<Database>) -> ToolDef {
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
                            statements::run_statement(session, &sql, &key_values, 1, 1)?;
                        Ok::<_, String>(RowChange {
                            changes,
                            last_insert_rowid,
                            uri: None,
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
