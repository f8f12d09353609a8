//! Conversations kept between runs: each in a JSON file of its own under
//! `$XDG_STATE_HOME/mcp/chats`, written after every turn, so that
//! `--resume ID` (or `--resume last`) takes one up again.

use std::path::PathBuf;

use anyhow::{Context as _, Result, bail};
use mcp_host::model::{Conversation, Message};
use serde::{Deserialize, Serialize};

/// A conversation and where it is kept.
pub(crate) struct Kept {
    /// Its name.
    pub(crate) id: String,
    path: PathBuf,
    /// Its system prompt and turns.
    pub(crate) conversation: Conversation,
}

/// What the file holds.
#[derive(Serialize, Deserialize)]
struct File {
    id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    messages: Vec<Message>,
}

impl Kept {
    /// A new conversation, or the one `resume` names (`last`: the latest).
    pub(crate) fn open(resume: Option<&str>) -> Result<Kept> {
        let dir = super::chats_dir();
        let Some(resume) = resume else {
            return Ok(Kept::new(dir));
        };
        let path = if resume == "last" {
            latest(&dir)?
                .with_context(|| format!("no conversation is kept in {}", dir.display()))?
        } else {
            if resume.is_empty() || resume.contains(['/', '\\']) || resume.starts_with('.') {
                bail!("{resume:?} is not a conversation's id");
            }
            dir.join(format!("{resume}.json"))
        };
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("no conversation {resume:?} ({})", path.display()))?;
        let file: File = serde_json::from_str(&text)
            .with_context(|| format!("{} cannot be read", path.display()))?;
        Ok(Kept {
            id: file.id,
            path,
            conversation: Conversation {
                system: file.system,
                messages: file.messages,
                ..Default::default()
            },
        })
    }

    fn new(dir: PathBuf) -> Kept {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let id = format!("{}-{}", now.as_secs(), std::process::id());
        Kept {
            path: dir.join(format!("{id}.json")),
            id,
            conversation: Conversation::default(),
        }
    }

    /// A new conversation, kept beside this one.
    pub(crate) fn fresh(&self) -> Kept {
        Kept::new(self.path.parent().map(PathBuf::from).unwrap_or_default())
    }

    /// Writes `conversation` (whole, replacing the file at once).
    pub(crate) fn save(&self, conversation: &Conversation) -> Result<()> {
        if conversation.messages.is_empty() {
            return Ok(());
        }
        let dir = self
            .path
            .parent()
            .context("a kept conversation has a folder")?;
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let file = File {
            id: self.id.clone(),
            system: conversation.system.clone(),
            messages: conversation.messages.clone(),
        };
        let partial = self.path.with_extension("json.partial");
        std::fs::write(&partial, serde_json::to_vec_pretty(&file)?)
            .and_then(|()| std::fs::rename(&partial, &self.path))
            .with_context(|| format!("cannot write {}", self.path.display()))
    }
}

/// The latest kept conversation in `dir`.
fn latest(dir: &std::path::Path) -> Result<Option<PathBuf>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let modified = entry.metadata()?.modified()?;
        if newest.as_ref().is_none_or(|(time, _)| modified > *time) {
            newest = Some((modified, path));
        }
    }
    Ok(newest.map(|(_, path)| path))
}
