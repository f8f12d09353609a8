//! `mcp host status`: asks a running host how its servers are, over its
//! `/status`, and shows it as a table (or the JSON as it came).

use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

use crate::stdout::{print_json, print_out};

/// The base URL of a host named as `--url` takes it: a URL (with or
/// without `/mcp`), an address (`127.0.0.1:8080`, `localhost:8080`), or a
/// port alone (on 127.0.0.1), as `--http` takes them.
fn status_base(given: &str) -> String {
    let given = given.trim().trim_end_matches('/');
    let base = given.trim_end_matches("/mcp").trim_end_matches('/');
    if base.contains("://") {
        return base.to_owned();
    }
    match crate::serve::parse_listen_addr(base) {
        Ok(addr) => format!("http://{addr}"),
        Err(_) => format!("http://{base}"),
    }
}

/// The flags of `mcp host status`.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// The running host's address, as its --http took it (a port alone,
    /// an address such as 127.0.0.1:8080, or a URL).
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// Print the JSON status as it is.
    #[arg(long)]
    pub json: bool,
    /// The admin listener's token, where the URL is the admin listener's
    /// (also: the environment variable MCP_ADMIN_TOKEN).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
}

/// The flags of `mcp host restart`, `trust`, `disable` and `enable`.
#[derive(clap::Args, Debug)]
pub struct RestartArgs {
    /// The server's name in the host's config.
    pub name: String,
    /// The running host's admin listener (a port alone, an address such
    /// as 127.0.0.1:9090, or a URL).
    #[arg(long, value_name = "URL")]
    pub url: String,
    /// The admin listener's token (also: the environment variable
    /// MCP_ADMIN_TOKEN).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
}

/// Sends `method` to `path` of the host at `url`, with the admin token
/// from `token` or the environment; an answer that is not a success is an
/// error that says it (and its body).
async fn ask_host(
    method: reqwest::Method,
    url: &str,
    path: &str,
    token: Option<&str>,
) -> Result<reqwest::Response> {
    let url = format!("{}{path}", status_base(url));
    let mut request = reqwest::Client::new()
        .request(method, &url)
        .timeout(Duration::from_secs(10));
    let token = token
        .map(str::to_owned)
        .or_else(|| std::env::var("MCP_ADMIN_TOKEN").ok());
    if let Some(token) = token.filter(|t| !t.is_empty()) {
        request = request.bearer_auth(token);
    }
    let response = request
        .send()
        .await
        .with_context(|| format!("cannot reach a host at {url}"))?;
    if !response.status().is_success() {
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        bail!("{url} answered {status}: {}", body.trim());
    }
    Ok(response)
}

/// Runs `mcp host restart NAME`: the server's connection is closed (a
/// child process stopped) and a new one made at once.
pub async fn restart(args: &RestartArgs) -> Result<()> {
    server_action(args, "restart", "restarting").await
}

/// Runs `mcp host trust NAME`: a server held until a person trusts its
/// command line is trusted (kept in the guard's store) and started.
pub async fn trust(args: &RestartArgs) -> Result<()> {
    server_action(args, "trust", "trusted, starting").await
}

/// Runs `mcp host disable NAME`: the server is stopped and leaves the
/// catalog until `mcp host enable NAME`.
pub async fn disable(args: &RestartArgs) -> Result<()> {
    server_action(args, "disable", "disabled").await
}

/// Runs `mcp host enable NAME`: a server disabled is started again.
pub async fn enable(args: &RestartArgs) -> Result<()> {
    server_action(args, "enable", "enabled, starting").await
}

/// Posts `/servers/NAME/ACTION` to the host's admin listener; says
/// `done` of the server.
async fn server_action(args: &RestartArgs, action: &str, done: &str) -> Result<()> {
    let name =
        percent_encoding::utf8_percent_encode(&args.name, percent_encoding::NON_ALPHANUMERIC);
    let path = format!("/servers/{name}/{action}");
    ask_host(
        reqwest::Method::POST,
        &args.url,
        &path,
        args.token.as_deref(),
    )
    .await?;
    print_out(&format!("{}: {done}\n", args.name))
}

/// Runs `mcp host status`.
pub async fn status(args: &StatusArgs) -> Result<()> {
    let url = format!("{}/status", status_base(&args.url));
    let response = ask_host(
        reqwest::Method::GET,
        &args.url,
        "/status",
        args.token.as_deref(),
    )
    .await?;
    let status: Value = response
        .json()
        .await
        .with_context(|| format!("{url} did not answer JSON"))?;
    if args.json {
        return print_json(&status);
    }
    let servers = status["servers"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let width = servers
        .iter()
        .filter_map(|s| s["name"].as_str())
        .map(|name| name.chars().count())
        .max()
        .unwrap_or_default()
        .max("server".len());
    let mut out = String::new();
    out.push_str(&format!(
        "{:<width$} {:<11} {:<16} {:<11} {:>5} {:>9} {:>7} {:>8}  last error\n",
        "server", "state", "transport", "revision", "tools", "resources", "prompts", "restarts"
    ));
    for server in servers {
        let text = |key: &str| server[key].as_str().unwrap_or("-").to_owned();
        let count = |key: &str| server[key].as_u64().unwrap_or_default();
        out.push_str(&format!(
            "{:<width$} {:<11} {:<16} {:<11} {:>5} {:>9} {:>7} {:>8}  {}\n",
            text("name"),
            text("state"),
            text("transport"),
            text("revision"),
            count("tools"),
            count("resources"),
            count("prompts"),
            count("restarts"),
            text("lastError"),
        ));
    }
    for name in status["disabled"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap_or("?");
        out.push_str(&format!("disabled: {name} (mcp host enable {name})\n"));
    }
    for held in status["untrusted"].as_array().into_iter().flatten() {
        let text = |key: &str| held[key].as_str().unwrap_or("?");
        let refused = if held["denied"] == true {
            ", refused"
        } else {
            ""
        };
        out.push_str(&format!(
            "untrusted: {}: {} ({}{refused}; mcp host trust {})\n",
            text("name"),
            text("identity"),
            text("reason"),
            text("name"),
        ));
    }
    for server in status["servers"].as_array().into_iter().flatten() {
        for hint in server["hints"].as_array().into_iter().flatten() {
            let (name, hint) = (server["name"].as_str(), hint.as_str());
            out.push_str(&format!(
                "hint: {}: {}\n",
                name.unwrap_or("?"),
                hint.unwrap_or("?")
            ));
        }
    }
    for server in status["servers"].as_array().into_iter().flatten() {
        for flagged in server["flagged"].as_array().into_iter().flatten() {
            let flags: Vec<&str> = flagged["flags"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            out.push_str(&format!(
                "suspicious: {}: {} {} ({})\n",
                server["name"].as_str().unwrap_or("?"),
                flagged["kind"].as_str().unwrap_or("?"),
                flagged["name"].as_str().unwrap_or("?"),
                flags.join(", ")
            ));
        }
    }
    for server in status["servers"].as_array().into_iter().flatten() {
        for changed in server["changed"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "changed since pinned: {}: {} {} (mcp host approve {} {})\n",
                server["name"].as_str().unwrap_or("?"),
                changed["kind"].as_str().unwrap_or("?"),
                changed["name"].as_str().unwrap_or("?"),
                server["name"].as_str().unwrap_or("?"),
                changed["name"].as_str().unwrap_or("?"),
            ));
        }
    }
    for problem in status["problems"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "not started: {} ({})\n",
            problem["server"].as_str().unwrap_or("?"),
            problem["message"].as_str().unwrap_or("?")
        ));
    }
    for collision in status["collisions"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "collision: {}\n",
            collision.as_str().unwrap_or("?")
        ));
    }
    if let Some(error) = status["reloadError"].as_str() {
        out.push_str(&format!(
            "config: the last change was not applied (the running configuration is kept): {error}\n"
        ));
    }
    let audit = &status["audit"];
    if audit.is_object() {
        let count = |key: &str| audit[key].as_u64().unwrap_or_default();
        out.push_str(&format!(
            "audit: {} ({}): {} written, {} pending, {} lost{}\n",
            audit["state"].as_str().unwrap_or("?"),
            audit["path"].as_str().unwrap_or("?"),
            count("written"),
            count("pending"),
            count("lost"),
            audit["lastError"]
                .as_str()
                .map(|e| format!("; {e}"))
                .unwrap_or_default()
        ));
    }
    print_out(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_takes_the_host_as_http_takes_it() {
        for (given, base) in [
            ("18080", "http://127.0.0.1:18080"),
            ("127.0.0.1:18080", "http://127.0.0.1:18080"),
            ("localhost:18080", "http://127.0.0.1:18080"),
            ("http://127.0.0.1:18080/mcp", "http://127.0.0.1:18080"),
            ("http://host.example:8080/", "http://host.example:8080"),
            ("host.example:8080", "http://host.example:8080"),
        ] {
            assert_eq!(status_base(given), base, "{given}");
        }
    }
}
