//! Registering with an authorization server: pre-registered, a client ID
//! metadata document, or dynamic registration.

use super::answer::json_answer;
use super::discovery::AuthServerMetadata;
use super::store::Registration;
use super::{Grant, JWT_BEARER, OAuthClient, OAuthError, RegistrationResponse};

impl OAuthClient {
    /// Registers: a registration given beforehand, a client metadata
    /// document, or dynamic registration, in that order.
    pub(super) async fn register(
        &self,
        server: &AuthServerMetadata,
    ) -> Result<Registration, OAuthError> {
        if let Some(registration) = &self.config.registration {
            return Ok(registration.clone());
        }
        if let Some(url) = &self.config.client_metadata_url
            && server.client_id_metadata_document_supported == Some(true)
        {
            return Ok(Registration::new(url.clone(), None, "none"));
        }
        let Some(endpoint) = &server.registration_endpoint else {
            return Err(OAuthError::Registration(
                "the authorization server offers no registration and no client is configured"
                    .into(),
            ));
        };
        let grant_types = match self.config.grant {
            Grant::AuthorizationCode => vec!["authorization_code", "refresh_token"],
            Grant::ClientCredentials => vec!["client_credentials"],
            Grant::JwtBearer { .. } | Grant::IdentityAssertion { .. } => vec![JWT_BEARER],
        };
        let redirect_uri = self.config.user_agent.redirect_uri();
        let body = serde_json::json!({
            "client_name": self.config.client_name,
            "redirect_uris": [&redirect_uri],
            "grant_types": grant_types,
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": "native",
        });
        let request = self.http.post(endpoint).json(&body);
        let registered: RegistrationResponse =
            json_answer(request, endpoint, OAuthError::Registration).await?;
        let method = registered.token_endpoint_auth_method.unwrap_or_else(|| {
            if registered.client_secret.is_some() {
                "client_secret_basic".to_owned()
            } else {
                "none".to_owned()
            }
        });
        let redirect_uris = match grant_types.contains(&"authorization_code") {
            true => vec![redirect_uri],
            false => Vec::new(),
        };
        Ok(
            Registration::new(registered.client_id, registered.client_secret, method)
                .with_redirect_uris(redirect_uris),
        )
    }
}
