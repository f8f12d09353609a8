//! `mcp chat`: the host as an interactive terminal agent. The servers of
//! the user's config files (or the embedded default) run in a host in
//! this process; a model (`[model]` of the settings file, or the flags)
//! converses with the person and uses every tool of the host's catalog,
//! each call going through the host's whole path (policy, consent, limits,
//! audit) as any client's would, asked about at the terminal first.
//!
//! `--print PROMPT` asks once and prints the answer (`--json`: the whole
//! exchange) for scripts; otherwise a conversation with line editing,
//! `/server__prompt arg=value` to use a prompt, `@uri` to attach a
//! resource, and Ctrl-C to cancel the step running (and its tool call,
//! upstream). Conversations are kept, and `--resume` takes one up again.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use mcp_host::model::{Model, ModelSettings, ProviderKind};
use mcp_host::{Gateway, Host};

use crate::host::HostFiles;
use crate::stderr::print_err;

mod agent;
mod approve;
mod history;
mod input;
mod view;

pub(crate) use agent::Agent;

/// The flags of `mcp chat`.
#[derive(clap::Args, Debug)]
pub struct ChatArgs {
    #[command(flatten)]
    pub files: HostFiles,
    /// The model's name at its provider (instead of `[model] model`).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// The provider's API, e.g. http://127.0.0.1:11434/v1 (instead of
    /// `[model] base_url`).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The provider's protocol: openai (any OpenAI-compatible server) or
    /// anthropic (instead of `[model] provider`).
    #[arg(long, value_name = "KIND", value_parser = parse_provider)]
    pub provider: Option<ProviderKind>,
    /// A system prompt for the conversation.
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// Ask this once, print the answer on stdout and exit (stdin is not
    /// read).
    #[arg(long, value_name = "PROMPT")]
    pub print: Option<String>,
    /// With --print: print the whole exchange as JSON (the answer, each
    /// tool call with its arguments and result, the model, the stop
    /// reason, the tokens used).
    #[arg(long, requires = "print")]
    pub json: bool,
    /// The model's first step must call this tool (its name as the
    /// catalog lists it); it then answers without tools.
    #[arg(long, value_name = "TOOL")]
    pub tool: Option<String>,
    /// Run the model's tool calls without asking at the terminal (rules
    /// of the settings file that say `ask` still ask).
    #[arg(long)]
    pub yes: bool,
    /// The most model steps for one prompt (each answer or round of tool
    /// calls is a step).
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub max_steps: usize,
    /// Take up a kept conversation again: its id, or `last`.
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// How long to wait for servers still starting before the first
    /// prompt (seconds).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub start_timeout: f64,
}

fn parse_provider(text: &str) -> Result<ProviderKind, String> {
    match text {
        "openai" => Ok(ProviderKind::Openai),
        "anthropic" => Ok(ProviderKind::Anthropic),
        other => Err(format!("{other:?} is neither openai nor anthropic")),
    }
}

/// The model: `[model]` of the settings, with what the flags say instead.
fn model_of(args: &ChatArgs, settings: &mcp_host::HostSettings) -> Result<Model> {
    let mut model = match (&settings.model, &args.model) {
        (Some(model), _) => model.clone(),
        (None, Some(name)) => ModelSettings::openai("http://127.0.0.1:8000/v1", name),
        (None, None) => bail!(
            "no model: give one with --model NAME (and --base-url, --provider), or [model] in the \
             settings file (--settings FILE); see `mcp chat --help`"
        ),
    };
    if let Some(name) = &args.model {
        model.model = name.clone();
    }
    if let Some(provider) = args.provider {
        if settings.model.as_ref().map(|m| m.provider) != Some(provider) {
            model.base_url = None;
        }
        model.provider = provider;
    }
    if let Some(url) = &args.base_url {
        model.base_url = Some(url.clone());
    }
    Model::new(model).map_err(anyhow::Error::msg)
}

/// Runs `mcp chat`.
pub async fn run(args: &ChatArgs) -> Result<()> {
    let settings = crate::host_guard::settings_of(args.files.settings.as_deref())?;
    let model = model_of(args, &settings)?;
    let mut options = settings.options().map_err(anyhow::Error::msg)?;
    // Sampling at the host uses the same model.
    if options.sampling.models.is_empty() {
        options.sampling.models.push(model.settings().clone());
    }
    crate::host::with_sign_in(&mut options);
    crate::host::with_people(&mut options, &settings)?;
    if let Some(audit) = settings.audit() {
        options.audit = Some(mcp_host::AuditLog::open(audit).map_err(anyhow::Error::msg)?);
    }
    let vars = crate::host::variables(&args.files)?;
    let config = crate::host::load(&args.files, &vars)?;
    let host = Host::start(config, options);
    host.wait_started(Duration::from_secs_f64(args.start_timeout.max(0.0)))
        .await;
    let client = connect(&host).await?;
    let kept = history::Kept::open(args.resume.as_deref())?;
    let mut agent = Agent::new(model, client, kept.conversation.clone(), args).await?;
    let outcome = match &args.print {
        Some(prompt) => print_once(&mut agent, prompt, args).await,
        None => input::converse(&mut agent, kept, args).await,
    };
    host.shutdown(Duration::from_secs(5)).await;
    outcome
}

/// A client of the host's gateway, in this process.
async fn connect(host: &Host) -> Result<mcp_client::Client> {
    let gateway = Gateway::new(host.clone(), "mcp-host", env!("CARGO_PKG_VERSION"));
    let (server_side, client_side) = mcp_core::Transport::pair();
    let _session = mcp_core::serve(
        server_side,
        Arc::new(gateway.clone()),
        gateway.session_config(),
    );
    mcp_client::Client::builder("mcp-chat", env!("CARGO_PKG_VERSION"))
        .connect(client_side)
        .await
        .context("the host's gateway did not take the connection")
}

/// `--print`: one prompt, its answer on stdout.
async fn print_once(agent: &mut Agent, prompt: &str, args: &ChatArgs) -> Result<()> {
    let view = view::Plain::new(!args.json);
    let (parts, problems) = agent.user_parts(prompt).await;
    for problem in problems {
        print_err(&problem);
    }
    let outcome = agent.ask(parts, args.tool.as_deref(), &view).await;
    view.end_line();
    let turn = match outcome {
        Ok(turn) => turn,
        Err(agent::Stopped::Cancelled) => {
            print_err("cancelled");
            std::process::exit(130);
        }
        Err(agent::Stopped::Failed(error)) => return Err(error),
    };
    if args.json {
        crate::stdout::print_json(&turn.to_json())?;
    } else if !turn.streamed {
        println!("{}", turn.answer);
    }
    Ok(())
}

/// Where kept conversations are: `$XDG_STATE_HOME/mcp/chats`.
fn chats_dir() -> PathBuf {
    crate::target::xdg_dir("XDG_STATE_HOME", ".local/state").join("chats")
}
