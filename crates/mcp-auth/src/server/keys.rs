//! ES256 signing keys: generated with `ring`, kept in SQLite, published as
//! a JWK Set, used to sign RFC 9068 access tokens.

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde::Serialize;

use super::AuthServerError;

/// One key pair.
pub(crate) struct SigningKey {
    pub kid: String,
    pkcs8: Vec<u8>,
    x: String,
    y: String,
}

impl SigningKey {
    /// A fresh P-256 key pair.
    pub fn generate() -> Result<Self, AuthServerError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| AuthServerError::Key("key generation failed".into()))?;
        Self::from_pkcs8(None, pkcs8.as_ref().to_vec())
    }

    /// A key from its PKCS#8 document; the kid is the JWK thumbprint
    /// (RFC 7638) unless given.
    pub fn from_pkcs8(kid: Option<String>, pkcs8: Vec<u8>) -> Result<Self, AuthServerError> {
        let rng = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &rng)
            .map_err(|_| AuthServerError::Key("invalid stored key".into()))?;
        let (x, y) = crate::common::p256_coordinates(pair.public_key().as_ref())
            .ok_or_else(|| AuthServerError::Key("unexpected public key encoding".into()))?;
        let kid = kid.unwrap_or_else(|| {
            let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
            crate::common::sha256_base64url(&canonical)
        });
        Ok(SigningKey { kid, pkcs8, x, y })
    }

    /// The PKCS#8 document, for storage.
    pub fn pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }

    /// The public key as a JWK.
    pub fn public_jwk(&self) -> serde_json::Value {
        serde_json::json!({
            "kty": "EC",
            "crv": "P-256",
            "x": self.x,
            "y": self.y,
            "kid": self.kid,
            "use": "sig",
            "alg": "ES256",
        })
    }

    /// Signs `claims` as a JWT of type `typ`.
    pub fn sign<T: Serialize>(&self, typ: &str, claims: &T) -> Result<String, AuthServerError> {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some(typ.to_owned());
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ec_der(&self.pkcs8))
            .map_err(|e| AuthServerError::Key(format!("signing: {e}")))
    }
}
