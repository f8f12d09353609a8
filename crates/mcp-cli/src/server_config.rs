//! What a client command needs beyond the server's address: HTTP headers
//! (`--header`, with `${VAR}` expanded), a child's environment and folder
//! (`--env`, `--cwd`), and servers named in an MCP config file
//! (`--config FILE --server NAME`, read as `mcp host` reads it).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, Result, anyhow, bail};
use http::{HeaderName, HeaderValue};
use mcp_client::EraChoice;
use mcp_host::config::{HostConfig, ServerConfig, TransportSpec, Variables};

use crate::connection_setup::Setup;
use crate::target::Target;
use crate::tty_inputs::TtyInputs;

/// The flags that say how to reach a server, besides `--server`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ReachArgs {
    /// An HTTP header sent with every request, `'Name: value'`
    /// (repeatable); `${VAR}` in the value is the environment variable's
    /// value.
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// An environment variable for a server run as a child, `KEY=VALUE`
    /// (repeatable), on top of this program's environment (or of the
    /// minimal one `mcp host` gives a config file's servers).
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// The folder a server run as a child starts in.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// An MCP config file (repeatable; later files override earlier
    /// entries): --server then names one of its servers. Claude Desktop
    /// `mcpServers`, VS Code `servers`, or Zed `context_servers`, with
    /// their variables, as `mcp host` reads them.
    #[arg(long, value_name = "FILE")]
    pub config: Vec<PathBuf>,
}

/// A server resolved from the flags: where it is, how to reach it, and
/// the era to speak.
#[derive(Debug)]
pub struct Resolved {
    /// The server.
    pub target: Target,
    /// Headers, environment, folder.
    pub setup: Setup,
    /// The protocol era.
    pub era: EraChoice,
}

impl ReachArgs {
    /// Resolves `--server` (a name in the config files when `--config` is
    /// given) with these flags; a config entry's era applies when `era`
    /// is `auto`.
    pub fn resolve(&self, server: &str, era: EraChoice) -> Result<Resolved> {
        let mut resolved = if self.config.is_empty() {
            Resolved {
                target: Target::parse(server)?,
                setup: Setup::default(),
                era,
            }
        } else {
            let vars = Variables::from_process().inputs(Arc::new(TtyInputs));
            let config = HostConfig::load(&self.config, &vars)?;
            from_entry(find_entry(&config, server, &self.config)?, era)?
        };
        let setup = &mut resolved.setup;
        for header in &self.headers {
            let (name, value) = parse_header(header, &Variables::from_process())?;
            setup.headers.retain(|(n, _)| *n != name);
            setup.headers.push((name, value));
        }
        for pair in &self.env {
            let (key, value) = pair
                .split_once('=')
                .filter(|(key, _)| !key.is_empty())
                .ok_or_else(|| anyhow!("--env {pair:?} is not KEY=VALUE"))?;
            setup.env.insert(key.to_owned(), value.to_owned());
        }
        if let Some(cwd) = &self.cwd {
            if !cwd.is_dir() {
                bail!("--cwd {}: there is no such folder", cwd.display());
            }
            setup.cwd = Some(cwd.clone());
        }
        match &resolved.target {
            Target::Command(_) if !self.headers.is_empty() => {
                bail!(
                    "--header is for servers reached over HTTP or WebSocket; {} runs as a child over stdio",
                    resolved.target
                )
            }
            Target::Http(_) | Target::WebSocket(_) if !self.env.is_empty() => {
                bail!(
                    "--env is for servers run as a child; {} is reached over the network",
                    resolved.target
                )
            }
            Target::Http(_) | Target::WebSocket(_) if self.cwd.is_some() => {
                bail!(
                    "--cwd is for servers run as a child; {} is reached over the network",
                    resolved.target
                )
            }
            _ => Ok(resolved),
        }
    }
}

/// The entry named `name`; when there is none, why, or which names there are.
fn find_entry<'a>(
    config: &'a HostConfig,
    name: &str,
    files: &[PathBuf],
) -> Result<&'a ServerConfig> {
    if let Some(entry) = config.servers.iter().find(|s| s.name == name) {
        return Ok(entry);
    }
    if let Some(problem) = config.problems.iter().find(|p| p.server == name) {
        bail!("{problem}");
    }
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let names: Vec<&str> = config
        .servers
        .iter()
        .map(|s| s.name.as_str())
        .chain(config.problems.iter().map(|p| p.server.as_str()))
        .collect();
    if names.is_empty() {
        bail!("no server {name:?} in {}: it lists none", files.join(", "));
    }
    bail!(
        "no server {name:?} in {}; it lists: {}",
        files.join(", "),
        names.join(", ")
    )
}

/// The target, setup and era of a config entry.
fn from_entry(entry: &ServerConfig, era: EraChoice) -> Result<Resolved> {
    let mut setup = Setup::default();
    let target = match &entry.transport {
        TransportSpec::Stdio(stdio) => {
            setup.env = stdio.env.clone();
            setup.minimal_env = true;
            setup.cwd = stdio.cwd.clone();
            Target::Command(stdio.words().cloned().collect())
        }
        TransportSpec::Http { url, headers, kind } => {
            for (name, value) in headers {
                setup.headers.push(header(name, value)?);
            }
            setup.http_kind = (*kind).into();
            Target::Http(url.clone())
        }
        TransportSpec::WebSocket { url } => Target::WebSocket(url.clone()),
        other => bail!("server {:?}: mcp cannot reach {other:?}", entry.name),
    };
    let era = match era {
        EraChoice::Auto => entry
            .era
            .parse()
            .map_err(|e| anyhow!("server {:?}: {e}", entry.name))?,
        chosen => chosen,
    };
    Ok(Resolved { target, setup, era })
}

/// Reads `Name: value`, expanding `${VAR}` in the value.
fn parse_header(text: &str, vars: &Variables) -> Result<(HeaderName, HeaderValue)> {
    let (name, value) = text
        .split_once(':')
        .filter(|(name, _)| !name.trim().is_empty())
        .ok_or_else(|| anyhow!("--header {text:?} is not 'Name: value'"))?;
    let name = name.trim();
    let value = vars
        .expand(value.trim(), &[])
        .map_err(|e| anyhow!("--header {name}: {e}"))?;
    header(name, &value).context("--header")
}

/// A header, checked.
fn header(name: &str, value: &str) -> Result<(HeaderName, HeaderValue)> {
    mcp_host::config::http_header(name, value).map_err(anyhow::Error::msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Variables {
        Variables::from_map(std::collections::BTreeMap::from([(
            "TOKEN".to_owned(),
            "t0k".to_owned(),
        )]))
    }

    #[test]
    fn headers_expand_variables_and_name_the_missing_one() {
        let (name, value) = parse_header("Authorization: Bearer ${TOKEN}", &vars()).unwrap();
        assert_eq!(name, http::header::AUTHORIZATION);
        assert_eq!(value, "Bearer t0k");
        let (name, value) = parse_header("X-Empty:", &vars()).unwrap();
        assert_eq!((name.as_str(), value.to_str().unwrap()), ("x-empty", ""));
        let error = parse_header("X-Key: ${NOPE}", &vars()).unwrap_err();
        assert!(error.to_string().contains("NOPE"), "{error}");
        assert!(parse_header("no colon", &vars()).is_err());
        assert!(parse_header(": value", &vars()).is_err());
        assert!(parse_header("bad name: v", &vars()).is_err());
    }

    #[test]
    fn flags_fit_the_transport() {
        let args = ReachArgs {
            headers: vec!["X-A: 1".into()],
            ..ReachArgs::default()
        };
        let error = args.resolve("mcp serve everything", EraChoice::Auto);
        assert!(error.unwrap_err().to_string().contains("--header"));
        let args = ReachArgs {
            env: vec!["A=1".into()],
            ..ReachArgs::default()
        };
        let error = args.resolve("http://127.0.0.1:1/mcp", EraChoice::Auto);
        assert!(error.unwrap_err().to_string().contains("--env"));
        let args = ReachArgs {
            env: vec!["A=1=2".into(), "B=".into()],
            ..ReachArgs::default()
        };
        let resolved = args.resolve("server", EraChoice::Auto).unwrap();
        assert_eq!(resolved.setup.env["A"], "1=2");
        assert_eq!(resolved.setup.env["B"], "");
        let args = ReachArgs {
            env: vec!["=1".into()],
            ..ReachArgs::default()
        };
        assert!(args.resolve("server", EraChoice::Auto).is_err());
    }
}
