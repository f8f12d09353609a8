//! A request's handling while its response is open: what is cancelled
//! when the client goes, and the sink a stateless request's messages go to.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::outbound::{self, QueueLimits, StreamReceiver, StreamSender};
use mcp_core::{BoxFuture, DirectSession, FrameKind, FrameSink, OutboundFrame, SinkClosed};

use crate::session::{Delivery, MessageText, Outlet};
use mcp_core::sync::MutexExt as _;

/// Closes a request's own session when dropped.
pub(super) struct CloseOnDrop(pub(super) DirectSession);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// The handling of a POSTed message, which its response drives until the
/// first message comes (so a plain call needs no task of its own). Its
/// work may end with the response's text, which the response then carries.
pub(super) struct Handling {
    pub(super) work: Option<Work>,
}

/// The future of a [`Handling`], kept in the box it was made in: a
/// request's future is large, and each move of it is a copy.
pub(super) enum Work {
    /// Sends everything through the session, and goes on when the
    /// response is dropped unfinished, as the client may resume its
    /// stream. Ends with the response's text only when nothing was sent on
    /// the stream before it, so that it goes out as the plain reply.
    Sending(BoxFuture<'static, Option<String>>),
    /// Ends with the response's text (empty when it has none), which goes
    /// to the sender once the response is already streaming, behind what
    /// came before it (a stateless request). Stops when the response is
    /// dropped unfinished: the client went away, which cancels it.
    Answering(BoxFuture<'static, Option<String>>, StreamSender),
}

impl Work {
    /// Where the text this work ends with goes once the response streams.
    pub(super) fn answer_to(self) -> Option<StreamSender> {
        match self {
            Work::Sending(_) => None,
            Work::Answering(_, answer_to) => Some(answer_to),
        }
    }
}

impl Future for Work {
    type Output = Option<String>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<String>> {
        match self.get_mut() {
            Work::Sending(work) => work.as_mut().poll(cx),
            Work::Answering(work, _) => work.as_mut().poll(cx),
        }
    }
}

impl Handling {
    /// Work that sends everything, its response too, through the session.
    pub(super) fn finished_if_dropped(work: BoxFuture<'static, Option<String>>) -> Self {
        Handling {
            work: Some(Work::Sending(work)),
        }
    }

    /// Work that ends with the response's text (empty when it has none).
    pub(super) fn abandoned_if_dropped(
        work: impl Future<Output = Option<String>> + Send + 'static,
        answer_to: StreamSender,
    ) -> Self {
        Handling {
            work: Some(Work::Answering(Box::pin(work), answer_to)),
        }
    }

    /// Runs the rest of the work on a task of its own, unless it finishes
    /// right now; its response follows the deliveries.
    pub(super) fn detach(mut self) {
        let Some(mut work) = self.work.take() else {
            return;
        };
        // Polled as it is first: most work ends here, and needs no task.
        match futures::FutureExt::now_or_never(&mut work) {
            Some(answer) => queue_answer(work.answer_to(), answer),
            None => {
                tokio::spawn(async move {
                    let answer = (&mut work).await;
                    queue_answer(work.answer_to(), answer);
                });
            }
        }
    }
}

/// The delivery of a response text a handling ended with; none for the
/// empty text of a request that was cancelled.
pub(super) fn answer_delivery(text: String) -> Option<Delivery> {
    (!text.is_empty()).then_some(Delivery::new(MessageText::Owned(text), None, true))
}

/// Puts the response a handling ended with behind the deliveries already
/// sent to its response.
pub(super) fn queue_answer(to: Option<StreamSender>, answer: Option<String>) {
    if let (Some(to), Some(delivery)) = (to, answer.and_then(answer_delivery)) {
        let _ = to.send(delivery);
    }
}

impl Drop for Handling {
    fn drop(&mut self) {
        if let Some(work @ Work::Sending(_)) = self.work.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                work.await;
            });
        }
    }
}

/// The frames a stateless request's handler sends before its response.
/// They are held until the response opens its stream (most requests send
/// none, and no channel is made for them); from then on they go straight
/// onto that stream.
pub(super) struct ResponseSink {
    outlet: std::sync::Mutex<Outlet>,
    /// How far the response's reader may fall behind.
    limits: QueueLimits,
}

impl ResponseSink {
    pub(super) fn new(limits: QueueLimits) -> Self {
        ResponseSink {
            outlet: std::sync::Mutex::default(),
            limits,
        }
    }

    fn outlet(&self) -> std::sync::MutexGuard<'_, Outlet> {
        self.outlet.locked()
    }

    /// Whether nothing has been sent yet.
    pub(super) fn holds_nothing(&self) -> bool {
        self.outlet().holds_nothing()
    }

    /// The response's stream, with what was held already in it. Takes the
    /// caller's handle, so that the stream ends once the session lets go
    /// of the sink and the returned sender is dropped.
    pub(super) fn open(self: Arc<Self>) -> (StreamSender, StreamReceiver) {
        let opened = self.outlet().open(self.limits);
        debug_assert!(opened.is_some(), "opened twice");
        opened.unwrap_or_else(|| outbound::channel(self.limits))
    }
}

impl FrameSink for ResponseSink {
    fn send(&self, frame: OutboundFrame) -> BoxFuture<'_, Result<(), SinkClosed>> {
        let sent = match frame.kind {
            // Cancelled: the response ends when the session closes.
            FrameKind::Ended => Ok(()),
            kind => self.outlet().send(Delivery::new(
                MessageText::Owned(frame.text),
                None,
                kind == FrameKind::Response,
            )),
        };
        Box::pin(std::future::ready(sent))
    }
}
