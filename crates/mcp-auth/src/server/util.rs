//! Small helpers: random tokens, hashing, constant-time comparison, URI
//! checks, HTML escaping.

use subtle::ConstantTimeEq;

pub(crate) use crate::common::{random_token, sha256_base64url as digest};

/// Seconds since the Unix epoch.
pub(crate) fn now() -> i64 {
    crate::common::now_secs() as i64
}

/// Constant-time equality of two strings.
pub(crate) fn ct_eq(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// Whether the URL's host is a loopback name or address.
pub(crate) fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Checks a redirect URI: absolute, no fragment, and `https` or `http` on
/// `127.0.0.1`, `localhost` or `[::1]`.
pub(crate) fn check_redirect_uri(uri: &str) -> Result<(), String> {
    let url = url::Url::parse(uri).map_err(|e| format!("redirect URI {uri:?}: {e}"))?;
    if url.fragment().is_some() {
        return Err(format!("redirect URI {uri:?} has a fragment"));
    }
    match url.scheme() {
        "https" if url.host().is_some() => Ok(()),
        "http" if is_loopback(&url) => Ok(()),
        _ => Err(format!(
            "redirect URI {uri:?} must be https or http on a loopback host"
        )),
    }
}

/// Whether the redirect URI of a request matches one the client
/// registered: the same text, or (RFC 8252 §7.3) both `http` on the same
/// loopback IP literal (`127.0.0.1`, `[::1]`) with the same path and
/// query, whatever their ports. `localhost` is a name, not a loopback IP
/// literal: its URIs must match exactly.
pub(crate) fn redirect_uri_matches(registered: &str, given: &str) -> bool {
    if registered == given {
        return true;
    }
    let (Ok(registered), Ok(given)) = (url::Url::parse(registered), url::Url::parse(given)) else {
        return false;
    };
    let loopback_ip = |url: &url::Url| match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        _ => false,
    };
    registered.scheme() == "http"
        && given.scheme() == "http"
        && loopback_ip(&registered)
        && registered.host() == given.host()
        && registered.path() == given.path()
        && registered.query() == given.query()
        && registered.username() == given.username()
        && registered.password() == given.password()
        && given.fragment().is_none()
}

/// Escapes text for HTML.
pub(crate) fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Parses a form body; `None` when a parameter appears twice.
pub(crate) fn parse_form(body: &[u8]) -> Option<std::collections::HashMap<String, String>> {
    let mut map = std::collections::HashMap::new();
    for (k, v) in form_urlencoded::parse(body) {
        if map.insert(k.into_owned(), v.into_owned()).is_some() {
            return None;
        }
    }
    Some(map)
}

/// PKCE S256: `BASE64URL(SHA256(verifier)) == challenge`, verifier of
/// 43-128 unreserved characters.
pub(crate) fn pkce_s256_matches(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    well_formed && ct_eq(&digest(verifier), challenge)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris() {
        assert!(check_redirect_uri("http://127.0.0.1:3000/callback").is_ok());
        assert!(check_redirect_uri("http://localhost/cb").is_ok());
        assert!(check_redirect_uri("http://[::1]:9/cb").is_ok());
        assert!(check_redirect_uri("https://app.example/cb").is_ok());
        assert!(check_redirect_uri("http://app.example/cb").is_err());
        assert!(check_redirect_uri("https://app.example/cb#x").is_err());
        assert!(check_redirect_uri("javascript:alert(1)").is_err());
    }

    #[test]
    fn loopback_ip_redirect_uris_match_on_any_port() {
        let m = redirect_uri_matches;
        assert!(m(
            "http://127.0.0.1:9/callback",
            "http://127.0.0.1:9/callback"
        ));
        assert!(m(
            "http://127.0.0.1:9/callback",
            "http://127.0.0.1:53120/callback"
        ));
        assert!(m(
            "http://127.0.0.1/callback",
            "http://127.0.0.1:8080/callback"
        ));
        assert!(m("http://[::1]:9/cb", "http://[::1]:61000/cb"));
        assert!(m("http://127.0.0.1:9/cb?x=1", "http://127.0.0.1:7/cb?x=1"));
        // Only the port may differ.
        assert!(!m(
            "http://127.0.0.1:9/callback",
            "http://127.0.0.1:9/other"
        ));
        assert!(!m("http://127.0.0.1:9/cb?x=1", "http://127.0.0.1:9/cb?x=2"));
        assert!(!m("http://127.0.0.1:9/cb", "http://[::1]:9/cb"));
        assert!(!m("http://127.0.0.1:9/cb", "http://127.0.0.2:9/cb"));
        assert!(!m("http://127.0.0.1:9/cb", "https://127.0.0.1:9/cb"));
        // `localhost` is a name: exact match only.
        assert!(m("http://localhost:9/cb", "http://localhost:9/cb"));
        assert!(!m("http://localhost:9/cb", "http://localhost:10/cb"));
        assert!(!m(
            "https://app.example:443/cb",
            "https://app.example:8443/cb"
        ));
    }

    #[test]
    fn pkce() {
        // RFC 7636 appendix B.
        assert!(pkce_s256_matches(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        ));
        assert!(!pkce_s256_matches(
            "short",
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        ));
    }

    #[test]
    fn duplicate_form_parameters() {
        assert!(parse_form(b"a=1&b=2").is_some());
        assert!(parse_form(b"a=1&a=2").is_none());
    }
}
