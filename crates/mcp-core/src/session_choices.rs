//! What a legacy session (2024-11-05 to 2025-11-25) chose with one request
//! and keeps for the rest of its life: its `logging/setLevel` level and the
//! resources it subscribed to. Kept in the session's [`Extensions`], where a
//! server or a gateway reads them when it has something to tell.

use std::collections::HashSet;
use std::sync::Mutex;

use mcp_schema::LoggingLevel;

use crate::extensions::Extensions;
use crate::sync::MutexExt as _;

/// A legacy session's `logging/setLevel` choice.
#[derive(Debug, Default)]
pub struct SessionLogLevel(Mutex<Option<LoggingLevel>>);

impl SessionLogLevel {
    /// Records `level` as the choice of the session `session` holds.
    pub fn choose(session: &Extensions, level: LoggingLevel) {
        *session.get_or_insert_with(Self::default).0.locked() = Some(level);
    }

    /// The level the session chose, if it chose one.
    pub fn of(session: &Extensions) -> Option<LoggingLevel> {
        session.get::<Self>().and_then(|chosen| *chosen.0.locked())
    }
}

/// The resources a legacy session subscribed to (`resources/subscribe`).
#[derive(Debug, Default)]
pub struct ResourceSubscriptions(Mutex<HashSet<String>>);

impl ResourceSubscriptions {
    /// Subscribes the session to `uri` or, when `subscribe` is false,
    /// unsubscribes it; whether that changed anything.
    pub fn change(session: &Extensions, uri: String, subscribe: bool) -> bool {
        let subscriptions = session.get_or_insert_with(Self::default);
        let mut uris = subscriptions.0.locked();
        if subscribe {
            uris.insert(uri)
        } else {
            uris.remove(&uri)
        }
    }

    /// Whether the session is subscribed to `uri`.
    pub fn includes(session: &Extensions, uri: &str) -> bool {
        session
            .get::<Self>()
            .is_some_and(|subscriptions| subscriptions.0.locked().contains(uri))
    }

    /// Whether the session is subscribed to anything.
    pub fn any(session: &Extensions) -> bool {
        session
            .get::<Self>()
            .is_some_and(|subscriptions| !subscriptions.0.locked().is_empty())
    }

    /// Every URI the session is subscribed to.
    pub fn of(session: &Extensions) -> Vec<String> {
        session
            .get::<Self>()
            .map(|subscriptions| subscriptions.0.locked().iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_keeps_its_level_and_its_subscriptions() {
        let session = Extensions::default();
        assert_eq!(SessionLogLevel::of(&session), None);
        SessionLogLevel::choose(&session, LoggingLevel::Warning);
        assert_eq!(SessionLogLevel::of(&session), Some(LoggingLevel::Warning));

        assert!(!ResourceSubscriptions::includes(&session, "a://1"));
        assert!(!ResourceSubscriptions::any(&session));
        assert!(ResourceSubscriptions::change(
            &session,
            "a://1".into(),
            true
        ));
        assert!(!ResourceSubscriptions::change(
            &session,
            "a://1".into(),
            true
        ));
        assert!(ResourceSubscriptions::includes(&session, "a://1"));
        assert!(ResourceSubscriptions::any(&session));
        assert_eq!(
            ResourceSubscriptions::of(&session),
            vec!["a://1".to_owned()]
        );
        assert!(ResourceSubscriptions::change(
            &session,
            "a://1".into(),
            false
        ));
        assert!(!ResourceSubscriptions::change(
            &session,
            "a://1".into(),
            false
        ));
        assert!(ResourceSubscriptions::of(&session).is_empty());
        assert!(!ResourceSubscriptions::any(&session));
    }
}
