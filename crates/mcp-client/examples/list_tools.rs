//! Connects to an MCP server over Streamable HTTP, lists its tools and
//! calls `echo`: `cargo run -p mcp-client --example list_tools -- URL`.

use mcp_client::Client;
use mcp_schema::ElicitResult;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:8080/mcp".to_owned());
    let transport = mcp_http::client::connect(mcp_http::HttpClientConfig::new(url))
        .await?
        .into_transport();
    let client = Client::builder("list-tools", "1.0.0")
        // Asked for user input (legacy request or modern input_required
        // round alike): this example declines.
        .on_elicitation(|_request| async { Ok(ElicitResult::decline()) })
        .connect(transport)
        .await?;
    println!(
        "{} speaks {}",
        client.server_info().map_or("?", |i| i.name.as_str()),
        client.revision()
    );
    for tool in client.list_all_tools().await? {
        println!("- {}", tool.name);
    }
    let echoed = client.call_tool("echo", json!({"text": "hi"})).await?;
    println!("echo: {:?}", echoed.content);
    client.close().await;
    Ok(())
}
