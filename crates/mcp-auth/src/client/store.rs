//! Where credentials outlive the process, keyed by issuer: the client's
//! registration and its tokens.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::OAuthError;
use mcp_core::sync::MutexExt as _;

/// A client's registration at one authorization server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Registration {
    /// The client id.
    pub client_id: String,
    /// The secret of a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint (`none`,
    /// `client_secret_basic`, `client_secret_post`, `private_key_jwt`).
    pub auth_method: String,
    /// The redirect URIs registered with it (empty when not known).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirect_uris: Vec<String>,
}

impl Registration {
    /// A registration with this id, secret and method.
    pub fn new(
        client_id: impl Into<String>,
        client_secret: Option<String>,
        auth_method: impl Into<String>,
    ) -> Self {
        Registration {
            client_id: client_id.into(),
            client_secret,
            auth_method: auth_method.into(),
            redirect_uris: Vec::new(),
        }
    }

    /// The same registration, recorded with the redirect URIs it was
    /// registered with.
    pub fn with_redirect_uris(mut self, redirect_uris: Vec<String>) -> Self {
        self.redirect_uris = redirect_uris;
        self
    }

    /// Whether a sign-in returning to `redirect_uri` can use this
    /// registration: its redirect URIs are not known, or they include it.
    pub fn fits_redirect_uri(&self, redirect_uri: &str) -> bool {
        self.redirect_uris.is_empty() || self.redirect_uris.iter().any(|r| r == redirect_uri)
    }
}

/// Tokens from one authorization server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Tokens {
    /// The access token.
    pub access_token: String,
    /// The refresh token, if one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (Unix seconds), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The resource the tokens are for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// `Bearer`, or `DPoP` for a token bound to the client's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
}

/// What is kept for one issuer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Credentials {
    /// The client's registration there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration: Option<Registration>,
    /// The latest tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Tokens>,
}

/// Keeps credentials by issuer.
pub trait TokenStore: Send + Sync + 'static {
    /// What is kept for `issuer`.
    fn load(&self, issuer: &str) -> Result<Credentials, OAuthError>;
    /// Replaces what is kept for `issuer`.
    fn save(&self, issuer: &str, credentials: &Credentials) -> Result<(), OAuthError>;
    /// Forgets what is kept for `issuer`; `true` when something was.
    fn remove(&self, issuer: &str) -> Result<bool, OAuthError> {
        let kept = self.load(issuer)? != Credentials::default();
        self.save(issuer, &Credentials::default())?;
        Ok(kept)
    }
    /// Everything kept, by issuer (empty for a store that cannot list).
    fn list(&self) -> Result<Vec<(String, Credentials)>, OAuthError> {
        Ok(Vec::new())
    }
}

/// Credentials in memory only.
#[derive(Debug, Default)]
pub struct MemoryTokenStore {
    entries: Mutex<BTreeMap<String, Credentials>>,
}

impl TokenStore for MemoryTokenStore {
    fn load(&self, issuer: &str) -> Result<Credentials, OAuthError> {
        Ok(self
            .entries
            .locked()
            .get(issuer)
            .cloned()
            .unwrap_or_default())
    }

    fn save(&self, issuer: &str, credentials: &Credentials) -> Result<(), OAuthError> {
        self.entries
            .locked()
            .insert(issuer.to_owned(), credentials.clone());
        Ok(())
    }

    fn remove(&self, issuer: &str) -> Result<bool, OAuthError> {
        Ok(self.entries.locked().remove(issuer).is_some())
    }

    fn list(&self) -> Result<Vec<(String, Credentials)>, OAuthError> {
        let entries = self.entries.locked();
        Ok(entries
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }
}

/// Credentials in a JSON file readable by its owner only (mode 0600),
/// written atomically.
#[derive(Debug)]
pub struct FileTokenStore {
    path: PathBuf,
    lock: Mutex<()>,
}

impl FileTokenStore {
    /// A store in `path` (created on first save).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileTokenStore {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read_all(&self) -> Result<BTreeMap<String, Credentials>, OAuthError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| OAuthError::Store(format!("{}: {e}", self.path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(OAuthError::Store(format!("{}: {e}", self.path.display()))),
        }
    }
}

impl TokenStore for FileTokenStore {
    fn load(&self, issuer: &str) -> Result<Credentials, OAuthError> {
        let _guard = self.lock.locked();
        Ok(self.read_all()?.remove(issuer).unwrap_or_default())
    }

    fn save(&self, issuer: &str, credentials: &Credentials) -> Result<(), OAuthError> {
        let _guard = self.lock.locked();
        let mut all = self.read_all()?;
        all.insert(issuer.to_owned(), credentials.clone());
        self.write_all(&all)
    }

    fn remove(&self, issuer: &str) -> Result<bool, OAuthError> {
        let _guard = self.lock.locked();
        let mut all = self.read_all()?;
        if all.remove(issuer).is_none() {
            return Ok(false);
        }
        self.write_all(&all)?;
        Ok(true)
    }

    fn list(&self) -> Result<Vec<(String, Credentials)>, OAuthError> {
        let _guard = self.lock.locked();
        Ok(self.read_all()?.into_iter().collect())
    }
}

impl FileTokenStore {
    /// Replaces the file with `all`, atomically, readable by its owner
    /// only.
    fn write_all(&self, all: &BTreeMap<String, Credentials>) -> Result<(), OAuthError> {
        let bytes =
            serde_json::to_vec_pretty(&all).map_err(|e| OAuthError::Store(e.to_string()))?;
        let fail = |e: std::io::Error| OAuthError::Store(format!("{}: {e}", self.path.display()));
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let temporary = self.path.with_extension("tmp");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        {
            use std::io::Write;
            let mut file = options.open(&temporary).map_err(fail)?;
            file.write_all(&bytes).map_err(fail)?;
            file.sync_all().map_err(fail)?;
        }
        std::fs::rename(&temporary, &self.path).map_err(fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_store_keeps_issuers_apart_and_is_private() {
        let dir = std::env::temp_dir().join(format!("mcp-auth-store-{}", std::process::id()));
        let store = FileTokenStore::new(dir.join("tokens.json"));
        let credentials = Credentials {
            registration: Some(Registration::new("c1", None, "none")),
            tokens: None,
        };
        store.save("https://a", &credentials).unwrap();
        store.save("https://b", &Credentials::default()).unwrap();
        assert_eq!(store.load("https://a").unwrap(), credentials);
        assert_eq!(store.load("https://c").unwrap(), Credentials::default());
        let issuers: Vec<String> = store.list().unwrap().into_iter().map(|(i, _)| i).collect();
        assert_eq!(issuers, ["https://a", "https://b"]);
        assert!(store.remove("https://a").unwrap());
        assert!(!store.remove("https://a").unwrap());
        assert_eq!(store.load("https://a").unwrap(), Credentials::default());
        assert_eq!(store.list().unwrap().len(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
