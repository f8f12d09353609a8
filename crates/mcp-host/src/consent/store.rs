//! The grants a person made for always, in an SQLite file: bound to the
//! caller, the server's identity, the item and its definition's hash.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension as _, params};

use super::GrantKey;

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
";

/// Where grants for always are kept.
pub struct GrantStore {
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl std::fmt::Debug for GrantStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrantStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl GrantStore {
    /// The store in the SQLite file at `path`, made with its table if
    /// missing (and its folder).
    pub fn open(path: &Path) -> Result<GrantStore, String> {
        let failed = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| failed(&e))?;
        }
        let connection = Connection::open(path).map_err(|e| failed(&e))?;
        connection
            .busy_timeout(Duration::from_secs(5))
            .and_then(|()| connection.execute_batch(SCHEMA))
            .map_err(|e| failed(&e))?;
        Ok(GrantStore {
            path: path.to_owned(),
            connection: Mutex::new(connection),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `caller` was granted `key` for always; a file that cannot
    /// be read grants nothing (the reason is logged).
    pub fn has(&self, caller: &str, key: &GrantKey) -> bool {
        let connection = self.connection.lock().unwrap_or_else(|p| p.into_inner());
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
        let connection = self.connection.lock().unwrap_or_else(|p| p.into_inner());
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
}
