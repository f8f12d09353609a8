use std::sync::Arc;

use serde_json::json;

use super::external::{ExternalHook, HookSettings, When};
use super::*;

fn call(server: &str, kind: Kind, name: &str, arguments: Value) -> HookCall {
    let mut call = HookCall::new(&Caller::default(), server, kind, name);
    call.arguments = arguments.as_object().cloned();
    call
}

/// A hook of the application's: stamps the arguments, refuses `rm`, and
/// says which hooks ran before it.
struct Stamp(&'static str);

impl CallHook for Stamp {
    fn name(&self) -> &str {
        self.0
    }

    fn before<'a>(&'a self, call: &'a HookCall) -> BoxFuture<'a, Result<Before, String>> {
        Box::pin(async move {
            let mut arguments = call.arguments.clone().unwrap_or_default();
            if arguments.get("command").and_then(Value::as_str) == Some("rm") {
                return Ok(Before::Refuse("no rm".into()));
            }
            let seen = arguments
                .get("stamps")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            arguments.insert("stamps".into(), format!("{seen}{}", self.0).into());
            Ok(Before::Rewrite(arguments))
        })
    }

    fn after<'a>(
        &'a self,
        _call: &'a HookCall,
        result: &'a Value,
    ) -> BoxFuture<'a, Result<After, String>> {
        Box::pin(async move {
            let mut result = result.clone();
            result["after"] =
                format!("{}{}", result["after"].as_str().unwrap_or(""), self.0).into();
            Ok(After::Replace(result))
        })
    }
}

#[tokio::test]
async fn hooks_run_in_order_and_the_first_refusal_ends_the_call() {
    let hooks = Hooks::new(vec![Arc::new(Stamp("a")), Arc::new(Stamp("b"))]);
    let mut ok = call("s", Kind::Tool, "run", json!({"command": "ls"}));
    assert!(hooks.before(&mut ok).await.unwrap());
    assert_eq!(ok.arguments.as_ref().unwrap()["stamps"], "ab");
    let mut result = json!({"content": []});
    assert!(hooks.after(&ok, &mut result).await.unwrap());
    assert_eq!(result["after"], "ab");

    let mut rm = call("s", Kind::Tool, "run", json!({"command": "rm"}));
    let refusal = hooks.before(&mut rm).await.unwrap_err();
    assert_eq!(
        refusal,
        Refusal {
            hook: "a".into(),
            reason: "no rm".into()
        }
    );
    let error = refusal.to_error(&rm);
    assert_eq!(error.code, REFUSED);
    assert!(
        error.message.contains("refused by hook \"a\": no rm"),
        "{}",
        error.message
    );
}

#[test]
fn rounds_and_tasks_are_not_a_calls_result() {
    assert!(is_final(&json!({"content": []})));
    assert!(!is_final(&json!({"resultType": "input_required"})));
    assert!(!is_final(&json!({"task": {"taskId": "1"}})));
}

/// A hook command: a Python script that reads the call on its standard
/// input and answers as `program` says.
fn python(name: &str, program: &str, when: When) -> ExternalHook {
    let settings = HookSettings {
        name: Some(name.into()),
        command: vec!["python3".into(), "-c".into(), program.into()],
        when,
        timeout: Some(10.0),
        ..HookSettings::default()
    };
    ExternalHook::compile(&settings, 1).unwrap()
}

const GUARD: &str = r#"
import json, sys
call = json.load(sys.stdin)
args = call.get("arguments") or {}
if call["hook"] == "before":
    if args.get("command", "").startswith("rm"):
        print(json.dumps({"decision": "deny", "reason": "no rm from " + call["caller"]}))
    elif args.get("command") == "loud":
        print(json.dumps({"arguments": dict(args, command="quiet")}))
else:
    text = call["result"]["content"][0]["text"]
    print(json.dumps({"result": {"content": [{"type": "text", "text": text.upper()}]}}))
"#;

#[tokio::test]
async fn a_command_hook_refuses_rewrites_and_replaces() {
    let hook = python("guard", GUARD, When::Both);
    let quiet = call("shell", Kind::Tool, "run", json!({"command": "ls"}));
    assert_eq!(hook.before(&quiet).await.unwrap(), Before::Go);
    let rm = call("shell", Kind::Tool, "run", json!({"command": "rm -rf /"}));
    assert_eq!(
        hook.before(&rm).await.unwrap(),
        Before::Refuse("no rm from anonymous".into())
    );
    let loud = call("shell", Kind::Tool, "run", json!({"command": "loud"}));
    let Before::Rewrite(arguments) = hook.before(&loud).await.unwrap() else {
        panic!("rewritten")
    };
    assert_eq!(arguments["command"], "quiet");
    let result = json!({"content": [{"type": "text", "text": "done"}]});
    let After::Replace(replaced) = hook.after(&quiet, &result).await.unwrap() else {
        panic!("replaced")
    };
    assert_eq!(replaced["content"][0]["text"], "DONE");

    // A before-hook is not run after, and the other way round.
    let before_only = python("guard", GUARD, When::Before);
    assert_eq!(
        before_only.after(&quiet, &result).await.unwrap(),
        After::Keep
    );
    let after_only = python("guard", GUARD, When::After);
    assert_eq!(after_only.before(&rm).await.unwrap(), Before::Go);
}

#[tokio::test]
async fn a_command_hook_that_fails_refuses() {
    let asked = call("s", Kind::Tool, "t", json!({}));
    let failing = python(
        "failing",
        "import sys; sys.stderr.write('thinking\\ncannot decide\\n'); sys.exit(3)",
        When::Before,
    );
    let error = failing.before(&asked).await.unwrap_err();
    assert!(
        error.contains("exited with exit status: 3: cannot decide"),
        "{error}"
    );
    let garbled = python("garbled", "print('yes please')", When::Before);
    let error = garbled.before(&asked).await.unwrap_err();
    assert!(error.contains("not a JSON object"), "{error}");
    let slow = ExternalHook::compile(
        &HookSettings {
            command: vec!["sleep".into(), "30".into()],
            timeout: Some(0.3),
            ..HookSettings::default()
        },
        2,
    )
    .unwrap();
    assert_eq!(slow.name(), "hook 2");
    let error = slow.before(&asked).await.unwrap_err();
    assert!(error.contains("no answer within"), "{error}");
    let missing = ExternalHook::compile(
        &HookSettings {
            command: vec!["/nonexistent/hook".into()],
            ..HookSettings::default()
        },
        3,
    )
    .unwrap();
    let error = missing.before(&asked).await.unwrap_err();
    assert!(error.contains("cannot be started"), "{error}");

    // Through `Hooks`, a failure is a refusal that names the hook.
    let hooks = Hooks::new(vec![Arc::new(garbled)]);
    let refusal = hooks.before(&mut asked.clone()).await.unwrap_err();
    assert_eq!(refusal.hook, "garbled");
    assert!(refusal.reason.starts_with("the hook failed"), "{refusal:?}");
}

#[tokio::test]
async fn an_http_hook_is_posted_the_call() {
    use axum::routing::post;
    let app = axum::Router::new()
        .route(
            "/hook",
            post(|headers: axum::http::HeaderMap, body: String| async move {
                let body: Value = serde_json::from_str(&body).unwrap_or_default();
                if headers.get("authorization").map(|v| v.as_bytes()) != Some(b"Bearer t") {
                    return (axum::http::StatusCode::UNAUTHORIZED, String::new());
                }
                let answer = match body["arguments"]["command"].as_str() {
                    Some("rm") => json!({"decision": "deny", "reason": "posted no"}),
                    _ => json!({}),
                };
                (axum::http::StatusCode::OK, answer.to_string())
            }),
        )
        .route(
            "/empty",
            post(|| async { axum::http::StatusCode::NO_CONTENT }),
        )
        .route(
            "/broken",
            post(|| async { axum::http::StatusCode::INTERNAL_SERVER_ERROR }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let hook = |path: &str, token: &str| {
        ExternalHook::compile(
            &HookSettings {
                url: Some(format!("http://{address}{path}")),
                headers: [("Authorization".to_owned(), format!("Bearer {token}"))].into(),
                ..HookSettings::default()
            },
            1,
        )
        .unwrap()
    };
    let rm = call("s", Kind::Tool, "run", json!({"command": "rm"}));
    let ls = call("s", Kind::Tool, "run", json!({"command": "ls"}));
    assert_eq!(
        hook("/hook", "t").before(&rm).await.unwrap(),
        Before::Refuse("posted no".into())
    );
    assert_eq!(hook("/hook", "t").before(&ls).await.unwrap(), Before::Go);
    assert_eq!(hook("/empty", "t").before(&rm).await.unwrap(), Before::Go);
    let error = hook("/hook", "wrong").before(&ls).await.unwrap_err();
    assert!(error.contains("401"), "{error}");
    let error = hook("/broken", "t").before(&ls).await.unwrap_err();
    assert!(error.contains("500"), "{error}");
}

#[test]
fn hooks_that_cannot_be_used_are_refused_with_their_number() {
    let compile = |settings: HookSettings| ExternalHook::compile(&settings, 7).unwrap_err();
    let error = compile(HookSettings::default());
    assert_eq!(error, "[[hooks]] #7: names neither command nor url");
    let error = compile(HookSettings {
        command: vec!["x".into()],
        url: Some("http://127.0.0.1:1/".into()),
        ..HookSettings::default()
    });
    assert!(error.contains("both"), "{error}");
    let error = compile(HookSettings {
        url: Some("file:///etc/passwd".into()),
        ..HookSettings::default()
    });
    assert!(error.contains("not http(s)"), "{error}");
    let error = compile(HookSettings {
        command: vec!["x".into()],
        tool: Some("a".into()),
        prompt: Some("b".into()),
        ..HookSettings::default()
    });
    assert!(error.contains("at most one"), "{error}");
    let hook = ExternalHook::compile(
        &HookSettings {
            command: vec!["x".into()],
            server: Some("fs*".into()),
            tool: Some("write_*".into()),
            ..HookSettings::default()
        },
        1,
    )
    .unwrap();
    assert!(hook.sees(&call("fs1", Kind::Tool, "write_file", json!({}))));
    assert!(!hook.sees(&call("fs1", Kind::Tool, "read_file", json!({}))));
    assert!(!hook.sees(&call("fs1", Kind::Prompt, "write_file", json!({}))));
    assert!(!hook.sees(&call("db", Kind::Tool, "write_file", json!({}))));
}
