//! The authorization flow: discovery of the authorization server, the
//! choice of a registration, and the grant that follows.

use url::Url;

use super::challenge::BearerChallenge;
use super::discovery::{AuthServerMetadata, discover_auth_server, discover_resource};
use super::store::Credentials;
use super::{Grant, JWT_BEARER, OAuthClient, OAuthError, OFFLINE_ACCESS, Session, check_resource};

impl OAuthClient {
    /// Discovery, registration and a grant; the tokens end up in the
    /// session and the store.
    pub(super) async fn run_flow(
        &self,
        session: &mut Session,
        challenge: &BearerChallenge,
        scopes: Option<Vec<String>>,
    ) -> Result<(), OAuthError> {
        self.discover(session, challenge).await?;
        let issuer = session.issuer.clone().unwrap_or_default();
        let server = session.server.clone().unwrap_or_default();
        if session.credentials.registration.is_none() {
            let stored = self.config.store.load(&issuer)?;
            session.credentials = stored;
        }
        if session.credentials.registration.is_none() {
            let registration = self.register(&server).await?;
            session.credentials.registration = Some(registration);
            self.config.store.save(&issuer, &session.credentials)?;
        } else if self.registered_elsewhere(session) {
            // Registered for another redirect URI (an earlier run's
            // listener on another port): register again for this one,
            // keeping the old registration if that fails.
            match self.register(&server).await {
                Ok(registration) => {
                    tracing::debug!("registered again for a new redirect URI");
                    session.credentials.registration = Some(registration);
                    self.config.store.save(&issuer, &session.credentials)?;
                }
                Err(e) => tracing::warn!("could not register for a new redirect URI: {e}"),
            }
        }
        // The specification's strategy: the challenge's scope, else the
        // resource's scopes_supported, else none; plus offline_access where
        // the authorization server offers it (a refresh token).
        let mut scopes = self
            .config
            .scopes
            .clone()
            .or(scopes)
            .or_else(|| (!challenge.scopes().is_empty()).then(|| challenge.scopes()))
            .or_else(|| {
                session
                    .resource
                    .as_ref()
                    .map(|r| r.scopes_supported.clone())
                    .filter(|scopes| !scopes.is_empty())
            })
            .unwrap_or_default();
        let offers_offline = server
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|s| s == OFFLINE_ACCESS));
        if self.config.grant == Grant::AuthorizationCode
            && offers_offline
            && !scopes.iter().any(|s| s == OFFLINE_ACCESS)
        {
            scopes.push(OFFLINE_ACCESS.to_owned());
        }
        session.requested = scopes.clone();
        let resource = self.resource_parameter(session);
        let tokens = match &self.config.grant {
            Grant::AuthorizationCode => {
                self.authorization_code(session, &server, &scopes, resource.as_deref())
                    .await?
            }
            Grant::ClientCredentials => {
                let mut form = vec![("grant_type", "client_credentials".to_owned())];
                if !scopes.is_empty() {
                    form.push(("scope", scopes.join(" ")));
                }
                if let Some(resource) = &resource {
                    form.push(("resource", resource.clone()));
                }
                self.token_request(session, &server, form).await?
            }
            Grant::JwtBearer { assertion } => {
                let mut form = vec![
                    ("grant_type", JWT_BEARER.to_owned()),
                    ("assertion", assertion.clone()),
                ];
                if let Some(resource) = &resource {
                    form.push(("resource", resource.clone()));
                }
                self.token_request(session, &server, form).await?
            }
            Grant::IdentityAssertion {
                idp_token_endpoint,
                id_token,
                idp_client_id,
            } => {
                let assertion = self
                    .identity_assertion(
                        idp_token_endpoint,
                        id_token,
                        idp_client_id.as_deref(),
                        &issuer,
                        resource.as_deref(),
                        &scopes,
                    )
                    .await?;
                let form = vec![
                    ("grant_type", JWT_BEARER.to_owned()),
                    ("assertion", assertion),
                ];
                self.token_request(session, &server, form).await?
            }
        };
        session.credentials.tokens = Some(tokens);
        self.config.store.save(&issuer, &session.credentials)?;
        Ok(())
    }

    /// Whether the registration held was made for a redirect URI other
    /// than the user agent's (only dynamic registrations for the
    /// authorization code grant are made again).
    pub(super) fn registered_elsewhere(&self, session: &Session) -> bool {
        let Some(registration) = &session.credentials.registration else {
            return false;
        };
        self.config.registration.is_none()
            && self.config.grant == Grant::AuthorizationCode
            && Some(&registration.client_id) != self.config.client_metadata_url.as_ref()
            && !registration.fits_redirect_uri(&self.config.user_agent.redirect_uri())
    }

    /// The `resource` parameter: the protected resource metadata's
    /// identifier verbatim, else the server URL.
    pub(super) fn resource_parameter(&self, session: &Session) -> Option<String> {
        match &session.resource {
            Some(prm) => Some(prm.resource.clone()),
            None => Some(self.server_url.to_string()),
        }
    }

    /// Finds the protected resource and authorization server metadata.
    pub(super) async fn discover(
        &self,
        session: &mut Session,
        challenge: &BearerChallenge,
    ) -> Result<(), OAuthError> {
        let resource = discover_resource(
            &self.http,
            &self.server_url,
            challenge.resource_metadata.as_deref(),
        )
        .await?;
        let (issuer, server) = match &resource {
            Some(prm) => {
                check_resource(&self.server_url, &prm.resource)?;
                let issuer = prm.authorization_servers.first().cloned().ok_or_else(|| {
                    OAuthError::Discovery("the resource names no authorization server".into())
                })?;
                let server = match discover_auth_server(&self.http, &issuer).await? {
                    Some(found) => found,
                    None => {
                        let base = Url::parse(&issuer)
                            .map_err(|e| OAuthError::Discovery(format!("{issuer:?}: {e}")))?;
                        AuthServerMetadata::default_endpoints(&base)
                    }
                };
                (issuer, server)
            }
            // 2025-03-26: the MCP server's origin is the authorization
            // server, with metadata or the default endpoints.
            None => {
                let base = super::discovery::origin(&self.server_url);
                let server = match discover_auth_server(&self.http, &base).await? {
                    Some(found) => found,
                    None => AuthServerMetadata::default_endpoints(&self.server_url),
                };
                (base, server)
            }
        };
        if session.issuer.as_deref().is_some_and(|old| old != issuer) {
            // The resource moved to another authorization server.
            session.credentials = Credentials::default();
        }
        session.resource = resource;
        session.issuer = Some(issuer);
        session.server = Some(server);
        Ok(())
    }
}
