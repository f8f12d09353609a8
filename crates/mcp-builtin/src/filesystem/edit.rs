//! Applying `edit_file` edits: exact matching first, then line by line
//! ignoring leading and trailing whitespace; and the unified diff of the
//! result.

use similar::TextDiff;

/// One replacement.
#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Edit {
    /// The text to find: exactly, or line by line ignoring indentation and trailing spaces.
    pub old_text: String,
    /// The text to put in its place.
    pub new_text: String,
}

fn normalise_newlines(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// The leading whitespace of `line`.
fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// Applies `edits` in order to `content`; on failure, says which edit did
/// not match and why.
pub(crate) fn apply(content: &str, edits: &[Edit]) -> Result<String, String> {
    let mut content = normalise_newlines(content);
    for (index, edit) in edits.iter().enumerate() {
        let old = normalise_newlines(&edit.old_text);
        let new = normalise_newlines(&edit.new_text);
        let which = format!("edit {} of {}", index + 1, edits.len());
        if old.is_empty() {
            return Err(format!(
                "{which}: oldText is empty; give the text to replace"
            ));
        }
        if let Some(at) = content.find(&old) {
            content.replace_range(at..at + old.len(), &new);
            continue;
        }
        content = replace_loosely(&content, &old, &new)
            .ok_or_else(|| not_found(&content, &old, &which))?;
    }
    Ok(content)
}

/// Replaces the first run of lines equal to `old`'s lines once each is
/// trimmed, re-indenting `new` to the indentation found in the file.
fn replace_loosely(content: &str, old: &str, new: &str) -> Option<String> {
    let lines: Vec<&str> = content.split('\n').collect();
    let wanted: Vec<&str> = old.trim_end_matches('\n').split('\n').collect();
    let start = (0..lines.len().checked_sub(wanted.len())? + 1).find(|&start| {
        wanted
            .iter()
            .zip(&lines[start..])
            .all(|(want, have)| want.trim() == have.trim())
    })?;
    let file_indent = indent(lines[start]);
    let old_indent = indent(wanted[0]);
    let replacement: Vec<String> = new
        .trim_end_matches('\n')
        .split('\n')
        .map(|line| match line.strip_prefix(old_indent) {
            Some(rest) if !line.trim().is_empty() => format!("{file_indent}{rest}"),
            _ => line.to_owned(),
        })
        .collect();
    let mut out: Vec<String> = lines[..start].iter().map(|s| (*s).to_owned()).collect();
    out.extend(replacement);
    out.extend(
        lines[start + wanted.len()..]
            .iter()
            .map(|s| (*s).to_owned()),
    );
    Some(out.join("\n"))
}

/// Why `old` was not found: where its first line occurs, if anywhere.
fn not_found(content: &str, old: &str, which: &str) -> String {
    let first = old
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let near: Vec<String> = content
        .lines()
        .enumerate()
        .filter(|(_, line)| !first.is_empty() && line.contains(first))
        .take(3)
        .map(|(n, _)| (n + 1).to_string())
        .collect();
    let hint = if near.is_empty() {
        format!("its first line {first:?} does not occur in the file either")
    } else {
        format!(
            "its first line {first:?} occurs at line {}, but the lines after it differ",
            near.join(", ")
        )
    };
    format!(
        "{which} did not match: oldText is not in the file, exactly or line by line ignoring \
         indentation; {hint}. No edit was applied; read the file again and copy oldText from it"
    )
}

/// A unified diff of `before` and `after`, in a fenced block.
pub(crate) fn diff(path: &str, before: &str, after: &str) -> String {
    let before = normalise_newlines(before);
    let diff = TextDiff::from_lines(&before, after);
    let patch = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("{path}\toriginal"), &format!("{path}\tmodified"))
        .to_string();
    let body = format!(
        "Index: {path}\n===================================================================\n{patch}"
    );
    let mut fence = "```".to_owned();
    while body.contains(&fence) {
        fence.push('`');
    }
    format!("{fence}diff\n{body}{fence}\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str) -> Edit {
        Edit {
            old_text: old.into(),
            new_text: new.into(),
        }
    }

    #[test]
    fn an_exact_match_is_replaced() {
        let out = apply("a\nb\nc\n", &[edit("b\n", "B\n")]).unwrap();
        assert_eq!(out, "a\nB\nc\n");
    }

    #[test]
    fn a_match_ignoring_indentation_keeps_the_files_indentation() {
        let file = "fn f() {\n    let x = 1;\n    let y = 2;\n}\n";
        let out = apply(
            file,
            &[edit("let x = 1;\nlet y = 2;", "let x = 10;\nlet y = 20;")],
        )
        .unwrap();
        assert_eq!(out, "fn f() {\n    let x = 10;\n    let y = 20;\n}\n");
    }

    #[test]
    fn a_failed_edit_says_which_and_why() {
        let error = apply("one\ntwo\n", &[edit("one", "1"), edit("two\nthree", "x")]).unwrap_err();
        assert!(error.contains("edit 2 of 2 did not match"), "{error}");
        assert!(error.contains("occurs at line 2"), "{error}");
    }

    #[test]
    fn the_diff_is_unified() {
        let d = diff("f.txt", "a\nb\n", "a\nc\n");
        assert!(d.contains("--- f.txt\toriginal"), "{d}");
        assert!(d.contains("-b\n+c\n"), "{d}");
    }
}
