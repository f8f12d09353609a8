//! Waiting for files to change: their modification times looked at once
//! a second, or at once on SIGHUP (which asks for a reload whatever the
//! times say).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// Files watched for a change.
pub(crate) struct FileWatch {
    files: Vec<PathBuf>,
    seen: Vec<Option<SystemTime>>,
    #[cfg(unix)]
    hangup: Option<tokio::signal::unix::Signal>,
}

impl FileWatch {
    /// Watches `files` from how they are now.
    pub(crate) fn new(files: Vec<PathBuf>) -> Self {
        let seen = stamps(&files);
        FileWatch {
            files,
            seen,
            #[cfg(unix)]
            hangup: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok(),
        }
    }

    /// Returns once a file changed, or SIGHUP came.
    pub(crate) async fn changed(&mut self) {
        loop {
            #[cfg(unix)]
            let signalled = async {
                match self.hangup.as_mut() {
                    Some(signal) => drop(signal.recv().await),
                    None => std::future::pending().await,
                }
            };
            #[cfg(not(unix))]
            let signalled = std::future::pending::<()>();
            let forced = tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => false,
                _ = signalled => true,
            };
            let now = stamps(&self.files);
            if forced || now != self.seen {
                self.seen = now;
                return;
            }
        }
    }
}

fn stamps(files: &[PathBuf]) -> Vec<Option<SystemTime>> {
    files
        .iter()
        .map(|f| std::fs::metadata(f).and_then(|m| m.modified()).ok())
        .collect()
}
