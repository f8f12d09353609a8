//! Guard hooks on the request path, in both eras: a hook command of the
//! settings file refuses, rewrites arguments before the server gets them,
//! and replaces results; a hook of the embedding application refuses by
//! its own logic; calls no hook sees pass untouched. The upstream is
//! `mcp_builtin::everything` over loopback HTTP.

use std::sync::Arc;
use std::time::Duration;

use mcp_client::{Client, EraChoice};
use mcp_core::BoxFuture;
use mcp_host::config::{HostConfig, ServerConfig};
use mcp_host::hooks::{Before, CallHook, HookCall, REFUSED};
use mcp_host::{Host, HostSettings};
use mcp_schema::ProtocolVersion;
use serde_json::{Value, json};

mod support;
use support::{Scratch, gateway_client, on_http, within};

const GUARD: &str = r#"
import json, sys
call = json.load(sys.stdin)
args = call.get("arguments") or {}
if call["hook"] == "before":
    if args.get("text", "").startswith("rm"):
        print(json.dumps({"decision": "deny", "reason": "no rm, " + call["client"]}))
    elif args.get("text") == "loud":
        print(json.dumps({"arguments": {"text": "rewritten by the hook"}}))
else:
    text = call["result"]["content"][0]["text"]
    print(json.dumps({"result": {"content": [{"type": "text", "text": text.upper()}]}}))
"#;

/// The embedding application's hook: no sums above 100.
struct SmallSums;

impl CallHook for SmallSums {
    fn name(&self) -> &str {
        "small sums"
    }

    fn sees(&self, call: &HookCall) -> bool {
        call.name == "add"
    }

    fn before<'a>(&'a self, call: &'a HookCall) -> BoxFuture<'a, Result<Before, String>> {
        Box::pin(async move {
            let arguments = call.arguments.clone().unwrap_or_default();
            let sum: f64 = ["a", "b"]
                .iter()
                .filter_map(|k| arguments.get(*k).and_then(Value::as_f64))
                .sum();
            Ok(if sum > 100.0 {
                Before::Refuse(format!("{sum} is too much"))
            } else {
                Before::Go
            })
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_refuse_rewrite_and_replace_in_both_eras() {
    let scratch = Scratch::new("hooks");
    let script = scratch.file("guard.py");
    std::fs::write(&script, GUARD).unwrap();
    let settings = format!(
        r#"
[[hooks]]
name = "echo guard"
command = ["python3", {:?}]
when = "both"
tool = "echo"
timeout = 20
"#,
        script.display().to_string()
    );
    let mut options = HostSettings::parse(&settings).unwrap().options().unwrap();
    options.hooks.push(Arc::new(SmallSums));
    let url = on_http(mcp_builtin::everything::server()).await;
    let host = Host::start(
        HostConfig {
            servers: vec![ServerConfig::remote("everything", &url).namespace("")],
            problems: Vec::new(),
        },
        options,
    );
    host.wait_started(Duration::from_secs(20)).await;
    for era in [
        EraChoice::Pinned(ProtocolVersion::V2025_11_25),
        EraChoice::Pinned(ProtocolVersion::V2026_07_28),
    ] {
        let client = gateway_client(&host, Client::builder("hook-tests", "1.0").era(era)).await;
        let call = |tool: &'static str, arguments: Value| {
            let client = &client;
            async move {
                within(tool, client.call_tool(tool, arguments))
                    .await
                    .map(|r| r.content[0].as_text().unwrap_or_default().to_owned())
            }
        };
        assert_eq!(call("echo", json!({"text": "hi"})).await.unwrap(), "HI");
        assert_eq!(
            call("echo", json!({"text": "loud"})).await.unwrap(),
            "REWRITTEN BY THE HOOK",
            "the server got the hook's arguments"
        );
        let refused = call("echo", json!({"text": "rm -rf /"})).await.unwrap_err();
        let error = refused.rpc().expect("a JSON-RPC error");
        let (code, message) = (error.code, error.message.clone());
        assert_eq!(code, REFUSED);
        assert!(
            message.contains("refused by hook \"echo guard\": no rm, hook-tests"),
            "{message}"
        );
        assert!(
            call("add", json!({"a": 2, "b": 3}))
                .await
                .unwrap()
                .contains(":5")
        );
        let refused = call("add", json!({"a": 200, "b": 3})).await.unwrap_err();
        assert!(refused.to_string().contains("small sums"), "{refused}");
        assert_eq!(
            call("calculate", json!({"expression": "6*7"}))
                .await
                .unwrap(),
            "42",
            "a call no hook sees is untouched"
        );
    }
    host.shutdown(Duration::from_secs(5)).await;
}
