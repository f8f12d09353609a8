//! Client authentication at the token endpoint: `none`,
//! `client_secret_basic`, `client_secret_post` and `private_key_jwt`
//! (RFC 7523).

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::HeaderMap;
use http::header::AUTHORIZATION;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};

use super::config::TokenEndpointAuthMethod;
use super::store::ClientRecord;
use super::{AuthorizationServer, OAuthError, util};

/// Signature algorithms accepted in client assertions.
const ASSERTION_ALGS: &[Algorithm] = &[
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::RS256,
    Algorithm::PS256,
    Algorithm::EdDSA,
];

/// Their names, as advertised in the metadata.
pub(super) const ASSERTION_ALGS_NAMES: &[&str] = &["ES256", "ES384", "RS256", "PS256", "EdDSA"];

const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The client's credentials as presented.
enum Presented {
    Basic { id: String, secret: String },
    Post { id: String, secret: String },
    Assertion { id: Option<String>, jwt: String },
    Public { id: String },
}

fn percent_decode(s: &str) -> String {
    form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

fn presented(headers: &HeaderMap, form: &HashMap<String, String>) -> Result<Presented, OAuthError> {
    let mut found = Vec::new();
    if let Some(h) = headers.get(AUTHORIZATION) {
        let basic = h
            .to_str()
            .ok()
            .and_then(|v| {
                v.strip_prefix("Basic ")
                    .or_else(|| v.strip_prefix("basic "))
            })
            .and_then(|b| STANDARD.decode(b.trim()).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|s| {
                s.split_once(':')
                    .map(|(i, p)| (percent_decode(i), percent_decode(p)))
            });
        match basic {
            Some((id, secret)) => found.push(Presented::Basic { id, secret }),
            None => {
                return Err(OAuthError::invalid_client(
                    "malformed Authorization header",
                    true,
                ));
            }
        }
    }
    if let Some(secret) = form.get("client_secret") {
        let id = form
            .get("client_id")
            .cloned()
            .ok_or_else(|| OAuthError::bad("invalid_request", "client_secret without client_id"))?;
        found.push(Presented::Post {
            id,
            secret: secret.clone(),
        });
    }
    if let Some(jwt) = form.get("client_assertion") {
        if form.get("client_assertion_type").map(String::as_str) != Some(JWT_BEARER) {
            return Err(OAuthError::bad(
                "invalid_request",
                "unsupported client_assertion_type",
            ));
        }
        found.push(Presented::Assertion {
            id: form.get("client_id").cloned(),
            jwt: jwt.clone(),
        });
    }
    match found.len() {
        0 => form
            .get("client_id")
            .map(|id| Presented::Public { id: id.clone() })
            .ok_or_else(|| OAuthError::invalid_client("no client authentication", false)),
        1 => Ok(found.remove(0)),
        _ => Err(OAuthError::bad(
            "invalid_request",
            "more than one client authentication method",
        )),
    }
}

impl AuthorizationServer {
    /// Authenticates the client of a token request.
    pub(super) async fn authenticate_client(
        &self,
        headers: &HeaderMap,
        form: &HashMap<String, String>,
    ) -> Result<ClientRecord, OAuthError> {
        let p = presented(headers, form)?;
        let (id, method, basic) = match &p {
            Presented::Basic { id, .. } => (
                Some(id.clone()),
                TokenEndpointAuthMethod::ClientSecretBasic,
                true,
            ),
            Presented::Post { id, .. } => (
                Some(id.clone()),
                TokenEndpointAuthMethod::ClientSecretPost,
                false,
            ),
            Presented::Assertion { id, .. } => {
                (id.clone(), TokenEndpointAuthMethod::PrivateKeyJwt, false)
            }
            Presented::Public { id } => (Some(id.clone()), TokenEndpointAuthMethod::None, false),
        };
        let id = match (&p, id) {
            (_, Some(id)) => id,
            (Presented::Assertion { jwt, .. }, None) => unverified_sub(jwt).ok_or_else(|| {
                OAuthError::invalid_client("the client assertion names no client", false)
            })?,
            _ => return Err(OAuthError::invalid_client("no client id", false)),
        };
        if let Some(body_id) = form.get("client_id")
            && body_id != &id
        {
            return Err(OAuthError::invalid_client(
                "client_id does not match the credentials",
                basic,
            ));
        }
        let client = match self.resolve_client(&id).await {
            Ok(Some(c)) => c,
            Ok(None) => {
                return Err(OAuthError::invalid_client(
                    "client authentication failed",
                    basic,
                ));
            }
            Err(e) => {
                tracing::debug!("authorization server: client metadata document: {e}");
                return Err(OAuthError::invalid_client(
                    "client metadata document not usable",
                    basic,
                ));
            }
        };
        if client.auth_method != method {
            return Err(OAuthError::invalid_client(
                format!(
                    "the client must authenticate with {}",
                    client.auth_method.as_str()
                ),
                basic,
            ));
        }
        match p {
            Presented::Basic { secret, .. } | Presented::Post { secret, .. } => {
                let ok = client
                    .secret_digest
                    .as_deref()
                    .is_some_and(|d| util::ct_eq(&util::digest(&secret), d));
                if !ok {
                    return Err(OAuthError::invalid_client(
                        "client authentication failed",
                        basic,
                    ));
                }
            }
            Presented::Assertion { jwt, .. } => self.verify_assertion(&client, &jwt).await?,
            Presented::Public { .. } => {}
        }
        Ok(client)
    }

    /// Verifies an RFC 7523 client assertion: signature by one of the
    /// client's keys, `iss` = `sub` = client id, `aud` the token endpoint
    /// or the issuer, `exp`, and a `jti` not seen before.
    async fn verify_assertion(&self, client: &ClientRecord, jwt: &str) -> Result<(), OAuthError> {
        let fail = |why: &str| {
            tracing::debug!("authorization server: client assertion rejected: {why}");
            OAuthError::invalid_client("invalid client assertion", false)
        };
        let header = jsonwebtoken::decode_header(jwt).map_err(|_| fail("header"))?;
        if !ASSERTION_ALGS.contains(&header.alg) {
            return Err(fail("algorithm"));
        }
        let jwks = self.client_jwks(client).await.map_err(|e| fail(&e))?;
        let set: JwkSet = serde_json::from_value(jwks).map_err(|_| fail("client JWK Set"))?;
        let candidates: Vec<&Jwk> = set
            .keys
            .iter()
            .filter(|k| header.kid.is_none() || k.common.key_id == header.kid)
            .collect();
        let mut validation = Validation::new(header.alg);
        validation.set_audience(&[self.token_endpoint(), self.issuer().to_owned()]);
        validation.set_issuer(&[&client.client_id]);
        validation.sub = Some(client.client_id.clone());
        validation.set_required_spec_claims(&["exp", "iss", "sub", "aud"]);
        validation.leeway = 30;
        let mut claims = None;
        for jwk in candidates {
            let Ok(key) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            if let Ok(data) = jsonwebtoken::decode::<serde_json::Value>(jwt, &key, &validation) {
                claims = Some(data.claims);
                break;
            }
        }
        let claims = claims.ok_or_else(|| fail("signature or claims"))?;
        let exp = claims
            .get("exp")
            .and_then(|v| v.as_i64())
            .ok_or_else(|| fail("exp"))?;
        if exp > util::now() + 3600 {
            return Err(fail("exp too far in the future"));
        }
        let jti = claims
            .get("jti")
            .and_then(|v| v.as_str())
            .ok_or_else(|| fail("no jti"))?;
        if !self.inner.store.use_jti(&client.client_id, jti, exp + 60)? {
            return Err(fail("jti replayed"));
        }
        Ok(())
    }
}

/// The `sub` of a JWT, unverified (only to find the client).
fn unverified_sub(jwt: &str) -> Option<String> {
    let payload = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v.get("sub")?.as_str().map(str::to_owned)
}
