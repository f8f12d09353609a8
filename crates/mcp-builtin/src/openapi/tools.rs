//! One tool per operation, and an HTTP response as a tool result.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mcp_schema::{CallToolResult, ContentBlock, ResourceContents, Tool, ToolAnnotations};
use mcp_server::{HandlerError, ToolDef};
use reqwest::Method;
use serde_json::{Value, json};

use super::http::{Api, Response};
use super::operations::Operation;
use super::request;

/// The hints an HTTP method gives: GET, HEAD and OPTIONS only read; PUT
/// and DELETE may be repeated to no further effect and destroy (replace,
/// remove); POST and PATCH may do anything. Every call reaches out to an
/// API: open world.
pub fn hints(method: &Method, title: Option<String>) -> ToolAnnotations {
    let (read_only, destructive, idempotent) = match *method {
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE => (true, Some(false), true),
        Method::PUT | Method::DELETE => (false, Some(true), true),
        _ => (false, None, false),
    };
    ToolAnnotations {
        title,
        read_only_hint: Some(read_only),
        destructive_hint: destructive,
        idempotent_hint: Some(idempotent),
        open_world_hint: Some(true),
    }
}

/// What every tool returns in `structuredContent`.
fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "status": {"type": "integer", "description": "The HTTP status code."},
            "contentType": {"type": "string", "description": "The response's Content-Type."},
            "body": {"description": "The response body: JSON as parsed, text as a string; \
                                     absent for binary bodies (given as content blocks)."},
            "size": {"type": "integer", "description": "The bytes of body kept."},
            "truncated": {"type": "boolean", "description": "Whether the body was cut at the size cap."},
            "droppedBytes": {"type": "integer", "description": "How many bytes were cut."}
        },
        "required": ["status"]
    })
}

/// The tool for `operation`.
pub fn tool(api: &Arc<Api>, operation: Operation) -> ToolDef {
    let mut tool = Tool::new(
        operation.name.clone(),
        Value::Object(operation.input_schema.clone()),
    )
    .with_description(operation.tool_description())
    .with_output_schema(output_schema());
    tool.title = operation.summary.clone();
    let annotations = hints(&operation.method, operation.summary.clone());
    let api = Arc::clone(api);
    let operation = Arc::new(operation);
    ToolDef::from_parts(tool, move |args, _ctx| {
        let api = Arc::clone(&api);
        let operation = Arc::clone(&operation);
        async move {
            let request =
                request::build(&operation, &api.base, &args).map_err(HandlerError::failed)?;
            let response = api
                .send(request)
                .await
                .map_err(|e| HandlerError::failed(api.redact(&e.to_string())))?;
            Ok(result(&api, response))
        }
    })
    .annotations(annotations)
}

/// The essence of a `Content-Type` (`application/json`), lowercased.
pub fn essence(content_type: Option<&str>) -> Option<String> {
    content_type
        .map(|c| {
            c.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|c| !c.is_empty())
}

/// Whether a body of this type is text.
pub fn is_textual(essence: Option<&str>, body: &[u8]) -> bool {
    match essence {
        None => std::str::from_utf8(body).is_ok(),
        Some(e) => {
            e.starts_with("text/")
                || e.ends_with("json")
                || e.ends_with("xml")
                || e.ends_with("yaml")
                || e == "application/javascript"
                || e == "application/x-www-form-urlencoded"
        }
    }
}

/// Whether a body of this type is JSON.
pub fn is_json(essence: Option<&str>) -> bool {
    essence.is_some_and(|e| e == "application/json" || e.ends_with("+json"))
}

/// The text of a cut body: up to the last whole character.
pub fn whole_chars(body: &[u8]) -> &str {
    match std::str::from_utf8(body) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&body[..e.valid_up_to()]).unwrap_or_default(),
    }
}

/// The notice appended to a cut body.
pub fn truncation_notice(response: &Response, cap: usize) -> Option<String> {
    let dropped = response.dropped?;
    Some(format!(
        "[response truncated at {cap} bytes: {}{} bytes dropped; raise --max-response-bytes to see more]",
        if dropped.at_least { "at least " } else { "" },
        dropped.bytes
    ))
}

/// An HTTP response as a tool result: 2xx is a result, anything else an
/// error result naming the status; JSON is structured content, text is
/// text, images and audio are their blocks, other bytes an embedded blob.
pub fn result(api: &Api, response: Response) -> CallToolResult {
    let status = response.status;
    let essence = essence(response.content_type.as_deref());
    let notice = truncation_notice(&response, api.max_response_bytes);
    let textual = is_textual(essence.as_deref(), &response.body);
    let status_line = format!(
        "HTTP {} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or_default()
    );
    if !status.is_success() {
        let mut text = status_line;
        if textual && !response.body.is_empty() {
            text.push_str(": ");
            text.push_str(whole_chars(&response.body));
        } else if !response.body.is_empty() {
            text.push_str(&format!(
                " ({} bytes of {})",
                response.body.len(),
                essence.as_deref().unwrap_or("binary data")
            ));
        }
        if let Some(notice) = notice {
            text.push('\n');
            text.push_str(&notice);
        }
        return CallToolResult::error(text);
    }
    let mut structured = json!({"status": status.as_u16()});
    if let Some(essence) = &essence {
        structured["contentType"] = json!(essence);
    }
    if let Some(dropped) = response.dropped {
        structured["truncated"] = json!(true);
        structured["droppedBytes"] = json!(dropped.bytes);
    }
    if textual {
        let text = whole_chars(&response.body);
        let parsed = (is_json(essence.as_deref()) && response.dropped.is_none())
            .then(|| serde_json::from_str::<Value>(text).ok())
            .flatten();
        let shown = match &notice {
            Some(notice) => format!("{text}\n{notice}"),
            None if text.is_empty() => status_line,
            None => text.to_owned(),
        };
        structured["body"] = parsed.unwrap_or_else(|| json!(text));
        return CallToolResult {
            content: vec![ContentBlock::text(shown)],
            structured_content: Some(structured),
            ..CallToolResult::default()
        };
    }
    structured["size"] = json!(response.body.len());
    let mime = essence.unwrap_or_else(|| "application/octet-stream".into());
    let data = STANDARD.encode(&response.body);
    let mut content = Vec::new();
    if let Some(notice) = notice {
        content.push(ContentBlock::text(format!(
            "{status_line}: {} body cut short, not shown. {notice}",
            mime
        )));
    } else if mime.starts_with("image/") {
        content.push(ContentBlock::image(data, mime));
    } else if mime.starts_with("audio/") {
        content.push(ContentBlock::audio(data, mime));
    } else {
        content.push(ContentBlock::embedded(ResourceContents::blob(
            response.url.to_string(),
            Some(mime),
            data,
        )));
    }
    CallToolResult {
        content,
        structured_content: Some(structured),
        ..CallToolResult::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_give_honest_hints() {
        let h = hints(&Method::GET, None);
        assert_eq!(
            (
                h.read_only_hint,
                h.destructive_hint,
                h.idempotent_hint,
                h.open_world_hint
            ),
            (Some(true), Some(false), Some(true), Some(true))
        );
        let h = hints(&Method::DELETE, None);
        assert_eq!(
            (h.read_only_hint, h.destructive_hint),
            (Some(false), Some(true))
        );
        let h = hints(&Method::PUT, None);
        assert_eq!(h.idempotent_hint, Some(true));
        let h = hints(&Method::POST, None);
        assert_eq!(
            (h.read_only_hint, h.idempotent_hint),
            (Some(false), Some(false))
        );
        assert_eq!(h.open_world_hint, Some(true));
    }

    #[test]
    fn a_cut_body_ends_on_a_whole_character() {
        let text = "héllo".as_bytes();
        assert_eq!(whole_chars(&text[..2]), "h");
        assert_eq!(whole_chars(text), "héllo");
    }
}
