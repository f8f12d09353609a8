//! The servers' log messages (`notifications/message`) on stderr, as
//! `[level] logger: data`, from the level chosen with `--server-log` up.

use mcp_schema::jsonrpc::Notification;
use mcp_schema::{LoggingLevel, LoggingMessageNotificationParams, methods};
use serde_json::Value;

use crate::stderr::print_err;

/// Which of a server's log messages are shown: from a level up, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerLog {
    /// Messages at this level or above.
    From(LoggingLevel),
    /// None.
    Off,
}

impl ServerLog {
    /// The level asked of servers: the threshold, or with `Off` the
    /// highest (the fewest messages).
    pub fn level(self) -> LoggingLevel {
        match self {
            ServerLog::From(level) => level,
            ServerLog::Off => LoggingLevel::Emergency,
        }
    }

    /// Whether a message at `level` is shown.
    pub fn shows(self, level: LoggingLevel) -> bool {
        matches!(self, ServerLog::From(min) if level >= min)
    }

    /// A notification handler that shows the log messages this lets
    /// through, each on a line of stderr.
    pub fn handler(self) -> impl Fn(&Notification) + Send + Sync + 'static {
        move |notification: &Notification| {
            if notification.method != methods::NOTIFICATION_MESSAGE {
                return;
            }
            let Some(params) = &notification.params else {
                return;
            };
            let Ok(message) =
                serde_json::from_str::<LoggingMessageNotificationParams>(params.get())
            else {
                return;
            };
            if self.shows(message.level) {
                print_err(&line(&message));
            }
        }
    }
}

/// Reads `--server-log`: `off`, or a level (`debug`, `info`, `notice`,
/// `warning`, `error`, `critical`, `alert`, `emergency`).
pub fn parse_server_log(text: &str) -> Result<ServerLog, String> {
    if text.eq_ignore_ascii_case("off") {
        return Ok(ServerLog::Off);
    }
    serde_json::from_value(Value::String(text.to_ascii_lowercase()))
        .map(ServerLog::From)
        .map_err(|_| {
            format!(
                "unknown level {text:?}: off, debug, info, notice, warning, error, critical, \
                 alert or emergency"
            )
        })
}

/// One log message as shown: `[level] logger: data`, the data as text
/// when it is a string, else as JSON.
fn line(message: &LoggingMessageNotificationParams) -> String {
    let data = match &message.data {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    match &message.logger {
        Some(logger) => format!("[{}] {logger}: {data}", message.level),
        None => format!("[{}] {data}", message.level),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn levels_filter_and_lines_read_well() {
        let warning = parse_server_log("warning").unwrap();
        assert!(warning.shows(LoggingLevel::Error));
        assert!(!warning.shows(LoggingLevel::Info));
        assert!(!ServerLog::Off.shows(LoggingLevel::Emergency));
        assert_eq!(parse_server_log("OFF"), Ok(ServerLog::Off));
        assert!(parse_server_log("loud").is_err());

        let mut message = LoggingMessageNotificationParams::new(LoggingLevel::Warning, "disk low");
        message.logger = Some("db".into());
        assert_eq!(line(&message), "[warning] db: disk low");
        let message = LoggingMessageNotificationParams::new(LoggingLevel::Info, json!({"n": 1}));
        assert_eq!(line(&message), r#"[info] {"n":1}"#);
    }
}
