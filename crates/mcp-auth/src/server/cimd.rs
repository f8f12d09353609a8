//! Client ID Metadata Documents: a `client_id` that is an https URL names a
//! JSON document describing the client. It is fetched (bounded in size and
//! time, no redirects), checked (its `client_id` must be the URL) and
//! cached; and the JWK Sets named by `jwks_uri`, fetched the same way.

use std::time::{Duration, Instant};

use super::AuthorizationServer;
use super::config::TokenEndpointAuthMethod;
use super::store::ClientRecord;
use super::util;

/// Largest document accepted.
const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
/// Largest JWK Set accepted.
const MAX_JWKS_BYTES: usize = 64 * 1024;
/// How long a fetched document is reused.
const CACHE_TTL: Duration = Duration::from_secs(300);
/// Most cached documents.
const CACHE_MAX: usize = 1024;

impl AuthorizationServer {
    /// Whether `client_id` is a URL naming a metadata document.
    pub(crate) fn is_metadata_document_url(&self, client_id: &str) -> bool {
        let Ok(url) = url::Url::parse(client_id) else {
            return false;
        };
        let scheme_ok = url.scheme() == "https"
            || (url.scheme() == "http"
                && self
                    .inner
                    .config
                    .allow_loopback_client_id_documents_for_testing
                && util::is_loopback(&url));
        scheme_ok
            && url.host().is_some()
            && url.path() != "/"
            && url.fragment().is_none()
            && url.username().is_empty()
            && url.password().is_none()
            && !client_id.contains("/./")
            && !client_id.contains("/../")
    }

    /// A client by id: registered, or described by its metadata document.
    pub(crate) async fn resolve_client(
        &self,
        client_id: &str,
    ) -> Result<Option<ClientRecord>, String> {
        if let Some(c) = self
            .inner
            .store
            .client(client_id)
            .map_err(|e| e.to_string())?
        {
            return Ok(Some(c));
        }
        if !self.is_metadata_document_url(client_id) {
            return Ok(None);
        }
        {
            let cache = self
                .inner
                .cimd_cache
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if let Some((at, rec)) = cache.get(client_id)
                && at.elapsed() < CACHE_TTL
            {
                return Ok(Some(rec.clone()));
            }
        }
        let doc = self.fetch_json(client_id, MAX_DOCUMENT_BYTES).await?;
        let rec = client_from_document(client_id, &doc)?;
        let mut cache = self
            .inner
            .cimd_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if cache.len() >= CACHE_MAX {
            cache.retain(|_, (at, _)| at.elapsed() < CACHE_TTL);
            if cache.len() >= CACHE_MAX {
                cache.clear();
            }
        }
        cache.insert(client_id.to_owned(), (Instant::now(), rec.clone()));
        Ok(Some(rec))
    }

    /// The JWK Set of a client: registered inline or fetched from its
    /// `jwks_uri` (cached).
    pub(crate) async fn client_jwks(
        &self,
        client: &ClientRecord,
    ) -> Result<serde_json::Value, String> {
        if let Some(jwks) = &client.jwks {
            return Ok(jwks.clone());
        }
        let Some(uri) = &client.jwks_uri else {
            return Err("the client has no keys".into());
        };
        {
            let cache = self
                .inner
                .jwks_cache
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if let Some((at, v)) = cache.get(uri)
                && at.elapsed() < CACHE_TTL
            {
                return Ok(v.clone());
            }
        }
        let v = self.fetch_json(uri, MAX_JWKS_BYTES).await?;
        let mut cache = self
            .inner
            .jwks_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if cache.len() >= CACHE_MAX {
            cache.clear();
        }
        cache.insert(uri.clone(), (Instant::now(), v.clone()));
        Ok(v)
    }

    /// GETs a JSON document of at most `max` bytes.
    async fn fetch_json(&self, url: &str, max: usize) -> Result<serde_json::Value, String> {
        tracing::debug!(url, "authorization server: fetching client document");
        let mut resp = self
            .inner
            .http
            .get(url)
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("fetching {url}: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("fetching {url}: status {}", resp.status()));
        }
        if resp.content_length().is_some_and(|n| n as usize > max) {
            return Err(format!("{url}: document too large"));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| format!("reading {url}: {e}"))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > max {
                return Err(format!("{url}: document too large"));
            }
        }
        serde_json::from_slice(&body).map_err(|e| format!("{url}: invalid JSON: {e}"))
    }
}

/// Reads a client from its metadata document.
fn client_from_document(url: &str, doc: &serde_json::Value) -> Result<ClientRecord, String> {
    let s = |k: &str| doc.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    if s("client_id").as_deref() != Some(url) {
        return Err("the document's client_id is not its URL".into());
    }
    let redirect_uris: Vec<String> = doc
        .get("redirect_uris")
        .and_then(|v| v.as_array())
        .ok_or("the document has no redirect_uris")?
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or("redirect_uris must be strings")
        })
        .collect::<Result<_, _>>()?;
    for uri in &redirect_uris {
        util::check_redirect_uri(uri)?;
    }
    let auth_method = match s("token_endpoint_auth_method").as_deref() {
        None | Some("none") => TokenEndpointAuthMethod::None,
        Some("private_key_jwt") => TokenEndpointAuthMethod::PrivateKeyJwt,
        Some(other) => {
            return Err(format!(
                "token_endpoint_auth_method {other:?} is not allowed here"
            ));
        }
    };
    let jwks = doc.get("jwks").cloned();
    let jwks_uri = s("jwks_uri");
    if auth_method == TokenEndpointAuthMethod::PrivateKeyJwt && jwks.is_none() && jwks_uri.is_none()
    {
        return Err("private_key_jwt needs jwks or jwks_uri".into());
    }
    let grant_types = match doc.get("grant_types").and_then(|v| v.as_array()) {
        Some(a) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        None => vec!["authorization_code".into(), "refresh_token".into()],
    };
    Ok(ClientRecord {
        client_id: url.to_owned(),
        secret_digest: None,
        redirect_uris,
        auth_method,
        grant_types,
        jwks,
        jwks_uri,
        client_name: s("client_name"),
        scope: s("scope"),
        application_type: s("application_type"),
        issued_at: util::now(),
    })
}
