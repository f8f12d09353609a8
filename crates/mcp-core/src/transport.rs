//! The transport abstraction: whole frames of JSON text in, through a
//! bounded channel or read by the engine itself, and out through a bounded
//! channel.
//!
//! A transport turns bytes into frames and back; it knows nothing of ids or
//! methods. Each outgoing frame says which incoming request it relates to, so
//! a transport with several streams (Streamable HTTP) can put it on the right
//! one; single-stream transports (stdio) ignore that.

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::extensions::Extensions;
pub use crate::frame::{FrameKind, InboundFrame, OutboundFrame};
use crate::future::BoxFuture;
use crate::line_reader::LineReader;

/// Where a session driven by its transport (see
/// [`DirectSession`](crate::DirectSession)) puts its outgoing frames, in
/// the sending task: no channel and no task in between. A transport with
/// several streams routes each frame there.
pub trait FrameSink: Send + Sync + 'static {
    /// Takes one frame; an error means the transport is gone.
    fn send(&self, frame: OutboundFrame) -> BoxFuture<'_, Result<(), SinkClosed>>;
}

/// The transport behind a [`FrameSink`] has closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SinkClosed;

/// Where the engine reads the peer's frames from: a channel that the
/// transport's own tasks fill, or a stdio stream read by the engine's task
/// itself, which saves a hand-off between tasks per message.
pub struct Inbound(Source);

enum Source {
    Channel(mpsc::Receiver<InboundFrame>),
    Lines(Box<LineReader>),
}

impl Inbound {
    /// Frames read line by line from a stdio stream, in the caller's task.
    pub(crate) fn lines(reader: LineReader) -> Self {
        Inbound(Source::Lines(Box::new(reader)))
    }

    /// The next frame; `None` once the peer hung up.
    pub async fn recv(&mut self) -> Option<InboundFrame> {
        match &mut self.0 {
            Source::Channel(receiver) => receiver.recv().await,
            Source::Lines(reader) => reader.next_frame().await,
        }
    }
}

impl From<mpsc::Receiver<InboundFrame>> for Inbound {
    fn from(receiver: mpsc::Receiver<InboundFrame>) -> Self {
        Inbound(Source::Channel(receiver))
    }
}

impl std::fmt::Debug for Inbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Source::Channel(_) => "Inbound::Channel",
            Source::Lines(_) => "Inbound::Lines",
        })
    }
}

/// The engine's side of a transport. The end of `inbound` (the peer hung
/// up) ends the session; dropping `outbound` tells the transport to finish
/// writing and close.
#[derive(Debug)]
pub struct Transport {
    /// Frames from the peer.
    pub inbound: Inbound,
    /// Frames to the peer.
    pub outbound: mpsc::Sender<OutboundFrame>,
    /// Finishes when everything sent has been written out; the session
    /// waits for it before it reports that it ended.
    pub flushed: Option<tokio::task::JoinHandle<()>>,
}

/// How many frames each direction buffers before the sender waits.
pub const DEFAULT_CHANNEL_CAPACITY: usize = 256;

impl Transport {
    /// Two transports wired to each other in memory: what one sends, the
    /// other receives. For tests and in-process peers.
    pub fn pair() -> (Transport, Transport) {
        Transport::pair_attaching(None)
    }

    /// Like [`Transport::pair`], where every frame the first transport
    /// receives carries `extensions` (the principal an in-process client
    /// speaks for, as an HTTP transport attaches a request's).
    pub fn pair_attaching(extensions: Option<Arc<Extensions>>) -> (Transport, Transport) {
        let (a_out, b_in_raw) = mpsc::channel::<OutboundFrame>(DEFAULT_CHANNEL_CAPACITY);
        let (b_out, a_in_raw) = mpsc::channel::<OutboundFrame>(DEFAULT_CHANNEL_CAPACITY);
        (
            Transport {
                inbound: forward(a_in_raw, extensions).into(),
                outbound: a_out,
                flushed: None,
            },
            Transport {
                inbound: forward(b_in_raw, None).into(),
                outbound: b_out,
                flushed: None,
            },
        )
    }
}

fn forward(
    mut rx: mpsc::Receiver<OutboundFrame>,
    extensions: Option<Arc<Extensions>>,
) -> mpsc::Receiver<InboundFrame> {
    let (tx, out) = mpsc::channel(DEFAULT_CHANNEL_CAPACITY);
    tokio::spawn(async move {
        while let Some(frame) = rx.recv().await {
            if frame.kind == FrameKind::Ended {
                continue;
            }
            let frame = InboundFrame::new(frame.text, extensions.clone());
            if tx.send(frame).await.is_err() {
                break;
            }
        }
    });
    out
}
