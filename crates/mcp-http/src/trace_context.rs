//! W3C trace context (`traceparent`, `tracestate`) in HTTP headers, both
//! ways. The endpoint hands a request's trace context headers to handlers
//! with its messages ([`TraceContext`] in
//! [`mcp_core::RequestContext::extensions`]), and the client sends the
//! trace context a request's `_meta` carries (the 2026-07-28 convention)
//! as headers too, so that proxies and HTTP tracing between the two see
//! the same trace.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue};
use mcp_core::Extensions;
use serde::Deserialize;
use serde_json::value::RawValue;

/// The `traceparent` header.
pub const TRACEPARENT: &str = "traceparent";
/// The `tracestate` header.
pub const TRACESTATE: &str = "tracestate";

/// A trace context as the W3C headers carry it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceContext {
    /// `traceparent`: version, trace id, parent span id, flags.
    pub traceparent: String,
    /// `tracestate`: vendors' entries, if any.
    pub tracestate: Option<String>,
}

impl TraceContext {
    /// The trace context of headers `traceparent` and `tracestate`, if the
    /// first is there and is text.
    pub(crate) fn from_headers(
        traceparent: Option<&HeaderValue>,
        tracestate: Option<&HeaderValue>,
    ) -> Option<TraceContext> {
        let traceparent = traceparent?.to_str().ok()?.to_owned();
        let tracestate = tracestate.and_then(|v| v.to_str().ok()).map(str::to_owned);
        Some(TraceContext {
            traceparent,
            tracestate,
        })
    }

    /// The trace context in request params' `_meta`, if there is one (the
    /// params' text is searched before it is parsed).
    pub(crate) fn from_params(params: Option<&RawValue>) -> Option<TraceContext> {
        #[derive(Deserialize)]
        struct Probe {
            #[serde(rename = "_meta", default)]
            meta: Option<Meta>,
        }
        #[derive(Deserialize)]
        struct Meta {
            #[serde(default)]
            traceparent: Option<String>,
            #[serde(default)]
            tracestate: Option<String>,
        }
        let params = params.filter(|p| p.get().contains("\"traceparent\""))?;
        let meta = serde_json::from_str::<Probe>(params.get()).ok()?.meta?;
        Some(TraceContext {
            traceparent: meta.traceparent?,
            tracestate: meta.tracestate,
        })
    }

    /// Adds it to `headers` (a value that cannot be a header is left out).
    pub(crate) fn insert_into(&self, headers: &mut HeaderMap) {
        if let Ok(value) = HeaderValue::from_str(&self.traceparent) {
            headers.insert(TRACEPARENT, value);
            if let Some(value) = (self.tracestate.as_deref()).and_then(|s| s.parse().ok()) {
                headers.insert(TRACESTATE, value);
            }
        }
    }
}

/// `extensions` with the trace context of headers `traceparent` and
/// `tracestate` among them, where the request has one.
pub(crate) fn attach(
    traceparent: Option<&HeaderValue>,
    tracestate: Option<&HeaderValue>,
    extensions: Option<Arc<Extensions>>,
) -> Option<Arc<Extensions>> {
    let Some(trace) = TraceContext::from_headers(traceparent, tracestate) else {
        return extensions;
    };
    let extensions = extensions.unwrap_or_default();
    extensions.insert(trace);
    Some(extensions)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn the_trace_context_of_params_is_found_and_put_in_headers() {
        let params = RawValue::from_string(format!(
            r#"{{"name":"t","_meta":{{"traceparent":"{PARENT}","tracestate":"a=1"}}}}"#
        ))
        .unwrap();
        let found = TraceContext::from_params(Some(&params)).unwrap();
        let mut headers = HeaderMap::new();
        found.insert_into(&mut headers);
        assert_eq!(headers[TRACEPARENT], PARENT);
        assert_eq!(headers[TRACESTATE], "a=1");
        let back = TraceContext::from_headers(headers.get(TRACEPARENT), headers.get(TRACESTATE));
        assert_eq!(back, Some(found));
    }

    #[test]
    fn params_without_one_or_with_it_elsewhere_have_none() {
        let none = RawValue::from_string(r#"{"name":"t","arguments":{}}"#.into()).unwrap();
        assert_eq!(TraceContext::from_params(Some(&none)), None);
        let in_arguments = RawValue::from_string(
            r#"{"name":"t","arguments":{"traceparent":"x"},"_meta":{}}"#.into(),
        )
        .unwrap();
        assert_eq!(TraceContext::from_params(Some(&in_arguments)), None);
        assert_eq!(TraceContext::from_params(None), None);
    }
}
