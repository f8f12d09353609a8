use super::*;

fn rule(number: usize, settings: RuleSettings) -> Rule {
    Rule::compile(&settings, number).unwrap()
}

fn settings(decision: Decision) -> RuleSettings {
    RuleSettings {
        decision,
        ..RuleSettings::default()
    }
}

fn bob() -> Caller {
    Caller {
        subject: Some("bob".into()),
        client_id: Some("cli-7".into()),
        scopes: vec!["read".into(), "admin".into()],
        client_name: Some("Claude Desktop".into()),
        view: None,
        token: None,
    }
}

fn asked<'a>(caller: &'a Caller, server: &'a str, kind: Kind, name: &'a str) -> Asked<'a> {
    Asked {
        caller,
        server,
        kind,
        name,
        hints: None,
        arguments: None,
    }
}

#[test]
fn each_key_narrows_what_a_rule_matches() {
    let (bob, anonymous) = (bob(), Caller::default());
    let call = |caller, server, name| asked(caller, server, Kind::Tool, name);
    let cases: Vec<(RuleSettings, Asked<'_>, bool)> = vec![
        (
            RuleSettings {
                server: Some("mem*".into()),
                ..settings(Decision::Deny)
            },
            call(&bob, "memory", "x"),
            true,
        ),
        (
            RuleSettings {
                server: Some("mem*".into()),
                ..settings(Decision::Deny)
            },
            call(&bob, "time", "x"),
            false,
        ),
        (
            RuleSettings {
                tool: Some("delete_*".into()),
                ..settings(Decision::Deny)
            },
            call(&bob, "memory", "delete_entities"),
            true,
        ),
        (
            RuleSettings {
                tool: Some("delete_*".into()),
                ..settings(Decision::Deny)
            },
            asked(&bob, "memory", Kind::Prompt, "delete_entities"),
            false,
        ),
        (
            RuleSettings {
                resource: Some("file:///secret/**".into()),
                ..settings(Decision::Deny)
            },
            asked(&bob, "fs", Kind::Resource, "file:///secret/a/b.txt"),
            true,
        ),
        (
            RuleSettings {
                caller: Some("bob".into()),
                ..settings(Decision::Deny)
            },
            call(&bob, "memory", "x"),
            true,
        ),
        (
            RuleSettings {
                caller: Some("anonymous".into()),
                ..settings(Decision::Deny)
            },
            call(&anonymous, "memory", "x"),
            true,
        ),
        (
            RuleSettings {
                caller: Some("bob".into()),
                ..settings(Decision::Deny)
            },
            call(&anonymous, "memory", "x"),
            false,
        ),
        (
            RuleSettings {
                scope: Some("admin".into()),
                ..settings(Decision::Allow)
            },
            call(&bob, "memory", "x"),
            true,
        ),
        (
            RuleSettings {
                scope: Some("admin".into()),
                ..settings(Decision::Allow)
            },
            call(&anonymous, "memory", "x"),
            false,
        ),
        (
            RuleSettings {
                client_id: Some("cli-*".into()),
                ..settings(Decision::Allow)
            },
            call(&bob, "memory", "x"),
            true,
        ),
        (
            RuleSettings {
                client: Some("Claude*".into()),
                ..settings(Decision::Allow)
            },
            call(&bob, "memory", "x"),
            true,
        ),
        (
            RuleSettings {
                client: Some("Claude*".into()),
                ..settings(Decision::Allow)
            },
            call(&anonymous, "memory", "x"),
            false,
        ),
    ];
    for (n, (settings, asked, expected)) in cases.into_iter().enumerate() {
        let rule = rule(n + 1, settings.clone());
        assert_eq!(rule.matches(&asked), expected, "{settings:?} on {asked:?}");
    }
}

#[test]
fn deny_wins_over_ask_over_allow_and_the_first_of_them_is_named() {
    let bob = bob();
    let named = |decision, name: &str| RuleSettings {
        name: Some(name.into()),
        ..settings(decision)
    };
    let policy = Policy::new(
        vec![
            rule(1, named(Decision::Allow, "allow all")),
            rule(2, named(Decision::Ask, "ask first")),
            rule(
                3,
                RuleSettings {
                    tool: Some("delete_*".into()),
                    ..named(Decision::Deny, "no deletes")
                },
            ),
            rule(4, named(Decision::Ask, "ask again")),
        ],
        Decision::Allow,
    );
    let verdict = policy.decide(&asked(&bob, "memory", Kind::Tool, "delete_entities"));
    assert_eq!(verdict.decision, Decision::Deny);
    assert_eq!(verdict.decided_by(), "no deletes");
    let verdict = policy.decide(&asked(&bob, "memory", Kind::Tool, "read_graph"));
    assert_eq!(verdict.decision, Decision::Ask);
    assert_eq!(verdict.decided_by(), "ask first");
    assert!(policy.hides(&asked(&bob, "memory", Kind::Tool, "delete_x")));
    assert!(!policy.hides(&asked(&bob, "memory", Kind::Tool, "read_graph")));
}

#[test]
fn the_default_decides_where_no_rule_matches() {
    let bob = bob();
    let only_time = rule(
        1,
        RuleSettings {
            server: Some("time".into()),
            ..settings(Decision::Allow)
        },
    );
    let policy = Policy::new(vec![only_time], Decision::Deny);
    let verdict = policy.decide(&asked(&bob, "memory", Kind::Tool, "x"));
    assert_eq!(verdict.decision, Decision::Deny);
    assert_eq!(verdict.decided_by(), "the default");
    assert_eq!(
        policy
            .decide(&asked(&bob, "time", Kind::Tool, "now"))
            .decided_by(),
        "policy rule 1"
    );
    assert!(Policy::default().allows_everything());
    assert!(!policy.allows_everything());
}

#[test]
fn a_rule_that_cannot_be_used_is_refused_with_its_number_and_key() {
    let bad_glob = RuleSettings {
        tool: Some("a[".into()),
        ..settings(Decision::Deny)
    };
    let error = Rule::compile(&bad_glob, 3).unwrap_err();
    assert!(error.contains("#3") && error.contains("tool"), "{error}");
    let two_kinds = RuleSettings {
        tool: Some("a".into()),
        prompt: Some("b".into()),
        ..settings(Decision::Deny)
    };
    let error = Rule::compile(&two_kinds, 1).unwrap_err();
    assert!(error.contains("at most one"), "{error}");
}

#[test]
fn annotations_are_believed_from_trusted_servers_only() {
    let bob = bob();
    let deny_destructive = rule(
        1,
        RuleSettings {
            destructive: Some(true),
            ..settings(Decision::Deny)
        },
    );
    let allow_read_only = rule(
        2,
        RuleSettings {
            read_only: Some(true),
            ..settings(Decision::Allow)
        },
    );
    let policy = Policy::new(vec![deny_destructive, allow_read_only], Decision::Ask);
    let claims = serde_json::json!({"readOnlyHint": true, "destructiveHint": false});
    let tool = |trusted| Asked {
        hints: Some(Hints::believed(Some(&claims), trusted)),
        ..asked(&bob, "fs", Kind::Tool, "read_file")
    };
    assert_eq!(policy.decide(&tool(true)).decision, Decision::Allow);
    let untrusted = policy.decide(&tool(false));
    assert_eq!(
        untrusted.decision,
        Decision::Deny,
        "an untrusted claim is not believed"
    );
    assert_eq!(untrusted.decided_by(), "policy rule 1");
    assert!(policy.reads_hints());
    let (_, why) = policy.explain(&tool(true));
    assert!(
        why[0].2.as_deref().unwrap().contains("destructive = false"),
        "{why:?}"
    );
    let prompt = asked(&bob, "fs", Kind::Prompt, "p");
    assert_eq!(
        policy.decide(&prompt).decision,
        Decision::Ask,
        "annotations are about tools"
    );
    let about_prompts = RuleSettings {
        prompt: Some("p".into()),
        read_only: Some(true),
        ..settings(Decision::Deny)
    };
    assert!(
        Rule::compile(&about_prompts, 4)
            .unwrap_err()
            .contains("about tools")
    );
}

#[test]
fn a_rule_with_a_view_holds_for_requests_through_that_view_only() {
    let deny = rule(
        1,
        RuleSettings {
            view: Some("research*".into()),
            server: Some("git".into()),
            ..settings(Decision::Deny)
        },
    );
    let policy = Policy::new(vec![deny], Decision::Allow);
    let whole = bob();
    let through = |view: &str| Caller {
        view: Some(view.into()),
        ..bob()
    };
    let research = through("research-team");
    let other = through("ops");
    let decide = |caller: &Caller| {
        policy
            .decide(&asked(caller, "git", Kind::Tool, "git_log"))
            .decision
    };
    assert_eq!(decide(&research), Decision::Deny);
    assert_eq!(decide(&other), Decision::Allow);
    assert_eq!(decide(&whole), Decision::Allow);
    let (_, reasons) = policy.explain(&asked(&whole, "git", Kind::Tool, "git_log"));
    let why = reasons[0].2.as_deref().unwrap();
    assert!(why.contains("the whole catalog"), "{why}");
}

#[test]
fn arguments_decide_calls_and_lists_hide_only_what_every_call_is_denied() {
    use super::arguments::ArgumentSettings;
    use std::collections::BTreeMap;
    let bob = bob();
    let path_rule = |decision, key: &str, dir: &str| {
        let matcher: ArgumentSettings =
            serde_json::from_value(serde_json::json!({ key: dir })).unwrap();
        RuleSettings {
            tool: Some("write_file".into()),
            arguments: BTreeMap::from([("path".to_owned(), matcher)]),
            ..settings(decision)
        }
    };
    let call = |policy: &Policy, arguments: &serde_json::Value| {
        policy
            .decide(&Asked {
                arguments: Some(arguments),
                ..asked(&bob, "fs", Kind::Tool, "write_file")
            })
            .decision
    };
    let listed = |policy: &Policy| !policy.hides(&asked(&bob, "fs", Kind::Tool, "write_file"));
    let inside = serde_json::json!({"path": "/srv/project/a.txt"});
    let escaping = serde_json::json!({"path": "/srv/project/../secrets"});

    // Everything allowed but writes outside the project.
    let deny_outside = Policy::new(
        vec![rule(
            1,
            path_rule(Decision::Deny, "outside", "/srv/project"),
        )],
        Decision::Allow,
    );
    assert!(deny_outside.reads_arguments());
    assert_eq!(call(&deny_outside, &inside), Decision::Allow);
    assert_eq!(call(&deny_outside, &escaping), Decision::Deny);
    assert!(listed(&deny_outside), "some calls are allowed");

    // Everything denied but writes inside the project.
    let allow_inside = Policy::new(
        vec![rule(
            1,
            path_rule(Decision::Allow, "inside", "/srv/project"),
        )],
        Decision::Deny,
    );
    assert_eq!(call(&allow_inside, &inside), Decision::Allow);
    assert_eq!(call(&allow_inside, &escaping), Decision::Deny);
    assert_eq!(
        call(&allow_inside, &serde_json::Value::Null),
        Decision::Deny
    );
    assert!(listed(&allow_inside), "some calls are allowed");

    // A deny without arguments still hides, whatever the argument rules.
    let both = Policy::new(
        vec![
            rule(1, path_rule(Decision::Ask, "inside", "/srv/project")),
            rule(
                2,
                RuleSettings {
                    tool: Some("write_*".into()),
                    ..settings(Decision::Deny)
                },
            ),
        ],
        Decision::Allow,
    );
    assert_eq!(call(&both, &inside), Decision::Deny);
    assert!(!listed(&both));

    // A resource is read without arguments.
    let error = Rule::compile(
        &RuleSettings {
            tool: None,
            resource: Some("file:///*".into()),
            ..path_rule(Decision::Deny, "inside", "/srv")
        },
        3,
    )
    .unwrap_err();
    assert!(
        error.contains("#3: a resource is read without arguments"),
        "{error}"
    );
}

#[test]
fn a_rule_reads_the_tokens_claims() {
    let mut token = mcp_auth::Principal::new(vec![]);
    token.subject = Some("ann".into());
    token.claims = serde_json::json!({"dept": "eng", "groups": ["ops", "admins"], "level": 3})
        .as_object()
        .cloned()
        .unwrap();
    let ann = Caller {
        subject: Some("ann".into()),
        token: Some(std::sync::Arc::new(token)),
        ..Caller::default()
    };
    let anonymous = Caller::default();
    let claims = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let rule = |pairs: &[(&str, &str)]| {
        Rule::compile(
            &RuleSettings {
                claim: claims(pairs),
                ..settings(Decision::Allow)
            },
            1,
        )
        .unwrap()
    };
    let call = |caller| asked(caller, "s", Kind::Tool, "t");
    assert!(rule(&[("dept", "eng")]).matches(&call(&ann)));
    assert!(
        rule(&[("groups", "admin*")]).matches(&call(&ann)),
        "any value of a list"
    );
    assert!(rule(&[("level", "3"), ("dept", "e*")]).matches(&call(&ann)));
    assert!(!rule(&[("dept", "sales")]).matches(&call(&ann)));
    assert!(
        !rule(&[("dept", "*")]).matches(&call(&anonymous)),
        "no token, no claim"
    );
    let why = rule(&[("dept", "sales")]).why_not(&call(&ann)).unwrap();
    assert_eq!(why, "claim \"dept\" ([\"eng\"]) is not \"sales\"");
    let error = Rule::compile(
        &RuleSettings {
            claim: claims(&[("dept", "[")]),
            ..settings(Decision::Deny)
        },
        4,
    )
    .unwrap_err();
    assert!(error.contains("#4: claim.dept"), "{error}");
}
