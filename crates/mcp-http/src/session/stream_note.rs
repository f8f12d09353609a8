//! What the priming event of a request stream notes where instances share
//! the session: which requests the stream carries and which instance runs
//! them, so that a client resuming it on another instance after that one
//! died gets an answer for each, rather than a stream that ends without.

use std::sync::Arc;

use mcp_schema::jsonrpc::{Message, RequestId};
use serde::{Deserialize, Serialize};

use crate::event_store::PRIMING_NOTE;

/// The note of a request stream's priming event.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct StreamNote {
    /// The instance that runs the requests ([`crate::relay::ResponseRelay::instance`]).
    pub(super) instance: String,
    /// The requests whose messages the stream carries.
    pub(super) requests: Vec<RequestId>,
}

impl StreamNote {
    /// The note of a stream of `requests` running on `instance`.
    pub(super) fn new(instance: &str, requests: &[RequestId]) -> Self {
        StreamNote {
            instance: instance.to_owned(),
            requests: requests.to_vec(),
        }
    }

    /// The priming event's message that carries it.
    pub(super) fn stored(&self) -> Arc<str> {
        let json = serde_json::to_string(self).unwrap_or_default();
        Arc::from(format!("{PRIMING_NOTE}{json}"))
    }

    /// The note a priming event carried (without its mark), if it reads as
    /// one.
    pub(super) fn read(note: &str) -> Option<Self> {
        serde_json::from_str(note).ok()
    }
}

/// The id a stored message answers, where it is a response or an error.
pub(super) fn answered_id(text: &str) -> Option<RequestId> {
    match Message::parse(text).ok()? {
        Message::Response(response) => Some(response.id),
        Message::Error(error) => error.id,
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_store::{is_priming, priming_note};

    #[test]
    fn a_note_is_a_priming_event_that_reads_back() {
        let ids = [RequestId::Number(7), RequestId::String("a".into())];
        let note = StreamNote::new("0123abcd", &ids);
        let stored = note.stored();
        assert!(is_priming(&stored));
        let read = StreamNote::read(priming_note(&stored).unwrap()).unwrap();
        assert_eq!(read, note);
        assert_eq!(StreamNote::read("not json"), None);
    }

    #[test]
    fn answers_are_told_from_other_messages() {
        assert_eq!(
            answered_id(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#),
            Some(RequestId::Number(7))
        );
        assert_eq!(
            answered_id(r#"{"jsonrpc":"2.0","id":"a","error":{"code":-32603,"message":"x"}}"#),
            Some(RequestId::String("a".into()))
        );
        let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;
        assert_eq!(answered_id(progress), None);
    }
}
