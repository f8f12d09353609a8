//! `region_query`: a tool whose arguments are mirrored into HTTP headers.

use mcp_server::ToolDef;
use schemars::JsonSchema;
use serde::Deserialize;

use super::support::text_result;

#[derive(Deserialize, JsonSchema)]
pub(super) struct RegionArgs {
    /// Where the query runs; mirrored into the `Mcp-Param-Region` header.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
    /// Which shard; mirrored into the `Mcp-Param-Shard` header.
    #[serde(default)]
    #[schemars(extend("x-mcp-header" = "Shard"))]
    shard: Option<i64>,
    /// The query.
    #[serde(default)]
    query: Option<String>,
}

/// A tool with header-mirrored arguments (2026-07-28 `x-mcp-header`).
pub(super) fn region_query() -> ToolDef {
    ToolDef::new(
        "region_query",
        "Runs a query in a region (region and shard travel in Mcp-Param-* headers over HTTP)",
        |args: RegionArgs, _| async move {
            let shard = args
                .shard
                .map(|s| format!(", shard {s}"))
                .unwrap_or_default();
            let query = args.query.unwrap_or_default();
            text_result(format!("region {}{shard}: {query}", args.region))
        },
    )
}
