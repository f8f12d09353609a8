//! GET operations as `api://` resources: one without required parameters
//! is the resource `api://{path}` (`api:///store/inventory`); one whose
//! only required parameters are in the path is the template of the same
//! form (`api:///pet/{petId}`, RFC 6570). Reading one performs the GET
//! and gives the body with its MIME type.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mcp_schema::{ErrorObject, Resource, ResourceContents};
use mcp_server::{Context, HandlerError, ResourceDef, TemplateDef};
use reqwest::{Method, StatusCode};
use serde_json::{Map, Value};

use super::http::Api;
use super::operations::{Location, Operation};
use super::request;
use super::tools::{essence, is_textual, truncation_notice, whole_chars};

/// A resource or a template for `operation`, if it is a GET that needs no
/// argument beyond its path.
pub enum Exposed {
    /// A fixed resource.
    Resource(ResourceDef),
    /// A template.
    Template(TemplateDef),
}

/// The URI (or URI template) of a path.
pub fn uri(path: &str) -> String {
    format!("api://{path}")
}

/// What `operation` is exposed as, if anything.
pub fn expose(api: &Arc<Api>, operation: &Operation) -> Option<Exposed> {
    if operation.method != Method::GET {
        return None;
    }
    let path_arguments: Vec<&str> = operation
        .params
        .iter()
        .filter(|p| p.location == Location::Path)
        .map(|p| p.argument.as_str())
        .collect();
    if operation
        .required
        .iter()
        .any(|r| !path_arguments.contains(&r.as_str()))
    {
        return None;
    }
    // The template's variables are the path's parameter names; each must
    // be an RFC 6570 variable name.
    let plain = |name: &str| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    };
    if operation
        .params
        .iter()
        .any(|p| p.location == Location::Path && (!plain(&p.name) || p.argument != p.name))
    {
        return None;
    }
    let uri = uri(&operation.path);
    let description = operation.tool_description();
    let mime = operation.response_type.clone();
    let read_op = Arc::new(operation.clone());
    let api = Arc::clone(api);
    if path_arguments.is_empty() {
        let mut resource = Resource::new(uri.clone(), operation.name.clone());
        resource.title = operation.summary.clone();
        resource.description = Some(description);
        resource.mime_type = mime;
        let def = ResourceDef::dynamic(resource, move |ctx| {
            let api = Arc::clone(&api);
            let operation = Arc::clone(&read_op);
            let uri = uri.clone();
            async move { read(&api, &operation, uri, BTreeMap::new(), &ctx).await }
        });
        return Some(Exposed::Resource(def));
    }
    let template = TemplateDef::new(&uri, operation.name.clone(), move |uri, vars, ctx| {
        let api = Arc::clone(&api);
        let operation = Arc::clone(&read_op);
        async move { read(&api, &operation, uri, vars, &ctx).await }
    });
    let mut template = match template {
        Ok(template) => template.description(description),
        Err(e) => {
            tracing::debug!(path = operation.path, "no resource template: {e}");
            return None;
        }
    };
    if let Some(mime) = mime {
        template = template.mime_type(mime);
    }
    Some(Exposed::Template(template))
}

async fn read(
    api: &Api,
    operation: &Operation,
    uri: String,
    vars: BTreeMap<String, String>,
    ctx: &Context,
) -> Result<Vec<ResourceContents>, HandlerError> {
    let args: Map<String, Value> = vars
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let request = request::build(operation, &api.base, &args).map_err(HandlerError::failed)?;
    let response = api
        .send(request)
        .await
        .map_err(|e| HandlerError::failed(api.redact(&e.to_string())))?;
    let status = response.status;
    if status == StatusCode::NOT_FOUND || status == StatusCode::GONE {
        return Err(HandlerError::Protocol(
            ErrorObject::new(
                ctx.revision().resource_not_found_code(),
                format!("{uri}: HTTP {status}"),
            )
            .with_data(serde_json::json!({ "uri": uri })),
        ));
    }
    if !status.is_success() {
        let body = whole_chars(&response.body);
        return Err(HandlerError::failed(format!(
            "{uri}: HTTP {status}: {body}"
        )));
    }
    let mime = essence(response.content_type.as_deref());
    let mut contents = vec![if is_textual(mime.as_deref(), &response.body) {
        ResourceContents::text(
            uri.clone(),
            mime.clone(),
            whole_chars(&response.body).to_owned(),
        )
    } else {
        ResourceContents::blob(uri.clone(), mime.clone(), STANDARD.encode(&response.body))
    }];
    if let Some(notice) = truncation_notice(&response, api.max_response_bytes) {
        contents.push(ResourceContents::text(
            uri,
            Some("text/plain".into()),
            notice,
        ));
    }
    Ok(contents)
}
