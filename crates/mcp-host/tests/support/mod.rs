//! What the host's integration tests share: a scratch folder, and a real
//! server on loopback HTTP.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use mcp_server::Server;

/// A folder of its own for one test's files, removed at the end.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// An empty folder named after `test` (and this process).
    pub fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("mcp-host-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// The path of `name` in it.
    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Serves `server` over Streamable HTTP on a free loopback port; its URL.
pub async fn on_http(server: Server) -> String {
    on_http_endpoint(server).await.0
}

/// The same, with the endpoint (to end its sessions).
pub async fn on_http_endpoint(server: Server) -> (String, Arc<mcp_http::McpEndpoint>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let endpoint = mcp_http::McpEndpoint::new(
        Arc::new(server.clone()),
        server.session_config(),
        mcp_http::HttpConfig::loopback(port),
    );
    tokio::spawn(mcp_http::serve(
        listener,
        Arc::clone(&endpoint),
        std::future::pending(),
    ));
    (format!("http://127.0.0.1:{port}/mcp"), endpoint)
}

/// `fut`, or a panic naming `what` after 30 s.
pub async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(30), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} took more than 30 s"))
}

/// The client `builder` makes, connected to a gateway of `host` over an
/// in-memory transport.
pub async fn gateway_client(
    host: &mcp_host::Host,
    builder: mcp_client::ClientBuilder,
) -> mcp_client::Client {
    let gateway = mcp_host::Gateway::new(host.clone(), "test-host", "1.0");
    let (server_side, client_side) = mcp_core::Transport::pair();
    let _session = mcp_core::serve(
        server_side,
        Arc::new(gateway.clone()),
        gateway.session_config(),
    );
    within("connect", builder.connect(client_side))
        .await
        .expect("connect")
}
