//! The counters of requests one server (or the host itself) answered: by
//! method, era and outcome, their latency by method, and its tool calls by
//! tool. Fixed tables of atomics, so that counting a request takes no lock
//! and no allocation; only a tool's first call adds its row.

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_core::sync::RwLockExt as _;
use mcp_schema::methods;

/// The methods counted by name; every other is counted as `other`, so
/// that a label never holds a string a client chose.
pub const METHODS: [&str; 20] = [
    methods::TOOLS_LIST,
    methods::TOOLS_CALL,
    methods::RESOURCES_LIST,
    methods::RESOURCES_TEMPLATES_LIST,
    methods::RESOURCES_READ,
    methods::RESOURCES_SUBSCRIBE,
    methods::RESOURCES_UNSUBSCRIBE,
    methods::PROMPTS_LIST,
    methods::PROMPTS_GET,
    methods::COMPLETION_COMPLETE,
    methods::LOGGING_SET_LEVEL,
    methods::SUBSCRIPTIONS_LISTEN,
    methods::TASKS_GET,
    methods::TASKS_RESULT,
    methods::TASKS_CANCEL,
    methods::TASKS_LIST,
    methods::TASKS_UPDATE,
    methods::PING,
    methods::INITIALIZE,
    "other",
];

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Answered with a result.
    Ok,
    /// A tool call answered with `isError: true`.
    ToolError,
    /// Answered with an error (other than the two below).
    Error,
    /// Refused by the policy, or by the person asked.
    Denied,
    /// Refused by a rate or concurrency limit.
    Limited,
    /// Dropped unanswered: the client cancelled it or went away.
    Cancelled,
}

impl Outcome {
    /// Every outcome, in label order.
    pub const ALL: [Outcome; 6] = [
        Outcome::Ok,
        Outcome::ToolError,
        Outcome::Error,
        Outcome::Denied,
        Outcome::Limited,
        Outcome::Cancelled,
    ];

    /// Its label value (as the audit log writes it).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::Error => "error",
            Outcome::Denied => "denied",
            Outcome::Limited => "limited",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// The era of the client that asked: `legacy` (a session, 2025-11-25 and
/// before) or `modern` (2026-07-28).
pub const ERAS: [&str; 2] = ["legacy", "modern"];

/// The latency histogram's upper bounds, in seconds.
pub const BUCKETS: [f64; 16] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

/// The slot of `method` in [`METHODS`].
pub fn method_slot(method: &str) -> usize {
    METHODS
        .iter()
        .position(|known| *known == method)
        .unwrap_or(METHODS.len() - 1)
}

/// One method's latency: a count per bucket (the last one past every
/// bound) and the sum, in nanoseconds.
#[derive(Default)]
struct Latency {
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

/// What one server (or the host) answered.
#[derive(Default)]
pub struct RequestStats {
    /// By method slot, outcome and era.
    counts: [[[AtomicU64; ERAS.len()]; Outcome::ALL.len()]; METHODS.len()],
    latency: [Latency; METHODS.len()],
    /// Tool calls by the tool's name as the catalog shows it, and outcome.
    tools: RwLock<HashMap<Box<str>, [AtomicU64; Outcome::ALL.len()]>>,
}

impl std::fmt::Debug for RequestStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestStats").finish_non_exhaustive()
    }
}

/// A request as counted.
#[derive(Debug, Clone, Copy)]
pub struct Counted<'a> {
    /// Its slot in [`METHODS`].
    pub method: usize,
    /// Whether its client is of the 2026-07-28 era.
    pub modern: bool,
    /// How it ended.
    pub outcome: Outcome,
    /// How long it took.
    pub took: Duration,
    /// The tool it called, as the catalog shows it, where it called one
    /// the catalog has.
    pub tool: Option<&'a str>,
}

/// One row of [`RequestStats::tallies`]: a method, era and outcome, and
/// how many requests.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Tally {
    /// The method (`other` for one not counted by name).
    pub method: &'static str,
    /// `legacy` or `modern`.
    pub era: &'static str,
    /// How they ended.
    pub outcome: &'static str,
    /// How many.
    pub count: u64,
}

/// One method's latency histogram.
#[derive(Debug, Clone)]
pub struct LatencyOf {
    /// The method.
    pub method: &'static str,
    /// Each bucket's upper bound (seconds) and how many fell in it, not
    /// counting the buckets below (the encoder adds them up); the last
    /// bound is infinite, written `+Inf`.
    pub buckets: Vec<(f64, u64)>,
    /// How many in all.
    pub count: u64,
    /// Their total, in seconds.
    pub sum: f64,
}

impl RequestStats {
    /// Counts one request.
    pub fn count(&self, request: Counted<'_>) {
        let era = usize::from(request.modern);
        // Declared in the order of `Outcome::ALL`.
        let outcome = request.outcome as usize;
        self.counts[request.method][outcome][era].fetch_add(1, Ordering::Relaxed);
        let latency = &self.latency[request.method];
        let seconds = request.took.as_secs_f64();
        let bucket = BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(BUCKETS.len());
        latency.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(request.took.as_nanos()).unwrap_or(u64::MAX);
        latency.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        if let Some(tool) = request.tool {
            self.count_tool(tool, outcome);
        }
    }

    fn count_tool(&self, tool: &str, outcome: usize) {
        {
            let tools = self.tools.read_locked();
            if let Some(row) = tools.get(tool) {
                row[outcome].fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        let mut tools = self.tools.write_locked();
        tools.entry(tool.into()).or_default()[outcome].fetch_add(1, Ordering::Relaxed);
    }

    /// Every method, era and outcome counted at least once.
    pub fn tallies(&self) -> Vec<Tally> {
        let mut tallies = Vec::new();
        for (method, by_outcome) in METHODS.iter().zip(&self.counts) {
            for (outcome, by_era) in Outcome::ALL.iter().zip(by_outcome) {
                for (era, count) in ERAS.iter().zip(by_era) {
                    let count = count.load(Ordering::Relaxed);
                    if count > 0 {
                        tallies.push(Tally {
                            method,
                            era,
                            outcome: outcome.as_str(),
                            count,
                        });
                    }
                }
            }
        }
        tallies
    }

    /// The latency of every method answered at least once.
    pub fn latencies(&self) -> Vec<LatencyOf> {
        let mut latencies = Vec::new();
        for (method, latency) in METHODS.iter().zip(&self.latency) {
            let counts: Vec<u64> = latency
                .buckets
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect();
            let count: u64 = counts.iter().sum();
            if count == 0 {
                continue;
            }
            let buckets = BUCKETS
                .iter()
                .chain([&f64::INFINITY])
                .copied()
                .zip(counts)
                .collect();
            latencies.push(LatencyOf {
                method,
                buckets,
                count,
                sum: latency.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            });
        }
        latencies
    }

    /// Tool calls by tool and outcome (the ones that happened).
    pub fn tool_calls(&self) -> Vec<(String, &'static str, u64)> {
        let tools = self.tools.read_locked();
        let mut calls = Vec::new();
        for (tool, row) in tools.iter() {
            for (outcome, count) in Outcome::ALL.iter().zip(row) {
                let count = count.load(Ordering::Relaxed);
                if count > 0 {
                    calls.push((tool.to_string(), outcome.as_str(), count));
                }
            }
        }
        calls.sort();
        calls
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted<'a>(
        method: &str,
        outcome: Outcome,
        millis: u64,
        tool: Option<&'a str>,
    ) -> Counted<'a> {
        Counted {
            method: method_slot(method),
            modern: false,
            outcome,
            took: Duration::from_millis(millis),
            tool,
        }
    }

    #[test]
    fn each_outcome_is_counted_in_its_own_row() {
        for (row, outcome) in Outcome::ALL.iter().enumerate() {
            assert_eq!(*outcome as usize, row, "{outcome:?}");
        }
    }

    #[test]
    fn a_method_not_known_by_name_is_other() {
        assert_eq!(METHODS[method_slot("tools/call")], "tools/call");
        assert_eq!(METHODS[method_slot("x/whatever-a-client-says")], "other");
    }

    #[test]
    fn counts_by_method_outcome_and_tool_and_buckets_by_bucket() {
        let stats = RequestStats::default();
        stats.count(counted("tools/call", Outcome::Ok, 3, Some("echo")));
        stats.count(counted("tools/call", Outcome::Ok, 30, Some("echo")));
        stats.count(counted("tools/call", Outcome::ToolError, 3, Some("add")));
        let tallies = stats.tallies();
        assert_eq!(tallies.len(), 2);
        assert!(tallies.contains(&Tally {
            method: "tools/call",
            era: "legacy",
            outcome: "ok",
            count: 2
        }));
        let latency = &stats.latencies()[0];
        assert_eq!(latency.count, 3);
        assert!((latency.sum - 0.036).abs() < 1e-9);
        // 3 ms is under 5 ms, 30 ms under 50 ms.
        let at = |bound: f64| latency.buckets.iter().find(|b| b.0 == bound).unwrap().1;
        assert_eq!((at(0.0025), at(0.005), at(0.025), at(0.05)), (0, 2, 0, 1));
        assert_eq!(latency.buckets.last(), Some(&(f64::INFINITY, 0)));
        assert_eq!(
            stats.tool_calls(),
            vec![
                ("add".to_owned(), "tool_error", 1),
                ("echo".to_owned(), "ok", 2)
            ]
        );
    }
}
