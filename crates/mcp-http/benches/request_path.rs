//! The Streamable HTTP request path without the network: requests go
//! straight into [`McpEndpoint::router`] with `tower::ServiceExt::oneshot`,
//! through the Host/Origin guard, the body limit, the header checks, the
//! engine and the `everything` server's `echo` tool, and the whole response
//! body is read back.
//!
//! In the group `http/echo`:
//! - `modern_stateless`: a 2026-07-28 `tools/call` with every required
//!   header (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) and the
//!   per-request `_meta`; a short-lived engine session per request.
//! - `legacy_session`: a 2025-11-25 `tools/call` in a session initialized
//!   once before measuring, sent with its `Mcp-Session-Id`.
//! - `axum_floor`: a bare axum handler that parses the same body into a
//!   `serde_json::Value` and answers the echo result as JSON: what any
//!   JSON-RPC endpoint on axum costs at the least, so the ratios show what
//!   MCP adds on top.
//!
//! Run: `cargo bench -p mcp-http --bench request_path`

use std::hint::black_box;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode, header};
use axum::response::IntoResponse;
use criterion::{Criterion, criterion_group, criterion_main};
use mcp_http::{HttpConfig, McpEndpoint};
use serde_json::{Value, json};
use tower::ServiceExt;

/// The port the loopback Host/Origin policy is built for; nothing listens.
const PORT: u16 = 3000;
/// The `Host` every request names.
const HOST: &str = "127.0.0.1:3000";
/// The text `echo` gets and gives back.
const TEXT: &str = "hello, benchmark";

/// One POST to `/mcp` with the Streamable HTTP basics and `extra` headers.
fn post(body: &str, extra: &HeaderMap) -> Request<Body> {
    let mut request = Request::post("/mcp")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .body(Body::from(body.to_owned()))
        .expect("valid request");
    request
        .headers_mut()
        .extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    request
}

/// Sends `request` through `router`; the status, headers and whole body.
async fn send(router: &axum::Router, request: Request<Body>) -> (StatusCode, HeaderMap, Bytes) {
    let response = router.clone().oneshot(request).await.expect("infallible");
    let (parts, body) = response.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .expect("body is readable");
    (parts.status, parts.headers, body)
}

/// `send`, checking that the answer is the echo (JSON or one SSE event).
async fn call(router: &axum::Router, body: &str, headers: &HeaderMap) -> Bytes {
    let (status, _, body) = send(router, post(body, headers)).await;
    assert_eq!(status, StatusCode::OK);
    body
}

fn tools_call(meta: Option<Value>) -> String {
    let mut params = json!({"name": "echo", "arguments": {"text": TEXT}});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string()
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    pairs
        .iter()
        .map(|(name, value)| {
            (
                header::HeaderName::from_static(name),
                HeaderValue::from_str(value).expect("header value"),
            )
        })
        .collect()
}

/// The endpoint's router for the `everything` server.
fn endpoint_router() -> axum::Router {
    let server = mcp_builtin::everything::server();
    let endpoint = McpEndpoint::new(
        Arc::new(server.clone()),
        server.session_config(),
        HttpConfig::loopback(PORT),
    );
    endpoint.router()
}

/// A legacy session on `router`: its `Mcp-Session-Id` and protocol headers.
async fn legacy_session(router: &axum::Router, version: &str) -> HeaderMap {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "mcp-bench", "version": "1.0.0"},
    }});
    let (status, answer, body) =
        send(router, post(&initialize.to_string(), &HeaderMap::new())).await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    let id = answer
        .get(mcp_http::SESSION_ID)
        .expect("initialize answer has Mcp-Session-Id")
        .to_str()
        .expect("ASCII")
        .to_owned();
    let session = headers(&[
        (mcp_http::SESSION_ID, &id),
        (mcp_http::PROTOCOL_VERSION, version),
    ]);
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (status, _, _) = send(router, post(initialized, &session)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    session
}

/// The floor: parse the body as JSON, answer its `text` argument as a
/// `tools/call` result.
async fn bare_echo(body: Bytes) -> impl IntoResponse {
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let answer = json!({
        "jsonrpc": "2.0",
        "id": request["id"],
        "result": {"content": [{"type": "text", "text": request["params"]["arguments"]["text"]}]},
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        answer.to_string(),
    )
}

/// Checks, once and outside the measurements, that `body` is the echo.
async fn check(name: &str, router: &axum::Router, body: &str, h: &HeaderMap) {
    let (status, headers, answer) = send(router, post(body, h)).await;
    let text = String::from_utf8_lossy(&answer);
    assert_eq!(status, StatusCode::OK, "{name}: {text}");
    assert!(text.contains(TEXT), "{name}: {headers:?} {text}");
}

fn request_path(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let router = runtime.block_on(async { endpoint_router() });

    let modern_body = tools_call(Some(json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-bench", "version": "1.0.0"},
    })));
    let modern_headers = headers(&[
        (mcp_http::PROTOCOL_VERSION, "2026-07-28"),
        (mcp_http::METHOD, "tools/call"),
        (mcp_http::NAME, "echo"),
    ]);
    let legacy_body = tools_call(None);
    let legacy_headers = runtime.block_on(legacy_session(&router, "2025-11-25"));
    let floor = axum::Router::new().route("/mcp", axum::routing::post(bare_echo));

    let cases = [
        ("modern_stateless", &router, &modern_body, &modern_headers),
        ("legacy_session", &router, &legacy_body, &legacy_headers),
        ("axum_floor", &floor, &legacy_body, &HeaderMap::new()),
    ];
    let mut group = c.benchmark_group("http/echo");
    for (name, router, body, headers) in cases {
        runtime.block_on(check(name, router, body, headers));
        group.bench_function(name, |b| {
            b.to_async(&runtime)
                .iter(|| async { black_box(call(router, body, headers).await) })
        });
    }
    group.finish();
}

criterion_group!(benches, request_path);
criterion_main!(benches);
