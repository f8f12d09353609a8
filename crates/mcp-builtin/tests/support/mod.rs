//! What the ready servers' tests share: bounded waits, and a client of a
//! server in process or over Streamable HTTP on a loopback port.
#![allow(dead_code)] // each test binary uses its own part

use std::sync::Arc;
use std::time::Duration;

use mcp_client::{Client, EraChoice};
use mcp_schema::ProtocolVersion;
use mcp_server::Server;

/// `fut`, or a panic naming `what` after 30 s.
pub async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} never finished"))
}

/// A client of `server` in process, speaking revision `era`.
pub async fn connect_in_process(server: &Server, era: ProtocolVersion) -> Client {
    let (server_side, client_side) = mcp_core::Transport::pair();
    let _session = mcp_core::serve(
        server_side,
        Arc::new(server.clone()),
        server.session_config(),
    );
    within(
        "connect",
        Client::builder("ready-server-tests", "1.0.0")
            .era(EraChoice::Pinned(era))
            .connect(client_side),
    )
    .await
    .expect("connect")
}

/// Serves `server` over Streamable HTTP on a free loopback port; its URL.
pub async fn serve_http(server: &Server) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let port = listener.local_addr().expect("its address").port();
    let endpoint = mcp_http::McpEndpoint::new(
        Arc::new(server.clone()),
        server.session_config(),
        mcp_http::HttpConfig::loopback(port),
    );
    tokio::spawn(mcp_http::serve(listener, endpoint, std::future::pending()));
    format!("http://127.0.0.1:{port}/mcp")
}

/// A client of the server at `url` over Streamable HTTP, speaking `era`.
pub async fn connect_http(url: &str, era: ProtocolVersion) -> Client {
    let transport = within(
        "the HTTP connection",
        mcp_http::client::connect(mcp_http::HttpClientConfig::new(url.to_owned())),
    )
    .await
    .expect("connect over HTTP")
    .into_transport();
    within(
        "connect",
        Client::builder("ready-server-tests", "1.0.0")
            .era(EraChoice::Pinned(era))
            .connect(transport),
    )
    .await
    .expect("connect")
}

/// `server` over Streamable HTTP on a free loopback port, and a client of
/// it speaking `era`.
pub async fn connect_over_http(server: &Server, era: ProtocolVersion) -> Client {
    let url = serve_http(server).await;
    connect_http(&url, era).await
}
