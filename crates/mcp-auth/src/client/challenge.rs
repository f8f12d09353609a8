//! `WWW-Authenticate: Bearer ...` challenges (RFC 6750, RFC 9728 §5.1).

use std::collections::HashMap;

/// The parameters of a Bearer challenge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// `resource_metadata`: where the protected resource metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs.
    pub scope: Option<String>,
    /// `error`, e.g. `invalid_token` or `insufficient_scope`.
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
}

impl BearerChallenge {
    /// Reads the Bearer challenge of a `WWW-Authenticate` header (other
    /// schemes in the same header are skipped); `None` without one.
    pub fn parse(header: &str) -> Option<BearerChallenge> {
        let params = bearer_params(header)?;
        let get = |k: &str| params.get(k).cloned();
        Some(BearerChallenge {
            resource_metadata: get("resource_metadata"),
            scope: get("scope"),
            error: get("error"),
            error_description: get("error_description"),
        })
    }

    /// The scopes asked for, split.
    pub fn scopes(&self) -> Vec<String> {
        self.scope
            .as_deref()
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    }
}

/// The `key=value` parameters after `Bearer`, keys lowercased.
fn bearer_params(header: &str) -> Option<HashMap<String, String>> {
    // DPoP challenges (RFC 9449) carry the same parameters.
    let (start, scheme) = find_scheme(header, "bearer")
        .map(|s| (s, "bearer"))
        .or_else(|| find_scheme(header, "dpop").map(|s| (s, "dpop")))?;
    let mut rest = &header[start + scheme.len()..];
    let mut params = HashMap::new();
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].trim();
        if key.is_empty() || key.contains(' ') {
            // The next scheme begins (`Basic realm=...`).
            break;
        }
        rest = rest[eq + 1..].trim_start();
        let value;
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            out.push(escaped);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => out.push(c),
                }
            }
            value = out;
            rest = &quoted[end.min(quoted.len())..];
        } else {
            let end = rest.find([',', ' ']).unwrap_or(rest.len());
            value = rest[..end].to_owned();
            rest = &rest[end..];
        }
        params.insert(key.to_ascii_lowercase(), value);
    }
    Some(params)
}

/// Where the scheme `name` starts (case-insensitive, as a whole word).
fn find_scheme(header: &str, name: &str) -> Option<usize> {
    let lower = header.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(name) {
        let at = from + i;
        let before_ok = at == 0
            || lower.as_bytes()[at - 1].is_ascii_whitespace()
            || lower.as_bytes()[at - 1] == b',';
        let after = lower.as_bytes().get(at + name.len());
        let after_ok = after.is_none_or(|b| b.is_ascii_whitespace());
        if before_ok && after_ok {
            return Some(at);
        }
        from = at + name.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_quoted_and_bare_parameters() {
        let c = BearerChallenge::parse(
            r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#,
        )
        .unwrap();
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scopes(), ["files:read", "files:write"]);
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
        );
        let bare = BearerChallenge::parse("bearer error=invalid_token,scope=a").unwrap();
        assert_eq!(bare.error.as_deref(), Some("invalid_token"));
        assert_eq!(bare.scope.as_deref(), Some("a"));
    }

    #[test]
    fn finds_bearer_among_other_schemes() {
        let c = BearerChallenge::parse(r#"Basic realm="x", Bearer scope="s""#).unwrap();
        assert_eq!(c.scope.as_deref(), Some("s"));
        assert_eq!(BearerChallenge::parse(r#"Basic realm="x""#), None);
        let escaped = BearerChallenge::parse(r#"Bearer error_description="say \"hi\"""#).unwrap();
        assert_eq!(escaped.error_description.as_deref(), Some(r#"say "hi""#));
    }
}
