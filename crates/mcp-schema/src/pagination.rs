//! Pagination of list requests.

use serde::{Deserialize, Serialize};

use crate::Meta;

/// An opaque position in a paginated list.
pub type Cursor = String;

/// Params of a list request (`tools/list`, `resources/list`, ...).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaginatedRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Where to continue; absent for the first page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
}

impl PaginatedRequestParams {
    /// Params asking for the page at `cursor` (`None`: the first page).
    pub fn new(cursor: Option<Cursor>) -> Self {
        PaginatedRequestParams { meta: None, cursor }
    }
}
