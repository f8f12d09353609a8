//! Connections are bounded: in the time their clients take to send a
//! request's headers (or, idle, the next request) and its body, and in
//! number, in all and per address. Each limit is set low here; the
//! waits below are bounds on a hang (10 s), never timings.

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The limits the tests set: well under the bound on a hang.
const SHORT: Duration = Duration::from_millis(300);

async fn connect(server: &TestServer) -> TcpStream {
    within("connect", TcpStream::connect(("127.0.0.1", server.port)))
        .await
        .expect("connected")
}

/// What the server sends until it closes the connection (a reset counts
/// as a close); panics if it keeps it open past the bound on a hang.
async fn until_closed(stream: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match within(
            "the server to close the connection",
            stream.read(&mut buffer),
        )
        .await
        {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&seen).into_owned(),
            Ok(n) => seen.extend_from_slice(&buffer[..n]),
        }
    }
}

/// A ping POST with `Connection: keep-alive`, whole.
fn ping_request(port: u16) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: {ACCEPT_BOTH}\r\nMCP-Protocol-Version: 2025-06-18\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Sends a ping on `stream` and reads the status line's start: `None`
/// when the server closed the connection instead of answering.
async fn ping_status(server: &TestServer, stream: &mut TcpStream) -> Option<String> {
    stream
        .write_all(ping_request(server.port).as_bytes())
        .await
        .ok()?;
    let mut answer = [0u8; 12];
    within("the answer", stream.read_exact(&mut answer))
        .await
        .ok()?;
    Some(String::from_utf8_lossy(&answer).into_owned())
}

/// A connection that trickles its headers, or sends none, is closed once
/// the header time is up; the server serves others meanwhile.
#[tokio::test]
async fn a_connection_without_whole_headers_is_closed() {
    let mut server = TestServer::start(|c| c.header_read_timeout(SHORT)).await;
    let mut silent = connect(&server).await;
    let mut partial = connect(&server).await;
    partial
        .write_all(b"POST /mcp HTTP/1.1\r\nHo")
        .await
        .expect("sent");
    let session = server.initialize("2025-06-18").await;
    until_closed(&mut silent).await;
    until_closed(&mut partial).await;
    // On a new connection: the client's pooled one, idle since
    // `initialize` as long as the others, is being closed the same way.
    server.http = common::client();
    let reply = server.call(&session, "ping", json!({})).await;
    assert_eq!(reply.body["result"], json!({}), "{reply:?}");
}

/// A keep-alive connection left idle after its response is closed once
/// the header time is up.
#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed() {
    let server = TestServer::start(|c| c.header_read_timeout(SHORT)).await;
    let mut stream = connect(&server).await;
    stream
        .write_all(ping_request(server.port).as_bytes())
        .await
        .expect("sent");
    let seen = until_closed(&mut stream).await;
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    assert!(seen.contains(r#""result":{}"#), "{seen}");
}

/// A body that stops coming is answered 408 once the body time is up,
/// and the connection closed.
#[tokio::test]
async fn a_body_that_stops_coming_gets_408() {
    let server = TestServer::start(|c| c.body_read_timeout(SHORT)).await;
    let mut stream = connect(&server).await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: {ACCEPT_BOTH}\r\nContent-Length: 100\r\n\r\n{{\"jsonr",
        server.port
    );
    stream.write_all(head.as_bytes()).await.expect("sent");
    let seen = until_closed(&mut stream).await;
    assert!(seen.starts_with("HTTP/1.1 408"), "{seen}");
    assert!(seen.contains("-32600"), "{seen}");
}

/// Past the cap on open connections, a new one is closed at once; when
/// one closes there is room again.
#[tokio::test]
async fn connections_past_the_cap_are_closed() {
    let server = TestServer::start(|c| c.max_connections(2)).await;
    let mut first = connect(&server).await;
    let _second = connect(&server).await;
    // The server has taken both (it answers on the first).
    let answer = ping_status(&server, &mut first).await;
    assert_eq!(answer.as_deref(), Some("HTTP/1.1 200"));
    let mut third = connect(&server).await;
    assert_eq!(until_closed(&mut third).await, "");
    drop(first);
    // Room again: a whole call goes through on a fresh connection (the
    // closed one is given back as soon as the server sees it close).
    let mut fourth = loop {
        let mut stream = connect(&server).await;
        if let Some(answer) = ping_status(&server, &mut stream).await {
            assert_eq!(answer, "HTTP/1.1 200");
            break stream;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    fourth.shutdown().await.expect("closed");
}

/// Past the cap on one address's connections, that address's new
/// connection is closed at once.
#[tokio::test]
async fn connections_past_the_cap_per_address_are_closed() {
    let server = TestServer::start(|c| c.max_connections_per_ip(1)).await;
    let mut first = connect(&server).await;
    let answer = ping_status(&server, &mut first).await;
    assert_eq!(answer.as_deref(), Some("HTTP/1.1 200"));
    let mut second = connect(&server).await;
    assert_eq!(until_closed(&mut second).await, "");
}
