//! Protocol revisions and everything that differs between them.
//!
//! The rest of the code asks a [`ProtocolVersion`] what it supports instead of
//! comparing dates.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{ServerCapabilities, error_codes};

/// The two eras of MCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Era {
    /// `initialize` handshake, stateful sessions (2024-11-05 to 2025-11-25).
    Legacy,
    /// Stateless: every request carries version, client info and
    /// capabilities in `_meta` (2026-07-28 onwards).
    Modern,
}

/// A protocol revision this implementation speaks, oldest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// First public revision; HTTP+SSE transport.
    V2024_11_05,
    /// Streamable HTTP, OAuth, batches, tool annotations, audio, completions.
    V2025_03_26,
    /// Structured tool output, elicitation, resource links; batches removed.
    V2025_06_18,
    /// Icons, URL elicitation, tools in sampling, tasks.
    V2025_11_25,
    /// Stateless era: `_meta` on every request, discovery, multi-round-trip.
    V2026_07_28,
}

/// Parsing a version string that is not a revision we know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported protocol version {0:?}")]
pub struct UnknownVersion(pub String);

impl ProtocolVersion {
    /// Every supported revision, oldest first.
    pub const ALL: [ProtocolVersion; 5] = [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2026_07_28,
    ];
    /// The newest revision.
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2026_07_28;
    /// The newest revision that starts with `initialize`.
    pub const LATEST_LEGACY: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// The revision's date string, as on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// Which era the revision belongs to.
    pub const fn era(self) -> Era {
        match self {
            ProtocolVersion::V2026_07_28 => Era::Modern,
            _ => Era::Legacy,
        }
    }

    /// Whether this is a legacy (initialize-era) revision.
    pub const fn is_legacy(self) -> bool {
        matches!(self.era(), Era::Legacy)
    }

    /// The supported version strings of one era, newest first, for error data.
    pub fn supported_strings() -> Vec<&'static str> {
        Self::ALL.iter().rev().map(|v| v.as_str()).collect()
    }

    /// Legacy negotiation: the version the server answers `initialize` with.
    /// A supported legacy version is echoed; anything else gets the latest
    /// legacy revision, and the client decides whether it can go on.
    pub fn negotiate_legacy(requested: &str) -> ProtocolVersion {
        match requested.parse::<ProtocolVersion>() {
            Ok(v) if v.is_legacy() => v,
            _ => Self::LATEST_LEGACY,
        }
    }

    /// JSON-RPC batches are part of this revision (2025-03-26 only).
    pub const fn supports_batching(self) -> bool {
        matches!(self, ProtocolVersion::V2025_03_26)
    }

    /// Tool annotations, audio content and the completions capability exist.
    pub fn has_tool_annotations(self) -> bool {
        self >= ProtocolVersion::V2025_03_26
    }

    /// Audio content blocks exist.
    pub fn has_audio(self) -> bool {
        self >= ProtocolVersion::V2025_03_26
    }

    /// `outputSchema` / `structuredContent`, elicitation, resource links and
    /// `title` fields exist.
    pub fn has_structured_output(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// Elicitation (form mode) exists.
    pub fn has_elicitation(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// `resource_link` content blocks exist.
    pub fn has_resource_links(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// Icons, URL-mode elicitation, tools in sampling and tasks exist.
    pub fn has_icons(self) -> bool {
        self >= ProtocolVersion::V2025_11_25
    }

    /// URL-mode elicitation exists.
    pub fn has_url_elicitation(self) -> bool {
        self >= ProtocolVersion::V2025_11_25
    }

    /// Streamable HTTP requests must carry `MCP-Protocol-Version`.
    pub fn requires_version_header(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// Results carry `resultType` (`complete` or `input_required`).
    pub fn has_result_type(self) -> bool {
        self.era() == Era::Modern
    }

    /// Servers ask for client input by returning `input_required` instead of
    /// sending requests to the client.
    pub fn uses_input_required(self) -> bool {
        self.era() == Era::Modern
    }

    /// Whether a client may send the request `method` in this revision.
    /// Methods outside MCP (extensions, custom methods) are not judged here.
    pub fn defines_client_request(self, method: &str) -> bool {
        use crate::methods as m;
        match method {
            m::INITIALIZE
            | m::PING
            | m::LOGGING_SET_LEVEL
            | m::RESOURCES_SUBSCRIBE
            | m::RESOURCES_UNSUBSCRIBE => self.is_legacy(),
            m::SERVER_DISCOVER | m::SUBSCRIPTIONS_LISTEN => !self.is_legacy(),
            m::TASKS_GET | m::TASKS_CANCEL => self >= ProtocolVersion::V2025_11_25,
            m::TASKS_RESULT | m::TASKS_LIST => self.has_core_tasks(),
            m::TASKS_UPDATE => self.has_tasks_extension(),
            _ => true,
        }
    }

    /// The experimental core tasks of 2025-11-25: the `tasks` capability,
    /// `params.task`, `Tool.execution.taskSupport`, `tasks/result` and
    /// `tasks/list`.
    pub fn has_core_tasks(self) -> bool {
        self == ProtocolVersion::V2025_11_25
    }

    /// Tasks come as the `io.modelcontextprotocol/tasks` extension
    /// (2026-07-28 onwards): server-directed, `tasks/update`, flat results.
    pub fn has_tasks_extension(self) -> bool {
        self.era() == Era::Modern
    }

    /// What of the server's `declared` capabilities this revision can
    /// express: the 2025-11-25 `tasks` capability only in 2025-11-25, the
    /// tasks extension only in the modern era (and `extensions` not at all
    /// when it ends up empty).
    pub fn server_capabilities(self, declared: &ServerCapabilities) -> ServerCapabilities {
        let mut caps = declared.clone();
        if !self.has_core_tasks() {
            caps.tasks = None;
        }
        if !self.has_tasks_extension() {
            if let Some(extensions) = caps.extensions.as_mut() {
                extensions.remove(crate::EXTENSION_TASKS);
            }
            if caps.extensions.as_ref().is_some_and(|e| e.is_empty()) {
                caps.extensions = None;
            }
        }
        caps
    }

    /// The error code for "resource not found".
    pub fn resource_not_found_code(self) -> i64 {
        match self.era() {
            Era::Legacy => error_codes::RESOURCE_NOT_FOUND,
            Era::Modern => error_codes::INVALID_PARAMS,
        }
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ProtocolVersion {
    type Err = UnknownVersion;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| UnknownVersion(s.to_owned()))
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display_agree() {
        for v in ProtocolVersion::ALL {
            assert_eq!(v.as_str().parse::<ProtocolVersion>().unwrap(), v);
        }
        assert!("2025-01-01".parse::<ProtocolVersion>().is_err());
    }

    #[test]
    fn legacy_negotiation_echoes_or_offers_latest_legacy() {
        assert_eq!(
            ProtocolVersion::negotiate_legacy("2024-11-05"),
            ProtocolVersion::V2024_11_05
        );
        assert_eq!(
            ProtocolVersion::negotiate_legacy("1999-01-01"),
            ProtocolVersion::LATEST_LEGACY
        );
        assert_eq!(
            ProtocolVersion::negotiate_legacy("2026-07-28"),
            ProtocolVersion::LATEST_LEGACY
        );
    }

    #[test]
    fn only_2025_03_26_batches() {
        let batching: Vec<_> = ProtocolVersion::ALL
            .into_iter()
            .filter(|v| v.supports_batching())
            .collect();
        assert_eq!(batching, [ProtocolVersion::V2025_03_26]);
    }
}
