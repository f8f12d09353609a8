//! The guard's shared log and waiting rounds, on a real Redis: what one
//! instance appends, another follows from the first entry on, then as it
//! comes; a waiting round is taken once, and expires.

mod support;

use std::time::Duration;

use futures::StreamExt as _;
use mcp_redis::RedisGuardLog;
use support::{Redis, within};

#[tokio::test]
async fn entries_are_followed_from_the_first_and_rounds_taken_once() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let url = redis.url();
    let one = RedisGuardLog::new(&url, redis.connect().await).unwrap();
    let other = RedisGuardLog::new(&url, redis.connect().await).unwrap();
    one.append("{\"n\":1}").await.unwrap();
    one.append("{\"n\":2}").await.unwrap();
    let mut followed = Box::pin(other.follow());
    assert_eq!(
        within("the first", followed.next()).await.unwrap().unwrap(),
        "{\"n\":1}"
    );
    assert_eq!(
        within("the second", followed.next())
            .await
            .unwrap()
            .unwrap(),
        "{\"n\":2}"
    );
    // One appended while the other waits on the stream.
    let appending = {
        let one = one.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            one.append("{\"n\":3}").await
        })
    };
    assert_eq!(
        within("the third", followed.next()).await.unwrap().unwrap(),
        "{\"n\":3}"
    );
    appending.await.unwrap().unwrap();

    one.put_waiting("t1", "round", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        other.take_waiting("t1").await.unwrap().as_deref(),
        Some("round")
    );
    assert_eq!(one.take_waiting("t1").await.unwrap(), None, "taken once");
    one.put_waiting("t2", "brief", Duration::from_millis(100))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(other.take_waiting("t2").await.unwrap(), None, "expired");
}
