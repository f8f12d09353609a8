//! A scripted HTTP server standing in for a provider's API as its
//! published reference describes it: each request gets the next answer
//! of the script, and is kept for the test to look at.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpListener;

/// One answer: status, extra headers, content type and body.
#[derive(Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub content_type: &'static str,
    pub body: String,
}

impl Answer {
    /// A JSON answer.
    pub fn json(status: u16, body: serde_json::Value) -> Answer {
        Answer {
            status,
            headers: Vec::new(),
            content_type: "application/json",
            body: body.to_string(),
        }
    }

    /// A stream of server-sent events, each `(event, data)`.
    pub fn events(events: &[(&str, serde_json::Value)]) -> Answer {
        let body = events
            .iter()
            .map(|(event, data)| format!("event: {event}\ndata: {data}\n\n"))
            .collect();
        Answer {
            status: 200,
            headers: Vec::new(),
            content_type: "text/event-stream",
            body,
        }
    }

    /// With a header.
    pub fn with(mut self, name: &'static str, value: &str) -> Answer {
        self.headers.push((name, value.to_owned()));
        self
    }
}

/// A request as received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: serde_json::Value,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The server; its requests in `seen`.
pub struct FakeProvider {
    pub base_url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakeProvider {
    /// Serves `script` in order on a loopback port, one connection per
    /// request.
    pub async fn start(script: Vec<Answer>) -> FakeProvider {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            for answer in script {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let mut stream = BufReader::new(stream);
                let mut line = String::new();
                stream.read_line(&mut line).await.unwrap();
                let path = line.split(' ').nth(1).unwrap_or_default().to_owned();
                let mut headers = Vec::new();
                loop {
                    line.clear();
                    stream.read_line(&mut line).await.unwrap();
                    let Some((name, value)) = line.trim_end().split_once(':') else {
                        break;
                    };
                    headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
                }
                let length: usize = headers
                    .iter()
                    .find(|(n, _)| n == "content-length")
                    .map_or(0, |(_, v)| v.parse().unwrap());
                let mut body = vec![0; length];
                stream.read_exact(&mut body).await.unwrap();
                log.lock().unwrap().push(Seen {
                    path,
                    headers,
                    body: serde_json::from_slice(&body).unwrap_or_default(),
                });
                let mut head = format!(
                    "HTTP/1.1 {} X\r\ncontent-type: {}\r\ncontent-length: {}\r\nconnection: close\r\n",
                    answer.status,
                    answer.content_type,
                    answer.body.len()
                );
                for (name, value) in &answer.headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                let stream = stream.get_mut();
                stream.write_all(head.as_bytes()).await.unwrap();
                stream.write_all(answer.body.as_bytes()).await.unwrap();
                stream.shutdown().await.ok();
            }
        });
        FakeProvider { base_url, seen }
    }

    /// The requests seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}
