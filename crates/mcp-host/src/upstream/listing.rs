//! What one upstream lists: its tools, resources, resource templates and
//! prompts, kept as the JSON objects it sent (so `_meta`, annotations,
//! icons, `outputSchema` and members this host does not know pass through
//! untouched), and its instructions.

use mcp_client::Client;
use mcp_core::RequestOptions;
use mcp_schema::ServerCapabilities;
use serde_json::{Map, Value, json};

use super::UpstreamStatus;
use crate::consent::{GrantKey, GuardStore, Pinned, definition_hash};
use crate::suspicious::{Flag, flags_of};

/// One JSON object of a list.
pub type Item = Map<String, Value>;

/// What one upstream lists.
#[derive(Debug, Default, Clone)]
#[non_exhaustive]
pub struct Listing {
    /// `tools/list`, every page.
    pub tools: Vec<Item>,
    /// `resources/list`, every page.
    pub resources: Vec<Item>,
    /// `resources/templates/list`, every page.
    pub templates: Vec<Item>,
    /// `prompts/list`, every page.
    pub prompts: Vec<Item>,
    /// The server's instructions.
    pub instructions: Option<String>,
    /// What the server declared.
    pub capabilities: ServerCapabilities,
    /// The items whose definitions hold text aimed at the model (see
    /// [`crate::suspicious`]).
    pub flagged: Vec<Flagged>,
    /// The items whose definitions changed since they were pinned, where
    /// definitions are pinned.
    pub changed: Vec<Changed>,
}

/// An item whose definition changed since it was pinned.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Changed {
    /// `tool`, `prompt` or `resource`.
    pub kind: &'static str,
    /// Its name (a resource: its URI) at the server.
    pub name: String,
    /// What changed: a unified diff of the pinned definition and the one
    /// listed now, as pretty JSON.
    pub diff: String,
}

/// An item whose definition holds text aimed at the model.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Flagged {
    /// `tool`, `prompt` or `resource`.
    pub kind: &'static str,
    /// Its name (a resource: its URI) at the server.
    pub name: String,
    /// What was found.
    pub flags: Vec<Flag>,
}

/// The most pages read of one list: a server whose cursors never end
/// cannot hold the host.
const MAX_PAGES: usize = 1000;

impl Listing {
    /// Reads every list the server declares.
    pub(crate) async fn fetch(client: &Client) -> Result<Listing, String> {
        let caps = client.server_capabilities().clone();
        let mut listing = Listing {
            instructions: client.instructions().map(str::to_owned),
            ..Default::default()
        };
        if caps.tools.is_some() {
            listing.tools = list_all(client, "tools/list", "tools").await?;
        }
        if caps.resources.is_some() {
            listing.resources = list_all(client, "resources/list", "resources").await?;
            // Templates are optional even for servers with resources.
            listing.templates = list_all(client, "resources/templates/list", "resourceTemplates")
                .await
                .unwrap_or_default();
        }
        if caps.prompts.is_some() {
            listing.prompts = list_all(client, "prompts/list", "prompts").await?;
        }
        listing.capabilities = caps;
        listing.flagged = listing.flag();
        Ok(listing)
    }

    /// The items whose definitions hold text aimed at the model.
    fn flag(&self) -> Vec<Flagged> {
        let lists = [
            ("tool", "name", &self.tools),
            ("prompt", "name", &self.prompts),
            ("resource", "uri", &self.resources),
            ("resource", "uriTemplate", &self.templates),
        ];
        let mut flagged = Vec::new();
        for (kind, key, items) in lists {
            for item in items {
                let flags = flags_of(item);
                if flags.is_empty() {
                    continue;
                }
                let name = item.get(key).and_then(Value::as_str).unwrap_or_default();
                flagged.push(Flagged {
                    kind,
                    name: name.to_owned(),
                    flags,
                });
            }
        }
        flagged
    }

    /// Checks every definition against its pin in `store` (the first seen
    /// is pinned) for server `server` run as `identity`, and keeps those
    /// that changed.
    pub(crate) fn check_pins(&mut self, store: &GuardStore, server: &str, identity: &str) {
        let lists = [
            ("tool", "name", &self.tools),
            ("prompt", "name", &self.prompts),
            ("resource", "uri", &self.resources),
        ];
        let mut changed = Vec::new();
        for (kind, key, items) in lists {
            for item in items {
                let name = item.get(key).and_then(Value::as_str).unwrap_or_default();
                let text = serde_json::to_string_pretty(item).unwrap_or_default();
                let pin = GrantKey {
                    server_identity: identity.to_owned(),
                    kind,
                    name: name.to_owned(),
                    definition: definition_hash(item),
                };
                if let Pinned::Changed(pinned) = store.check_pin(server, &pin, &text) {
                    let diff = similar::TextDiff::from_lines(&pinned, &text)
                        .unified_diff()
                        .context_radius(2)
                        .header("pinned", "listed now")
                        .to_string();
                    changed.push(Changed {
                        kind,
                        name: name.to_owned(),
                        diff,
                    });
                }
            }
        }
        self.changed = changed;
    }

    /// The items that changed since they were pinned and are still not
    /// approved in `store` (a person's "always", or `mcp host approve`,
    /// since the lists were read), as (kind, name).
    pub(crate) fn still_changed(
        &self,
        store: &GuardStore,
        server: &str,
        identity: &str,
    ) -> Vec<(&'static str, String)> {
        let mut held = Vec::new();
        for changed in &self.changed {
            let (items, key) = match changed.kind {
                "tool" => (&self.tools, "name"),
                "prompt" => (&self.prompts, "name"),
                _ => (&self.resources, "uri"),
            };
            let item = items
                .iter()
                .find(|item| item.get(key).and_then(Value::as_str) == Some(&changed.name));
            let still = item.is_none_or(|item| {
                let pin = GrantKey {
                    server_identity: identity.to_owned(),
                    kind: changed.kind,
                    name: changed.name.clone(),
                    definition: definition_hash(item),
                };
                let text = serde_json::to_string_pretty(item).unwrap_or_default();
                store.check_pin(server, &pin, &text) != Pinned::Same
            });
            if still {
                held.push((changed.kind, changed.name.clone()));
            }
        }
        held
    }

    /// Whether the definition of `name` (of `kind`) changed since it was
    /// pinned, and how.
    pub fn changed(&self, kind: &str, name: &str) -> Option<&Changed> {
        self.changed
            .iter()
            .find(|c| c.kind == kind && c.name == name)
    }

    /// The flags of the tool (or prompt, or resource) `name` at the server.
    pub fn flags(&self, kind: &str, name: &str) -> &[Flag] {
        self.flagged
            .iter()
            .find(|f| f.kind == kind && f.name == name)
            .map_or(&[], |f| &f.flags)
    }

    pub(crate) fn count_into(&self, status: &mut UpstreamStatus) {
        status.flagged = self.flagged.clone();
        status.changed = self.changed.clone();
        status.tools = self.tools.len();
        status.resources = self.resources.len();
        status.templates = self.templates.len();
        status.prompts = self.prompts.len();
    }
}

/// Every item of a paginated list, in the server's order.
async fn list_all(client: &Client, method: &str, key: &str) -> Result<Vec<Item>, String> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let raw = client
            .request_raw(method, params, RequestOptions::new())
            .await
            .map_err(|e| format!("{method}: {e}"))?;
        let mut page: Map<String, Value> =
            serde_json::from_str(raw.get()).map_err(|e| format!("{method}: not an object: {e}"))?;
        match page.remove(key) {
            Some(Value::Array(list)) => {
                for item in list {
                    match item {
                        Value::Object(item) => items.push(item),
                        other => {
                            return Err(format!("{method}: an item is not an object: {other}"));
                        }
                    }
                }
            }
            None => {}
            Some(other) => return Err(format!("{method}: \"{key}\" is not an array: {other}")),
        }
        cursor = match page.remove("nextCursor") {
            Some(Value::String(next)) if !next.is_empty() => Some(next),
            _ => return Ok(items),
        };
    }
    Err(format!("{method}: more than {MAX_PAGES} pages"))
}
