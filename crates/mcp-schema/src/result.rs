//! Things every result shares: `resultType` and the 2026-07-28 cache hints.

use serde::{Deserialize, Serialize};

use crate::Meta;

/// What kind of result this is (2026-07-28 `resultType`); absent means `complete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultType {
    /// The request completed; the result holds the final content.
    #[default]
    Complete,
    /// The client must provide input and retry (an `InputRequiredResult`).
    InputRequired,
    /// The server runs the request as a task and returned its handle (a
    /// `CreateTaskResult` of the `io.modelcontextprotocol/tasks` extension).
    Task,
}

/// Who may share a cached result (2026-07-28 `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Only within the same authorization context.
    #[default]
    Private,
    /// Any client or intermediary.
    Public,
}

/// Declares a result type whose first members are the two every result
/// has, `_meta` and (2026-07-28) `resultType`, followed by its own. Plain
/// members, not a flattened struct: serde would buffer every result into a
/// map to flatten one.
macro_rules! result_struct {
    ($(#[$attr:meta])* pub struct $name:ident { $($members:tt)* }) => {
        $(#[$attr])*
        pub struct $name {
            /// Result metadata.
            #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
            pub meta: Option<$crate::Meta>,
            /// `complete` in 2026-07-28; absent before.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub result_type: Option<$crate::ResultType>,
            $($members)*
        }
    };
}
pub(crate) use result_struct;

/// Declares a result type a client may cache (a list or a read): as
/// [`result_struct`], with the 2026-07-28 cache hints `ttlMs` and
/// `cacheScope` after its own members.
macro_rules! cached_result_struct {
    ($(#[$attr:meta])* pub struct $name:ident { $($members:tt)* }) => {
        $crate::result::result_struct! {
            $(#[$attr])*
            pub struct $name {
                $($members)*
                /// Cache lifetime in milliseconds (2026-07-28).
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub ttl_ms: Option<u64>,
                /// Cache sharing scope (2026-07-28).
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub cache_scope: Option<$crate::CacheScope>,
            }
        }
    };
}
pub(crate) use cached_result_struct;

result_struct! {
    /// A result with no content (`EmptyResult`), e.g. for `ping`.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct EmptyResult {}
}

/// Params of a request that only carries `_meta` (`RequestParams`), e.g.
/// `ping`, `server/discover`, `roots/list`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestParams {
    /// Request metadata (in 2026-07-28: version, client info, capabilities).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of a notification that only carries `_meta` (`NotificationParams`),
/// e.g. the list-changed notifications.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}
