//! The names the host shows for upstream tools and prompts.
//!
//! A name is `<namespace>__<name>` (or the name alone in an empty
//! namespace) and always matches `^[A-Za-z0-9_-]{1,64}$`: stricter than
//! the specification, because some clients drop a whole server over one
//! name with a dot or a space, and some model APIs refuse them. A name
//! that does not fit is mapped deterministically: characters outside the
//! set become `_`, and a name that changed or is too long ends in `_` and
//! eight hex digits of a hash of the namespace and the original name. So
//! the same upstream name always gets the same exposed name, whatever
//! order servers load in.

use sha2::{Digest, Sha256};

/// The separator between namespace and name.
pub const SEPARATOR: &str = "__";

/// The longest exposed name.
pub const MAX_NAME: usize = 64;

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Whether `name` may be shown as it is.
pub fn is_valid(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME && name.chars().all(allowed)
}

/// The longest namespace.
pub const MAX_NAMESPACE: usize = 32;

/// A namespace from a config entry's name. A name of at most
/// [`MAX_NAMESPACE`] characters of `[A-Za-z0-9_-]`, without the separator
/// and not starting or ending in `_`, is kept as it is. Any other name
/// gets a readable prefix (characters outside the set become `_`, runs of
/// the separator are broken up; `server` if nothing is left) and `_` with
/// eight hex digits of a hash of the whole name: two different names never
/// share a namespace, however long, and the same name always gets the
/// same one.
pub fn sanitize_namespace(name: &str) -> String {
    let kept = name.len() <= MAX_NAMESPACE
        && name.chars().all(allowed)
        && !name.contains(SEPARATOR)
        && !name.starts_with('_')
        && !name.ends_with('_');
    if kept && !name.is_empty() {
        return name.to_owned();
    }
    let mut prefix: String = name
        .chars()
        .map(|c| if allowed(c) { c } else { '_' })
        .collect();
    // A namespace must not contain the separator, or splitting an exposed
    // name would be ambiguous to a person reading it.
    while prefix.contains(SEPARATOR) {
        prefix = prefix.replace(SEPARATOR, "_");
    }
    let suffix = short_hash(&[name.as_bytes()]);
    // ASCII after cleaning: byte length is character count.
    let room = MAX_NAMESPACE - 1 - suffix.len();
    let prefix = prefix.trim_matches('_');
    let prefix = prefix[..prefix.len().min(room)].trim_end_matches('_');
    let prefix = if prefix.is_empty() { "server" } else { prefix };
    format!("{prefix}_{suffix}")
}

/// Eight hex digits of a SHA-256 of `parts`, joined by a zero byte.
fn short_hash(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            hasher.update([0]);
        }
        hasher.update(part);
    }
    hasher.finalize()[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The exposed name of upstream `name` in `namespace`.
pub fn expose(namespace: &str, name: &str) -> String {
    let joined = if namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}{SEPARATOR}{name}")
    };
    if is_valid(&joined) {
        return joined;
    }
    let cleaned: String = joined
        .chars()
        .map(|c| if allowed(c) { c } else { '_' })
        .collect();
    let suffix = short_hash(&[namespace.as_bytes(), name.as_bytes()]);
    // ASCII after cleaning: byte length is character count.
    let keep = cleaned.len().min(MAX_NAME - 1 - suffix.len());
    format!("{}_{suffix}", &cleaned[..keep])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names_are_prefixed_and_left_alone() {
        assert_eq!(expose("fs", "read_file"), "fs__read_file");
        assert_eq!(expose("", "echo"), "echo");
        assert_eq!(expose("a-b", "X-1_y"), "a-b__X-1_y");
    }

    #[test]
    fn other_names_are_mapped_deterministically_and_fit() {
        let dotted = expose("git", "git.status");
        assert!(dotted.starts_with("git__git_status_"), "{dotted}");
        assert!(is_valid(&dotted));
        assert_eq!(dotted, expose("git", "git.status"), "same input, same name");
        // Two names that clean up alike still differ.
        assert_ne!(expose("git", "git.status"), expose("git", "git status"));
        let long = "x".repeat(100);
        let mapped = expose("ns", &long);
        assert_eq!(mapped.len(), MAX_NAME);
        assert!(is_valid(&mapped));
        assert_ne!(mapped, expose("ns", &"x".repeat(101)));
        let unicode = expose("", "résumé");
        assert!(is_valid(&unicode), "{unicode}");
        assert!(
            is_valid(&expose("", "")),
            "an empty name still maps to a valid one"
        );
    }

    #[test]
    fn valid_namespaces_are_kept() {
        assert_eq!(sanitize_namespace("filesystem"), "filesystem");
        assert_eq!(sanitize_namespace("a-b_C9"), "a-b_C9");
        assert_eq!(sanitize_namespace(&"n".repeat(32)), "n".repeat(32));
    }

    /// `^[A-Za-z0-9_-]{1,32}$`, without the separator or an `_` at an end.
    fn is_namespace(ns: &str) -> bool {
        is_valid(ns)
            && ns.len() <= MAX_NAMESPACE
            && !ns.contains(SEPARATOR)
            && !ns.starts_with('_')
            && !ns.ends_with('_')
    }

    #[test]
    fn other_namespaces_get_a_readable_prefix_and_a_hash_of_the_whole_name() {
        let spaced = sanitize_namespace("My Server!");
        assert!(spaced.starts_with("My_Server_"), "{spaced}");
        assert_eq!(spaced.len(), "My_Server_".len() + 8);
        assert_eq!(spaced, sanitize_namespace("My Server!"), "stable");
        assert_ne!(spaced, sanitize_namespace("My Server?"));
        assert!(sanitize_namespace("a__b").starts_with("a_b_"));
        assert!(sanitize_namespace("...").starts_with("server_"));
        assert_ne!(sanitize_namespace("..."), sanitize_namespace("!!!"));
        for name in ["My Server!", "a__b", "a___b", "...", "", "_x_", "résumé"] {
            let ns = sanitize_namespace(name);
            assert!(is_namespace(&ns), "{name:?} -> {ns:?}");
        }
    }

    #[test]
    fn long_names_sharing_a_start_get_different_namespaces() {
        let shared = "a-long-server-name-shared-by-two-entries";
        let one = sanitize_namespace(&format!("{shared}-one"));
        let two = sanitize_namespace(&format!("{shared}-two"));
        assert_ne!(one, two);
        for ns in [&one, &two] {
            assert!(is_namespace(ns), "{ns}");
            assert_eq!(ns.len(), MAX_NAMESPACE);
            assert!(ns.starts_with("a-long-server-name-shar"), "{ns}");
        }
        let exposed = expose(&one, &"t".repeat(40));
        assert!(is_valid(&exposed), "{exposed}");
    }
}
