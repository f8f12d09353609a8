//! A thread per connection: async code hands it jobs over a channel and
//! awaits the answer, so no SQLite call runs on the async threads and no
//! lock is held across an `.await`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mcp_server::{Context, HandlerError};

use super::engine::Session;

type Job = Box<dyn FnOnce(&mut Session) + Send>;

/// A thread owning one [`Session`], running the jobs sent to it in order.
#[derive(Clone)]
pub struct Worker {
    jobs: std::sync::mpsc::Sender<Job>,
}

/// Marks a job abandoned when the future awaiting it is dropped first, so
/// that the progress handler stops its statement.
struct AbandonOnDrop(Arc<AtomicBool>, bool);

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        if !self.1 {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

impl Worker {
    /// Starts the thread for `session`. It ends when every handle to the
    /// worker is dropped.
    pub fn spawn(name: &str, mut session: Session) -> std::io::Result<Worker> {
        let (jobs, inbox) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                for job in inbox {
                    job(&mut session);
                }
            })?;
        Ok(Worker { jobs })
    }

    /// Runs `job` on the connection's thread within the time budget and
    /// waits for its result.
    pub async fn run<T, F>(&self, job: F) -> Result<T, HandlerError>
    where
        T: Send + 'static,
        F: FnOnce(&Session) -> T + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let abandoned = Arc::new(AtomicBool::new(false));
        let mut guard = AbandonOnDrop(Arc::clone(&abandoned), false);
        let job: Job = Box::new(move |session: &mut Session| {
            if abandoned.load(Ordering::Relaxed) {
                return;
            }
            session.start(abandoned);
            let result = job(session);
            session.finish();
            let _ = reply.send(result);
        });
        self.jobs
            .send(job)
            .map_err(|_| HandlerError::failed("the database connection is closed"))?;
        let result = answer
            .await
            .map_err(|_| HandlerError::failed("the database connection ended during the call"));
        guard.1 = true;
        result
    }

    /// Like [`Worker::run`], and ends early when the client cancels the
    /// request: the statement is stopped at its next progress check.
    pub async fn run_until_cancelled<T, F>(&self, ctx: &Context, job: F) -> Result<T, HandlerError>
    where
        T: Send + 'static,
        F: FnOnce(&Session) -> T + Send + 'static,
    {
        tokio::select! {
            result = self.run(job) => result,
            () = ctx.cancelled() => Err(HandlerError::failed("the call was cancelled")),
        }
    }
}
