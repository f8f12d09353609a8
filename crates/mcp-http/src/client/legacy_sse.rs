//! The legacy HTTP+SSE client (2024-11-05): a GET opens an event stream
//! whose first `endpoint` event names where messages are POSTed; every
//! server message arrives as a `message` event on that stream.
//!
//! It runs on the client's connection, as [`Connection`] gives it: the
//! Streamable HTTP client's, which falls back to it.

use std::future::Future;
use std::sync::Arc;

use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use super::config::HttpClientConfig;
use super::message::{
    Outgoing, connect_failure, error_for_reply, http_error, media_type, unreached, unreached_error,
    with_causes,
};
use crate::sse::SseParser;

/// What the HTTP+SSE client needs of the connection it runs on.
pub(crate) trait Connection: Send + Sync + 'static {
    /// The client's settings.
    fn config(&self) -> &HttpClientConfig;
    /// The URL the event stream is opened at.
    fn url(&self) -> &Url;
    /// The HTTP client.
    fn http(&self) -> &reqwest::Client;
    /// Keeps the event stream's task, to stop it when the connection
    /// closes.
    fn keep_stream(&self, task: AbortHandle);
    /// Keeps the endpoint messages are POSTed to.
    fn set_endpoint(&self, endpoint: Url);
    /// The endpoint, once the stream named it.
    fn endpoint(&self) -> Option<Url>;
    /// Hands a message to the engine.
    fn deliver(&self, text: String) -> impl Future<Output = ()> + Send;
    /// Ends the engine's inbound (the connection is over).
    fn end_inbound(&self);
}

/// Sends the request `build` makes, signed in as the connection's
/// authorizer says.
async fn execute<C: Connection>(
    inner: &C,
    build: impl FnMut() -> reqwest::RequestBuilder,
) -> Result<reqwest::Response, reqwest::Error> {
    super::auth::execute(inner.config().authorizer.as_deref(), build).await
}

/// Opens the event stream at the configured URL and waits (bounded by the
/// connect timeout) for its `endpoint` event; the stream is then read on
/// its own task, and its end ends the connection.
pub(crate) async fn open<C: Connection>(inner: &Arc<C>) -> Result<(), String> {
    let mut headers = inner.config().headers.clone();
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    let request = execute(&**inner, || {
        inner
            .http()
            .get(inner.url().clone())
            .headers(headers.clone())
    });
    let response = tokio::time::timeout(inner.config().connect_timeout, request)
        .await
        .map_err(|_| "timed out opening the event stream".to_owned())?
        .map_err(|e| {
            connect_failure(inner.url(), &e).unwrap_or_else(|| format!("GET failed: {e}"))
        })?;
    let status = response.status();
    if !status.is_success() || media_type(&response) != "text/event-stream" {
        return Err(format!(
            "GET answered HTTP {status} {:?}",
            media_type(&response)
        ));
    }
    let (tx, rx) = oneshot::channel();
    let task = tokio::spawn(read(Arc::clone(inner), response, tx));
    inner.keep_stream(task.abort_handle());
    let endpoint = tokio::time::timeout(inner.config().connect_timeout, rx).await;
    match endpoint {
        Ok(Ok(Ok(url))) => {
            tracing::debug!(endpoint = %url, "HTTP+SSE endpoint");
            inner.set_endpoint(url);
            Ok(())
        }
        Ok(Ok(Err(e))) => {
            task.abort();
            Err(e)
        }
        Ok(Err(_)) => Err("the event stream ended before the endpoint event".to_owned()),
        Err(_) => {
            task.abort();
            Err("no endpoint event in time".to_owned())
        }
    }
}

/// Resolves the `endpoint` event's URI against the stream's URL; another
/// origin is refused.
fn resolve_endpoint(base: &Url, data: &str) -> Result<Url, String> {
    let url = base
        .join(data.trim())
        .map_err(|e| format!("bad endpoint {data:?}: {e}"))?;
    if url.origin() != base.origin() {
        return Err(format!("endpoint {url} is not on the origin of {base}"));
    }
    Ok(url)
}

/// Reads the event stream: the endpoint first, then messages, until it ends.
async fn read<C: Connection>(
    inner: Arc<C>,
    mut response: reqwest::Response,
    endpoint: oneshot::Sender<Result<Url, String>>,
) {
    let mut parser = SseParser::new();
    let mut endpoint = Some(endpoint);
    let mut established = false;
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(error = %e, "HTTP+SSE stream dropped");
                break;
            }
        };
        for event in parser.feed(&chunk) {
            match event.event.as_deref() {
                Some("endpoint") => {
                    if let Some(tx) = endpoint.take() {
                        let resolved = resolve_endpoint(inner.url(), &event.data);
                        established = resolved.is_ok();
                        let _ = tx.send(resolved);
                        if !established {
                            return;
                        }
                    }
                }
                None | Some("message") if !event.data.is_empty() => {
                    inner.deliver(event.data).await;
                }
                _ => {}
            }
        }
    }
    if established {
        // The session lived on this stream: without it the connection is over.
        tracing::info!("HTTP+SSE stream ended");
        inner.end_inbound();
    }
}

/// POSTs one message to the endpoint; a failure answers the request with
/// an error (the response itself comes on the event stream).
pub(crate) async fn post<C: Connection>(inner: Arc<C>, out: Outgoing) {
    let Some(endpoint) = inner.endpoint() else {
        return;
    };
    let mut headers = inner.config().headers.clone();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(trace) = &out.trace {
        trace.insert_into(&mut headers);
    }
    tracing::debug!(method = ?out.method, id = ?out.id, "POST (HTTP+SSE)");
    let sent = execute(&*inner, || {
        (inner.http())
            .post(endpoint.clone())
            .headers(headers.clone())
            .body(out.text.clone())
    })
    .await;
    match sent {
        Ok(r) if r.status().is_success() => drop(r),
        Ok(r) => {
            let status = r.status();
            let body = r.text().await.unwrap_or_default();
            match &out.id {
                Some(id) => inner.deliver(error_for_reply(id, status, &body)).await,
                None => tracing::warn!(method = ?out.method, %status, "message refused"),
            }
        }
        Err(e) => match &out.id {
            Some(id) => match unreached(&endpoint, &e) {
                Some(why) => inner.deliver(unreached_error(id, &why)).await,
                None => {
                    let message = format!("HTTP request failed: {}", with_causes(&e));
                    inner.deliver(http_error(id, true, &message)).await;
                }
            },
            None => tracing::warn!(method = ?out.method, error = %e, "message not sent"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_on_the_same_origin_only() {
        let base = Url::parse("http://127.0.0.1:8080/sse").unwrap();
        assert_eq!(
            resolve_endpoint(&base, "/messages?sessionId=abc")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:8080/messages?sessionId=abc"
        );
        assert_eq!(
            resolve_endpoint(&base, "messages").unwrap().as_str(),
            "http://127.0.0.1:8080/messages"
        );
        assert!(resolve_endpoint(&base, "http://evil.example/messages").is_err());
    }
}
