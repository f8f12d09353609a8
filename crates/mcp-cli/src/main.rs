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
    /// Serve one of the built-in servers over stdio (one session, until
    /// stdin closes). Logs go to stderr; stdout carries only MCP messages.
    Serve {
        /// Which server to run.
        #[arg(value_enum)]
        server: BuiltIn,
    },
}

/// The built-in servers.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum BuiltIn {
    /// Every protocol feature, the conformance fixtures, `echo` and a calculator.
    Everything,
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
        } => {
            tracing::info!("serving everything over stdio");
            mcp_servers::everything::server().serve_stdio().await;
        }
    }
    Ok(())
}
