//! Argument completion: a completer suggests values for what the user has
//! typed so far, given the other arguments already chosen.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Suggests values for `(typed so far, other arguments)`.
pub type Completer = Arc<dyn Fn(&str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync>;

/// A completer offering the values of a fixed list that start with what was
/// typed (case-insensitive).
pub fn from_values<I, S>(values: I) -> Completer
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let values: Vec<String> = values.into_iter().map(Into::into).collect();
    Arc::new(move |typed: &str, _: &BTreeMap<String, String>| {
        let typed = typed.to_lowercase();
        values
            .iter()
            .filter(|v| v.to_lowercase().starts_with(&typed))
            .cloned()
            .collect()
    })
}
