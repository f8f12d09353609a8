//! `mcp audit`: the records of a host's audit log, as a table or JSON
//! lines, filtered by time, caller, server, tool, decision and outcome;
//! with `--follow`, the new ones as they are written.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use mcp_host::audit::{AuditQuery, AuditRow, query};

use crate::stdout::print_out;
use crate::tool_table::{table, terminal_width};

/// The flags of `mcp audit`.
#[derive(clap::Args, Debug)]
pub struct AuditArgs {
    /// The audit file (`mcp host --audit FILE`, or `[audit] path`).
    pub file: PathBuf,
    /// Only the records of the last while: 30s, 15m, 2h, 7d.
    #[arg(long, value_name = "AGO", value_parser = parse_ago)]
    pub since: Option<Duration>,
    /// Only the records whose caller contains this (an OAuth subject).
    #[arg(long)]
    pub caller: Option<String>,
    /// Only requests to this server (its name in the config).
    #[arg(long)]
    pub server: Option<String>,
    /// Only requests about this tool, prompt or resource (as the client
    /// named it).
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// Only requests of this method (tools/call, ...).
    #[arg(long)]
    pub method: Option<String>,
    /// Only requests the policy decided so: allow, ask or deny.
    #[arg(long)]
    pub decision: Option<String>,
    /// Only requests that ended so: ok, tool_error, error or cancelled.
    #[arg(long)]
    pub outcome: Option<String>,
    /// At most this many (the newest); 0 for all.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// One JSON object per record, per line.
    #[arg(long)]
    pub json: bool,
    /// Then the new records as they are written, until interrupted.
    #[arg(long)]
    pub follow: bool,
}

/// `30s`, `15m`, `2h` or `7d`.
fn parse_ago(text: &str) -> Result<Duration, String> {
    let (number, unit) = text.split_at(text.len().saturating_sub(1));
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "{text:?}: a number and s, m, h or d (30s, 15m, 2h, 7d)"
            ));
        }
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?}: a number and s, m, h or d (30s, 15m, 2h, 7d)"))?;
    Ok(Duration::from_secs(n * seconds))
}

/// Runs `mcp audit`.
pub async fn run(args: &AuditArgs) -> Result<()> {
    let since_ms = args.since.map(|ago| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        i64::try_from(now.saturating_sub(ago).as_millis()).unwrap_or(i64::MAX)
    });
    let mut filter = AuditQuery::default();
    filter.since_ms = since_ms;
    filter.caller = args.caller.clone();
    filter.server = args.server.clone();
    filter.target = args.tool.clone();
    filter.method = args.method.clone();
    filter.decision = args.decision.clone();
    filter.outcome = args.outcome.clone();
    filter.limit = args.limit;
    let rows = query(&args.file, &filter).map_err(anyhow::Error::msg)?;
    show(&rows, args.json, true)?;
    if !args.follow {
        return Ok(());
    }
    let mut last = rows.last().map(|r| r.id);
    filter.limit = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        filter.after_id = last.or(Some(0));
        let rows = query(&args.file, &filter).map_err(anyhow::Error::msg)?;
        if let Some(row) = rows.last() {
            last = Some(row.id);
            show(&rows, args.json, false)?;
        }
    }
}

/// Prints `rows`: JSON lines, or a table (its header when `header`).
fn show(rows: &[AuditRow], json: bool, header: bool) -> Result<()> {
    if json {
        let mut out = String::new();
        for row in rows {
            out.push_str(&serde_json::to_string(row)?);
            out.push('\n');
        }
        return print_out(&out);
    }
    if rows.is_empty() {
        return Ok(());
    }
    let text = |value: &Option<String>| value.clone().unwrap_or_else(|| "-".into());
    let lines = rows.iter().map(|row| {
        let decision = match (&row.decision, &row.rule, &row.answer) {
            (None, _, _) => "-".to_owned(),
            (Some(d), Some(rule), Some(answer)) => format!("{d} ({rule}; {answer})"),
            (Some(d), Some(rule), None) => format!("{d} ({rule})"),
            (Some(d), None, _) => d.clone(),
        };
        let outcome = match (&row.error_code, &row.error_message) {
            (Some(code), Some(message)) => format!("{} {code}: {message}", row.outcome),
            _ => row.outcome.clone(),
        };
        vec![
            row.time.clone(),
            caller(row.caller.as_deref()),
            row.method.clone(),
            text(&row.target),
            text(&row.server),
            decision,
            format!("{:.1}", row.duration_ms),
            outcome,
        ]
    });
    let header_row = [
        "TIME", "CALLER", "METHOD", "TARGET", "SERVER", "DECISION", "MS", "OUTCOME",
    ];
    let mut out = table(&header_row, lines, terminal_width());
    if !header {
        // A follow-up batch: the rows without the header line again.
        out = out.lines().skip(1).map(|l| format!("{l}\n")).collect();
    }
    print_out(&out)
}

/// The subject of a caller as the audit writes it (`[issuer, subject,
/// client]`), or `-` for none.
fn caller(caller: Option<&str>) -> String {
    let Some(caller) = caller else {
        return "-".into();
    };
    match serde_json::from_str::<Vec<Option<String>>>(caller) {
        Ok(parts) => parts
            .get(1)
            .cloned()
            .flatten()
            .unwrap_or_else(|| caller.to_owned()),
        Err(_) => caller.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ago_is_a_number_and_a_unit() {
        assert_eq!(parse_ago("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_ago("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_ago("7d").unwrap(), Duration::from_secs(7 * 86_400));
        assert!(parse_ago("7").is_err());
        assert!(parse_ago("h").is_err());
        assert!(parse_ago("1w").is_err());
    }

    #[test]
    fn a_caller_is_shown_by_its_subject() {
        assert_eq!(caller(Some(r#"["https://i","alice","app"]"#)), "alice");
        assert_eq!(caller(None), "-");
        assert_eq!(caller(Some("plain")), "plain");
    }
}
