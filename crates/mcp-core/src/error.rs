//! Why a request we sent did not produce a result.

use mcp_schema::jsonrpc::RequestId;
use mcp_schema::{ErrorObject, ProtocolVersion, error_codes};

/// The ways an outgoing request can fail.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The peer answered with a JSON-RPC error.
    #[error("peer answered with an error: {0}")]
    Rpc(ErrorObject),
    /// No response came in time; `notifications/cancelled` was sent.
    #[error("request timed out")]
    Timeout,
    /// The session ended before a response came.
    #[error("connection closed")]
    ConnectionClosed,
    /// The request may not be sent now (lifecycle or capability rules).
    #[error("request not allowed: {0}")]
    NotAllowed(String),
    /// The params or the result did not (de)serialize.
    #[error("invalid message: {0}")]
    Invalid(String),
}

impl From<RequestError> for ErrorObject {
    fn from(e: RequestError) -> Self {
        match e {
            RequestError::Rpc(obj) => obj,
            other => ErrorObject::internal(other),
        }
    }
}

/// The -32600 error refusing a request whose id is that of a request
/// still in flight.
pub fn request_id_in_use(id: &RequestId) -> ErrorObject {
    ErrorObject::invalid_request(format!("request id {id} is already in use"))
}

/// The -32022 error listing what this implementation supports.
pub fn unsupported_version(requested: &str) -> ErrorObject {
    ErrorObject::new(error_codes::UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version").with_data(
        serde_json::json!({ "supported": ProtocolVersion::supported_strings(), "requested": requested }),
    )
}
