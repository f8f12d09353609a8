//! `mcp bench --sessions N`: what idle legacy Streamable HTTP sessions cost
//! a server, and whether it gives the memory back.
//!
//! Each session is opened the way a client opens one (`initialize`, then
//! `notifications/initialized`) over a single keep-alive connection, and is
//! then left alone: no stream open and no connection of its own, so what
//! the server's memory grows by is the session state itself. The sessions
//! are then deleted (`DELETE`), and with `--cycles K` the whole round is
//! repeated, to show whether memory comes back or leaks.
//!
//! The RSS with a round's sessions open is what tells a leak: every round
//! holds the same number of live sessions, so it grows from round to round
//! only by what earlier rounds left behind. The RSS after deleting them
//! shows what the server gave back, but also when its allocator returns
//! freed pages (mimalloc does so on its next run on the thread that owns
//! them, not at once), so it moves from round to round with no leak.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde::Serialize;
use serde_json::Value;

use crate::stdout::{print_json, print_out};

/// The revision the sessions ask for; the server may answer with another.
const REQUESTED_REVISION: &str = "2025-11-25";

/// The report of a run.
#[derive(Debug, Serialize)]
struct Report {
    sessions: usize,
    rss_kib_before: u64,
    /// After opening the first round.
    rss_kib_open: u64,
    /// After deleting the first round.
    rss_kib_after_close: u64,
    kib_per_session: f64,
    kib_returned: u64,
    /// RSS after opening and after deleting, round by round.
    cycles: Vec<Cycle>,
    /// How much the RSS with the last round's sessions open exceeds the
    /// one with the first round's open, in percent: what earlier rounds
    /// left behind.
    open_growth_percent: f64,
    /// The least-squares slope of the RSS with the sessions open over the
    /// rounds, in KiB per round: a leak's steady climb, less moved by any
    /// one round's noise than the first and last rounds alone.
    open_kib_per_round: f64,
    /// How much the RSS after the last round's deletion exceeds the one
    /// after the first round's, in percent.
    growth_percent: f64,
}

#[derive(Debug, Serialize)]
struct Cycle {
    rss_kib_open: u64,
    rss_kib_closed: u64,
}

/// Opens `n` idle sessions at `url` `cycles` times, deleting them after
/// each round, and reports the RSS of process `pid`.
pub async fn run(url: &str, pid: u32, n: usize, cycles: usize, json: bool) -> Result<()> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        bail!("--sessions measures Streamable HTTP sessions: give an http(s):// URL");
    }
    if n == 0 || cycles == 0 {
        bail!("--sessions and --cycles must be at least 1");
    }
    let http = reqwest::Client::builder()
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(30))
        .build()?;
    let rss = || crate::cpu_use::rss_kib(pid).context("cannot read the server's memory");
    let settle = || tokio::time::sleep(Duration::from_millis(500));
    settle().await;
    let before = rss()?;
    let mut rounds = Vec::with_capacity(cycles);
    for _ in 0..cycles {
        let mut open = Vec::with_capacity(n);
        for _ in 0..n {
            open.push(open_session(&http, url).await?);
        }
        settle().await;
        let rss_kib_open = rss()?;
        for session in &open {
            delete_session(&http, url, session).await?;
        }
        settle().await;
        rounds.push(Cycle {
            rss_kib_open,
            rss_kib_closed: rss()?,
        });
    }
    let first = &rounds[0];
    let last = &rounds[rounds.len() - 1];
    let report = Report {
        sessions: n,
        rss_kib_before: before,
        rss_kib_open: first.rss_kib_open,
        rss_kib_after_close: first.rss_kib_closed,
        kib_per_session: first.rss_kib_open.saturating_sub(before) as f64 / n as f64,
        kib_returned: first.rss_kib_open.saturating_sub(first.rss_kib_closed),
        open_growth_percent: percent_above(last.rss_kib_open, first.rss_kib_open),
        growth_percent: percent_above(last.rss_kib_closed, first.rss_kib_closed),
        open_kib_per_round: slope(rounds.iter().map(|round| round.rss_kib_open)),
        cycles: rounds,
    };
    print(&report, json)
}

/// How far `later` lies above `first`, in percent of `first`.
fn percent_above(later: u64, first: u64) -> f64 {
    (later as f64 - first as f64) * 100.0 / first.max(1) as f64
}

/// The least-squares slope of `ys` taken at 0, 1, 2, ...: how much they
/// climb per step; 0 for fewer than two.
fn slope(ys: impl ExactSizeIterator<Item = u64> + Clone) -> f64 {
    let n = ys.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = ys.clone().map(|y| y as f64).sum::<f64>() / n;
    let (mut covariance, mut variance) = (0.0, 0.0);
    for (x, y) in ys.enumerate() {
        let dx = x as f64 - mean_x;
        covariance += dx * (y as f64 - mean_y);
        variance += dx * dx;
    }
    covariance / variance
}

fn print(report: &Report, json: bool) -> Result<()> {
    if json {
        return print_json(report);
    }
    let mut out = String::new();
    writeln!(
        out,
        "sessions:          {} (idle: no stream, no connection)",
        report.sessions
    )?;
    writeln!(out, "server RSS before: {} KiB", report.rss_kib_before)?;
    writeln!(
        out,
        "with sessions:     {} KiB ({:.1} KiB per session)",
        report.rss_kib_open, report.kib_per_session
    )?;
    writeln!(
        out,
        "after deleting:    {} KiB ({} KiB returned)",
        report.rss_kib_after_close, report.kib_returned
    )?;
    if report.cycles.len() > 1 {
        for (i, cycle) in report.cycles.iter().enumerate() {
            writeln!(
                out,
                "round {:>3}:         {} KiB open, {} KiB deleted",
                i + 1,
                cycle.rss_kib_open,
                cycle.rss_kib_closed
            )?;
        }
        writeln!(
            out,
            "growth:            {:+.1}% open, {:+.1}% deleted, from the first round to the last",
            report.open_growth_percent, report.growth_percent
        )?;
        writeln!(
            out,
            "open trend:        {:+.0} KiB per round ({:+.3} KiB per session)",
            report.open_kib_per_round,
            report.open_kib_per_round / report.sessions as f64
        )?;
    }
    print_out(&out)
}

fn headers(session: Option<&Session>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(session) = session {
        headers.insert("mcp-session-id", session.id.clone());
        headers.insert("mcp-protocol-version", session.revision.clone());
    }
    headers
}

/// A session the server handed out.
struct Session {
    id: HeaderValue,
    revision: HeaderValue,
}

/// `initialize` and `notifications/initialized`: one established session.
async fn open_session(http: &reqwest::Client, url: &str) -> Result<Session> {
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": REQUESTED_REVISION,
            "capabilities": {},
            "clientInfo": {"name": "mcp-bench", "version": env!("CARGO_PKG_VERSION")},
        },
    });
    let response = http
        .post(url)
        .headers(headers(None))
        .json(&initialize)
        .send()
        .await
        .context("initialize")?;
    let status = response.status();
    let id = response.headers().get("mcp-session-id").cloned();
    let body = response.text().await.context("initialize")?;
    let Some(id) = id.filter(|_| status.is_success()) else {
        bail!("initialize got {status} and no session id: {body}");
    };
    let revision = negotiated_revision(&body)
        .with_context(|| format!("initialize got no protocolVersion: {body}"))?;
    let session = Session {
        id,
        revision: HeaderValue::from_str(&revision)?,
    };
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = http
        .post(url)
        .headers(headers(Some(&session)))
        .json(&initialized)
        .send()
        .await
        .context("notifications/initialized")?;
    if !response.status().is_success() {
        bail!("notifications/initialized got {}", response.status());
    }
    Ok(session)
}

async fn delete_session(http: &reqwest::Client, url: &str, session: &Session) -> Result<()> {
    let response = http
        .delete(url)
        .headers(headers(Some(session)))
        .send()
        .await
        .context("DELETE")?;
    // 405: the server does not let clients end sessions; they expire.
    if !(response.status().is_success() || response.status() == 405) {
        bail!("DELETE got {}", response.status());
    }
    Ok(())
}

/// The `protocolVersion` of an `initialize` response, sent as JSON or as
/// the data of an SSE event.
fn negotiated_revision(body: &str) -> Option<String> {
    let from_json = |text: &str| -> Option<String> {
        let value: Value = serde_json::from_str(text).ok()?;
        Some(value["result"]["protocolVersion"].as_str()?.to_owned())
    };
    from_json(body).or_else(|| {
        body.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .find_map(|data| from_json(data.trim_start()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_is_the_climb_per_round() {
        assert_eq!(slope([100, 110, 120, 130].into_iter()), 10.0);
        assert_eq!(slope([50, 50, 50].into_iter()), 0.0);
        assert_eq!(slope([130, 120, 110].into_iter()), -10.0);
        // One noisy round moves it less than it moves the last-first gap.
        assert_eq!(slope([100, 100, 100, 100, 120].into_iter()), 4.0);
        assert_eq!(slope([42].into_iter()), 0.0);
        assert_eq!(slope(std::iter::empty()), 0.0);
    }

    #[test]
    fn growth_is_told_against_the_first_round() {
        assert_eq!(percent_above(105, 100), 5.0);
        assert_eq!(percent_above(95, 100), -5.0);
        assert_eq!(percent_above(7, 0), 700.0);
    }

    #[test]
    fn revision_from_json_or_sse() {
        let json = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}"#;
        assert_eq!(negotiated_revision(json).as_deref(), Some("2025-06-18"));
        let sse = format!("id: 1\ndata:\n\nevent: message\ndata: {json}\n\n");
        assert_eq!(negotiated_revision(&sse).as_deref(), Some("2025-06-18"));
        assert_eq!(negotiated_revision("{}"), None);
    }
}
