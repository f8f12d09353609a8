//! The `http` approver: an operator's endpoint asked to approve.
//!
//! ```toml
//! [guard]
//! approvers = ["client", "http"]
//!
//! [guard.http]
//! url = "https://ops.example.com/mcp/approve"
//! headers = { Authorization = "Bearer ..." }
//! ```
//!
//! Each request the policy marks `ask` is posted as one JSON object: the
//! [`ApprovalRequest`] (`caller`, `client`, `server`, `server_identity`,
//! `kind`, `name`, `description`, `annotations`, `arguments`, `reason`,
//! `changes`), plus `text`, the request described in words. The endpoint
//! answers when a person has decided (the host waits up to
//! `[guard] ask_timeout`), with `{"decision": "allow-once" |
//! "allow-session" | "allow-always" | "deny", "arguments": {...}}`
//! (`arguments`, optional, replace the call's). Any other status than 200,
//! or an answer that is not such an object, counts as not reached: the
//! next approver is tried.

use std::collections::BTreeMap;

use mcp_core::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Approval, ApprovalRequest, Approver, Scope, allowed_for};
use crate::webhook::Webhook;

/// `[guard.http]`: where the `http` approver posts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct HttpApproverSettings {
    /// The endpoint.
    pub url: String,
    /// Headers of each POST.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

/// The `http` approver.
#[derive(Debug)]
pub struct HttpApprover {
    webhook: Webhook,
}

impl HttpApprover {
    /// The approver `settings` describe; an error names what cannot be
    /// used.
    pub fn new(settings: &HttpApproverSettings) -> Result<HttpApprover, String> {
        let webhook = Webhook::new(&settings.url, &settings.headers)
            .map_err(|e| format!("guard.http: {e}"))?;
        Ok(HttpApprover { webhook })
    }

    async fn post(&self, request: &ApprovalRequest) -> Result<Approval, String> {
        let mut body = serde_json::to_value(request).map_err(|e| e.to_string())?;
        body["text"] = request.describe().into();
        let url = self.webhook.url();
        match self.webhook.post(&body).await? {
            (reqwest::StatusCode::OK, answer) => {
                let answer: Value = serde_json::from_str(&answer)
                    .map_err(|e| format!("{url}'s answer is not JSON: {e}"))?;
                read(&answer)
            }
            (status, _) => Err(format!("{url} answered {status}")),
        }
    }
}

/// The approval an endpoint's answer gives.
fn read(answer: &Value) -> Result<Approval, String> {
    let decision = answer
        .get("decision")
        .and_then(Value::as_str)
        .ok_or("the answer names no decision")?;
    let arguments = match answer.get("arguments") {
        None | Some(Value::Null) => None,
        Some(Value::Object(arguments)) => Some(arguments.clone()),
        Some(_) => return Err("the answer's arguments are not an object".into()),
    };
    Ok(match allowed_for(Some(decision))? {
        Some(scope) => Approval {
            allowed: true,
            scope,
            arguments,
        },
        None => Approval {
            allowed: false,
            scope: Scope::Once,
            arguments: None,
        },
    })
}

impl Approver for HttpApprover {
    fn name(&self) -> &str {
        "http"
    }

    fn reachable(&self) -> bool {
        true
    }

    fn ask<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Result<Approval, String>> {
        Box::pin(self.post(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_read_strictly() {
        let once = read(&json!({"decision": "allow-once", "arguments": {"a": 1}})).unwrap();
        assert!(once.allowed);
        assert_eq!(once.scope, Scope::Once);
        assert_eq!(once.arguments.unwrap()["a"], 1);
        assert!(!read(&json!({"decision": "deny"})).unwrap().allowed);
        assert_eq!(
            read(&json!({"decision": "allow-always"})).unwrap().scope,
            Scope::Always
        );
        assert!(read(&json!({})).is_err());
        assert!(read(&json!({"decision": "sure"})).is_err());
        assert!(read(&json!({"decision": "allow-once", "arguments": "{}"})).is_err());
    }

    #[test]
    fn settings_that_cannot_be_used_are_refused() {
        let new = |url: &str| {
            HttpApprover::new(&HttpApproverSettings {
                url: url.into(),
                headers: BTreeMap::new(),
            })
        };
        assert!(new("http://127.0.0.1:9/approve").is_ok());
        assert!(new("ftp://x/").unwrap_err().contains("not http(s)"));
        assert!(new("not a url").unwrap_err().contains("guard.http: url"));
    }
}
