//! An echo MCP server on the official Rust SDK (`rmcp`), to compare other
//! servers with:
//!
//! - `rmcp-echo stdio`: MCP over standard input and output;
//! - `rmcp-echo http ADDR [--stateful]`: Streamable HTTP at `/mcp`,
//!   stateless with JSON replies unless `--stateful` (one session per
//!   client, replies as SSE);
//! - `rmcp-echo bare ADDR`: no MCP at all, a plain axum handler that answers
//!   every `POST /mcp` with one fixed result carrying the request's id: the
//!   floor that HTTP and JSON alone cost.
//!
//! Every server has one tool, `echo`, taking `{"text": ...}`.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt as _;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServiceExt as _, schemars, tool, tool_router};
use serde::Deserialize;
use serde_json::value::RawValue;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The `echo` tool's arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

/// The server: one tool.
#[derive(Debug, Clone, Default)]
struct Echo;

#[tool_router(server_handler)]
impl Echo {
    /// Returns its text unchanged.
    #[tool(description = "Returns the text it is given")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }
}

type Error = Box<dyn std::error::Error + Send + Sync>;

const USAGE: &str =
    "usage: rmcp-echo stdio | rmcp-echo http ADDR [--stateful] | rmcp-echo bare ADDR";

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["stdio"] => stdio().await,
        ["http", addr] => http(addr.parse()?, false).await,
        ["http", addr, "--stateful"] => http(addr.parse()?, true).await,
        ["bare", addr] => bare(addr.parse()?).await,
        _ => {
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    }
}

/// Serves MCP over standard input and output until the client closes it.
async fn stdio() -> Result<(), Error> {
    let service = Echo.serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}

/// Serves MCP over Streamable HTTP at `/mcp` on `addr`.
async fn http(addr: SocketAddr, stateful: bool) -> Result<(), Error> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(stateful)
        .with_json_response(!stateful)
        .with_sse_keep_alive(None);
    let service: StreamableHttpService<Echo, LocalSessionManager> =
        StreamableHttpService::new(|| Ok(Echo), Arc::default(), config);
    let router = axum::Router::new().nest_service("/mcp", service);
    serve(addr, router).await
}

/// Answers every `POST /mcp` with a fixed result echoing the request's id:
/// at once a valid `initialize`, `server/discover` and `tools/call` result,
/// so an MCP client of either era can start and call a tool. Notifications
/// (no id) get 202 Accepted.
async fn bare(addr: SocketAddr) -> Result<(), Error> {
    let router = axum::Router::new().route("/mcp", axum::routing::post(bare_reply));
    serve(addr, router).await
}

/// The only field of a request that the bare server reads.
#[derive(Deserialize)]
struct IdOnly<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
}

/// One bare reply.
async fn bare_reply(body: Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<IdOnly>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let Some(id) = request.id else {
        return StatusCode::ACCEPTED.into_response();
    };
    let body = format!(
        concat!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"#,
            r#""protocolVersion":"2025-06-18","capabilities":{{"tools":{{}}}},"#,
            r#""supportedVersions":["2025-06-18","2026-07-28"],"#,
            r#""serverInfo":{{"name":"bare","version":"0.1.0"}},"#,
            r#""content":[{{"type":"text","text":"hello"}}]}}}}"#
        ),
        id.get()
    );
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Listens on `addr` with TCP_NODELAY on every accepted socket, prints the
/// endpoint, and serves `router` until interrupted.
async fn serve(addr: SocketAddr, router: axum::Router) -> Result<(), Error> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    println!("MCP endpoint: http://{local}/mcp");
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
