//! Multi-round-trip requests (2026-07-28): instead of sending requests to
//! the client, a server returns `input_required` with the requests it needs
//! answered; the client retries the original request with the answers.

use std::collections::BTreeMap;

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::to_raw_value;

use crate::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ListRootsResult, Meta, RequestParams, ResultType, methods,
};

/// One request the server needs the client to answer, tagged by `method`.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// `sampling/createMessage`.
    CreateMessage(CreateMessageRequestParams),
    /// `elicitation/create`.
    Elicit(ElicitRequestParams),
    /// `roots/list`; params are optional.
    ListRoots(Option<RequestParams>),
}

impl InputRequest {
    /// The method name of this request.
    pub fn method(&self) -> &'static str {
        match self {
            InputRequest::CreateMessage(_) => methods::SAMPLING_CREATE_MESSAGE,
            InputRequest::Elicit(_) => methods::ELICITATION_CREATE,
            InputRequest::ListRoots(_) => methods::ROOTS_LIST,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct WireInputRequest<P> {
    method: String,
    #[serde(default = "none", skip_serializing_if = "Option::is_none")]
    params: Option<P>,
}

fn none<T>() -> Option<T> {
    None
}

impl Serialize for InputRequest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // As text rather than `Value`, which would sort the members: a
        // form's fields go out in the order they were written.
        let params = match self {
            InputRequest::CreateMessage(p) => to_raw_value(p).map(Some),
            InputRequest::Elicit(p) => to_raw_value(p).map(Some),
            InputRequest::ListRoots(p) => p.as_ref().map(to_raw_value).transpose(),
        }
        .map_err(serde::ser::Error::custom)?;
        WireInputRequest {
            method: self.method().to_owned(),
            params,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(InputRequestVisitor)
    }
}

/// Reads an input request's members in one pass. Its params are typed as
/// they come when `method` came first (as it does on the wire), so that a
/// form's fields keep their order; params that come first wait as a
/// `Value`.
struct InputRequestVisitor;

impl<'de> serde::de::Visitor<'de> for InputRequestVisitor {
    type Value = InputRequest;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an input request object with a method")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<InputRequest, A::Error> {
        let mut method: Option<String> = None;
        let mut early: Option<Value> = None;
        let mut request: Option<InputRequest> = None;
        while let Some(key) = map.next_key::<String>()? {
            match (key.as_str(), method.as_deref()) {
                ("method", _) => method = Some(map.next_value()?),
                ("params", Some(method)) => {
                    request = Some(match method {
                        methods::SAMPLING_CREATE_MESSAGE => {
                            InputRequest::CreateMessage(map.next_value()?)
                        }
                        methods::ELICITATION_CREATE => InputRequest::Elicit(map.next_value()?),
                        methods::ROOTS_LIST => InputRequest::ListRoots(map.next_value()?),
                        other => return Err(unsupported(other)),
                    })
                }
                ("params", None) => early = Some(map.next_value()?),
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        let method = method.ok_or_else(|| A::Error::missing_field("method"))?;
        if let Some(request) = request {
            return Ok(request);
        }
        fn params<T: DeserializeOwned, E: serde::de::Error>(p: Option<Value>) -> Result<T, E> {
            serde_json::from_value(p.unwrap_or(Value::Object(Default::default())))
                .map_err(E::custom)
        }
        match method.as_str() {
            methods::SAMPLING_CREATE_MESSAGE => params(early).map(InputRequest::CreateMessage),
            methods::ELICITATION_CREATE => params(early).map(InputRequest::Elicit),
            methods::ROOTS_LIST => match early {
                None => Ok(InputRequest::ListRoots(None)),
                p => params(p).map(|p| InputRequest::ListRoots(Some(p))),
            },
            other => Err(unsupported(other)),
        }
    }
}

fn unsupported<E: serde::de::Error>(method: &str) -> E {
    E::custom(format!("unsupported input request method {method:?}"))
}

/// The requests of an `input_required` result, keyed by names the server chose.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// The client's answer to one [`InputRequest`]; told apart by which member
/// is present (`action`, `roots`, or `model`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum InputResponse {
    /// Answer to `sampling/createMessage`.
    CreateMessage(CreateMessageResult),
    /// Answer to `roots/list`.
    ListRoots(ListRootsResult),
    /// Answer to `elicitation/create`.
    Elicit(ElicitResult),
}

/// The client's answers, keyed like the [`InputRequests`] they answer.
pub type InputResponses = BTreeMap<String, InputResponse>;

/// A result saying the server needs input before it can complete the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Always `input_required`.
    pub result_type: ResultType,
    /// What the client must answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client echoes back on retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

impl InputRequiredResult {
    /// An `input_required` result asking `input_requests`.
    pub fn new(input_requests: InputRequests, request_state: Option<String>) -> Self {
        InputRequiredResult {
            meta: None,
            result_type: ResultType::InputRequired,
            input_requests: Some(input_requests),
            request_state,
        }
    }
}

/// The params members of a retried request (`InputResponseRequestParams`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputResponseRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The state echoed from the `input_required` result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

/// The result of a request that may need input (2026-07-28): either
/// `input_required` or the final result `T`. Decided by `resultType`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MaybeInputRequired<T> {
    /// The server needs input; retry with answers.
    InputRequired(InputRequiredResult),
    /// The final result.
    Complete(T),
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for MaybeInputRequired<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        if value.get("resultType").and_then(Value::as_str) == Some("input_required") {
            serde_json::from_value(value)
                .map(Self::InputRequired)
                .map_err(D::Error::custom)
        } else {
            serde_json::from_value(value)
                .map(Self::Complete)
                .map_err(D::Error::custom)
        }
    }
}
