//! What the client, the authorization server and the resource server all
//! need: the clock, random tokens, base64url SHA-256 (PKCE S256, `ath`,
//! stored secrets), HTTP Basic client credentials and the JWK coordinates
//! of a P-256 key.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use sha2::{Digest, Sha256};

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// 32 random bytes, base64url: verifiers, states, codes, ids.
pub(crate) fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::Rng::fill(&mut rand::rng(), &mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// `BASE64URL(SHA256(s))`: the PKCE S256 challenge of a verifier, a DPoP
/// `ath`, how secrets are stored.
pub(crate) fn sha256_base64url(s: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(s.as_bytes()))
}

/// The `Authorization` value of `client_secret_basic` (RFC 6749 §2.3.1:
/// both parts form-encoded before base64).
pub(crate) fn basic_credentials(client_id: &str, secret: &str) -> String {
    let encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let pair = format!("{}:{}", encode(client_id), encode(secret));
    format!("Basic {}", STANDARD.encode(pair))
}

/// The JWK `x` and `y` of an uncompressed P-256 public key (`0x04 || x ||
/// y`), base64url; `None` for any other encoding.
pub(crate) fn p256_coordinates(point: &[u8]) -> Option<(String, String)> {
    (point.len() == 65 && point[0] == 4).then(|| {
        (
            URL_SAFE_NO_PAD.encode(&point[1..33]),
            URL_SAFE_NO_PAD.encode(&point[33..65]),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_vector_and_basic_credentials() {
        // RFC 7636, appendix B.
        assert_eq!(
            sha256_base64url("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert_eq!(
            basic_credentials("a b", "c:d"),
            format!("Basic {}", STANDARD.encode("a+b:c%3Ad"))
        );
        assert_eq!(random_token().len(), 43);
        assert!(p256_coordinates(&[4; 64]).is_none());
    }
}
