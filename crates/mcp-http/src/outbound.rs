//! The queue between whatever sends on a response stream and the
//! connection that writes it out, bounded in messages and bytes. A reader
//! that falls that far behind has its stream closed: every message of a
//! session's stream is in the event store already, so the client resumes
//! from its last event id and loses nothing, while the server holds no
//! more for it than the bounded store does. One message is always taken,
//! whatever its size, so a large response still goes out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use mcp_core::SinkClosed;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TryRecvError;

use crate::session::delivery::Delivery;

/// How far a stream's reader may fall behind before its stream is closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QueueLimits {
    /// Messages waiting, at most.
    pub(crate) messages: usize,
    /// Bytes of message text waiting, at most.
    pub(crate) bytes: usize,
}

/// What the two ends share: what waits, and whether the reader fell behind.
struct Queued {
    limits: QueueLimits,
    messages: AtomicUsize,
    bytes: AtomicUsize,
    overflowed: AtomicBool,
}

/// What the queue carries.
enum Item {
    /// A delivery counted against the limits.
    Counted(Delivery),
    /// A delivery replayed from the event store to a resumed stream: the
    /// store's own text, bounded by it, so not counted.
    Replayed(Delivery),
    /// The reader fell behind: the last item.
    FellBehind,
}

/// The sending end of a stream's queue (cloned for each sender).
#[derive(Clone)]
pub(crate) struct StreamSender {
    tx: mpsc::UnboundedSender<Item>,
    queued: Arc<Queued>,
}

impl std::fmt::Debug for StreamSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamSender")
            .field("waiting", &self.queued.messages.load(Ordering::Relaxed))
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// The receiving end: the connection writing the stream.
pub(crate) struct StreamReceiver {
    rx: mpsc::UnboundedReceiver<Item>,
    queued: Arc<Queued>,
    ended: bool,
}

/// A new queue with these limits.
pub(crate) fn channel(limits: QueueLimits) -> (StreamSender, StreamReceiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    let queued = Arc::new(Queued {
        limits,
        messages: AtomicUsize::new(0),
        bytes: AtomicUsize::new(0),
        overflowed: AtomicBool::new(false),
    });
    let sender = StreamSender {
        tx,
        queued: Arc::clone(&queued),
    };
    let receiver = StreamReceiver {
        rx,
        queued,
        ended: false,
    };
    (sender, receiver)
}

/// A receiver of a stream that has ended already.
pub(crate) fn ended() -> StreamReceiver {
    let (_, mut receiver) = channel(QueueLimits {
        messages: 1,
        bytes: 0,
    });
    receiver.ended = true;
    receiver
}

impl StreamSender {
    /// Queues `delivery`; refused once the reader has gone, or has fallen
    /// behind by the limits (this delivery is then not queued, and the
    /// stream ends after what was).
    pub(crate) fn send(&self, delivery: Delivery) -> Result<(), SinkClosed> {
        let queued = &*self.queued;
        if queued.overflowed.load(Ordering::Acquire) {
            return Err(SinkClosed);
        }
        let size = delivery.text.len();
        let waiting = queued.messages.fetch_add(1, Ordering::AcqRel);
        let bytes = queued.bytes.fetch_add(size, Ordering::AcqRel) + size;
        if waiting > 0 && (waiting >= queued.limits.messages || bytes > queued.limits.bytes) {
            queued.messages.fetch_sub(1, Ordering::AcqRel);
            queued.bytes.fetch_sub(size, Ordering::AcqRel);
            if !queued.overflowed.swap(true, Ordering::AcqRel) {
                tracing::debug!(waiting, bytes, "a stream's reader fell behind; closing it");
                let _ = self.tx.send(Item::FellBehind);
            }
            return Err(SinkClosed);
        }
        self.tx
            .send(Item::Counted(delivery))
            .map_err(|_| SinkClosed)
    }

    /// Queues `delivery`, replayed from the event store to a resumed
    /// stream, outside the limits: the store bounds what it replays.
    pub(crate) fn replay(&self, delivery: Delivery) -> Result<(), SinkClosed> {
        self.tx
            .send(Item::Replayed(delivery))
            .map_err(|_| SinkClosed)
    }

    /// Resolves once the reader has gone (it ends right after falling
    /// behind, too).
    pub(crate) async fn closed(&self) {
        self.tx.closed().await;
    }

    /// Whether the stream is over for senders: its reader went away or
    /// fell behind.
    pub(crate) fn is_closed(&self) -> bool {
        self.tx.is_closed() || self.queued.overflowed.load(Ordering::Acquire)
    }
}

impl StreamReceiver {
    /// The next delivery; `None` once every sender has gone, or right after
    /// the reader fell behind (what was queued is dropped with it: the
    /// client resumes from the store).
    pub(crate) async fn recv(&mut self) -> Option<Delivery> {
        if self.ended {
            return None;
        }
        let next = self.rx.recv().await;
        self.took(next.unwrap_or(Item::FellBehind))
    }

    /// The next delivery if one is queued now.
    pub(crate) fn try_recv(&mut self) -> Result<Delivery, TryRecvError> {
        if self.ended {
            return Err(TryRecvError::Disconnected);
        }
        match self.rx.try_recv() {
            Ok(next) => self.took(next).ok_or(TryRecvError::Disconnected),
            Err(e) => Err(e),
        }
    }

    /// Whether nothing is queued now.
    pub(crate) fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// Accounts for what was taken; the end for the mark of a reader that
    /// fell behind (or for a queue whose senders have all gone).
    fn took(&mut self, next: Item) -> Option<Delivery> {
        match next {
            Item::Counted(delivery) => {
                let queued = &*self.queued;
                queued.messages.fetch_sub(1, Ordering::AcqRel);
                queued
                    .bytes
                    .fetch_sub(delivery.text.len(), Ordering::AcqRel);
                Some(delivery)
            }
            Item::Replayed(delivery) => Some(delivery),
            Item::FellBehind => {
                self.ended = true;
                self.rx.close();
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::delivery::MessageText;

    fn delivery(text: &str) -> Delivery {
        Delivery::new(MessageText::Owned(text.to_owned()), None, false)
    }

    #[tokio::test]
    async fn a_reader_that_keeps_up_gets_everything() {
        let (sender, mut receiver) = channel(QueueLimits {
            messages: 2,
            bytes: 100,
        });
        for round in 0..10 {
            sender.send(delivery(&format!("m{round}"))).expect("queued");
            sender.send(delivery("n")).expect("queued");
            assert_eq!(
                &*receiver.recv().await.expect("one").text,
                format!("m{round}")
            );
            assert_eq!(&*receiver.recv().await.expect("two").text, "n");
        }
        drop(sender);
        assert!(receiver.recv().await.is_none());
    }

    #[tokio::test]
    async fn a_reader_behind_by_messages_or_bytes_ends() {
        for (limits, texts) in [
            (
                QueueLimits {
                    messages: 2,
                    bytes: 1000,
                },
                ["a", "b", "c"],
            ),
            (
                QueueLimits {
                    messages: 100,
                    bytes: 5,
                },
                ["aaa", "bbb", "c"],
            ),
        ] {
            let (sender, mut receiver) = channel(limits);
            sender.send(delivery(texts[0])).expect("queued");
            let refused = texts[1..].iter().any(|t| sender.send(delivery(t)).is_err());
            assert!(refused, "{limits:?}");
            assert!(sender.is_closed());
            assert!(sender.send(delivery("later")).is_err());
            assert!(receiver.recv().await.is_some());
            while receiver.recv().await.is_some() {}
            assert!(receiver.try_recv().is_err());
        }
    }

    #[tokio::test]
    async fn one_large_message_always_goes() {
        let (sender, mut receiver) = channel(QueueLimits {
            messages: 10,
            bytes: 4,
        });
        sender
            .send(delivery("far longer than four"))
            .expect("queued");
        assert_eq!(
            &*receiver.recv().await.expect("taken").text,
            "far longer than four"
        );
        sender.send(delivery("again, long")).expect("queued");
        assert!(receiver.recv().await.is_some());
    }
}
