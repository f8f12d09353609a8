//! Client ID Metadata Documents: a `client_id` that is an https URL names a
//! JSON document describing the client. It is fetched (bounded in size and
//! time, no redirects), checked (its `client_id` must be the URL) and
//! cached; and the JWK Sets named by `jwks_uri`, fetched the same way.
//! Names resolving to private, loopback or link-local addresses are not
//! fetched (server-side request forgery).

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use super::AuthorizationServer;
use super::config::TokenEndpointAuthMethod;
use super::store::ClientRecord;
use super::util;
use mcp_core::sync::MutexExt as _;

/// Largest document accepted.
const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
/// Largest JWK Set accepted.
const MAX_JWKS_BYTES: usize = 64 * 1024;
/// How long a fetched document is reused when its response says nothing.
const CACHE_TTL: Duration = Duration::from_secs(300);
/// The longest a fetched document is reused.
const CACHE_TTL_MAX: Duration = Duration::from_secs(24 * 3600);
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
            let cache = self.inner.cimd_cache.locked();
            if let Some((until, rec)) = cache.get(client_id)
                && Instant::now() < *until
            {
                return Ok(Some(rec.clone()));
            }
        }
        let (doc, ttl) = self.fetch_json(client_id, MAX_DOCUMENT_BYTES).await?;
        let rec = client_from_document(client_id, &doc)?;
        if !ttl.is_zero() {
            let mut cache = self.inner.cimd_cache.locked();
            if cache.len() >= CACHE_MAX {
                let now = Instant::now();
                cache.retain(|_, (until, _)| now < *until);
                if cache.len() >= CACHE_MAX {
                    cache.clear();
                }
            }
            cache.insert(client_id.to_owned(), (Instant::now() + ttl, rec.clone()));
        }
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
            let cache = self.inner.jwks_cache.locked();
            if let Some((until, v)) = cache.get(uri)
                && Instant::now() < *until
            {
                return Ok(v.clone());
            }
        }
        let (v, ttl) = self.fetch_json(uri, MAX_JWKS_BYTES).await?;
        if !ttl.is_zero() {
            let mut cache = self.inner.jwks_cache.locked();
            if cache.len() >= CACHE_MAX {
                cache.clear();
            }
            cache.insert(uri.clone(), (Instant::now() + ttl, v.clone()));
        }
        Ok(v)
    }

    /// GETs a JSON document of at most `max` bytes; also how long it may
    /// be cached.
    async fn fetch_json(
        &self,
        url: &str,
        max: usize,
    ) -> Result<(serde_json::Value, Duration), String> {
        if let Ok(u) = url::Url::parse(url)
            && let Some(ip) = literal_ip(&u)
            && !self.address_allowed(ip)
        {
            return Err(format!("{url}: address not allowed"));
        }
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
        let ttl = cache_ttl(resp.headers());
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
        let v = serde_json::from_slice(&body).map_err(|e| format!("{url}: invalid JSON: {e}"))?;
        Ok((v, ttl))
    }

    fn address_allowed(&self, ip: IpAddr) -> bool {
        address_allowed(
            ip,
            self.inner
                .config
                .allow_loopback_client_id_documents_for_testing,
        )
    }
}

/// The host of a URL when it is an IP address.
fn literal_ip(url: &url::Url) -> Option<IpAddr> {
    match url.host()? {
        url::Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
        url::Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
        url::Host::Domain(_) => None,
    }
}

/// Whether a fetched document may come from `ip`: public addresses only
/// (and loopback when the test switch is on).
pub(crate) fn address_allowed(ip: IpAddr, allow_loopback: bool) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    };
    if ip.is_loopback() {
        return allow_loopback;
    }
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1]))
                || (o[0] == 192 && o[1] == 0 && o[2] == 0))
        }
        IpAddr::V6(v6) => {
            let seg = v6.segments();
            !(v6.is_unspecified()
                || v6.is_multicast()
                || (seg[0] & 0xfe00) == 0xfc00
                || (seg[0] & 0xffc0) == 0xfe80)
        }
    }
}

/// A DNS resolver that drops addresses documents may not come from.
pub(crate) struct GuardedResolver {
    pub(crate) allow_loopback: bool,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_loopback = self.allow_loopback;
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), 0))
                .await?
                .filter(|a| address_allowed(a.ip(), allow_loopback))
                .collect();
            if addrs.is_empty() {
                return Err("no allowed address".into());
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// How long a response may be cached, from its `Cache-Control`.
fn cache_ttl(headers: &http::HeaderMap) -> Duration {
    let Some(cc) = headers
        .get(http::header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
    else {
        return CACHE_TTL;
    };
    let mut ttl = CACHE_TTL;
    for directive in cc.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-store" || lower == "no-cache" {
            return Duration::ZERO;
        }
        if let Some(v) = lower.strip_prefix("max-age=")
            && let Ok(secs) = v.trim_matches('"').parse::<u64>()
        {
            ttl = Duration::from_secs(secs).min(CACHE_TTL_MAX);
        }
    }
    ttl
}

/// Reads a client from its metadata document.
fn client_from_document(url: &str, doc: &serde_json::Value) -> Result<ClientRecord, String> {
    let s = |k: &str| doc.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    if s("client_id").as_deref() != Some(url) {
        return Err("the document's client_id is not its URL".into());
    }
    if s("client_name").is_none_or(|n| n.trim().is_empty()) {
        return Err("the document has no client_name".into());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        let ok = |s: &str, lo| address_allowed(s.parse().expect("ip"), lo);
        assert!(ok("93.184.216.34", false));
        assert!(ok("2606:2800:220:1::1", false));
        for bad in [
            "10.0.0.1",
            "192.168.1.1",
            "172.16.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
        ] {
            assert!(!ok(bad, true), "{bad}");
        }
        assert!(!ok("127.0.0.1", false));
        assert!(ok("127.0.0.1", true));
        assert!(!ok("::1", false));
    }

    #[test]
    fn cache_control() {
        let mut h = http::HeaderMap::new();
        assert_eq!(cache_ttl(&h), CACHE_TTL);
        h.insert(
            http::header::CACHE_CONTROL,
            "public, max-age=60".parse().expect("hv"),
        );
        assert_eq!(cache_ttl(&h), Duration::from_secs(60));
        h.insert(http::header::CACHE_CONTROL, "no-store".parse().expect("hv"));
        assert_eq!(cache_ttl(&h), Duration::ZERO);
    }
}
