//! The catalog as it changes while the server runs: tools, resources,
//! templates and prompts added and removed, each change announced.

use super::*;

impl Server {
    pub(super) fn read_catalog(&self) -> std::sync::RwLockReadGuard<'_, Definitions> {
        self.inner.catalog.read_locked()
    }

    /// Applies `change`; when it reports a change, cursors handed out before
    /// go stale and clients are told the list changed.
    pub(super) fn change_catalog(
        &self,
        kind: ListKind,
        change: impl FnOnce(&mut Definitions) -> bool,
    ) -> bool {
        let changed = {
            let mut catalog = self.inner.catalog.write_locked();
            let changed = change(&mut catalog);
            if changed {
                catalog.generation += 1;
                if matches!(kind, ListKind::Tools) {
                    catalog.index_tools();
                }
            }
            changed
        };
        if changed {
            self.list_changed(kind);
        }
        changed
    }

    /// Adds (or replaces, by name) a tool; clients are told the list changed.
    pub fn add_tool(&self, tool: ToolDef) {
        self.change_catalog(ListKind::Tools, |c| {
            upsert(&mut c.tools, tool, |t| &t.tool.name)
        });
    }

    /// Removes a tool; returns whether it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.change_catalog(ListKind::Tools, |c| {
            remove(&mut c.tools, name, |t| &t.tool.name)
        })
    }

    /// Adds (or replaces, by URI) a resource.
    pub fn add_resource(&self, resource: ResourceDef) {
        self.change_catalog(ListKind::Resources, |c| {
            upsert(&mut c.resources, resource, |r| &r.resource.uri)
        });
    }

    /// Removes a resource; returns whether it existed.
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.change_catalog(ListKind::Resources, |c| {
            remove(&mut c.resources, uri, |r| &r.resource.uri)
        })
    }

    /// Adds (or replaces, by URI template) a resource template.
    pub fn add_template(&self, template: TemplateDef) {
        self.change_catalog(ListKind::Resources, |c| {
            upsert(&mut c.templates, template, |t| &t.template.uri_template)
        });
    }

    /// Removes a resource template; returns whether it existed.
    pub fn remove_template(&self, uri_template: &str) -> bool {
        self.change_catalog(ListKind::Resources, |c| {
            remove(&mut c.templates, uri_template, |t| &t.template.uri_template)
        })
    }

    /// Adds (or replaces, by name) a prompt.
    pub fn add_prompt(&self, prompt: PromptDef) {
        self.change_catalog(ListKind::Prompts, |c| {
            upsert(&mut c.prompts, prompt, |p| &p.prompt.name)
        });
    }

    /// Removes a prompt; returns whether it existed.
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.change_catalog(ListKind::Prompts, |c| {
            remove(&mut c.prompts, name, |p| &p.prompt.name)
        })
    }
}
