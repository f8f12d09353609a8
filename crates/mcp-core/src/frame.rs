//! The frames a transport carries: JSON text out, with what it is and the
//! request it relates to, and JSON text in, with what the transport
//! attaches to it.

use std::sync::Arc;

use mcp_schema::jsonrpc::{Frame, RequestId};

use crate::extensions::Extensions;

/// What an outgoing frame is, so a transport can tell when a request's
/// exchange is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// A request to the peer.
    Request,
    /// A notification to the peer.
    Notification,
    /// A response (or a batch of responses) to the peer.
    Response,
    /// No text: the related request ended without a response (it was
    /// cancelled), so a transport can close what it kept open for it.
    /// Nothing is written.
    Ended,
}

/// One frame to write: compact JSON text without a trailing newline.
#[derive(Clone, Debug)]
pub struct OutboundFrame {
    /// The JSON text.
    pub text: String,
    /// The incoming request this frame belongs to, if any.
    pub related: Option<RequestId>,
    /// What the frame is.
    pub kind: FrameKind,
}

/// One frame read from the peer.
#[derive(Debug)]
pub enum InboundFrame {
    /// The JSON text, exactly as received.
    Text(String),
    /// The JSON text with values the transport attaches to every request
    /// in it (an HTTP request's authenticated principal ...); handlers see
    /// them through [`RequestContext::extensions`](crate::RequestContext::extensions).
    WithExtensions(String, Arc<Extensions>),
    /// A message the transport has already parsed (to check it before
    /// accepting it), with its extensions: not parsed again.
    Parsed(Frame, Option<Arc<Extensions>>),
    /// Something arrived that cannot be a message (too large, not UTF-8);
    /// the engine answers it with a parse error and goes on.
    Unreadable(String),
}

impl InboundFrame {
    /// The frame for `text`, carrying `extensions` when there are some.
    pub fn new(text: String, extensions: Option<Arc<Extensions>>) -> Self {
        match extensions {
            Some(extensions) => InboundFrame::WithExtensions(text, extensions),
            None => InboundFrame::Text(text),
        }
    }
}

impl From<String> for InboundFrame {
    fn from(text: String) -> Self {
        InboundFrame::Text(text)
    }
}
