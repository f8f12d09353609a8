use super::*;

fn rules(toml_text: &str) -> Limits {
    #[derive(Deserialize)]
    struct File {
        limits: Vec<LimitSettings>,
    }
    let file: File = toml::from_str(toml_text).expect("limits settings");
    Limits::compile(&file.limits).expect("rules that compile")
}

fn call<'a>(caller: &'a str, server: &'a str, tool: &'a str) -> Metered<'a> {
    Metered {
        caller,
        method: methods::TOOLS_CALL,
        view: None,
        server: Some(server),
        item: Some(tool),
        hints: Some(Hints::believed(None, false)),
    }
}

#[test]
fn a_budget_per_caller_is_each_callers_own() {
    let limits = rules(
        r#"
        [[limits]]
        server = "memory"
        tool = "create_*"
        rate = "2/minute"
        name = "memory writes"
        "#,
    );
    assert!(
        limits
            .check(&call("alice", "memory", "create_entities"))
            .is_ok()
    );
    assert!(
        limits
            .check(&call("alice", "memory", "create_relations"))
            .is_ok()
    );
    let refused = limits
        .check(&call("alice", "memory", "create_entities"))
        .unwrap_err();
    assert_eq!(refused.rule, "memory writes");
    assert!(refused.retry_after > Duration::from_secs(20), "{refused:?}");
    assert!(
        refused.retry_after <= Duration::from_secs(30),
        "{refused:?}"
    );
    let error = refused.to_error();
    assert_eq!(error.code, LIMITED);
    assert!(error.message.contains("memory writes"), "{}", error.message);
    // Another caller, another tool, another server: not counted here.
    assert!(
        limits
            .check(&call("bob", "memory", "create_entities"))
            .is_ok()
    );
    assert!(limits.check(&call("alice", "memory", "read_graph")).is_ok());
    assert!(
        limits
            .check(&call("alice", "time", "create_entities"))
            .is_ok()
    );
}

#[test]
fn a_budget_per_server_or_per_tool_is_shared_by_every_caller() {
    let limits = rules(
        r#"
        [[limits]]
        server = "time"
        per = "server"
        rate = "2/hour"

        [[limits]]
        server = "git"
        per = "tool"
        rate = "1/second"
        "#,
    );
    assert!(limits.check(&call("alice", "time", "now")).is_ok());
    assert!(limits.check(&call("bob", "time", "convert")).is_ok());
    let refused = limits.check(&call("carol", "time", "now")).unwrap_err();
    assert_eq!(
        (refused.rule.as_str(), refused.per),
        ("limit 1", Per::Server)
    );
    assert!(limits.check(&call("alice", "git", "git_log")).is_ok());
    assert!(limits.check(&call("bob", "git", "git_status")).is_ok());
    assert!(limits.check(&call("bob", "git", "git_log")).is_err());
}

#[test]
fn presets_map_to_reads_tool_calls_and_annotations() {
    let limits = rules(
        r#"
        [[limits]]
        preset = "read"
        rate = "1/minute"

        [[limits]]
        preset = "delete"
        rate = "1/minute"
        "#,
    );
    let list = Metered {
        caller: "alice",
        view: None,
        method: methods::TOOLS_LIST,
        server: None,
        item: None,
        hints: None,
    };
    assert!(limits.check(&list).is_ok());
    assert_eq!(limits.check(&list).unwrap_err().rule, "read");
    // Not a read: not counted by `read`.
    let ping = Metered {
        method: methods::PING,
        ..list
    };
    assert!(limits.check(&ping).is_ok() && limits.check(&ping).is_ok());
    // Untrusted annotations: destructive, not idempotent, so a delete.
    assert!(limits.check(&call("alice", "memory", "anything")).is_ok());
    assert_eq!(
        limits
            .check(&call("alice", "memory", "anything"))
            .unwrap_err()
            .rule,
        "delete"
    );
    // A trusted read-only tool is no delete.
    let read_only = Metered {
        hints: Some(Hints::believed(
            Some(&json!({"readOnlyHint": true, "destructiveHint": false})),
            true,
        )),
        ..call("alice", "memory", "read_graph")
    };
    assert!(limits.check(&read_only).is_ok() && limits.check(&read_only).is_ok());
}

#[test]
fn rules_that_cannot_be_used_say_why() {
    let compile = |text: &str| {
        #[derive(Deserialize)]
        struct File {
            limits: Vec<LimitSettings>,
        }
        let file: File = toml::from_str(text).unwrap();
        Limits::compile(&file.limits).unwrap_err()
    };
    let error = compile("[[limits]]\nserver = \"x\"\n");
    assert!(error.contains("#1") && error.contains("rate"), "{error}");
    let error = compile("[[limits]]\nrate = \"5/fortnight\"\n");
    assert!(error.contains("fortnight"), "{error}");
    let error = compile("[[limits]]\nrate = \"0/minute\"\n");
    assert!(error.contains("positive"), "{error}");
    let error = compile("[[limits]]\npreset = \"write\"\n");
    assert!(error.contains("\"write\""), "{error}");
}

#[test]
fn a_rule_with_a_view_counts_only_requests_through_it() {
    let limits = rules(
        r#"
        [[limits]]
        view = "public"
        rate = "1/hour"
        per = "server"
        name = "public calls"
        "#,
    );
    let through = |view| Metered {
        view,
        ..call("alice", "memory", "read_graph")
    };
    assert!(limits.check(&through(Some("public"))).is_ok());
    assert!(limits.check(&through(Some("public"))).is_err());
    // Neither the whole catalog nor another view spends that budget.
    assert!(limits.check(&through(None)).is_ok());
    assert!(limits.check(&through(Some("internal"))).is_ok());
}
