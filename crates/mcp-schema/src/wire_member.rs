//! The envelope members read as they are parsed: each takes a value of any
//! JSON type and says what it holds, so that one pass reads the envelope
//! and a wrong type becomes a precise -32600 rather than a failed parse.
//! [`RequestId`] itself is read through [`IdMember`], so an id has one rule
//! wherever it is read.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::request_id::RequestId;

/// What an envelope's `id` member holds.
#[derive(Debug, PartialEq)]
pub(crate) enum IdMember {
    /// A string or an integer that fits an `i64`.
    Id(RequestId),
    /// `null`, which only an error response may carry.
    Null,
    /// Anything else.
    Invalid,
}

/// What an envelope's `method` member holds: its name if it is a string.
#[derive(Debug, PartialEq)]
pub(crate) struct MethodMember(pub(crate) Option<String>);

/// Whether an envelope's `jsonrpc` member is the string `"2.0"`.
#[derive(Debug, PartialEq)]
pub(crate) struct VersionMember(pub(crate) bool);

/// A visitor for a member read from any JSON value: `read` maps the
/// value's kind to the member; arrays and objects are skipped.
struct AnyValue<T> {
    expecting: &'static str,
    read: fn(Scalar<'_>) -> T,
}

/// A scalar JSON value, or the mark of a compound one.
enum Scalar<'v> {
    /// An integer that fits an `i64`; larger ones are `Other`.
    Integer(i64),
    Str(&'v str),
    Null,
    Other,
}

impl<T> AnyValue<T> {
    fn read<'de, D: Deserializer<'de>>(
        deserializer: D,
        expecting: &'static str,
        read: fn(Scalar<'_>) -> T,
    ) -> Result<T, D::Error> {
        deserializer.deserialize_any(AnyValue { expecting, read })
    }
}

impl<'de, T> Visitor<'de> for AnyValue<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<T, E> {
        Ok((self.read)(Scalar::Other))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        Ok((self.read)(Scalar::Integer(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        let scalar = i64::try_from(v).map_or(Scalar::Other, Scalar::Integer);
        Ok((self.read)(scalar))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<T, E> {
        Ok((self.read)(Scalar::Other))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        Ok((self.read)(Scalar::Str(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Ok((self.read)(Scalar::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok((self.read)(Scalar::Other))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok((self.read)(Scalar::Other))
    }
}

impl<'de> Deserialize<'de> for IdMember {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        AnyValue::read(deserializer, "a request id", |value| match value {
            Scalar::Integer(n) => IdMember::Id(RequestId::Number(n)),
            Scalar::Str(s) => IdMember::Id(RequestId::String(s.into())),
            Scalar::Null => IdMember::Null,
            Scalar::Other => IdMember::Invalid,
        })
    }
}

impl<'de> Deserialize<'de> for MethodMember {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        AnyValue::read(deserializer, "a method name", |value| match value {
            Scalar::Str(s) => MethodMember(Some(s.to_owned())),
            _ => MethodMember(None),
        })
    }
}

impl<'de> Deserialize<'de> for VersionMember {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        AnyValue::read(deserializer, "\"2.0\"", |value| {
            VersionMember(matches!(value, Scalar::Str("2.0")))
        })
    }
}

/// Read by the same rule as an envelope's `id`: a string, or an integer
/// that fits an `i64`.
impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match IdMember::deserialize(deserializer)? {
            IdMember::Id(id) => Ok(id),
            IdMember::Null | IdMember::Invalid => Err(serde::de::Error::custom(
                "a request id must be a string or an integer",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> IdMember {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn ids_are_strings_and_integers_that_fit() {
        assert_eq!(id("7"), IdMember::Id(RequestId::Number(7)));
        assert_eq!(id("-7"), IdMember::Id(RequestId::Number(-7)));
        assert_eq!(
            id(r#""a\"b""#),
            IdMember::Id(RequestId::String("a\"b".into()))
        );
        assert_eq!(id("null"), IdMember::Null);
        for invalid in [
            "1.5",
            "1e3",
            "18446744073709551615",
            "true",
            "[1]",
            r#"{"a":[1]}"#,
        ] {
            assert_eq!(id(invalid), IdMember::Invalid, "{invalid}");
        }
    }

    #[test]
    fn methods_and_versions_are_strings() {
        let method = |text| serde_json::from_str::<MethodMember>(text).unwrap().0;
        assert_eq!(method(r#""tools\/call""#).as_deref(), Some("tools/call"));
        assert_eq!(method("3"), None);
        assert_eq!(method(r#"{"m":"x"}"#), None);
        let version = |text| serde_json::from_str::<VersionMember>(text).unwrap().0;
        assert!(version(r#""2.0""#));
        assert!(!version("2.0"));
        assert!(!version(r#""2.1""#));
        assert!(!version(r#"["2.0"]"#));
    }

    #[test]
    fn malformed_compound_values_are_still_syntax_errors() {
        assert!(
            serde_json::from_str::<IdMember>("[1,")
                .unwrap_err()
                .is_eof()
        );
        assert!(
            serde_json::from_str::<MethodMember>("{1:2}")
                .unwrap_err()
                .is_syntax()
        );
    }
}
