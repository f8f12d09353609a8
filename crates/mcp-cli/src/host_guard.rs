//! The host's guard, offline: `mcp host approve` (changed definitions
//! pinned anew), `mcp host explain` (how the policy decides a request)
//! and `mcp host import-permissions` (other hosts' permission lists as
//! rules), all on the settings file's store and rules; and the store a
//! running host opens.

use std::path::PathBuf;

use anyhow::{Context as _, Result, bail};
use mcp_host::HostSettings;
use serde_json::Value;

use crate::stderr::print_err;
use crate::stdout::print_out;

/// The settings in `file`, or the defaults without one.
pub(crate) fn settings_of(file: Option<&std::path::Path>) -> Result<HostSettings> {
    Ok(match file {
        Some(path) => HostSettings::load(path)?,
        None => HostSettings::default(),
    })
}

/// The guard's store: `[guard] store`, else the user's state folder.
pub(crate) fn open_store(settings: &HostSettings) -> Result<mcp_host::consent::GuardStore> {
    let path = settings.guard.store.clone().unwrap_or_else(|| {
        crate::target::xdg_dir("XDG_STATE_HOME", ".local/state").join("guard.sqlite")
    });
    mcp_host::consent::GuardStore::open(&path).map_err(anyhow::Error::msg)
}

/// The flags of `mcp host approve`.
#[derive(clap::Args, Debug)]
pub struct ApproveArgs {
    /// The server, by its name in the config.
    pub server: String,
    /// The tool, prompt or resource (its name at the server; a glob).
    #[arg(default_value = "*")]
    pub name: String,
    /// The host's settings file, whose `[guard] store` keeps the pins
    /// (default: the user's state folder).
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
}

/// Runs `mcp host approve`: the definitions of `server` that changed
/// since they were pinned are pinned as they are now.
pub fn approve(args: &ApproveArgs) -> Result<()> {
    let settings = settings_of(args.settings.as_deref())?;
    let store = open_store(&settings)?;
    let approved = store
        .approve(&args.server, &args.name)
        .map_err(anyhow::Error::msg)?;
    if approved.is_empty() {
        bail!(
            "no definition of server {:?} matching {:?} waits for approval (in {})",
            args.server,
            args.name,
            store.path().display()
        );
    }
    let mut out = String::new();
    for item in approved {
        out.push_str(&format!("approved: {} {item}\n", args.server));
    }
    print_out(&out)
}

/// The flags of `mcp host explain`.
#[derive(clap::Args, Debug)]
pub struct ExplainArgs {
    /// The server, by its name in the config.
    pub server: String,
    /// The tool's name at the server (with --prompt, a prompt's; with
    /// --resource, a resource's URI).
    pub name: String,
    /// NAME is a prompt.
    #[arg(long, conflicts_with = "resource")]
    pub prompt: bool,
    /// NAME is a resource's URI.
    #[arg(long)]
    pub resource: bool,
    /// The caller's OAuth subject (default: anonymous).
    #[arg(long, value_name = "SUBJECT")]
    pub caller: Option<String>,
    /// A scope the caller's token holds (repeatable).
    #[arg(long = "scope", value_name = "SCOPE")]
    pub scopes: Vec<String>,
    /// A claim of the caller's token, NAME=VALUE (repeatable; a VALUE
    /// given twice makes a list).
    #[arg(long = "claim", value_name = "NAME=VALUE")]
    pub claims: Vec<String>,
    /// The OAuth client the token was issued to.
    #[arg(long, value_name = "ID")]
    pub client_id: Option<String>,
    /// The client's own name (clientInfo).
    #[arg(long, value_name = "NAME")]
    pub client: Option<String>,
    /// The view the request comes through (`[views.NAME]`); without it,
    /// the whole catalog.
    #[arg(long, value_name = "NAME")]
    pub view: Option<String>,
    /// The tool's annotations, as its server lists them (JSON).
    #[arg(long, value_name = "JSON")]
    pub annotations: Option<String>,
    /// The server is marked trusted (its annotations are believed).
    #[arg(long)]
    pub trusted: bool,
    /// The request's arguments (a JSON object), for rules that read them;
    /// without it, the request has none.
    #[arg(long, value_name = "JSON")]
    pub arguments: Option<String>,
    /// The host's settings file, whose `[[policy]]` rules decide.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// A policy file whose rules decide instead (as `mcp host --policy`).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
}

/// Runs `mcp host explain`: how the policy decides a request, and why
/// each rule matches it or not.
pub fn explain(args: &ExplainArgs) -> Result<()> {
    use mcp_host::policy::{Asked, Caller, Hints, Kind};
    let mut settings = settings_of(args.settings.as_deref())?;
    if let Some(file) = &args.policy {
        settings.with_policy_file(mcp_host::settings::PolicyFile::load(file)?);
    }
    let options = settings.options().map_err(anyhow::Error::msg)?;
    let mut caller = Caller {
        subject: args.caller.clone(),
        client_id: args.client_id.clone(),
        scopes: args.scopes.clone(),
        client_name: args.client.clone(),
        view: args.view.clone(),
        token: None,
    };
    if !args.claims.is_empty() {
        let mut token = mcp_auth::Principal::new(args.scopes.clone());
        for given in &args.claims {
            let (name, value) = given
                .split_once('=')
                .with_context(|| format!("--claim {given:?}: NAME=VALUE"))?;
            let value = Value::String(value.to_owned());
            match token.claims.get_mut(name) {
                Some(Value::Array(values)) => values.push(value),
                Some(first) => *first = Value::Array(vec![first.clone(), value]),
                None => {
                    token.claims.insert(name.to_owned(), value);
                }
            }
        }
        caller.token = Some(std::sync::Arc::new(token));
    }
    let kind = match (args.prompt, args.resource) {
        (true, _) => Kind::Prompt,
        (_, true) => Kind::Resource,
        _ => Kind::Tool,
    };
    let annotations: Option<Value> = args
        .annotations
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .context("--annotations must be JSON")?;
    let hints = (kind == Kind::Tool).then(|| Hints::believed(annotations.as_ref(), args.trusted));
    let arguments: Value = match args.arguments.as_deref() {
        None => Value::Null,
        Some(text) => match serde_json::from_str(text).context("--arguments must be JSON")? {
            object @ Value::Object(_) => object,
            _ => anyhow::bail!("--arguments must be a JSON object"),
        },
    };
    let (verdict, rules) = options.policy.explain(&Asked {
        caller: &caller,
        server: &args.server,
        kind,
        name: &args.name,
        hints,
        arguments: Some(&arguments),
    });
    let mut out = format!(
        "{} {:?} of server {:?} for caller {:?}: {} ({})\n",
        kind.as_str(),
        args.name,
        args.server,
        caller.name(),
        verdict.decision,
        verdict.decided_by()
    );
    for (name, decision, why_not) in &rules {
        match why_not {
            None => out.push_str(&format!("  {name} ({decision}): matches\n")),
            Some(why) => out.push_str(&format!("  {name} ({decision}): no, {why}\n")),
        }
    }
    out.push_str(&format!(
        "  where no rule matches: {}\n",
        options.policy.default_decision()
    ));
    print_out(&out)
}

/// The flags of `mcp host import-permissions`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// Files of other hosts: Claude Code settings (`permissions`), Cline or
    /// Roo Code MCP settings (`autoApprove`, `alwaysAllow`).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// Runs `mcp host import-permissions`: prints the `[[policy]]` rules the
/// files' permissions make, for a settings file; says on stderr what
/// could not be carried over.
pub fn import_permissions(args: &ImportArgs) -> Result<()> {
    let mut out = String::new();
    for file in &args.files {
        let source = file.display().to_string();
        let text =
            std::fs::read_to_string(file).with_context(|| format!("cannot read {source}"))?;
        let imported =
            mcp_host::policy::import::import(&text, &source).map_err(anyhow::Error::msg)?;
        for skipped in &imported.skipped {
            print_err(&format!("{source}: left out: {skipped}"));
        }
        out.push_str(&format!("# From {source}\n"));
        if imported.wants_ask_default {
            out.push_str(
                "# These tools ran there without asking; with [guard] default = \"ask\" the\n\
                 # others are put to a person first.\n",
            );
        }
        out.push_str(&mcp_host::policy::import::as_settings(&imported.rules));
        out.push('\n');
    }
    print_out(&out)
}
