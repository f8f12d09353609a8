//! The event store contract, on a real Redis.

mod support;

use std::sync::Arc;
use std::time::Duration;

use mcp_http::{EventStore as _, ReplayError};
use mcp_redis::RedisEventStore;
use support::Redis;

fn msg(text: &str) -> Arc<str> {
    Arc::from(text)
}

fn texts(replay: &mcp_http::Replay) -> Vec<&str> {
    replay.events.iter().map(|(_, m)| &**m).collect()
}

async fn int(redis: &mut mcp_redis::ConnectionManager, command: &str, key: &str) -> i64 {
    redis::cmd(command)
        .arg(key)
        .query_async(redis)
        .await
        .expect("a Redis command")
}

#[tokio::test]
async fn replays_the_later_events_of_the_same_stream_in_order() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let store = RedisEventStore::new(redis.connect().await);
    let a1 = store.append("s", "1", msg("a1")).await.unwrap();
    let b1 = store.append("s", "2", msg("b1")).await.unwrap();
    let a2 = store.append("s", "1", msg("a2")).await.unwrap();
    store.append("other", "1", msg("x")).await.unwrap();
    let a3 = store.append("s", "1", msg("a3")).await.unwrap();
    let ids = [&a1, &b1, &a2, &a3];
    for (i, id) in ids.iter().enumerate() {
        assert!(!ids[i + 1..].contains(id), "duplicate id {id}");
    }

    let replay = store.replay_after("s", &a1).await.unwrap();
    assert_eq!(replay.stream, "1");
    assert_eq!(texts(&replay), ["a2", "a3"]);
    let replayed: Vec<&str> = replay.events.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(replayed, [a2.as_str(), a3.as_str()]);
    assert!(
        store
            .replay_after("s", &a3)
            .await
            .unwrap()
            .events
            .is_empty()
    );
    let replay = store.replay_after("s", &b1).await.unwrap();
    assert_eq!((replay.stream.as_str(), replay.events.len()), ("2", 0));

    // Another instance on the same Redis resumes the same stream.
    let elsewhere = RedisEventStore::new(redis.connect().await);
    assert_eq!(
        texts(&elsewhere.replay_after("s", &a1).await.unwrap()),
        ["a2", "a3"]
    );
    // Another prefix is another store.
    let apart = RedisEventStore::new(redis.connect().await).prefix("other:");
    assert_eq!(
        apart.replay_after("s", &a1).await,
        Err(ReplayError::UnknownEvent)
    );
}

#[tokio::test]
async fn priming_events_are_resumable_but_not_replayed() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let store = RedisEventStore::new(redis.connect().await);
    let p = store.append("s", "0", msg("")).await.unwrap();
    store.append("s", "0", msg("m1")).await.unwrap();
    store.append("s", "0", msg("")).await.unwrap();
    store.append("s", "0", msg("m2")).await.unwrap();
    assert_eq!(
        texts(&store.replay_after("s", &p).await.unwrap()),
        ["m1", "m2"]
    );
}

#[tokio::test]
async fn ids_of_another_session_or_guessed_ones_replay_nothing() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let store = RedisEventStore::new(redis.connect().await);
    let a1 = store.append("s", "1", msg("a1")).await.unwrap();
    store.append("s", "1", msg("secret")).await.unwrap();
    let t1 = store.append("t", "1", msg("t1")).await.unwrap();
    store.append("t", "1", msg("t2")).await.unwrap();

    // Right ids, wrong sessions: nothing is replayed (an id older than
    // what a stream holds cannot be checked, and is answered as lost).
    for (session, id) in [("t", &a1), ("s", &t1), ("nobody", &a1)] {
        let replay = store.replay_after(session, id).await;
        assert!(
            matches!(
                replay,
                Err(ReplayError::UnknownEvent | ReplayError::Evicted)
            ),
            "{session} {id}: {replay:?}"
        );
    }
    assert_eq!(
        store.replay_after("nobody", &a1).await,
        Err(ReplayError::UnknownEvent)
    );

    // The right entry with another tag; a tag from another event.
    let (head, tag) = a1.rsplit_once('-').unwrap();
    let flipped = format!("{head}-{:016x}", u64::from_str_radix(tag, 16).unwrap() ^ 1);
    let (_, t_tag) = t1.rsplit_once('-').unwrap();
    // Entry ids guessed from the stored ones (the next, the first possible).
    let (stream, entry) = head.split_once(':').unwrap();
    let (ms, seq) = entry.split_once('-').unwrap();
    let next = format!("{stream}:{ms}-{}-{tag}", seq.parse::<u64>().unwrap() + 1);
    for forged in [
        flipped,
        format!("{head}-{t_tag}"),
        next,
        format!("{stream}:0-0-{tag}"),
        format!("{stream}:0-1-0000000000000000"),
        "1:1-1-0000000000000000".to_owned(),
        "garbage".to_owned(),
        String::new(),
    ] {
        let replay = store.replay_after("s", &forged).await;
        assert!(
            matches!(
                replay,
                Err(ReplayError::UnknownEvent | ReplayError::Evicted)
            ),
            "{forged}: {replay:?}"
        );
    }
}

#[tokio::test]
async fn streams_are_bounded_and_expire_and_lost_events_are_reported() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let mut conn = redis.connect().await;
    let store = RedisEventStore::new(conn.clone())
        .max_events_per_stream(10)
        .max_age(Duration::from_secs(60));
    let first = store.append("s", "1", msg("m0")).await.unwrap();
    let mut last = first.clone();
    for i in 1..1000 {
        last = store.append("s", "1", msg(&format!("m{i}"))).await.unwrap();
    }
    let key = store.stream_key("s", "1");
    let len = int(&mut conn, "XLEN", &key).await;
    // `MAXLEN ~` trims whole blocks of entries (100 by default).
    assert!((10..=110).contains(&len), "{len} entries kept");
    assert_eq!(
        store.replay_after("s", &first).await,
        Err(ReplayError::Evicted)
    );
    assert!(
        store
            .replay_after("s", &last)
            .await
            .unwrap()
            .events
            .is_empty()
    );

    // Every key expires after max_age, renewed by each append.
    for key in [key.as_str(), store.session_key("s").as_str()] {
        let ttl = int(&mut conn, "PTTL", key).await;
        assert!(0 < ttl && ttl <= 60_000, "{key}: {ttl} ms to live");
    }
    let short = RedisEventStore::new(conn.clone()).max_age(Duration::from_millis(300));
    let gone = short.append("u", "1", msg("soon gone")).await.unwrap();
    let key = short.stream_key("u", "1");
    support::eventually("the events of an unused stream expire", || {
        let mut conn = conn.clone();
        let key = key.clone();
        async move { int(&mut conn, "EXISTS", &key).await == 0 }
    })
    .await;
    assert!(short.replay_after("u", &gone).await.is_err());
}

#[tokio::test]
async fn drop_session_frees_every_key_of_that_session_only() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let mut conn = redis.connect().await;
    let store = RedisEventStore::new(conn.clone());
    let mut ids = Vec::new();
    for i in 0..20 {
        let stream = (i % 4).to_string();
        ids.push(store.append("s", &stream, msg("0123456789")).await.unwrap());
    }
    let t = store.append("t", "1", msg("t1")).await.unwrap();
    store.append("t", "1", msg("t2")).await.unwrap();

    store.drop_session("s").await;
    for stream in ["0", "1", "2", "3"] {
        assert_eq!(
            int(&mut conn, "EXISTS", &store.stream_key("s", stream)).await,
            0
        );
    }
    assert_eq!(int(&mut conn, "EXISTS", &store.session_key("s")).await, 0);
    for id in &ids {
        assert_eq!(
            store.replay_after("s", id).await,
            Err(ReplayError::UnknownEvent)
        );
    }
    assert_eq!(texts(&store.replay_after("t", &t).await.unwrap()), ["t2"]);
    store.drop_session("never-existed").await;
}

#[tokio::test]
async fn an_outage_is_an_error_and_the_store_recovers() {
    let Some(mut redis) = Redis::start_or_skip() else {
        return;
    };
    let store = RedisEventStore::new(redis.connect().await);
    let before = store.append("s", "1", msg("before")).await.unwrap();
    redis.kill();
    let failed = store.append("s", "1", msg("lost")).await;
    assert!(failed.is_err(), "{failed:?}");
    assert!(
        failed.unwrap_err().to_string().contains("unavailable"),
        "the error says what failed"
    );
    assert_eq!(
        store.replay_after("s", &before).await,
        Err(ReplayError::Unavailable)
    );
    redis.restart();
    support::eventually("the store reconnects", || async {
        store.append("s", "1", msg("after")).await.is_ok()
    })
    .await;
    let id = store.append("s", "1", msg("again")).await.unwrap();
    store.append("s", "1", msg("later")).await.unwrap();
    assert_eq!(
        texts(&store.replay_after("s", &id).await.unwrap()),
        ["later"]
    );
}
