//! Typed `data` of MCP error responses, and constructors for those errors.

use serde::{Deserialize, Serialize};

use crate::{ClientCapabilities, ElicitRequestURLParams, ErrorObject, JsonObject, error_codes};

/// `data` of an unsupported-protocol-version error (2026-07-28 code -32022).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnsupportedProtocolVersionData {
    /// The versions the server supports.
    pub supported: Vec<String>,
    /// The version the client asked for.
    pub requested: String,
}

/// `data` of a missing-client-capability error (2026-07-28 code -32021).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MissingRequiredClientCapabilityData {
    /// The capabilities the request needs.
    pub required_capabilities: ClientCapabilities,
}

/// `data` of a URL-elicitation-required error (2025-11-25 code -32042).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UrlElicitationRequiredData {
    /// The URL elicitations the user must complete.
    pub elicitations: Vec<ElicitRequestURLParams>,
    /// Other members.
    #[serde(flatten)]
    pub other: JsonObject,
}

fn with<T: Serialize>(error: ErrorObject, data: &T) -> ErrorObject {
    match serde_json::to_value(data) {
        Ok(value) => error.with_data(value),
        Err(_) => error,
    }
}

impl UnsupportedProtocolVersionData {
    /// The error object (-32022) carrying this data.
    pub fn into_error(self) -> ErrorObject {
        with(
            ErrorObject::new(
                error_codes::UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
            ),
            &self,
        )
    }
}

impl MissingRequiredClientCapabilityData {
    /// The error object (-32021) carrying this data.
    pub fn into_error(self, message: impl Into<String>) -> ErrorObject {
        with(
            ErrorObject::new(error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY, message),
            &self,
        )
    }
}

impl UrlElicitationRequiredData {
    /// The error object (-32042) carrying this data.
    pub fn into_error(self, message: impl Into<String>) -> ErrorObject {
        with(
            ErrorObject::new(error_codes::URL_ELICITATION_REQUIRED, message),
            &self,
        )
    }
}

/// The -32022 error for a request asking `requested`, listing every
/// revision this crate supports, newest first.
pub fn unsupported_protocol_version_error(requested: impl Into<String>) -> ErrorObject {
    UnsupportedProtocolVersionData {
        supported: crate::ProtocolVersion::supported_strings()
            .into_iter()
            .map(str::to_owned)
            .collect(),
        requested: requested.into(),
    }
    .into_error()
}

/// The -32020 error: an HTTP header disagrees with the body (2026-07-28).
pub fn header_mismatch_error(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(error_codes::HEADER_MISMATCH, message)
}
