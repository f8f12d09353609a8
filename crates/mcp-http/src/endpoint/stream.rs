//! The response to a request: one JSON object, or an SSE stream that
//! carries what the handling sends and ends with the answer.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use crate::outbound::StreamReceiver;
use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use tokio_util::sync::CancellationToken;

use super::McpEndpoint;
use super::handling::{Handling, Work, answer_delivery, queue_answer};
use super::reply::{Era, json_response, json_with_status};
use crate::config::ResponseMode;
use crate::session::{Delivery, StreamGuard};
use crate::sse;

/// Answers a POST from its deliveries: plain JSON when the first message is
/// the response (and the endpoint allows it), an SSE stream otherwise.
/// The handling of the message runs here until the first message comes,
/// and goes on on a task of its own if it is not done by then.
pub(super) async fn respond(
    endpoint: &Arc<McpEndpoint>,
    mut receiver: StreamReceiver,
    guard: Option<StreamGuard>,
    era: Era,
    mut handling: Option<Handling>,
) -> Response {
    /// What came first: a delivery, or the end of the work.
    enum Next {
        Delivery(Option<Delivery>),
        Done(Option<String>),
    }
    let mut priming = None;
    let first = loop {
        let next = match handling.as_mut().and_then(|h| h.work.as_mut()) {
            Some(working) => tokio::select! {
                biased;
                delivery = receiver.recv() => Next::Delivery(delivery),
                answer = working => Next::Done(answer),
            },
            None => Next::Delivery(receiver.recv().await),
        };
        match next {
            // The work is done (and must not be polled again).
            Next::Done(answer) => {
                if let Some(handling) = &mut handling {
                    // Its sender taken, so that the deliveries end once the
                    // session lets go of its sink.
                    let answer_to = handling.work.take().and_then(Work::answer_to);
                    if priming.is_none() && receiver.is_empty() {
                        // Nothing came before the response: it is the first.
                        if let Some(answer) = answer.and_then(answer_delivery) {
                            break Some(answer);
                        }
                    } else {
                        queue_answer(answer_to, answer);
                    }
                }
            }
            Next::Delivery(Some(d)) if d.text.is_empty() => priming = Some(d),
            Next::Delivery(other) => break other,
        }
    };
    if let Some(handling) = handling {
        handling.detach();
    }
    let Some(first) = first else {
        // The request ended without a response (cancelled, or the session
        // closed): a stream that ends with no message says so.
        return sse_response(endpoint, priming.into_iter().collect(), receiver, None);
    };
    if first.failed {
        // Nothing went out yet: the POST itself fails.
        return json_with_status(StatusCode::SERVICE_UNAVAILABLE, first.text.into_body());
    }
    if first.last && endpoint.config.response_mode == ResponseMode::Auto {
        return json_response(first.text, era);
    }
    let opening: Vec<Delivery> = priming.into_iter().chain(std::iter::once(first)).collect();
    sse_response(endpoint, opening, receiver, guard)
}

/// An SSE response: `opening` deliveries in one write, then the rest as
/// they come, keep-alive comments while idle, and the end when the last
/// delivery is written or the server shuts down.
pub(super) fn sse_response(
    endpoint: &Arc<McpEndpoint>,
    opening: Vec<Delivery>,
    receiver: StreamReceiver,
    guard: Option<StreamGuard>,
) -> Response {
    let retry = endpoint.config.retry;
    let first_chunk = sse::concat(
        &opening
            .iter()
            .map(|d| frame_event(d, retry))
            .collect::<Vec<_>>(),
    );
    let ended = opening.iter().any(|d| d.last);
    let body = Body::from_stream(sse_stream(
        (!first_chunk.is_empty()).then_some(first_chunk),
        ended,
        receiver,
        StreamTiming {
            keep_alive: endpoint.config.keep_alive,
            retry,
        },
        endpoint.shutdown.clone(),
        guard,
    ));
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        // Reverse proxies must not hold events back.
        .header("x-accel-buffering", "no")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// One delivery as SSE bytes: a priming event for an empty text.
fn frame_event(delivery: &Delivery, retry: Duration) -> Bytes {
    match (&delivery.event_id, delivery.text.is_empty()) {
        (Some(id), true) => sse::priming(id, Some(retry)),
        (id, _) => sse::event(id.as_deref(), &delivery.text),
    }
}

/// The timing of an SSE stream.
#[derive(Clone, Copy)]
struct StreamTiming {
    keep_alive: Duration,
    retry: Duration,
}

struct StreamState {
    first: Option<Bytes>,
    retry: Duration,
    ended: bool,
    receiver: StreamReceiver,
    keep_alive: tokio::time::Interval,
    shutdown: CancellationToken,
    _guard: Option<StreamGuard>,
}

fn sse_stream(
    first: Option<Bytes>,
    ended: bool,
    receiver: StreamReceiver,
    timing: StreamTiming,
    shutdown: CancellationToken,
    guard: Option<StreamGuard>,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let keep_alive = timing.keep_alive;
    let mut interval =
        tokio::time::interval_at(tokio::time::Instant::now() + keep_alive, keep_alive);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let state = StreamState {
        first,
        retry: timing.retry,
        ended,
        receiver,
        keep_alive: interval,
        shutdown,
        _guard: guard,
    };
    futures::stream::unfold(state, |mut state| async move {
        if let Some(first) = state.first.take() {
            return Some((Ok(first), state));
        }
        if state.ended {
            return None;
        }
        tokio::select! {
            delivery = state.receiver.recv() => {
                let delivery = delivery?;
                // Write everything already waiting in one chunk.
                let mut chunks = vec![frame_event(&delivery, state.retry)];
                state.ended = delivery.last;
                while !state.ended {
                    match state.receiver.try_recv() {
                        Ok(next) => {
                            state.ended = next.last;
                            chunks.push(frame_event(&next, state.retry));
                        }
                        Err(_) => break,
                    }
                }
                state.keep_alive.reset();
                Some((Ok(sse::concat(&chunks)), state))
            }
            _ = state.keep_alive.tick() => Some((Ok(sse::comment("keep-alive")), state)),
            _ = state.shutdown.cancelled() => None,
        }
    })
}
