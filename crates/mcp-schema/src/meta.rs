//! The `_meta` object and the keys MCP reserves in it.
//!
//! In 2026-07-28 every request carries the protocol version, client info and
//! client capabilities in `params._meta`; results carry the server info there.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{ClientCapabilities, Implementation, LoggingLevel, ProgressToken, RequestId};

/// The contents of a `_meta` field: free-form metadata keyed by string.
pub type Meta = Map<String, Value>;

/// A JSON object whose members we do not model (capability settings, JSON
/// Schemas, tool arguments ...).
pub type JsonObject = Map<String, Value>;

/// 2026-07-28 request `_meta`: the protocol version of this request.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// 2026-07-28 request `_meta`: the client's [`Implementation`].
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// 2026-07-28 request `_meta`: the client's [`ClientCapabilities`] for this request.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// 2026-07-28 request `_meta`: the desired [`LoggingLevel`] for this request.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// 2026-07-28 result `_meta`: the server's [`Implementation`].
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// 2026-07-28 notification / listen-result `_meta`: id of the `subscriptions/listen` request.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// Request `_meta`: the token progress notifications refer to (every revision).
pub const META_PROGRESS_TOKEN: &str = "progressToken";
/// 2025-11-25 `_meta`: associates a message with a task (`{"taskId": ...}`).
pub const META_RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// 2026-07-28 extension identifier: tasks (a key of `capabilities.extensions`).
pub const EXTENSION_TASKS: &str = "io.modelcontextprotocol/tasks";
/// 2026-07-28 extension identifier: OAuth client credentials.
pub const EXTENSION_OAUTH_CLIENT_CREDENTIALS: &str =
    "io.modelcontextprotocol/oauth-client-credentials";

/// The typed view of a 2026-07-28 request `_meta` (`RequestMetaObject`);
/// other keys are kept in `other`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RequestMetaObject {
    /// The protocol version of this request (required in 2026-07-28).
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub protocol_version: Option<String>,
    /// The client software making the request.
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_info: Option<Implementation>,
    /// The client's capabilities for this request (required in 2026-07-28).
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_capabilities: Option<ClientCapabilities>,
    /// The desired log level; absent means no log notifications.
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub log_level: Option<LoggingLevel>,
    /// Requests progress notifications with this token.
    #[serde(
        rename = "progressToken",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub progress_token: Option<ProgressToken>,
    /// Any other keys.
    #[serde(flatten)]
    pub other: Meta,
}

/// The typed view of a result `_meta` (`ResultMetaObject`, also covering the
/// `subscriptions/listen` result's subscription id); other keys in `other`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResultMetaObject {
    /// The server software producing the response.
    #[serde(
        rename = "io.modelcontextprotocol/serverInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub server_info: Option<Implementation>,
    /// The subscription stream this response closes (`subscriptions/listen` only).
    #[serde(
        rename = "io.modelcontextprotocol/subscriptionId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub subscription_id: Option<RequestId>,
    /// Any other keys.
    #[serde(flatten)]
    pub other: Meta,
}

/// The typed view of a notification `_meta` (`NotificationMetaObject`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NotificationMetaObject {
    /// The subscription stream the notification was delivered on.
    #[serde(
        rename = "io.modelcontextprotocol/subscriptionId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub subscription_id: Option<RequestId>,
    /// Any other keys.
    #[serde(flatten)]
    pub other: Meta,
}

macro_rules! meta_conversions {
    ($($t:ty),*) => {$(
        impl $t {
            /// Reads the typed view out of a raw `_meta` object.
            pub fn from_meta(meta: &Meta) -> Result<Self, serde_json::Error> {
                serde_json::from_value(Value::Object(meta.clone()))
            }

            /// Turns the typed view into a raw `_meta` object.
            pub fn into_meta(self) -> Meta {
                match serde_json::to_value(self) {
                    Ok(Value::Object(map)) => map,
                    _ => Meta::new(),
                }
            }
        }
    )*};
}

meta_conversions!(RequestMetaObject, ResultMetaObject, NotificationMetaObject);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_meta_reads_known_members_and_keeps_the_rest() {
        let text = r#"{
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
            "io.modelcontextprotocol/logLevel": "debug",
            "progressToken": 7,
            "com.example/trace": {"id": "abc"}
        }"#;
        let meta: RequestMetaObject = serde_json::from_str(text).unwrap();
        // Every member named, so a member added to the type must be checked
        // here too.
        let RequestMetaObject {
            protocol_version,
            client_info,
            client_capabilities,
            log_level,
            progress_token,
            other,
        } = &meta;
        assert_eq!(protocol_version.as_deref(), Some("2026-07-28"));
        assert_eq!(client_info.as_ref().map(|i| i.name.as_str()), Some("c"));
        assert!(client_capabilities.as_ref().unwrap().sampling.is_some());
        assert_eq!(*log_level, Some(LoggingLevel::Debug));
        assert_eq!(*progress_token, Some(ProgressToken::Number(7)));
        assert_eq!(other.len(), 1);
        assert_eq!(other["com.example/trace"]["id"], "abc");
        // What is written reads back the same.
        let again: RequestMetaObject =
            serde_json::from_str(&serde_json::to_string(&meta).unwrap()).unwrap();
        assert_eq!(again, meta);
        // Nulls read as absent; a wrong type is an error naming it.
        let nulls: RequestMetaObject =
            serde_json::from_str(r#"{"io.modelcontextprotocol/protocolVersion": null}"#).unwrap();
        assert_eq!(nulls, RequestMetaObject::default());
        let wrong = serde_json::from_str::<RequestMetaObject>(
            r#"{"io.modelcontextprotocol/protocolVersion": 5}"#,
        )
        .unwrap_err();
        assert!(wrong.to_string().contains("invalid type"), "{wrong}");
        assert!(serde_json::from_str::<RequestMetaObject>("[]").is_err());
    }
}
