//! Elicitation: the server asks the user for input, through a form
//! (2025-06-18 onwards) or by sending them to a URL (2025-11-25 onwards).

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::{ArrayType, BooleanType, Meta, ObjectType, StringType, TaskMetadata};

/// The mode of an elicitation request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitationMode {
    /// In-band structured input (the default when `mode` is absent).
    #[default]
    Form,
    /// Out-of-band interaction at a URL.
    Url,
}

/// Format of a [`StringSchema`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StringFormat {
    /// An e-mail address.
    Email,
    /// A URI.
    Uri,
    /// A date.
    Date,
    /// A date and time.
    DateTime,
}

/// A string field of an elicitation form.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub type_: StringType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Shortest length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Longest length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// Expected format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<StringFormat>,
    /// Default value (2025-11-25 onwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// Whether a [`NumberSchema`] takes any number or integers only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberType {
    /// Any number.
    #[default]
    Number,
    /// Integers only.
    Integer,
}

/// A number field of an elicitation form.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NumberSchema {
    /// `"number"` or `"integer"`.
    #[serde(rename = "type")]
    pub type_: NumberType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Smallest value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::num::opt_f64"
    )]
    pub minimum: Option<f64>,
    /// Largest value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::num::opt_f64"
    )]
    pub maximum: Option<f64>,
    /// Default value (2025-11-25 onwards).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::num::opt_f64"
    )]
    pub default: Option<f64>,
}

/// A boolean field of an elicitation form.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BooleanSchema {
    /// Always `"boolean"`.
    #[serde(rename = "type")]
    pub type_: BooleanType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
}

/// One choice of a titled enum: a value and its label.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledEnumOption {
    /// The value.
    #[serde(rename = "const")]
    pub const_: String,
    /// The label.
    pub title: String,
}

/// Single choice among plain values (2025-11-25 onwards).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledSingleSelectEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub type_: StringType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The values.
    #[serde(rename = "enum")]
    pub enum_: Vec<String>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// Single choice among labelled values (2025-11-25 onwards).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledSingleSelectEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub type_: StringType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    pub one_of: Vec<TitledEnumOption>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// The `items` of an [`UntitledMultiSelectEnumSchema`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledEnumItems {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub type_: StringType,
    /// The values.
    #[serde(rename = "enum")]
    pub enum_: Vec<String>,
}

/// The `items` of a [`TitledMultiSelectEnumSchema`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledEnumItems {
    /// The choices.
    pub any_of: Vec<TitledEnumOption>,
}

/// Multiple choice among plain values (2025-11-25 onwards).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledMultiSelectEnumSchema {
    /// Always `"array"`.
    #[serde(rename = "type")]
    pub type_: ArrayType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fewest choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The values.
    pub items: UntitledEnumItems,
    /// Default choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
}

/// Multiple choice among labelled values (2025-11-25 onwards).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledMultiSelectEnumSchema {
    /// Always `"array"`.
    #[serde(rename = "type")]
    pub type_: ArrayType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fewest choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The choices.
    pub items: TitledEnumItems,
    /// Default choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
}

/// Single choice with parallel `enumNames` labels: the 2025-06-18
/// `EnumSchema`, deprecated later as `LegacyTitledEnumSchema`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyTitledEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub type_: StringType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The values.
    #[serde(rename = "enum")]
    pub enum_: Vec<String>,
    /// Labels, parallel to `enum`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// The 2025-06-18 name of [`LegacyTitledEnumSchema`].
pub type EnumSchema = LegacyTitledEnumSchema;

/// Any field of an elicitation form. Told apart by `type` and by which of
/// `oneOf`, `enumNames`, `enum`, `items.anyOf` is present.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PrimitiveSchemaDefinition {
    /// A string.
    String(StringSchema),
    /// A number or an integer.
    Number(NumberSchema),
    /// A boolean.
    Boolean(BooleanSchema),
    /// Single choice among plain values.
    UntitledSingleSelectEnum(UntitledSingleSelectEnumSchema),
    /// Single choice among labelled values.
    TitledSingleSelectEnum(TitledSingleSelectEnumSchema),
    /// Multiple choice among plain values.
    UntitledMultiSelectEnum(UntitledMultiSelectEnumSchema),
    /// Multiple choice among labelled values.
    TitledMultiSelectEnum(TitledMultiSelectEnumSchema),
    /// Single choice with `enumNames` labels.
    LegacyTitledEnum(LegacyTitledEnumSchema),
}

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        let has = |key: &str| value.get(key).is_some();
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        let parsed = match kind {
            "boolean" => serde_json::from_value(value).map(Self::Boolean),
            "number" | "integer" => serde_json::from_value(value).map(Self::Number),
            "array" => {
                if value.get("items").and_then(|i| i.get("anyOf")).is_some() {
                    serde_json::from_value(value).map(Self::TitledMultiSelectEnum)
                } else {
                    serde_json::from_value(value).map(Self::UntitledMultiSelectEnum)
                }
            }
            "string" if has("oneOf") => {
                serde_json::from_value(value).map(Self::TitledSingleSelectEnum)
            }
            "string" if has("enumNames") => {
                serde_json::from_value(value).map(Self::LegacyTitledEnum)
            }
            "string" if has("enum") => {
                serde_json::from_value(value).map(Self::UntitledSingleSelectEnum)
            }
            "string" => serde_json::from_value(value).map(Self::String),
            other => {
                return Err(D::Error::custom(format!(
                    "unsupported elicitation field type {other:?}"
                )));
            }
        };
        parsed.map_err(D::Error::custom)
    }
}

/// The `requestedSchema` of a form elicitation: a flat object of primitive fields.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationSchema {
    /// The JSON Schema dialect, if given.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `"object"`.
    #[serde(rename = "type")]
    pub type_: ObjectType,
    /// The fields, by name, in the order the server wrote them: the order
    /// a form asks them in.
    pub properties: IndexMap<String, PrimitiveSchemaDefinition>,
    /// Names of the fields that must be filled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
}

/// Params of a form-mode `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestFormParams {
    /// Request metadata (legacy era).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `form` when present (2025-11-25 onwards); absent means form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ElicitationMode>,
    /// What to ask the user.
    pub message: String,
    /// The form.
    pub requested_schema: ElicitationSchema,
    /// Run the request as a task (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
}

impl ElicitRequestFormParams {
    /// A form request with an explicit `mode: form`.
    pub fn new(message: impl Into<String>, requested_schema: ElicitationSchema) -> Self {
        ElicitRequestFormParams {
            mode: Some(ElicitationMode::Form),
            message: message.into(),
            requested_schema,
            ..Default::default()
        }
    }
}

/// Params of a URL-mode `elicitation/create` (2025-11-25 onwards).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestURLParams {
    /// Request metadata (legacy era).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Always `url`.
    pub mode: ElicitationMode,
    /// Why the user should go there.
    pub message: String,
    /// Where the user should go.
    pub url: String,
    /// Identifies the elicitation (required in 2025-11-25, absent in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    /// Run the request as a task (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
}

impl ElicitRequestURLParams {
    /// A URL request.
    pub fn new(message: impl Into<String>, url: impl Into<String>) -> Self {
        ElicitRequestURLParams {
            mode: ElicitationMode::Url,
            message: message.into(),
            url: url.into(),
            ..Default::default()
        }
    }
}

/// Params of `elicitation/create`: a form or a URL, told apart by `mode`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ElicitRequestParams {
    /// Form mode (`mode` absent or `form`).
    Form(ElicitRequestFormParams),
    /// URL mode (`mode: url`).
    Url(ElicitRequestURLParams),
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        /// Every member of either mode, read in one pass: typed as they
        /// come (not through a `Value`, which would sort them), so that a
        /// form's fields keep the order the server wrote them in.
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Either {
            #[serde(rename = "_meta", default)]
            meta: Option<Meta>,
            #[serde(default)]
            mode: Option<ElicitationMode>,
            message: String,
            #[serde(default)]
            requested_schema: Option<ElicitationSchema>,
            #[serde(default)]
            url: Option<String>,
            #[serde(default)]
            elicitation_id: Option<String>,
            #[serde(default)]
            task: Option<TaskMetadata>,
        }
        let either = Either::deserialize(d)?;
        if either.mode == Some(ElicitationMode::Url) {
            return Ok(Self::Url(ElicitRequestURLParams {
                meta: either.meta,
                mode: ElicitationMode::Url,
                message: either.message,
                url: either.url.ok_or_else(|| D::Error::missing_field("url"))?,
                elicitation_id: either.elicitation_id,
                task: either.task,
            }));
        }
        Ok(Self::Form(ElicitRequestFormParams {
            meta: either.meta,
            mode: either.mode,
            message: either.message,
            requested_schema: either
                .requested_schema
                .ok_or_else(|| D::Error::missing_field("requestedSchema"))?,
            task: either.task,
        }))
    }
}

impl From<ElicitRequestFormParams> for ElicitRequestParams {
    fn from(p: ElicitRequestFormParams) -> Self {
        ElicitRequestParams::Form(p)
    }
}

impl From<ElicitRequestURLParams> for ElicitRequestParams {
    fn from(p: ElicitRequestURLParams) -> Self {
        ElicitRequestParams::Url(p)
    }
}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// The user submitted (form: `content` holds the data).
    Accept,
    /// The user explicitly declined.
    Decline,
    /// The user dismissed without choosing.
    Cancel,
}

/// One submitted form value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ElicitValue {
    /// A boolean.
    Bool(bool),
    /// An integer.
    Integer(i64),
    /// A non-integer number.
    Number(#[serde(serialize_with = "crate::num::f64")] f64),
    /// A string.
    String(String),
    /// The choices of a multi-select (2025-11-25 onwards).
    Strings(Vec<String>),
}

/// Result of `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitResult {
    /// Result metadata (legacy era).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted data (form mode, `accept` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<BTreeMap<String, ElicitValue>>,
}

impl ElicitResult {
    /// The user submitted `content`.
    pub fn accept(content: BTreeMap<String, ElicitValue>) -> Self {
        ElicitResult {
            meta: None,
            action: ElicitAction::Accept,
            content: Some(content),
        }
    }

    /// The user declined.
    pub fn decline() -> Self {
        ElicitResult {
            meta: None,
            action: ElicitAction::Decline,
            content: None,
        }
    }

    /// The user dismissed the request.
    pub fn cancel() -> Self {
        ElicitResult {
            meta: None,
            action: ElicitAction::Cancel,
            content: None,
        }
    }
}

/// Params of `notifications/elicitation/complete` (2025-11-25).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleteNotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The completed URL elicitation.
    pub elicitation_id: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forms_fields_keep_the_order_they_came_in() {
        let text = r#"{"message": "m", "requestedSchema": {"type": "object", "properties": {
            "zeta": {"type": "string"}, "alpha": {"type": "integer"}, "mid": {"type": "boolean"}}}}"#;
        let ElicitRequestParams::Form(form) = serde_json::from_str(text).expect("a form") else {
            panic!("not read as a form");
        };
        let names: Vec<&str> = form
            .requested_schema
            .properties
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(names, ["zeta", "alpha", "mid"]);
        let again = serde_json::to_string(&form.requested_schema).expect("written");
        assert!(again.find("zeta") < again.find("alpha"), "{again}");
    }
}
