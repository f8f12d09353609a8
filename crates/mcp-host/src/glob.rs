//! Globs over names, as the settings file writes them (`*` any run of
//! characters, `?` one, `[abc]` one of a set, `{a,b}` either), matched
//! without a regular expression where they can be.

use globset::{Glob, GlobMatcher};

/// A glob, matched without a regular expression where it is a plain name,
/// a prefix (`abc*`), a suffix (`*abc`) or anything (`*`): most rules'
/// globs are, and every request reads every rule.
#[derive(Clone, Debug)]
pub(crate) struct Pattern {
    /// As written.
    pub(crate) text: String,
    how: Match,
}

#[derive(Clone, Debug)]
enum Match {
    Any,
    Exact,
    Prefix(String),
    Suffix(String),
    Glob(GlobMatcher),
}

impl Pattern {
    /// `glob`, compiled.
    pub(crate) fn new(glob: &str) -> Result<Pattern, globset::Error> {
        let special = |c: char| matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\');
        let plain = |s: &str| !s.contains(special);
        let how = if glob == "*" {
            Match::Any
        } else if plain(glob) {
            Match::Exact
        } else if let Some(start) = glob.strip_suffix('*').filter(|s| plain(s)) {
            Match::Prefix(start.to_owned())
        } else if let Some(end) = glob.strip_prefix('*').filter(|s| plain(s)) {
            Match::Suffix(end.to_owned())
        } else {
            Match::Glob(Glob::new(glob)?.compile_matcher())
        };
        Ok(Pattern {
            text: glob.to_owned(),
            how,
        })
    }

    /// Whether `text` matches.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        match &self.how {
            Match::Any => true,
            Match::Exact => text == self.text,
            Match::Prefix(start) => text.starts_with(start.as_str()),
            Match::Suffix(end) => text.ends_with(end.as_str()),
            Match::Glob(glob) => glob.is_match(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quick_patterns_match_as_their_globs_do() {
        let globs = [
            "*",
            "memory",
            "delete_*",
            "*_file",
            "mem*ry",
            "a?c",
            "{a,b}",
            "file:///tmp/*",
            "x[1]",
        ];
        let texts = [
            "",
            "memory",
            "delete_entities",
            "delete_",
            "read_file",
            "file",
            "memry",
            "abc",
            "a",
            "b",
            "file:///tmp/a/b",
            "x1",
            "x[1]",
            "MEMORY",
        ];
        for glob in globs {
            let quick = Pattern::new(glob).unwrap();
            let full = Glob::new(glob).unwrap().compile_matcher();
            for text in texts {
                assert_eq!(
                    quick.is_match(text),
                    full.is_match(text),
                    "{glob} on {text:?}"
                );
            }
        }
        assert!(matches!(
            Pattern::new("delete_*").unwrap().how,
            Match::Prefix(_)
        ));
        assert!(matches!(Pattern::new("memory").unwrap().how, Match::Exact));
    }
}
