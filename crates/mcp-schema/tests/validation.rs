//! Typed values, serialized into whole messages, validate against the
//! schema of the revisions they belong to.

use mcp_schema::validation::SchemaValidator;
use mcp_schema::*;
use serde_json::{Value, json};

fn v(version: ProtocolVersion) -> std::sync::Arc<SchemaValidator> {
    SchemaValidator::try_for_revision(version).unwrap_or_else(|e| panic!("{e}"))
}

fn response<T: serde::Serialize>(result: &T) -> Value {
    serde_json::to_value(JsonRpcResultResponse::new(7, result)).unwrap()
}

fn modern_request_meta() -> Meta {
    RequestMetaObject {
        protocol_version: Some(ProtocolVersion::V2026_07_28.to_string()),
        client_info: Some(Implementation::new("test-client", "1.0.0")),
        client_capabilities: Some(ClientCapabilities::default()),
        ..Default::default()
    }
    .into_meta()
}

fn server_caps() -> ServerCapabilities {
    ServerCapabilities {
        tools: Some(ToolsCapability::with_list_changed(true)),
        resources: Some(ResourcesCapability {
            subscribe: Some(true),
            list_changed: Some(true),
        }),
        prompts: Some(PromptsCapability::default()),
        logging: Some(JsonObject::new()),
        ..Default::default()
    }
}

fn weather_tool() -> Tool {
    Tool::new(
        "get_weather",
        json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"]
        }),
    )
    .with_description("Current weather of a city")
}

#[test]
fn every_schema_loads() {
    for version in ProtocolVersion::ALL {
        let validator = v(version);
        assert_eq!(validator.version(), version);
        assert!(validator.request_def(TOOLS_CALL).is_some(), "{version}");
        assert!(
            validator.notification_def(NOTIFICATION_PROGRESS).is_some(),
            "{version}"
        );
        assert_eq!(
            validator.request_def(INITIALIZE).is_some(),
            version.is_legacy()
        );
    }
}

#[test]
fn initialize_exchange_validates_in_legacy_revisions() {
    for version in ProtocolVersion::ALL.into_iter().filter(|v| v.is_legacy()) {
        let validator = v(version);
        let params = InitializeRequestParams::new(
            version.as_str(),
            ClientCapabilities {
                roots: Some(RootsCapability::with_list_changed(true)),
                sampling: Some(SamplingCapability::default()),
                ..Default::default()
            },
            Implementation::new("test-client", "1.0.0"),
        );
        let request = serde_json::to_value(JsonRpcRequest::new(1, INITIALIZE, params)).unwrap();
        validator.validate_message(&request).unwrap();

        let mut result = InitializeResult::new(
            version.as_str(),
            server_caps(),
            Implementation::new("test-server", "0.1.0"),
        );
        result.instructions = Some("Be nice".into());
        let message = response(&result);
        validator.validate_message(&message).unwrap();
        validator.validate_response(INITIALIZE, &message).unwrap();

        let initialized = serde_json::to_value(JsonRpcNotification::<NotificationParams> {
            jsonrpc: JsonRpcVersion,
            method: NOTIFICATION_INITIALIZED.into(),
            params: None,
        })
        .unwrap();
        validator.validate_message(&initialized).unwrap();
    }
    // There is no initialize in 2026-07-28.
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
    assert!(
        v(ProtocolVersion::V2026_07_28)
            .validate_message(&request)
            .is_err()
    );
}

#[test]
fn list_tools_validates_everywhere() {
    for version in ProtocolVersion::ALL {
        let mut result = ListToolsResult::new(vec![weather_tool()]);
        result.next_cursor = Some("page-2".into());
        if version.has_result_type() {
            result.result_type = Some(ResultType::Complete);
            result.ttl_ms = Some(60_000);
            result.cache_scope = Some(CacheScope::Public);
        }
        v(version)
            .validate_response(TOOLS_LIST, &response(&result))
            .unwrap_or_else(|e| panic!("{version}: {e}"));
    }
    // 2026-07-28 requires the cache hints.
    let bare = ListToolsResult {
        result_type: Some(ResultType::Complete),
        ..ListToolsResult::new(vec![weather_tool()])
    };
    assert!(
        v(ProtocolVersion::V2026_07_28)
            .validate_response(TOOLS_LIST, &response(&bare))
            .is_err()
    );
}

#[test]
fn call_tool_results_validate() {
    let structured = CallToolResult::structured(json!({"temperature": 22.5, "unit": "C"}));
    for version in [ProtocolVersion::V2025_06_18, ProtocolVersion::V2025_11_25] {
        let validator = v(version);
        validator
            .validate_response(TOOLS_CALL, &response(&structured))
            .unwrap_or_else(|e| panic!("{version}: {e}"));
        validator
            .validate_response(TOOLS_CALL, &response(&CallToolResult::error("boom")))
            .unwrap_or_else(|e| panic!("{version}: {e}"));
    }
    for version in [ProtocolVersion::V2024_11_05, ProtocolVersion::V2025_03_26] {
        v(version)
            .validate_response(TOOLS_CALL, &response(&CallToolResult::text("hello")))
            .unwrap_or_else(|e| panic!("{version}: {e}"));
    }

    let modern = v(ProtocolVersion::V2026_07_28);
    let complete = CallToolResult {
        result_type: Some(ResultType::Complete),
        ..structured
    };
    modern
        .validate_response(TOOLS_CALL, &response(&complete))
        .unwrap();
    // Without resultType, 2026-07-28 refuses it.
    let legacy_shaped = CallToolResult::text("x");
    assert!(
        modern
            .validate_response(TOOLS_CALL, &response(&legacy_shaped))
            .is_err()
    );

    // A tools/call request of 2026-07-28 carries version, info and
    // capabilities in _meta.
    let mut params = CallToolRequestParams::new("get_weather", json!({"city": "Paris"}));
    params.meta = Some(modern_request_meta());
    let request = serde_json::to_value(JsonRpcRequest::new("c1", TOOLS_CALL, params)).unwrap();
    modern.validate_message(&request).unwrap();
    let no_meta = serde_json::to_value(JsonRpcRequest::new(
        "c2",
        TOOLS_CALL,
        CallToolRequestParams::new("get_weather", json!({})),
    ))
    .unwrap();
    assert!(modern.validate_message(&no_meta).is_err());
    v(ProtocolVersion::V2025_06_18)
        .validate_message(&no_meta)
        .unwrap();
}

#[test]
fn input_required_validates() {
    let schema: ElicitationSchema = serde_json::from_value(json!({
        "type": "object",
        "properties": {"name": {"type": "string", "title": "Name"}},
        "required": ["name"]
    }))
    .unwrap();
    let mut requests = InputRequests::new();
    requests.insert(
        "who".into(),
        InputRequest::Elicit(ElicitRequestFormParams::new("Who are you?", schema).into()),
    );
    requests.insert(
        "ask".into(),
        InputRequest::CreateMessage(CreateMessageRequestParams::new(
            vec![SamplingMessage::user_text("Capital of France?")],
            50,
        )),
    );
    requests.insert("roots".into(), InputRequest::ListRoots(None));
    let result = InputRequiredResult::new(requests, Some("state-1".into()));
    let message = response(&MaybeInputRequired::<CallToolResult>::InputRequired(result));
    v(ProtocolVersion::V2026_07_28)
        .validate_response(TOOLS_CALL, &message)
        .unwrap();
}

#[test]
fn discover_validates() {
    let result = DiscoverResult::new(vec!["2026-07-28".into()], server_caps())
        .with_server_info(Implementation::new("test-server", "0.1.0"));
    let validator = v(ProtocolVersion::V2026_07_28);
    validator
        .validate_response(SERVER_DISCOVER, &response(&result))
        .unwrap();
    let request = serde_json::to_value(JsonRpcRequest::new(
        1,
        SERVER_DISCOVER,
        RequestParams {
            meta: Some(modern_request_meta()),
        },
    ))
    .unwrap();
    validator.validate_message(&request).unwrap();
}

#[test]
fn errors_validate() {
    let validator = v(ProtocolVersion::V2026_07_28);
    let error = unsupported_protocol_version_error("1900-01-01");
    let message = serde_json::to_value(JsonRpcErrorResponse::new(Some(1.into()), error)).unwrap();
    validator.validate_message(&message).unwrap();
    validator
        .validate_def("UnsupportedProtocolVersionError", &message)
        .unwrap();

    let missing = MissingRequiredClientCapabilityData {
        required_capabilities: ClientCapabilities {
            elicitation: Some(ElicitationCapability::default()),
            ..Default::default()
        },
    }
    .into_error("needs elicitation");
    let message = serde_json::to_value(JsonRpcErrorResponse::new(Some(2.into()), missing)).unwrap();
    validator
        .validate_def("MissingRequiredClientCapabilityError", &message)
        .unwrap();

    let url = UrlElicitationRequiredData {
        elicitations: vec![ElicitRequestURLParams {
            elicitation_id: Some("e1".into()),
            ..ElicitRequestURLParams::new("Log in", "https://example.com/login")
        }],
        ..Default::default()
    }
    .into_error("login needed");
    let message = serde_json::to_value(JsonRpcErrorResponse::new(Some(3.into()), url)).unwrap();
    v(ProtocolVersion::V2025_11_25)
        .validate_def("URLElicitationRequiredError", &message)
        .unwrap();
}

#[test]
fn notifications_validate() {
    for version in ProtocolVersion::ALL {
        let validator = v(version);
        let mut progress = ProgressNotificationParams::new("tok".into(), 50.0, Some(100.0));
        if version >= ProtocolVersion::V2025_03_26 {
            progress.message = Some("halfway".into());
        }
        let message =
            serde_json::to_value(JsonRpcNotification::new(NOTIFICATION_PROGRESS, progress))
                .unwrap();
        assert_eq!(message["params"]["progress"], json!(50));
        validator.validate_message(&message).unwrap();

        let log = LoggingMessageNotificationParams::new(LoggingLevel::Warning, json!({"x": 1}));
        let message =
            serde_json::to_value(JsonRpcNotification::new(NOTIFICATION_MESSAGE, log)).unwrap();
        validator.validate_message(&message).unwrap();

        let cancelled = CancelledNotificationParams::new(5.into(), Some("timeout".into()));
        let message =
            serde_json::to_value(JsonRpcNotification::new(NOTIFICATION_CANCELLED, cancelled))
                .unwrap();
        validator.validate_message(&message).unwrap();
    }
}

#[test]
fn batches_only_in_2025_03_26() {
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}
    ]);
    v(ProtocolVersion::V2025_03_26)
        .validate_message(&batch)
        .unwrap();
    assert!(
        v(ProtocolVersion::V2025_06_18)
            .validate_message(&batch)
            .is_err()
    );
}

#[test]
fn sampling_with_tools_validates_in_2025_11_25() {
    let mut params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 100);
    params.tools = Some(vec![weather_tool()]);
    params.tool_choice = Some(ToolChoice {
        mode: Some(ToolChoiceMode::Auto),
    });
    params.include_context = Some(IncludeContext::ThisServer);
    let request =
        serde_json::to_value(JsonRpcRequest::new(9, SAMPLING_CREATE_MESSAGE, params)).unwrap();
    let validator = v(ProtocolVersion::V2025_11_25);
    validator.validate_message(&request).unwrap();

    let result = CreateMessageResult {
        content: SamplingContent::Multiple(vec![SamplingMessageContentBlock::ToolUse(
            ToolUseContent {
                id: "t1".into(),
                name: "get_weather".into(),
                input: json!({"city": "Paris"}).as_object().unwrap().clone(),
                ..Default::default()
            },
        )]),
        stop_reason: Some(stop_reason::TOOL_USE.into()),
        ..CreateMessageResult::assistant_text("m", "")
    };
    validator
        .validate_response(SAMPLING_CREATE_MESSAGE, &response(&result))
        .unwrap();
}

#[test]
fn invalid_messages_are_refused() {
    let old = v(ProtocolVersion::V2024_11_05);
    let no_client_info = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2024-11-05", "capabilities": {}}});
    assert!(old.validate_message(&no_client_info).is_err());
    // elicitation does not exist in 2024-11-05.
    let elicit = json!({"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": {}});
    assert!(old.validate_message(&elicit).is_err());
    // Unknown methods are checked as envelopes only.
    let custom = json!({"jsonrpc": "2.0", "id": 1, "method": "com.example/thing"});
    old.validate_message(&custom).unwrap();
    assert!(
        old.validate_message(&json!({"jsonrpc": "1.0", "id": 1, "method": "x"}))
            .is_err()
    );
    // A bad content block inside a tool result.
    let bad = json!({"content": [{"type": "text"}]});
    let message = json!({"jsonrpc": "2.0", "id": 1, "result": bad});
    assert!(old.validate_response(TOOLS_CALL, &message).is_err());
    // Formats are checked: a resource URI must be a URI.
    let modern = v(ProtocolVersion::V2026_07_28);
    assert!(
        modern
            .validate_def("Resource", &json!({"uri": "not a uri", "name": "n"}))
            .is_err()
    );
    modern
        .validate_def("Resource", &json!({"uri": "file:///a/b.txt", "name": "n"}))
        .unwrap();
}
