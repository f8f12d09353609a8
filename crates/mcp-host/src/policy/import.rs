//! Rules from what users already wrote in other hosts: Claude Code's
//! `permissions` (`mcp__server__tool`, `mcp__server`), and the Cursor
//! CLI's in the same lists (`Mcp(server:tool)`); Cursor's
//! `permissions.json` `mcpAllowlist` (`server:tool`, `server:*`); and the
//! per-server `autoApprove` (Cline) and `alwaysAllow` (Roo Code) lists.
//! Each becomes a rule named after where it came from; what cannot be
//! carried over is said. (VS Code keeps the tools a person allowed in its
//! own state database, not in a file: nothing to import there.)

use serde_json::Value;

use super::{Decision, RuleSettings};

/// What a file gave.
#[derive(Debug, Default, PartialEq)]
pub struct Imported {
    /// The rules, in the order found.
    pub rules: Vec<RuleSettings>,
    /// What was not carried over, and why.
    pub skipped: Vec<String>,
    /// Whether its rules only mean something where the default asks:
    /// lists of tools that run without asking.
    pub wants_ask_default: bool,
}

/// The rules in the JSON `text` of file `source`, whichever of the known
/// forms it has; an error for a file of none of them.
pub fn import(text: &str, source: &str) -> Result<Imported, String> {
    // Cursor's files are JSON with comments.
    let json: Value = jsonc_parser::parse_to_serde_value(text, &Default::default())
        .map_err(|e| format!("{source}: {e}"))?;
    let mut imported = Imported::default();
    let mut known = false;
    if let Some(permissions) = json.get("permissions").and_then(Value::as_object) {
        known = true;
        for (list, decision) in [
            ("deny", Decision::Deny),
            ("ask", Decision::Ask),
            ("allow", Decision::Allow),
        ] {
            let entries = permissions.get(list).and_then(Value::as_array);
            for entry in entries.into_iter().flatten().filter_map(Value::as_str) {
                let rule = claude_code_rule(entry, decision, source).or_else(|| {
                    let inner = entry.strip_prefix("Mcp(")?.strip_suffix(')')?;
                    cursor_rule(inner, decision, source, entry)
                });
                match rule {
                    Some(rule) => imported.rules.push(rule),
                    None => imported
                        .skipped
                        .push(format!("{list} {entry:?}: not an MCP permission")),
                }
            }
        }
    }
    if let Some(allowed) = json.get("mcpAllowlist").and_then(Value::as_array) {
        known = true;
        imported.wants_ask_default = true;
        for entry in allowed.iter().filter_map(Value::as_str) {
            match cursor_rule(entry, Decision::Allow, source, "mcpAllowlist") {
                Some(rule) => imported.rules.push(rule),
                None => imported
                    .skipped
                    .push(format!("mcpAllowlist {entry:?}: not server:tool")),
            }
        }
    }
    if let Some(servers) = json.get("mcpServers").and_then(Value::as_object) {
        for (server, entry) in servers {
            for key in ["autoApprove", "alwaysAllow"] {
                let Some(tools) = entry.get(key).and_then(Value::as_array) else {
                    continue;
                };
                known = true;
                imported.wants_ask_default = true;
                for tool in tools.iter().filter_map(Value::as_str) {
                    imported.rules.push(RuleSettings {
                        decision: Decision::Allow,
                        name: Some(format!("{source}: {key} {tool} of {server}")),
                        server: Some(escape(server)),
                        tool: Some(escape(tool)),
                        ..RuleSettings::default()
                    });
                }
            }
        }
    }
    if !known {
        return Err(format!(
            "{source}: neither Claude Code (or Cursor CLI) `permissions`, Cursor's \
             `mcpAllowlist`, nor `mcpServers` with `autoApprove` or `alwaysAllow`"
        ));
    }
    Ok(imported)
}

/// `rules` as the `[[policy]]` tables of a settings file.
pub fn as_settings(rules: &[RuleSettings]) -> String {
    #[derive(serde::Serialize)]
    struct Rules<'a> {
        policy: &'a [RuleSettings],
    }
    toml::to_string(&Rules { policy: rules }).unwrap_or_default()
}

/// The rule of a Claude Code permission `mcp__SERVER` or
/// `mcp__SERVER__TOOL` (`*` for every tool); `None` for a permission of
/// another kind (`Bash(...)`, `Read(...)`).
fn claude_code_rule(entry: &str, decision: Decision, source: &str) -> Option<RuleSettings> {
    let rest = entry.strip_prefix("mcp__")?;
    let (server, tool) = match rest.split_once("__") {
        Some((server, tool)) => (server, Some(tool)),
        None => (rest, None),
    };
    if server.is_empty() {
        return None;
    }
    Some(RuleSettings {
        decision,
        name: Some(format!("{source}: {} {entry}", decision.as_str())),
        server: Some(escape(server)),
        tool: tool.filter(|t| !t.is_empty() && *t != "*").map(|t| {
            if t.ends_with('*') {
                t.to_owned()
            } else {
                escape(t)
            }
        }),
        ..RuleSettings::default()
    })
}

/// The rule of a Cursor pattern `SERVER:TOOL` (`SERVER:*`, `*:TOOL` and
/// `*:*` too), written `as_written` in the file; `None` for another form.
fn cursor_rule(
    entry: &str,
    decision: Decision,
    source: &str,
    as_written: &str,
) -> Option<RuleSettings> {
    let (server, tool) = entry.split_once(':')?;
    if server.is_empty() || tool.is_empty() {
        return None;
    }
    let glob = |part: &str| (part != "*").then(|| escape(part));
    let name = if as_written == "mcpAllowlist" {
        format!("{source}: mcpAllowlist {entry}")
    } else {
        format!("{source}: {} {as_written}", decision.as_str())
    };
    Some(RuleSettings {
        decision,
        name: Some(name),
        server: glob(server),
        tool: glob(tool),
        ..RuleSettings::default()
    })
}

/// `name` as a glob that matches only itself.
fn escape(name: &str) -> String {
    let mut glob = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            glob.push('[');
            glob.push(c);
            glob.push(']');
        } else {
            glob.push(c);
        }
    }
    glob
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Asked, Caller, Kind, Policy, Rule};

    fn policy(imported: &Imported, default: Decision) -> Policy {
        let rules = imported
            .rules
            .iter()
            .enumerate()
            .map(|(n, r)| Rule::compile(r, n + 1).unwrap())
            .collect();
        Policy::new(rules, default)
    }

    fn decide(policy: &Policy, server: &str, tool: &str) -> Decision {
        let caller = Caller::default();
        policy
            .decide(&Asked {
                caller: &caller,
                server,
                kind: Kind::Tool,
                name: tool,
                hints: None,
                arguments: None,
            })
            .decision
    }

    #[test]
    fn claude_code_permissions_become_rules() {
        let text = r#"{"permissions": {
            "allow": ["mcp__memory__read_graph", "mcp__time", "Bash(npm test)"],
            "deny": ["mcp__memory__delete_entities"],
            "ask": ["mcp__github__*"]
        }}"#;
        let imported = import(text, ".claude/settings.json").unwrap();
        assert_eq!(imported.rules.len(), 4);
        assert_eq!(imported.skipped.len(), 1, "{:?}", imported.skipped);
        assert!(!imported.wants_ask_default);
        let policy = policy(&imported, Decision::Ask);
        assert_eq!(decide(&policy, "memory", "read_graph"), Decision::Allow);
        assert_eq!(decide(&policy, "memory", "delete_entities"), Decision::Deny);
        assert_eq!(decide(&policy, "memory", "create_entities"), Decision::Ask);
        assert_eq!(decide(&policy, "time", "get_current_time"), Decision::Allow);
        assert_eq!(decide(&policy, "github", "create_issue"), Decision::Ask);
        assert!(
            imported.rules[0]
                .name
                .as_deref()
                .unwrap()
                .contains("mcp__memory__delete_entities")
        );
    }

    #[test]
    fn cline_and_roo_lists_become_allow_rules() {
        let text = r#"{"mcpServers": {
            "fs": {"command": "npx", "autoApprove": ["read_file", "list[1]"]},
            "git": {"command": "uvx", "alwaysAllow": ["git_status"]},
            "other": {"command": "x"}
        }}"#;
        let imported = import(text, "cline_mcp_settings.json").unwrap();
        assert!(imported.wants_ask_default);
        let policy = policy(&imported, Decision::Ask);
        assert_eq!(decide(&policy, "fs", "read_file"), Decision::Allow);
        assert_eq!(
            decide(&policy, "fs", "list[1]"),
            Decision::Allow,
            "names are not globs"
        );
        assert_eq!(decide(&policy, "fs", "list1"), Decision::Ask);
        assert_eq!(decide(&policy, "git", "git_status"), Decision::Allow);
        assert_eq!(decide(&policy, "other", "x"), Decision::Ask);
    }

    #[test]
    fn the_rules_are_written_as_a_settings_file_reads_them() {
        let text =
            r#"{"permissions": {"deny": ["mcp__memory__delete_*"], "allow": ["mcp__time"]}}"#;
        let imported = import(text, "s.json").unwrap();
        let written = as_settings(&imported.rules);
        let read = crate::HostSettings::parse(&written).unwrap();
        assert_eq!(read.policy, imported.rules, "{written}");
    }

    #[test]
    fn cursor_allowlists_and_cli_permissions_become_rules() {
        let text = r#"{
            // Cursor's permissions.json: JSON with comments.
            "mcpAllowlist": ["github:*", "linear:list_issues", "*:get_time", "bad"],
            "terminalAllowlist": ["git"]
        }"#;
        let imported = import(text, "~/.cursor/permissions.json").unwrap();
        assert!(imported.wants_ask_default);
        assert_eq!(imported.rules.len(), 3);
        assert_eq!(imported.skipped.len(), 1, "{:?}", imported.skipped);
        let cursor = policy(&imported, Decision::Ask);
        assert_eq!(decide(&cursor, "github", "create_issue"), Decision::Allow);
        assert_eq!(decide(&cursor, "linear", "list_issues"), Decision::Allow);
        assert_eq!(decide(&cursor, "linear", "delete_issue"), Decision::Ask);
        assert_eq!(decide(&cursor, "time", "get_time"), Decision::Allow);

        let cli = r#"{"permissions": {
            "allow": ["Mcp(notion:search)", "Shell(ls)"],
            "deny": ["Mcp(notion:*)"]
        }}"#;
        let imported = import(cli, ".cursor/cli.json").unwrap();
        assert_eq!(imported.rules.len(), 2);
        assert_eq!(imported.skipped.len(), 1, "Shell(ls) is not about MCP");
        let cli = policy(&imported, Decision::Allow);
        assert_eq!(
            decide(&cli, "notion", "search"),
            Decision::Deny,
            "deny wins"
        );
        assert_eq!(decide(&cli, "other", "search"), Decision::Allow);
        assert!(
            imported.rules[1]
                .name
                .as_deref()
                .unwrap()
                .contains("allow Mcp(notion:search)")
        );
    }

    #[test]
    fn a_file_of_no_known_form_is_refused() {
        assert!(import(r#"{"servers": {}}"#, "mcp.json").is_err());
        assert!(import("not json", "x").is_err());
    }
}
