//! The four paginated lists, described once so one loop walks them all.

use mcp_schema::{
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, Prompt,
    Resource, ResourceTemplate, Tool, methods,
};
use serde::de::DeserializeOwned;

/// A paginated list: its method, page type and item type.
pub(crate) trait Listing {
    const METHOD: &'static str;
    type Page: DeserializeOwned;
    type Item: Clone + Send + Sync + 'static;
    /// The page's items, next cursor and cache lifetime (ms).
    fn split(page: Self::Page) -> (Vec<Self::Item>, Option<String>, Option<u64>);
}

macro_rules! listing {
    ($name:ident, $method:expr, $page:ty, $item:ty, $field:ident) => {
        pub(crate) struct $name;
        impl Listing for $name {
            const METHOD: &'static str = $method;
            type Page = $page;
            type Item = $item;
            fn split(page: $page) -> (Vec<$item>, Option<String>, Option<u64>) {
                (page.$field, page.next_cursor, page.ttl_ms)
            }
        }
    };
}

listing!(
    ToolListing,
    methods::TOOLS_LIST,
    ListToolsResult,
    Tool,
    tools
);
listing!(
    PromptListing,
    methods::PROMPTS_LIST,
    ListPromptsResult,
    Prompt,
    prompts
);
listing!(
    ResourceListing,
    methods::RESOURCES_LIST,
    ListResourcesResult,
    Resource,
    resources
);
listing!(
    TemplateListing,
    methods::RESOURCES_TEMPLATES_LIST,
    ListResourceTemplatesResult,
    ResourceTemplate,
    resource_templates
);
