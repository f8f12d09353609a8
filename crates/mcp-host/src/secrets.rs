//! Secrets in what servers answer: private keys, the common shapes of API
//! keys and tokens, and the host's own configured secrets (the values of
//! its servers' secret-looking variables). Per server, a result that holds
//! one is passed on as it is (`off`, the default), with each one replaced
//! (`redact`), or refused (`block`).

use std::sync::LazyLock;

use regex::{Regex, RegexSet};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// What becomes of a result that holds a secret.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SecretScan {
    /// Results are not scanned.
    #[default]
    Off,
    /// Each secret is replaced by `[redacted: KIND]`.
    Redact,
    /// The result is refused.
    Block,
}

/// The shapes looked for, each with its name.
const SHAPES: &[(&str, &str)] = &[
    (
        "private key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?s:.*?)-----END [A-Z ]*PRIVATE KEY-----",
    ),
    ("AWS access key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    (
        "GitHub token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b",
    ),
    ("Slack token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),
    ("API key", r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}\b"),
    ("Stripe key", r"\b(?:sk|rk)_live_[A-Za-z0-9]{20,}\b"),
    ("Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    (
        "JSON Web Token",
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
];

static ANY: LazyLock<RegexSet> =
    LazyLock::new(|| RegexSet::new(SHAPES.iter().map(|(_, shape)| *shape)).expect("valid shapes"));

static EACH: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    SHAPES
        .iter()
        .map(|(name, shape)| (*name, Regex::new(shape).expect("a valid shape")))
        .collect()
});

/// The shortest value of a variable that counts as a secret of the
/// host's own.
const SHORTEST_OWN: usize = 8;

/// Whether variable `name`'s value is a secret of the host's own: its
/// name says token, secret, key, password or credential.
pub fn secret_name(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    [
        "TOKEN",
        "SECRET",
        "KEY",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// The kinds of secret `text` holds (`own` are the host's own secrets,
/// matched as they are), each once, in the order the shapes are listed.
pub fn found_in(text: &str, own: &[String]) -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = ANY
        .matches(text)
        .into_iter()
        .map(|index| SHAPES[index].0)
        .collect();
    if own
        .iter()
        .any(|secret| secret.len() >= SHORTEST_OWN && text.contains(secret.as_str()))
    {
        kinds.push("the host's own secret");
    }
    kinds
}

/// `result` with each secret in its strings replaced by
/// `[redacted: KIND]`, and the kinds replaced; `result` itself when it
/// holds none.
pub fn redact(result: Box<RawValue>, own: &[String]) -> (Box<RawValue>, Vec<&'static str>) {
    let kinds = found_in(result.get(), own);
    if kinds.is_empty() {
        return (result, kinds);
    }
    let Ok(mut value) = serde_json::from_str::<Value>(result.get()) else {
        return (result, kinds);
    };
    redact_value(&mut value, own);
    match serde_json::value::to_raw_value(&value) {
        Ok(redacted) => (redacted, kinds),
        Err(_) => (result, kinds),
    }
}

fn redact_value(value: &mut Value, own: &[String]) {
    match value {
        Value::String(text) => {
            for (name, shape) in EACH.iter() {
                if shape.is_match(text) {
                    *text = shape
                        .replace_all(text, format!("[redacted: {name}]").as_str())
                        .into_owned();
                }
            }
            for secret in own.iter().filter(|s| s.len() >= SHORTEST_OWN) {
                if text.contains(secret.as_str()) {
                    *text = text.replace(secret.as_str(), "[redacted: the host's own secret]");
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_value(v, own)),
        Value::Object(members) => members.values_mut().for_each(|v| redact_value(v, own)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(value: serde_json::Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(&value).unwrap()
    }

    #[test]
    fn each_shape_is_found_and_ordinary_text_is_not() {
        let samples = [
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaA\n-----END OPENSSH PRIVATE KEY-----",
                "private key",
            ),
            ("key AKIAIOSFODNN7EXAMPLE here", "AWS access key"),
            ("ghp_0123456789abcdefghijklmnopqrstuvwxyz", "GitHub token"),
            ("xoxb-123456789012-abcdefghij", "Slack token"),
            ("sk-proj-abcdefghijklmnopqrstuvwx", "API key"),
            ("AIzaSyA-abcdefghijklmnopqrstuvwxyz01234", "Google API key"),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "JSON Web Token",
            ),
        ];
        for (text, kind) in samples {
            assert_eq!(found_in(text, &[]), vec![kind], "{text}");
        }
        for ordinary in [
            "The sum is 42.",
            "sk-short",
            "AKIA lowercase",
            "eyJ alone",
            "skill-building",
        ] {
            assert!(found_in(ordinary, &[]).is_empty(), "{ordinary}");
        }
        let own = vec!["hunter2-but-longer".to_owned(), "short".to_owned()];
        assert_eq!(
            found_in("the password is hunter2-but-longer", &own),
            vec!["the host's own secret"]
        );
        assert!(
            found_in("a short word", &own).is_empty(),
            "too short to be one"
        );
        assert!(secret_name("GITHUB_TOKEN") && secret_name("api_key") && !secret_name("HOME"));
    }

    #[test]
    fn redacting_replaces_only_the_secrets_and_keeps_the_json() {
        let result = raw(serde_json::json!({
            "content": [{"type": "text", "text": "id AKIAIOSFODNN7EXAMPLE, and 42"}],
            "structuredContent": {"token": "ghp_0123456789abcdefghijklmnopqrstuvwxyz", "n": 1}
        }));
        let (redacted, kinds) = redact(result, &[]);
        assert_eq!(kinds, vec!["AWS access key", "GitHub token"]);
        let value: Value = serde_json::from_str(redacted.get()).unwrap();
        assert_eq!(
            value["content"][0]["text"],
            "id [redacted: AWS access key], and 42"
        );
        assert_eq!(
            value["structuredContent"]["token"],
            "[redacted: GitHub token]"
        );
        assert_eq!(value["structuredContent"]["n"], 1);
        let clean = raw(serde_json::json!({"content": []}));
        let text = clean.get().to_owned();
        let (same, none) = redact(clean, &[]);
        assert!(none.is_empty());
        assert_eq!(same.get(), text);
    }
}
