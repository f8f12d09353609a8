//! Reading what an authorization server (or an identity provider)
//! answers a POST: its JSON on success, else the status and the body.

use serde::de::DeserializeOwned;

use super::OAuthError;

/// Sends `request`, a POST to `endpoint`, and reads its JSON answer. A
/// send that fails is an [`OAuthError::Http`]; a status other than
/// success (`HTTP 400: body`) or an answer that is not a `T` is the error
/// `refused` makes of the reason.
pub(super) async fn json_answer<T: DeserializeOwned>(
    request: reqwest::RequestBuilder,
    endpoint: &str,
    refused: impl Fn(String) -> OAuthError,
) -> Result<T, OAuthError> {
    let response = request
        .send()
        .await
        .map_err(|e| OAuthError::Http(format!("POST {endpoint}: {e}")))?;
    let status = response.status();
    if !status.is_success() {
        let text = response.text().await.unwrap_or_default();
        return Err(refused(format!("HTTP {status}: {text}")));
    }
    response.json().await.map_err(|e| refused(e.to_string()))
}
