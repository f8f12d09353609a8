//! The console as a person who reviews what servers ask the host's model
//! (`[sampling] approve = "ask"`): a request waits on the approvals page
//! ([`crate::queue`], which shows and answers it) as JSON a person may
//! edit before sending it, or refuse; then the model's reply waits there
//! until the person gives it to the server or refuses it. Asked before
//! the terminal, while a browser has the page open.

use std::time::SystemTime;

use mcp_core::BoxFuture;
use mcp_host::sampler::{Reviewed, Reviewer};
use mcp_schema::{CreateMessageRequestParams, CreateMessageResult};

use crate::approvals::{ConsoleApprover, Reviewing, Sampling};

impl Reviewer for ConsoleApprover {
    fn name(&self) -> &str {
        crate::approvals::NAME
    }

    fn reachable(&self) -> bool {
        self.watched()
    }

    fn review_request<'a>(
        &'a self,
        server: &'a str,
        model: &'a str,
        request: &'a CreateMessageRequestParams,
    ) -> BoxFuture<'a, Result<Reviewed, String>> {
        Box::pin(self.wait(&self.samplings, |answer| Sampling {
            server: server.to_owned(),
            asked_at: SystemTime::now(),
            what: Reviewing::Request {
                model: model.to_owned(),
                params: Box::new(request.clone()),
                answer,
            },
        }))
    }

    fn review_reply<'a>(
        &'a self,
        server: &'a str,
        reply: &'a CreateMessageResult,
    ) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(self.wait(&self.samplings, |answer| Sampling {
            server: server.to_owned(),
            asked_at: SystemTime::now(),
            what: Reviewing::Reply {
                reply: Box::new(reply.clone()),
                answer,
            },
        }))
    }
}

/// A request as a person edits it: without its `_meta`, which is the
/// protocol's, not the conversation's.
pub(crate) fn shown(params: &CreateMessageRequestParams) -> serde_json::Value {
    let mut value = serde_json::to_value(params).unwrap_or_default();
    if let Some(object) = value.as_object_mut() {
        object.remove("_meta");
    }
    value
}

/// The request as the person left it, keeping the server's `_meta`.
pub(crate) fn edited(
    original: &CreateMessageRequestParams,
    text: &str,
) -> Result<Box<CreateMessageRequestParams>, String> {
    if text.trim().is_empty() {
        return Ok(Box::new(original.clone()));
    }
    let mut params: CreateMessageRequestParams = serde_json::from_str(text)
        .map_err(|e| format!("The request is not a sampling request: {e}"))?;
    params.meta = original.meta.clone();
    Ok(Box::new(params))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_schema::SamplingMessage;

    #[test]
    fn an_edited_request_keeps_the_servers_meta_and_a_broken_one_is_refused() {
        let mut original =
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text("2+2?")], 100);
        original.meta = serde_json::from_value(serde_json::json!({"progressToken": 4})).ok();
        let mut shown = shown(&original);
        assert!(shown.get("_meta").is_none());
        shown["messages"][0]["content"]["text"] = "3+3?".into();
        shown["maxTokens"] = 20.into();
        let edited = edited(&original, &shown.to_string()).unwrap();
        assert_eq!(edited.max_tokens, 20);
        assert_eq!(edited.meta, original.meta);
        assert!(
            serde_json::to_string(&edited.messages)
                .unwrap()
                .contains("3+3?")
        );
        assert_eq!(*super::edited(&original, " ").unwrap(), original);
        let broken = super::edited(&original, r#"{"messages": 3}"#).unwrap_err();
        assert!(broken.contains("not a sampling request"), "{broken}");
    }
}
