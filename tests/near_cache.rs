//! The near cache against a real server, with a second connection writing:
//! hot reads come from memory; a write elsewhere reaches every reader within
//! the invalidation delay and no older value is read afterwards; the store's
//! own writes are read back at once; a read that races with an invalidation
//! is not kept; a lost connection drops everything; expiry invalidates;
//! 8 writers and 8 readers end with every cached entity equal to Redis.
//!
//! One server; the near cache on a cluster is tests/cluster_near_cache.rs.

use redis::Commands;
use redis_entity::near::{NearCache, NearCacheOptions};
use redis_entity::{RedisEntity, Store};
use std::time::{Duration, Instant};
use support::RedisServer;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct User {
    #[pk]
    id: u64,
    #[index]
    country: String,
    #[index(sorted)]
    score: f64,
    name: String,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "post")]
struct Post {
    #[pk]
    id: u64,
    text: String,
}

fn user(id: u64, name: &str) -> User {
    User {
        id,
        country: "DE".into(),
        score: id as f64,
        name: name.into(),
    }
}

async fn cached_store(server: &RedisServer) -> (Store, NearCache) {
    let near = NearCache::connect(&server.url(), NearCacheOptions::default().only::<User>())
        .await
        .unwrap();
    let store = Store::builder()
        .near_cache(near.clone())
        .connect(&server.url())
        .await
        .unwrap();
    (store, near)
}

/// Waits until `done` holds, at most `limit`; how long it took.
async fn within(limit: Duration, mut done: impl AsyncFnMut() -> bool) -> Duration {
    let t = Instant::now();
    while !done().await {
        assert!(t.elapsed() < limit, "not within {limit:?}");
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    t.elapsed()
}

#[tokio::test]
async fn hot_reads_come_from_memory_until_another_client_writes() {
    let server = RedisServer::start();
    let (store, near) = cached_store(&server).await;
    store.save(&user(9, "lisi")).await.unwrap();
    near.clear();
    let before = server.calls("hmget");
    for _ in 0..100 {
        assert_eq!(store.get::<User>(&9).await.unwrap(), Some(user(9, "lisi")));
    }
    assert_eq!(server.calls("hmget") - before, 1, "one read from Redis");
    let stats = near.stats();
    assert_eq!((stats.hits, stats.misses, stats.entries), (99, 1, 1));

    // Another client renames user 9: the next reads see it within the
    // invalidation delay, and never the old name afterwards. The reads
    // never sleep: hits alone must let the invalidation in.
    let _: () = server.conn().hset("user:9", "name", "zhang").unwrap();
    let t = Instant::now();
    while store.get::<User>(&9).await.unwrap().unwrap().name != "zhang" {
        assert!(t.elapsed() < Duration::from_secs(1), "still the old name");
    }
    let delay = t.elapsed();
    println!("invalidation delay: {delay:?}");
    for _ in 0..100 {
        assert_eq!(store.get::<User>(&9).await.unwrap().unwrap().name, "zhang");
    }
    assert!(near.stats().invalidations >= 1);
}

#[tokio::test]
async fn a_store_reads_its_own_writes_at_once() {
    let server = RedisServer::start();
    let (store, near) = cached_store(&server).await;
    store.save(&user(1, "a")).await.unwrap();
    // The save read the record back in its own round trip (over the
    // cache's connection): the next read is a hit...
    let reads = server.calls("hmget");
    assert_eq!(store.get::<User>(&1).await.unwrap().unwrap().name, "a");
    assert_eq!(server.calls("hmget"), reads);
    assert_eq!((near.stats().hits, near.stats().misses), (1, 0));
    assert_eq!(near.stats().round_trips, 1, "the save's, none for the hit");
    // ...and Redis still tracks it: another client's change reaches it.
    let _: () = server.conn().hset("user:1", "name", "z").unwrap();
    within(Duration::from_secs(1), async || {
        store.get::<User>(&1).await.unwrap().unwrap().name == "z"
    })
    .await;
    for name in ["b", "c", "d"] {
        store.save(&user(1, name)).await.unwrap();
        assert_eq!(store.get::<User>(&1).await.unwrap().unwrap().name, name);
    }
    store
        .update::<User>(&1)
        .set(User::NAME, "e")
        .exec()
        .await
        .unwrap();
    assert_eq!(store.get::<User>(&1).await.unwrap().unwrap().name, "e");
    store.delete::<User>(&1).await.unwrap();
    assert_eq!(store.get::<User>(&1).await.unwrap(), None);
    // A missing entity is cached as missing, and its creation invalidates.
    assert_eq!(store.get::<User>(&2).await.unwrap(), None);
    store.save_all(&[user(2, "x")]).await.unwrap();
    assert_eq!(store.get::<User>(&2).await.unwrap(), Some(user(2, "x")));
}

#[tokio::test]
async fn a_store_reads_the_writes_of_its_units_at_once() {
    let server = RedisServer::start();
    let (store, near) = cached_store(&server).await;
    store.save_all(&[user(1, "a"), user(2, "b")]).await.unwrap();
    for round in 0..20 {
        // Both cached...
        store.get::<User>(&1).await.unwrap();
        store.get::<User>(&2).await.unwrap();
        // ...and changed by a unit over the store's own connection.
        let name = format!("n{round}");
        store
            .transaction()
            .update::<User>(1, |u| u.set(User::NAME, name.clone()))
            .delete::<User>(2)
            .exec()
            .await
            .unwrap();
        assert_eq!(store.get::<User>(&1).await.unwrap().unwrap().name, name);
        assert_eq!(store.get::<User>(&2).await.unwrap(), None);
        store.save(&user(2, "b")).await.unwrap();
    }
    assert!(near.stats().invalidations > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_that_races_with_an_invalidation_is_not_kept() {
    let server = RedisServer::start();
    let (store, near) = cached_store(&server).await;
    store.save(&user(9, "old")).await.unwrap();
    near.clear();
    // Between the read of user 9 and its insert into the cache, another
    // client writes it, and its invalidation is processed.
    let url = server.url();
    let counter = near.clone();
    near.before_insert(move |key| {
        if key != "user:9" {
            return;
        }
        let seen = counter.stats().invalidations;
        let mut c = redis::Client::open(url.as_str())
            .unwrap()
            .get_connection()
            .unwrap();
        let _: () = c.hset("user:9", "name", "new").unwrap();
        let t = Instant::now();
        while counter.stats().invalidations == seen {
            assert!(t.elapsed() < Duration::from_secs(2), "no invalidation");
            std::thread::yield_now();
        }
    });
    // This read returns what it read (the value at that moment)...
    assert_eq!(store.get::<User>(&9).await.unwrap().unwrap().name, "old");
    near.before_insert(|_| {});
    // ...but did not keep it: the next read sees the write.
    assert_eq!(near.stats().raced, 1);
    assert_eq!(store.get::<User>(&9).await.unwrap().unwrap().name, "new");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_through_that_races_with_another_write_is_not_kept() {
    let server = RedisServer::start();
    let (store, near) = cached_store(&server).await;
    // The save reads user 9 back; before that is kept, another client
    // renames it and the invalidation is processed.
    let url = server.url();
    let counter = near.clone();
    near.before_insert(move |_| {
        let seen = counter.stats().invalidations;
        let mut c = redis::Client::open(url.as_str())
            .unwrap()
            .get_connection()
            .unwrap();
        let _: () = c.hset("user:9", "name", "other").unwrap();
        let t = Instant::now();
        while counter.stats().invalidations == seen {
            assert!(t.elapsed() < Duration::from_secs(2), "no invalidation");
            std::thread::yield_now();
        }
    });
    store.save(&user(9, "mine")).await.unwrap();
    near.before_insert(|_| {});
    assert_eq!(near.stats().raced, 1);
    assert_eq!(store.get::<User>(&9).await.unwrap().unwrap().name, "other");
}

#[tokio::test]
async fn a_lost_tracking_connection_drops_every_record() {
    let mut server = RedisServer::start();
    let (store, near) = cached_store(&server).await;
    store.save(&user(9, "lisi")).await.unwrap();
    store.get::<User>(&9).await.unwrap();
    assert_eq!(near.stats().entries, 1);

    // The server drops the tracking connection: no invalidation can come
    // over it any more, so nothing it cached may be served.
    let id = near.client_id().await.unwrap();
    let drops = near.stats().drops;
    let _: () = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(id)
        .query(&mut server.conn())
        .unwrap();
    within(Duration::from_secs(1), async || near.stats().drops > drops).await;
    assert_eq!(near.stats().entries, 0);
    let _: () = server.conn().hset("user:9", "name", "zhang").unwrap();
    assert_eq!(store.get::<User>(&9).await.unwrap().unwrap().name, "zhang");
    assert_ne!(near.client_id().await.unwrap(), id, "a new connection");
    // Tracking is on again on it.
    let _: () = server.conn().hset("user:9", "name", "wang").unwrap();
    within(Duration::from_secs(1), async || {
        store.get::<User>(&9).await.unwrap().unwrap().name == "wang"
    })
    .await;

    // A restarted server: the store and the cache work again.
    server.restart();
    let _ = store.get::<User>(&9).await; // may meet the old connection's end
    within(Duration::from_secs(2), async || {
        matches!(store.get::<User>(&9).await, Ok(None))
    })
    .await;
    // The store's own connection meets the restart on its first write.
    within(Duration::from_secs(2), async || {
        store.save(&user(9, "back")).await.is_ok()
    })
    .await;
    assert_eq!(store.get::<User>(&9).await.unwrap().unwrap().name, "back");
}

#[tokio::test]
async fn an_entity_that_expires_is_not_served_after_its_ttl() {
    let server = RedisServer::start();
    let (store, near) = cached_store(&server).await;
    store
        .expiry()
        .save_with_ttl(&user(9, "lisi"), Duration::from_millis(300))
        .await
        .unwrap();
    assert!(store.get::<User>(&9).await.unwrap().is_some());
    assert!(store.get::<User>(&9).await.unwrap().is_some());
    assert_eq!(near.stats().hits, 2, "kept by the write itself");
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_eq!(store.get::<User>(&9).await.unwrap(), None);
}

#[tokio::test]
async fn get_many_queries_and_top_read_records_from_memory_and_indexes_from_redis() {
    let server = RedisServer::start();
    let (store, near) = cached_store(&server).await;
    let users: Vec<User> = (1..=5).map(|i| user(i, &format!("u{i}"))).collect();
    store.save_all(&users).await.unwrap();
    store
        .save(&Post {
            id: 1,
            text: "hi".into(),
        })
        .await
        .unwrap();
    let warm = store.get_many::<User>(&[1, 2, 3, 4, 5]).await.unwrap();
    assert_eq!(warm.len(), 5);
    let reads = server.calls("hmget");
    let pks = [1, 2, 3, 4, 5];
    for _ in 0..3 {
        let many = store.get_many::<User>(&pks).await.unwrap();
        assert_eq!(many, users.iter().cloned().map(Some).collect::<Vec<_>>());
        let de = store.find(User::COUNTRY, "DE").await.unwrap();
        assert_eq!(de.len(), 5);
        let top = store.board(User::SCORE).top(2).await.unwrap();
        assert_eq!(top, [(user(5, "u5"), 5.0), (user(4, "u4"), 4.0)]);
    }
    assert_eq!(server.calls("hmget"), reads, "no record read from Redis");
    assert!(server.calls("sinter") + server.calls("smembers") + server.calls("evalsha_ro") > 0);
    // A type the cache does not hold is read from Redis every time.
    for _ in 0..3 {
        store.get::<Post>(&1).await.unwrap().unwrap();
    }
    assert_eq!(server.calls("hmget"), reads + 3);
    assert_eq!(near.stats().entries, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_writers_and_eight_readers_end_with_the_cache_equal_to_redis() {
    let server = RedisServer::start();
    let (store, near) = cached_store(&server).await;
    let plain = Store::connect(&server.url()).await.unwrap();
    let ids: Vec<u64> = (1..=10).collect();
    store
        .save_all(&ids.iter().map(|&i| user(i, "v0")).collect::<Vec<_>>())
        .await
        .unwrap();
    let until = Instant::now() + Duration::from_secs(2);
    let mut tasks = Vec::new();
    for t in 0..8u64 {
        // Half the writers write through another store (invalidations from
        // Redis), half through the cached one (its own writes).
        let writer = if t % 2 == 0 {
            plain.clone()
        } else {
            store.clone()
        };
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while Instant::now() < until {
                let id = (n * 7 + t) % 10 + 1;
                writer.save(&user(id, &format!("w{t}-{n}"))).await.unwrap();
                n += 1;
            }
        }));
        let reader = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while Instant::now() < until {
                let id = (n * 3 + t) % 10 + 1;
                reader.get::<User>(&id).await.unwrap();
                if n.is_multiple_of(10) {
                    reader.get_many::<User>(&[id, id % 10 + 1]).await.unwrap();
                }
                n += 1;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    // The last invalidations arrive within the delay; then every record the
    // cache serves equals what Redis holds.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stats = near.stats();
    println!("{stats:?}");
    assert!(stats.hits > 0 && stats.invalidations > 0, "{stats:?}");
    for &id in &ids {
        let cached = store.get::<User>(&id).await.unwrap();
        let stored = plain.get::<User>(&id).await.unwrap();
        assert_eq!(cached, stored, "user {id}");
    }
}

#[test]
fn the_blocking_store_has_a_near_cache_too() {
    let server = RedisServer::start();
    let store = redis_entity::blocking::Store::builder()
        .near_cache(&server.url(), NearCacheOptions::default())
        .connect(&server.url())
        .unwrap();
    store.save(&user(9, "lisi")).unwrap();
    let before = server.calls("hmget");
    for _ in 0..10 {
        assert_eq!(store.get::<User>(&9).unwrap().unwrap().name, "lisi");
    }
    assert_eq!(server.calls("hmget"), before, "kept by the save");
    let _: () = server.conn().hset("user:9", "name", "zhang").unwrap();
    let t = Instant::now();
    while store.get::<User>(&9).unwrap().unwrap().name != "zhang" {
        assert!(t.elapsed() < Duration::from_secs(1), "still the old name");
    }
    let near = store.near_cache().unwrap();
    assert!(near.stats().invalidations >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writes_of_one_entity_through_the_cache_are_kept_in_their_order() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let server = RedisServer::start();
    let (store, near) = cached_store(&server).await;
    store.save(&user(9, "zero")).await.unwrap();
    // The first write's record waits before it is kept until the second
    // write is done (at most 300 ms): kept in the wrong order, the cache
    // would hold the first name while Redis holds the second.
    let (calls, second_done) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let (c, d) = (calls.clone(), second_done.clone());
    near.before_insert(move |_| {
        if c.fetch_add(1, Ordering::SeqCst) == 0 {
            let t = Instant::now();
            while !d.load(Ordering::SeqCst) && t.elapsed() < Duration::from_millis(300) {
                std::thread::yield_now();
            }
        }
    });
    let first = {
        let store = store.clone();
        tokio::spawn(async move { store.save(&user(9, "first")).await.unwrap() })
    };
    while calls.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    let second = {
        let (store, done) = (store.clone(), second_done.clone());
        tokio::spawn(async move {
            store.save(&user(9, "second")).await.unwrap();
            done.store(true, Ordering::SeqCst);
        })
    };
    first.await.unwrap();
    second.await.unwrap();
    near.before_insert(|_| {});
    let stored: String = server.conn().hget("user:9", "name").unwrap();
    assert_eq!(stored, "second");
    assert_eq!(store.get::<User>(&9).await.unwrap().unwrap().name, "second");
}

#[tokio::test]
async fn an_entity_the_server_evicts_is_dropped_from_the_cache() {
    // A small server that evicts the least recently used keys.
    let server =
        RedisServer::start_with(&["--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru"]);
    let near = NearCache::connect(&server.url(), NearCacheOptions::default().only::<User>())
        .await
        .unwrap();
    // Cache-only data: the store accepts a server that evicts any key.
    let store = Store::builder()
        .near_cache(near.clone())
        .allow_eviction(true)
        .connect(&server.url())
        .await
        .unwrap();
    store.save(&user(9, "lisi")).await.unwrap();
    near.clear();
    assert!(store.get::<User>(&9).await.unwrap().is_some());
    assert_eq!(near.stats().entries, 1);
    // Another client fills the server until user 9 is evicted (no TTL, so
    // only the server's invalidation can tell the cache).
    let mut c = server.conn();
    let filler = "x".repeat(10_000);
    let mut i = 0;
    loop {
        let _: () = c.set(format!("filler:{i}"), &filler).unwrap();
        i += 1;
        if i % 50 == 0 {
            let left: bool = redis::cmd("EXISTS").arg("user:9").query(&mut c).unwrap();
            if !left {
                break;
            }
        }
        assert!(i < 10_000, "user 9 was never evicted");
    }
    within(Duration::from_secs(1), async || {
        store.get::<User>(&9).await.unwrap().is_none()
    })
    .await;
    assert!(near.stats().invalidations >= 1);
}
