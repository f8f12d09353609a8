//! Looking for a fixed piece of text (a quoted key, say) in raw JSON: a
//! quick test that spares a parse when the answer is no.

use std::sync::OnceLock;

use memchr::memmem::Finder;

/// A fixed needle, with its SIMD searcher built on first use; meant for a
/// `static`.
pub struct TextSearch {
    needle: &'static str,
    finder: OnceLock<Finder<'static>>,
}

impl TextSearch {
    /// A search for `needle`.
    pub const fn new(needle: &'static str) -> Self {
        TextSearch {
            needle,
            finder: OnceLock::new(),
        }
    }

    /// Where the needle first occurs in `text`.
    pub fn find(&self, text: &str) -> Option<usize> {
        self.finder
            .get_or_init(|| Finder::new(self.needle))
            .find(text.as_bytes())
    }

    /// Whether the needle occurs in `text`.
    pub fn is_in(&self, text: &str) -> bool {
        self.find(text).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_occurrence_or_none() {
        static KEY: TextSearch = TextSearch::new("\"_meta\"");
        assert_eq!(KEY.find(r#"{"a":1,"_meta":{},"_meta":2}"#), Some(7));
        assert!(KEY.is_in(r#"{"_meta":1}"#));
        assert!(!KEY.is_in(r#"{"meta":1,"_meta_":2}"#));
        assert!(!KEY.is_in(""));
    }
}
