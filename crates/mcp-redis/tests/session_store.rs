//! The session store, on a real Redis.

mod support;

use std::time::Duration;

use mcp_http::{SessionRecord, SessionStore as _};
use mcp_redis::RedisSessionStore;
use mcp_schema::{Implementation, LoggingLevel};
use support::Redis;

const TTL: Duration = Duration::from_secs(60);

#[tokio::test]
async fn records_are_saved_loaded_renewed_and_removed() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let mut conn = redis.connect().await;
    let store = RedisSessionStore::new(conn.clone());
    let mut record = SessionRecord::new("2025-06-18")
        .with_client_info(Implementation::new("client", "1.0"))
        .with_owner("alice");
    record.log_level = Some(LoggingLevel::Warning);
    record.subscriptions.insert("file:///notes".to_owned());

    assert_eq!(store.load("s", TTL).await.unwrap(), None);
    assert!(!store.touch("s", TTL).await.unwrap());
    store
        .save("s", &record, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(store.load("s", TTL).await.unwrap(), Some(record.clone()));
    // Loading renewed the lifetime to the TTL given.
    let ttl: i64 = redis::cmd("PTTL")
        .arg(store.key("s"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(5_000 < ttl && ttl <= 60_000, "{ttl} ms to live");
    assert!(store.touch("s", TTL).await.unwrap());

    // Another instance sees the same record.
    let elsewhere = RedisSessionStore::new(redis.connect().await);
    assert_eq!(elsewhere.load("s", TTL).await.unwrap(), Some(record));
    elsewhere.remove("s").await.unwrap();
    assert_eq!(store.load("s", TTL).await.unwrap(), None);
    assert!(!store.touch("s", TTL).await.unwrap());
    store.remove("s").await.unwrap();
}

#[tokio::test]
async fn records_expire_when_unused() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let conn = redis.connect().await;
    let store = RedisSessionStore::new(conn.clone()).prefix("test:");
    store
        .save(
            "s",
            &SessionRecord::new("2025-03-26"),
            Duration::from_millis(200),
        )
        .await
        .unwrap();
    assert!(store.key("s").starts_with("test:"));
    // Watched without loading it, which would renew it.
    support::eventually("an unused record expires", || {
        let mut conn = conn.clone();
        let key = store.key("s");
        async move {
            let exists: i64 = redis::cmd("EXISTS")
                .arg(key)
                .query_async(&mut conn)
                .await
                .unwrap();
            exists == 0
        }
    })
    .await;
    assert_eq!(store.load("s", TTL).await.unwrap(), None);
}

#[tokio::test]
async fn an_unreadable_record_or_an_outage_is_an_error() {
    let Some(mut redis) = Redis::start_or_skip() else {
        return;
    };
    let mut conn = redis.connect().await;
    let store = RedisSessionStore::new(conn.clone());
    let _: () = redis::cmd("SET")
        .arg(store.key("bad"))
        .arg("{not json")
        .query_async(&mut conn)
        .await
        .unwrap();
    let error = store.load("bad", TTL).await.unwrap_err();
    assert!(error.to_string().contains("unreadable"), "{error}");

    redis.kill();
    let error = store.load("s", TTL).await.unwrap_err();
    assert!(error.to_string().contains("unavailable"), "{error}");
    assert!(store.touch("s", TTL).await.is_err());
    assert!(
        store
            .save("s", &SessionRecord::new("2025-03-26"), TTL)
            .await
            .is_err()
    );
}
