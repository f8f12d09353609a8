//! The audit log's writer thread: takes records from the queue, writes
//! them in batches (one transaction each), keeps them while the file
//! fails, and trims the file to its most records.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension as _, params};

use super::{AuditRecord, AuditSettings, Counters, Message, now_ms};
use mcp_core::sync::MutexExt as _;

/// How long the writer waits before trying a failing file again.
const RETRY: Duration = Duration::from_secs(1);

/// How long the writer lets records gather before it writes them.
const LINGER: Duration = Duration::from_millis(20);

/// How many records go into one transaction, at most.
const BATCH: usize = 512;

/// How many records are written between two trims of the file.
const TRIM_EVERY: u64 = 1024;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS audit (
    id              INTEGER PRIMARY KEY,
    time_ms         INTEGER NOT NULL,
    duration_ms     REAL NOT NULL,
    method          TEXT NOT NULL,
    target          TEXT,
    server          TEXT,
    caller          TEXT,
    client          TEXT,
    session         TEXT,
    revision        TEXT NOT NULL,
    outcome         TEXT NOT NULL,
    error_code      INTEGER,
    error_message   TEXT,
    arguments       TEXT,
    arguments_bytes INTEGER,
    decision        TEXT,
    rule            TEXT,
    flags           TEXT,
    answer          TEXT
);
CREATE INDEX IF NOT EXISTS audit_time ON audit (time_ms);
";

/// The columns added since the first version of the table, added in place
/// to a file that lacks them.
const ADDED_COLUMNS: [(&str, &str); 7] = [
    ("decision", "TEXT"),
    ("rule", "TEXT"),
    ("flags", "TEXT"),
    ("answer", "TEXT"),
    ("answers_round", "TEXT"),
    ("asks_round", "TEXT"),
    ("conversation", "INTEGER"),
];

/// The rounds' index: a retry finds the request that asked for it.
const ROUNDS_INDEX: &str = "CREATE INDEX IF NOT EXISTS audit_asks_round ON audit (asks_round) \
    WHERE asks_round IS NOT NULL";

const INSERT: &str = "INSERT INTO audit (time_ms, duration_ms, method, target, server, caller, \
    client, session, revision, outcome, error_code, error_message, arguments, arguments_bytes, \
    decision, rule, flags, answer, answers_round, asks_round, conversation) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, \
    ?19, ?20, ?21)";

/// The conversation a retry belongs to: the first request of the rounds
/// whose last one asked for it.
const CONVERSATION: &str = "SELECT COALESCE(conversation, id) FROM audit WHERE asks_round = ?1 \
    ORDER BY id DESC LIMIT 1";

/// Opens the file, in write-ahead-log mode, with its table.
pub(super) fn open(path: &Path) -> rusqlite::Result<Connection> {
    let connection = Connection::open(path)?;
    connection.busy_timeout(Duration::from_secs(5))?;
    connection.pragma_update(None, "journal_mode", "WAL")?;
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    connection.execute_batch(SCHEMA)?;
    migrate(&connection)?;
    Ok(connection)
}

/// Adds the columns a file written by an older host lacks.
fn migrate(connection: &Connection) -> rusqlite::Result<()> {
    let mut present = Vec::new();
    let mut columns = connection.prepare("SELECT name FROM pragma_table_info('audit')")?;
    for name in columns.query_map([], |row| row.get::<_, String>(0))? {
        present.push(name?);
    }
    for (column, kind) in ADDED_COLUMNS {
        if !present.iter().any(|p| p == column) {
            connection.execute_batch(&format!("ALTER TABLE audit ADD COLUMN {column} {kind}"))?;
        }
    }
    connection.execute_batch(ROUNDS_INDEX)
}

/// The writer thread's state.
pub(super) struct Writer {
    connection: Connection,
    settings: Arc<AuditSettings>,
    counters: Arc<Counters>,
    /// Records not written yet, oldest first (the sender bounds them).
    backlog: VecDeque<AuditRecord>,
    /// While failing: when to try again.
    retry_at: Option<Instant>,
    since_trim: u64,
}

impl Writer {
    pub(super) fn new(
        connection: Connection,
        settings: Arc<AuditSettings>,
        counters: Arc<Counters>,
    ) -> Writer {
        Writer {
            connection,
            settings,
            counters,
            backlog: VecDeque::new(),
            retry_at: None,
            since_trim: 0,
        }
    }

    /// Runs until every sender is gone, then writes what it holds (once
    /// more) and ends.
    pub(super) fn run(mut self, receiver: Receiver<Message>) {
        let mut flushes = Vec::new();
        loop {
            let first = match self.retry_at {
                None => receiver.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(at) => receiver.recv_timeout(at.saturating_duration_since(Instant::now())),
            };
            let open = match first {
                Ok(message) => {
                    self.take(message, &mut flushes);
                    true
                }
                Err(RecvTimeoutError::Timeout) => true,
                Err(RecvTimeoutError::Disconnected) => false,
            };
            // Under load, records come one by one: a moment's wait lets
            // them gather into one transaction, where a commit each (and
            // a wake-up each) would cost more than the requests.
            if open && flushes.is_empty() && self.retry_at.is_none() {
                std::thread::sleep(LINGER);
            }
            // Take what waits (the sender bounds it).
            while let Ok(message) = receiver.try_recv() {
                self.take(message, &mut flushes);
            }
            let due = self.retry_at.is_none_or(|at| Instant::now() >= at);
            if due || !flushes.is_empty() || !open {
                self.write_backlog();
            }
            for flush in flushes.drain(..) {
                let _ = flush.send(());
            }
            if !open {
                return;
            }
        }
    }

    fn take(&mut self, message: Message, flushes: &mut Vec<tokio::sync::oneshot::Sender<()>>) {
        match message {
            Message::Record(record) => self.backlog.push_back(record),
            Message::Flush(done) => flushes.push(done),
            #[cfg(test)]
            Message::Run(run) => run(&self.connection),
        }
    }

    /// Writes the backlog, batch by batch, until it is empty or a write
    /// fails (then the file is tried again after [`RETRY`]).
    fn write_backlog(&mut self) {
        while !self.backlog.is_empty() {
            let count = self.backlog.len().min(BATCH);
            match self.insert(count) {
                Ok(()) => {
                    let bytes: usize = self.backlog.drain(..count).map(|r| r.size()).sum();
                    let count = count as u64;
                    let counters = &self.counters;
                    counters.written.fetch_add(count, Ordering::Relaxed);
                    counters.pending.fetch_sub(count, Ordering::Relaxed);
                    counters
                        .pending_bytes
                        .fetch_sub(bytes as u64, Ordering::Relaxed);
                    self.recovered();
                    self.since_trim += count;
                    if self.since_trim >= TRIM_EVERY {
                        self.since_trim = 0;
                        self.trim();
                    }
                }
                Err(error) => {
                    self.failed(error);
                    return;
                }
            }
        }
    }

    /// Inserts the first `count` records of the backlog in one
    /// transaction.
    fn insert(&mut self, count: usize) -> rusqlite::Result<()> {
        let transaction = self.connection.transaction()?;
        {
            let mut insert = transaction.prepare_cached(INSERT)?;
            let mut conversation_of = transaction.prepare_cached(CONVERSATION)?;
            for r in self.backlog.iter().take(count) {
                let conversation: Option<i64> = match &r.answers_round {
                    Some(digest) => conversation_of
                        .query_row([digest], |row| row.get(0))
                        .optional()?,
                    None => None,
                };
                insert.execute(params![
                    r.time_ms,
                    r.duration_ms,
                    r.method,
                    r.target,
                    r.server,
                    r.caller,
                    r.client,
                    r.session,
                    r.revision,
                    r.outcome,
                    r.error_code,
                    r.error_message,
                    r.arguments,
                    r.arguments_bytes,
                    r.decision,
                    r.rule,
                    r.flags,
                    r.answer,
                    r.answers_round,
                    r.asks_round,
                    conversation,
                ])?;
            }
        }
        transaction.commit()
    }

    fn failed(&mut self, error: rusqlite::Error) {
        let mut failing = self.counters.failing.locked();
        let message = error.to_string();
        match failing.as_mut() {
            Some((last, _)) => *last = message,
            None => {
                tracing::error!(
                    "audit log {}: {message}; records wait in memory (at most {}) and the file is tried again every {:?}",
                    self.settings.path.display(),
                    self.settings.backlog,
                    RETRY
                );
                *failing = Some((message, now_ms()));
            }
        }
        self.retry_at = Some(Instant::now() + RETRY);
    }

    fn recovered(&mut self) {
        self.retry_at = None;
        let mut failing = self.counters.failing.locked();
        if let Some((error, since)) = failing.take() {
            tracing::warn!(
                "audit log {}: written again after failing for {} ms ({error}); {} records lost meanwhile",
                self.settings.path.display(),
                now_ms() - since,
                self.counters.lost.load(Ordering::Relaxed)
            );
        }
    }

    /// Deletes the oldest records beyond the most the file keeps, and
    /// those older than it keeps.
    pub(super) fn trim(&mut self) {
        let keep = i64::try_from(self.settings.max_records).unwrap_or(i64::MAX);
        let oldest = self.settings.max_age.map_or(i64::MIN, |age| {
            now_ms().saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX))
        });
        let trimmed = self
            .connection
            .execute(
                "DELETE FROM audit WHERE id <= (SELECT MAX(id) FROM audit) - ?1",
                params![keep],
            )
            .and_then(|_| {
                self.connection
                    .execute("DELETE FROM audit WHERE time_ms < ?1", params![oldest])
            });
        if let Err(error) = trimmed {
            tracing::warn!(
                "audit log {}: old records not trimmed: {error}",
                self.settings.path.display()
            );
        }
    }
}
