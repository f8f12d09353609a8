//! A client that does not read its stream does not make the server hold
//! more for it than the stream's queue limit: once the reader is that far
//! behind, the stream is closed, the session goes on, and the client
//! resumes from the event store, losing nothing the store still keeps.

mod common;

use common::*;
use mcp_schema::LoggingLevel;
use mcp_server::{Context, HandlerError, NoArguments, Server, ToolDef};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How many log messages the flooding tool sends, and how large each is:
/// 16 MiB in all, far more than the socket buffers and the queue hold.
const MESSAGES: usize = 1024;
const MESSAGE_BYTES: usize = 16 * 1024;

/// A server whose `flood` tool sends [`MESSAGES`] log messages before
/// its result.
fn flooding_server() -> Server {
    Server::builder("flood-test", "0.0.1")
        .tool(ToolDef::new(
            "flood",
            "Sends many large log messages, then answers",
            |_: NoArguments, ctx: Context| async move {
                let text = "x".repeat(MESSAGE_BYTES);
                for n in 0..MESSAGES {
                    ctx.log(LoggingLevel::Info, None, json!({"n": n, "text": text}))
                        .await;
                }
                Ok::<_, HandlerError>("flooded")
            },
        ))
        .build()
}

#[tokio::test]
async fn a_stream_whose_reader_falls_behind_is_closed_and_resumable() {
    let server = TestServer::start_with(flooding_server(), |c| c.max_queued(8, 64 * 1024)).await;
    let session = server.initialize("2025-11-25").await;

    // The call, on a socket with a small receive buffer, read only up to
    // the start of its event stream while the tool floods it.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("buffer size");
    let mut stream = within(
        "connect",
        socket.connect(([127, 0, 0, 1], server.port).into()),
    )
    .await
    .expect("connected");
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "flood", "arguments": {}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: {ACCEPT_BOTH}\r\nMcp-Session-Id: {}\r\nMCP-Protocol-Version: {}\r\n\
         Content-Length: {}\r\n\r\n{body}",
        server.port,
        session.id,
        session.version,
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("sent");
    let mut seen = Vec::new();
    let mut buffer = [0u8; 16 * 1024];
    while !String::from_utf8_lossy(&seen).contains("id:") {
        let n = within("the stream's first event", stream.read(&mut buffer))
            .await
            .expect("read");
        assert!(n > 0, "the stream ended before its first event");
        seen.extend_from_slice(&buffer[..n]);
    }

    // Read now: the stream ends (its last chunk comes; the connection may
    // stay open for another request) well before all that was sent.
    while !seen.ends_with(b"\r\n0\r\n\r\n") {
        let n = within("the end of the stream", stream.read(&mut buffer))
            .await
            .expect("read");
        assert!(
            n > 0,
            "the connection closed before the stream's last chunk"
        );
        seen.extend_from_slice(&buffer[..n]);
    }
    let text = String::from_utf8_lossy(&seen).into_owned();
    let received = text.matches("notifications/message").count();
    assert!(
        received < MESSAGES,
        "all {received} messages were held for the slow reader"
    );
    assert!(
        !text.contains("flooded"),
        "the result came on the closed stream"
    );
    let last_id = text
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("id:"))
        .map(str::trim)
        .expect("an event id")
        .to_owned();

    // The session goes on, and the stream resumes after the last event
    // the client read, from the store, to the tool's result.
    let reply = server.call(&session, "ping", json!({})).await;
    assert_eq!(reply.body["result"], json!({}), "{reply:?}");
    let resumed = session
        .headers(server.get())
        .header("last-event-id", &last_id)
        .send();
    let response = within("GET", resumed).await.expect("GET");
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    let mut events = SseStream::new(response);
    let result: Value = loop {
        let (_, message) = within("the result", events.next_message())
            .await
            .expect("an event before the result");
        if message.get("id").is_some() {
            break message;
        }
    };
    assert_eq!(result["id"], 7, "{result}");
    assert_eq!(
        result["result"]["content"][0]["text"], "flooded",
        "{result}"
    );
}
