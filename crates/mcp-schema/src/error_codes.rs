//! JSON-RPC and MCP error codes. Codes whose meaning moved between revisions
//! are looked up through [`crate::ProtocolVersion`], never compared here.

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error of the receiver.
pub const INTERNAL_ERROR: i64 = -32603;
/// Legacy revisions: the requested resource does not exist.
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// 2026-07-28: HTTP headers disagree with the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the request needs a client capability that was not declared.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// 2026-07-28: the request's protocol version is not supported.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// 2025-11-25: the request needs the user to complete a URL-mode elicitation.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;
/// Implementation-defined: the request was cancelled.
pub const REQUEST_CANCELLED: i64 = -32800;
/// Implementation-defined: the request timed out.
pub const REQUEST_TIMEOUT: i64 = -32001;
/// Implementation-defined: the connection closed before a response came.
pub const CONNECTION_CLOSED: i64 = -32000;
