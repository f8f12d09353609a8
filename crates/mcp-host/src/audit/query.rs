//! Reading the audit log back: the records that match a filter, oldest
//! first, for `mcp audit` (and `--follow`, by the id of the last one
//! read).

use std::path::Path;

use rusqlite::{Connection, OpenFlags, params_from_iter, types::Value as Sql};
use serde::Serialize;

/// Which records to read.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct AuditQuery {
    /// Made at or after this time (milliseconds since the Unix epoch).
    pub since_ms: Option<i64>,
    /// Made before this time.
    pub until_ms: Option<i64>,
    /// Whose caller contains this text.
    pub caller: Option<String>,
    /// Sent to this server (its config name).
    pub server: Option<String>,
    /// About this tool, prompt or resource (as the client named it).
    pub target: Option<String>,
    /// Of this JSON-RPC method.
    pub method: Option<String>,
    /// Decided so by the policy (`allow`, `ask`, `deny`).
    pub decision: Option<String>,
    /// Ended so (`ok`, `tool_error`, `error`, `cancelled`).
    pub outcome: Option<String>,
    /// After the record with this id.
    pub after_id: Option<i64>,
    /// The request of this id and those that continued its
    /// `input_required` rounds.
    pub conversation: Option<i64>,
    /// At most this many: the newest of those that match.
    pub limit: usize,
}

/// One record as read back.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AuditRow {
    /// Its id: larger for later records.
    pub id: i64,
    /// When the request arrived, RFC 3339 in UTC.
    pub time: String,
    /// Milliseconds it took.
    pub duration_ms: f64,
    /// The JSON-RPC method.
    pub method: String,
    /// The tool, prompt or resource as the client named it.
    pub target: Option<String>,
    /// The server it went to.
    pub server: Option<String>,
    /// The authenticated caller.
    pub caller: Option<String>,
    /// The client's name and version.
    pub client: Option<String>,
    /// The revision.
    pub revision: String,
    /// How it ended.
    pub outcome: String,
    /// The JSON-RPC error's code and message, for `error`.
    pub error_code: Option<i64>,
    /// See `error_code`.
    pub error_message: Option<String>,
    /// What the policy decided, and by which rule.
    pub decision: Option<String>,
    /// See `decision`.
    pub rule: Option<String>,
    /// How an `ask` was settled.
    pub answer: Option<String>,
    /// What its definition holds aimed at the model.
    pub flags: Option<String>,
    /// For a 2026-07-28 request that continues `input_required` rounds:
    /// the id of the conversation's first request.
    pub conversation: Option<i64>,
}

/// The records of the audit file at `path` that `query` matches, oldest
/// first. The file is opened read-only: a host may be writing it.
pub fn query(path: &Path, query: &AuditQuery) -> Result<Vec<AuditRow>, String> {
    let failed = |e: rusqlite::Error| format!("{}: {e}", path.display());
    let connection = read_only(path)?;
    let mut conditions = Vec::new();
    let mut values: Vec<Sql> = Vec::new();
    let mut when = |condition: &str, value: Sql| {
        conditions.push(condition.to_owned());
        values.push(value);
    };
    if let Some(since) = query.since_ms {
        when("time_ms >= ?", Sql::Integer(since));
    }
    if let Some(until) = query.until_ms {
        when("time_ms < ?", Sql::Integer(until));
    }
    if let Some(after) = query.after_id {
        when("id > ?", Sql::Integer(after));
    }
    if let Some(conversation) = query.conversation {
        when("? IN (id, conversation)", Sql::Integer(conversation));
    }
    if let Some(caller) = &query.caller {
        when("instr(caller, ?) > 0", Sql::Text(caller.clone()));
    }
    for (column, value) in [
        ("server", &query.server),
        ("target", &query.target),
        ("method", &query.method),
        ("decision", &query.decision),
        ("outcome", &query.outcome),
    ] {
        if let Some(value) = value {
            when(&format!("{column} = ?"), Sql::Text(value.clone()));
        }
    }
    let filter = if conditions.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", conditions.join(" AND "))
    };
    // A file an older host wrote lacks the later columns until a host
    // opens it for writing: they read as empty.
    let mut present = Vec::new();
    let mut columns = connection
        .prepare("SELECT name FROM pragma_table_info('audit')")
        .map_err(failed)?;
    for name in columns
        .query_map([], |row| row.get::<_, String>(0))
        .map_err(failed)?
    {
        present.push(name.map_err(failed)?);
    }
    let later: Vec<&str> = ["decision", "rule", "answer", "flags", "conversation"]
        .into_iter()
        .map(|c| {
            if present.iter().any(|p| p == c) {
                c
            } else {
                "NULL"
            }
        })
        .collect();
    let later = later.join(", ");
    let limit = if query.limit == 0 {
        -1
    } else {
        query.limit as i64
    };
    // The newest that match, then put oldest first.
    let sql = format!(
        "SELECT * FROM (SELECT id, strftime('%Y-%m-%dT%H:%M:%fZ', time_ms / 1000.0, 'unixepoch'), \
         duration_ms, method, target, server, caller, client, revision, outcome, error_code, \
         error_message, {later} FROM audit {filter} \
         ORDER BY id DESC LIMIT {limit}) ORDER BY 1"
    );
    let mut select = connection.prepare(&sql).map_err(failed)?;
    let rows = select
        .query_map(params_from_iter(values), |r| {
            Ok(AuditRow {
                id: r.get(0)?,
                time: r.get(1)?,
                duration_ms: r.get(2)?,
                method: r.get(3)?,
                target: r.get(4)?,
                server: r.get(5)?,
                caller: r.get(6)?,
                client: r.get(7)?,
                revision: r.get(8)?,
                outcome: r.get(9)?,
                error_code: r.get(10)?,
                error_message: r.get(11)?,
                decision: r.get(12)?,
                rule: r.get(13)?,
                answer: r.get(14)?,
                flags: r.get(15)?,
                conversation: r.get(16)?,
            })
        })
        .map_err(failed)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(failed)
}

/// What one server answered in one slot of time.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Slot {
    /// Requests.
    pub requests: u64,
    /// Of them, those that ended in a JSON-RPC error (refusals included).
    pub errors: u64,
    /// Their mean time, in milliseconds.
    pub mean_ms: f64,
}

/// The requests each server answered in the `slots` slots of `slot_ms`
/// that end at `until_ms`, oldest first, from the audit file at `path`:
/// by server name, in name order.
pub fn activity(
    path: &Path,
    until_ms: i64,
    slot_ms: i64,
    slots: usize,
) -> Result<Vec<(String, Vec<Slot>)>, String> {
    let failed = |e: rusqlite::Error| format!("{}: {e}", path.display());
    let connection = read_only(path)?;
    let slot_ms = slot_ms.max(1);
    let since = until_ms - slot_ms * slots as i64;
    let mut select = connection
        .prepare(
            "SELECT server, (time_ms - ?1) / ?2 AS slot, COUNT(*), \
             SUM(outcome = 'error'), AVG(duration_ms) FROM audit \
             WHERE time_ms >= ?1 AND time_ms < ?3 AND server IS NOT NULL \
             GROUP BY server, slot ORDER BY server, slot",
        )
        .map_err(failed)?;
    let rows = select
        .query_map(rusqlite::params![since, slot_ms, until_ms], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, Option<i64>>(3)?,
                row.get::<_, Option<f64>>(4)?,
            ))
        })
        .map_err(failed)?;
    let mut servers: Vec<(String, Vec<Slot>)> = Vec::new();
    for row in rows {
        let (server, slot, requests, errors, mean) = row.map_err(failed)?;
        if servers.last().is_none_or(|(name, _)| *name != server) {
            servers.push((server, vec![Slot::default(); slots]));
        }
        let Some((_, series)) = servers.last_mut() else {
            continue;
        };
        if let Some(at) = usize::try_from(slot).ok().filter(|at| *at < slots) {
            series[at] = Slot {
                requests: requests.max(0) as u64,
                errors: errors.unwrap_or(0).max(0) as u64,
                mean_ms: mean.unwrap_or(0.0),
            };
        }
    }
    Ok(servers)
}

/// The audit file at `path`, opened read-only (a host may be writing it),
/// waiting a while for a writer's lock.
fn read_only(path: &Path) -> Result<Connection, String> {
    let failed = |e: rusqlite::Error| format!("{}: {e}", path.display());
    let connection =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(failed)?;
    connection
        .busy_timeout(std::time::Duration::from_secs(5))
        .map_err(failed)?;
    Ok(connection)
}
