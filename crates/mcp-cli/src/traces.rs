//! Exporting the host's spans (see `mcp_host::traces`) over OTLP/HTTP,
//! where the settings file of `mcp host` says (`[traces] otlp`): an
//! OpenTelemetry tracer whose batches go to the collector from a thread of
//! their own, as a layer of the log's subscriber that sees the host's
//! spans only. Made before the async runtime starts (the exporter's HTTP
//! client blocks), and flushed when the program ends.

use std::time::Duration;

use anyhow::Result;
use mcp_host::traces::TracesSettings;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracer, SdkTracerProvider,
};
use tracing_opentelemetry::OpenTelemetryLayer;
use tracing_subscriber::Registry;

/// How long spans wait to be sent in a batch.
const BATCH_DELAY: Duration = Duration::from_secs(1);

/// The `[traces]` of the settings file of `mcp host` (`--settings`), if it
/// sets a collector; a file that cannot be read says nothing here (the
/// host says why when it starts).
pub fn settings_of(settings: Option<&std::path::Path>) -> Option<TracesSettings> {
    let traces = mcp_host::HostSettings::load(settings?).ok()?.traces;
    traces.otlp.is_some().then_some(traces)
}

/// The layer that exports the host's spans as `settings` say, and its
/// provider, to flush at the end ([`finish`]).
pub fn layer(
    settings: &TracesSettings,
) -> Result<(OpenTelemetryLayer<Registry, SdkTracer>, SdkTracerProvider)> {
    let endpoint = settings
        .endpoint()
        .ok_or_else(|| anyhow::anyhow!("traces.otlp is not set"))?;
    let protocol = match settings.protocol.as_deref() {
        Some("http/json") => Protocol::HttpJson,
        _ => Protocol::HttpBinary,
    };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(protocol)
        .with_endpoint(endpoint)
        .with_timeout(Duration::from_secs(10))
        .build()?;
    let batches = BatchSpanProcessor::builder(exporter)
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_scheduled_delay(BATCH_DELAY)
                .build(),
        )
        .build();
    let service = settings
        .service_name
        .clone()
        .unwrap_or_else(|| "mcp-host".into());
    let provider = SdkTracerProvider::builder()
        .with_span_processor(batches)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            settings.sample.unwrap_or(1.0),
        ))))
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name(service)
                .build(),
        )
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("mcp-host"));
    Ok((layer, provider))
}

/// Sends the spans still waiting and stops exporting (blocking: after
/// the async runtime is done).
pub fn finish(provider: SdkTracerProvider) {
    let _ = provider.shutdown();
}
