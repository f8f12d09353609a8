//! Running a statement: binding the caller's parameters, reading its rows
//! within the caps.

use rusqlite::Statement;
use rusqlite::types::Value as SqlValue;
use serde_json::Value;

use super::engine::Session;
use super::values;

/// Binds `params` to `statement`: an array binds by position, an object by
/// name (`name`, `:name`, `@name` or `$name`). Every parameter of the
/// statement must be given, and nothing else.
pub fn bind(statement: &mut Statement<'_>, params: Option<&Value>) -> Result<(), String> {
    let expected = statement.parameter_count();
    match params {
        None | Some(Value::Null) if expected == 0 => Ok(()),
        None | Some(Value::Null) => Err(format!(
            "the statement has {expected} parameter(s) and `params` is missing"
        )),
        Some(Value::Array(items)) => {
            if items.len() != expected {
                return Err(format!(
                    "the statement has {expected} parameter(s) and `params` has {}",
                    items.len()
                ));
            }
            for (i, item) in items.iter().enumerate() {
                let value = values::from_json(item, &format!("params[{i}]"))?;
                statement
                    .raw_bind_parameter(i + 1, value)
                    .map_err(|e| format!("params[{i}]: {e}"))?;
            }
            Ok(())
        }
        Some(Value::Object(named)) => {
            let mut bound = vec![false; expected];
            for (name, item) in named {
                let index = parameter_index(statement, name)?;
                let value = values::from_json(item, &format!("params.{name}"))?;
                statement
                    .raw_bind_parameter(index, value)
                    .map_err(|e| format!("params.{name}: {e}"))?;
                bound[index - 1] = true;
            }
            let missing: Vec<String> = (1..=expected)
                .filter(|i| !bound[i - 1])
                .map(|i| {
                    statement
                        .parameter_name(i)
                        .map_or_else(|| format!("?{i}"), str::to_owned)
                })
                .collect();
            if missing.is_empty() {
                Ok(())
            } else {
                Err(format!("`params` does not give {}", missing.join(", ")))
            }
        }
        Some(other) => Err(format!(
            "`params` must be an array (by position) or an object (by name), not {other}"
        )),
    }
}

fn parameter_index(statement: &Statement<'_>, name: &str) -> Result<usize, String> {
    let candidates: Vec<String> = if name.starts_with([':', '@', '$']) {
        vec![name.to_owned()]
    } else {
        [":", "@", "$"]
            .iter()
            .map(|p| format!("{p}{name}"))
            .collect()
    };
    for candidate in &candidates {
        if let Some(index) = statement
            .parameter_index(candidate)
            .map_err(|e| format!("params.{name}: {e}"))?
        {
            return Ok(index);
        }
    }
    let known: Vec<&str> = (1..=statement.parameter_count())
        .filter_map(|i| statement.parameter_name(i))
        .collect();
    Err(format!(
        "the statement has no parameter named {name} (its named parameters: {})",
        if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        }
    ))
}

/// Rows read from a statement, within caps.
pub struct Rows {
    /// Column names, in order.
    pub columns: Vec<String>,
    /// Each row's values as JSON, in column order.
    pub rows: Vec<Vec<Value>>,
    /// Whether rows were left out (the row cap or the size cap).
    pub truncated: bool,
}

/// Steps `statement` to its end or until `max_rows` rows or about
/// `max_bytes` of values are read.
pub fn read_rows(
    session: &Session,
    statement: &mut Statement<'_>,
    max_rows: usize,
    max_bytes: usize,
) -> Result<Rows, String> {
    let columns: Vec<String> = statement
        .column_names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let width = columns.len();
    let mut rows = Vec::new();
    let mut size = 0usize;
    let mut truncated = false;
    let mut cursor = statement.raw_query();
    loop {
        let row = match cursor.next() {
            Ok(Some(row)) => row,
            Ok(None) => break,
            Err(e) => return Err(session.explain(e)),
        };
        if rows.len() >= max_rows || (size >= max_bytes && !rows.is_empty()) {
            truncated = true;
            break;
        }
        let mut values = Vec::with_capacity(width);
        for i in 0..width {
            let value = row.get_ref(i).map_err(|e| session.explain(e))?;
            size += values::approximate_size(value);
            values.push(values::to_json(value));
        }
        rows.push(values);
    }
    Ok(Rows {
        columns,
        rows,
        truncated,
    })
}

/// Runs one statement with parameters, for the writing tools: the rows it
/// returns (`RETURNING`) within the caps, the rows it changed and the last
/// inserted rowid.
pub fn run_statement(
    session: &Session,
    sql: &str,
    params: &[SqlValue],
    max_rows: usize,
    max_bytes: usize,
) -> Result<(Rows, u64, i64), String> {
    let total_before = session.conn().total_changes();
    let mut statement = session.prepare_one(sql)?;
    for (i, value) in params.iter().enumerate() {
        statement
            .raw_bind_parameter(i + 1, value)
            .map_err(|e| session.explain(e))?;
    }
    let rows = read_rows(session, &mut statement, max_rows, max_bytes)?;
    drop(statement);
    Ok((
        rows,
        changes_since(session, total_before),
        session.conn().last_insert_rowid(),
    ))
}

/// The rows the statement just run inserted, updated or deleted, given the
/// connection's total count of changes before it: SQLite's count of the
/// last INSERT, UPDATE or DELETE would otherwise be reported for a
/// statement (CREATE, DROP, SELECT) that changed no row.
pub fn changes_since(session: &Session, total_before: u64) -> u64 {
    if session.conn().total_changes() == total_before {
        0
    } else {
        session.conn().changes()
    }
}
