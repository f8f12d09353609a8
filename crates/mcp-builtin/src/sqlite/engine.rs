//! The connections and what SQLite itself enforces on them: a read-only
//! open, `PRAGMA query_only`, an authorizer refusing ATTACH, DETACH,
//! writing pragmas, transaction control and extension loading, one
//! statement per call, and a time budget (a progress handler that stops a
//! statement once its budget is spent or its caller has gone).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_core::sync::MutexExt as _;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::{Batch, Connection, ErrorCode, OpenFlags, Statement};

/// How many SQLite virtual-machine steps run between two looks at the
/// budget.
const STEPS_BETWEEN_CHECKS: i32 = 1000;

/// Pragmas that only read and take an argument (`PRAGMA table_info(t)`).
const READING_PRAGMAS_WITH_ARGUMENT: &[&str] = &[
    "foreign_key_check",
    "foreign_key_list",
    "index_info",
    "index_list",
    "index_xinfo",
    "integrity_check",
    "quick_check",
    "table_info",
    "table_list",
    "table_xinfo",
];

/// Pragmas that, without an argument, only report a setting or a fact.
const READING_PRAGMAS: &[&str] = &[
    "application_id",
    "auto_vacuum",
    "busy_timeout",
    "cache_size",
    "collation_list",
    "compile_options",
    "data_version",
    "database_list",
    "encoding",
    "foreign_key_check",
    "foreign_keys",
    "freelist_count",
    "function_list",
    "integrity_check",
    "journal_mode",
    "max_page_count",
    "module_list",
    "page_count",
    "page_size",
    "pragma_list",
    "query_only",
    "quick_check",
    "recursive_triggers",
    "schema_version",
    "synchronous",
    "table_list",
    "user_version",
];

/// What a connection is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Opened read-only, `PRAGMA query_only = ON`: the reading tools and
    /// the resources.
    Reader,
    /// Opened read-write (created if missing): the writing tools, only
    /// with `--write`.
    Writer,
}

/// The call running on a connection, as the progress handler sees it.
struct Running {
    deadline: Instant,
    abandoned: Arc<AtomicBool>,
    over_budget: bool,
}

/// State shared between a connection's hooks and the code using it.
#[derive(Default)]
struct Watch {
    running: Mutex<Option<Running>>,
    /// Why the authorizer last refused something, for the error message.
    refusal: Mutex<Option<String>>,
}

/// A connection with its hooks installed.
pub struct Session {
    conn: Connection,
    watch: Arc<Watch>,
    role: Role,
    budget: Duration,
}

impl Session {
    /// Opens `path` for `role`, with every guard in place.
    pub fn open(path: &Path, role: Role, budget: Duration) -> rusqlite::Result<Session> {
        let flags = match role {
            Role::Reader => OpenFlags::SQLITE_OPEN_READ_ONLY,
            Role::Writer => OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
        } | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)?;
        conn.busy_timeout(budget)?;
        match role {
            Role::Reader => conn.pragma_update(None, "query_only", true)?,
            // The foreign keys the schema declares hold for every change.
            Role::Writer => conn.pragma_update(None, "foreign_keys", true)?,
        }
        let watch = Arc::new(Watch::default());
        let refusals = Arc::clone(&watch);
        conn.authorizer(Some(move |context: AuthContext<'_>| {
            match refusal(&context) {
                None => Authorization::Allow,
                Some(why) => {
                    *refusals.refusal.locked() = Some(why);
                    Authorization::Deny
                }
            }
        }));
        let progress = Arc::clone(&watch);
        conn.progress_handler(
            STEPS_BETWEEN_CHECKS,
            Some(move || {
                let mut running = progress.running.locked();
                match running.as_mut() {
                    Some(call) if call.abandoned.load(Ordering::Relaxed) => true,
                    Some(call) if Instant::now() >= call.deadline => {
                        call.over_budget = true;
                        true
                    }
                    _ => false,
                }
            }),
        );
        Ok(Session {
            conn,
            watch,
            role,
            budget,
        })
    }

    /// The connection, for statements of this module's own making.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Compiles `sql`, which must be exactly one statement (comments and
    /// whitespace may follow it).
    pub fn prepare_one<'a>(&'a self, sql: &str) -> Result<Statement<'a>, String> {
        *self.watch.refusal.locked() = None;
        let mut batch = Batch::new(&self.conn, sql);
        let first = match batch.next() {
            Ok(Some(statement)) => statement,
            Ok(None) => return Err("the SQL text holds no statement".into()),
            Err(e) => return Err(self.explain(e)),
        };
        match batch.next() {
            Ok(None) => Ok(first),
            Ok(Some(_)) | Err(_) => Err(
                "only one SQL statement per call: the text goes on after the first statement \
                 (remove the rest, and send each statement in a call of its own)"
                    .into(),
            ),
        }
    }

    /// A readable message for `error`: the authorizer's reason for a
    /// refusal, the budget for an interrupted statement, the server's mode
    /// for a refused write.
    pub fn explain(&self, error: rusqlite::Error) -> String {
        // A denial makes the compilation fail, with SQLITE_AUTH or (for a
        // function) SQLITE_ERROR: the authorizer's reason says more.
        if let Some(why) = self.watch.refusal.locked().take() {
            return why;
        }
        match error.sqlite_error_code() {
            Some(ErrorCode::OperationInterrupted) => {
                let over_budget = self
                    .watch
                    .running
                    .locked()
                    .as_ref()
                    .is_some_and(|r| r.over_budget);
                if over_budget {
                    format!(
                        "the statement ran past its time budget of {} and was stopped; \
                         narrow it (a WHERE clause, a LIMIT, an index) and try again",
                        describe_duration(self.budget)
                    )
                } else {
                    "the statement was stopped: its caller went away".into()
                }
            }
            Some(ErrorCode::ReadOnly) if self.role == Role::Reader => {
                "the database is open read-only here: this statement would change it \
                 (the server must run with --write, and changes go through `execute`)"
                    .into()
            }
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => format!(
                "the database stayed locked by another connection for {}: try again later",
                describe_duration(self.budget)
            ),
            _ => format!("SQLite: {error}"),
        }
    }

    /// Marks the start of a call: its budget starts now.
    pub(super) fn start(&self, abandoned: Arc<AtomicBool>) {
        *self.watch.refusal.locked() = None;
        *self.watch.running.locked() = Some(Running {
            deadline: Instant::now() + self.budget,
            abandoned,
            over_budget: false,
        });
    }

    /// Marks the end of a call.
    pub(super) fn finish(&self) {
        *self.watch.running.locked() = None;
    }
}

fn describe_duration(duration: Duration) -> String {
    if duration.as_millis().is_multiple_of(1000) {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

/// Why the authorizer refuses `context`, if it does.
fn refusal(context: &AuthContext<'_>) -> Option<String> {
    match context.action {
        AuthAction::Attach { .. } => Some(
            "ATTACH is refused: this server serves one database file and opens no other".into(),
        ),
        AuthAction::Detach { .. } => Some("DETACH is refused: nothing is attached".into()),
        AuthAction::Function { function_name }
            if function_name.eq_ignore_ascii_case("load_extension") =>
        {
            Some("load_extension is refused: this server loads no SQLite extensions".into())
        }
        AuthAction::Pragma {
            pragma_name,
            pragma_value,
        } => pragma_refusal(pragma_name, pragma_value),
        AuthAction::Transaction { .. } | AuthAction::Savepoint { .. } => Some(
            "transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT) is refused: \
             each call runs as one statement in a transaction of its own"
                .into(),
        ),
        _ => None,
    }
}

fn pragma_refusal(name: &str, value: Option<&str>) -> Option<String> {
    let name = name.to_ascii_lowercase();
    let allowed = match value {
        None => READING_PRAGMAS.contains(&name.as_str()),
        Some(_) => READING_PRAGMAS_WITH_ARGUMENT.contains(&name.as_str()),
    };
    (!allowed).then(|| match value {
        Some(_) if READING_PRAGMAS.contains(&name.as_str()) => format!(
            "PRAGMA {name} = ... is refused: it changes a setting; read it with PRAGMA {name}"
        ),
        _ => format!(
            "PRAGMA {name} is refused: only pragmas that read are allowed ({})",
            READING_PRAGMAS.join(", ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pragmas_that_read_pass_and_pragmas_that_write_do_not() {
        assert_eq!(pragma_refusal("table_info", Some("users")), None);
        assert_eq!(pragma_refusal("user_version", None), None);
        let refused = pragma_refusal("user_version", Some("5")).unwrap();
        assert!(refused.contains("changes a setting"), "{refused}");
        assert!(pragma_refusal("writable_schema", Some("1")).is_some());
        assert!(pragma_refusal("optimize", None).is_some());
        assert!(pragma_refusal("wal_checkpoint", None).is_some());
    }
}
