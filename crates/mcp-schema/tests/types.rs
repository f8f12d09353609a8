//! Behaviour of the types beyond the specification's examples.

use mcp_schema::*;
use serde_json::{Value, json};

fn back<T: serde::Serialize + serde::de::DeserializeOwned>(json: Value) -> Value {
    let typed: T = serde_json::from_value(json).unwrap();
    serde_json::to_value(typed).unwrap()
}

#[test]
fn logging_levels_are_ordered() {
    use LoggingLevel::*;
    let levels = [
        Debug, Info, Notice, Warning, Error, Critical, Alert, Emergency,
    ];
    assert!(levels.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(serde_json::to_value(Warning).unwrap(), json!("warning"));
    assert_eq!(Emergency.to_string(), "emergency");
}

#[test]
fn constructors_build_the_wire_shapes() {
    assert_eq!(
        serde_json::to_value(CallToolResult::error("boom")).unwrap(),
        json!({"content": [{"type": "text", "text": "boom"}], "isError": true})
    );
    assert_eq!(
        serde_json::to_value(CallToolResult::structured(json!({"a": 1}))).unwrap(),
        json!({"content": [{"type": "text", "text": "{\"a\":1}"}], "structuredContent": {"a": 1}})
    );
    assert_eq!(
        serde_json::to_value(Tool::new("t", json!(null))).unwrap(),
        json!({"name": "t", "inputSchema": {"type": "object"}})
    );
    assert!(Tool::try_new("t", json!(3)).is_err());
    assert_eq!(
        serde_json::to_value(ContentBlock::text("hi")).unwrap(),
        json!({"type": "text", "text": "hi"})
    );
    assert_eq!(
        serde_json::to_value(ElicitRequestURLParams::new("go", "https://x.example")).unwrap(),
        json!({"mode": "url", "message": "go", "url": "https://x.example"})
    );
}

#[test]
fn completion_keeps_at_most_100_values() {
    let result = CompleteResult::from_values((0..150).map(|i| i.to_string()).collect());
    assert_eq!(result.completion.values.len(), MAX_COMPLETION_VALUES);
    assert_eq!(result.completion.total, Some(150));
    assert_eq!(result.completion.has_more, Some(true));
    let small = CompleteResult::from_values(vec!["a".into()]);
    assert_eq!(small.completion.has_more, Some(false));
}

#[test]
fn whole_numbers_stay_integers() {
    let p = ProgressNotificationParams::new(1.into(), 50.0, Some(100.0));
    let v = serde_json::to_value(p).unwrap();
    assert_eq!(v["progress"], json!(50));
    assert_eq!(v["total"], json!(100));
    let p = ProgressNotificationParams::new(1.into(), 0.5, None);
    assert_eq!(serde_json::to_value(p).unwrap()["progress"], json!(0.5));
}

#[test]
fn elicitation_params_follow_mode() {
    let form = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}}});
    assert!(matches!(
        serde_json::from_value::<ElicitRequestParams>(form.clone()).unwrap(),
        ElicitRequestParams::Form(_)
    ));
    assert_eq!(back::<ElicitRequestParams>(form.clone()), form);
    let url =
        json!({"mode": "url", "message": "m", "url": "https://a.example", "elicitationId": "e"});
    assert!(matches!(
        serde_json::from_value::<ElicitRequestParams>(url.clone()).unwrap(),
        ElicitRequestParams::Url(_)
    ));
    assert_eq!(back::<ElicitRequestParams>(url.clone()), url);
}

#[test]
fn form_fields_are_told_apart() {
    let legacy = json!({"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]});
    assert!(matches!(
        serde_json::from_value::<PrimitiveSchemaDefinition>(legacy.clone()).unwrap(),
        PrimitiveSchemaDefinition::LegacyTitledEnum(_)
    ));
    assert_eq!(back::<PrimitiveSchemaDefinition>(legacy.clone()), legacy);
    let integer = json!({"type": "integer", "minimum": 1, "maximum": 10, "default": 3});
    assert_eq!(back::<PrimitiveSchemaDefinition>(integer.clone()), integer);
    assert!(
        serde_json::from_value::<PrimitiveSchemaDefinition>(json!({"type": "object"})).is_err()
    );
}

#[test]
fn elicit_values_keep_their_types() {
    let result = json!({"action": "accept", "content": {
        "b": true, "i": 3, "n": 2.5, "s": "x", "m": ["a", "b"]
    }});
    assert_eq!(back::<ElicitResult>(result.clone()), result);
    let parsed: ElicitResult = serde_json::from_value(result).unwrap();
    let content = parsed.content.unwrap();
    assert_eq!(content["i"], ElicitValue::Integer(3));
    assert_eq!(
        content["m"],
        ElicitValue::Strings(vec!["a".into(), "b".into()])
    );
}

#[test]
fn results_that_may_need_input() {
    let input: MaybeInputRequired<CallToolResult> =
        serde_json::from_value(json!({"resultType": "input_required", "requestState": "s"}))
            .unwrap();
    assert!(matches!(input, MaybeInputRequired::InputRequired(_)));
    let done: MaybeInputRequired<CallToolResult> =
        serde_json::from_value(json!({"content": []})).unwrap();
    assert!(matches!(done, MaybeInputRequired::Complete(_)));
    let roots = json!({"method": "roots/list"});
    assert_eq!(
        serde_json::from_value::<InputRequest>(roots.clone()).unwrap(),
        InputRequest::ListRoots(None)
    );
    assert_eq!(back::<InputRequest>(roots.clone()), roots);
    assert!(serde_json::from_value::<InputRequest>(json!({"method": "tools/call"})).is_err());
}

#[test]
fn request_meta_has_a_typed_view() {
    let meta = RequestMetaObject {
        protocol_version: Some("2026-07-28".into()),
        client_info: Some(Implementation::new("c", "1")),
        client_capabilities: Some(ClientCapabilities::default()),
        log_level: Some(LoggingLevel::Info),
        progress_token: Some("p".into()),
        other: Meta::new(),
    }
    .into_meta();
    assert_eq!(meta[META_PROTOCOL_VERSION], json!("2026-07-28"));
    assert_eq!(meta[META_LOG_LEVEL], json!("info"));
    assert_eq!(meta[META_PROGRESS_TOKEN], json!("p"));
    let typed = RequestMetaObject::from_meta(&meta).unwrap();
    assert_eq!(typed.client_info.unwrap().name, "c");
}

#[test]
fn unknown_capabilities_survive() {
    let caps = json!({"tools": {"listChanged": true}, "somethingNew": {"x": 1},
                      "tasks": {"list": {}, "requests": {"tools": {"call": {}}}}});
    assert_eq!(back::<ServerCapabilities>(caps.clone()), caps);
    let client = json!({"roots": {"listChanged": true}, "sampling": {},
                        "elicitation": {"form": {}, "url": {}},
                        "extensions": {"io.modelcontextprotocol/tasks": {}}});
    assert_eq!(back::<ClientCapabilities>(client.clone()), client);
}

#[test]
fn tasks_round_trip() {
    let task = json!({"taskId": "t", "status": "working", "createdAt": "2025-01-01T00:00:00Z",
                      "lastUpdatedAt": "2025-01-01T00:00:00Z", "ttl": null, "pollInterval": 500});
    assert_eq!(back::<Task>(task.clone()), task);
    let mut result = task.as_object().unwrap().clone();
    result.insert("_meta".into(), json!({META_RELATED_TASK: {"taskId": "t"}}));
    assert_eq!(
        back::<GetTaskResult>(Value::Object(result.clone())),
        Value::Object(result)
    );
    assert!(TaskStatus::Cancelled.is_terminal());
    assert!(!TaskStatus::InputRequired.is_terminal());
}

#[test]
fn legacy_shapes_parse() {
    // 2024-11-05: completion reference named ref/resource, sampling content
    // as a single block, cancelled notifications with requestId.
    let complete = json!({"ref": {"type": "ref/resource", "uri": "file:///{path}"},
                          "argument": {"name": "path", "value": "sr"}});
    assert_eq!(back::<CompleteRequestParams>(complete.clone()), complete);
    let message = json!({"role": "assistant", "content": {"type": "text", "text": "x"},
                         "model": "m", "stopReason": "endTurn"});
    assert_eq!(back::<CreateMessageResult>(message.clone()), message);
    let init = json!({"protocolVersion": "2024-11-05", "capabilities": {"roots": {"listChanged": true}},
                      "clientInfo": {"name": "c", "version": "1"}});
    assert_eq!(back::<InitializeRequestParams>(init.clone()), init);
}

#[test]
fn extension_tasks_round_trip() {
    // The SEP-2663 example: flat, `resultType` first.
    let text = r#"{"resultType":"task","taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"working","statusMessage":"The operation is now in progress.","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:40:00Z","ttlMs":60000,"pollIntervalMs":5000}"#;
    let created: ExtCreateTaskResult = serde_json::from_str(text).unwrap();
    assert_eq!(created.result_type, ResultType::Task);
    assert_eq!(created.task.ttl_ms, Some(60000));
    assert_eq!(serde_json::to_string(&created).unwrap(), text);
    assert_eq!(
        serde_json::to_string(&ExtCreateTaskResult::new(created.task.clone())).unwrap(),
        text
    );

    let completed = json!({"resultType": "complete", "taskId": "t", "status": "completed",
        "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:30:00Z",
        "ttlMs": null, "result": {"content": [{"type": "text", "text": "x"}], "isError": true}});
    assert_eq!(back::<ExtGetTaskResult>(completed.clone()), completed);
    let failed = json!({"resultType": "complete", "taskId": "t", "status": "failed",
        "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:30:00Z",
        "ttlMs": 1000, "pollIntervalMs": 500, "error": {"code": -32603, "message": "boom"}});
    assert_eq!(back::<ExtGetTaskResult>(failed.clone()), failed);
    let waiting = json!({"taskId": "t", "status": "input_required",
        "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:30:00Z",
        "ttlMs": 1000, "inputRequests": {"name": {"method": "elicitation/create",
            "params": {"mode": "form", "message": "Name?",
                       "requestedSchema": {"type": "object", "properties": {}}}}}});
    assert_eq!(back::<DetailedTask>(waiting.clone()), waiting);
    let update = json!({"taskId": "t", "inputResponses": {"name": {"action": "accept",
        "content": {"name": "Ada"}}}});
    assert_eq!(back::<UpdateTaskRequestParams>(update.clone()), update);
    let filter = json!({"toolsListChanged": true, "taskIds": ["t"]});
    assert_eq!(back::<SubscriptionFilter>(filter.clone()), filter);
    assert_eq!(
        serde_json::to_value(ResultType::Task).unwrap(),
        json!("task")
    );
}

#[test]
fn tasks_belong_to_their_revisions() {
    use ProtocolVersion::*;
    let caps: ServerCapabilities = serde_json::from_value(json!({
        "tools": {}, "tasks": {"list": {}, "cancel": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    }))
    .unwrap();
    for v in [V2024_11_05, V2025_03_26, V2025_06_18] {
        let shown = serde_json::to_value(v.server_capabilities(&caps)).unwrap();
        assert_eq!(shown, json!({"tools": {}}), "{v}");
        assert!(!v.defines_client_request(methods::TASKS_GET));
    }
    let legacy = serde_json::to_value(V2025_11_25.server_capabilities(&caps)).unwrap();
    assert_eq!(
        legacy,
        json!({"tools": {}, "tasks": {"list": {}, "cancel": {}}})
    );
    let modern = serde_json::to_value(V2026_07_28.server_capabilities(&caps)).unwrap();
    assert_eq!(
        modern,
        json!({"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    assert!(V2025_11_25.defines_client_request(methods::TASKS_LIST));
    assert!(!V2025_11_25.defines_client_request(methods::TASKS_UPDATE));
    assert!(V2026_07_28.defines_client_request(methods::TASKS_UPDATE));
    assert!(V2026_07_28.defines_client_request(methods::TASKS_CANCEL));
    assert!(!V2026_07_28.defines_client_request(methods::TASKS_RESULT));
    assert!(!V2026_07_28.defines_client_request(methods::TASKS_LIST));
}
