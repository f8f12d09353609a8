//! The keys a server entry may have: those this host reads, and those
//! other hosts write that it leaves alone. Any other key is most likely a
//! typo, and is told with the known key nearest to it.

use serde_json::{Map, Value};

/// Every key a server entry may have, the most used first (a typo as near
/// to two keys is taken for the first).
const KNOWN: &[&str] = &[
    // Read by this host.
    "command",
    "args",
    "env",
    "url",
    "headers",
    "type",
    "cwd",
    "envFile",
    "namespace",
    "era",
    "timeout",
    "disabled",
    "trusted",
    "secrets",
    "isolation",
    "autoApprove",
    "alwaysAllow",
    "source",
    "settings",
    // Written by other hosts, not used here: VS Code's development and
    // gallery keys, the transport some Claude and Cursor configs name.
    "transport",
    "dev",
    "gallery",
    "version",
];

/// A key of an entry that no host is known to use.
#[derive(Debug, PartialEq)]
pub(super) struct Unknown {
    /// The key as written.
    pub(super) key: String,
    /// The known key it is nearest to, when it is near one.
    pub(super) meant: Option<&'static str>,
}

impl Unknown {
    /// The warning for it.
    pub(super) fn hint(&self) -> String {
        match self.meant {
            Some(meant) => format!(
                "unknown key {:?} is ignored; did you mean {meant:?}?",
                self.key
            ),
            None => format!("unknown key {:?} is ignored", self.key),
        }
    }
}

/// The keys of `entry` no host is known to use, in the entry's order.
pub(super) fn unknown(entry: &Map<String, Value>) -> Vec<Unknown> {
    entry
        .keys()
        .filter(|key| !KNOWN.contains(&key.as_str()))
        .map(|key| Unknown {
            key: key.clone(),
            meant: nearest(key),
        })
        .collect()
}

/// For an entry with neither `command` nor `url`: the unknown key that
/// was probably meant as one of them, or else the unknown keys, in
/// parentheses to end the error (`""` when the entry has no unknown key).
pub(super) fn meant_command_or_url(entry: &Map<String, Value>) -> String {
    let unknown = unknown(entry);
    let typo = unknown.iter().find_map(|u| match u.meant {
        Some(meant @ ("command" | "url")) => Some((meant, &u.key)),
        _ => None,
    });
    if let Some((meant, key)) = typo {
        return format!(" (did you mean {meant:?} for {key:?}?)");
    }
    if unknown.is_empty() {
        return String::new();
    }
    let keys: Vec<String> = unknown.iter().map(|u| format!("{:?}", u.key)).collect();
    format!(" (unknown keys: {})", keys.join(", "))
}

/// The known key nearest to `key` (case aside) by edit distance, if it is
/// within a third of the key's length (one edit for short keys).
fn nearest(key: &str) -> Option<&'static str> {
    let lower = key.to_ascii_lowercase();
    let most = (key.chars().count() / 3).max(1);
    KNOWN
        .iter()
        .map(|known| (edit_distance(&lower, &known.to_ascii_lowercase()), *known))
        .filter(|(distance, _)| *distance <= most)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, known)| known)
}

/// The edit distance between `a` and `b`, in characters: insertions,
/// deletions, substitutions, and swaps of two neighbours (optimal string
/// alignment).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // d[i][j]: the distance between a[..i] and b[..j].
    let mut d = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    d[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("comand", "command"), 1);
        assert_eq!(edit_distance("envs", "env"), 1);
        assert_eq!(edit_distance("commnad", "command"), 1);
        assert_eq!(edit_distance("ulr", "url"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "url"), 3);
        assert_eq!(edit_distance("url", "url"), 0);
    }

    #[test]
    fn typos_are_taken_for_the_nearest_known_key() {
        assert_eq!(nearest("comand"), Some("command"));
        assert_eq!(nearest("envs"), Some("env"));
        assert_eq!(nearest("URL"), Some("url"));
        assert_eq!(nearest("ulr"), Some("url"));
        assert_eq!(nearest("ars"), Some("args"));
        assert_eq!(nearest("disable"), Some("disabled"));
        assert_eq!(nearest("frobnicate"), None);
        assert_eq!(nearest("x"), None);
    }
}
