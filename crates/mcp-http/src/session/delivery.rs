//! What the engine sends, as it travels to a stream: the message text
//! (owned or shared with the event store) and its event id.

use std::sync::Arc;

use crate::event_store::EventId;

/// One message on its way to an HTTP response stream.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    /// The JSON-RPC message.
    pub(crate) text: MessageText,
    /// Its SSE event id, where the session is resumable.
    pub(crate) event_id: Option<EventId>,
    /// The response that ends the stream.
    pub(crate) last: bool,
    /// The stream failed (its event store did): the text tells the
    /// client, and the stream ends with it.
    pub(crate) failed: bool,
}

impl Delivery {
    /// A message to send as it is.
    pub(crate) fn new(text: MessageText, event_id: Option<EventId>, last: bool) -> Self {
        Delivery {
            text,
            event_id,
            last,
            failed: false,
        }
    }
}

/// A message's text: as the engine wrote it, for a reply that goes out
/// once; shared with the event store, for one that may be replayed.
#[derive(Debug, Clone)]
pub(crate) enum MessageText {
    /// Written for this response alone.
    Owned(String),
    /// Also kept by the event store.
    Shared(Arc<str>),
}

impl std::ops::Deref for MessageText {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            MessageText::Owned(text) => text,
            MessageText::Shared(text) => text,
        }
    }
}

impl MessageText {
    /// The text as a response body, without a copy.
    pub(crate) fn into_body(self) -> bytes::Bytes {
        match self {
            MessageText::Owned(text) => bytes::Bytes::from(text),
            MessageText::Shared(text) => bytes::Bytes::from_owner(SharedText(text)),
        }
    }
}

/// Shared message text as bytes.
pub(super) struct SharedText(Arc<str>);

impl AsRef<[u8]> for SharedText {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}
