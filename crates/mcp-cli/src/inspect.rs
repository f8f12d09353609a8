//! Looking into a server: `mcp tools`, `mcp resources`, `mcp read`,
//! `mcp prompts`, `mcp prompt`, `mcp info` and `mcp tool NAME --schema`.
//! Tables and text for people; with `--json`, the whole items as the
//! server sent them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context as _, Result, anyhow, bail};
use mcp_client::Client;
use mcp_schema::{ResourceContents, error_codes};
use serde_json::{Value, json};

use crate::call::{ServerArgs, with_connection};
use crate::listing::{
    binary, decode, info_text, prompt_table, prompt_text, resource_table, template_table,
};
use crate::stdout::{print_json, print_out};
use crate::target::Connection;
use crate::target::explain;
use crate::terminal::Terminal;
use crate::tool_table::{terminal_width, tool_table};

/// The commands that look into a server (beside `tools` and `tool`).
#[derive(clap::Subcommand, Debug)]
pub enum Inspect {
    /// Lists a server's resources and resource templates as tables.
    Resources {
        #[command(flatten)]
        server: ServerArgs,
        /// Print the resources and templates as JSON, whole.
        #[arg(long)]
        json: bool,
    },
    /// Reads one resource and prints its text; binary contents are told
    /// by MIME type and size (or saved with --out).
    Read {
        #[command(flatten)]
        server: ServerArgs,
        /// The resource's URI (a template's URI with its variables filled in).
        uri: String,
        /// Write the contents to this file instead, as raw bytes.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Print the server's whole result as JSON.
        #[arg(long, conflicts_with = "out")]
        json: bool,
    },
    /// Lists a server's prompts as a table (`*` marks required arguments).
    Prompts {
        #[command(flatten)]
        server: ServerArgs,
        /// Print the prompts as JSON, whole.
        #[arg(long)]
        json: bool,
    },
    /// Gets one prompt with key=value arguments and prints its messages.
    Prompt {
        #[command(flatten)]
        server: ServerArgs,
        /// The prompt's name.
        name: String,
        /// Its arguments, as key=value.
        arguments: Vec<String>,
        /// Print the server's whole result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Shows who the server is: name, version and title, the protocol era
    /// and revision in use, its capabilities and instructions.
    Info {
        #[command(flatten)]
        server: ServerArgs,
        /// Print the same as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs one of the commands.
pub async fn run(command: Inspect) -> Result<()> {
    match command {
        Inspect::Resources { server, json } => resources(&server, json).await,
        Inspect::Read {
            server,
            uri,
            out,
            json,
        } => read(&server, &uri, out, json).await,
        Inspect::Prompts { server, json } => prompts(&server, json).await,
        Inspect::Prompt {
            server,
            name,
            arguments,
            json,
        } => prompt(&server, &name, &arguments, json).await,
        Inspect::Info { server, json } => info(&server, json).await,
    }
}

/// Runs `f` on a connection to the server (its questions answered at the
/// terminal), closing it whatever happens.
async fn with<T>(args: &ServerArgs, f: impl AsyncFnOnce(&Client) -> Result<T>) -> Result<T> {
    with_connection(args, &Terminal::new(), async |c: &Connection| {
        f(&c.client).await
    })
    .await
}

/// `mcp tools`: the server's tools as a table, or with `json` as JSON.
pub async fn tools(args: &ServerArgs, json: bool) -> Result<()> {
    let tools = with(args, async |c: &Client| {
        c.list_all_tools().await.map_err(explain)
    })
    .await?;
    if json {
        return print_json(&json!({ "tools": tools }));
    }
    print_out(&tool_table(&tools, terminal_width()))
}

/// `mcp tool NAME --schema`: the tool's input schema (and output schema,
/// when it has one) as JSON, without calling it.
pub async fn tool_schema(args: &ServerArgs, name: &str) -> Result<()> {
    let tools = with(args, async |c: &Client| {
        c.list_all_tools().await.map_err(explain)
    })
    .await?;
    let Some(tool) = tools.iter().find(|t| t.name == name) else {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        bail!(
            "the server has no tool {name:?}; it has: {}",
            names.join(", ")
        );
    };
    let mut schemas = json!({ "name": tool.name, "inputSchema": tool.input_schema });
    if let Some(output) = &tool.output_schema {
        schemas["outputSchema"] = Value::Object(output.clone());
    }
    print_json(&schemas)
}

/// `mcp resources`: the resources, then the resource templates.
async fn resources(args: &ServerArgs, json: bool) -> Result<()> {
    let (resources, templates) = with(args, async |c: &Client| {
        if c.server_capabilities().resources.is_none() {
            return Ok((Vec::new(), Vec::new()));
        }
        let resources = c.list_all_resources().await.map_err(explain)?;
        let templates = match c.list_all_resource_templates().await {
            Err(e)
                if e.rpc()
                    .is_some_and(|r| r.code == error_codes::METHOD_NOT_FOUND) =>
            {
                Vec::new()
            }
            other => other.map_err(explain)?,
        };
        Ok((resources, templates))
    })
    .await?;
    if json {
        return print_json(&json!({ "resources": resources, "resourceTemplates": templates }));
    }
    let width = terminal_width();
    let mut text = String::new();
    if !resources.is_empty() {
        text.push_str(&resource_table(&resources, width));
    }
    if !templates.is_empty() {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&template_table(&templates, width));
    }
    if text.is_empty() {
        text.push_str("The server offers no resources.\n");
    }
    print_out(&text)
}

/// `mcp read`: text contents as they are; binary contents told by type
/// and size, or with `out` every content's bytes written to that file.
async fn read(args: &ServerArgs, uri: &str, out: Option<PathBuf>, json: bool) -> Result<()> {
    let result = with(args, async |c: &Client| {
        c.read_resource(uri).await.map_err(explain)
    })
    .await?;
    if json {
        return print_json(&result);
    }
    if let Some(path) = out {
        let mut bytes = Vec::new();
        for contents in &result.contents {
            match contents {
                ResourceContents::Text(text) => bytes.extend_from_slice(text.text.as_bytes()),
                ResourceContents::Blob(blob) => bytes
                    .extend(decode(&blob.blob).ok_or_else(|| {
                        anyhow!("the server sent {} as invalid base64", blob.uri)
                    })?),
            }
        }
        std::fs::write(&path, &bytes)
            .with_context(|| format!("cannot write {}", path.display()))?;
        crate::stderr::print_err(&format!(
            "{} bytes written to {}",
            bytes.len(),
            path.display()
        ));
        return Ok(());
    }
    print_out(&contents_text(
        &result.contents,
        "; save it with --out FILE",
    ))
}

/// Resource contents for people: each text as it is, each binary told
/// by its URI, type and size (followed by `blob_hint`), one per line.
pub(crate) fn contents_text(contents: &[ResourceContents], blob_hint: &str) -> String {
    let mut text = String::new();
    for contents in contents {
        match contents {
            ResourceContents::Text(contents) => text.push_str(&contents.text),
            ResourceContents::Blob(blob) => text.push_str(&format!(
                "({}: {}{blob_hint})",
                blob.uri,
                binary(blob.mime_type.as_deref(), &blob.blob)
            )),
        }
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    text
}

/// `mcp prompts`: the prompts as a table, or with `json` as JSON.
async fn prompts(args: &ServerArgs, json: bool) -> Result<()> {
    let prompts = with(args, async |c: &Client| {
        if c.server_capabilities().prompts.is_none() {
            return Ok(Vec::new());
        }
        c.list_all_prompts().await.map_err(explain)
    })
    .await?;
    if json {
        return print_json(&json!({ "prompts": prompts }));
    }
    if prompts.is_empty() {
        return print_out("The server offers no prompts.\n");
    }
    print_out(&prompt_table(&prompts, terminal_width()))
}

/// `mcp prompt`: one prompt's messages, its arguments given as
/// `key=value` and checked against the ones it declares.
async fn prompt(args: &ServerArgs, name: &str, pairs: &[String], json: bool) -> Result<()> {
    let mut arguments = BTreeMap::new();
    for pair in pairs {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| anyhow!("{pair:?} is not key=value"))?;
        arguments.insert(key.to_owned(), value.to_owned());
    }
    let result = with(args, async |c: &Client| {
        let prompts = c.list_all_prompts().await.map_err(explain)?;
        let Some(prompt) = prompts.iter().find(|p| p.name == name) else {
            let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
            bail!(
                "the server has no prompt {name:?}; it has: {}",
                names.join(", ")
            );
        };
        let missing: Vec<&str> = prompt
            .arguments
            .iter()
            .flatten()
            .filter(|a| a.required == Some(true) && !arguments.contains_key(&a.name))
            .map(|a| a.name.as_str())
            .collect();
        if !missing.is_empty() {
            bail!("prompt {name:?} needs {}=VALUE", missing.join("=VALUE, "));
        }
        c.get_prompt(name, arguments).await.map_err(explain)
    })
    .await?;
    if json {
        return print_json(&result);
    }
    print_out(&prompt_text(&result))
}

/// Who the server is and what it declared, as `mcp info --json` shows it.
pub(crate) fn info_json(c: &Client) -> Value {
    let revision = c.revision();
    json!({
        "serverInfo": c.server_info(),
        "era": if revision.is_legacy() { "legacy" } else { "modern" },
        "protocolVersion": revision.to_string(),
        "capabilities": c.server_capabilities(),
        "instructions": c.instructions(),
    })
}

/// `mcp info`: who the server is and what it declared.
async fn info(args: &ServerArgs, json: bool) -> Result<()> {
    let info = with(args, async |c: &Client| Ok(info_json(c))).await?;
    if json {
        return print_json(&info);
    }
    let server = serde_json::from_value(info["serverInfo"].clone()).ok();
    print_out(&info_text(
        server.as_ref(),
        info["protocolVersion"].as_str().unwrap_or("?"),
        info["era"].as_str().unwrap_or("?"),
        &info["capabilities"],
        info["instructions"].as_str(),
    ))
}
