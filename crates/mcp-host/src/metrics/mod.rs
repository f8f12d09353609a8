//! The host's metrics: what it counts as requests pass (see [`stats`]),
//! and a snapshot of them and of its servers' state written in the
//! Prometheus text format (OpenMetrics), for `/metrics` on the admin
//! listener.
//!
//! Every label value is bounded: servers are the configuration's, methods
//! a fixed list (others are `other`), tools only those the catalog has.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

pub mod stats;

pub use stats::{Counted, Outcome, RequestStats, Tally};

/// The states a server is in, as the `state` label says them.
pub const STATES: [&str; 5] = ["starting", "ready", "degraded", "restarting", "stopped"];

/// One server's part of a [`Snapshot`].
#[derive(Debug, Clone, Default)]
pub struct ServerMetrics {
    /// Its config name.
    pub name: String,
    /// Its state, one of [`STATES`].
    pub state: &'static str,
    /// Times it was started again.
    pub restarts: u64,
    /// Calls that failed on its side.
    pub failed_calls: u64,
    /// Notifications it sent faster than they could be handled.
    pub dropped_notifications: u64,
    /// Calls in flight on it now.
    pub in_flight: usize,
    /// Calls waiting for a free slot.
    pub waiting: usize,
    /// Seconds since its connection was made, while it has one.
    pub up_seconds: Option<f64>,
    /// Its requests by method, era and outcome.
    pub requests: Vec<Tally>,
    /// Their latency by method.
    pub latencies: Vec<stats::LatencyOf>,
    /// Its tool calls by tool and outcome.
    pub tool_calls: Vec<(String, &'static str, u64)>,
}

/// The audit log's counters.
#[derive(Debug, Clone, Copy, Default)]
pub struct AuditMetrics {
    /// Records written since the start.
    pub written: u64,
    /// Records waiting to be written.
    pub pending: u64,
    /// Records that could not be kept.
    pub lost: u64,
}

/// Everything `/metrics` shows, read at once.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Each server, in config order.
    pub servers: Vec<ServerMetrics>,
    /// The requests no server answered (lists, the host's own methods):
    /// shown with `server=""`.
    pub host: ServerMetrics,
    /// Legacy sessions open downstream.
    pub sessions: usize,
    /// 2026-07-28 `subscriptions/listen` streams open downstream.
    pub listen_streams: usize,
    /// Calls waiting for a person's answer.
    pub calls_asking: usize,
    /// Tools, resources and prompts in the catalog.
    pub catalog: [(&'static str, usize); 3],
    /// The audit log's counters, where there is one.
    pub audit: Option<AuditMetrics>,
}

impl Snapshot {
    /// The snapshot in the OpenMetrics text format (which Prometheus
    /// reads), ending with `# EOF`.
    pub fn encode(self) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self));
        let mut text = String::new();
        // Writing to a String does not fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
        text
    }
}

type Labels<'a> = Vec<(&'static str, &'a str)>;

/// Writes one metric family: `name` of `kind`, a value for each of
/// `samples`' label sets.
fn family<'a, V: EncodeMetric + 'a>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    samples: impl IntoIterator<Item = (Labels<'a>, V)>,
) -> std::fmt::Result {
    let mut samples = samples.into_iter().peekable();
    if samples.peek().is_none() {
        return Ok(());
    }
    let mut metric = encoder.encode_descriptor(name, help, None, kind)?;
    for (labels, value) in samples {
        value.encode(metric.encode_family(&labels)?)?;
    }
    Ok(())
}

fn counter(value: u64) -> ConstCounter<u64> {
    ConstCounter::new(value)
}

fn gauge(value: usize) -> ConstGauge<i64> {
    ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX))
}

/// A latency histogram, as a metric the encoder writes.
#[derive(Debug)]
struct Histogram<'a>(&'a stats::LatencyOf);

impl EncodeMetric for Histogram<'_> {
    fn encode(&self, mut encoder: prometheus_client::encoding::MetricEncoder) -> std::fmt::Result {
        encoder.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            self.0.sum,
            self.0.count,
            &self.0.buckets,
            None,
        )
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let all = || std::iter::once(&self.host).chain(&self.servers);
        let e = &mut encoder;
        family(
            e,
            "mcp_host_requests",
            "Requests answered, by server (empty: the host itself), method, client era and outcome",
            MetricType::Counter,
            all().flat_map(|server| {
                server.requests.iter().map(move |t| {
                    let labels = vec![
                        ("server", server.name.as_str()),
                        ("method", t.method),
                        ("era", t.era),
                        ("outcome", t.outcome),
                    ];
                    (labels, counter(t.count))
                })
            }),
        )?;
        family(
            e,
            "mcp_host_request_duration_seconds",
            "How long requests took to answer, by server and method",
            MetricType::Histogram,
            all().flat_map(|server| {
                server.latencies.iter().map(move |latency| {
                    let labels = vec![("server", server.name.as_str()), ("method", latency.method)];
                    (labels, Histogram(latency))
                })
            }),
        )?;
        family(
            e,
            "mcp_host_tool_calls",
            "Tool calls by server, tool (as the catalog shows it) and outcome",
            MetricType::Counter,
            self.servers.iter().flat_map(|server| {
                server.tool_calls.iter().map(move |(tool, outcome, count)| {
                    let labels = vec![
                        ("server", server.name.as_str()),
                        ("tool", tool.as_str()),
                        ("outcome", *outcome),
                    ];
                    (labels, counter(*count))
                })
            }),
        )?;
        family(
            e,
            "mcp_host_upstream_state",
            "1 for the state each server is in, 0 for the others",
            MetricType::Gauge,
            self.servers.iter().flat_map(|server| {
                STATES.iter().map(move |state| {
                    let labels = vec![("server", server.name.as_str()), ("state", *state)];
                    (labels, gauge(usize::from(server.state == *state)))
                })
            }),
        )?;
        let per_server = |e: &mut DescriptorEncoder,
                          name: &str,
                          help: &str,
                          kind: MetricType,
                          value: fn(&ServerMetrics) -> u64| {
            match kind {
                MetricType::Counter => family(
                    e,
                    name,
                    help,
                    kind,
                    self.servers
                        .iter()
                        .map(|s| (vec![("server", s.name.as_str())], counter(value(s)))),
                ),
                _ => family(
                    e,
                    name,
                    help,
                    kind,
                    self.servers.iter().map(|s| {
                        let v = usize::try_from(value(s)).unwrap_or(usize::MAX);
                        (vec![("server", s.name.as_str())], gauge(v))
                    }),
                ),
            }
        };
        per_server(
            e,
            "mcp_host_upstream_restarts",
            "Times each server was started again",
            MetricType::Counter,
            |s| s.restarts,
        )?;
        per_server(
            e,
            "mcp_host_upstream_failed_calls",
            "Calls that failed on the server's side (timed out, cut off, not a result)",
            MetricType::Counter,
            |s| s.failed_calls,
        )?;
        per_server(
            e,
            "mcp_host_upstream_dropped_notifications",
            "Notifications a server sent faster than the host could handle them",
            MetricType::Counter,
            |s| s.dropped_notifications,
        )?;
        per_server(
            e,
            "mcp_host_upstream_in_flight",
            "Calls in flight on each server",
            MetricType::Gauge,
            |s| s.in_flight as u64,
        )?;
        per_server(
            e,
            "mcp_host_upstream_waiting",
            "Calls waiting for a free slot on each server (max_in_flight)",
            MetricType::Gauge,
            |s| s.waiting as u64,
        )?;
        family(
            e,
            "mcp_host_upstream_up_seconds",
            "Seconds since each connected server's connection was made",
            MetricType::Gauge,
            self.servers.iter().filter_map(|s| {
                let up = s.up_seconds?;
                Some((vec![("server", s.name.as_str())], ConstGauge::new(up)))
            }),
        )?;
        let single = |e: &mut DescriptorEncoder, name: &str, help: &str, value: usize| {
            family(
                e,
                name,
                help,
                MetricType::Gauge,
                [(Vec::new(), gauge(value))],
            )
        };
        single(
            e,
            "mcp_host_sessions",
            "Legacy (session) clients connected downstream",
            self.sessions,
        )?;
        single(
            e,
            "mcp_host_listen_streams",
            "2026-07-28 subscriptions/listen streams open downstream",
            self.listen_streams,
        )?;
        single(
            e,
            "mcp_host_calls_asking",
            "Calls held while a person is asked to approve them",
            self.calls_asking,
        )?;
        family(
            e,
            "mcp_host_catalog_items",
            "What the catalog holds, by kind",
            MetricType::Gauge,
            self.catalog
                .iter()
                .map(|(kind, n)| (vec![("kind", *kind)], gauge(*n))),
        )?;
        if let Some(audit) = self.audit {
            family(
                e,
                "mcp_host_audit_records_written",
                "Audit records written",
                MetricType::Counter,
                [(Vec::new(), counter(audit.written))],
            )?;
            single(
                e,
                "mcp_host_audit_records_pending",
                "Audit records waiting to be written",
                usize::try_from(audit.pending).unwrap_or(usize::MAX),
            )?;
            family(
                e,
                "mcp_host_audit_records_lost",
                "Audit records that could not be kept (the backlog was full)",
                MetricType::Counter,
                [(Vec::new(), counter(audit.lost))],
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_snapshot_is_written_in_the_text_format_with_bounded_labels() {
        let stats = RequestStats::default();
        stats.count(Counted {
            method: stats::method_slot("tools/call"),
            modern: true,
            outcome: Outcome::Ok,
            took: Duration::from_millis(2),
            tool: Some("time_now"),
        });
        let server = ServerMetrics {
            name: "time".into(),
            state: "ready",
            restarts: 2,
            up_seconds: Some(1.5),
            requests: stats.tallies(),
            latencies: stats.latencies(),
            tool_calls: stats.tool_calls(),
            ..ServerMetrics::default()
        };
        let snapshot = Snapshot {
            servers: vec![server],
            catalog: [("tools", 1), ("resources", 0), ("prompts", 0)],
            ..Snapshot::default()
        };
        let text = snapshot.encode();
        for line in [
            "# TYPE mcp_host_requests counter",
            r#"mcp_host_requests_total{server="time",method="tools/call",era="modern",outcome="ok"} 1"#,
            r#"mcp_host_tool_calls_total{server="time",tool="time_now",outcome="ok"} 1"#,
            r#"mcp_host_request_duration_seconds_bucket{le="0.0025",server="time",method="tools/call"} 1"#,
            r#"mcp_host_request_duration_seconds_bucket{le="60.0",server="time",method="tools/call"} 1"#,
            r#"mcp_host_request_duration_seconds_bucket{le="+Inf",server="time",method="tools/call"} 1"#,
            r#"mcp_host_upstream_state{server="time",state="ready"} 1"#,
            r#"mcp_host_upstream_state{server="time",state="stopped"} 0"#,
            r#"mcp_host_upstream_restarts_total{server="time"} 2"#,
            r#"mcp_host_upstream_up_seconds{server="time"} 1.5"#,
            "mcp_host_sessions 0",
            "# EOF",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }
}
