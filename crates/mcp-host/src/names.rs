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

/// A namespace from a config entry's name: characters outside
/// `[A-Za-z0-9_-]` become `_`, runs of the separator are broken up, and
/// it is at most 32 characters; `server` if nothing is left.
pub fn sanitize_namespace(name: &str) -> String {
    let mut out: String = name
        .trim()
        .chars()
        .map(|c| if allowed(c) { c } else { '_' })
        .collect();
    // A namespace must not contain the separator, or splitting an exposed
    // name would be ambiguous to a person reading it.
    while out.contains(SEPARATOR) {
        out = out.replace(SEPARATOR, "_");
    }
    let out = out.trim_matches('_');
    let mut out: String = out.chars().take(32).collect();
    if out.is_empty() {
        out.push_str("server");
    }
    out
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
    let digest = Sha256::new()
        .chain_update(namespace.as_bytes())
        .chain_update([0])
        .chain_update(name.as_bytes())
        .finalize();
    let suffix: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
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
    fn namespaces_are_sanitized() {
        assert_eq!(sanitize_namespace("filesystem"), "filesystem");
        assert_eq!(sanitize_namespace("My Server!"), "My_Server");
        assert_eq!(sanitize_namespace("a__b"), "a_b");
        assert_eq!(sanitize_namespace("a___b"), "a_b");
        assert_eq!(sanitize_namespace("..."), "server");
        assert_eq!(sanitize_namespace(&"n".repeat(50)).len(), 32);
    }
}
