//! Answering what servers say: a 401 or a 403 `insufficient_scope`
//! challenge, signing in ahead of time, and forgetting.

use mcp_http::client::Challenge;

use super::challenge::BearerChallenge;
use super::store::Credentials;
use super::{OAuthClient, OAuthError, Refusal, Session, check_resource};
use crate::common::now_secs;

impl OAuthClient {
    /// Takes the stored credentials of this server's issuer when their
    /// tokens are for this resource and still valid (or refreshable).
    pub(super) async fn adopt_stored(
        &self,
        session: &mut Session,
        bearer: &BearerChallenge,
    ) -> bool {
        if let Err(e) = self.discover(session, bearer).await {
            tracing::debug!("discovery failed: {e}");
            return false;
        }
        let issuer = session.issuer.clone().unwrap_or_default();
        let Ok(stored) = self.config.store.load(&issuer) else {
            return false;
        };
        let resource = self.resource_parameter(session);
        let usable = stored.tokens.as_ref().is_some_and(|t| {
            let fresh = t.expires_at.is_none_or(|at| at > now_secs());
            t.resource == resource && (fresh || t.refresh_token.is_some())
        });
        if usable {
            tracing::debug!(issuer, "using stored credentials");
            session.credentials = stored;
        }
        usable
    }

    pub(super) async fn answer_challenge(&self, challenge: Challenge) -> bool {
        let refused = Refusal {
            insufficient_scope: challenge.is_insufficient_scope(),
            www_authenticate: challenge.www_authenticate.as_deref(),
            headers: &challenge.headers,
        };
        match self.answer(refused).await {
            Ok(again) => again,
            Err(e) => {
                tracing::warn!("authorization failed: {e}");
                false
            }
        }
    }

    /// Makes sure the client holds credentials the server takes before
    /// anything else is sent: POSTs a JSON-RPC `ping` to the server with
    /// the credentials held, and answers a refusal the way a refused MCP
    /// request is answered (stored tokens, a refresh, or a sign-in),
    /// until the server takes them. A server that cannot be reached, or
    /// that asks for no authorization, leaves the client as it was.
    pub async fn prepare(&self) -> Result<(), OAuthError> {
        for _ in 0..3 {
            let response = match self.ping(true).await {
                Ok(response) => response,
                Err(e) => {
                    tracing::debug!("the server did not answer before signing in: {e}");
                    return Ok(());
                }
            };
            let www_authenticate = response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok());
            let insufficient_scope = response.status() == reqwest::StatusCode::FORBIDDEN
                && www_authenticate.is_some_and(|h| h.contains("insufficient_scope"));
            if response.status() != reqwest::StatusCode::UNAUTHORIZED && !insufficient_scope {
                return Ok(());
            }
            let refused = Refusal {
                insufficient_scope,
                www_authenticate,
                headers: response.headers(),
            };
            if !self.answer(refused).await? {
                return Err(OAuthError::Authorization(format!(
                    "{} refuses the credentials (HTTP {})",
                    self.server_url,
                    response.status()
                )));
            }
        }
        Ok(())
    }

    /// POSTs a JSON-RPC `ping` to the server, with the credentials held
    /// when `authorized`.
    pub(super) async fn ping(&self, authorized: bool) -> Result<reqwest::Response, reqwest::Error> {
        const PING: &str = r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#;
        let mut request = self
            .http
            .post(self.server_url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .body(PING);
        for (name, value) in &self.config.server_headers {
            request = request.header(name, value);
        }
        if authorized {
            let credentials = self
                .request_credentials(&reqwest::Method::POST, self.server_url.as_str())
                .await;
            for (name, value) in credentials {
                request = request.header(name, value);
            }
        }
        request.send().await
    }

    /// The challenge the server answers a request without credentials
    /// with; `None` when it asks for none.
    pub(super) async fn unauthorized_challenge(
        &self,
    ) -> Result<Option<BearerChallenge>, OAuthError> {
        let response = self
            .ping(false)
            .await
            .map_err(|e| OAuthError::Http(format!("POST {}: {e}", self.server_url)))?;
        if response.status() != reqwest::StatusCode::UNAUTHORIZED {
            return Ok(None);
        }
        Ok(Some(
            response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .and_then(BearerChallenge::parse)
                .unwrap_or_default(),
        ))
    }

    /// Signs in now, whatever is stored: the server is asked what it
    /// demands, and a new grant's tokens replace the stored ones.
    /// `Ok(false)` when the server asks for no authorization.
    pub async fn sign_in(&self) -> Result<bool, OAuthError> {
        let Some(challenge) = self.unauthorized_challenge().await? else {
            return Ok(false);
        };
        let mut session = self.session.lock().await;
        session.tried_store = true;
        session.credentials.tokens = None;
        self.run_flow(&mut session, &challenge, None).await?;
        Ok(true)
    }

    /// The issuer of the server's authorization server, found through its
    /// metadata.
    pub async fn issuer(&self) -> Result<String, OAuthError> {
        let challenge = self.unauthorized_challenge().await?.unwrap_or_default();
        let mut session = self.session.lock().await;
        self.discover(&mut session, &challenge).await?;
        Ok(session.issuer.clone().unwrap_or_default())
    }

    /// Forgets the tokens and registration kept for this server: those of
    /// its issuer, else (when the server cannot tell its issuer) those
    /// whose tokens are for it. The issuers forgotten.
    pub async fn forget(&self) -> Result<Vec<String>, OAuthError> {
        let issuers = match self.issuer().await {
            Ok(issuer) => vec![issuer],
            Err(e) => {
                tracing::debug!("no issuer for {}: {e}", self.server_url);
                self.config
                    .store
                    .list()?
                    .into_iter()
                    .filter(|(_, kept)| {
                        kept.tokens
                            .as_ref()
                            .and_then(|t| t.resource.as_deref())
                            .is_some_and(|r| check_resource(&self.server_url, r).is_ok())
                    })
                    .map(|(issuer, _)| issuer)
                    .collect()
            }
        };
        let mut forgotten = Vec::new();
        for issuer in issuers {
            if self.config.store.remove(&issuer)? {
                forgotten.push(issuer);
            }
        }
        self.session.lock().await.credentials = Credentials::default();
        Ok(forgotten)
    }

    /// Answers a refusal: `Ok(true)` when the request should be sent
    /// again with the credentials now held, `Ok(false)` when asking
    /// again is futile.
    pub(super) async fn answer(&self, challenge: Refusal<'_>) -> Result<bool, OAuthError> {
        // The resource server wants its nonce in the proofs: send again.
        let nonce = challenge
            .headers
            .get(super::dpop::NONCE_HEADER)
            .and_then(|v| v.to_str().ok());
        let asks_nonce = challenge
            .www_authenticate
            .is_some_and(|h| h.contains("use_dpop_nonce"));
        if let (Some(nonce), true) = (nonce, asks_nonce) {
            let mut nonces = self.nonces();
            if nonces.resource.as_deref() != Some(nonce) {
                nonces.resource = Some(nonce.to_owned());
                return Ok(true);
            }
        }
        let bearer = challenge
            .www_authenticate
            .and_then(BearerChallenge::parse)
            .unwrap_or_default();
        let mut session = self.session.lock().await;
        let scopes = if challenge.insufficient_scope {
            session.step_ups += 1;
            if session.step_ups > self.config.max_step_ups {
                tracing::warn!(
                    "still refused for scope after {} step-ups",
                    self.config.max_step_ups
                );
                return Ok(false);
            }
            // What was granted (or asked for), plus what the server asks
            // for now; nothing new to ask for means asking again is futile.
            let mut scopes: Vec<String> = session
                .credentials
                .tokens
                .as_ref()
                .and_then(|t| t.scope.clone())
                .map(|s| s.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_else(|| session.requested.clone());
            let wanted = bearer.scopes();
            if !wanted.is_empty() && wanted.iter().all(|s| scopes.contains(s)) {
                tracing::warn!(
                    "refused for scope {:?}, which was already granted",
                    bearer.scope
                );
                return Ok(false);
            }
            for scope in wanted {
                if !scopes.contains(&scope) {
                    scopes.push(scope);
                }
            }
            Some(scopes)
        } else {
            // Tokens kept from an earlier run, for this resource and not
            // expired: try them first (once).
            if session.credentials.tokens.is_none() && !session.tried_store {
                session.tried_store = true;
                if self.adopt_stored(&mut session, &bearer).await {
                    return Ok(true);
                }
            }
            let has_refresh = session
                .credentials
                .tokens
                .as_ref()
                .is_some_and(|t| t.refresh_token.is_some());
            if has_refresh && session.server.is_some() {
                match self.refresh(&mut session).await {
                    Ok(()) => return Ok(true),
                    Err(e) => tracing::debug!("refresh failed, authorizing again: {e}"),
                }
            }
            session.credentials.tokens = None;
            None
        };
        self.run_flow(&mut session, &bearer, scopes).await?;
        Ok(true)
    }
}
