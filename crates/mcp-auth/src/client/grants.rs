//! Obtaining and refreshing tokens: the authorization code with PKCE, an
//! identity assertion, client credentials and JWT bearer grants, the token
//! request itself (with DPoP where the server wants it), and the
//! credentials each request carries.

use std::sync::Arc;

use reqwest::header::HeaderValue;
use url::Url;

use super::answer::json_answer;
use super::discovery::AuthServerMetadata;
use super::dpop::DpopKey;
use super::store::Tokens;
use super::{
    CLIENT_ASSERTION_TYPE, Nonces, OAuthClient, OAuthError, Session, TokenResponse, check_iss,
};
use crate::common::now_secs;
use mcp_core::sync::MutexExt as _;

impl OAuthClient {
    /// Authorization code with PKCE: the user agent visits the
    /// authorization URL; the code becomes tokens.
    pub(super) async fn authorization_code(
        &self,
        session: &Session,
        server: &AuthServerMetadata,
        scopes: &[String],
        resource: Option<&str>,
    ) -> Result<Tokens, OAuthError> {
        let endpoint = server
            .authorization_endpoint
            .as_deref()
            .ok_or_else(|| OAuthError::Discovery("no authorization endpoint".into()))?;
        let client_id = session
            .credentials
            .registration
            .as_ref()
            .map(|r| r.client_id.clone())
            .unwrap_or_default();
        let pkce = super::pkce::Pkce::new();
        let state = super::pkce::random_token();
        let redirect_uri = self.config.user_agent.redirect_uri();
        let mut url = Url::parse(endpoint)
            .map_err(|e| OAuthError::Discovery(format!("authorization endpoint: {e}")))?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state);
            if !scopes.is_empty() {
                query.append_pair("scope", &scopes.join(" "));
            }
            if let Some(resource) = resource {
                query.append_pair("resource", resource);
            }
        }
        let callback = self.config.user_agent.authorize(url).await?;
        if let Some(error) = callback.get("error") {
            let description = callback
                .get("error_description")
                .cloned()
                .unwrap_or_default();
            return Err(OAuthError::Authorization(format!("{error} {description}")));
        }
        if callback.get("state") != Some(&state) {
            return Err(OAuthError::Authorization("the state does not match".into()));
        }
        check_iss(server, callback.get("iss").map(String::as_str))?;
        let code = callback
            .get("code")
            .cloned()
            .ok_or_else(|| OAuthError::Authorization("no code in the redirect".into()))?;
        let mut form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", pkce.verifier),
        ];
        if let Some(resource) = resource {
            form.push(("resource", resource.to_owned()));
        }
        self.token_request(session, server, form).await
    }

    /// Exchanges the identity provider's ID token there for an identity
    /// assertion (ID-JAG) addressed to `issuer` for `resource` (RFC 8693).
    pub(super) async fn identity_assertion(
        &self,
        endpoint: &str,
        id_token: &str,
        idp_client_id: Option<&str>,
        issuer: &str,
        resource: Option<&str>,
        scopes: &[String],
    ) -> Result<String, OAuthError> {
        let mut form = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange".to_owned(),
            ),
            ("subject_token", id_token.to_owned()),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token".to_owned(),
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag".to_owned(),
            ),
            ("audience", issuer.to_owned()),
        ];
        if let Some(resource) = resource {
            form.push(("resource", resource.to_owned()));
        }
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        if let Some(client_id) = idp_client_id {
            form.push(("client_id", client_id.to_owned()));
        }
        let request = self.http.post(endpoint).form(&form);
        let answer: TokenResponse = json_answer(request, endpoint, |reason| {
            OAuthError::Token(format!("identity provider: {reason}"))
        })
        .await?;
        Ok(answer.access_token)
    }

    /// A signed client assertion (RFC 7523) for `private_key_jwt`.
    pub(super) fn client_assertion(
        &self,
        client_id: &str,
        audience: &str,
    ) -> Result<String, OAuthError> {
        let key =
            self.config.client_key.as_ref().ok_or_else(|| {
                OAuthError::Registration("private_key_jwt needs a client key".into())
            })?;
        let (algorithm, encoding) = match key.algorithm.as_str() {
            "ES256" => (
                jsonwebtoken::Algorithm::ES256,
                jsonwebtoken::EncodingKey::from_ec_pem(key.pem.as_bytes()),
            ),
            "RS256" => (
                jsonwebtoken::Algorithm::RS256,
                jsonwebtoken::EncodingKey::from_rsa_pem(key.pem.as_bytes()),
            ),
            other => {
                return Err(OAuthError::Registration(format!(
                    "unsupported client key algorithm {other}"
                )));
            }
        };
        let encoding =
            encoding.map_err(|e| OAuthError::Registration(format!("client key: {e}")))?;
        let now = now_secs();
        let claims = serde_json::json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + 60,
            "jti": super::pkce::random_token(),
        });
        jsonwebtoken::encode(&jsonwebtoken::Header::new(algorithm), &claims, &encoding)
            .map_err(|e| OAuthError::Registration(format!("signing the client assertion: {e}")))
    }

    /// A token endpoint request with the client's authentication.
    pub(super) async fn token_request(
        &self,
        session: &Session,
        server: &AuthServerMetadata,
        mut form: Vec<(&'static str, String)>,
    ) -> Result<Tokens, OAuthError> {
        let endpoint = server
            .token_endpoint
            .as_deref()
            .ok_or_else(|| OAuthError::Discovery("no token endpoint".into()))?;
        let registration = session
            .credentials
            .registration
            .clone()
            .ok_or_else(|| OAuthError::Registration("not registered".into()))?;
        let mut request = self.http.post(endpoint);
        match (
            registration.auth_method.as_str(),
            &registration.client_secret,
        ) {
            ("client_secret_basic", Some(secret)) => {
                let value = crate::common::basic_credentials(&registration.client_id, secret);
                request = request.header(reqwest::header::AUTHORIZATION, value);
            }
            ("client_secret_post", Some(secret)) => {
                form.push(("client_id", registration.client_id.clone()));
                form.push(("client_secret", secret.clone()));
            }
            ("private_key_jwt", _) => {
                let assertion = self.client_assertion(&registration.client_id, &server.issuer)?;
                form.push(("client_id", registration.client_id.clone()));
                form.push(("client_assertion_type", CLIENT_ASSERTION_TYPE.to_owned()));
                form.push(("client_assertion", assertion));
            }
            _ => form.push(("client_id", registration.client_id.clone())),
        }
        let resource = form
            .iter()
            .find(|(k, _)| *k == "resource")
            .map(|(_, v)| v.clone());
        let dpop = self.dpop_key(server)?;
        let mut nonce_retried = false;
        let answer: TokenResponse = loop {
            let mut attempt = request
                .try_clone()
                .ok_or_else(|| OAuthError::Token("the token request cannot be repeated".into()))?
                .form(&form);
            if let Some(key) = &dpop {
                let nonce = self.nonces().server.clone();
                let proof = key.proof("POST", endpoint, None, nonce.as_deref())?;
                attempt = attempt.header(super::dpop::DPOP_HEADER, proof);
            }
            let response = attempt
                .send()
                .await
                .map_err(|e| OAuthError::Http(format!("POST {endpoint}: {e}")))?;
            let status = response.status();
            if status.is_success() {
                break response
                    .json()
                    .await
                    .map_err(|e| OAuthError::Token(e.to_string()))?;
            }
            let nonce = response
                .headers()
                .get(super::dpop::NONCE_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let text = response.text().await.unwrap_or_default();
            // The authorization server wants its nonce in the proof: once.
            if let (Some(nonce), Some(_), false) = (nonce, &dpop, nonce_retried)
                && text.contains("use_dpop_nonce")
            {
                self.nonces().server = Some(nonce);
                nonce_retried = true;
                continue;
            }
            return Err(OAuthError::Token(format!("HTTP {status}: {text}")));
        };
        let token_type = answer.token_type.clone().unwrap_or_else(|| "Bearer".into());
        let acceptable = token_type.eq_ignore_ascii_case("bearer")
            || (dpop.is_some() && token_type.eq_ignore_ascii_case("dpop"));
        if !acceptable {
            return Err(OAuthError::Token(format!(
                "unsupported token type {token_type:?}"
            )));
        }
        let previous_refresh = session
            .credentials
            .tokens
            .as_ref()
            .and_then(|t| t.refresh_token.clone());
        Ok(Tokens {
            access_token: answer.access_token,
            // A refresh that returns no new refresh token keeps the old one.
            refresh_token: answer.refresh_token.or(previous_refresh),
            expires_at: answer.expires_in.map(|s| now_secs() + s),
            scope: answer.scope,
            resource,
            token_type: Some(token_type),
        })
    }

    /// The DPoP key, made when first needed, where the authorization
    /// server binds tokens to keys (it lists ES256 for DPoP).
    pub(super) fn dpop_key(
        &self,
        server: &AuthServerMetadata,
    ) -> Result<Option<Arc<DpopKey>>, OAuthError> {
        let offers = server
            .dpop_signing_alg_values_supported
            .as_ref()
            .is_some_and(|algs| algs.iter().any(|a| a == "ES256"));
        if !offers {
            return Ok(None);
        }
        let mut slot = self.dpop.locked();
        if slot.is_none() {
            *slot = Some(Arc::new(DpopKey::generate()?));
        }
        Ok(slot.clone())
    }

    pub(super) fn nonces(&self) -> std::sync::MutexGuard<'_, Nonces> {
        self.nonces.locked()
    }

    /// Trades the refresh token for new tokens.
    pub(super) async fn refresh(&self, session: &mut Session) -> Result<(), OAuthError> {
        let tokens = session
            .credentials
            .tokens
            .clone()
            .ok_or_else(|| OAuthError::Token("nothing to refresh".into()))?;
        let refresh_token = tokens
            .refresh_token
            .clone()
            .ok_or_else(|| OAuthError::Token("no refresh token".into()))?;
        let server = session.server.clone().unwrap_or_default();
        let mut form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token),
        ];
        if let Some(resource) = tokens.resource.clone() {
            form.push(("resource", resource));
        }
        let fresh = self.token_request(session, &server, form).await?;
        session.credentials.tokens = Some(fresh);
        let issuer = session.issuer.clone().unwrap_or_default();
        self.config.store.save(&issuer, &session.credentials)
    }

    /// The headers that authorize a request: `Authorization` with the
    /// token, and for a DPoP-bound token a fresh proof for this request.
    pub(super) async fn request_credentials(
        &self,
        method: &reqwest::Method,
        url: &str,
    ) -> Vec<(reqwest::header::HeaderName, HeaderValue)> {
        let mut session = self.session.lock().await;
        let Some(tokens) = &session.credentials.tokens else {
            return Vec::new();
        };
        let expiring = tokens
            .expires_at
            .is_some_and(|at| at <= now_secs() + self.config.refresh_margin.as_secs());
        if expiring
            && tokens.refresh_token.is_some()
            && session.server.is_some()
            && let Err(e) = self.refresh(&mut session).await
        {
            tracing::debug!("refresh before expiry failed: {e}");
        }
        let Some(tokens) = &session.credentials.tokens else {
            return Vec::new();
        };
        let bound = tokens
            .token_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("dpop"));
        let key = self.dpop.locked().clone();
        let access = &tokens.access_token;
        match (bound, key) {
            (true, Some(key)) => {
                let nonce = self.nonces().resource.clone();
                let proof = key.proof(method.as_str(), url, Some(access), nonce.as_deref());
                let header = HeaderValue::from_str(&format!("DPoP {access}"));
                match (proof.map(|p| HeaderValue::from_str(&p)), header) {
                    (Ok(Ok(proof)), Ok(header)) => vec![
                        (reqwest::header::AUTHORIZATION, header),
                        (reqwest::header::HeaderName::from_static("dpop"), proof),
                    ],
                    _ => Vec::new(),
                }
            }
            _ => HeaderValue::from_str(&format!("Bearer {access}"))
                .map(|bearer| vec![(reqwest::header::AUTHORIZATION, bearer)])
                .unwrap_or_default(),
        }
    }
}
