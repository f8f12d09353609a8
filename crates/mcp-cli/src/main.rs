//! The `mcp` command: run, host, call and benchmark MCP servers.

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};

/// Model Context Protocol tools: serve ready-made MCP servers.
#[derive(Parser, Debug)]
#[command(name = "mcp", version, about, long_about = None)]
struct Cli {
    /// Log filter for stderr, e.g. `info` or `mcp_core=debug` (default: warn,
    /// or the RUST_LOG environment variable).
    #[arg(long, global = true)]
    log: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve one of the built-in servers: over stdio by default (one
    /// session, until stdin closes; stdout carries only MCP messages), or
    /// over Streamable HTTP with --http.
    Serve {
        /// Which server to run.
        #[arg(value_enum)]
        server: BuiltIn,
        /// Serve over Streamable HTTP on this address (port 0 picks a free
        /// one), e.g. 127.0.0.1:8080. The endpoint is /mcp.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// Also accept these Host names and Origins (repeatable), beyond
        /// the loopback ones; `*` accepts any (only behind a trusted proxy).
        #[arg(long, value_name = "HOST_OR_ORIGIN")]
        allow: Vec<String>,
    },
}

/// The built-in servers.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum BuiltIn {
    /// Every protocol feature, the conformance fixtures, `echo` and a calculator.
    Everything,
}

/// Serves `server` over Streamable HTTP until Ctrl-C or SIGTERM.
async fn serve_http(
    server: mcp_server::Server,
    addr: std::net::SocketAddr,
    allow: &[String],
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
    println!("MCP endpoint: http://{local}/mcp");
    mcp_http::serve(listener, endpoint, shutdown_signal()).await?;
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

fn init_logging(filter: Option<&str>) {
    let filter = filter
        .map(tracing_subscriber::EnvFilter::new)
        .or_else(|| tracing_subscriber::EnvFilter::try_from_default_env().ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    init_logging(cli.log.as_deref());
    match cli.command {
        Command::Serve {
            server: BuiltIn::Everything,
            http: None,
            ..
        } => {
            tracing::info!("serving everything over stdio");
            mcp_servers::everything::server().serve_stdio().await;
        }
        Command::Serve {
            server: BuiltIn::Everything,
            http: Some(addr),
            allow,
        } => {
            serve_http(mcp_servers::everything::server(), addr, &allow).await?;
        }
    }
    Ok(())
}
