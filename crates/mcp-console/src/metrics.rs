//! The metrics view: each server's requests, errors and mean latency per
//! minute over the last hour, as small charts drawn from the audit log
//! (no store of its own). Without an audit log there is nothing to draw,
//! and the page says how to keep one.

use axum::Extension;
use axum::extract::State;
use maud::{Markup, html};
use mcp_host::audit::Slot;

use crate::Console;
use crate::auth::Session;
use crate::layout::page;

/// One-minute slots over the last hour.
const SLOTS: usize = 60;
const SLOT_MS: i64 = 60_000;

/// `GET /console/metrics`.
pub(crate) async fn view(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
) -> Markup {
    let body = html! {
        p.hint { "Per minute over the last hour, from the audit log. Updated when the page is loaded again." }
        (charts(&console).await)
    };
    page("Metrics", "/console/metrics", &session, body)
}

async fn charts(console: &Console) -> Markup {
    let Some(log) = console.inner.host.audit() else {
        return html! { p { "The host keeps no audit log: start it with " code { "--audit FILE" } " to see its metrics here." } };
    };
    let path = log.path().to_owned();
    let now = mcp_host::audit::now_ms();
    let read =
        tokio::task::spawn_blocking(move || mcp_host::audit::activity(&path, now, SLOT_MS, SLOTS))
            .await;
    let servers = match read {
        Ok(Ok(servers)) => servers,
        Ok(Err(error)) => {
            return html! { p role="alert" { "The audit log cannot be read: " (error) } };
        }
        Err(error) => {
            return html! { p role="alert" { "The audit log cannot be read: " (error.to_string()) } };
        }
    };
    if servers.is_empty() {
        return html! { p { "No server answered a request in the last hour." } };
    }
    html! {
        table.metrics {
            caption.visually-hidden { "Requests, errors and mean latency per minute, by server" }
            thead { tr {
                th scope="col" { "Server" }
                th scope="col" { "Requests per minute" }
                th scope="col" { "Errors per minute" }
                th scope="col" { "Mean latency" }
            } }
            tbody {
                @for (server, slots) in &servers {
                    tr data-metrics=(server) {
                        th scope="row" { a href={"/console/servers/" (crate::catalog::encode(server))} { (server) } }
                        td { (chart("requests", slots, |s| s.requests as f64, "")) }
                        td { (chart("errors", slots, |s| s.errors as f64, "")) }
                        td { (chart("latency", slots, |s| s.mean_ms, " ms")) }
                    }
                }
            }
        }
    }
}

/// A bar chart of `value` over `slots`, with its total (or, for a
/// latency, its peak) in words for those who cannot see it.
fn chart(what: &str, slots: &[Slot], value: impl Fn(&Slot) -> f64, unit: &str) -> Markup {
    const WIDTH: f64 = 180.0;
    const HEIGHT: f64 = 32.0;
    let values: Vec<f64> = slots.iter().map(&value).collect();
    let peak = values.iter().copied().fold(0.0_f64, f64::max);
    let total: f64 = values.iter().sum();
    let bar = WIDTH / values.len().max(1) as f64;
    let summary = if unit.is_empty() {
        format!("{what}: {total:.0} in the hour, at most {peak:.0} in a minute")
    } else {
        format!("{what}: at most {peak:.1}{unit} in a minute")
    };
    html! {
        svg.chart role="img" aria-label=(summary) data-chart=(what) data-peak=(format!("{peak:.1}"))
            width=(WIDTH) height=(HEIGHT) viewBox={"0 0 " (WIDTH) " " (HEIGHT)} {
            title { (summary) }
            @for (at, v) in values.iter().enumerate() {
                @if *v > 0.0 {
                    @let h = (v / peak * (HEIGHT - 2.0)).max(1.0);
                    rect x=(format!("{:.1}", at as f64 * bar)) y=(format!("{:.1}", HEIGHT - h))
                        width=(format!("{:.1}", (bar - 0.5).max(0.5))) height=(format!("{h:.1}")) {}
                }
            }
        }
        " " small { (if unit.is_empty() { format!("{total:.0}") } else { format!("≤ {peak:.0}{unit}") }) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_draws_a_bar_per_busy_minute_and_says_its_total() {
        let mut slots = vec![Slot::default(); SLOTS];
        slots[10].requests = 4;
        slots[59].requests = 2;
        let drawn = chart("requests", &slots, |s| s.requests as f64, "").into_string();
        assert_eq!(drawn.matches("<rect").count(), 2, "{drawn}");
        assert!(
            drawn.contains("requests: 6 in the hour, at most 4 in a minute"),
            "{drawn}"
        );
        let empty = chart(
            "errors",
            &vec![Slot::default(); SLOTS],
            |s| s.errors as f64,
            "",
        )
        .into_string();
        assert_eq!(empty.matches("<rect").count(), 0);
    }
}
