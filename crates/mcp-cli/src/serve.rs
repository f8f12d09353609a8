//! `mcp serve`: the built-in servers over stdio or Streamable HTTP.

use anyhow::Result;

use crate::stdout::print_out;

/// Serves `server` over Streamable HTTP until Ctrl-C or SIGTERM.
pub async fn serve_http(
    server: mcp_server::Server,
    addr: std::net::SocketAddr,
    allow: &[String],
    oauth: &crate::oauth::OAuthArgs,
) -> Result<()> {
    use anyhow::Context as _;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    let mut policy = mcp_http::OriginPolicy::loopback(local.port());
    for entry in allow {
        policy = if entry == "*" {
            mcp_http::OriginPolicy::any()
        } else if entry.contains("://") {
            policy.allow_origin(entry)
        } else {
            policy.allow_host(entry)
        };
    }
    let config = mcp_http::HttpConfig::loopback(local.port()).origin_policy(policy);
    let endpoint = mcp_http::McpEndpoint::new(
        std::sync::Arc::new(server.clone()),
        server.session_config(),
        config,
    );
    let origin = format!("http://{local}");
    let resource = format!("{origin}/mcp");
    if oauth.enabled() {
        let protect = crate::oauth::protect(oauth, &origin, &resource).await?;
        print_out(&format!("MCP endpoint: {resource}\n"))?;
        if oauth.oauth {
            print_out(&format!("OAuth issuer: {origin}\n"))?;
        }
        mcp_http::serve_with(listener, endpoint, protect, shutdown_signal()).await?;
    } else {
        print_out(&format!("MCP endpoint: {resource}\n"))?;
        mcp_http::serve(listener, endpoint, shutdown_signal()).await?;
    }
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! {
            _ = interrupt => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
