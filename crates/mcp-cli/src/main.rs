//! The `mcp` command: host, run, call and benchmark MCP servers. Its
//! subcommands, by purpose:
//!
//! - serving: `mcp serve NAME` (a built-in server, over stdio or
//!   Streamable HTTP), `mcp host` (the servers of the user's config files
//!   as one) and `mcp chat` (the host as a terminal agent);
//! - running a host: `mcp host status`, `restart`, `trust`, `disable` and
//!   `enable` ask a running host; `mcp host approve`, `explain` and
//!   `import-permissions` work on its settings file; `mcp audit` reads its
//!   audit log;
//! - calling a server: `mcp call`, `mcp tool`, `mcp tools`,
//!   `mcp resources`, `mcp read`, `mcp prompts`, `mcp prompt`, `mcp info`,
//!   and `mcp shell` for many commands over one connection;
//! - signing in: `mcp login`, `mcp logout`, `mcp credentials`;
//! - measuring: `mcp bench` (and `--sessions` for idle sessions).
//!
//! A command line meets, in order: `main`, which parses it (`Cli`), starts
//! the log (with `traces` exporting a host's spans) and the async runtime
//! (whose idle workers give memory back through `memory`, with mimalloc), and
//! runs the subcommand's module: `serve`, `host` or `chat`; `host_status`
//! (status and the actions on a running host) or `host_guard` (`approve`,
//! `explain`, `import-permissions`); `call` (`call`, `tool`), `inspect`
//! (`tools`, `resources`, `read`, `prompts`, `prompt`, `info`,
//! `tool --schema`) or `shell`; `login` (`login`, `logout`, `credentials`);
//! `bench` or `audit`. A client command then finds its server (its
//! `ServerArgs` are in `call`): `server_config` reads `--header`, `--env`,
//! `--cwd` and `--config` into a `connection_setup`, and `target` parses the
//! address and opens the connection (signing in where the server asks), with
//! `terminal` answering the server's sampling and elicitation (`form` asks
//! each field) and `server_log` showing its log; `progress` draws a request's
//! bar, `task` follows a call that runs as a task, and `listing` and
//! `tool_table` lay out the answer. `mcp host` reads its settings through
//! `host_guard`, serves through `serve` (`oauth` where `--oauth` protects the
//! endpoint), opens `host_admin` (the admin listener and the console) and
//! reloads through `file_watch`; the person it asks is at the terminal
//! (`tty`): `tty_approver` for approvals, `tty_reviewer` for sampling,
//! `tty_elicitor` for elicitation, `tty_inputs` for `${input:id}`. `chat`
//! runs such a host in process: `chat/input.rs` reads the person's lines,
//! `chat/agent.rs` runs the model's steps (each tool call asked about first
//! by `chat/approve.rs`), `chat/view.rs` shows them and `chat/history.rs`
//! keeps the conversation. `bench` sends its calls over Streamable HTTP on
//! `bench_http`'s lanes (else through the client), measures idle sessions in
//! `idle_sessions`, and reads what a run cost from `cpu_use`. `stdout` and
//! `stderr` write for a reader that may go away.
//! `bin/mcp-conformance-client.rs` is a binary of its own, the client the
//! official conformance suite drives.

mod audit;
mod bench;
mod bench_http;
mod call;
mod chat;
mod connection_setup;
mod cpu_use;
mod file_watch;
mod form;
mod host;
mod host_admin;
mod host_guard;
mod host_status;
mod idle_sessions;
mod inspect;
mod listing;
mod login;
#[cfg(feature = "mimalloc")]
mod memory;
mod oauth;
mod progress;
mod serve;
mod server_config;
mod server_log;
mod shell;
mod stderr;
mod stdout;
mod target;
mod task;
mod terminal;
mod tool_table;
mod traces;
mod tty;
mod tty_approver;
mod tty_elicitor;
mod tty_inputs;
mod tty_reviewer;

use anyhow::Result;
use clap::{Parser, Subcommand};

use call::ServerArgs;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Model Context Protocol tools: serve ready-made MCP servers, call any
/// MCP server.
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
        /// Which server to run, and its options.
        #[command(subcommand)]
        server: serve::BuiltIn,
    },
    /// Run the servers of your MCP config files (or, without --config, the
    /// built-in ones) behind one MCP endpoint: supervised, namespaced, and
    /// served over Streamable HTTP (default 127.0.0.1:8080) or --stdio.
    Host {
        #[command(subcommand)]
        action: Option<HostAction>,
        #[command(flatten)]
        args: Box<host::HostArgs>,
    },
    /// Converse with a model that uses every tool of the host's servers
    /// (your config files', or the built-in ones): each tool call asked
    /// about at the terminal and sent through the host's policy, limits
    /// and audit. `--print PROMPT` asks once, for scripts.
    Chat(chat::ChatArgs),
    /// Sends one request and prints its JSON result on stdout (errors on
    /// stderr, non-zero exit; a tool's result with `isError: true` is
    /// printed and exits 1). `tools/call NAME '{...}'` is accepted too.
    Call {
        #[command(flatten)]
        server: ServerArgs,
        /// The method, e.g. tools/list or resources/read.
        method: String,
        /// The params as one JSON object (for tools/call: the tool's name,
        /// then its arguments as JSON).
        params: Vec<String>,
    },
    /// Load-tests a server: closed-loop clients for a while, then
    /// throughput, latency percentiles, errors (and with --pid the
    /// server's CPU and memory).
    Bench(bench::BenchArgs),
    /// Lists a server's tools as a table (`*` marks required arguments).
    Tools {
        #[command(flatten)]
        server: ServerArgs,
        /// Print the tools as JSON, whole.
        #[arg(long)]
        json: bool,
    },
    /// Shows the records of a host's audit log (`mcp host --audit FILE`):
    /// a table or JSON lines, filtered by time, caller, server, tool,
    /// decision and outcome; --follow for new ones as they come.
    Audit(audit::AuditArgs),
    /// Signs in to a server now and keeps the credentials for later
    /// commands (or, with --list, lists what is kept).
    Login(login::LoginArgs),
    /// Forgets the tokens and client registration kept for a server.
    Logout(login::LogoutArgs),
    /// Lists the servers signed in to: issuer, server, client id, scopes
    /// and when the token expires (never the tokens themselves).
    Credentials,
    /// Calls one tool with key=value arguments (typed by the tool's
    /// schema; JSON for numbers, booleans, objects) and prints its text.
    Tool {
        #[command(flatten)]
        server: ServerArgs,
        /// The tool's name.
        name: String,
        /// Its arguments, as key=value.
        arguments: Vec<String>,
        /// Print the tool's input (and output) schema instead of calling it.
        #[arg(long, conflicts_with = "arguments")]
        schema: bool,
        /// Run the call as a task (2025-11-25) where the tool allows it;
        /// a tool that runs only as a task always does. In 2026-07-28 the
        /// server chooses, and a task it starts is followed likewise. A
        /// task's status shows on stderr; Ctrl-C cancels it.
        #[arg(long)]
        task: bool,
    },
    #[command(flatten)]
    Inspect(inspect::Inspect),
    /// Connects to a server once, then takes commands at a prompt (tools,
    /// tool, resources, read, prompts, prompt, info, call), with Tab
    /// completion of names, a history, and `transcript on` to see each
    /// exchange.
    Shell {
        #[command(flatten)]
        server: ServerArgs,
    },
}

/// What `mcp host` can do besides serving.
#[derive(Subcommand, Debug)]
enum HostAction {
    /// Shows each server of a running host: state, transport, revision,
    /// counts, restarts and last error.
    Status(host_status::StatusArgs),
    /// Restarts a server of a running host, through its admin listener:
    /// its connection is closed (a child process stopped) and a new one
    /// made at once.
    Restart(host_status::RestartArgs),
    /// Trusts a server a running host holds until a person approves its
    /// command line (one from a workspace's files, or one a reload added or
    /// changed), through its admin listener: it is kept as trusted and
    /// started.
    Trust(host_status::RestartArgs),
    /// Disables a server of a running host, through its admin listener:
    /// it is stopped and leaves the catalog until `mcp host enable`.
    Disable(host_status::RestartArgs),
    /// Starts again a server a running host has disabled.
    Enable(host_status::RestartArgs),
    /// Pins the definitions of a server's tools, prompts and resources
    /// that changed since they were pinned, as they are now: a running
    /// host calls them again.
    Approve(host_guard::ApproveArgs),
    /// Says how the policy of a settings file decides a request: the
    /// decision, the rule, and why each other rule does not match.
    Explain(Box<host_guard::ExplainArgs>),
    /// Prints the `[[policy]]` rules that other hosts' permission lists
    /// make (Claude Code and the Cursor CLI `permissions`, Cursor
    /// `mcpAllowlist`, Cline `autoApprove`, Roo Code `alwaysAllow`), for a
    /// settings file.
    ImportPermissions(host_guard::ImportArgs),
}

/// The log on stderr, filtered by `--log` (or RUST_LOG, else warnings).
/// A child server's stderr lines are in it at `info` (target
/// `mcp_core::child`); its last lines are kept whatever the filter, to
/// tell why it failed (see [`mcp_core::child::StderrTail`]).
fn init_logging(
    filter: Option<&str>,
    traces: Option<&mcp_host::traces::TracesSettings>,
) -> Option<opentelemetry_sdk::trace::SdkTracerProvider> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = filter
        .map(tracing_subscriber::EnvFilter::new)
        .or_else(|| tracing_subscriber::EnvFilter::try_from_default_env().ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new("warn"));
    let log = tracing_subscriber::fmt::layer()
        .with_writer(|| stderr::QuietStderr)
        .with_ansi(false)
        .with_filter(filter);
    // `mcp host`'s span exporter, where its settings configure one: it
    // sees the host's spans only.
    let (exporter, provider) = match traces.map(traces::layer) {
        Some(Ok((layer, provider))) => (Some(layer), Some(provider)),
        Some(Err(error)) => {
            stderr::print_err(&format!("traces are not exported: {error:#}"));
            (None, None)
        }
        None => (None, None),
    };
    // A static filter, and no layer at all without traces: nothing on the
    // way of the log's callsites, which stay off unless logged.
    let exporter = exporter.map(|layer| {
        layer.with_filter(
            tracing_subscriber::filter::Targets::new()
                .with_target(mcp_host::traces::TARGET, tracing::Level::TRACE),
        )
    });
    tracing_subscriber::registry()
        .with(exporter)
        .with(log)
        .init();
    provider
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let traces = match &cli.command {
        Command::Host { action: None, args } => traces::settings_of(args.files.settings.as_deref()),
        _ => None,
    };
    let exporting = init_logging(cli.log.as_deref(), traces.as_ref());
    let runtime = match runtime_for(&cli.command) {
        Ok(runtime) => runtime,
        Err(error) => {
            stderr::print_err(&format!("Error: cannot start the async runtime: {error}"));
            return std::process::ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(run(cli));
    drop(runtime);
    if let Some(provider) = exporting {
        traces::finish(provider);
    }
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            stderr::print_err(&format!("Error: {error:#}"));
            std::process::ExitCode::FAILURE
        }
    }
}

/// The runtime `command` runs on. Most commands get tokio's
/// multi-threaded runtime, one worker per core. `mcp host` leaves half
/// the cores to the servers it runs as children, so it gets a worker for
/// every two cores. Where that leaves one worker, and for `mcp serve` over
/// stdio (one connection to serve), the command runs on tokio's
/// current-thread runtime instead: a multi-threaded runtime of one worker
/// still polls the command's own future on a second thread (the main one)
/// and hands tasks between the two, and each hand-off wakes a thread.
/// `TOKIO_WORKER_THREADS` gives any command a multi-threaded runtime of
/// that many workers.
fn runtime_for(command: &Command) -> std::io::Result<tokio::runtime::Runtime> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers_set = std::env::var_os("TOKIO_WORKER_THREADS").is_some();
    runtime(threads_for(command, cores, workers_set))
}

/// The threads a command's runtime runs its tasks on.
#[derive(Debug, PartialEq)]
enum Threads {
    /// One: tokio's current-thread runtime, on the thread that starts it.
    One,
    /// A multi-threaded runtime of this many workers.
    Workers(usize),
    /// A multi-threaded runtime of tokio's choice: one worker per core, or
    /// `TOKIO_WORKER_THREADS`.
    PerCore,
}

/// The threads for `command` on a machine of `cores`, `workers_set` when
/// `TOKIO_WORKER_THREADS` is.
fn threads_for(command: &Command, cores: usize, workers_set: bool) -> Threads {
    match command {
        _ if workers_set => Threads::PerCore,
        Command::Serve { server } if server.over_stdio() => Threads::One,
        Command::Host { action: None, .. } if cores / 2 > 1 => Threads::Workers(cores / 2),
        Command::Host { action: None, .. } => Threads::One,
        _ => Threads::PerCore,
    }
}

/// A runtime on `threads`, with its I/O and time drivers. The workers of
/// a multi-threaded runtime give freed memory back as they go idle (see
/// [`memory`]): memory one allocates, another frees.
fn runtime(threads: Threads) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = match threads {
        Threads::One => tokio::runtime::Builder::new_current_thread(),
        Threads::Workers(workers) => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(workers);
            builder
        }
        Threads::PerCore => tokio::runtime::Builder::new_multi_thread(),
    };
    #[cfg(feature = "mimalloc")]
    if threads != Threads::One {
        builder.on_thread_park(memory::collect_when_idle);
    }
    let runtime = builder.enable_all().build()?;
    #[cfg(feature = "mimalloc")]
    if threads != Threads::One {
        memory::sweep_idle_workers(runtime.handle().clone());
    }
    Ok(runtime)
}

/// Runs one command.
async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Serve { server } => server.run().await?,
        Command::Host {
            action: Some(HostAction::Status(args)),
            ..
        } => host_status::status(&args).await?,
        Command::Host {
            action: Some(HostAction::Restart(args)),
            ..
        } => host_status::restart(&args).await?,
        Command::Host {
            action: Some(HostAction::Trust(args)),
            ..
        } => host_status::trust(&args).await?,
        Command::Host {
            action: Some(HostAction::Disable(args)),
            ..
        } => host_status::disable(&args).await?,
        Command::Host {
            action: Some(HostAction::Enable(args)),
            ..
        } => host_status::enable(&args).await?,
        Command::Host {
            action: Some(HostAction::Approve(args)),
            ..
        } => host_guard::approve(&args)?,
        Command::Host {
            action: Some(HostAction::Explain(args)),
            ..
        } => host_guard::explain(&args)?,
        Command::Host {
            action: Some(HostAction::ImportPermissions(args)),
            ..
        } => host_guard::import_permissions(&args)?,
        Command::Host { action: None, args } => host::run(&args).await?,
        Command::Chat(args) => chat::run(&args).await?,
        Command::Call {
            server,
            method,
            params,
        } => call::call(&server, &method, &params).await?,
        Command::Tools { server, json } => inspect::tools(&server, json).await?,
        Command::Bench(args) => bench::run(&args).await?,
        Command::Audit(args) => audit::run(&args).await?,
        Command::Login(args) => login::login(&args).await?,
        Command::Logout(args) => login::logout(&args).await?,
        Command::Credentials => login::list()?,
        Command::Tool {
            server,
            name,
            schema: true,
            ..
        } => inspect::tool_schema(&server, &name).await?,
        Command::Tool {
            server,
            name,
            arguments,
            task,
            ..
        } => call::tool(&server, &name, &arguments, task).await?,
        Command::Inspect(command) => inspect::run(command).await?,
        Command::Shell { server } => shell::run(&server).await?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::runtime::RuntimeFlavor;

    fn threads(args: &[&str], cores: usize, workers_set: bool) -> Threads {
        let cli = Cli::try_parse_from(std::iter::once("mcp").chain(args.iter().copied()))
            .expect("the arguments parse");
        threads_for(&cli.command, cores, workers_set)
    }

    #[test]
    fn one_thread_serves_what_one_thread_can() {
        let stdio = ["serve", "everything"];
        let http = ["serve", "everything", "--http", "127.0.0.1:0"];
        let tools = ["tools", "--server", "mcp serve everything"];
        for cores in [1, 2, 8] {
            assert_eq!(
                threads(&stdio, cores, false),
                Threads::One,
                "stdio has one connection"
            );
            assert_eq!(
                threads(&http, cores, false),
                Threads::PerCore,
                "HTTP serves many"
            );
            assert_eq!(threads(&tools, cores, false), Threads::PerCore);
        }
        // The host leaves half the cores to its children.
        for (cores, host) in [
            (1, Threads::One),
            (2, Threads::One),
            (3, Threads::One),
            (4, Threads::Workers(2)),
            (9, Threads::Workers(4)),
        ] {
            assert_eq!(threads(&["host"], cores, false), host, "on {cores} cores");
        }
        // TOKIO_WORKER_THREADS decides for every command.
        for args in [&stdio[..], &["host"]] {
            assert_eq!(threads(args, 2, true), Threads::PerCore, "{args:?}");
        }
    }

    #[test]
    fn the_threads_make_the_runtime() {
        let made = |threads| {
            let runtime = runtime(threads).expect("it builds");
            let handle = runtime.handle();
            (handle.runtime_flavor(), handle.metrics().num_workers())
        };
        assert_eq!(made(Threads::One), (RuntimeFlavor::CurrentThread, 1));
        assert_eq!(made(Threads::Workers(3)), (RuntimeFlavor::MultiThread, 3));
        assert_eq!(made(Threads::PerCore).0, RuntimeFlavor::MultiThread);
    }
}
