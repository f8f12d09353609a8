//! What can go wrong with a client call.

use mcp_core::RequestError;
use mcp_schema::ErrorObject;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The request failed: the server answered with an error, it timed
    /// out, or the connection closed.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The server's result is not what the protocol says.
    #[error("the server's result of {method} could not be read: {message}")]
    InvalidResult {
        /// The request's method.
        method: String,
        /// What was wrong.
        message: String,
    },
    /// Neither `server/discover` nor `initialize` led to a usable revision.
    #[error("handshake failed: {0}")]
    Handshake(String),
    /// The server kept asking for input beyond the configured number of rounds.
    #[error("{method}: the server asked for input {rounds} times; giving up")]
    TooManyRounds {
        /// The request's method.
        method: String,
        /// How many rounds were answered.
        rounds: usize,
    },
    /// What was asked does not exist in the negotiated revision or with
    /// this server.
    #[error("{0}")]
    Unsupported(String),
}

impl ClientError {
    /// The JSON-RPC error the server answered with, if that is what happened.
    pub fn rpc(&self) -> Option<&ErrorObject> {
        match self {
            ClientError::Request(RequestError::Rpc(e)) => Some(e),
            _ => None,
        }
    }
}
