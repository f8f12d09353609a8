//! Traces of the requests the host answers, where they are kept
//! ([`crate::HostOptions::traces`]; `mcp host` exports them over OTLP):
//! a span for each request as it arrives, its parent the caller's span
//! when the request's `_meta` carries a W3C `traceparent` (and
//! `tracestate`), the 2026-07-28 convention, or else when the HTTP request
//! that carried it has them as headers; and a span for each hop to a
//! server, whose context the server gets in the request's `_meta` in the
//! same form (and, over HTTP, in the headers too). The spans are `tracing` spans of target [`TARGET`], made
//! OpenTelemetry spans by the subscriber's `tracing-opentelemetry` layer.
//! Where traces are not kept, nothing here runs.

use mcp_http::TraceContext;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::{Map, Value};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The target of the host's spans, for a subscriber's filter.
pub const TARGET: &str = "mcp_host::traces";

/// Reads `traceparent` and `tracestate` from a request's `_meta`.
struct FromMeta<'a>(&'a Map<String, Value>);

impl Extractor for FromMeta<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// Reads them from the HTTP headers of the request.
struct FromHeaders<'a>(&'a TraceContext);

impl Extractor for FromHeaders<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(&self.0.traceparent),
            "tracestate" => self.0.tracestate.as_deref(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

/// Writes them into one.
struct IntoMeta<'a>(&'a mut Map<String, Value>);

impl Injector for IntoMeta<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), Value::String(value));
    }
}

/// The span of a request of `method` to `server` (and its tool, prompt or
/// resource `target`), the child of the caller's span its `_meta` names,
/// or else the one the HTTP request's `headers` name.
pub(crate) fn request_span(
    method: &str,
    server: Option<&str>,
    target: Option<&str>,
    meta: &Map<String, Value>,
    headers: Option<&TraceContext>,
) -> Span {
    let name = match target {
        Some(target) => format!("{method} {target}"),
        None => method.to_owned(),
    };
    let span = tracing::info_span!(
        target: TARGET,
        "mcp.request",
        otel.name = %name,
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        rpc.system = "mcp",
        rpc.method = %method,
        mcp.server = server.unwrap_or(""),
        mcp.target = target.unwrap_or(""),
        error.message = tracing::field::Empty,
    );
    let propagator = TraceContextPropagator::new();
    let parent = match headers {
        Some(headers) if !meta.contains_key("traceparent") => {
            propagator.extract(&FromHeaders(headers))
        }
        _ => propagator.extract(&FromMeta(meta)),
    };
    // A request without a (valid) parent starts a trace of its own.
    let _ = span.set_parent(parent);
    span
}

/// The span of a hop of `method` to `server`.
pub(crate) fn hop_span(server: &str, method: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "mcp.upstream",
        otel.name = %format!("{method} {server}"),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        rpc.system = "mcp",
        rpc.method = %method,
        mcp.server = %server,
        error.message = tracing::field::Empty,
    )
}

/// `meta` with `span`'s context as its `traceparent` (and `tracestate`),
/// in place of the caller's.
pub(crate) fn with_context(span: &Span, meta: &Map<String, Value>) -> Map<String, Value> {
    let mut meta = meta.clone();
    meta.remove("traceparent");
    meta.remove("tracestate");
    TraceContextPropagator::new().inject_context(&span.context(), &mut IntoMeta(&mut meta));
    meta
}

/// Marks `span` failed with `message`.
pub(crate) fn failed(span: &Span, message: &str) {
    span.record("otel.status_code", "ERROR");
    span.record("error.message", message);
}

/// `[traces]` in the settings file: where spans are exported.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct TracesSettings {
    /// The OTLP/HTTP collector, e.g. `http://127.0.0.1:4318` (spans go to
    /// its `/v1/traces`); unset: no traces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub otlp: Option<String>,
    /// `http/protobuf` (default) or `http/json`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The `service.name` of the spans (default `mcp-host`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// The share of traces kept, 0 to 1 (default 1); a caller's sampled
    /// flag wins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<f64>,
}

impl TracesSettings {
    /// Checks the values.
    pub fn check(&self) -> Result<(), String> {
        if let Some(url) = &self.otlp {
            let parsed = reqwest::Url::parse(url)
                .map_err(|e| format!("traces.otlp {url:?} is not a URL: {e}"))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(format!("traces.otlp {url:?} must be http or https"));
            }
        }
        if let Some(protocol) = &self.protocol
            && !matches!(protocol.as_str(), "http/protobuf" | "http/json")
        {
            return Err(format!(
                "traces.protocol {protocol:?} is neither http/protobuf nor http/json"
            ));
        }
        if let Some(sample) = self.sample
            && !(0.0..=1.0).contains(&sample)
        {
            return Err(format!("traces.sample must be in [0, 1], not {sample}"));
        }
        Ok(())
    }

    /// Where spans are sent: the collector's `/v1/traces`.
    pub fn endpoint(&self) -> Option<String> {
        let base = self.otlp.as_deref()?.trim_end_matches('/');
        Some(if base.ends_with("/v1/traces") {
            base.to_owned()
        } else {
            format!("{base}/v1/traces")
        })
    }
}
