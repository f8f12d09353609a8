//! What the database holds: its tables and views, each table's columns,
//! keys and indexes, read with parameters bound (never a name pasted into
//! SQL), and the SQL this module builds from names it has checked against
//! that schema.

use rusqlite::OptionalExtension;
use rusqlite::types::Value as SqlValue;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::engine::Session;
use super::values;

/// A table or view, as `list_tables` lists it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TableSummary {
    /// The table's name.
    pub name: String,
    /// `table`, `view` or `virtual`.
    #[serde(rename = "type")]
    pub kind: String,
    /// How many columns it has.
    pub columns: i64,
    /// Whether it is a `WITHOUT ROWID` table.
    pub without_rowid: bool,
    /// Whether it is a `STRICT` table.
    pub strict: bool,
}

impl TableSummary {
    /// A row of `pragma_table_list` selected as `name, type, ncol, wr,
    /// strict`.
    fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(TableSummary {
            name: row.get(0)?,
            kind: row.get(1)?,
            columns: row.get(2)?,
            without_rowid: row.get(3)?,
            strict: row.get(4)?,
        })
    }
}

/// A column of a table.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Column {
    /// The column's name.
    pub name: String,
    /// The declared type, as written (may be empty).
    #[serde(rename = "type")]
    pub declared_type: String,
    /// Whether it is `NOT NULL`.
    pub not_null: bool,
    /// The default value's SQL text, if any.
    pub default: Option<String>,
    /// Its position in the primary key (1-based), if it is part of it.
    pub primary_key: Option<i64>,
    /// Whether it is generated (`GENERATED ALWAYS AS`), hence not written.
    pub generated: bool,
}

/// A foreign key of a table.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ForeignKey {
    /// The columns of this table.
    pub columns: Vec<String>,
    /// The table referred to.
    pub references: String,
    /// The columns referred to (empty: that table's primary key).
    pub referenced_columns: Vec<String>,
    /// The `ON UPDATE` action.
    pub on_update: String,
    /// The `ON DELETE` action.
    pub on_delete: String,
}

/// An index of a table.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Index {
    /// The index's name.
    pub name: String,
    /// Whether it is unique.
    pub unique: bool,
    /// How it came to be: `c` (CREATE INDEX), `u` (UNIQUE) or `pk`
    /// (PRIMARY KEY).
    pub origin: String,
    /// Whether it is partial (has a WHERE clause).
    pub partial: bool,
    /// The indexed columns, in order (`<expression>` for an expression).
    pub columns: Vec<String>,
}

/// Everything about one table or view.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TableSchema {
    /// The table's name.
    pub name: String,
    /// `table`, `view` or `virtual`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The `CREATE` statement.
    pub sql: Option<String>,
    /// Whether it is a `WITHOUT ROWID` table.
    pub without_rowid: bool,
    /// Whether it is a `STRICT` table.
    pub strict: bool,
    /// The columns, in order.
    pub columns: Vec<Column>,
    /// The primary key's columns, in key order (empty: none declared).
    pub primary_key: Vec<String>,
    /// How one row is named in a `sqlite:///{table}/{key}` URI.
    pub row_key: String,
    /// The foreign keys.
    pub foreign_keys: Vec<ForeignKey>,
    /// The indexes.
    pub indexes: Vec<Index>,
}

/// `name` quoted as an SQL identifier. Only for names read from the
/// schema.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The tables and views of the main database, without SQLite's own.
pub fn list_tables(session: &Session) -> rusqlite::Result<Vec<TableSummary>> {
    let mut statement = session.conn().prepare(
        "SELECT name, type, ncol, wr, strict FROM pragma_table_list \
         WHERE schema = 'main' AND type IN ('table', 'view', 'virtual') \
         AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
    )?;
    let rows = statement.query_map([], TableSummary::from_row)?;
    rows.collect()
}

/// The names of the tables (not views) of the main database.
pub fn table_names(session: &Session) -> rusqlite::Result<Vec<String>> {
    Ok(list_tables(session)?
        .into_iter()
        .filter(|t| t.kind != "view")
        .map(|t| t.name)
        .collect())
}

/// Everything about table or view `name` (matched as SQLite matches
/// names, ignoring ASCII case), or `None` if there is none.
pub fn describe(session: &Session, name: &str) -> rusqlite::Result<Option<TableSchema>> {
    let conn = session.conn();
    let Some(summary) = conn
        .query_row(
            "SELECT name, type, ncol, wr, strict FROM pragma_table_list \
             WHERE schema = 'main' AND name = ?1 COLLATE NOCASE",
            [name],
            TableSummary::from_row,
        )
        .optional()?
    else {
        return Ok(None);
    };
    let name = summary.name.as_str();
    let sql: Option<String> = conn
        .query_row(
            "SELECT sql FROM sqlite_schema WHERE name = ?1 AND type IN ('table', 'view')",
            [name],
            |row| row.get(0),
        )
        .optional()?
        .flatten();
    let mut statement = conn.prepare(
        "SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(?1) \
         WHERE hidden IN (0, 2, 3) ORDER BY cid",
    )?;
    let columns: Vec<Column> = statement
        .query_map([name], |row| {
            let pk: i64 = row.get(4)?;
            let hidden: i64 = row.get(5)?;
            Ok(Column {
                name: row.get(0)?,
                declared_type: row.get(1)?,
                not_null: row.get(2)?,
                default: row.get(3)?,
                primary_key: (pk > 0).then_some(pk),
                generated: hidden != 0,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut keyed: Vec<&Column> = columns.iter().filter(|c| c.primary_key.is_some()).collect();
    keyed.sort_by_key(|c| c.primary_key);
    let primary_key: Vec<String> = keyed.iter().map(|c| c.name.clone()).collect();
    let foreign_keys = foreign_keys(session, name)?;
    let indexes = indexes(session, name)?;
    let mut schema = TableSchema {
        name: summary.name.clone(),
        kind: summary.kind,
        sql,
        without_rowid: summary.without_rowid,
        strict: summary.strict,
        columns,
        primary_key,
        row_key: String::new(),
        foreign_keys,
        indexes,
    };
    schema.row_key = match RowKey::of(&schema) {
        Some(RowKey::Rowid(_)) => "the rowid (an integer)".into(),
        Some(RowKey::Columns(columns)) if columns.len() == 1 => {
            format!("the value of {}", columns[0])
        }
        Some(RowKey::Columns(columns)) => format!(
            "a JSON array of the values of {}, in that order",
            columns.join(", ")
        ),
        None => "none: a view's rows have no key".into(),
    };
    Ok(Some(schema))
}

fn foreign_keys(session: &Session, table: &str) -> rusqlite::Result<Vec<ForeignKey>> {
    let mut statement = session.conn().prepare(
        "SELECT id, \"table\", \"from\", \"to\", on_update, on_delete \
         FROM pragma_foreign_key_list(?1) ORDER BY id, seq",
    )?;
    let mut keys: Vec<(i64, ForeignKey)> = Vec::new();
    let mut rows = statement.query([table])?;
    while let Some(row) = rows.next()? {
        let id: i64 = row.get(0)?;
        let from: String = row.get(2)?;
        let to: Option<String> = row.get(3)?;
        if keys.last().is_none_or(|(last, _)| *last != id) {
            keys.push((
                id,
                ForeignKey {
                    columns: Vec::new(),
                    references: row.get(1)?,
                    referenced_columns: Vec::new(),
                    on_update: row.get(4)?,
                    on_delete: row.get(5)?,
                },
            ));
        }
        if let Some((_, key)) = keys.last_mut() {
            key.columns.push(from);
            key.referenced_columns.extend(to);
        }
    }
    Ok(keys.into_iter().map(|(_, key)| key).collect())
}

fn indexes(session: &Session, table: &str) -> rusqlite::Result<Vec<Index>> {
    let conn = session.conn();
    let mut statement = conn.prepare(
        "SELECT name, \"unique\", origin, partial FROM pragma_index_list(?1) ORDER BY seq",
    )?;
    let listed: Vec<(String, bool, String, bool)> = statement
        .query_map([table], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut columns_of = conn.prepare(
        "SELECT coalesce(name, '<expression>') FROM pragma_index_info(?1) ORDER BY seqno",
    )?;
    listed
        .into_iter()
        .map(|(name, unique, origin, partial)| {
            let columns = columns_of
                .query_map([&name], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            Ok(Index {
                name,
                unique,
                origin,
                partial,
                columns,
            })
        })
        .collect()
}

/// How the rows of a table are named.
#[derive(Debug, Clone, PartialEq)]
pub enum RowKey {
    /// By rowid (no primary key declared): the name to use for it, one of
    /// `rowid`, `_rowid_`, `oid` that no column shadows.
    Rowid(String),
    /// By the primary key's columns, in key order.
    Columns(Vec<String>),
}

impl RowKey {
    /// The key of `table`'s rows; `None` for a view, or a rowid table
    /// whose columns shadow every name of the rowid.
    pub fn of(table: &TableSchema) -> Option<RowKey> {
        if table.kind == "view" {
            return None;
        }
        if !table.primary_key.is_empty() {
            return Some(RowKey::Columns(table.primary_key.clone()));
        }
        if table.without_rowid {
            return None;
        }
        ["rowid", "_rowid_", "oid"]
            .into_iter()
            .find(|alias| {
                !table
                    .columns
                    .iter()
                    .any(|c| c.name.eq_ignore_ascii_case(alias))
            })
            .map(|alias| RowKey::Rowid(alias.to_owned()))
    }

    /// The key's columns (the rowid's name for a rowid table).
    pub fn columns(&self) -> Vec<String> {
        match self {
            RowKey::Rowid(alias) => vec![alias.clone()],
            RowKey::Columns(columns) => columns.clone(),
        }
    }

    /// The key values named by the `{key}` of a row's URI: the value itself
    /// for a one-column key (an integer for a rowid), a JSON array for a
    /// composite key.
    pub fn parse_uri_key(&self, text: &str) -> Result<Vec<SqlValue>, String> {
        match self {
            RowKey::Rowid(_) => text
                .parse::<i64>()
                .map(|rowid| vec![SqlValue::Integer(rowid)])
                .map_err(|_| format!("{text:?} is not a rowid (an integer)")),
            RowKey::Columns(columns) if columns.len() == 1 => {
                Ok(vec![SqlValue::Text(text.to_owned())])
            }
            RowKey::Columns(columns) => {
                let parsed: Value = serde_json::from_str(text).map_err(|_| {
                    format!(
                        "the key of this table is a JSON array of {} values ({}), not {text:?}",
                        columns.len(),
                        columns.join(", ")
                    )
                })?;
                self.parse_tool_key(&parsed)
            }
        }
    }

    /// The key values given to a tool: a scalar for a one-column key, an
    /// array in key order, or an object naming every key column.
    pub fn parse_tool_key(&self, key: &Value) -> Result<Vec<SqlValue>, String> {
        let columns = self.columns();
        let listed: Vec<&Value> = match key {
            Value::Array(items) => items.iter().collect(),
            Value::Object(named) => {
                if let Some(extra) = named.keys().find(|k| !columns.contains(k)) {
                    return Err(format!(
                        "`key` names {extra}, which is not a key column (the key is {})",
                        columns.join(", ")
                    ));
                }
                columns
                    .iter()
                    .map(|c| {
                        named
                            .get(c)
                            .ok_or_else(|| format!("`key` does not give the key column {c}"))
                    })
                    .collect::<Result<_, _>>()?
            }
            scalar => vec![scalar],
        };
        if listed.len() != columns.len() {
            return Err(format!(
                "the key of this table has {} column(s) ({}), and `key` gives {} value(s)",
                columns.len(),
                columns.join(", "),
                listed.len()
            ));
        }
        listed
            .iter()
            .zip(&columns)
            .map(|(value, column)| values::from_json(value, &format!("key.{column}")))
            .collect()
    }

    /// The `{key}` of a row's URI for these key values.
    pub fn uri_key(&self, key: &[SqlValue]) -> String {
        match key {
            [one] => values::key_text(one),
            many => Value::Array(many.iter().map(values::owned_to_json).collect()).to_string(),
        }
    }

    /// `"a" = ?1 AND "b" = ?2`, numbering parameters from `first`.
    pub fn where_clause(&self, first: usize) -> String {
        self.columns()
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{} = ?{}", quote(c), first + i))
            .collect::<Vec<_>>()
            .join(" AND ")
    }
}

/// The row of `table` with key `key`, as a JSON object, or `None`.
pub fn read_row(
    session: &Session,
    table: &TableSchema,
    key: &RowKey,
    values: &[SqlValue],
) -> Result<Option<Map<String, Value>>, String> {
    let sql = format!(
        "SELECT * FROM main.{} WHERE {}",
        quote(&table.name),
        key.where_clause(1)
    );
    let mut statement = session.prepare_one(&sql)?;
    for (i, value) in values.iter().enumerate() {
        statement
            .raw_bind_parameter(i + 1, value)
            .map_err(|e| session.explain(e))?;
    }
    let rows = super::statements::read_rows(session, &mut statement, 1, usize::MAX)?;
    Ok(rows.rows.into_iter().next().map(|row| {
        rows.columns
            .iter()
            .cloned()
            .zip(row)
            .collect::<Map<String, Value>>()
    }))
}
