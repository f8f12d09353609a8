//! DPoP (RFC 9449): tokens bound to a key the client holds. Every token
//! request and every request that uses the token carries a fresh proof,
//! a JWT signed with that key naming the method and URL (and, with a
//! token, its hash); servers may demand a nonce in the proofs.

use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, EllipticCurve, EllipticCurveKeyParameters,
    EllipticCurveKeyType, Jwk,
};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};

use super::{OAuthError, pkce};
use crate::common::{now_secs, sha256_base64url};

/// The header that carries a proof.
pub const DPOP_HEADER: &str = "DPoP";
/// The header that carries a server's nonce.
pub const NONCE_HEADER: &str = "DPoP-Nonce";

/// A proof-of-possession key (P-256, ES256).
pub struct DpopKey {
    encoding: EncodingKey,
    jwk: Jwk,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DpopKey")
    }
}

impl DpopKey {
    /// A fresh key.
    pub fn generate() -> Result<DpopKey, OAuthError> {
        let rng = SystemRandom::new();
        let fail = |what: &str| OAuthError::Token(format!("DPoP key: {what}"));
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| fail("generation failed"))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| fail("unreadable"))?;
        let (x, y) = crate::common::p256_coordinates(pair.public_key().as_ref())
            .ok_or_else(|| fail("unexpected public key"))?;
        let jwk = Jwk {
            common: CommonParameters::default(),
            algorithm: AlgorithmParameters::EllipticCurve(EllipticCurveKeyParameters {
                key_type: EllipticCurveKeyType::EC,
                curve: EllipticCurve::P256,
                x,
                y,
            }),
        };
        Ok(DpopKey {
            encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
            jwk,
        })
    }

    /// A proof for a request of `method` to `url` (its query and fragment
    /// dropped), bound to `token` where one is used, with the server's
    /// `nonce` where it asked for one.
    pub fn proof(
        &self,
        method: &str,
        url: &str,
        token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, OAuthError> {
        let htu = url.split(['?', '#']).next().unwrap_or(url);
        let mut claims = serde_json::json!({
            "jti": pkce::random_token(),
            "htm": method,
            "htu": htu,
            "iat": now_secs(),
        });
        if let Some(token) = token {
            claims["ath"] = sha256_base64url(token).into();
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = nonce.into();
        }
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".to_owned());
        header.jwk = Some(self.jwk.clone());
        jsonwebtoken::encode(&header, &claims, &self.encoding)
            .map_err(|e| OAuthError::Token(format!("DPoP proof: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_are_fresh_and_bound() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof(
                "POST",
                "https://rs.example/mcp?x=1",
                Some("tok"),
                Some("n1"),
            )
            .unwrap();
        let again = key
            .proof("POST", "https://rs.example/mcp", Some("tok"), None)
            .unwrap();
        assert_ne!(proof, again);
        let header = jsonwebtoken::decode_header(&proof).unwrap();
        assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
        let jwk = header.jwk.expect("public key in the header");
        let decoding = jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap();
        let mut validation = jsonwebtoken::Validation::new(Algorithm::ES256);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        let claims = jsonwebtoken::decode::<serde_json::Value>(&proof, &decoding, &validation)
            .unwrap()
            .claims;
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://rs.example/mcp");
        assert_eq!(claims["nonce"], "n1");
        // RFC 9449 §4.2: base64url of the token's SHA-256.
        assert_eq!(claims["ath"], "GnZ0607njffhrEOak8P6jjyUV4TU3sn9jjARc4svHWI");
    }
}
