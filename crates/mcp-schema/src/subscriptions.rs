//! Subscriptions (2026-07-28): `subscriptions/listen` opens a stream of the
//! notifications the client asked for.

use serde::{Deserialize, Serialize};

use crate::jsonrpc::RequestId;
use crate::{META_SUBSCRIPTION_ID, Meta, ResultType};

/// Which notifications a subscription stream carries.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these URIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// `notifications/tasks` for these task ids (tasks extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
}

impl SubscriptionFilter {
    /// The resource URIs whose updates the stream carries.
    pub fn resources(&self) -> impl Iterator<Item = &String> {
        self.resource_subscriptions.iter().flatten()
    }

    /// Whether the stream carries the updates of resource `uri`.
    pub fn wants_resource(&self, uri: &str) -> bool {
        self.resources().any(|u| u == uri)
    }
}

/// The `_meta` that names the subscription stream `id` (the id of its
/// `subscriptions/listen` request) on each notification it carries.
pub fn subscription_meta(id: &RequestId) -> Meta {
    let mut meta = Meta::new();
    meta.insert(
        META_SUBSCRIPTION_ID.into(),
        serde_json::to_value(id).unwrap_or(serde_json::Value::Null),
    );
    meta
}

/// Params of `subscriptions/listen`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The notifications wanted.
    pub notifications: SubscriptionFilter,
}

/// Result of `subscriptions/listen`, sent when the stream closes; `_meta`
/// carries [`crate::META_SUBSCRIPTION_ID`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenResult {
    /// Result metadata, with the subscription id.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
}

/// Params of `notifications/subscriptions/acknowledged`: the notifications
/// the server will actually deliver.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// Notification metadata, with the subscription id.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The notifications granted.
    pub notifications: SubscriptionFilter,
}
