//! Single-value string tags such as `"type": "object"`, which must be
//! present with exactly one value.

/// Defines a unit struct that (de)serializes as exactly one string.
macro_rules! const_tag {
    ($(#[$doc:meta])* $name:ident = $value:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name;

        impl $name {
            /// The only value this tag takes.
            pub const VALUE: &'static str = $value;
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($value)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                if s == $value {
                    Ok($name)
                } else {
                    Err(serde::de::Error::invalid_value(
                        serde::de::Unexpected::Str(&s),
                        &concat!("\"", $value, "\""),
                    ))
                }
            }
        }
    };
}

const_tag!(
    /// The `"jsonrpc": "2.0"` member of every message.
    JsonRpcVersion = "2.0"
);
const_tag!(
    /// `"type": "object"` of a JSON Schema object.
    ObjectType = "object"
);
const_tag!(
    /// `"type": "string"` of a string or single-select schema.
    StringType = "string"
);
const_tag!(
    /// `"type": "boolean"` of a boolean schema.
    BooleanType = "boolean"
);
const_tag!(
    /// `"type": "array"` of a multi-select schema.
    ArrayType = "array"
);
