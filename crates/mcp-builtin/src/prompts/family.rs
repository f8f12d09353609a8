//! One prompt of a library: its usable versions, newest first, and the
//! problems of its files that could not be used. How a version is
//! rendered is in [`super::render`]; how it is listed, in
//! [`super::library`].

use super::file::{FileProblem, PromptVersion};

/// Every version of one prompt.
#[derive(Debug)]
pub struct PromptFamily {
    /// The prompt's name.
    pub name: String,
    /// Its usable versions, newest first (by semantic version).
    pub versions: Vec<PromptVersion>,
    /// Its files that could not be used, and why.
    pub problems: Vec<FileProblem>,
    /// A digest of its files' paths and contents: unchanged files, same
    /// fingerprint.
    pub(super) fingerprint: u64,
}

impl PromptFamily {
    /// The version served when none is asked for.
    pub fn newest(&self) -> Option<&PromptVersion> {
        self.versions.first()
    }

    /// The version `version`, if there is one.
    pub fn version(&self, version: &semver::Version) -> Option<&PromptVersion> {
        self.versions.iter().find(|v| v.version == *version)
    }

    /// The versions, newest first, as text.
    pub fn version_list(&self) -> Vec<String> {
        self.versions
            .iter()
            .map(|v| v.version.to_string())
            .collect()
    }

    /// What changes when any of its files does.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }
}
