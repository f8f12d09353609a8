//! The OpenAPI server: an HTTP API described by an OpenAPI 3.0 or 3.1
//! document (JSON or YAML, a file or an `http(s)` URL), one tool per
//! operation, and its GET operations as `api://` resources.
//!
//! # Tools
//!
//! - **Name**: the `operationId`, else the method and path
//!   (`get_pet_petId`); characters outside `[A-Za-z0-9_.-]` become `_`, at
//!   most 128 characters; a name already taken (in document order, before
//!   any filtering) gets `_2`, `_3`... **Title**: the summary.
//!   **Description**: summary, description, then `` `METHOD /path` ``.
//! - **Arguments**: each path, query, header and cookie parameter under its
//!   own name; when two parameters share a name (`id` in the path and in
//!   the query), the later in the order path, query, header, cookie is
//!   prefixed with its location (`query_id`). The request body is the
//!   argument `body` (`request_body` if a parameter is already called
//!   `body`). Required flags carry over; unknown arguments are refused.
//!   Header parameters the server sets itself (`--header`) are not
//!   arguments, nor are `Accept`, `Content-Type` and `Authorization`.
//! - **Schemas**: JSON Schema 2020-12; `#/components/schemas/X` becomes
//!   `#/$defs/X` with the referenced closure in the tool's `$defs`, so
//!   recursive schemas stay finite; OpenAPI 3.0 `nullable` becomes a
//!   `"null"` type (see the `schema` module for every rewrite).
//! - **Body encoding**: JSON when the operation accepts it, else
//!   `application/x-www-form-urlencoded`, else text (XML, plain), else bytes
//!   given as base64. Multipart bodies are not supported (such operations
//!   are left out, with a warning).
//! - **Hints**: GET, HEAD, OPTIONS read only; PUT and DELETE idempotent and
//!   destructive; every tool open-world.
//! - **Results**: `structuredContent` is `{status, contentType, body}`
//!   with a JSON body parsed and a text body as a string, and the text
//!   block holds the body; images and audio come as their content blocks,
//!   other bytes as an embedded blob. A status other than 2xx is a result
//!   with `isError: true` naming the status and holding the body. A body
//!   over the size cap (1 MiB by default) is cut, and the result says how
//!   many bytes were dropped.
//!
//! # Resources
//!
//! A GET operation without required parameters is the resource
//! `api://{path}` (`api:///store/inventory`); one whose only required
//! parameters are in its path is a template of the same form
//! (`api:///pet/{petId}`). Reading performs the GET.
//!
//! # Outbound requests
//!
//! The base URL is `--base-url`, else the document's first server (its
//! variables at their defaults; a relative one is resolved against the
//! document's URL, and needs `--base-url` when the document is a file).
//! The operator's headers ([`Config::header`], with `${VAR}` read from the
//! environment by [`parse_header`]) go with every request to the API's
//! origin, never to another origin a redirect points at, and are never
//! shown: not in schemas, descriptions, results or errors (a response that
//! echoes one gets it blanked out). Requests go through no proxy, within
//! a time limit. Unless [`Config::allow_private_network`], loopback,
//! private, link-local (the cloud metadata address), unspecified and CGNAT
//! addresses are refused: literal hosts before sending, every address a
//! name resolves to, and each redirect hop (at most 5).
//!
//! ```no_run
//! # async fn run() -> Result<(), mcp_builtin::openapi::Error> {
//! let (name, value) = mcp_builtin::openapi::parse_header("Authorization: Bearer ${API_TOKEN}")?;
//! let config = mcp_builtin::openapi::Config::new("petstore.yaml")
//!     .base_url("https://petstore3.swagger.io/api/v3")
//!     .header(name, value)
//!     .include_tag("pet");
//! let server = mcp_builtin::openapi::server(config).await?;
//! server.serve_stdio().await;
//! # Ok(()) }
//! ```

mod document;
mod guard;
mod http;
mod naming;
mod operations;
mod request;
mod resources;
mod schema;
mod tools;

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mcp_server::Server;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use url::Url;

pub use guard::forbidden_kind;

use document::Document;
use guard::{Guard, without_credentials};

/// The largest document fetched from a URL.
const MAX_DOCUMENT_BYTES: usize = 32 << 20;

/// The most redirects followed to the document.
const MAX_DOCUMENT_REDIRECTS: usize = 5;

/// Where the document comes from.
#[derive(Debug, Clone)]
enum Source {
    File(PathBuf),
    Url(String),
    Text(String),
}

/// Which operations become tools: by tag and by operation id (or tool
/// name). With no include rule every operation is kept; with some, those
/// matching any of them. Exclusions win.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Filter {
    /// Keep operations with one of these tags.
    pub include_tags: Vec<String>,
    /// Drop operations with one of these tags.
    pub exclude_tags: Vec<String>,
    /// Keep these operations.
    pub include_ops: Vec<String>,
    /// Drop these operations.
    pub exclude_ops: Vec<String>,
}

/// How the OpenAPI server is set up.
#[derive(Clone)]
pub struct Config {
    source: Source,
    base_url: Option<String>,
    headers: Vec<(String, String)>,
    filter: Filter,
    allow_private_network: bool,
    allowed_addresses: Vec<IpAddr>,
    max_response_bytes: usize,
    timeout: Duration,
    connect_timeout: Duration,
    max_redirects: usize,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Config")
            .field("source", &self.source)
            .field("base_url", &self.base_url)
            .field("headers", &names)
            .field("filter", &self.filter)
            .field("allow_private_network", &self.allow_private_network)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// The document at `location`: an `http://` or `https://` URL, else a
    /// file path. Defaults: 1 MiB of response body, 30 seconds a request
    /// (10 to connect), 5 redirects, private networks refused.
    pub fn new(location: impl Into<String>) -> Config {
        let location = location.into();
        let source = if location.starts_with("http://") || location.starts_with("https://") {
            Source::Url(location)
        } else {
            Source::File(location.into())
        };
        Config::with_source(source)
    }

    /// The document given as its text (JSON or YAML).
    pub fn from_text(text: impl Into<String>) -> Config {
        Config::with_source(Source::Text(text.into()))
    }

    fn with_source(source: Source) -> Config {
        Config {
            source,
            base_url: None,
            headers: Vec::new(),
            filter: Filter::default(),
            allow_private_network: false,
            allowed_addresses: Vec::new(),
            max_response_bytes: 1 << 20,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_redirects: 5,
        }
    }

    /// The URL operations' paths are appended to, instead of the
    /// document's `servers`.
    pub fn base_url(mut self, url: impl Into<String>) -> Config {
        self.base_url = Some(url.into());
        self
    }

    /// A header sent with every request to the API (a credential, say).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Config {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Keeps operations tagged `tag` (repeatable).
    pub fn include_tag(mut self, tag: impl Into<String>) -> Config {
        self.filter.include_tags.push(tag.into());
        self
    }

    /// Drops operations tagged `tag` (repeatable).
    pub fn exclude_tag(mut self, tag: impl Into<String>) -> Config {
        self.filter.exclude_tags.push(tag.into());
        self
    }

    /// Keeps the operation with this `operationId` or tool name
    /// (repeatable); an id no operation has is an error.
    pub fn include_op(mut self, id: impl Into<String>) -> Config {
        self.filter.include_ops.push(id.into());
        self
    }

    /// Drops the operation with this `operationId` or tool name
    /// (repeatable); an id no operation has is an error.
    pub fn exclude_op(mut self, id: impl Into<String>) -> Config {
        self.filter.exclude_ops.push(id.into());
        self
    }

    /// Lets requests reach loopback, private and link-local addresses.
    pub fn allow_private_network(mut self, allow: bool) -> Config {
        self.allow_private_network = allow;
        self
    }

    /// Lets requests reach this one address even though it is private
    /// (an internal API), every other private address staying refused.
    pub fn allow_address(mut self, address: IpAddr) -> Config {
        self.allowed_addresses.push(address);
        self
    }

    /// The most bytes of a response body kept.
    pub fn max_response_bytes(mut self, bytes: usize) -> Config {
        self.max_response_bytes = bytes.max(1);
        self
    }

    /// How long one request may take, its body included (each redirect
    /// hop is a request of its own).
    pub fn timeout(mut self, timeout: Duration) -> Config {
        self.timeout = timeout;
        self
    }

    /// How long connecting may take.
    pub fn connect_timeout(mut self, timeout: Duration) -> Config {
        self.connect_timeout = timeout;
        self
    }
}

/// Why the OpenAPI server could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The document file could not be read.
    #[error("cannot read the OpenAPI document {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The document URL could not be fetched.
    #[error("cannot fetch the OpenAPI document {url}: {reason}")]
    Fetch {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// The document is not JSON or YAML.
    #[error("cannot parse the OpenAPI document {origin}: {reason}")]
    Parse {
        /// The file or URL.
        origin: String,
        /// Why.
        reason: String,
    },
    /// The document is not OpenAPI 3.0 or 3.1.
    #[error("{origin} is {found}; only OpenAPI 3.0 and 3.1 documents are supported")]
    Version {
        /// The file or URL.
        origin: String,
        /// What it is.
        found: String,
    },
    /// No usable base URL.
    #[error("no base URL for the API ({url:?}): {reason}")]
    BaseUrl {
        /// The URL, as given or found.
        url: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A `--header` that is not `Name: value`, or names a missing variable.
    #[error("--header {name}: {reason}")]
    Header {
        /// The header's name (its value is never shown).
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// An include or exclude rule names an operation the document lacks.
    #[error("no operation has the id or tool name {id:?}")]
    UnknownOperation {
        /// The id.
        id: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

/// Reads a `--header` argument, `Name: value`, with `${VAR}` in the value
/// replaced by the environment variable `VAR` (an unset one is an
/// error). The error never shows the value.
pub fn parse_header(text: &str) -> Result<(String, String), Error> {
    let Some((name, value)) = text.split_once(':') else {
        return Err(Error::Header {
            name: "(no name)".into(),
            reason: "write it as 'Name: value'".into(),
        });
    };
    let name = name.trim().to_owned();
    let mut expanded = String::new();
    let mut rest = value.trim();
    while let Some(start) = rest.find("${") {
        expanded.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else {
            return Err(Error::Header {
                name,
                reason: "a `${` without its `}`".into(),
            });
        };
        let variable = &rest[start + 2..start + end];
        let found = std::env::var(variable).map_err(|_| Error::Header {
            name: name.clone(),
            reason: format!("the environment variable {variable} is not set"),
        })?;
        expanded.push_str(&found);
        rest = &rest[start + end + 1..];
    }
    expanded.push_str(rest);
    Ok((name, expanded))
}

fn credentials(headers: &[(String, String)]) -> Result<HeaderMap, Error> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| Error::Header {
            name: name.clone(),
            reason: "not a valid header name".into(),
        })?;
        let mut value = HeaderValue::from_str(value).map_err(|_| Error::Header {
            name: name.clone(),
            reason: "the value holds characters a header may not".into(),
        })?;
        value.set_sensitive(true);
        map.append(header, value);
    }
    Ok(map)
}

/// The document's text, and its URL when it came from one.
async fn load(
    source: &Source,
    client: &reqwest::Client,
    guard: &Guard,
) -> Result<(String, String, Option<Url>), Error> {
    match source {
        Source::Text(text) => Ok((text.clone(), "(inline document)".into(), None)),
        Source::File(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
                path: path.clone(),
                source,
            })?;
            Ok((text, path.display().to_string(), None))
        }
        Source::Url(location) => {
            let fetch = |reason: String| Error::Fetch {
                url: location.clone(),
                reason,
            };
            let mut url = Url::parse(location).map_err(|e| fetch(e.to_string()))?;
            let mut hops = Vec::new();
            let response = loop {
                guard.check_url(&url).map_err(|e| fetch(e.to_string()))?;
                let response = client
                    .get(url.clone())
                    .send()
                    .await
                    .map_err(|e| fetch(error_chain(&e)))?;
                let location = response
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|l| l.to_str().ok());
                match location {
                    Some(location) if response.status().is_redirection() => {
                        let next = guard
                            .check_hop(&url, location, &hops, MAX_DOCUMENT_REDIRECTS)
                            .map_err(|e| fetch(e.to_string()))?;
                        hops.push(std::mem::replace(&mut url, next));
                    }
                    _ => break response,
                }
            };
            if !response.status().is_success() {
                return Err(fetch(format!("HTTP {}", response.status())));
            }
            let mut response = response;
            let mut bytes = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| fetch(error_chain(&e)))? {
                if bytes.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                    return Err(fetch(format!(
                        "larger than {} MiB",
                        MAX_DOCUMENT_BYTES >> 20
                    )));
                }
                bytes.extend_from_slice(&chunk);
            }
            let text = String::from_utf8(bytes).map_err(|_| fetch("not UTF-8 text".into()))?;
            Ok((text, without_credentials(&url), Some(url)))
        }
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut parts = vec![error.to_string()];
    let mut cause = error.source();
    while let Some(e) = cause {
        parts.push(e.to_string());
        cause = e.source();
    }
    parts.join(": ")
}

/// Builds the OpenAPI server for `config`: reads the document (fetching
/// it through the guarded client when it is a URL), maps its operations
/// and builds the client that calls the API.
pub async fn server(config: Config) -> Result<Server, Error> {
    let guard = Guard::new(
        config.allow_private_network,
        config.allowed_addresses.clone(),
    );
    let client = http::client(&guard, config.timeout, config.connect_timeout)?;
    let (text, origin, location) = load(&config.source, &client, &guard).await?;
    let doc = Document::parse(&text, &origin)?;
    let base = match &config.base_url {
        Some(given) => Url::parse(given).map_err(|e| Error::BaseUrl {
            url: given.clone(),
            reason: e.to_string(),
        })?,
        None => doc.server_url(location.as_ref()).unwrap_or_else(|| {
            Err(Error::BaseUrl {
                url: String::new(),
                reason: "the document names no server: give the API's address with --base-url"
                    .into(),
            })
        })?,
    };
    if !matches!(base.scheme(), "http" | "https") {
        return Err(Error::BaseUrl {
            url: without_credentials(&base),
            reason: "only http and https are spoken".into(),
        });
    }
    let credentials = credentials(&config.headers)?;
    let hidden: Vec<String> = config.headers.iter().map(|(n, _)| n.clone()).collect();
    let operations = operations::operations(&doc, &hidden, &config.filter)?;
    let api = Arc::new(http::Api::new(
        client,
        guard,
        base.clone(),
        credentials,
        config.max_response_bytes,
        config.max_redirects,
    ));
    let mut builder =
        Server::builder("mcp-openapi", env!("CARGO_PKG_VERSION")).instructions(format!(
            "{} at {}: one tool per operation (arguments: the operation's parameters by name, \
         the request body as `body`); results give the HTTP status and body. GET operations \
         are also resources (api://{{path}}).",
            doc.title(),
            without_credentials(&base)
        ));
    for operation in operations {
        match resources::expose(&api, &operation) {
            Some(resources::Exposed::Resource(resource)) => builder = builder.resource(resource),
            Some(resources::Exposed::Template(template)) => builder = builder.template(template),
            None => {}
        }
        builder = builder.tool(tools::tool(&api, operation));
    }
    Ok(builder.build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_expand_environment_variables_and_never_show_values() {
        // SAFETY: the variable is set once here and read in this test only.
        unsafe { std::env::set_var("MCP_OPENAPI_TEST_TOKEN", "tok-123") };
        let (name, value) =
            parse_header("Authorization: Bearer ${MCP_OPENAPI_TEST_TOKEN}").unwrap();
        assert_eq!(
            (name.as_str(), value.as_str()),
            ("Authorization", "Bearer tok-123")
        );
        let e = parse_header("X-Key: ${MCP_OPENAPI_SURELY_UNSET_VAR}").unwrap_err();
        assert!(
            e.to_string().contains("MCP_OPENAPI_SURELY_UNSET_VAR"),
            "{e}"
        );
        let e = parse_header("no colon here").unwrap_err();
        assert!(e.to_string().contains("'Name: value'"), "{e}");
        let e = credentials(&[("X-Key".into(), "bad\nvalue".into())]).unwrap_err();
        assert!(!e.to_string().contains("bad"), "{e}");
        let config = Config::new("x.json").header("X-Key", "hidden-value");
        assert!(!format!("{config:?}").contains("hidden-value"));
    }
}
