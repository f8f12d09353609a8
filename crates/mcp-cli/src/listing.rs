//! What a server offers, told for people: its resources, resource
//! templates and prompts as tables, its identity and capabilities as
//! lines, a prompt's messages and a resource's contents as text.

use mcp_schema::{
    ContentBlock, GetPromptResult, Implementation, Prompt, Resource, ResourceContents,
    ResourceTemplate,
};
use serde_json::Value;

use crate::tool_table::{first_line, table};

/// The table of `resources`: URI, name, MIME type, description.
pub fn resource_table(resources: &[Resource], width: Option<u16>) -> String {
    let rows = resources.iter().map(|r| {
        vec![
            r.uri.clone(),
            r.name.clone(),
            r.mime_type.clone().unwrap_or_default(),
            first_line(r.description.as_deref().or(r.title.as_deref())).to_owned(),
        ]
    });
    table(&["URI", "NAME", "MIME TYPE", "DESCRIPTION"], rows, width)
}

/// The table of `templates`: URI template, name, MIME type, description.
pub fn template_table(templates: &[ResourceTemplate], width: Option<u16>) -> String {
    let rows = templates.iter().map(|t| {
        vec![
            t.uri_template.clone(),
            t.name.clone(),
            t.mime_type.clone().unwrap_or_default(),
            first_line(t.description.as_deref().or(t.title.as_deref())).to_owned(),
        ]
    });
    table(
        &["URI TEMPLATE", "NAME", "MIME TYPE", "DESCRIPTION"],
        rows,
        width,
    )
}

/// The table of `prompts`: name, arguments (required ones marked `*`),
/// description.
pub fn prompt_table(prompts: &[Prompt], width: Option<u16>) -> String {
    let rows = prompts.iter().map(|p| {
        let arguments: Vec<String> = p
            .arguments
            .iter()
            .flatten()
            .map(|a| match a.required {
                Some(true) => format!("{}*", a.name),
                _ => a.name.clone(),
            })
            .collect();
        vec![
            p.name.clone(),
            arguments.join(" "),
            first_line(p.description.as_deref().or(p.title.as_deref())).to_owned(),
        ]
    });
    table(&["NAME", "ARGUMENTS", "DESCRIPTION"], rows, width)
}

/// A server's identity, protocol and capabilities as `Label: value`
/// lines, its instructions last.
pub fn info_text(
    server: Option<&Implementation>,
    revision: &str,
    era: &str,
    capabilities: &Value,
    instructions: Option<&str>,
) -> String {
    let mut lines: Vec<(&str, String)> = Vec::new();
    match server {
        Some(server) => {
            lines.push(("Server", format!("{} {}", server.name, server.version)));
            if let Some(title) = &server.title {
                lines.push(("Title", title.clone()));
            }
            if let Some(description) = &server.description {
                lines.push(("Description", description.clone()));
            }
            if let Some(website) = &server.website_url {
                lines.push(("Website", website.clone()));
            }
        }
        None => lines.push(("Server", "(it did not say)".to_owned())),
    }
    lines.push(("Era", era.to_owned()));
    lines.push(("Revision", revision.to_owned()));
    lines.push(("Capabilities", capability_list(capabilities)));
    let mut text = String::new();
    for (label, value) in lines {
        text.push_str(&format!("{:<14}{value}\n", format!("{label}:")));
    }
    if let Some(instructions) = instructions {
        text.push_str("Instructions:\n");
        for line in instructions.lines() {
            text.push_str(&format!("  {line}\n"));
        }
    }
    text
}

/// The capabilities as `name (flag, flag)`, separated by commas: a
/// capability's flags are its members that are not `false`.
fn capability_list(capabilities: &Value) -> String {
    let Some(capabilities) = capabilities.as_object().filter(|c| !c.is_empty()) else {
        return "none".to_owned();
    };
    let named: Vec<String> = capabilities
        .iter()
        .map(|(name, value)| {
            let flags: Vec<&str> = value
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, v)| **v != Value::Bool(false))
                .map(|(flag, _)| flag.as_str())
                .collect();
            if flags.is_empty() {
                name.clone()
            } else {
                format!("{name} ({})", flags.join(", "))
            }
        })
        .collect();
    named.join(", ")
}

/// A prompt's messages for people: each as `[role]` over its content,
/// the description first when there is one.
pub fn prompt_text(result: &GetPromptResult) -> String {
    let mut text = String::new();
    if let Some(description) = &result.description {
        text.push_str(&format!("{description}\n\n"));
    }
    let messages: Vec<String> = result
        .messages
        .iter()
        .map(|m| {
            let role = serde_json::to_value(m.role).unwrap_or_default();
            let role = role.as_str().unwrap_or("?");
            format!("[{role}]\n{}\n", content_text(&m.content))
        })
        .collect();
    text.push_str(&messages.join("\n"));
    text
}

/// One content block as text: text as it is, media as their type and
/// size, resources by URI (embedded text included).
pub fn content_text(content: &ContentBlock) -> String {
    match content {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => media("image", &image.mime_type, &image.data),
        ContentBlock::Audio(audio) => media("audio", &audio.mime_type, &audio.data),
        ContentBlock::ResourceLink(link) => format!("(a link to resource {})", link.uri),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::Text(contents) => {
                format!("(resource {})\n{}", contents.uri, contents.text)
            }
            ResourceContents::Blob(blob) => format!(
                "(resource {}: {})",
                blob.uri,
                binary(blob.mime_type.as_deref(), &blob.blob)
            ),
        },
    }
}

/// `(image, image/png, 95 bytes)`.
fn media(kind: &str, mime_type: &str, data: &str) -> String {
    format!("({kind}: {})", binary(Some(mime_type), data))
}

/// What binary data is: its MIME type and its size once decoded.
pub fn binary(mime_type: Option<&str>, base64: &str) -> String {
    let size = match decode(base64) {
        Some(bytes) => format!("{} bytes", bytes.len()),
        None => "not valid base64".to_owned(),
    };
    format!(
        "{}, {size}",
        mime_type.unwrap_or("binary data of no stated type")
    )
}

/// The bytes of base64 text (standard alphabet, padding optional).
pub fn decode(base64: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let text: String = base64.chars().filter(|c| !c.is_whitespace()).collect();
    engine.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tables_line_up() {
        let resources: Vec<Resource> = serde_json::from_value(json!([
            {"uri": "test://a", "name": "a", "mimeType": "text/plain", "description": "An A\nmore"},
            {"uri": "test://longer", "name": "b"}
        ]))
        .unwrap();
        assert_eq!(
            resource_table(&resources, None),
            "URI            NAME  MIME TYPE   DESCRIPTION\n\
             test://a       a     text/plain  An A\n\
             test://longer  b\n"
        );
        let prompts: Vec<Prompt> = serde_json::from_value(json!([
            {"name": "p", "arguments": [{"name": "x", "required": true}, {"name": "y"}]}
        ]))
        .unwrap();
        assert_eq!(
            prompt_table(&prompts, None),
            "NAME  ARGUMENTS  DESCRIPTION\np     x* y\n"
        );
    }

    #[test]
    fn capabilities_and_binary_read_well() {
        let capabilities = json!({"tools": {"listChanged": true}, "logging": {},
                                  "resources": {"subscribe": true, "listChanged": false}});
        assert_eq!(
            capability_list(&capabilities),
            "logging, resources (subscribe), tools (listChanged)"
        );
        assert_eq!(capability_list(&json!({})), "none");
        assert_eq!(binary(Some("image/png"), "AAEC"), "image/png, 3 bytes");
        assert_eq!(decode("AAE"), Some(vec![0, 1]));
        assert_eq!(
            binary(None, "!!"),
            "binary data of no stated type, not valid base64"
        );
    }
}
