//! `GET /console/events`: what changed, as server-sent events the pages
//! listen to (htmx's SSE extension): `servers` when an upstream's state
//! changes or it fails, `catalog` when the lists change, `approvals` when
//! the queue does. Each event only says what to fetch again. While a
//! browser holds the stream, the console can be asked for approvals.

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::extract::State;
use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use mcp_host::HostEvent;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use crate::Console;
use crate::auth::Session;
use axum::Extension;

/// Counts the operator's stream among the watchers while it is open
/// (the console can then be asked for approvals); a signed-in person's
/// is not counted, since they cannot answer them.
struct Watching(Option<Console>);

impl Watching {
    fn new(console: &Console, session: &Session) -> Watching {
        if session.user.is_some() {
            return Watching(None);
        }
        let watching = &console.inner.approver.watching;
        watching.fetch_add(1, Ordering::Relaxed);
        Watching(Some(console.clone()))
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        if let Some(console) = &self.0 {
            let watching = &console.inner.approver.watching;
            watching.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// The stream.
pub(crate) async fn stream(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
) -> impl IntoResponse {
    let state = (
        console.inner.host.events(),
        console.inner.approver.changes(),
        Watching::new(&console, &session),
    );
    let events = futures::stream::unfold(state, |(mut host, mut queue, watching)| async move {
        let name = next_change(&mut host, &mut queue).await?;
        let event: Result<Event, Infallible> = Ok(Event::default().event(name).data(name));
        Some((event, (host, queue, watching)))
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// What to fetch again after the next change; `None` when the host is
/// gone.
async fn next_change(
    host: &mut broadcast::Receiver<HostEvent>,
    queue: &mut broadcast::Receiver<()>,
) -> Option<&'static str> {
    loop {
        tokio::select! {
            event = host.recv() => match event {
                Ok(HostEvent::CatalogChanged { .. }) => return Some("catalog"),
                Ok(HostEvent::UpstreamState { .. } | HostEvent::UpstreamFault { .. }) => {
                    return Some("servers");
                }
                Ok(_) => {}
                // Missed some: the servers may have changed.
                Err(RecvError::Lagged(_)) => return Some("servers"),
                Err(RecvError::Closed) => return None,
            },
            changed = queue.recv() => match changed {
                Ok(()) | Err(RecvError::Lagged(_)) => return Some("approvals"),
                Err(RecvError::Closed) => return None,
            },
        }
    }
}
