//! The SQLite state of the authorization server: signing keys, clients,
//! pending logins, authorization codes, refresh-token families and used
//! client-assertion ids. Secrets (codes, refresh tokens, client secrets)
//! are stored as SHA-256 digests.

use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::AuthServerError;
use super::config::TokenEndpointAuthMethod;
use super::util::now;
use mcp_core::sync::MutexExt as _;

/// A registered client as stored.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ClientRecord {
    pub client_id: String,
    pub secret_digest: Option<String>,
    pub redirect_uris: Vec<String>,
    pub auth_method: TokenEndpointAuthMethod,
    pub grant_types: Vec<String>,
    pub jwks: Option<serde_json::Value>,
    pub jwks_uri: Option<String>,
    pub client_name: Option<String>,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub application_type: Option<String>,
    pub issued_at: i64,
}

/// An authorization request waiting for the user's login and consent.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct PendingRequest {
    pub csrf: String,
    pub client_id: String,
    pub redirect_uri: String,
    pub redirect_uri_given: bool,
    pub state: Option<String>,
    pub scope: Vec<String>,
    pub resource: Option<String>,
    pub code_challenge: String,
    pub expires: i64,
}

/// What an authorization code stands for.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct CodeGrant {
    pub client_id: String,
    pub redirect_uri: String,
    pub redirect_uri_given: bool,
    pub subject: String,
    pub scope: Vec<String>,
    pub resource: Option<String>,
    pub code_challenge: String,
    pub expires: i64,
    pub family: String,
}

/// What a refresh token stands for.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct RefreshGrant {
    pub client_id: String,
    pub subject: String,
    pub scope: Vec<String>,
    pub resource: Option<String>,
    pub family: String,
    pub expires: i64,
}

/// How a refresh token was found.
pub(crate) enum RefreshLookup {
    /// Unknown token.
    Unknown,
    /// Valid and now rotated: the caller issues its successor.
    Valid(RefreshGrant),
    /// Already rotated (or its family revoked): the family is now revoked.
    Reused,
}

/// How an authorization code was found.
pub(crate) enum CodeLookup {
    Unknown,
    Valid(CodeGrant),
    Reused,
}

/// The database.
pub(crate) struct Store {
    conn: Mutex<Connection>,
    writes: std::sync::atomic::AtomicU32,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS keys (kid TEXT PRIMARY KEY, pkcs8 BLOB NOT NULL, created INTEGER NOT NULL, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS clients (client_id TEXT PRIMARY KEY, record TEXT NOT NULL, issued_at INTEGER NOT NULL DEFAULT 0, dynamic INTEGER NOT NULL DEFAULT 0, last_used INTEGER);
CREATE TABLE IF NOT EXISTS pending (id TEXT PRIMARY KEY, record TEXT NOT NULL, expires INTEGER NOT NULL, failures INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS codes (digest TEXT PRIMARY KEY, record TEXT NOT NULL, used INTEGER NOT NULL DEFAULT 0, expires INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS families (family TEXT PRIMARY KEY, revoked INTEGER NOT NULL DEFAULT 0, expires INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS refresh_tokens (digest TEXT PRIMARY KEY, family TEXT NOT NULL, record TEXT NOT NULL, rotated INTEGER NOT NULL DEFAULT 0, expires INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS used_jtis (client_id TEXT NOT NULL, jti TEXT NOT NULL, expires INTEGER NOT NULL, PRIMARY KEY (client_id, jti));
";

/// Adds the columns a store made before unused clients were swept lacks:
/// every client is taken as registered (configured ones are marked again
/// at start), at the time its record says, and used if a code or refresh
/// token was issued to it.
const MIGRATE_CLIENTS: &str = "
ALTER TABLE clients ADD COLUMN issued_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE clients ADD COLUMN dynamic INTEGER NOT NULL DEFAULT 1;
ALTER TABLE clients ADD COLUMN last_used INTEGER;
UPDATE clients SET issued_at = COALESCE(json_extract(record, '$.issued_at'), 0);
UPDATE clients SET last_used = issued_at WHERE client_id IN (
    SELECT json_extract(record, '$.client_id') FROM codes
    UNION SELECT json_extract(record, '$.client_id') FROM refresh_tokens);
";

/// Finds the registered clients never used, oldest first.
const INDEXES: &str = "
CREATE INDEX IF NOT EXISTS clients_unused ON clients (issued_at) WHERE dynamic = 1 AND last_used IS NULL;
";

/// A client's last use is written at most this often (seconds).
const LAST_USED_RESOLUTION: i64 = 3600;

fn json<T: Serialize>(v: &T) -> Result<String, AuthServerError> {
    serde_json::to_string(v).map_err(|e| AuthServerError::Storage(e.to_string()))
}

fn unjson<T: for<'de> Deserialize<'de>>(s: &str) -> Result<T, AuthServerError> {
    serde_json::from_str(s).map_err(|e| AuthServerError::Storage(e.to_string()))
}

impl From<rusqlite::Error> for AuthServerError {
    fn from(e: rusqlite::Error) -> Self {
        AuthServerError::Storage(e.to_string())
    }
}

/// Deletes the registered clients never used and registered at or before
/// `unused_since`.
fn delete_unused(
    tx: &rusqlite::Transaction<'_>,
    unused_since: i64,
) -> Result<usize, AuthServerError> {
    Ok(tx.execute(
        "DELETE FROM clients WHERE dynamic = 1 AND last_used IS NULL AND issued_at <= ?1",
        [unused_since],
    )?)
}

impl Store {
    /// Opens (and creates) the database at `path`.
    pub fn open(path: &str) -> Result<Self, AuthServerError> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        // A new database gives the pages of deleted rows back to the file
        // system on each sweep (takes effect before the first table only).
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
        if path != ":memory:" {
            conn.pragma_update(None, "journal_mode", "WAL")?;
        }
        conn.execute_batch(SCHEMA)?;
        let migrated: bool = conn.query_row(
            "SELECT COUNT(*) FROM pragma_table_info('clients') WHERE name = 'dynamic'",
            [],
            |r| r.get::<_, i64>(0).map(|n| n > 0),
        )?;
        if !migrated {
            conn.execute_batch(&format!("BEGIN; {MIGRATE_CLIENTS} COMMIT;"))?;
        }
        conn.execute_batch(INDEXES)?;
        Ok(Store {
            conn: Mutex::new(conn),
            writes: std::sync::atomic::AtomicU32::new(0),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.locked()
    }

    /// Drops expired rows.
    pub fn purge_expired(&self) -> Result<(), AuthServerError> {
        let t = now();
        let c = self.conn();
        c.execute("DELETE FROM pending WHERE expires < ?1", [t])?;
        c.execute("DELETE FROM codes WHERE expires < ?1", [t - 3600])?;
        c.execute("DELETE FROM used_jtis WHERE expires < ?1", [t])?;
        c.execute("DELETE FROM refresh_tokens WHERE expires < ?1", [t])?;
        c.execute("DELETE FROM families WHERE expires < ?1", [t])?;
        Ok(())
    }

    // --- keys ---

    /// The signing keys, newest first: (kid, pkcs8).
    pub fn keys(&self) -> Result<Vec<(String, Vec<u8>)>, AuthServerError> {
        let c = self.conn();
        let mut stmt = c.prepare("SELECT kid, pkcs8 FROM keys ORDER BY seq DESC")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Adds a new current key and keeps only it and the previous one.
    pub fn add_key(&self, kid: &str, pkcs8: &[u8]) -> Result<(), AuthServerError> {
        let mut c = self.conn();
        let tx = c.transaction()?;
        let seq: i64 = tx.query_row("SELECT COALESCE(MAX(seq), 0) + 1 FROM keys", [], |r| {
            r.get(0)
        })?;
        tx.execute(
            "INSERT INTO keys (kid, pkcs8, created, seq) VALUES (?1, ?2, ?3, ?4)",
            params![kid, pkcs8, now(), seq],
        )?;
        tx.execute("DELETE FROM keys WHERE seq < ?1", [seq - 1])?;
        tx.commit()?;
        Ok(())
    }

    // --- clients ---

    /// Inserts or replaces a configured client (never swept, not counted
    /// against the cap).
    pub fn put_client(&self, client: &ClientRecord) -> Result<(), AuthServerError> {
        self.conn().execute(
            "INSERT INTO clients (client_id, record, issued_at, dynamic) VALUES (?1, ?2, ?3, 0)
             ON CONFLICT (client_id) DO UPDATE SET record = excluded.record, dynamic = 0",
            params![client.client_id, json(client)?, client.issued_at],
        )?;
        Ok(())
    }

    /// Inserts a dynamically registered client unless `max` of them are
    /// stored already, after deleting those registered at or before
    /// `unused_since` and never used. Whether it was inserted.
    pub fn register_client(
        &self,
        client: &ClientRecord,
        max: usize,
        unused_since: i64,
    ) -> Result<bool, AuthServerError> {
        let mut c = self.conn();
        let tx = c.transaction()?;
        let count = |tx: &rusqlite::Transaction<'_>| -> Result<usize, AuthServerError> {
            Ok(
                tx.query_row("SELECT COUNT(*) FROM clients WHERE dynamic = 1", [], |r| {
                    r.get::<_, i64>(0)
                })? as usize,
            )
        };
        if count(&tx)? >= max {
            let n = delete_unused(&tx, unused_since)?;
            tracing::debug!(deleted = n, "authorization server: unused clients deleted");
            if count(&tx)? >= max {
                return Ok(false);
            }
        }
        tx.execute(
            "INSERT INTO clients (client_id, record, issued_at, dynamic) VALUES (?1, ?2, ?3, 1)",
            params![client.client_id, json(client)?, client.issued_at],
        )?;
        tx.commit()?;
        Ok(true)
    }

    /// Notes that a client was used (an authorization approved, a token
    /// issued); written at most once an hour per client.
    pub fn client_used(&self, client_id: &str) -> Result<(), AuthServerError> {
        let t = now();
        self.conn().execute(
            "UPDATE clients SET last_used = ?2
             WHERE client_id = ?1 AND (last_used IS NULL OR last_used <= ?2 - ?3)",
            params![client_id, t, LAST_USED_RESOLUTION],
        )?;
        Ok(())
    }

    /// Deletes the registered clients never used and registered at or
    /// before `unused_since`; how many.
    pub fn delete_unused_clients(&self, unused_since: i64) -> Result<usize, AuthServerError> {
        let mut c = self.conn();
        let tx = c.transaction()?;
        let n = delete_unused(&tx, unused_since)?;
        tx.commit()?;
        Ok(n)
    }

    /// Gives the free pages of the file back (of a database made with
    /// incremental auto-vacuum; others are left as they are).
    pub fn vacuum(&self) -> Result<(), AuthServerError> {
        self.conn().execute_batch("PRAGMA incremental_vacuum")?;
        Ok(())
    }

    /// Dynamically registered clients stored.
    #[cfg(test)]
    pub fn registered_clients(&self) -> Result<usize, AuthServerError> {
        Ok(self
            .conn()
            .query_row("SELECT COUNT(*) FROM clients WHERE dynamic = 1", [], |r| {
                r.get::<_, i64>(0)
            })? as usize)
    }

    /// A client by id.
    pub fn client(&self, client_id: &str) -> Result<Option<ClientRecord>, AuthServerError> {
        let rec: Option<String> = self
            .conn()
            .query_row(
                "SELECT record FROM clients WHERE client_id = ?1",
                [client_id],
                |r| r.get(0),
            )
            .optional()?;
        rec.map(|s| unjson(&s)).transpose()
    }

    // --- pending requests ---

    /// Stores a pending authorization request under `id` unless `max` are
    /// waiting (expired ones are dropped first); whether it was stored.
    /// Every so often drops expired rows first anyway.
    pub fn put_pending(
        &self,
        id: &str,
        req: &PendingRequest,
        max: usize,
    ) -> Result<bool, AuthServerError> {
        if self
            .writes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .is_multiple_of(256)
        {
            self.purge_expired()?;
        }
        let waiting = |c: &Connection| -> Result<usize, AuthServerError> {
            Ok(c.query_row("SELECT COUNT(*) FROM pending", [], |r| r.get::<_, i64>(0))? as usize)
        };
        if waiting(&self.conn())? >= max {
            self.purge_expired()?;
        }
        let c = self.conn();
        if waiting(&c)? >= max {
            return Ok(false);
        }
        c.execute(
            "INSERT INTO pending (id, record, expires) VALUES (?1, ?2, ?3)",
            params![id, json(req)?, req.expires],
        )?;
        Ok(true)
    }

    /// A pending request that has not expired.
    pub fn pending(&self, id: &str) -> Result<Option<PendingRequest>, AuthServerError> {
        let rec: Option<String> = self
            .conn()
            .query_row(
                "SELECT record FROM pending WHERE id = ?1 AND expires >= ?2",
                params![id, now()],
                |r| r.get(0),
            )
            .optional()?;
        rec.map(|s| unjson(&s)).transpose()
    }

    /// Counts a failed login on a pending request; returns the count.
    pub fn login_failed(&self, id: &str) -> Result<u32, AuthServerError> {
        let c = self.conn();
        c.execute(
            "UPDATE pending SET failures = failures + 1 WHERE id = ?1",
            [id],
        )?;
        let n: Option<u32> = c
            .query_row("SELECT failures FROM pending WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(n.unwrap_or(u32::MAX))
    }

    /// Removes a pending request; whether it was there.
    pub fn take_pending(&self, id: &str) -> Result<bool, AuthServerError> {
        Ok(self
            .conn()
            .execute("DELETE FROM pending WHERE id = ?1", [id])?
            == 1)
    }

    // --- codes ---

    /// Stores a new authorization code (by digest) and opens its family.
    pub fn put_code(
        &self,
        digest: &str,
        grant: &CodeGrant,
        family_expires: i64,
    ) -> Result<(), AuthServerError> {
        let mut c = self.conn();
        let tx = c.transaction()?;
        tx.execute(
            "INSERT INTO families (family, revoked, expires) VALUES (?1, 0, ?2)",
            params![grant.family, family_expires],
        )?;
        tx.execute(
            "INSERT INTO codes (digest, record, used, expires) VALUES (?1, ?2, 0, ?3)",
            params![digest, json(grant)?, grant.expires],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Redeems a code: the first time it is valid, later it is reused and
    /// its family revoked.
    pub fn redeem_code(&self, digest: &str) -> Result<CodeLookup, AuthServerError> {
        let mut c = self.conn();
        let tx = c.transaction()?;
        let row: Option<(String, i64)> = tx
            .query_row(
                "SELECT record, used FROM codes WHERE digest = ?1",
                [digest],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let Some((record, used)) = row else {
            return Ok(CodeLookup::Unknown);
        };
        let grant: CodeGrant = unjson(&record)?;
        if used != 0 {
            tx.execute(
                "UPDATE families SET revoked = 1 WHERE family = ?1",
                [&grant.family],
            )?;
            tx.commit()?;
            return Ok(CodeLookup::Reused);
        }
        tx.execute("UPDATE codes SET used = 1 WHERE digest = ?1", [digest])?;
        tx.commit()?;
        Ok(CodeLookup::Valid(grant))
    }

    // --- refresh tokens ---

    /// Stores a refresh token of a family (opening the family when new).
    pub fn put_refresh(&self, digest: &str, grant: &RefreshGrant) -> Result<(), AuthServerError> {
        let mut c = self.conn();
        let tx = c.transaction()?;
        tx.execute(
            "INSERT OR IGNORE INTO families (family, revoked, expires) VALUES (?1, 0, ?2)",
            params![grant.family, grant.expires],
        )?;
        tx.execute(
            "INSERT INTO refresh_tokens (digest, family, record, rotated, expires) VALUES (?1, ?2, ?3, 0, ?4)",
            params![digest, grant.family, json(grant)?, grant.expires],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Looks a refresh token up and marks it rotated; a reuse revokes its
    /// family.
    pub fn rotate_refresh(&self, digest: &str) -> Result<RefreshLookup, AuthServerError> {
        let mut c = self.conn();
        let tx = c.transaction()?;
        let row: Option<(String, String, i64, i64)> = tx
            .query_row(
                "SELECT t.record, t.family, t.rotated, COALESCE(f.revoked, 1)
                 FROM refresh_tokens t LEFT JOIN families f ON f.family = t.family
                 WHERE t.digest = ?1",
                [digest],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        let Some((record, family, rotated, revoked)) = row else {
            return Ok(RefreshLookup::Unknown);
        };
        if rotated != 0 || revoked != 0 {
            tx.execute(
                "UPDATE families SET revoked = 1 WHERE family = ?1",
                [&family],
            )?;
            tx.commit()?;
            return Ok(RefreshLookup::Reused);
        }
        tx.execute(
            "UPDATE refresh_tokens SET rotated = 1 WHERE digest = ?1",
            [digest],
        )?;
        tx.commit()?;
        Ok(RefreshLookup::Valid(unjson(&record)?))
    }

    // --- client assertion ids ---

    /// Records a client assertion's `jti`; false if it was already used.
    pub fn use_jti(
        &self,
        client_id: &str,
        jti: &str,
        expires: i64,
    ) -> Result<bool, AuthServerError> {
        let n = self.conn().execute(
            "INSERT OR IGNORE INTO used_jtis (client_id, jti, expires) VALUES (?1, ?2, ?3)",
            params![client_id, jti, expires],
        )?;
        Ok(n == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(id: &str, issued_at: i64) -> ClientRecord {
        ClientRecord {
            client_id: id.into(),
            secret_digest: None,
            redirect_uris: vec!["http://127.0.0.1/cb".into()],
            auth_method: TokenEndpointAuthMethod::None,
            grant_types: vec!["authorization_code".into()],
            jwks: None,
            jwks_uri: None,
            client_name: None,
            scope: None,
            application_type: None,
            issued_at,
        }
    }

    #[test]
    fn the_cap_counts_registered_clients_and_evicts_unused_ones_first() {
        let store = Store::open(":memory:").unwrap();
        let t = now();
        // Configured clients do not count.
        store.put_client(&client("configured", t - 100)).unwrap();
        assert!(
            store
                .register_client(&client("old", t - 100), 2, t - 200)
                .unwrap()
        );
        assert!(
            store
                .register_client(&client("used", t - 100), 2, t - 200)
                .unwrap()
        );
        store.client_used("used").unwrap();
        // Full, and nothing is old enough to go.
        assert!(
            !store
                .register_client(&client("new", t), 2, t - 200)
                .unwrap()
        );
        // With a shorter lifetime, the unused one goes; the used one stays.
        assert!(store.register_client(&client("new", t), 2, t - 50).unwrap());
        assert!(store.client("old").unwrap().is_none());
        assert!(store.client("used").unwrap().is_some());
        assert!(store.client("configured").unwrap().is_some());
        assert_eq!(store.registered_clients().unwrap(), 2);
        // The sweep never deletes configured or used clients.
        assert_eq!(store.delete_unused_clients(t + 10).unwrap(), 1);
        assert!(store.client("configured").unwrap().is_some());
        assert!(store.client("used").unwrap().is_some());
    }

    #[test]
    fn a_store_from_before_the_sweep_is_migrated() {
        let path = std::env::temp_dir().join(format!("mcp-auth-migrate-{}.sqlite", random()));
        let path_str = path.to_str().unwrap().to_owned();
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "CREATE TABLE clients (client_id TEXT PRIMARY KEY, record TEXT NOT NULL);
                 CREATE TABLE codes (digest TEXT PRIMARY KEY, record TEXT NOT NULL, used INTEGER NOT NULL DEFAULT 0, expires INTEGER NOT NULL);",
            )
            .unwrap();
            for id in ["a", "b"] {
                c.execute(
                    "INSERT INTO clients (client_id, record) VALUES (?1, ?2)",
                    params![id, json(&client(id, 1000)).unwrap()],
                )
                .unwrap();
            }
            c.execute(
                "INSERT INTO codes (digest, record, expires) VALUES ('d', '{\"client_id\":\"a\"}', 0)",
                [],
            )
            .unwrap();
        }
        let store = Store::open(&path_str).unwrap();
        assert_eq!(store.registered_clients().unwrap(), 2);
        // "a" had a code: used, kept; "b" never was.
        assert_eq!(store.delete_unused_clients(now()).unwrap(), 1);
        assert!(store.client("a").unwrap().is_some());
        assert!(store.client("b").unwrap().is_none());
        drop(store);
        // Opening again does not migrate twice.
        Store::open(&path_str).unwrap();
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{path_str}{suffix}"));
        }
    }

    fn random() -> String {
        crate::common::random_token()
    }

    #[test]
    fn waiting_requests_are_capped() {
        let store = Store::open(":memory:").unwrap();
        let req = |expires| PendingRequest {
            csrf: "c".into(),
            client_id: "x".into(),
            redirect_uri: "http://127.0.0.1/cb".into(),
            redirect_uri_given: true,
            state: None,
            scope: vec![],
            resource: None,
            code_challenge: "c".into(),
            expires,
        };
        let t = now();
        assert!(store.put_pending("1", &req(t - 10), 2).unwrap());
        assert!(store.put_pending("2", &req(t + 600), 2).unwrap());
        // Full: the expired one is dropped to make room.
        assert!(store.put_pending("3", &req(t + 600), 2).unwrap());
        assert!(!store.put_pending("4", &req(t + 600), 2).unwrap());
    }
}
