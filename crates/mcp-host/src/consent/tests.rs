use super::*;

fn request() -> ApprovalRequest {
    ApprovalRequest {
        caller: "bob".into(),
        client: Some("Claude Desktop".into()),
        server: "memory".into(),
        server_identity: "npx -y @modelcontextprotocol/server-memory".into(),
        kind: Kind::Tool,
        name: "memory__delete_entities".into(),
        description: Some("Delete entities.".into()),
        annotations: Some(json!({"destructiveHint": true})),
        arguments: Some(json!({"entityNames": ["a"]}).as_object().cloned().unwrap()),
        reason: "policy rule 2".into(),
        changes: None,
    }
}

#[test]
fn the_form_shows_the_request_and_reads_every_answer() {
    let form = form(&request());
    let message = form["message"].as_str().unwrap();
    for shown in [
        "\"memory\"",
        "server-memory",
        "delete_entities",
        "Delete entities.",
        "destructiveHint",
        "entityNames",
        "policy rule 2",
        "Caller: bob (client \"Claude Desktop\")",
    ] {
        assert!(message.contains(shown), "{shown} in {message}");
    }
    let schema = &form["requestedSchema"];
    assert_eq!(schema["required"], json!(["decision"]));
    assert_eq!(
        schema["properties"]["arguments"]["default"],
        r#"{"entityNames":["a"]}"#
    );

    let answer = |content: Value| read_answer(&json!({"action": "accept", "content": content}));
    assert_eq!(
        answer(json!({"decision": "allow-session"})).unwrap(),
        Approval {
            allowed: true,
            scope: Scope::Session,
            arguments: None
        }
    );
    let edited =
        answer(json!({"decision": "allow-once", "arguments": "{\"entityNames\": []}"})).unwrap();
    assert_eq!(
        edited.arguments,
        json!({"entityNames": []}).as_object().cloned()
    );
    assert!(!answer(json!({"decision": "deny"})).unwrap().allowed);
    assert!(!answer(json!({})).unwrap().allowed, "no decision is no");
    assert!(!read_answer(&json!({"action": "decline"})).unwrap().allowed);
    assert!(!read_answer(&json!({"action": "cancel"})).unwrap().allowed);
    assert!(answer(json!({"decision": "maybe"})).is_err());
    assert!(answer(json!({"decision": "allow-once", "arguments": "[1]"})).is_err());
}

#[test]
fn a_definition_hashes_alike_in_any_member_order_and_differently_when_changed() {
    let one =
        json!({"name": "t", "inputSchema": {"type": "object", "properties": {"a": {}, "b": {}}}});
    let other =
        json!({"inputSchema": {"properties": {"b": {}, "a": {}}, "type": "object"}, "name": "t"});
    let changed = json!({"name": "t", "inputSchema": {"type": "object"}, "description": "new"});
    let hash = |v: &Value| definition_hash(v.as_object().unwrap());
    assert_eq!(hash(&one), hash(&other));
    assert_ne!(hash(&one), hash(&changed));
    assert_eq!(hash(&one).len(), 64);
}

#[test]
fn grants_for_always_outlive_the_store_and_bind_caller_and_definition() {
    let dir = std::env::temp_dir().join(format!("mcp-host-grants-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("nested").join("guard.db");
    let key = GrantKey {
        server_identity: "mcp serve everything".into(),
        kind: "tool",
        name: "add".into(),
        definition: "abc".into(),
    };
    {
        let store = GuardStore::open(&path).unwrap();
        assert!(!store.granted("alice", &key));
        store.grant("alice", &key).unwrap();
        store.grant("alice", &key).unwrap();
        assert!(store.granted("alice", &key));
    }
    let store = GuardStore::open(&path).unwrap();
    assert!(store.granted("alice", &key), "kept in the file");
    assert!(!store.granted("bob", &key), "another caller");
    let changed = GrantKey {
        definition: "abd".into(),
        ..key.clone()
    };
    assert!(!store.granted("alice", &changed), "a changed definition");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_first_shared_pin_of_an_item_is_its_pin_everywhere() {
    let dir = std::env::temp_dir().join(format!("mcp-pin-shared-{}", std::process::id()));
    let store = GuardStore::open(&dir.join("guard.db")).unwrap();
    let key = |definition: &str| GrantKey {
        server_identity: "npx server".into(),
        kind: "tool",
        name: "t".into(),
        definition: definition.into(),
    };
    // This instance saw "new" first (it started before the log was read).
    assert_eq!(store.check_pin("s", &key("new"), "new text"), Pinned::Same);
    // The log's first pin is "old": it is the pin, and "new" a change.
    let moved = store.pin_shared("s", &key("old"), "old text", true);
    assert_eq!(moved, Ok(true), "this instance's own pin was another");
    assert_eq!(
        store.check_pin("s", &key("new"), "new text"),
        Pinned::Changed("old text".into())
    );
    // A later pin in the log does not move it.
    let moved = store.pin_shared("s", &key("new"), "new text", false);
    assert_eq!(moved, Ok(false));
    assert_eq!(
        store.check_pin("s", &key("new"), "new text"),
        Pinned::Changed("old text".into())
    );
    std::fs::remove_dir_all(&dir).ok();
}
