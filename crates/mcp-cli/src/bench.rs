//! `mcp bench`: a closed-loop load generator that speaks MCP to any server
//! (ours or anyone's): one session per virtual client, each keeping
//! `--pipeline` requests in flight for the duration; throughput, latency
//! percentiles, errors, the kinds of HTTP replies, how busy the machine
//! was, and with `--pid` the server's CPU (its child processes' too) and
//! memory. `--sessions N` measures what idle sessions cost
//! the server and what it gives back when they end (see
//! [`crate::idle_sessions`]).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use hdrhistogram::Histogram;
use mcp_client::{EraChoice, RequestOptions};
use mcp_http::ReplyKinds;
use serde::Serialize;
use serde_json::Value;

use crate::bench_http::{HttpWork, Lane, Reply, ResultProbe};
use crate::call::parse_era;
use crate::cpu_use::{MachineUse, clock_ticks, machine_ticks, process_ticks, rss_kib};
use crate::stderr::print_err;
use crate::stdout::{print_json, print_out};
use crate::target::{Connection, Target};
use crate::terminal::Terminal;

/// The settings of `mcp bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// The server: an http(s):// or ws:// URL, or a command line run as a
    /// child over stdio (one child per virtual client).
    #[arg(long, short = 's', value_name = "URL_OR_COMMAND")]
    pub server: String,
    /// Virtual clients, each with its own session.
    #[arg(long, short = 'c', default_value_t = 1)]
    pub concurrency: usize,
    /// Seconds measured.
    #[arg(long, short = 'd', default_value_t = 10.0)]
    pub duration: f64,
    /// Seconds of load before measuring.
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    /// The tool to call (default `echo`).
    #[arg(long, conflicts_with = "method")]
    pub tool: Option<String>,
    /// The tool's arguments, JSON.
    #[arg(long, default_value = r#"{"text":"hello"}"#)]
    pub args: String,
    /// Send this method instead of calling a tool.
    #[arg(long)]
    pub method: Option<String>,
    /// The method's params, JSON.
    #[arg(long, default_value = "{}")]
    pub params: String,
    /// The protocol era: auto, legacy, modern or a revision.
    #[arg(long, default_value = "auto", value_parser = parse_era)]
    pub era: EraChoice,
    /// Requests each client keeps in flight.
    #[arg(long, default_value_t = 1)]
    pub pipeline: usize,
    /// Over Streamable HTTP, send the measured calls through the MCP client
    /// (its engine and HTTP transport) instead of direct keep-alive lanes:
    /// measures the client as much as the server.
    #[arg(long)]
    pub via_client: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// The server's process id, to report its CPU (and its child
    /// processes') and memory.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Instead of load: open this many idle Streamable HTTP sessions,
    /// report the server's memory per session, delete them and report what
    /// came back (needs `--pid`).
    #[arg(long, requires = "pid")]
    pub sessions: Option<usize>,
    /// With `--sessions`: open and delete the sessions this many times and
    /// report how the server's memory moves from round to round.
    #[arg(long, default_value_t = 1, requires = "sessions")]
    pub cycles: usize,
    /// Seconds allowed for setting up the run: starting or connecting every
    /// virtual client and its session, and the first calls.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub setup_timeout: f64,
}

/// What a run measured.
#[derive(Debug, Serialize)]
struct Report {
    server: String,
    request: String,
    concurrency: usize,
    pipeline: usize,
    sender: Sender,
    seconds: f64,
    /// Calls answered with a result.
    requests: u64,
    /// Calls answered with a JSON-RPC error.
    errors: u64,
    /// Tool calls answered with a result marked `isError: true`.
    tool_errors: u64,
    /// Calls without an answer: a failed exchange, or one still waited
    /// for long after the end.
    failed: u64,
    /// What the first call that did not succeed got.
    #[serde(skip_serializing_if = "Option::is_none")]
    first_error: Option<String>,
    throughput: f64,
    latency_ms: Latency,
    #[serde(skip_serializing_if = "Option::is_none")]
    replies: Option<Replies>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_process: Option<ProcessUse>,
    /// How the machine's cores spent the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    machine: Option<MachineUse>,
}

#[derive(Debug, Serialize)]
struct Latency {
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
}

/// What sent the calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Sender {
    /// Direct keep-alive HTTP connections (see [`crate::bench_http`]).
    Lanes,
    /// The MCP client.
    Client,
}

#[derive(Debug, Serialize)]
struct Replies {
    json: u64,
    sse: u64,
}

/// What the server's process (`--pid`) used during the run.
#[derive(Debug, Serialize)]
struct ProcessUse {
    /// Its own CPU, in percent of one core.
    cpu_percent: f64,
    /// Its child processes' (a host's stdio upstreams), in percent of one
    /// core.
    children_cpu_percent: f64,
    rss_kib: u64,
}

/// The request every client sends, prepared once.
#[derive(Clone)]
struct Work {
    method: String,
    params: Value,
}

impl BenchArgs {
    fn work(&self) -> Result<Work> {
        let parse = |text: &str, what: &str| -> Result<Value> {
            serde_json::from_str(text).with_context(|| format!("{what} is not JSON: {text}"))
        };
        Ok(match &self.method {
            Some(method) => Work {
                method: method.clone(),
                params: parse(&self.params, "--params")?,
            },
            None => Work {
                method: "tools/call".to_owned(),
                params: serde_json::json!({
                    "name": self.tool.as_deref().unwrap_or("echo"),
                    "arguments": parse(&self.args, "--args")?,
                }),
            },
        })
    }

    fn check(&self) -> Result<()> {
        let valid = |s: f64| s.is_finite() && s >= 0.0;
        if self.concurrency == 0 || self.pipeline == 0 {
            bail!("--concurrency and --pipeline must be at least 1");
        }
        if !valid(self.duration) || self.duration == 0.0 || !valid(self.warmup) {
            bail!("--duration must be positive and --warmup not negative");
        }
        if self.duration + self.warmup > 3600.0 {
            bail!("a run is bounded to an hour");
        }
        if !valid(self.setup_timeout) || self.setup_timeout == 0.0 || self.setup_timeout > 3600.0 {
            bail!("--setup-timeout must be positive and at most an hour");
        }
        Ok(())
    }
}

/// Runs `mcp bench`.
pub async fn run(args: &BenchArgs) -> Result<()> {
    args.check()?;
    let target = Target::parse(&args.server)?;
    if let (Some(n), Some(pid)) = (args.sessions, args.pid) {
        let url = match &target {
            Target::Http(url) => url.as_str(),
            _ => args.server.as_str(),
        };
        return crate::idle_sessions::run(url, pid, n, args.cycles, args.json).await;
    }
    let work = args.work()?;
    let setup = Duration::from_secs_f64(args.setup_timeout);
    let Ok(prepared) = tokio::time::timeout(setup, prepare(args, &target, &work)).await else {
        bail!(
            "the run was not set up within {}s (--setup-timeout): the server did not \
             start {} session(s) and answer a first {} in time",
            args.setup_timeout,
            args.concurrency,
            work.method
        );
    };
    let (connections, callers) = prepared?;
    let sender = match callers.first() {
        Some(Caller::Lane(_)) => Sender::Lanes,
        _ => Sender::Client,
    };

    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(args.warmup);
    let end = measure_from + Duration::from_secs_f64(args.duration);
    let before = args.pid.and_then(process_ticks);
    let machine_before = machine_ticks();
    let mut loops = tokio::task::JoinSet::new();
    for caller in callers {
        loops.spawn(closed_loop(caller, measure_from, end));
    }
    let mut tally = Tally::new();
    let mut lane_kinds = Vec::new();
    while let Some(outcome) = loops.join_next().await {
        let (one, caller) = outcome?;
        tally.add(one)?;
        if let Caller::Lane(lane) = caller {
            lane_kinds.push(lane.replies);
        }
    }
    let Tally {
        histogram,
        requests,
        errors,
        tool_errors,
        failed,
        first_error,
    } = tally;
    let seconds = args.duration;
    let after = args.pid.and_then(process_ticks);
    let machine = machine_before
        .zip(machine_ticks())
        .and_then(|(before, after)| MachineUse::between(before, after));
    let replies = match sender {
        Sender::Lanes => total(lane_kinds),
        Sender::Client => total(connections.iter().filter_map(|c| c.reply_kinds())),
    };
    let percent_of_a_core =
        |ticks: u64| ticks as f64 / clock_ticks() / start.elapsed().as_secs_f64() * 100.0;
    let server_process = args.pid.map(|pid| {
        // Both readings or none: one alone would count the whole life of
        // the process as this run's.
        let (b, a) = before.zip(after).unwrap_or_default();
        ProcessUse {
            cpu_percent: percent_of_a_core(a.own.saturating_sub(b.own)),
            children_cpu_percent: percent_of_a_core(a.descendants.saturating_sub(b.descendants)),
            rss_kib: rss_kib(pid).unwrap_or(0),
        }
    });
    let ms = |v: u64| v as f64 / 1000.0;
    let report = Report {
        server: args.server.clone(),
        request: work.method.clone(),
        concurrency: args.concurrency,
        pipeline: args.pipeline,
        sender,
        seconds,
        requests,
        errors,
        tool_errors,
        failed,
        first_error,
        throughput: requests as f64 / seconds,
        latency_ms: Latency {
            p50: ms(histogram.value_at_quantile(0.5)),
            p90: ms(histogram.value_at_quantile(0.9)),
            p99: ms(histogram.value_at_quantile(0.99)),
            max: ms(histogram.max()),
        },
        replies,
        server_process,
        machine,
    };
    print_report(&report, args.json)?;
    close_all(connections).await;
    let unsuccessful = report.errors + report.tool_errors + report.failed;
    if report.requests == 0 && unsuccessful > 0 {
        bail!(
            "every call failed ({} JSON-RPC errors, {} tool errors, {} without an answer); \
             the first got {}",
            report.errors,
            report.tool_errors,
            report.failed,
            report.first_error.as_deref().unwrap_or("nothing")
        );
    }
    Ok(())
}

/// The clients' connections and the callers that load them: every
/// virtual client connected with its session, one request made first (a
/// wrong tool or method fails the run at once), and the callers ready.
async fn prepare(
    args: &BenchArgs,
    target: &Target,
    work: &Work,
) -> Result<(Vec<Arc<Connection>>, Vec<Caller>)> {
    let terminal = Terminal::new();
    let mut connections = Vec::with_capacity(args.concurrency);
    for _ in 0..args.concurrency {
        connections.push(Arc::new(
            Connection::open(target, args.era, &terminal).await?,
        ));
    }
    let first = connections[0]
        .client
        .request_raw(&work.method, work.params.clone(), RequestOptions::new())
        .await
        .with_context(|| format!("{} failed", work.method))?;
    if let Reply::ToolError(text) = reply_of(&work.method, &first) {
        bail!(
            "{} failed: the tool answered with an error (isError): {text}",
            work.method
        );
    }
    let callers = if args.via_client {
        client_callers(&connections, work, args.pipeline)
    } else {
        callers(target, &connections, work, args.pipeline).await?
    };
    Ok((connections, callers))
}

/// How long the sessions get to end after the run; children still running
/// then are killed.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// Ends every session (and stops every child), for at most [`CLOSE_WAIT`].
async fn close_all(connections: Vec<Arc<Connection>>) {
    let closing = async {
        for connection in connections {
            if let Ok(connection) = Arc::try_unwrap(connection) {
                connection.close().await;
            }
        }
    };
    if tokio::time::timeout(CLOSE_WAIT, closing).await.is_err() {
        print_err(&format!(
            "the sessions did not all end within {}s; the rest were dropped",
            CLOSE_WAIT.as_secs()
        ));
    }
}

/// What sends the work request: the MCP client, or over Streamable HTTP
/// a lane of its own (see [`crate::bench_http`]).
enum Caller {
    Client(Arc<Connection>, Work),
    Lane(Lane),
}

impl Caller {
    /// Sends the work request once: how the server answered, or why no
    /// answer came.
    async fn call(&mut self) -> Result<Reply> {
        match self {
            Caller::Client(connection, work) => {
                let result = connection
                    .client
                    .request_raw(&work.method, work.params.clone(), RequestOptions::new())
                    .await;
                match result {
                    Ok(raw) => Ok(reply_of(&work.method, &raw)),
                    Err(e) => match e.rpc() {
                        Some(rpc) => Ok(Reply::Error {
                            code: rpc.code,
                            message: rpc.message.clone(),
                        }),
                        None => Err(e.into()),
                    },
                }
            }
            Caller::Lane(lane) => lane.call().await,
        }
    }
}

/// The reply a result of `method` makes: a tool's result may be an error.
fn reply_of(method: &str, result: &serde_json::value::RawValue) -> Reply {
    if method != "tools/call" {
        return Reply::Result;
    }
    serde_json::from_str::<ResultProbe>(result.get()).map_or(Reply::Result, ResultProbe::reply)
}

/// `pipeline` callers per connection: lanes over plain Streamable HTTP
/// when each answers a first call, else the connections' clients.
async fn callers(
    target: &Target,
    connections: &[Arc<Connection>],
    work: &Work,
    pipeline: usize,
) -> Result<Vec<Caller>> {
    if let Target::Http(url) = target {
        match lanes(url, connections, work, pipeline).await {
            Ok(Some(lanes)) => return Ok(lanes.into_iter().map(Caller::Lane).collect()),
            Ok(None) => {}
            Err(e) => print_err(&format!(
                "sending through the MCP client: the direct lanes failed: {e:#}"
            )),
        }
    }
    Ok(client_callers(connections, work, pipeline))
}

/// `pipeline` callers per connection through its client.
fn client_callers(connections: &[Arc<Connection>], work: &Work, pipeline: usize) -> Vec<Caller> {
    connections
        .iter()
        .flat_map(|c| (0..pipeline).map(|_| Caller::Client(Arc::clone(c), work.clone())))
        .collect()
}

/// Opens `pipeline` lanes per connection and makes one call on each.
async fn lanes(
    url: &str,
    connections: &[Arc<Connection>],
    work: &Work,
    pipeline: usize,
) -> Result<Option<Vec<Lane>>> {
    let mut lanes = Vec::with_capacity(connections.len() * pipeline);
    for connection in connections {
        let Some(prepared) = HttpWork::prepare(url, connection, &work.method, work.params.clone())?
        else {
            return Ok(None);
        };
        let prepared = Arc::new(prepared);
        for _ in 0..pipeline {
            let mut lane = Lane::open(Arc::clone(&prepared)).await?;
            if let reply @ Reply::Error { .. } = lane.call().await? {
                bail!("the first call on a lane got {reply}");
            }
            lane.replies = Default::default();
            lanes.push(lane);
        }
    }
    Ok(Some(lanes))
}

/// The sum of reply counts; `None` when there are none (not HTTP).
fn total(kinds: impl IntoIterator<Item = ReplyKinds>) -> Option<Replies> {
    kinds.into_iter().fold(None, |sum, k| {
        let sum = sum.unwrap_or(Replies { json: 0, sse: 0 });
        Some(Replies {
            json: sum.json + k.json,
            sse: sum.sse + k.sse,
        })
    })
}

/// How long after the end of the run a call still in flight is waited for.
const LATE: Duration = Duration::from_secs(5);

/// What callers counted: latencies (microseconds) of the calls answered
/// with a result, and how the others ended.
struct Tally {
    histogram: Histogram<u64>,
    requests: u64,
    errors: u64,
    tool_errors: u64,
    failed: u64,
    first_error: Option<String>,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            histogram: Histogram::<u64>::new(3).expect("3 significant digits is valid"),
            requests: 0,
            errors: 0,
            tool_errors: 0,
            failed: 0,
            first_error: None,
        }
    }

    /// Counts one call that took `took`.
    fn count(&mut self, outcome: Result<Reply>, took: Duration) {
        let why = match outcome {
            Ok(Reply::Result) => {
                self.requests += 1;
                let micros = took.as_micros().min(u128::from(u64::MAX)) as u64;
                let _ = self.histogram.record(micros.max(1));
                return;
            }
            Ok(reply @ Reply::ToolError(_)) => {
                self.tool_errors += 1;
                reply.to_string()
            }
            Ok(reply @ Reply::Error { .. }) => {
                self.errors += 1;
                reply.to_string()
            }
            Err(e) => {
                self.failed += 1;
                format!("no answer: {e:#}")
            }
        };
        self.first_error.get_or_insert(why);
    }

    /// Adds another caller's counts.
    fn add(&mut self, other: Tally) -> Result<()> {
        self.histogram.add(other.histogram)?;
        self.requests += other.requests;
        self.errors += other.errors;
        self.tool_errors += other.tool_errors;
        self.failed += other.failed;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        Ok(())
    }
}

/// One request at a time until `end`; calls counted from `measure_from`
/// on. Hands the caller back for its counts.
async fn closed_loop(mut caller: Caller, measure_from: Instant, end: Instant) -> (Tally, Caller) {
    let mut tally = Tally::new();
    loop {
        let sent = Instant::now();
        if sent >= end {
            break;
        }
        let Ok(outcome) = tokio::time::timeout_at((end + LATE).into(), caller.call()).await else {
            tally.count(
                Err(anyhow::anyhow!("still waited for {LATE:?} after the end")),
                LATE,
            );
            break;
        };
        let done = Instant::now();
        if sent < measure_from || done > end {
            continue;
        }
        tally.count(outcome, done - sent);
    }
    (tally, caller)
}

fn print_report(report: &Report, json: bool) -> Result<()> {
    if json {
        return print_json(report);
    }
    let mut out = String::new();
    writeln!(out, "server:      {}", report.server)?;
    writeln!(
        out,
        "load:        {} x {} ({} client{}, {} in flight each) for {} s",
        report.request,
        report.concurrency * report.pipeline,
        report.concurrency,
        if report.concurrency == 1 { "" } else { "s" },
        report.pipeline,
        report.seconds
    )?;
    if report.sender == Sender::Lanes {
        writeln!(
            out,
            "sent by:     direct HTTP lanes, one keep-alive connection each"
        )?;
    }
    writeln!(
        out,
        "requests:    {} ({:.0}/s) answered with a result",
        report.requests, report.throughput
    )?;
    writeln!(
        out,
        "errors:      {} JSON-RPC errors, {} tool errors (isError), {} without an answer",
        report.errors, report.tool_errors, report.failed
    )?;
    if let Some(first) = &report.first_error {
        writeln!(out, "first error: {first}")?;
    }
    let l = &report.latency_ms;
    writeln!(
        out,
        "latency ms:  p50 {:.3}  p90 {:.3}  p99 {:.3}  max {:.3}",
        l.p50, l.p90, l.p99, l.max
    )?;
    if let Some(r) = &report.replies {
        writeln!(out, "replies:     {} JSON, {} SSE", r.json, r.sse)?;
    }
    if let Some(p) = &report.server_process {
        writeln!(
            out,
            "server:      {:.0}% CPU ({:.0}% more in its child processes), {} KiB RSS",
            p.cpu_percent, p.children_cpu_percent, p.rss_kib
        )?;
    }
    if let Some(m) = &report.machine {
        writeln!(
            out,
            "machine:     {} cores, {:.0}% busy, {:.0}% idle, {:.0}% stolen",
            m.cores, m.busy_percent, m.idle_percent, m.steal_percent
        )?;
    }
    print_out(&out)
}
