//! Resources: fixed ones (text or binary, or computed on each read) and
//! resource templates whose URIs are matched per RFC 6570.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;

use mcp_core::BoxFuture;
use mcp_schema::{Resource, ResourceContents, ResourceTemplate};
use uri_template_ex::UriTemplate;

use crate::completion::Completer;
use crate::context::{Context, HandlerError};

type ReadFn = dyn Fn(
        String,
        BTreeMap<String, String>,
        Context,
    ) -> BoxFuture<'static, Result<Vec<ResourceContents>, HandlerError>>
    + Send
    + Sync;

fn reader<F, Fut>(read: F) -> Arc<ReadFn>
where
    F: Fn(String, BTreeMap<String, String>, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ResourceContents>, HandlerError>> + Send + 'static,
{
    Arc::new(move |uri, vars, ctx| Box::pin(read(uri, vars, ctx)))
}

/// A resource with a fixed URI.
#[derive(Clone)]
pub struct ResourceDef {
    pub(crate) resource: Resource,
    pub(crate) read: Arc<ReadFn>,
}

impl std::fmt::Debug for ResourceDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceDef")
            .field("resource", &self.resource)
            .finish()
    }
}

impl ResourceDef {
    /// A text resource whose content never changes.
    pub fn text(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: &str,
        text: impl Into<String>,
    ) -> Self {
        let mut resource = Resource::new(uri, name);
        resource.mime_type = Some(mime_type.to_owned());
        let contents =
            ResourceContents::text(resource.uri.clone(), Some(mime_type.to_owned()), text);
        Self::fixed(resource, contents)
    }

    /// A binary resource whose content (base64) never changes.
    pub fn blob(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: &str,
        base64: impl Into<String>,
    ) -> Self {
        let mut resource = Resource::new(uri, name);
        resource.mime_type = Some(mime_type.to_owned());
        let contents =
            ResourceContents::blob(resource.uri.clone(), Some(mime_type.to_owned()), base64);
        Self::fixed(resource, contents)
    }

    fn fixed(resource: Resource, contents: ResourceContents) -> Self {
        let contents = Arc::new(contents);
        ResourceDef {
            resource,
            read: reader(move |_, _, _| {
                let contents = Arc::clone(&contents);
                async move { Ok(vec![(*contents).clone()]) }
            }),
        }
    }

    /// A resource read by `read` each time (its contents may change).
    pub fn dynamic<F, Fut>(resource: Resource, read: F) -> Self
    where
        F: Fn(Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, HandlerError>> + Send + 'static,
    {
        let read = Arc::new(read);
        ResourceDef {
            resource,
            read: reader(move |_, _, ctx| {
                let read = Arc::clone(&read);
                async move { read(ctx).await }
            }),
        }
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.resource.description = Some(description.into());
        self
    }

    /// The resource as listed.
    pub fn resource(&self) -> &Resource {
        &self.resource
    }
}

/// A family of resources named by a URI template such as
/// `file:///{path}`; reading a matching URI calls the reader with the
/// template's variables.
#[derive(Clone)]
pub struct TemplateDef {
    pub(crate) template: ResourceTemplate,
    matcher: Arc<UriTemplate>,
    pub(crate) read: Arc<ReadFn>,
    pub(crate) completers: HashMap<String, Completer>,
}

impl std::fmt::Debug for TemplateDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateDef")
            .field("template", &self.template)
            .finish()
    }
}

impl TemplateDef {
    /// A template read by `read(uri, variables, ctx)`. Fails when the
    /// template is not valid RFC 6570.
    pub fn new<F, Fut>(uri_template: &str, name: impl Into<String>, read: F) -> Result<Self, String>
    where
        F: Fn(String, BTreeMap<String, String>, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, HandlerError>> + Send + 'static,
    {
        let matcher = UriTemplate::new(uri_template).map_err(|e| format!("{uri_template}: {e}"))?;
        Ok(TemplateDef {
            template: ResourceTemplate::new(uri_template, name),
            matcher: Arc::new(matcher),
            read: reader(read),
            completers: HashMap::new(),
        })
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.template.description = Some(description.into());
        self
    }

    /// Sets the MIME type of every resource of the family.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.template.mime_type = Some(mime_type.into());
        self
    }

    /// Offers completions for variable `name`.
    pub fn complete(mut self, name: impl Into<String>, completer: Completer) -> Self {
        self.completers.insert(name.into(), completer);
        self
    }

    /// The template as listed.
    pub fn template(&self) -> &ResourceTemplate {
        &self.template
    }

    /// The variables of `uri` if it belongs to this family. Every variable
    /// must be non-empty.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let captures = self.matcher.captures(uri)?;
        let mut vars = BTreeMap::new();
        for (name, found) in captures.iter() {
            let value = found?.value().ok()?;
            if value.is_empty() {
                return None;
            }
            vars.insert(name.to_owned(), value.into_owned());
        }
        Some(vars)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_matching_extracts_decoded_variables() {
        let t = TemplateDef::new("test://template/{id}/data", "t", |_, _, _| async {
            Ok(vec![])
        })
        .unwrap();
        assert_eq!(t.matches("test://template/123/data").unwrap()["id"], "123");
        assert_eq!(
            t.matches("test://template/a%20b/data").unwrap()["id"],
            "a b"
        );
        assert!(t.matches("test://template//data").is_none());
        assert!(t.matches("test://template/1/2/data").is_none());
        assert!(t.matches("other://template/1/data").is_none());
        let files =
            TemplateDef::new("file:///{+path}", "f", |_, _, _| async { Ok(vec![]) }).unwrap();
        assert_eq!(
            files.matches("file:///a/b/c.txt").unwrap()["path"],
            "a/b/c.txt"
        );
    }
}
