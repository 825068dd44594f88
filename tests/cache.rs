//! The read-through cache: penetration, breakdown and avalanche, against a real
//! server, with loads counted. Runs on one server, and with
//! `REDIS_ENTITY_TEST_CLUSTER` set on a 3-master cluster, where the cache
//! entries keep their names (`cache:{<escaped key>}`, a hash tag of their
//! own) and `Product` is in its index shards (`{product:<shard>}:product:7`).

use redis::Commands;
use redis_entity::{Cache, CacheOptions, Error, RedisEntity};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::Target;

type Loads = Arc<AtomicUsize>;

/// A slow loader standing in for the database.
async fn slow_db(
    loads: Loads,
    value: Option<String>,
    delay_ms: u64,
) -> Result<Option<String>, std::io::Error> {
    loads.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    Ok(value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_concurrent_misses_from_two_connections_cause_one_load() {
    let server = Target::start();
    let a = Cache::from_store(&server.store().await);
    let b = Cache::from_store(&server.store().await);
    let loads = Loads::default();
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let cache = if i % 2 == 0 { a.clone() } else { b.clone() };
            let loads = loads.clone();
            tokio::spawn(async move {
                cache
                    .get_or_load("hot:product:1", Duration::from_secs(60), || {
                        slow_db(loads, Some("iPhone".into()), 100)
                    })
                    .await
                    .unwrap()
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap().as_deref(), Some("iPhone"));
    }
    assert_eq!(loads.load(Ordering::SeqCst), 1, "exactly one load");
    // The same entry name in both layouts: its own hash tag.
    let entry = a.key_of("hot:product:1");
    assert_eq!(entry, "cache:{hot%3Aproduct%3A1}");
    let lock: bool = server.conn().exists(format!("{entry}:lock")).unwrap();
    assert!(!lock, "the lock was released");
}

#[tokio::test]
async fn a_thousand_lookups_of_a_missing_id_cause_one_load() {
    let server = Target::start();
    let cache = Cache::from_store(&server.store().await);
    let loads = Loads::default();
    for _ in 0..1000 {
        let v = cache
            .get_or_load("user:404", Duration::from_secs(60), || {
                slow_db(loads.clone(), None, 0)
            })
            .await
            .unwrap();
        assert_eq!(v, None);
    }
    assert_eq!(loads.load(Ordering::SeqCst), 1);
    let entry = cache.key_of("user:404");
    assert_eq!(entry, "cache:{user%3A404}");
    let marker: String = server.conn().get(&entry).unwrap();
    assert_eq!(marker, "n", "the miss is cached as a null marker");
    let ttl: i64 = server.conn().ttl(&entry).unwrap();
    assert!(
        (1..=33).contains(&ttl),
        "null marker lives about null_ttl: {ttl}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loader_that_dies_holding_the_lock_blocks_nobody_past_its_expiry() {
    let server = Target::start();
    // The wait is far longer than the lock's TTL, so that a caller blocked
    // until its wait ran out (the defect this test is about) is told apart
    // from one blocked until the lock expired by seconds, not milliseconds:
    // a loaded CI machine once stalled this test by more than a second.
    let options = CacheOptions {
        lock_ttl: Duration::from_millis(1000),
        wait: Duration::from_secs(30),
        ..CacheOptions::default()
    };
    let store = server.store().await;
    let cache = Cache::from_store(&store).with_options(options);
    // A loader that panics: its task dies with the lock held.
    let dying = cache.clone();
    let crashed = tokio::spawn(async move {
        dying
            .get_or_load("k", Duration::from_secs(60), || async {
                panic!("the database connection died");
                #[allow(unreachable_code)]
                Ok::<Option<String>, std::io::Error>(None)
            })
            .await
    })
    .await;
    assert!(crashed.is_err(), "the loader task panicked");
    assert_eq!(cache.key_of("k"), "cache:{k}");
    let held: bool = server
        .conn()
        .exists(format!("{}:lock", cache.key_of("k")))
        .unwrap();
    assert!(held, "the lock is still held by the dead loader");
    let t = Instant::now();
    let left: i64 = server
        .conn()
        .pttl(format!("{}:lock", cache.key_of("k")))
        .unwrap();
    assert!(left > 0, "the dead loader's lock has an expiry: {left} ms");
    let loads = Loads::default();
    let v = cache
        .get_or_load("k", Duration::from_secs(60), || {
            slow_db(loads.clone(), Some("v".into()), 0)
        })
        .await
        .unwrap();
    let waited = t.elapsed();
    assert_eq!(v.as_deref(), Some("v"));
    assert_eq!(loads.load(Ordering::SeqCst), 1);
    // Nobody loaded while the dead loader's lock held...
    assert!(
        waited >= Duration::from_millis((left as u64).saturating_sub(50)),
        "blocked until the lock expired ({left} ms): {waited:?}"
    );
    // ...and the caller was let through when it expired, not when its own
    // 30 s wait ran out.
    assert!(
        waited < Duration::from_secs(10),
        "not blocked past the lock's expiry: {waited:?}"
    );
}

#[tokio::test]
async fn a_loader_error_is_returned_and_not_cached() {
    let server = Target::start();
    let cache = Cache::from_store(&server.store().await);
    let err = cache
        .get_or_load::<String, _, _, _>("k", Duration::from_secs(60), || async {
            Err(std::io::Error::other("db down"))
        })
        .await
        .unwrap_err();
    assert!(matches!(&err, Error::Loader { .. }), "{err:?}");
    assert!(err.to_string().contains("db down"), "{err}");
    assert!(
        server.keys().is_empty(),
        "nothing cached, no lock left: {:?}",
        server.keys()
    );
    let loads = Loads::default();
    let v = cache
        .get_or_load("k", Duration::from_secs(60), || {
            slow_db(loads.clone(), Some("ok".into()), 0)
        })
        .await
        .unwrap();
    assert_eq!(v.as_deref(), Some("ok"));
    assert_eq!(loads.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn ttls_get_jitter_so_keys_do_not_expire_together() {
    let server = Target::start();
    let cache = Cache::from_store(&server.store().await);
    for i in 0..100 {
        cache
            .get_or_load(&format!("k{i}"), Duration::from_secs(100), || async {
                Ok::<_, std::io::Error>(Some(i))
            })
            .await
            .unwrap();
    }
    let mut c = server.conn();
    let ttls: Vec<i64> = (0..100)
        .map(|i| c.pttl(cache.key_of(&format!("k{i}"))).unwrap())
        .collect();
    let (min, max) = (*ttls.iter().min().unwrap(), *ttls.iter().max().unwrap());
    assert!(min >= 89_000 && max <= 110_000, "within ±10%: {min}..{max}");
    assert!(max - min > 5_000, "spread out: {min}..{max}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stale_while_revalidate_serves_the_old_value_while_one_caller_rebuilds() {
    let server = Target::start();
    let options = CacheOptions {
        stale_while_revalidate: Some(Duration::from_secs(30)),
        jitter: 0.0,
        ..CacheOptions::default()
    };
    let cache = Cache::from_store(&server.store().await).with_options(options);
    let loads = Loads::default();
    let ttl = Duration::from_millis(100);
    let v = cache
        .get_or_load("k", ttl, || slow_db(loads.clone(), Some("v1".into()), 0))
        .await
        .unwrap();
    assert_eq!(v.as_deref(), Some("v1"));
    tokio::time::sleep(Duration::from_millis(150)).await;
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let cache = cache.clone();
            let loads = loads.clone();
            tokio::spawn(async move {
                let t = Instant::now();
                let v = cache
                    .get_or_load("k", ttl, || slow_db(loads, Some("v2".into()), 1000))
                    .await
                    .unwrap();
                (v, t.elapsed())
            })
        })
        .collect();
    let mut stale_fast = 0;
    for t in tasks {
        let (v, took) = t.await.unwrap();
        if v.as_deref() == Some("v1") {
            assert!(
                took < Duration::from_millis(800),
                "stale answers do not wait: {took:?}"
            );
            stale_fast += 1;
        }
    }
    assert_eq!(
        loads.load(Ordering::SeqCst),
        2,
        "one initial load, one rebuild"
    );
    assert_eq!(
        stale_fast, 19,
        "everyone but the rebuilder got the old value at once"
    );
    let v = cache
        .get_or_load("k", ttl, || slow_db(loads.clone(), Some("v3".into()), 0))
        .await
        .unwrap();
    assert_eq!(v.as_deref(), Some("v2"));
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "product")]
struct Product {
    #[pk]
    id: u64,
    name: String,
    #[index]
    category: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn entities_are_read_through_once_and_then_indexed() {
    let server = Target::start();
    let store = server.store().await;
    let cache = Cache::from_store(&store);
    let loads = Loads::default();
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let (store, cache, loads) = (store.clone(), cache.clone(), loads.clone());
            tokio::spawn(async move {
                cache
                    .get_entity_or_load(&store, &7, Duration::from_secs(60), || async move {
                        loads.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        Ok::<_, std::io::Error>(Some(Product {
                            id: 7,
                            name: "tea".into(),
                            category: "drinks".into(),
                        }))
                    })
                    .await
                    .unwrap()
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap().map(|p| p.name), Some("tea".to_string()));
    }
    assert_eq!(loads.load(Ordering::SeqCst), 1);
    let key = store.keys().of::<Product>(7).base;
    if !server.is_cluster() {
        assert_eq!(key, "product:7");
    } else {
        // In the product's index shard, spelled inside as on one server.
        assert!(
            key.starts_with("{product:") && key.ends_with("}:product:7"),
            "{key}"
        );
    }
    let ttl: i64 = server.conn().ttl(&key).unwrap();
    assert!((50..=66).contains(&ttl), "saved with a jittered TTL: {ttl}");
    assert_eq!(
        store.find(Product::CATEGORY, "drinks").await.unwrap().len(),
        1
    );
    // A missing product is looked up once per null TTL.
    let misses = Loads::default();
    for _ in 0..100 {
        let p = cache
            .get_entity_or_load(&store, &8, Duration::from_secs(60), || {
                let misses = misses.clone();
                async move {
                    misses.fetch_add(1, Ordering::SeqCst);
                    Ok::<Option<Product>, std::io::Error>(None)
                }
            })
            .await
            .unwrap();
        assert_eq!(p, None);
    }
    assert_eq!(misses.load(Ordering::SeqCst), 1);
}

#[test]
fn blocking_cache_loads_once_across_threads() {
    let server = Target::start();
    blocking_loads_once(
        &redis_entity::blocking::Store::builder()
            .connect_any(&server.url())
            .unwrap(),
    );
}

fn blocking_loads_once<C: redis::aio::ConnectionLike + Clone + Send + Sync>(
    store: &redis_entity::blocking::Store<C>,
) {
    let cache = redis_entity::blocking::Cache::from_store(store);
    let loads = Loads::default();
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                let v: Option<String> = cache
                    .get_or_load(store, "k", Duration::from_secs(60), || {
                        loads.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(100));
                        Ok::<_, std::io::Error>(Some("v".to_string()))
                    })
                    .unwrap();
                assert_eq!(v.as_deref(), Some("v"));
            });
        }
    });
    assert_eq!(loads.load(Ordering::SeqCst), 1);
    let none: Option<String> = cache
        .get_or_load(store, "missing", Duration::from_secs(60), || {
            Ok::<_, std::io::Error>(None)
        })
        .unwrap();
    assert_eq!(none, None);
}

#[tokio::test]
async fn invalidate_makes_the_next_call_load_again() {
    let server = Target::start();
    let cache = Cache::from_store(&server.store().await);
    let loads = Loads::default();
    for _ in 0..3 {
        cache
            .get_or_load("k", Duration::from_secs(60), || {
                slow_db(loads.clone(), Some("v".into()), 0)
            })
            .await
            .unwrap();
    }
    assert_eq!(loads.load(Ordering::SeqCst), 1);
    cache.invalidate("k").await.unwrap();
    assert!(server.keys().is_empty(), "{:?}", server.keys());
    cache
        .get_or_load("k", Duration::from_secs(60), || {
            slow_db(loads.clone(), Some("v2".into()), 0)
        })
        .await
        .unwrap();
    assert_eq!(loads.load(Ordering::SeqCst), 2);
}

#[test]
fn blocking_entity_read_through() {
    let server = Target::start();
    blocking_read_through(
        &redis_entity::blocking::Store::builder()
            .connect_any(&server.url())
            .unwrap(),
    );
}

fn blocking_read_through<C: redis::aio::ConnectionLike + Clone + Send + Sync>(
    store: &redis_entity::blocking::Store<C>,
) {
    let cache = redis_entity::blocking::Cache::from_store(store);
    let loads = Loads::default();
    for _ in 0..5 {
        let p = cache
            .get_entity_or_load(store, 3, Duration::from_secs(60), || {
                loads.fetch_add(1, Ordering::SeqCst);
                Ok::<_, std::io::Error>(Some(Product {
                    id: 3,
                    name: "rice".into(),
                    category: "food".into(),
                }))
            })
            .unwrap();
        assert_eq!(p.map(|p| p.name).as_deref(), Some("rice"));
    }
    assert_eq!(
        loads.load(Ordering::SeqCst),
        1,
        "later calls read the saved entity"
    );
    assert_eq!(store.find(Product::CATEGORY, "food").unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_load_slower_than_the_lock_ttl_still_happens_once() {
    let server = Target::start();
    let options = CacheOptions {
        // The loader takes four times the lock's expiry; it renews the lock
        // while it runs, so nobody takes it over.
        lock_ttl: Duration::from_millis(300),
        wait: Duration::from_secs(10),
        ..CacheOptions::default()
    };
    let store = server.store().await;
    let cache = Cache::from_store(&store).with_options(options);
    let loads = Loads::default();
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let (cache, loads) = (cache.clone(), loads.clone());
            tokio::spawn(async move {
                cache
                    .get_or_load("slow", Duration::from_secs(60), || {
                        slow_db(loads, Some("v".into()), 1_200)
                    })
                    .await
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap().as_deref(), Some("v"));
    }
    assert_eq!(loads.load(Ordering::SeqCst), 1, "exactly one load");
    assert_eq!(cache.key_of("slow"), "cache:{slow}");
    let lock: bool = server
        .conn()
        .exists(format!("{}:lock", cache.key_of("slow")))
        .unwrap();
    assert!(!lock, "the lock was released");
}

#[tokio::test]
async fn named_caches_keep_apart_and_clear_empties_one() {
    let server = Target::start();
    let store = server.store().await;
    let prices = Cache::from_store(&store).named("prices");
    let stock = Cache::from_store(&store).named("stock");
    let plain = Cache::from_store(&store);
    let loads = Loads::default();
    for (cache, value) in [(&prices, "12.99"), (&stock, "7"), (&plain, "x")] {
        let got = cache
            .get_or_load("sku-1", Duration::from_secs(60), || {
                slow_db(loads.clone(), Some(value.into()), 0)
            })
            .await
            .unwrap();
        assert_eq!(got.as_deref(), Some(value));
    }
    assert_eq!(loads.load(Ordering::SeqCst), 3, "one entry per cache");
    assert_eq!(prices.key_of("sku-1"), "cache:prices:{sku-1}");
    assert_eq!(stock.key_of("sku-1"), "cache:stock:{sku-1}");
    assert_eq!(plain.key_of("sku-1"), "cache:{sku-1}");
    let mut keys = server.keys();
    keys.sort();
    assert_eq!(
        keys,
        [
            "cache:prices:{sku-1}",
            "cache:stock:{sku-1}",
            "cache:{sku-1}"
        ]
    );
    // Many entries, more than one SCAN page: all go, the others stay.
    for i in 0..2500 {
        let _: () = server
            .conn()
            .set(prices.key_of(&format!("k{i}")), "1")
            .unwrap();
    }
    assert_eq!(prices.clear().await.unwrap(), 2501);
    let mut keys = server.keys();
    keys.sort();
    assert_eq!(keys, ["cache:stock:{sku-1}", "cache:{sku-1}"]);
    assert_eq!(plain.clear().await.unwrap(), 1);
    assert_eq!(server.keys(), ["cache:stock:{sku-1}"]);
    // After a clear, the next call loads again.
    let again = prices
        .get_or_load("sku-1", Duration::from_secs(60), || {
            slow_db(loads.clone(), Some("13.49".into()), 0)
        })
        .await
        .unwrap();
    assert_eq!(again.as_deref(), Some("13.49"));
}

/// The options of the hung-loader tests: a short lock, a short maximum load
/// time, and waiters that wait far past it, so that "taken over at
/// max_load" and "gave up at the wait" are seconds apart even on a loaded
/// machine.
fn hung_options() -> CacheOptions {
    CacheOptions {
        lock_ttl: Duration::from_millis(300),
        max_load: Duration::from_millis(1000),
        wait: Duration::from_secs(30),
        jitter: 0.0,
        ..CacheOptions::default()
    }
}

/// Polls until `key` exists, for at most 5 s.
fn wait_for_key(server: &Target, key: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server.conn().exists::<_, bool>(key).unwrap() {
        assert!(Instant::now() < deadline, "{key} never appeared");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A loader hangs (until `release` is notified, far past `max_load`) holding
/// the lock of `key` in `hung`'s cache; a caller of `other` takes over after
/// `max_load` and gets its own value; when the hung loader finally returns,
/// its late value is not stored over the newer one.
async fn hung_loader_is_taken_over_and_fenced(
    server: &Target,
    hung: Cache<impl ConnLike>,
    other: Cache<impl ConnLike>,
) {
    let release = Arc::new(tokio::sync::Notify::new());
    let loads = Loads::default();
    let hung_task = {
        let (release, loads) = (release.clone(), loads.clone());
        tokio::spawn(async move {
            hung.get_or_load("hung", Duration::from_secs(60), || async move {
                loads.fetch_add(1, Ordering::SeqCst);
                release.notified().await;
                Ok::<_, std::io::Error>(Some("late".to_string()))
            })
            .await
        })
    };
    let entry = other.key_of("hung");
    let lock = format!("{entry}:lock");
    wait_for_key(server, &lock);
    let t = Instant::now();
    let fresh = other
        .get_or_load("hung", Duration::from_secs(60), || {
            slow_db(loads.clone(), Some("fresh".into()), 0)
        })
        .await
        .expect("a waiter takes over a hung load after max_load");
    let waited = t.elapsed();
    assert_eq!(fresh.as_deref(), Some("fresh"), "the taker-over's own load");
    assert_eq!(loads.load(Ordering::SeqCst), 2);
    // The lock lapsed at max_load (1 s after the hung loader took it), not
    // at the waiter's `wait` (30 s); a loaded machine may add a few seconds.
    assert!(
        waited < Duration::from_secs(10),
        "taken over at max_load: {waited:?}"
    );
    let raw: String = server.conn().get(&entry).unwrap();
    assert!(
        raw.ends_with(":\"fresh\""),
        "the newer value is stored: {raw}"
    );
    // Long past max_load, the hung loader returns: its value is not stored,
    // and its caller gets the newer one.
    tokio::time::sleep(Duration::from_millis(500)).await;
    release.notify_one();
    let late = tokio::time::timeout(Duration::from_secs(5), hung_task)
        .await
        .expect("the hung caller finishes once its loader returns")
        .unwrap()
        .unwrap();
    let after: String = server.conn().get(&entry).unwrap();
    assert_eq!(
        after, raw,
        "the late value was not written over the newer one"
    );
    assert_eq!(
        late.as_deref(),
        Some("fresh"),
        "the hung caller gets the newer value"
    );
    let lock_left: bool = server.conn().exists(&lock).unwrap();
    assert!(!lock_left, "no lock left");
    let read_back = other
        .get_or_load::<String, _, _, std::io::Error>("hung", Duration::from_secs(60), || async {
            panic!("the entry is cached: no load")
        })
        .await
        .unwrap();
    assert_eq!(read_back.as_deref(), Some("fresh"));
}

trait ConnLike: redis::aio::ConnectionLike + Clone + Send + Sync + 'static {}
impl<C: redis::aio::ConnectionLike + Clone + Send + Sync + 'static> ConnLike for C {}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hung_loader_is_taken_over_after_max_load_and_its_late_value_discarded() {
    let server = Target::start();
    let cache = Cache::from_store(&server.store().await).with_options(hung_options());
    hung_loader_is_taken_over_and_fenced(&server, cache.clone(), cache).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hung_loader_in_another_process_is_taken_over_and_fenced() {
    let server = Target::start();
    // Two stores, two connections: as two processes.
    let hung = Cache::from_store(&server.store().await).with_options(hung_options());
    let other = Cache::from_store(&server.store().await).with_options(hung_options());
    hung_loader_is_taken_over_and_fenced(&server, hung, other).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hung_entity_loader_is_taken_over_and_never_overwrites_the_newer_entity() {
    let server = Target::start();
    let (store_a, store_b) = (server.store().await, server.store().await);
    let hung = Cache::from_store(&store_a).with_options(hung_options());
    let other = Cache::from_store(&store_b).with_options(hung_options());
    let release = Arc::new(tokio::sync::Notify::new());
    let hung_task = {
        let (release, store_a) = (release.clone(), store_a.clone());
        tokio::spawn(async move {
            hung.get_entity_or_load(&store_a, &5, Duration::from_secs(60), || async move {
                release.notified().await;
                Ok::<_, std::io::Error>(Some(Product {
                    id: 5,
                    name: "old tea".into(),
                    category: "old".into(),
                }))
            })
            .await
        })
    };
    let entry = other.key_of(&store_b.keys().of::<Product>(5).base);
    wait_for_key(&server, &format!("{entry}:lock"));
    let t = Instant::now();
    let fresh = other
        .get_entity_or_load(&store_b, &5, Duration::from_secs(60), || async {
            Ok::<_, std::io::Error>(Some(Product {
                id: 5,
                name: "new tea".into(),
                category: "new".into(),
            }))
        })
        .await
        .expect("a waiter takes over a hung load after max_load");
    assert_eq!(fresh.map(|p| p.name).as_deref(), Some("new tea"));
    // Taken over at max_load (1 s), not at the wait (30 s).
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    release.notify_one();
    let late = tokio::time::timeout(Duration::from_secs(5), hung_task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    // Read back from Redis: the newer entity, and only its index entry.
    let stored: Product = store_b.get(&5).await.unwrap().unwrap();
    assert_eq!(
        stored.name, "new tea",
        "the late entity was not saved over it"
    );
    assert_eq!(
        store_b.find(Product::CATEGORY, "new").await.unwrap().len(),
        1
    );
    assert!(store_b
        .find(Product::CATEGORY, "old")
        .await
        .unwrap()
        .is_empty());
    assert_eq!(late.map(|p| p.name).as_deref(), Some("new tea"));
}
