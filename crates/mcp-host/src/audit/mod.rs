//! The audit log: one record per request the gateway answers (who asked,
//! what, which server answered, how it ended, how long it took), kept in
//! an SQLite file.
//!
//! Records are written by a thread of their own, in batches, so a request
//! never waits on the disk. When the file cannot be written (the disk is
//! full, the file was removed, an I/O error), the host keeps serving: the
//! records wait in memory, up to a bound, and are written once the file
//! can be written again; what did not fit is counted as lost. The state
//! (`ok` or `failing`, with the error) is in the host's status.
//!
//! ```sql
//! SELECT datetime(time_ms / 1000, 'unixepoch'), caller, method, target, server, outcome,
//!        decision, rule
//!   FROM audit ORDER BY id DESC LIMIT 20;
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

mod query;
mod writer;

use mcp_core::sync::MutexExt as _;
pub use query::{AuditQuery, AuditRow, Slot, activity, query};

/// How the audit log is kept.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AuditSettings {
    /// The SQLite file (created with its table if missing).
    pub path: PathBuf,
    /// Whether a call's arguments are recorded too (at most
    /// [`AuditSettings::max_argument_bytes`] of them).
    pub arguments: bool,
    /// How many bytes of a call's arguments are kept, when they are.
    pub max_argument_bytes: usize,
    /// The most records the file keeps; older ones are deleted.
    pub max_records: u64,
    /// How long the file keeps a record, if not for ever (the file is
    /// trimmed at start and every 1,024 records).
    pub max_age: Option<Duration>,
    /// How many records wait in memory, at most, while the file cannot be
    /// written (or cannot keep up); beyond that new records are lost (and
    /// counted). They also hold 16 MiB at most.
    pub backlog: usize,
}

impl AuditSettings {
    /// Records into the SQLite file at `path`, without arguments, keeping
    /// the last million records.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        AuditSettings {
            path: path.into(),
            arguments: false,
            max_argument_bytes: 16 * 1024,
            max_records: 1_000_000,
            max_age: None,
            backlog: 10_000,
        }
    }
}

/// One request, as it is recorded.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct AuditRecord {
    /// When the request arrived, in milliseconds since the Unix epoch.
    pub time_ms: i64,
    /// How long it took to answer, in milliseconds.
    pub duration_ms: f64,
    /// The JSON-RPC method.
    pub method: String,
    /// The tool's or prompt's name or the resource's URI, as the client
    /// named it.
    pub target: Option<String>,
    /// The upstream server (its config name) that the request went to.
    pub server: Option<String>,
    /// Who asked: the authenticated principal (issuer, subject, client),
    /// when the endpoint authenticates.
    pub caller: Option<String>,
    /// The client's name and version, as it said in its handshake.
    pub client: Option<String>,
    /// The legacy session the request came in, when it has a name.
    pub session: Option<String>,
    /// The protocol revision of the request.
    pub revision: String,
    /// `ok`, `tool_error` (a tool's result with `isError`), `error` (a
    /// JSON-RPC error) or `cancelled` (the client cancelled or left).
    pub outcome: &'static str,
    /// The JSON-RPC error's code, for `error`.
    pub error_code: Option<i64>,
    /// The JSON-RPC error's message, for `error`.
    pub error_message: Option<String>,
    /// The call's arguments as JSON text, when they are recorded
    /// (truncated to the configured length).
    pub arguments: Option<String>,
    /// The arguments' whole length in bytes, when they are recorded.
    pub arguments_bytes: Option<i64>,
    /// What the policy decided (`allow`, `ask`, `deny`), where a policy
    /// is set.
    pub decision: Option<&'static str>,
    /// The rule that decided (its name), or `the default`.
    pub rule: Option<String>,
    /// For `ask`: how it was settled (`granted` by an earlier grant,
    /// `allowed-once`, `allowed-session`, `allowed-always`, `denied`,
    /// `timeout`, `unreachable`, or `asked` for a round sent to the
    /// client).
    pub answer: Option<&'static str>,
    /// What the target's definition holds that is aimed at the model
    /// (`hidden-tags`, `bidi`, `zero-width`, `injection`), comma-separated.
    pub flags: Option<String>,
    /// For a 2026-07-28 request that continues an `input_required` round:
    /// a digest of the `requestState` it brought back.
    pub answers_round: Option<String>,
    /// For a 2026-07-28 request answered with an `input_required` round:
    /// a digest of the `requestState` its retry is to bring back.
    pub asks_round: Option<String>,
}

/// A short digest of a round's `requestState`: it links a retry to the
/// request that asked for it without keeping the state (which may be
/// large, or hold what the server keeps to itself).
pub(crate) fn round_digest(request_state: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(request_state.as_bytes());
    digest[..12].iter().map(|b| format!("{b:02x}")).collect()
}

impl AuditRecord {
    /// About how much memory the record holds, for the backlog's bound.
    pub(crate) fn size(&self) -> usize {
        let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        std::mem::size_of::<Self>()
            + self.method.len()
            + self.revision.len()
            + text(&self.target)
            + text(&self.server)
            + text(&self.caller)
            + text(&self.client)
            + text(&self.session)
            + text(&self.error_message)
            + text(&self.arguments)
            + text(&self.rule)
            + text(&self.flags)
    }
}

/// The audit log's state, for the host's status.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AuditStatus {
    /// The SQLite file.
    pub path: String,
    /// `ok`, or `failing` while records cannot be written.
    pub state: &'static str,
    /// Records written since the host started.
    pub written: u64,
    /// Records waiting to be written.
    pub pending: u64,
    /// Records that could not be kept (the backlog was full).
    pub lost: u64,
    /// Why the last write failed, while it is failing.
    pub last_error: Option<String>,
    /// Since when (milliseconds since the Unix epoch) writes have failed.
    pub failing_since_ms: Option<i64>,
}

/// What the writer thread is told. Nearly every message is a record, so
/// a record is not boxed.
#[allow(clippy::large_enum_variant)]
enum Message {
    Record(AuditRecord),
    /// Answered once every record sent before it was written or given up.
    Flush(tokio::sync::oneshot::Sender<()>),
    /// Runs on the writer's connection (tests break and mend the file).
    #[cfg(test)]
    Run(Box<dyn FnOnce(&rusqlite::Connection) + Send>),
}

/// The counters the writer thread keeps and the status reads.
#[derive(Default)]
struct Counters {
    written: AtomicU64,
    pending: AtomicU64,
    pending_bytes: AtomicU64,
    lost: AtomicU64,
    failing: Mutex<Option<(String, i64)>>,
}

/// An open audit log. Cheap to clone; the writer thread ends (after
/// writing what it holds) when the last clone is dropped.
#[derive(Clone)]
pub struct AuditLog {
    sender: Sender<Message>,
    counters: Arc<Counters>,
    settings: Arc<AuditSettings>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("path", &self.settings.path)
            .finish_non_exhaustive()
    }
}

/// The most bytes of records waiting in memory.
const BACKLOG_BYTES: u64 = 16 * 1024 * 1024;

impl AuditLog {
    /// Opens (or creates) the file and starts its writer thread. Fails when
    /// the file cannot be opened or its table made: a misconfigured audit
    /// log is refused at start, not discovered later.
    pub fn open(settings: AuditSettings) -> Result<AuditLog, String> {
        let connection = writer::open(&settings.path)
            .map_err(|e| format!("audit log {}: {e}", settings.path.display()))?;
        let (sender, receiver) = std::sync::mpsc::channel();
        let counters = Arc::new(Counters::default());
        let settings = Arc::new(settings);
        let mut writer =
            writer::Writer::new(connection, Arc::clone(&settings), Arc::clone(&counters));
        writer.trim();
        std::thread::Builder::new()
            .name("mcp-audit".into())
            .spawn(move || writer.run(receiver))
            .map_err(|e| format!("audit log: cannot start its writer: {e}"))?;
        Ok(AuditLog {
            sender,
            counters,
            settings,
        })
    }

    /// The settings it was opened with.
    pub fn settings(&self) -> &AuditSettings {
        &self.settings
    }

    /// Queues `record` for writing. Never waits: when the records waiting
    /// are at their bound, it is counted as lost instead.
    pub fn record(&self, record: AuditRecord) {
        let counters = &self.counters;
        let size = record.size() as u64;
        let backlog = self.settings.backlog.max(1) as u64;
        let pending = counters.pending.fetch_add(1, Ordering::Relaxed);
        let bytes = counters.pending_bytes.fetch_add(size, Ordering::Relaxed);
        let full = pending >= backlog || (pending > 0 && bytes + size > BACKLOG_BYTES);
        if full || self.sender.send(Message::Record(record)).is_err() {
            counters.pending.fetch_sub(1, Ordering::Relaxed);
            counters.pending_bytes.fetch_sub(size, Ordering::Relaxed);
            counters.lost.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Waits until what was recorded before is written (or, while the file
    /// is failing, tried once more), at most `timeout`.
    pub async fn flush(&self, timeout: Duration) {
        let (done, wait) = tokio::sync::oneshot::channel();
        if self.sender.send(Message::Flush(done)).is_ok() {
            let _ = tokio::time::timeout(timeout, wait).await;
        }
    }

    /// Its state now.
    pub fn status(&self) -> AuditStatus {
        let failing = self.counters.failing.locked().clone();
        AuditStatus {
            path: self.settings.path.display().to_string(),
            state: if failing.is_some() { "failing" } else { "ok" },
            written: self.counters.written.load(Ordering::Relaxed),
            pending: self.counters.pending.load(Ordering::Relaxed),
            lost: self.counters.lost.load(Ordering::Relaxed),
            failing_since_ms: failing.as_ref().map(|(_, since)| *since),
            last_error: failing.map(|(error, _)| error),
        }
    }

    /// The path of its file.
    pub fn path(&self) -> &Path {
        &self.settings.path
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests;
