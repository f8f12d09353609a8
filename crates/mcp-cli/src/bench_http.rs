//! The measured loop of `mcp bench` over Streamable HTTP. Once a session is
//! open, each lane sends the work request itself on its own keep-alive
//! connection, with the params and headers the MCP client would put on it,
//! and checks every reply (JSON or SSE) for a result with the request's id.
//! Going through the whole client instead (engine, transport task, a
//! general HTTP client) costs the load generator more per call than a fast
//! server spends answering it, and the generator would be what is measured.

use std::fmt::Write as _;
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use bytes::Bytes;
use http::header::{CONTENT_TYPE, HOST};
use http::{HeaderMap, HeaderValue, Request, Uri};
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use mcp_http::sse::SseParser;
use mcp_http::{ReplyKinds, WireProtocol};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::target::Connection;

/// One session's request, ready to be sent again and again.
pub struct HttpWork {
    /// `host:port` to connect to.
    address: String,
    /// The endpoint's path and query.
    path: Uri,
    /// Every header of the POST, `Host` included.
    headers: HeaderMap,
    /// The request's JSON text up to its id: `…,"id":`.
    head: String,
}

impl HttpWork {
    /// The work request of `connection`'s session as its client would POST
    /// it; `None` where lanes do not apply (https, the legacy HTTP+SSE
    /// transport, a server that is not HTTP).
    pub fn prepare(
        url: &str,
        connection: &Connection,
        method: &str,
        params: Value,
    ) -> Result<Option<HttpWork>> {
        let Some(handle) = connection.http_handle() else {
            return Ok(None);
        };
        if handle.wire_protocol() != Some(WireProtocol::StreamableHttp) {
            return Ok(None);
        }
        let url = url::Url::parse(url).with_context(|| format!("invalid URL {url}"))?;
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return Ok(None);
        };
        if url.scheme() != "http" {
            return Ok(None);
        }
        let params = connection.client.wire_params(method, params)?;
        let mut head = format!(r#"{{"jsonrpc":"2.0","method":{}"#, Value::from(method));
        if let Some(params) = params {
            write!(head, r#","params":{}"#, params.get())?;
        }
        head.push_str(r#","id":"#);
        let mut headers = handle.request_headers(&format!("{head}0}}"));
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        headers.insert(HOST, HeaderValue::from_str(&authority)?);
        let path = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        Ok(Some(HttpWork {
            address: format!("{host}:{port}"),
            path: path.parse()?,
            headers,
            head,
        }))
    }
}

/// One keep-alive connection sending one session's work request, one at a
/// time.
pub struct Lane {
    work: Arc<HttpWork>,
    sender: SendRequest<Full<Bytes>>,
    next_id: u64,
    /// The kinds of the replies so far.
    pub replies: ReplyKinds,
}

impl Lane {
    /// Connects to the server of `work`.
    pub async fn open(work: Arc<HttpWork>) -> Result<Lane> {
        let sender = connect(&work.address).await?;
        Ok(Lane {
            work,
            sender,
            next_id: 0,
            replies: ReplyKinds::default(),
        })
    }

    /// Sends the request once and waits for its response; an error for a
    /// failed exchange, an HTTP error or a reply without the request's
    /// response.
    pub async fn call(&mut self) -> Result<Reply> {
        self.next_id += 1;
        let id = self.next_id;
        let mut text = String::with_capacity(self.work.head.len() + 24);
        text.push_str(&self.work.head);
        write!(text, "{id}}}")?;
        let mut request =
            Request::post(self.work.path.clone()).body(Full::new(Bytes::from(text)))?;
        *request.headers_mut() = self.work.headers.clone();
        if self.sender.ready().await.is_err() {
            // The server ended the keep-alive connection: a new one.
            self.sender = connect(&self.work.address).await?;
            self.sender.ready().await?;
        }
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let body = response.into_body().collect().await?.to_bytes();
        if !status.is_success() {
            bail!("HTTP {status}: {}", String::from_utf8_lossy(&body));
        }
        if is_sse {
            self.replies.sse += 1;
            let mut parser = SseParser::new();
            parser
                .feed(&body)
                .iter()
                .find_map(|event| response_to(&event.data, id))
                .unwrap_or_else(|| bail!("no response to request {id} in the stream"))
        } else {
            self.replies.json += 1;
            let text = std::str::from_utf8(&body).context("the reply is not UTF-8")?;
            response_to(text, id)
                .unwrap_or_else(|| bail!("the reply is not the response to request {id}"))
        }
    }
}

/// An HTTP/1.1 connection to `address`, without Nagle's delay.
async fn connect(address: &str) -> Result<SendRequest<Full<Bytes>>> {
    let stream = tokio::net::TcpStream::connect(address)
        .await
        .with_context(|| format!("cannot connect to {address}"))?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .context("HTTP/1.1 handshake")?;
    tokio::spawn(connection);
    Ok(sender)
}

/// How the server answered one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A result.
    Result,
    /// A tool's result with `isError: true`.
    ToolError(String),
    /// A JSON-RPC error.
    Error {
        /// Its code.
        code: i64,
        /// Its message.
        message: String,
    },
}

impl std::fmt::Display for Reply {
    /// The reply in a few words, for a report.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::Result => f.write_str("a result"),
            Reply::ToolError(text) => write!(f, "a tool error (isError): {text}"),
            Reply::Error { code, message } => write!(f, "error {code}: {message}"),
        }
    }
}

/// What a lane reads of a message.
#[derive(Deserialize)]
struct ReplyProbe<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    result: Option<ResultProbe>,
    #[serde(default)]
    error: Option<ErrorProbe>,
}

/// What a lane reads of a result: whether it is a tool's error, and then
/// its first text.
#[derive(Deserialize)]
pub(crate) struct ResultProbe {
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
    #[serde(default)]
    content: Option<Vec<ContentProbe>>,
}

#[derive(Deserialize)]
struct ContentProbe {
    #[serde(default)]
    text: Option<String>,
}

impl ResultProbe {
    /// The reply this result makes.
    pub(crate) fn reply(self) -> Reply {
        if self.is_error != Some(true) {
            return Reply::Result;
        }
        let text = self
            .content
            .into_iter()
            .flatten()
            .find_map(|c| c.text)
            .unwrap_or_default();
        Reply::ToolError(text)
    }
}

#[derive(Deserialize)]
struct ErrorProbe {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    message: String,
}

/// The reply in `text` if it is the response to request `id`.
fn response_to(text: &str, id: u64) -> Option<Result<Reply>> {
    let probe: ReplyProbe = serde_json::from_str(text).ok()?;
    if probe.id?.get().parse::<u64>().ok()? != id {
        return None;
    }
    Some(match (probe.result, probe.error) {
        (Some(result), None) => Ok(result.reply()),
        (_, Some(error)) => Ok(Reply::Error {
            code: error.code,
            message: error.message,
        }),
        (None, None) => Err(anyhow::anyhow!(
            "response {id} has neither result nor error"
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// A server on loopback that answers one request per connection with
    /// its result, then closes the connection.
    async fn one_call_per_connection() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut read = Vec::new();
                let mut buffer = [0u8; 4096];
                // The lane's JSON body ends with the id and a closing brace.
                while !read.ends_with(b"}") {
                    match socket.read(&mut buffer).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => read.extend_from_slice(&buffer[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&read);
                let id = text
                    .rsplit(r#""id":"#)
                    .next()
                    .unwrap()
                    .trim_end_matches('}');
                let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            }
        });
        address
    }

    #[tokio::test]
    async fn a_lane_reconnects_when_the_server_closes_the_connection() {
        let address = one_call_per_connection().await;
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_str(&address).unwrap());
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let work = HttpWork {
            address,
            path: Uri::from_static("/mcp"),
            headers,
            head: r#"{"jsonrpc":"2.0","method":"ping","id":"#.to_owned(),
        };
        let mut lane = Lane::open(Arc::new(work)).await.unwrap();
        for _ in 0..3 {
            let reply = lane.call().await.expect("answered on a new connection");
            assert_eq!(reply, Reply::Result);
        }
        assert_eq!(lane.replies.json, 3);
    }

    #[test]
    fn a_response_is_matched_by_its_id_and_read_for_its_outcome() {
        assert!(matches!(
            response_to(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#, 7),
            Some(Ok(Reply::Result))
        ));
        let error = response_to(
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad"}}"#,
            7,
        );
        assert_eq!(error.unwrap().unwrap().to_string(), "error -32602: bad");
        let failed = r#"{"jsonrpc":"2.0","id":7,"result":{"isError":true,"content":[{"type":"text","text":"no"}]}}"#;
        assert_eq!(
            response_to(failed, 7).unwrap().unwrap(),
            Reply::ToolError("no".into())
        );
        let fine = r#"{"jsonrpc":"2.0","id":7,"result":{"isError":false,"content":[]}}"#;
        assert_eq!(response_to(fine, 7).unwrap().unwrap(), Reply::Result);
        assert!(response_to(r#"{"jsonrpc":"2.0","id":8,"result":{}}"#, 7).is_none());
        assert!(response_to(r#"{"jsonrpc":"2.0","id":"7","result":{}}"#, 7).is_none());
        assert!(response_to(r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#, 7).is_none());
        assert!(response_to("not json", 7).is_none());
        assert!(
            response_to(r#"{"jsonrpc":"2.0","id":7}"#, 7)
                .unwrap()
                .is_err()
        );
    }
}
