//! The host's merged lists, a page at a time, with cursors of its own and,
//! in 2026-07-28, cache hints.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp_core::HandlerResult;
use mcp_schema::{ErrorObject, ProtocolVersion, methods};
use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::{Map, Value};

use super::to_result;
use crate::Catalog;
use crate::upstream::Item;

/// Items per page of the host's lists.
const PAGE_SIZE: usize = 100;

/// Whether an item of a list is shown to the caller (the policy's
/// filter, where it filters).
pub(super) type Shows<'a> = dyn Fn(ListOf, &Item) -> bool + 'a;

/// One page of a merged list, as `revision` shows it.
pub(super) fn page(
    catalog: &Catalog,
    list: ListOf,
    params: &Map<String, Value>,
    revision: ProtocolVersion,
    shows: Option<&Shows<'_>>,
) -> HandlerResult {
    let offset = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(cursor)) => decode_cursor(list, cursor)?,
        Some(_) => return Err(ErrorObject::invalid_params("\"cursor\" must be a string")),
    };
    let all = match list {
        ListOf::Tools => catalog.tools(),
        ListOf::Prompts => catalog.prompts(),
        ListOf::Resources => catalog.resources(),
        ListOf::Templates => catalog.templates(),
    };
    // A caller's list leaves out what it is denied; its cursors count
    // in that list.
    let shown: Vec<&Item>;
    let (chunk, total): (Vec<&Item>, usize) = match shows {
        None => (all.page(offset, PAGE_SIZE), all.len()),
        Some(shows) => {
            shown = all.iter().filter(|i| shows(list, i)).collect();
            let end = (offset + PAGE_SIZE).min(shown.len());
            let chunk = shown.get(offset..end).unwrap_or_default();
            (chunk.to_vec(), shown.len())
        }
    };
    let end = offset + chunk.len();
    let next = (end < total).then(|| encode_cursor(list, end));
    let hints = (!revision.is_legacy()).then_some(CACHE_HINTS);
    if list == ListOf::Tools && (!revision.has_structured_output() || !revision.has_core_tasks()) {
        let adapted: Vec<Item> = chunk
            .iter()
            .map(|tool| {
                let mut tool = (*tool).clone();
                if !revision.has_structured_output() {
                    tool.remove("outputSchema");
                }
                if !revision.has_core_tasks() {
                    tool.remove("execution");
                }
                tool
            })
            .collect();
        return to_result(&Page {
            key: list.key(),
            items: &adapted,
            next,
            hints,
        });
    }
    to_result(&Page {
        key: list.key(),
        items: &chunk,
        next,
        hints,
    })
}

/// A list of a few `items`, in one page, as `revision` shows it.
pub(super) fn whole(list: ListOf, items: &[Item], revision: ProtocolVersion) -> HandlerResult {
    let chunk: Vec<&Item> = items.iter().collect();
    to_result(&Page {
        key: list.key(),
        items: &chunk,
        next: None,
        hints: (!revision.is_legacy()).then_some(CACHE_HINTS),
    })
}

/// Which merged list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListOf {
    Tools,
    Prompts,
    Resources,
    Templates,
}

impl ListOf {
    /// The list a `*/list` method asks for.
    pub(super) fn asked_by(method: &str) -> Option<ListOf> {
        match method {
            methods::TOOLS_LIST => Some(ListOf::Tools),
            methods::PROMPTS_LIST => Some(ListOf::Prompts),
            methods::RESOURCES_LIST => Some(ListOf::Resources),
            methods::RESOURCES_TEMPLATES_LIST => Some(ListOf::Templates),
            _ => None,
        }
    }

    fn key(self) -> &'static str {
        match self {
            ListOf::Tools => "tools",
            ListOf::Prompts => "prompts",
            ListOf::Resources => "resources",
            ListOf::Templates => "resourceTemplates",
        }
    }
}

/// How long a 2026-07-28 client may keep a list (milliseconds), and for
/// whom: the host's lists change when an upstream's do, and each change is
/// also announced on `subscriptions/listen` streams.
const CACHE_HINTS: (u64, &str) = (5_000, "private");

/// A page of a list, serialized without copying its items.
struct Page<'a, T: Serialize> {
    key: &'static str,
    items: &'a [T],
    next: Option<String>,
    hints: Option<(u64, &'static str)>,
}

impl<T: Serialize> Serialize for Page<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry(self.key, self.items)?;
        if let Some(next) = &self.next {
            map.serialize_entry("nextCursor", next)?;
        }
        if let Some((ttl, scope)) = self.hints {
            map.serialize_entry("ttlMs", &ttl)?;
            map.serialize_entry("cacheScope", scope)?;
        }
        map.end()
    }
}

fn encode_cursor(list: ListOf, offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("{}:{offset}", list.key()))
}

fn decode_cursor(list: ListOf, cursor: &str) -> Result<usize, ErrorObject> {
    URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| {
            let (key, offset) = text.split_once(':')?;
            (key == list.key()).then(|| offset.parse().ok()).flatten()
        })
        .ok_or_else(|| ErrorObject::invalid_params(format!("invalid cursor for {}", list.key())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_what_they_did_not_make() {
        let cursor = encode_cursor(ListOf::Tools, 200);
        assert_eq!(decode_cursor(ListOf::Tools, &cursor).unwrap(), 200);
        assert!(
            decode_cursor(ListOf::Prompts, &cursor).is_err(),
            "another list's cursor"
        );
        assert!(decode_cursor(ListOf::Tools, "!!!").is_err());
        assert!(decode_cursor(ListOf::Tools, &URL_SAFE_NO_PAD.encode("tools:x")).is_err());
    }
}
