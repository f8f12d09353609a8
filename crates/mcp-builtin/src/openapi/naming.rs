//! Tool names (SEP-986): 1 to 128 characters of `[A-Za-z0-9_.-]`. A name
//! is the operation's `operationId`, else its method and path
//! (`get_pet_petId`); any other character becomes `_`, and a name taken by
//! an earlier operation (in document order) gets `_2`, `_3`, ...

use std::collections::HashSet;

/// The longest tool name.
pub const MAX_LEN: usize = 128;

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

/// `raw` with every character outside the allowed set replaced by `_`
/// (runs of them by one), without leading or trailing `_` from
/// replacement, and cut to [`MAX_LEN`]; `operation` when nothing is left.
pub fn sanitize(raw: &str) -> String {
    // Each character of the name, and whether it replaced others.
    let mut chars: Vec<(char, bool)> = Vec::with_capacity(raw.len());
    for c in raw.chars() {
        if allowed(c) {
            chars.push((c, false));
        } else if chars.last() != Some(&('_', true)) {
            chars.push(('_', true));
        }
    }
    let start = chars.iter().position(|(_, r)| !r).unwrap_or(chars.len());
    let end = chars.iter().rposition(|(_, r)| !r).map_or(start, |i| i + 1);
    let mut name: String = chars[start..end.max(start)]
        .iter()
        .map(|(c, _)| c)
        .take(MAX_LEN)
        .collect();
    if name.is_empty() {
        name.push_str("operation");
    }
    name
}

/// The name of an operation before de-duplication.
pub fn base_name(operation_id: Option<&str>, method: &str, path: &str) -> String {
    match operation_id.filter(|id| !id.trim().is_empty()) {
        Some(id) => sanitize(id),
        None => {
            let mut raw = method.to_lowercase();
            for segment in path.split('/').filter(|s| !s.is_empty()) {
                raw.push('_');
                raw.extend(segment.chars().filter(|c| !matches!(c, '{' | '}')));
            }
            sanitize(&raw)
        }
    }
}

/// Makes `names` unique, in order: the first keeps its name, later ones
/// get the smallest free suffix `_N` (N from 2), cut to fit [`MAX_LEN`].
pub fn dedupe(names: Vec<String>) -> Vec<String> {
    let mut taken = HashSet::with_capacity(names.len());
    names
        .into_iter()
        .map(|name| {
            if taken.insert(name.clone()) {
                return name;
            }
            (2..)
                .map(|n| {
                    let suffix = format!("_{n}");
                    let keep = MAX_LEN - suffix.len();
                    let stem: String = name.chars().take(keep).collect();
                    stem + &suffix
                })
                .find(|candidate| taken.insert(candidate.clone()))
                .expect("some suffix is free")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_are_kept_when_valid() {
        assert_eq!(
            base_name(Some("getPetById"), "get", "/pet/{petId}"),
            "getPetById"
        );
        assert_eq!(base_name(Some("pets.list-v2"), "get", "/"), "pets.list-v2");
    }

    #[test]
    fn invalid_characters_become_underscores() {
        assert_eq!(sanitize("find pets (by tag)!"), "find_pets_by_tag");
        assert_eq!(sanitize("créer/animal"), "cr_er_animal");
        assert_eq!(sanitize("___"), "___");
        assert_eq!(sanitize("_x y_"), "_x_y_");
        assert_eq!(sanitize(" x "), "x");
        assert_eq!(sanitize("???"), "operation");
        assert_eq!(sanitize(""), "operation");
    }

    #[test]
    fn without_an_id_the_method_and_path_name_the_tool() {
        assert_eq!(base_name(None, "GET", "/pet/{petId}"), "get_pet_petId");
        assert_eq!(
            base_name(Some("  "), "delete", "/store/order/{orderId}"),
            "delete_store_order_orderId"
        );
        assert_eq!(base_name(None, "get", "/"), "get");
    }

    #[test]
    fn long_names_are_cut_to_128() {
        let long = "a".repeat(300);
        assert_eq!(sanitize(&long).len(), MAX_LEN);
        let names = dedupe(vec![long.clone(), long.clone()]);
        assert_eq!(names[1].len(), MAX_LEN);
        assert!(names[1].ends_with("_2"));
        assert_ne!(names[0], names[1]);
    }

    #[test]
    fn collisions_get_deterministic_suffixes() {
        let names = dedupe(vec![
            "list".into(),
            "list".into(),
            "list_2".into(),
            "list".into(),
        ]);
        assert_eq!(names, ["list", "list_2", "list_2_2", "list_3"]);
    }
}
