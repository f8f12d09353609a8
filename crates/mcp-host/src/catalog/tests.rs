use super::*;
use serde_json::json;

fn item(value: Value) -> Item {
    value.as_object().unwrap().clone()
}

fn source(index: usize, name: &str, ns: &str, listing: Listing) -> Source {
    Source {
        index,
        name: name.into(),
        namespace: ns.into(),
        listing: Arc::new(listing),
    }
}

fn names<'a>(items: impl IntoIterator<Item = &'a Item>) -> Vec<&'a str> {
    items
        .into_iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect()
}

#[test]
fn tools_are_prefixed_and_keep_everything_else() {
    let a = Listing {
        tools: vec![
            item(
                json!({"name": "echo", "inputSchema": {"type": "object"}, "_meta": {"k": 1}, "annotations": {"readOnlyHint": true}, "x-unknown": [1]}),
            ),
            item(json!({"name": "git.status", "inputSchema": {"type": "object"}})),
        ],
        ..Default::default()
    };
    let b = Listing {
        tools: vec![item(
            json!({"name": "echo", "inputSchema": {"type": "object"}}),
        )],
        ..Default::default()
    };
    let catalog = Catalog::build(&[source(0, "a", "a", a), source(1, "b", "b", b)]);
    let shown = names(catalog.tools());
    assert_eq!(shown[0], "a__echo");
    assert!(shown[1].starts_with("a__git_status_"));
    assert_eq!(shown[2], "b__echo");
    assert_eq!(catalog.tools().page(0, 1)[0]["_meta"], json!({"k": 1}));
    assert_eq!(catalog.tools().page(0, 1)[0]["x-unknown"], json!([1]));
    assert_eq!(
        catalog.tool("b__echo"),
        Some(&Route {
            upstream: 1,
            original: "echo".into()
        })
    );
    assert_eq!(catalog.tool(shown[1]).unwrap().original, "git.status");
    assert!(catalog.collisions.is_empty());
}

#[test]
fn a_collision_is_reported_and_the_first_server_keeps_the_name() {
    let listing = || Listing {
        prompts: vec![item(json!({"name": "p"}))],
        tools: vec![item(json!({"name": "t", "inputSchema": {}}))],
        ..Default::default()
    };
    let catalog = Catalog::build(&[
        source(0, "one", "", listing()),
        source(1, "two", "", listing()),
    ]);
    assert_eq!(names(catalog.tools()), ["t"]);
    assert_eq!(names(catalog.prompts()), ["p"]);
    assert_eq!(catalog.tool("t").unwrap().upstream, 0);
    assert_eq!(catalog.collisions.len(), 2, "{:?}", catalog.collisions);
    let told = &catalog.collisions[0];
    assert!(
        told.contains("of server \"two\" is left out")
            && told.contains("of server \"one\";")
            && told.contains("namespace"),
        "{told}"
    );
    assert!(!told.contains("index"), "{told}");
}

#[test]
fn resources_pass_through_unless_two_servers_list_them() {
    let a = Listing {
        resources: vec![
            item(json!({"uri": "file:///same", "name": "same"})),
            item(json!({"uri": "memo://only-a", "name": "a"})),
        ],
        templates: vec![item(json!({"uriTemplate": "memo://a/{id}", "name": "t"}))],
        capabilities: serde_json::from_value(json!({"resources": {}})).unwrap(),
        ..Default::default()
    };
    let b = Listing {
        resources: vec![item(json!({"uri": "file:///same", "name": "same"}))],
        capabilities: serde_json::from_value(json!({"resources": {}})).unwrap(),
        ..Default::default()
    };
    let catalog = Catalog::build(&[source(0, "a", "fs", a), source(1, "b", "", b)]);
    let uris: Vec<_> = catalog
        .resources
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            "mcp-host:fs/file:///same",
            "memo://only-a",
            "mcp-host:b/file:///same"
        ]
    );
    assert_eq!(
        catalog.resource("mcp-host:b/file:///same"),
        Some(Route {
            upstream: 1,
            original: "file:///same".into()
        })
    );
    assert_eq!(catalog.resource("memo://only-a").unwrap().upstream, 0);
    // Not listed, but under a's template.
    assert_eq!(
        catalog.resource("memo://a/42"),
        Some(Route {
            upstream: 0,
            original: "memo://a/42".into()
        })
    );
    // Two servers with resources, no template: nobody to guess.
    assert_eq!(catalog.resource("other://x"), None);
    assert!(catalog.rewrites(0) && catalog.rewrites(1));
    assert_eq!(
        catalog.rewritten_link(1, "file:///same").as_deref(),
        Some("mcp-host:b/file:///same")
    );
    assert_eq!(catalog.rewritten_link(0, "memo://only-a"), None);
}

#[test]
fn a_uri_under_a_template_two_servers_have_is_ambiguous() {
    let listing = || Listing {
        templates: vec![item(
            json!({"uriTemplate": "demo://blob/{id}", "name": "t"}),
        )],
        capabilities: serde_json::from_value(json!({"resources": {}})).unwrap(),
        ..Default::default()
    };
    let catalog = Catalog::build(&[
        source(0, "a", "a", listing()),
        source(1, "b", "b", listing()),
    ]);
    assert_eq!(catalog.resource("demo://blob/1"), None);
    assert_eq!(
        catalog.ambiguous("demo://blob/1"),
        ["mcp-host:a/demo://blob/1", "mcp-host:b/demo://blob/1"]
    );
    assert_eq!(
        catalog.resource("mcp-host:b/demo://blob/1"),
        Some(Route {
            upstream: 1,
            original: "demo://blob/1".into()
        })
    );
    assert_eq!(
        catalog.rewritten_link(0, "demo://blob/7").as_deref(),
        Some("mcp-host:a/demo://blob/7")
    );
    assert!(!catalog.rewrites(2));
}

#[test]
fn instructions_are_merged_under_headings() {
    let with = |text: &str| Listing {
        instructions: Some(text.into()),
        ..Default::default()
    };
    let catalog = Catalog::build(&[
        source(0, "alpha", "alpha", with("Use A.")),
        source(1, "beta", "beta", Listing::default()),
        source(2, "gamma", "gamma", with("  Use G.\n")),
    ]);
    assert_eq!(
        catalog.instructions.as_deref(),
        Some("## alpha\n\nUse A.\n\n## gamma\n\nUse G.")
    );
}

fn tools(names: &[&str]) -> Listing {
    Listing {
        tools: names
            .iter()
            .map(|n| item(json!({"name": n, "inputSchema": {"type": "object"}})))
            .collect(),
        ..Default::default()
    }
}

#[test]
fn an_update_reuses_the_parts_of_unchanged_servers_and_tells_who_changed() {
    let sources = vec![
        source(0, "a", "a", tools(&["x", "y"])),
        source(1, "b", "b", tools(&["x"])),
        source(2, "c", "c", tools(&["z"])),
    ];
    let first = Catalog::build(&sources);
    let mut next = sources.clone();
    next[1] = source(1, "b", "b", tools(&["x", "w"]));
    let second = first.update(&next);
    assert!(Arc::ptr_eq(&first.parts[0], &second.parts[0]));
    assert!(!Arc::ptr_eq(&first.parts[1], &second.parts[1]));
    assert!(Arc::ptr_eq(&first.parts[2], &second.parts[2]));
    assert_eq!(
        names(second.tools()),
        ["a__x", "a__y", "b__x", "b__w", "c__z"]
    );
    assert_eq!(second.tool("b__w").unwrap().original, "w");
    assert_eq!(
        first.changed_upstreams(&second, crate::ListKind::Tools),
        [1].into()
    );
    assert!(
        first
            .changed_upstreams(&second, crate::ListKind::Prompts)
            .is_empty()
    );
    // A listing made anew with the same items is not a change.
    next[2] = source(2, "c", "c", tools(&["z"]));
    let third = second.update(&next);
    assert!(!Arc::ptr_eq(&second.parts[2], &third.parts[2]));
    assert!(
        second
            .changed_upstreams(&third, crate::ListKind::Tools)
            .is_empty()
    );
    // A server gone is a change of its tools.
    let fourth = third.update(&next[..2]);
    assert_eq!(
        third.changed_upstreams(&fourth, crate::ListKind::Tools),
        [2].into()
    );
    assert_eq!(fourth.tool("c__z"), None);
}

#[test]
fn a_server_without_namespace_contests_names_in_config_order() {
    // "plain" lists a tool whose name is what "a"'s echo is shown as.
    let sources = [
        source(0, "plain", "", tools(&["a__echo", "solo"])),
        source(1, "a", "a", tools(&["echo", "other"])),
        source(2, "later", "", tools(&["solo"])),
    ];
    let catalog = Catalog::build(&sources);
    assert_eq!(
        names(catalog.tools()),
        ["a__echo", "solo", "a__other"],
        "a's echo lost its name to plain's, later's solo to plain's"
    );
    assert_eq!(catalog.tool("a__echo").unwrap().upstream, 0);
    assert_eq!(catalog.tool("a__other").unwrap().upstream, 1);
    assert_eq!(catalog.tool("solo").unwrap().upstream, 0);
    assert_eq!(catalog.tools().len(), 3);
    assert_eq!(catalog.collisions.len(), 2, "{:?}", catalog.collisions);
    assert!(
        catalog.collisions[0].contains("\"echo\" of server \"a\" is left out"),
        "{:?}",
        catalog.collisions
    );
    // A page starts after what is hidden, wherever it falls.
    let page: Vec<_> = names(catalog.tools().page(1, 5));
    assert_eq!(page, ["solo", "a__other"]);
    assert!(catalog.tools().page(3, 5).is_empty());
    // When "plain" goes, "a" gets its name back, and that is a change.
    let without = catalog.update(&sources[1..]);
    assert_eq!(without.tool("a__echo").unwrap().upstream, 1);
    assert_eq!(without.tool("solo").unwrap().upstream, 2);
    let changed = catalog.changed_upstreams(&without, crate::ListKind::Tools);
    assert_eq!(changed, [0, 1, 2].into());
}

#[test]
fn servers_that_share_a_namespace_contest_its_names() {
    let catalog = Catalog::build(&[
        source(0, "one", "ns", tools(&["t", "u"])),
        source(1, "two", "ns", tools(&["t", "v"])),
    ]);
    assert_eq!(names(catalog.tools()), ["ns__t", "ns__u", "ns__v"]);
    assert_eq!(catalog.tool("ns__t").unwrap().upstream, 0);
    assert_eq!(catalog.tool("ns__v").unwrap().upstream, 1);
    assert_eq!(catalog.collisions.len(), 1);
    assert_eq!(catalog.tool_definition("ns__v").unwrap()["name"], "ns__v");
    assert_eq!(catalog.tool_definition("ns__w"), None);
}
