//! Curated views: named subsets of the catalog, each served as a server of
//! its own (at `/views/NAME/mcp`, or with `--view NAME` on stdio), so that
//! a model sees the tools of its task rather than all of them.
//!
//! ```toml
//! [views.research]
//! servers = ["time", "fetch*"]   # globs over the config's server names (default: all)
//! tools = ["*"]                  # globs over the tools' names as the catalog shows them (default: all)
//! discovery = true               # list three tools to search, describe and call the view's tools
//! instructions = "..."           # the view's own instructions (default: its servers')
//! ```
//!
//! In discovery mode the view lists `search_tools` (words in, the best
//! matches out, ranked by BM25 over the tools' names, titles, descriptions
//! and argument names), `describe_tool` (a tool's whole definition) and
//! `call_tool` (a tool by name, with arguments), so that a model that
//! takes 128 tools can use thousands. A call through `call_tool` takes the
//! same path as a direct one: policy, limits, consent, audit.

use serde::{Deserialize, Serialize};

use crate::glob::Pattern;

pub mod search;

/// `[views.NAME]`: one view as the settings file writes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ViewSettings {
    /// Globs over the config's server names; unset: every server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers: Option<Vec<String>>,
    /// Globs over the tools' names as the catalog shows them; unset:
    /// every tool of the view's servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Whether the view lists the three discovery tools instead of its
    /// tools.
    #[serde(default)]
    pub discovery: bool,
    /// The view's instructions; unset: its servers'.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// A view, ready to filter.
#[derive(Debug)]
pub struct View {
    /// Its name, as its path and `--view` say it.
    pub name: String,
    servers: Vec<Pattern>,
    tools: Vec<Pattern>,
    /// Whether it lists the discovery tools.
    pub discovery: bool,
    /// Its own instructions, if it has some.
    pub instructions: Option<String>,
}

/// The names of the discovery tools.
pub const SEARCH_TOOLS: &str = "search_tools";
/// See [`SEARCH_TOOLS`].
pub const DESCRIBE_TOOL: &str = "describe_tool";
/// See [`SEARCH_TOOLS`].
pub const CALL_TOOL: &str = "call_tool";

impl View {
    /// The view `settings` describe, called `name` (letters, digits, `-`
    /// and `_`: it is a path segment).
    pub fn compile(name: &str, settings: &ViewSettings) -> Result<View, String> {
        let fine = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
        if name.is_empty() || !name.chars().all(fine) {
            return Err(format!(
                "[views.{name}]: a view's name is letters, digits, - and _ (it is in its path)"
            ));
        }
        let globs = |key: &str, list: &Option<Vec<String>>| -> Result<Vec<Pattern>, String> {
            list.iter()
                .flatten()
                .map(|glob| {
                    Pattern::new(glob).map_err(|e| format!("[views.{name}] {key}: {glob:?}: {e}"))
                })
                .collect()
        };
        Ok(View {
            name: name.to_owned(),
            servers: globs("servers", &settings.servers)?,
            tools: globs("tools", &settings.tools)?,
            discovery: settings.discovery,
            instructions: settings.instructions.clone(),
        })
    }

    /// Whether the view holds what server `server` (its config name)
    /// offers.
    pub fn has_server(&self, server: &str) -> bool {
        self.servers.is_empty() || self.servers.iter().any(|p| p.is_match(server))
    }

    /// Whether the view holds tool `exposed` (its name in the catalog) of
    /// server `server`.
    pub fn has_tool(&self, server: &str, exposed: &str) -> bool {
        self.has_server(server)
            && (self.tools.is_empty() || self.tools.iter().any(|p| p.is_match(exposed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_holds_its_servers_and_tools() {
        let view = View::compile(
            "research",
            &ViewSettings {
                servers: Some(vec!["time".into(), "fetch*".into()]),
                tools: Some(vec!["*_now".into(), "fetch*".into()]),
                ..ViewSettings::default()
            },
        )
        .unwrap();
        assert!(view.has_server("fetch-web"));
        assert!(!view.has_server("memory"));
        assert!(view.has_tool("time", "time_now"));
        assert!(!view.has_tool("time", "convert_time"));
        assert!(!view.has_tool("memory", "time_now"));
        let all = View::compile("all", &ViewSettings::default()).unwrap();
        assert!(all.has_tool("anything", "any"));
        assert!(View::compile("no/slash", &ViewSettings::default()).is_err());
    }
}
