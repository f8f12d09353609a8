//! OAuth 2.0 Protected Resource Metadata (RFC 9728), served at the
//! well-known paths.

use std::sync::Arc;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::{Deserialize, Serialize};

use super::config::ResourceServerConfig;

/// The metadata document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProtectedResourceMetadata {
    /// The canonical resource URI.
    pub resource: String,
    /// Issuer URLs of the authorization servers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authorization_servers: Vec<String>,
    /// Scopes the resource understands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes_supported: Vec<String>,
    /// How tokens may be sent: only `header`.
    #[serde(default)]
    pub bearer_methods_supported: Vec<String>,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
}

impl ProtectedResourceMetadata {
    /// The document for `config`.
    pub fn from_config(config: &ResourceServerConfig) -> Self {
        ProtectedResourceMetadata {
            resource: config.resource.clone(),
            authorization_servers: config.authorization_servers.clone(),
            scopes_supported: config.scopes_supported.clone(),
            bearer_methods_supported: vec!["header".to_owned()],
            resource_name: config.resource_name.clone(),
        }
    }
}

/// Routes serving the metadata document at
/// `/.well-known/oauth-protected-resource` with the resource's path
/// appended, and at the root form, and each other endpoint's document at
/// the well-known path with its path appended; merge them beside the
/// (protected) MCP router, outside the bearer layer.
pub fn protected_resource_router(config: &ResourceServerConfig) -> axum::Router {
    let document = ProtectedResourceMetadata::from_config(config);
    let mut router = axum::Router::new();
    let mut served = Vec::new();
    for path in config.metadata_paths() {
        router = serve_document(router, &path, &document);
        served.push(path);
    }
    for (resource, (_, url)) in config.endpoints.iter().zip(config.endpoint_metadata_urls()) {
        let Some(path) = url::Url::parse(&url).ok().map(|u| u.path().to_owned()) else {
            continue;
        };
        if served.contains(&path) {
            continue;
        }
        let document = ProtectedResourceMetadata {
            resource: resource.clone(),
            ..document.clone()
        };
        router = serve_document(router, &path, &document);
        served.push(path);
    }
    router
}

/// `router` with `document` served at `path`.
fn serve_document(
    router: axum::Router,
    path: &str,
    document: &ProtectedResourceMetadata,
) -> axum::Router {
    let body: Arc<str> = serde_json::to_string(document)
        .unwrap_or_else(|_| "{}".to_owned())
        .into();
    router.route(
        path,
        get(move || {
            let body = Arc::clone(&body);
            async move { metadata_response(&body) }
        }),
    )
}

fn metadata_response(body: &str) -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("max-age=3600"),
            ),
            (
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            ),
        ],
        body.to_owned(),
    )
        .into_response()
}
