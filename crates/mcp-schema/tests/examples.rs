//! Every example of the 2026-07-28 specification parses into its Rust type,
//! serializes back to the same JSON, and validates against its schema type.

use std::fmt::Debug;
use std::path::PathBuf;

use mcp_schema::validation::SchemaValidator;
use mcp_schema::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `shared/spec` beside the repository; its absence fails the tests.
fn spec_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/spec");
    assert!(
        dir.join("2026-07-28/examples").is_dir(),
        "the MCP spec folder is missing: expected {} (the repository must sit beside a \
         `shared` folder holding spec/REV/schema.json and spec/2026-07-28/examples)",
        dir.display()
    );
    dir
}

/// Parses `json` as `T`, serializes it back, and demands the same JSON.
fn round_trip<T: Serialize + DeserializeOwned + Debug>(json: &Value) -> Result<T, String> {
    let typed: T = serde_json::from_value(json.clone()).map_err(|e| format!("parse: {e}"))?;
    let back = serde_json::to_value(&typed).map_err(|e| format!("serialize: {e}"))?;
    if &back != json {
        return Err(format!(
            "round trip changed the JSON\n  original: {json}\n  back:     {back}\n  typed: {typed:?}"
        ));
    }
    Ok(typed)
}

/// Round-trips `json` as `T` and checks the parsed value with `check`.
fn round_trip_with<T: Serialize + DeserializeOwned + Debug>(
    json: &Value,
    check: impl FnOnce(&T) -> bool,
) -> Result<(), String> {
    let typed = round_trip::<T>(json)?;
    if check(&typed) {
        Ok(())
    } else {
        Err(format!("parsed into the wrong variant: {typed:?}"))
    }
}

/// A request with typed params whose method must be `method`.
fn request<P: Serialize + DeserializeOwned + Debug>(
    json: &Value,
    method: &str,
) -> Result<(), String> {
    round_trip_with::<JsonRpcRequest<P>>(json, |r| r.method == method)
}

/// A notification with typed params whose method must be `method`.
fn notification<P: Serialize + DeserializeOwned + Debug>(
    json: &Value,
    method: &str,
) -> Result<(), String> {
    round_trip_with::<JsonRpcNotification<P>>(json, |n| n.method == method)
}

/// An error response whose code must be `code` and whose data parses as `D`.
fn error_response<D: Serialize + DeserializeOwned + Debug>(
    json: &Value,
    code: i64,
) -> Result<(), String> {
    let response = round_trip::<JsonRpcErrorResponse>(json)?;
    if response.error.code != code {
        return Err(format!("code {} instead of {code}", response.error.code));
    }
    match &response.error.data {
        Some(data) => round_trip::<D>(data).map(drop),
        None => Ok(()),
    }
}

/// An error object whose code must be `code`.
fn error_object(json: &Value, code: i64) -> Result<(), String> {
    round_trip_with::<ErrorObject>(json, |e| e.code == code)
}

/// An input request as the examples write it, with an `id` some of them carry.
#[derive(Debug, Serialize, Deserialize)]
struct LooseInputRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jsonrpc: Option<JsonRpcVersion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<RequestId>,
    #[serde(flatten)]
    request: InputRequest,
}

/// Checks one example of schema type `ty`.
fn check_example(ty: &str, json: &Value) -> Result<(), String> {
    use mcp_schema::methods::*;
    match ty {
        // Content.
        "TextContent" => {
            round_trip_with::<ContentBlock>(json, |c| matches!(c, ContentBlock::Text(_)))
        }
        "ImageContent" => {
            round_trip_with::<ContentBlock>(json, |c| matches!(c, ContentBlock::Image(_)))
        }
        "AudioContent" => {
            round_trip_with::<ContentBlock>(json, |c| matches!(c, ContentBlock::Audio(_)))
        }
        "ResourceLink" => {
            round_trip_with::<ContentBlock>(json, |c| matches!(c, ContentBlock::ResourceLink(_)))
        }
        "EmbeddedResource" => {
            round_trip_with::<ContentBlock>(json, |c| matches!(c, ContentBlock::Resource(_)))
        }
        "ToolUseContent" => round_trip_with::<SamplingMessageContentBlock>(json, |c| {
            matches!(c, SamplingMessageContentBlock::ToolUse(_))
        }),
        "ToolResultContent" => round_trip_with::<SamplingMessageContentBlock>(json, |c| {
            matches!(c, SamplingMessageContentBlock::ToolResult(_))
        }),
        "TextResourceContents" => {
            round_trip::<TextResourceContents>(json)?;
            round_trip_with::<ResourceContents>(json, |c| matches!(c, ResourceContents::Text(_)))
        }
        "BlobResourceContents" => {
            round_trip::<BlobResourceContents>(json)?;
            round_trip_with::<ResourceContents>(json, |c| matches!(c, ResourceContents::Blob(_)))
        }

        // Elicitation form fields.
        "StringSchema" => {
            primitive::<StringSchema>(json, |p| matches!(p, PrimitiveSchemaDefinition::String(_)))
        }
        "NumberSchema" => {
            primitive::<NumberSchema>(json, |p| matches!(p, PrimitiveSchemaDefinition::Number(_)))
        }
        "BooleanSchema" => {
            primitive::<BooleanSchema>(json, |p| matches!(p, PrimitiveSchemaDefinition::Boolean(_)))
        }
        "UntitledSingleSelectEnumSchema" => {
            primitive::<UntitledSingleSelectEnumSchema>(json, |p| {
                matches!(p, PrimitiveSchemaDefinition::UntitledSingleSelectEnum(_))
            })
        }
        "TitledSingleSelectEnumSchema" => primitive::<TitledSingleSelectEnumSchema>(json, |p| {
            matches!(p, PrimitiveSchemaDefinition::TitledSingleSelectEnum(_))
        }),
        "UntitledMultiSelectEnumSchema" => primitive::<UntitledMultiSelectEnumSchema>(json, |p| {
            matches!(p, PrimitiveSchemaDefinition::UntitledMultiSelectEnum(_))
        }),
        "TitledMultiSelectEnumSchema" => primitive::<TitledMultiSelectEnumSchema>(json, |p| {
            matches!(p, PrimitiveSchemaDefinition::TitledMultiSelectEnum(_))
        }),
        "LegacyTitledEnumSchema" => primitive::<LegacyTitledEnumSchema>(json, |p| {
            matches!(p, PrimitiveSchemaDefinition::LegacyTitledEnum(_))
        }),

        // Plain data types.
        "ClientCapabilities" => round_trip::<ClientCapabilities>(json).map(drop),
        "ServerCapabilities" => round_trip::<ServerCapabilities>(json).map(drop),
        "Implementation" => round_trip::<Implementation>(json).map(drop),
        "Tool" => round_trip::<Tool>(json).map(drop),
        "Resource" => round_trip::<Resource>(json).map(drop),
        "ResourceTemplate" => round_trip::<ResourceTemplate>(json).map(drop),
        "Prompt" => round_trip::<Prompt>(json).map(drop),
        "Root" => round_trip::<Root>(json).map(drop),
        "ModelPreferences" => round_trip::<ModelPreferences>(json).map(drop),
        "SamplingMessage" => round_trip::<SamplingMessage>(json).map(drop),
        "InputRequests" => round_trip::<InputRequests>(json).map(drop),
        "InputResponses" => round_trip::<InputResponses>(json).map(drop),

        // Params.
        "CallToolRequestParams" => round_trip::<CallToolRequestParams>(json).map(drop),
        "CancelledNotificationParams" => round_trip::<CancelledNotificationParams>(json).map(drop),
        "CompleteRequestParams" => round_trip::<CompleteRequestParams>(json).map(drop),
        "CreateMessageRequestParams" => round_trip::<CreateMessageRequestParams>(json).map(drop),
        "ElicitRequestFormParams" => {
            round_trip::<ElicitRequestFormParams>(json)?;
            round_trip_with::<ElicitRequestParams>(json, |p| {
                matches!(p, ElicitRequestParams::Form(_))
            })
        }
        "ElicitRequestURLParams" => {
            round_trip::<ElicitRequestURLParams>(json)?;
            round_trip_with::<ElicitRequestParams>(json, |p| {
                matches!(p, ElicitRequestParams::Url(_))
            })
        }
        "GetPromptRequestParams" => round_trip::<GetPromptRequestParams>(json).map(drop),
        "LoggingMessageNotificationParams" => {
            round_trip::<LoggingMessageNotificationParams>(json).map(drop)
        }
        "PaginatedRequestParams" => round_trip::<PaginatedRequestParams>(json).map(drop),
        "ProgressNotificationParams" => round_trip::<ProgressNotificationParams>(json).map(drop),
        "ReadResourceRequestParams" => round_trip::<ReadResourceRequestParams>(json).map(drop),
        "ResourceUpdatedNotificationParams" => {
            round_trip::<ResourceUpdatedNotificationParams>(json).map(drop)
        }
        "SubscriptionsListenRequestParams" => {
            round_trip::<SubscriptionsListenRequestParams>(json).map(drop)
        }

        // Results.
        "CallToolResult" => round_trip::<CallToolResult>(json).map(drop),
        "CompleteResult" => round_trip::<CompleteResult>(json).map(drop),
        "CreateMessageResult" => round_trip::<CreateMessageResult>(json).map(drop),
        "DiscoverResult" => round_trip::<DiscoverResult>(json).map(drop),
        "ElicitResult" => round_trip::<ElicitResult>(json).map(drop),
        "GetPromptResult" => round_trip::<GetPromptResult>(json).map(drop),
        "InputRequiredResult" => round_trip::<InputRequiredResult>(json).map(drop),
        "ListPromptsResult" => round_trip::<ListPromptsResult>(json).map(drop),
        "ListResourceTemplatesResult" => round_trip::<ListResourceTemplatesResult>(json).map(drop),
        "ListResourcesResult" => round_trip::<ListResourcesResult>(json).map(drop),
        "ListRootsResult" => round_trip::<ListRootsResult>(json).map(drop),
        "ListToolsResult" => round_trip::<ListToolsResult>(json).map(drop),
        "ReadResourceResult" => round_trip::<ReadResourceResult>(json).map(drop),
        "SubscriptionsListenResult" => round_trip::<SubscriptionsListenResult>(json).map(drop),

        // Requests.
        "CallToolRequest" => request::<CallToolRequestParams>(json, TOOLS_CALL),
        "CompleteRequest" => request::<CompleteRequestParams>(json, COMPLETION_COMPLETE),
        "DiscoverRequest" => request::<RequestParams>(json, SERVER_DISCOVER),
        "GetPromptRequest" => request::<GetPromptRequestParams>(json, PROMPTS_GET),
        "ListPromptsRequest" => request::<PaginatedRequestParams>(json, PROMPTS_LIST),
        "ListResourceTemplatesRequest" => {
            request::<PaginatedRequestParams>(json, RESOURCES_TEMPLATES_LIST)
        }
        "ListResourcesRequest" => request::<PaginatedRequestParams>(json, RESOURCES_LIST),
        "ListToolsRequest" => request::<PaginatedRequestParams>(json, TOOLS_LIST),
        "ReadResourceRequest" => request::<ReadResourceRequestParams>(json, RESOURCES_READ),
        "SubscriptionsListenRequest" => {
            request::<SubscriptionsListenRequestParams>(json, SUBSCRIPTIONS_LISTEN)
        }
        // Requests the server embeds in `input_required` results.
        "CreateMessageRequest" => round_trip_with::<LooseInputRequest>(json, |r| {
            matches!(r.request, InputRequest::CreateMessage(_))
        }),
        "ElicitRequest" => round_trip_with::<LooseInputRequest>(json, |r| {
            matches!(r.request, InputRequest::Elicit(_))
        }),
        "ListRootsRequest" => round_trip_with::<LooseInputRequest>(json, |r| {
            matches!(r.request, InputRequest::ListRoots(_))
        }),

        // Notifications.
        "CancelledNotification" => {
            notification::<CancelledNotificationParams>(json, NOTIFICATION_CANCELLED)
        }
        "LoggingMessageNotification" => {
            notification::<LoggingMessageNotificationParams>(json, NOTIFICATION_MESSAGE)
        }
        "ProgressNotification" => {
            notification::<ProgressNotificationParams>(json, NOTIFICATION_PROGRESS)
        }
        "PromptListChangedNotification" => {
            notification::<NotificationParams>(json, NOTIFICATION_PROMPTS_LIST_CHANGED)
        }
        "ResourceListChangedNotification" => {
            notification::<NotificationParams>(json, NOTIFICATION_RESOURCES_LIST_CHANGED)
        }
        "ToolListChangedNotification" => {
            notification::<NotificationParams>(json, NOTIFICATION_TOOLS_LIST_CHANGED)
        }
        "ResourceUpdatedNotification" => {
            notification::<ResourceUpdatedNotificationParams>(json, NOTIFICATION_RESOURCES_UPDATED)
        }
        "SubscriptionsAcknowledgedNotification" => notification::<
            SubscriptionsAcknowledgedNotificationParams,
        >(
            json, NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED
        ),

        // Responses.
        "CallToolResultResponse" => {
            round_trip::<JsonRpcResultResponse<MaybeInputRequired<CallToolResult>>>(json).map(drop)
        }
        "CompleteResultResponse" => {
            round_trip::<JsonRpcResultResponse<CompleteResult>>(json).map(drop)
        }
        "DiscoverResultResponse" => {
            round_trip::<JsonRpcResultResponse<DiscoverResult>>(json).map(drop)
        }
        "GetPromptResultResponse" => {
            round_trip::<JsonRpcResultResponse<MaybeInputRequired<GetPromptResult>>>(json).map(drop)
        }
        "ListPromptsResultResponse" => {
            round_trip::<JsonRpcResultResponse<ListPromptsResult>>(json).map(drop)
        }
        "ListResourceTemplatesResultResponse" => {
            round_trip::<JsonRpcResultResponse<ListResourceTemplatesResult>>(json).map(drop)
        }
        "ListResourcesResultResponse" => {
            round_trip::<JsonRpcResultResponse<ListResourcesResult>>(json).map(drop)
        }
        "ListToolsResultResponse" => {
            round_trip::<JsonRpcResultResponse<ListToolsResult>>(json).map(drop)
        }
        "ReadResourceResultResponse" => {
            round_trip::<JsonRpcResultResponse<MaybeInputRequired<ReadResourceResult>>>(json)
                .map(drop)
        }
        "SubscriptionsListenResultResponse" => {
            round_trip::<JsonRpcResultResponse<SubscriptionsListenResult>>(json).map(drop)
        }

        // Errors.
        "HeaderMismatchError" => error_response::<Value>(json, error_codes::HEADER_MISMATCH),
        "UnsupportedProtocolVersionError" => error_response::<UnsupportedProtocolVersionData>(
            json,
            error_codes::UNSUPPORTED_PROTOCOL_VERSION,
        ),
        "MissingRequiredClientCapabilityError" => {
            error_response::<MissingRequiredClientCapabilityData>(
                json,
                error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
            )
        }
        "ParseError" => error_object(json, error_codes::PARSE_ERROR),
        "InvalidRequestError" => error_object(json, error_codes::INVALID_REQUEST),
        "MethodNotFoundError" => error_object(json, error_codes::METHOD_NOT_FOUND),
        "InvalidParamsError" => error_object(json, error_codes::INVALID_PARAMS),
        "InternalError" => error_object(json, error_codes::INTERNAL_ERROR),

        other => Err(format!(
            "no Rust type is mapped to the example folder {other:?}: add it to check_example"
        )),
    }
}

/// A form field: as its own struct, and as the right variant of the union.
fn primitive<T: Serialize + DeserializeOwned + Debug>(
    json: &Value,
    check: impl FnOnce(&PrimitiveSchemaDefinition) -> bool,
) -> Result<(), String> {
    round_trip::<T>(json)?;
    round_trip_with::<PrimitiveSchemaDefinition>(json, check)
}

#[test]
fn every_example_round_trips_and_validates() {
    let spec = spec_dir();
    let validator = SchemaValidator::load(&spec, ProtocolVersion::V2026_07_28)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut folders: Vec<_> = std::fs::read_dir(spec.join("2026-07-28/examples"))
        .expect("examples folder")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    assert!(!folders.is_empty(), "no example folders");

    let mut failures = Vec::new();
    let mut checked = 0;
    for folder in folders {
        let ty = folder.file_name().unwrap().to_string_lossy().into_owned();
        let mut files: Vec<_> = std::fs::read_dir(&folder)
            .expect("example folder")
            .map(|e| e.expect("dir entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        if files.is_empty() {
            failures.push(format!("{ty}: no examples"));
        }
        for file in files {
            let name = format!("{ty}/{}", file.file_name().unwrap().to_string_lossy());
            let text = std::fs::read_to_string(&file).expect("example text");
            let json: Value = match serde_json::from_str(&text) {
                Ok(json) => json,
                Err(e) => {
                    failures.push(format!("{name}: not JSON: {e}"));
                    continue;
                }
            };
            if let Err(e) = validator.validate_def(&ty, &json) {
                failures.push(format!("{name}: schema: {e}"));
            }
            if let Err(e) = check_example(&ty, &json) {
                failures.push(format!("{name}: {e}"));
            }
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} examples failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_harness_rejects_what_it_should() {
    let validator = SchemaValidator::load(&spec_dir(), ProtocolVersion::V2026_07_28)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        validator
            .validate_def("Tool", &serde_json::json!({"name": 3}))
            .is_err()
    );
    // A member we do not model is lost on the way back.
    let extra = serde_json::json!({"name": "x", "inputSchema": {"type": "object"}, "bogus": 1});
    assert!(check_example("Tool", &extra).is_err());
    // A folder without a mapping fails.
    assert!(check_example("SomeNewType", &serde_json::json!({})).is_err());
    // The wrong variant fails.
    let text = serde_json::json!({"type": "text", "text": "hi"});
    assert!(check_example("ImageContent", &text).is_err());
}
