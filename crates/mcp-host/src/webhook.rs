//! An operator's HTTP endpoint the host posts JSON to (guard hooks, the
//! `http` approver), with the headers the settings give, reading a
//! bounded answer.

use std::collections::BTreeMap;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

/// The most an endpoint's answer may hold.
const MAX_ANSWER_BYTES: usize = 16 << 20;

/// An endpoint posted to.
#[derive(Debug)]
pub(crate) struct Webhook {
    url: reqwest::Url,
    headers: HeaderMap,
    client: reqwest::Client,
}

impl Webhook {
    /// `url` (http or https), posted with `headers`; an error says which
    /// cannot be used.
    pub(crate) fn new(url: &str, headers: &BTreeMap<String, String>) -> Result<Webhook, String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("url: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("url {url:?} is not http(s)"));
        }
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let header =
                HeaderName::try_from(name.as_str()).map_err(|e| format!("header {name:?}: {e}"))?;
            let value =
                HeaderValue::try_from(value.as_str()).map_err(|e| format!("header {name}: {e}"))?;
            map.insert(header, value);
        }
        Ok(Webhook {
            url: parsed,
            headers: map,
            client: reqwest::Client::new(),
        })
    }

    /// Posts `body`; the answer's status and text, or why there is none.
    pub(crate) async fn post(&self, body: &Value) -> Result<(reqwest::StatusCode, String), String> {
        let url = &self.url;
        let mut response = self
            .client
            .post(url.clone())
            .headers(self.headers.clone())
            .json(body)
            .send()
            .await
            .map_err(|e| format!("{url} cannot be reached: {e}"))?;
        let status = response.status();
        let mut answer = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("{url}'s answer cannot be read: {e}"))?
        {
            if answer.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(format!("{url} answered more than {MAX_ANSWER_BYTES} bytes"));
            }
            answer.extend_from_slice(&chunk);
        }
        let text = String::from_utf8(answer).map_err(|_| format!("{url}'s answer is not UTF-8"))?;
        Ok((status, text))
    }

    /// The endpoint, for messages.
    pub(crate) fn url(&self) -> &reqwest::Url {
        &self.url
    }
}
