//! What the guard keeps across runs, in an SQLite file: the grants a
//! person made for always (bound to the caller, the server's identity,
//! the item and its definition's hash), and the definition of each tool,
//! prompt and resource as first seen (its pin).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension as _, params};

use super::GrantKey;
use mcp_core::sync::MutexExt as _;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS grants (
    caller          TEXT NOT NULL,
    server_identity TEXT NOT NULL,
    kind            TEXT NOT NULL,
    name            TEXT NOT NULL,
    definition      TEXT NOT NULL,
    granted_ms      INTEGER NOT NULL,
    PRIMARY KEY (caller, server_identity, kind, name, definition)
);
CREATE TABLE IF NOT EXISTS pins (
    server_identity TEXT NOT NULL,
    server          TEXT NOT NULL,
    kind            TEXT NOT NULL,
    name            TEXT NOT NULL,
    pinned          TEXT NOT NULL,
    pinned_text     TEXT NOT NULL,
    seen            TEXT NOT NULL,
    seen_text       TEXT NOT NULL,
    pinned_ms       INTEGER NOT NULL,
    PRIMARY KEY (server_identity, kind, name)
);
CREATE TABLE IF NOT EXISTS trusted_servers (
    server          TEXT NOT NULL,
    server_identity TEXT NOT NULL,
    trusted_ms      INTEGER NOT NULL,
    PRIMARY KEY (server, server_identity)
);
";

/// Pins `?5` (its text `?6`) as first seen: of server identity `?1`,
/// server `?2`, kind `?3`, name `?4`, at `?7`.
const PIN: &str = "INSERT INTO pins (server_identity, server, kind, name, pinned, pinned_text, \
                   seen, seen_text, pinned_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?5, ?6, ?7)";

/// Pins `key`'s definition (`text`) as seen on `server` now;
/// `on_conflict` says what an existing pin becomes (SQL, or empty).
fn insert_pin(
    connection: &rusqlite::Connection,
    on_conflict: &str,
    server: &str,
    key: &GrantKey,
    text: &str,
) -> rusqlite::Result<usize> {
    connection.execute(
        &format!("{PIN}{on_conflict}"),
        params![
            key.server_identity,
            server,
            key.kind,
            key.name,
            key.definition,
            text,
            crate::audit::now_ms()
        ],
    )
}

/// What a definition is against its pin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pinned {
    /// The same as pinned (or seen for the first time, and pinned now).
    Same,
    /// Changed since it was pinned: the pinned definition's text.
    Changed(String),
}

/// Told of each definition pinned as first seen: its server's name, its
/// key and its text.
type OnPinned = Box<dyn Fn(&str, &GrantKey, &str) + Send + Sync>;

/// Where grants for always and pins are kept.
pub struct GuardStore {
    path: PathBuf,
    connection: Mutex<Connection>,
    on_pinned: std::sync::OnceLock<OnPinned>,
}

impl std::fmt::Debug for GuardStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl GuardStore {
    /// The store in the SQLite file at `path`, made with its table if
    /// missing (and its folder).
    pub fn open(path: &Path) -> Result<GuardStore, String> {
        let failed = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| failed(&e))?;
        }
        let connection = Connection::open(path).map_err(|e| failed(&e))?;
        connection
            .busy_timeout(Duration::from_secs(5))
            .and_then(|()| connection.execute_batch(SCHEMA))
            .map_err(|e| failed(&e))?;
        Ok(GuardStore {
            path: path.to_owned(),
            connection: Mutex::new(connection),
            on_pinned: std::sync::OnceLock::new(),
        })
    }

    /// Tells `hook` of each definition pinned as first seen from now on
    /// (to share it with other instances). Set once; later calls are
    /// ignored.
    pub fn when_pinned(&self, hook: impl Fn(&str, &GrantKey, &str) + Send + Sync + 'static) {
        let _ = self.on_pinned.set(Box::new(hook));
    }

    /// Keeps the pin another instance made of `key`'s definition (`text`)
    /// as first seen, where `first` (the first such pin the instances
    /// share of it): that one is the pin, whatever this instance saw
    /// first; where not, only if this instance has none. Whether this
    /// instance's own pin was another (its lists must be checked again).
    pub fn pin_shared(
        &self,
        server: &str,
        key: &GrantKey,
        text: &str,
        first: bool,
    ) -> Result<bool, String> {
        let connection = self.connection.locked();
        let own: Option<String> = connection
            .query_row(
                "SELECT pinned FROM pins WHERE server_identity = ?1 AND kind = ?2 AND name = ?3",
                params![key.server_identity, key.kind, key.name],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        // The log's first pin of an item is its pin; a later one only
        // where there is none.
        let on_conflict = if first {
            " ON CONFLICT (server_identity, kind, name) DO UPDATE SET \
             pinned = excluded.pinned, pinned_text = excluded.pinned_text, \
             pinned_ms = excluded.pinned_ms"
        } else {
            " ON CONFLICT DO NOTHING"
        };
        let kept = insert_pin(&connection, on_conflict, server, key, text);
        kept.map_err(|e| format!("{}: {e}", self.path.display()))?;
        Ok(first && own.is_some_and(|own| own != key.definition))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `caller` was granted `key` for always; a file that cannot
    /// be read grants nothing (the reason is logged).
    pub fn granted(&self, caller: &str, key: &GrantKey) -> bool {
        let connection = self.connection.locked();
        let found = connection
            .query_row(
                "SELECT 1 FROM grants WHERE caller = ?1 AND server_identity = ?2 AND kind = ?3 \
                 AND name = ?4 AND definition = ?5",
                params![
                    caller,
                    key.server_identity,
                    key.kind,
                    key.name,
                    key.definition
                ],
                |_| Ok(()),
            )
            .optional();
        match found {
            Ok(found) => found.is_some(),
            Err(error) => {
                tracing::warn!(path = %self.path.display(), %error, "the grants cannot be read");
                false
            }
        }
    }

    /// Grants `key` to `caller` for always.
    pub fn grant(&self, caller: &str, key: &GrantKey) -> Result<(), String> {
        let connection = self.connection.locked();
        connection
            .execute(
                "INSERT OR IGNORE INTO grants \
                 (caller, server_identity, kind, name, definition, granted_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    caller,
                    key.server_identity,
                    key.kind,
                    key.name,
                    key.definition,
                    crate::audit::now_ms()
                ],
            )
            .map(drop)
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }

    /// Keeps a person's approval of server `server` run as `identity`
    /// (its command line or URL; see [`crate::trust`]).
    pub fn trust(&self, server: &str, identity: &str) -> Result<(), String> {
        self.connection
            .locked()
            .execute(
                "INSERT OR IGNORE INTO trusted_servers (server, server_identity, trusted_ms) \
                 VALUES (?1, ?2, ?3)",
                params![server, identity, crate::audit::now_ms()],
            )
            .map(drop)
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }

    /// Whether a person approved server `server` run as `identity`.
    pub fn trusts(&self, server: &str, identity: &str) -> Result<bool, String> {
        self.connection
            .locked()
            .query_row(
                "SELECT 1 FROM trusted_servers WHERE server = ?1 AND server_identity = ?2",
                params![server, identity],
                |_| Ok(()),
            )
            .optional()
            .map(|found| found.is_some())
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }

    /// Checks `key`'s definition (`text`, its JSON) against its pin: the
    /// first one seen is pinned; a later one is recorded as seen, and
    /// reported as changed until it is approved ([`GuardStore::approve`]).
    /// A file that cannot be read or written reports a change (the
    /// reason is logged): what cannot be checked is not trusted.
    pub fn check_pin(&self, server: &str, key: &GrantKey, text: &str) -> Pinned {
        let connection = self.connection.locked();
        let checked = (|| -> rusqlite::Result<Pinned> {
            let pinned: Option<(String, String)> = connection
                .query_row(
                    "SELECT pinned, pinned_text FROM pins \
                     WHERE server_identity = ?1 AND kind = ?2 AND name = ?3",
                    params![key.server_identity, key.kind, key.name],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()?;
            match pinned {
                None => {
                    insert_pin(&connection, "", server, key, text)?;
                    if let Some(hook) = self.on_pinned.get() {
                        hook(server, key, text);
                    }
                    Ok(Pinned::Same)
                }
                Some((pinned, _)) if pinned == key.definition => Ok(Pinned::Same),
                Some((_, pinned_text)) => {
                    connection.execute(
                        "UPDATE pins SET seen = ?4, seen_text = ?5, server = ?6 \
                         WHERE server_identity = ?1 AND kind = ?2 AND name = ?3",
                        params![
                            key.server_identity,
                            key.kind,
                            key.name,
                            key.definition,
                            text,
                            server
                        ],
                    )?;
                    Ok(Pinned::Changed(pinned_text))
                }
            }
        })();
        checked.unwrap_or_else(|error| {
            tracing::warn!(path = %self.path.display(), %error, "a pin cannot be checked");
            Pinned::Changed(String::new())
        })
    }

    /// Pins what was last seen of `name` (a glob; `*` for all) of server
    /// `server` (its name in the config) where it changed; the items
    /// pinned anew, as `kind name`.
    pub fn approve(&self, server: &str, name: &str) -> Result<Vec<String>, String> {
        let failed = |e: &dyn std::fmt::Display| format!("{}: {e}", self.path.display());
        let matcher = globset::Glob::new(name)
            .map_err(|e| failed(&e))?
            .compile_matcher();
        let connection = self.connection.locked();
        let mut changed = connection
            .prepare(
                "SELECT server_identity, kind, name FROM pins \
                 WHERE server = ?1 AND pinned != seen ORDER BY kind, name",
            )
            .map_err(|e| failed(&e))?;
        let rows: Vec<(String, String, String)> = changed
            .query_map(params![server], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?))
            })
            .and_then(Iterator::collect)
            .map_err(|e| failed(&e))?;
        let mut approved = Vec::new();
        for (identity, kind, item) in rows.into_iter().filter(|(_, _, n)| matcher.is_match(n)) {
            connection
                .execute(
                    "UPDATE pins SET pinned = seen, pinned_text = seen_text, pinned_ms = ?4 \
                     WHERE server_identity = ?1 AND kind = ?2 AND name = ?3",
                    params![identity, kind, item, crate::audit::now_ms()],
                )
                .map_err(|e| failed(&e))?;
            approved.push(format!("{kind} {item}"));
        }
        Ok(approved)
    }

    /// Pins `key`'s definition (`text`) as it is now: a person approved it.
    pub fn repin(&self, key: &GrantKey, text: &str) -> Result<(), String> {
        let connection = self.connection.locked();
        connection
            .execute(
                "UPDATE pins SET pinned = ?4, pinned_text = ?5, seen = ?4, seen_text = ?5, \
                 pinned_ms = ?6 WHERE server_identity = ?1 AND kind = ?2 AND name = ?3",
                params![
                    key.server_identity,
                    key.kind,
                    key.name,
                    key.definition,
                    text,
                    crate::audit::now_ms()
                ],
            )
            .map(drop)
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }
}
