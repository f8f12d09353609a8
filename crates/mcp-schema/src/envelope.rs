//! Typed JSON-RPC envelopes, for building or checking whole messages with
//! typed params or results. The session engine itself uses the raw
//! [`crate::jsonrpc::Message`].

use serde::{Deserialize, Serialize};

use crate::{ErrorObject, JsonRpcVersion, RequestId};

/// A request with typed params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcRequest<P> {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The request id.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The params; `None` when absent.
    #[serde(default = "none", skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

impl<P> JsonRpcRequest<P> {
    /// A request `method` with `params`.
    pub fn new(id: impl Into<RequestId>, method: impl Into<String>, params: P) -> Self {
        JsonRpcRequest {
            jsonrpc: JsonRpcVersion,
            id: id.into(),
            method: method.into(),
            params: Some(params),
        }
    }
}

/// A notification with typed params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcNotification<P> {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The method name.
    pub method: String,
    /// The params; `None` when absent.
    #[serde(default = "none", skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

impl<P> JsonRpcNotification<P> {
    /// A notification `method` with `params`.
    pub fn new(method: impl Into<String>, params: P) -> Self {
        JsonRpcNotification {
            jsonrpc: JsonRpcVersion,
            method: method.into(),
            params: Some(params),
        }
    }
}

/// A successful response with a typed result (`JSONRPCResultResponse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcResultResponse<R> {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result.
    pub result: R,
}

impl<R> JsonRpcResultResponse<R> {
    /// A response to `id` carrying `result`.
    pub fn new(id: impl Into<RequestId>, result: R) -> Self {
        JsonRpcResultResponse {
            jsonrpc: JsonRpcVersion,
            id: id.into(),
            result,
        }
    }
}

/// An error response (`JSONRPCErrorResponse`); the id is null when unknown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcErrorResponse {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request this answers; omitted when unknown (the
    /// 2026-07-28 schema allows no `null` id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<RequestId>,
    /// What went wrong.
    pub error: ErrorObject,
}

impl JsonRpcErrorResponse {
    /// An error response to `id`.
    pub fn new(id: Option<RequestId>, error: ErrorObject) -> Self {
        JsonRpcErrorResponse {
            jsonrpc: JsonRpcVersion,
            id,
            error,
        }
    }
}

fn none<T>() -> Option<T> {
    None
}
