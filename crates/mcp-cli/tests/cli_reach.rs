//! How the client commands reach a server: HTTP headers (`--header`, with
//! `${VAR}`), a child's environment and folder (`--env`, `--cwd`), and
//! servers named in a config file (`--config FILE --server NAME`).

mod support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use http::HeaderMap;
use mcp_schema::{CallToolResult, Tool};
use mcp_server::ToolDef;
use serde_json::json;
use support::{MCP, mcp_with, stderr, stdout};

/// A fresh folder for one test.
fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-cli-reach-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    dir.canonicalize().expect("its real path")
}

/// A Streamable HTTP server with one tool, `hello`, that keeps the
/// headers of every request it receives; its URL and those headers.
async fn recording_server() -> (String, Arc<Mutex<Vec<HeaderMap>>>) {
    let hello = ToolDef::from_parts(
        Tool::new("hello", json!({"type": "object"})),
        |_, _| async { Ok(CallToolResult::text("hello")) },
    );
    let server = mcp_server::Server::builder("recording", "1.0.0")
        .tool(hello)
        .build();
    let config = server.session_config();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    let endpoint = Arc::new(mcp_http::McpEndpoint::new(
        Arc::new(server),
        config,
        mcp_http::HttpConfig::loopback(port),
    ));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let app = endpoint.router().layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            record.lock().unwrap().push(request.headers().clone());
            next.run(request)
        },
    ));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://127.0.0.1:{port}/mcp"), seen)
}

/// The values of header `name` among the requests `seen`.
fn values(seen: &Mutex<Vec<HeaderMap>>, name: &str) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .filter_map(|headers| headers.get(name))
        .map(|v| v.to_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn headers_reach_the_server_with_variables_expanded() {
    let (url, seen) = recording_server().await;
    let args = [
        "tools",
        "-s",
        &url,
        "--header",
        "X-Api-Key: key-${MCP_TEST_SECRET}",
        "-H",
        "X-Plain:  as is",
    ];
    let output = mcp_with(&args, &[("MCP_TEST_SECRET", "s3cret")]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("hello"), "{}", stdout(&output));
    let keys = values(&seen, "x-api-key");
    assert!(!keys.is_empty(), "the header never arrived");
    assert!(keys.iter().all(|k| k == "key-s3cret"), "{keys:?}");
    assert!(values(&seen, "x-plain").iter().all(|v| v == "as is"));
    // Every request carries them, not only the first.
    assert_eq!(keys.len(), seen.lock().unwrap().len());

    // An unset variable is named, and nothing is sent.
    let before = seen.lock().unwrap().len();
    let args = [
        "tools",
        "-s",
        &url,
        "-H",
        "X-Api-Key: ${MCP_TEST_UNSET_VARIABLE}",
    ];
    let output = mcp_with(&args, &[]).await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("MCP_TEST_UNSET_VARIABLE"),
        "{}",
        stderr(&output)
    );
    assert_eq!(seen.lock().unwrap().len(), before);

    // Headers are for the network; a child over stdio cannot take them.
    let output = mcp_with(&["tools", "-s", &support::everything(), "-H", "A: b"], &[]).await;
    assert!(!output.status.success());
    assert!(stderr(&output).contains("--header"), "{}", stderr(&output));
}

/// A command line that writes `$VAR` and its folder to `seen` in the
/// folder it starts in, then becomes `mcp serve everything`.
fn telling_server(var: &str) -> String {
    format!("sh -c 'echo \"${var}\" > seen; pwd >> seen; exec {MCP} serve everything'")
}

fn seen(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("seen")).expect("the server wrote what it saw")
}

#[tokio::test]
async fn a_child_gets_its_environment_and_folder() {
    let dir = folder("child");
    let server = telling_server("MCP_TEST_GREETING");
    let cwd = dir.display().to_string();
    let args = [
        "tool",
        "-s",
        &server,
        "--env",
        "MCP_TEST_GREETING=hi there",
        "--cwd",
        &cwd,
        "echo",
        "text=ok",
    ];
    let output = mcp_with(&args, &[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "ok\n");
    assert_eq!(seen(&dir), format!("hi there\n{cwd}\n"));

    let missing = dir.join("missing").display().to_string();
    let output = mcp_with(&["tools", "-s", &server, "--cwd", &missing], &[]).await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("no such folder"),
        "{}",
        stderr(&output)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn servers_by_name_from_a_config_file() {
    let dir = folder("config");
    let (url, recorded) = recording_server().await;
    let claude = dir.join("claude_desktop_config.json");
    let config = json!({"mcpServers": {
        "everything": {"command": MCP, "args": ["serve", "everything"]},
        "telling": {
            "command": "sh",
            "args": ["-c", format!("echo \"$FROM_CONFIG\" > seen; pwd >> seen; exec {MCP} serve everything")],
            "env": {"FROM_CONFIG": "${MCP_TEST_CONFIG_VALUE}"},
            "cwd": "."
        },
        "remote": {"url": url, "headers": {"X-Api-Key": "${MCP_TEST_CONFIG_VALUE}"}},
        "broken": {"command": "x", "env": {"A": "${MCP_TEST_UNSET_VARIABLE}"}}
    }});
    std::fs::write(&claude, config.to_string()).unwrap();
    let file = claude.display().to_string();
    let vars = [("MCP_TEST_CONFIG_VALUE", "from the config")];

    let output = mcp_with(
        &[
            "tool",
            "--config",
            &file,
            "-s",
            "everything",
            "echo",
            "text=hi",
        ],
        &vars,
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "hi\n");

    // The entry's environment (its variables expanded) and folder apply.
    let output = mcp_with(&["tools", "--config", &file, "-s", "telling"], &vars).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(seen(&dir), format!("from the config\n{}\n", dir.display()));

    // So do a remote entry's headers.
    let output = mcp_with(&["tools", "--config", &file, "-s", "remote"], &vars).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("hello"), "{}", stdout(&output));
    assert!(
        values(&recorded, "x-api-key")
            .iter()
            .any(|v| v == "from the config")
    );

    // An unknown name lists the names in the file; a broken entry says why.
    let output = mcp_with(&["tools", "--config", &file, "-s", "nope"], &vars).await;
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(error.contains("\"nope\""), "{error}");
    for name in ["everything", "telling", "remote", "broken"] {
        assert!(error.contains(name), "{error}");
    }
    let output = mcp_with(&["tools", "--config", &file, "-s", "broken"], &vars).await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("MCP_TEST_UNSET_VARIABLE"),
        "{}",
        stderr(&output)
    );

    // VS Code's dialect, with a `type`.
    let vscode = dir.join("mcp.json");
    let config = json!({"servers": {"remote": {"type": "http", "url": url,
        "headers": {"X-Api-Key": "vscode"}}}});
    std::fs::write(&vscode, config.to_string()).unwrap();
    let file = vscode.display().to_string();
    let output = mcp_with(&["tools", "--config", &file, "-s", "remote"], &[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(values(&recorded, "x-api-key").iter().any(|v| v == "vscode"));
    let _ = std::fs::remove_dir_all(&dir);
}
