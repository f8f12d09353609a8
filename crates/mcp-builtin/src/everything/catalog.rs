//! The server's prompts, its watched resource and its resource template.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_schema::{ContentBlock, GetPromptResult, PromptMessage, Resource, ResourceContents};
use mcp_server::{Context, PromptDef, ResourceDef, TemplateDef, completion};
use serde_json::json;

use super::support::{PNG_BASE64, accepted, form};

pub(super) fn prompts() -> Vec<PromptDef> {
    vec![
        PromptDef::new(
            "test_simple_prompt",
            "A prompt without arguments",
            |_, _| async {
                Ok(GetPromptResult::new(vec![PromptMessage::user_text(
                    "This is a simple prompt for testing.",
                )]))
            },
        ),
        PromptDef::new(
            "test_prompt_with_arguments",
            "A prompt with two arguments",
            |args, _| async move {
                let arg = |k: &str| args.get(k).cloned().unwrap_or_default();
                Ok(GetPromptResult::new(vec![PromptMessage::user_text(
                    format!(
                        "Prompt with arguments: arg1='{}', arg2='{}'",
                        arg("arg1"),
                        arg("arg2")
                    ),
                )]))
            },
        )
        .argument("arg1", "First test argument", true)
        .argument("arg2", "Second test argument", true)
        .complete(
            "arg1",
            completion::from_values(["test", "testing", "tested", "value1"]),
        )
        .complete("arg2", completion::from_values(["test", "value2"])),
        PromptDef::new(
            "test_prompt_with_embedded_resource",
            "A prompt embedding a resource",
            |args, _| async move {
                let uri = args.get("resourceUri").cloned().unwrap_or_default();
                let resource = ResourceContents::text(
                    uri,
                    Some("text/plain".into()),
                    "Embedded resource content for testing.",
                );
                Ok(GetPromptResult::new(vec![
                    PromptMessage::new(mcp_schema::Role::User, ContentBlock::embedded(resource)),
                    PromptMessage::user_text("Please process the embedded resource above."),
                ]))
            },
        )
        .argument("resourceUri", "URI of the resource to embed", true),
        PromptDef::new(
            "test_prompt_with_image",
            "A prompt with an image",
            |_, _| async {
                Ok(GetPromptResult::new(vec![
                    PromptMessage::new(
                        mcp_schema::Role::User,
                        ContentBlock::image(PNG_BASE64, "image/png"),
                    ),
                    PromptMessage::user_text("Please analyze the image above."),
                ]))
            },
        ),
        PromptDef::new(
            "test_input_required_result_prompt",
            "A prompt that first asks for context",
            |_, ctx: Context| async move {
                let schema = json!({"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]});
                let answer = ctx
                    .elicit(
                        "user_context",
                        form("What context should the prompt use?", schema),
                    )
                    .await?;
                let context = accepted(&answer, "context").unwrap_or_default();
                Ok(GetPromptResult::new(vec![PromptMessage::user_text(
                    format!("Use this context: {context}"),
                )]))
            },
        ),
    ]
}

pub(super) fn watched_resource(version: Arc<AtomicU64>) -> ResourceDef {
    let mut resource = Resource::new("test://watched-resource", "Watched Resource");
    resource.mime_type = Some("text/plain".into());
    resource.description =
        Some("Changes when update_watched_resource is called; subscribe to hear of it".into());
    ResourceDef::dynamic(resource, move |_| {
        let version = version.load(Ordering::Relaxed);
        async move {
            let text = if version == 0 {
                "Watched resource content".to_owned()
            } else {
                format!("Watched resource content, version {version}")
            };
            Ok(vec![ResourceContents::text(
                "test://watched-resource",
                Some("text/plain".into()),
                text,
            )])
        }
    })
}

pub(super) fn data_template() -> TemplateDef {
    TemplateDef::new(
        "test://template/{id}/data",
        "Resource Template",
        |uri, vars: BTreeMap<String, String>, _| async move {
            let id = vars.get("id").cloned().unwrap_or_default();
            let body =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Ok(vec![ResourceContents::text(
                uri,
                Some("application/json".into()),
                body.to_string(),
            )])
        },
    )
    .unwrap_or_else(|e| panic!("fixture template is valid: {e}"))
    .description("A resource template with parameter substitution")
    .mime_type("application/json")
    .complete("id", completion::from_values(["1", "2", "3", "123"]))
}
