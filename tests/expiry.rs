//! Expiry never leaves ghosts: after an indexed entity expires, no lookup,
//! query, count or id list returns it, its entries are removed when met and by
//! a bounded `sweep`, and re-creating it does not inherit its old entries.
//! No keyspace notifications, no CONFIG, no background process. Runs on one
//! server, and with `REDIS_ENTITY_TEST_CLUSTER` set on a 3-master cluster,
//! where `Session` (a unique index, so one shard) keeps every key in its
//! shard's space (`{session:0}:session:1:@shadow`, `{session:0}:session:@expiry`)
//! and `Racer` is spread over 16 index shards (`{racer:<shard>}:racer:@points`).

use redis::Commands;
use redis_entity::{AnyConnection, Error, RedisEntity, Store};
use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::Target;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "session")]
struct Session {
    #[pk]
    id: u64,
    #[index(unique)]
    token: String,
    #[index]
    user: u64,
    #[index]
    scopes: BTreeSet<String>,
    #[index(prefix)]
    device: String,
    /// When the writer expects it to expire (ms since the epoch).
    expires_at: u64,
}

/// How much later than the writer's clock Redis may start a TTL (the save's
/// latency on a loaded two-core machine).
const SLACK_MS: u64 = 30;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn session(id: u64, user: u64, ttl_ms: u64) -> Session {
    Session {
        id,
        token: format!("tok{id}"),
        user,
        scopes: BTreeSet::from(["read".to_string()]),
        device: format!("phone-{id}"),
        expires_at: now_ms() + ttl_ms,
    }
}

/// The key space (shard prefix) an entity key `base` lives in, given the
/// entity's standalone key: empty on one server, `{<prefix>:<shard>}:` on a
/// cluster (an entity key ends in its standalone spelling).
fn space(base: &str, standalone: &str) -> String {
    base.strip_suffix(standalone)
        .expect("an entity key ends in its standalone spelling")
        .to_owned()
}

/// `key`, a standalone key of `Session` (`session:@expiry`), in the store's
/// layout: on a cluster inside the space of `Session`'s one shard.
fn in_space(store: &Store<AnyConnection>, key: &str) -> String {
    let space = space(&store.keys().of::<Session>(1).base, &Session::key(&1));
    format!("{space}{key}")
}

/// Every index key of `Session` (under `session:@` in its shard's space).
fn index_keys(server: &Target, store: &Store<AnyConnection>) -> Vec<String> {
    let head = in_space(store, "session:@");
    server
        .keys()
        .into_iter()
        .filter(|k| k.starts_with(&head))
        .collect()
}

/// The shadow key of session `id` in the store's layout.
fn shadow(store: &Store<AnyConnection>, id: u64) -> String {
    store
        .keys()
        .of::<Session>(id)
        .shadow
        .expect("an indexed type has a shadow key")
}

#[tokio::test]
async fn an_expired_entity_is_never_found_and_its_entries_go() {
    let server = Target::start();
    let store = server.store().await;
    store
        .expiry()
        .save_with_ttl(&session(1, 7, 100), Duration::from_millis(100))
        .await
        .unwrap();
    store.save(&session(2, 7, 0)).await.unwrap();
    let shadow_1 = shadow(&store, 1);
    if !server.is_cluster() {
        assert_eq!(shadow_1, "session:1:@shadow");
    } else {
        assert_eq!(shadow_1, "{session:0}:session:1:@shadow");
    }
    let shadow_1: Vec<(String, String)> = server.conn().hgetall(&shadow_1).unwrap();
    assert!(
        !shadow_1.is_empty(),
        "a TTL'd entity keeps a shadow of its entries"
    );
    let persistent: bool = server.conn().exists(shadow(&store, 2)).unwrap();
    assert!(!persistent, "an entity without TTL pays nothing");
    tokio::time::sleep(Duration::from_millis(150)).await;

    assert_eq!(store.get::<Session>(&1).await.unwrap(), None);
    assert_eq!(
        store.find_unique(Session::TOKEN, "tok1").await.unwrap(),
        None
    );
    let q = || store.query::<Session>().eq(Session::USER, 7u64);
    assert_eq!(q().count().await.unwrap(), 1, "count skips the expired one");
    assert_eq!(q().ids().await.unwrap(), [2]);
    assert_eq!(q().fetch().await.unwrap().len(), 1);
    assert_eq!(
        store
            .query::<Session>()
            .prefix(Session::DEVICE, "phone")
            .ids()
            .await
            .unwrap(),
        [2]
    );
    assert_eq!(
        store
            .query::<Session>()
            .none(Session::USER, [9u64])
            .ids()
            .await
            .unwrap(),
        [2]
    );
    // Met by the queries, so every entry of session 1 is gone already.
    let keys = index_keys(&server, &store);
    assert!(
        keys.contains(&in_space(&store, "session:@token:tok2")),
        "{keys:?}"
    );
    assert!(
        !keys.contains(&in_space(&store, "session:@token:tok1")),
        "{keys:?}"
    );
    let members: Vec<u64> = server
        .conn()
        .smembers(in_space(&store, "session:@scopes:read"))
        .unwrap();
    assert_eq!(members, [2]);
    let devices: Vec<String> = server
        .conn()
        .zrange(in_space(&store, "session:@device"), 0, -1)
        .unwrap();
    assert_eq!(devices, ["phone-2:2"]);
    assert!(store
        .maintenance::<Session>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

#[tokio::test]
async fn sweep_removes_what_no_query_met_within_its_budget() {
    let server = Target::start();
    let store = server.store().await;
    for id in 0..10 {
        store
            .expiry()
            .save_with_ttl(&session(id, id, 50), Duration::from_millis(50))
            .await
            .unwrap();
    }
    store.save(&session(100, 100, 0)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let report = store.maintenance::<Session>().verify().await.unwrap();
    assert!(
        !report.is_clean(),
        "expired entities left entries: {report}"
    );
    assert_eq!(store.maintenance::<Session>().sweep(3).await.unwrap(), 3);
    assert_eq!(store.maintenance::<Session>().sweep(100).await.unwrap(), 7);
    assert_eq!(store.maintenance::<Session>().sweep(100).await.unwrap(), 0);
    let report = store.maintenance::<Session>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    let left = index_keys(&server, &store);
    // Session 100's bucket of ids (100-199); the sweep emptied the bucket
    // of 0-99, which left the directory.
    let buckets: Vec<String> = server
        .conn()
        .smembers(in_space(&store, "session:@ids:@buckets"))
        .unwrap();
    assert_eq!(buckets, ["1xx"]);
    assert_eq!(
        left,
        [
            "session:@device",
            "session:@ids:1xx",
            "session:@ids:@buckets",
            "session:@scopes:read",
            "session:@token:tok100",
            "session:@user:100"
        ]
        .map(|k| in_space(&store, k))
    );
    if !server.is_cluster() {
        assert_eq!(
            left,
            [
                "session:@device",
                "session:@ids:1xx",
                "session:@ids:@buckets",
                "session:@scopes:read",
                "session:@token:tok100",
                "session:@user:100"
            ]
        );
    } else {
        assert_eq!(
            left,
            [
                "{session:0}:session:@device",
                "{session:0}:session:@ids:1xx",
                "{session:0}:session:@ids:@buckets",
                "{session:0}:session:@scopes:read",
                "{session:0}:session:@token:tok100",
                "{session:0}:session:@user:100"
            ]
        );
    }
}

#[tokio::test]
async fn a_recreated_entity_does_not_inherit_old_entries_and_unique_values_free_up() {
    let server = Target::start();
    let store = server.store().await;
    store
        .expiry()
        .save_with_ttl(&session(1, 7, 50), Duration::from_millis(50))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Another session may take the expired one's token at once.
    let mut other = session(2, 8, 0);
    other.token = "tok1".into();
    store.insert(&other).await.unwrap();
    // Session 1 comes back for another user and token.
    let mut again = session(1, 9, 0);
    again.token = "fresh".into();
    store.insert(&again).await.unwrap();
    let user7: Vec<u64> = server
        .conn()
        .smembers(in_space(&store, "session:@user:7"))
        .unwrap();
    assert!(user7.is_empty(), "the old entry went with the re-creation");
    let user9: Vec<u64> = server
        .conn()
        .smembers(in_space(&store, "session:@user:9"))
        .unwrap();
    assert_eq!(
        user9,
        [1],
        "the new entry is where the old one was looked for"
    );
    let owner: String = server
        .conn()
        .get(in_space(&store, "session:@token:tok1"))
        .unwrap();
    assert_eq!(owner, "2");
    assert!(store
        .maintenance::<Session>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    let exists: bool = server.conn().exists(shadow(&store, 1)).unwrap();
    assert!(!exists, "no TTL any more, no shadow");
}

#[tokio::test]
async fn expire_and_persist_keep_the_shadow_in_step() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&session(1, 7, 0)).await.unwrap();
    store
        .expiry::<Session>()
        .expire(&1, Duration::from_secs(60))
        .await
        .unwrap();
    let expiry = in_space(&store, "session:@expiry");
    let expiring: Vec<String> = server.conn().zrange(&expiry, 0, -1).unwrap();
    assert_eq!(expiring, ["1"]);
    // An update of an indexed field while the TTL runs updates the shadow.
    store
        .update::<Session>(&1)
        .set(Session::USER, 8u64)
        .exec()
        .await
        .unwrap();
    let shadow_1 = shadow(&store, 1);
    let entries: Vec<(String, String)> = server.conn().hgetall(&shadow_1).unwrap();
    assert!(entries.iter().any(|(_, v)| v == "8"), "{entries:?}");
    let ttl: i64 = server.conn().ttl(&shadow_1).unwrap();
    assert_eq!(ttl, -1, "the shadow outlives the entity");
    // An update of a field no index reads, while the TTL runs, keeps every
    // entry in the shadow (the stored index values are read for it).
    store
        .update::<Session>(&1)
        .set(Session::EXPIRES_AT, 1u64)
        .exec()
        .await
        .unwrap();
    let kept: Vec<(String, String)> = server.conn().hgetall(&shadow_1).unwrap();
    assert_eq!(kept, entries);
    store.expiry::<Session>().persist(&1).await.unwrap();
    let expiring: Vec<String> = server.conn().zrange(&expiry, 0, -1).unwrap();
    assert!(expiring.is_empty());
    let exists: bool = server.conn().exists(&shadow_1).unwrap();
    assert!(!exists);
    assert!(store.delete::<Session>(&1).await.unwrap());
    // No key of session 1 is left: not its hash, its maps or its shadow.
    let base = store.keys().of::<Session>(1).base;
    let keys = server.keys();
    assert!(
        keys.iter()
            .all(|k| k != &base && !k.starts_with(&format!("{base}:"))),
        "{keys:?}"
    );
}

#[tokio::test]
async fn save_without_ttl_and_update_persist_remove_the_ttl_in_the_same_write() {
    let server = Target::start();
    let store = server.store().await;
    let mut c = server.conn();
    let expiry = in_space(&store, "session:@expiry");
    let expiring =
        |c: &mut support::TargetConnection| -> Vec<String> { c.zrange(&expiry, 0, -1).unwrap() };
    store
        .expiry()
        .save_with_ttl(&session(1, 7, 60_000), Duration::from_secs(60))
        .await
        .unwrap();
    // A plain save keeps the remaining TTL...
    store.save(&session(1, 8, 60_000)).await.unwrap();
    assert!(store.expiry::<Session>().ttl(&1).await.unwrap().is_some());
    // ...save_without_ttl removes it, with the shadow and the expiry entry.
    store
        .expiry()
        .save_without_ttl(&session(1, 9, 0))
        .await
        .unwrap();
    assert_eq!(store.expiry::<Session>().ttl(&1).await.unwrap(), None);
    assert!(expiring(&mut c).is_empty());
    let shadow: bool = c.exists(shadow(&store, 1)).unwrap();
    assert!(!shadow);
    let got = store.get::<Session>(&1).await.unwrap().unwrap();
    assert_eq!(got.user, 9);

    // update().persist() changes a field and removes the TTL atomically.
    store
        .expiry::<Session>()
        .expire(&1, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(expiring(&mut c), ["1"]);
    store
        .update::<Session>(&1)
        .set(Session::USER, 10u64)
        .persist()
        .exec()
        .await
        .unwrap();
    assert_eq!(store.expiry::<Session>().ttl(&1).await.unwrap(), None);
    assert!(expiring(&mut c).is_empty());
    assert_eq!(store.find(Session::USER, 10u64).await.unwrap().len(), 1);
    // The last of ttl() and persist() wins.
    store
        .update::<Session>(&1)
        .persist()
        .ttl(Duration::from_secs(30))
        .exec()
        .await
        .unwrap();
    assert!(store.expiry::<Session>().ttl(&1).await.unwrap().is_some());
    // Without a TTL to remove, persist is harmless.
    store
        .expiry()
        .save_without_ttl(&session(2, 7, 0))
        .await
        .unwrap();
    assert_eq!(store.expiry::<Session>().ttl(&2).await.unwrap(), None);
    assert!(store
        .maintenance::<Session>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn expired_entities_never_appear_while_eight_writers_keep_saving() {
    let server = Target::start();
    let store = server.store().await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..8u64)
        .map(|w| {
            let store = store.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut i = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let id = (w * 7 + i) % 40;
                    let ttl = 20 + (i * 13 + w) % 60;
                    let mut s = session(id, id % 3, ttl);
                    s.token = format!("w{w}-{i}");
                    match store
                        .expiry()
                        .save_with_ttl(&s, Duration::from_millis(ttl))
                        .await
                    {
                        Ok(_) | Err(Error::UniqueViolation { .. }) => {}
                        Err(e) => panic!("{e}"),
                    }
                    i += 1;
                }
                i
            })
        })
        .collect();
    let mut checked = 0;
    let deadline = std::time::Instant::now() + Duration::from_millis(1500);
    while std::time::Instant::now() < deadline {
        let started = now_ms();
        for u in 0..3u64 {
            for s in store.find(Session::USER, u).await.unwrap() {
                // `expires_at` is taken before the save reaches Redis, whose
                // clock starts the TTL a little later: allow that latency.
                assert!(
                    s.expires_at + SLACK_MS >= started,
                    "returned an expired session: {s:?}"
                );
                assert_eq!(s.user, u, "returned a session that does not match");
                checked += 1;
            }
        }
        let fetched = store
            .query::<Session>()
            .prefix(Session::DEVICE, "phone")
            .fetch()
            .await
            .unwrap();
        for s in fetched {
            assert!(
                s.expires_at + SLACK_MS >= started,
                "returned an expired session: {s:?}"
            );
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut writes = 0;
    for w in writers {
        writes += w.await.unwrap();
    }
    assert!(
        writes > 100 && checked > 10,
        "writes {writes}, checked {checked}"
    );
    // Once everything has expired, nothing is found or counted, and a sweep
    // leaves no entry behind.
    tokio::time::sleep(Duration::from_millis(150)).await;
    for u in 0..3u64 {
        assert_eq!(
            store
                .query::<Session>()
                .eq(Session::USER, u)
                .count()
                .await
                .unwrap(),
            0
        );
    }
    while store.maintenance::<Session>().sweep(1000).await.unwrap() > 0 {}
    let report = store.maintenance::<Session>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(
        index_keys(&server, &store),
        Vec::<String>::new(),
        "no ghost left"
    );
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "racer")]
struct Racer {
    #[pk]
    id: u64,
    #[index(sorted)]
    points: f64,
}

#[tokio::test]
async fn a_leaderboard_read_skips_thousands_of_expired_entries_and_cleans_a_bounded_few() {
    let server = Target::start();
    let store = server.store().await;
    // 20,000 racers ahead of everyone else expire; five live ones stay.
    let fast: Vec<Racer> = (100..20_100)
        .map(|id| Racer {
            id,
            points: 1_000.0 + id as f64,
        })
        .collect();
    for chunk in fast.chunks(2_000) {
        for r in chunk {
            store
                .expiry()
                .save_with_ttl(r, Duration::from_millis(300))
                .await
                .unwrap();
        }
    }
    let live: Vec<Racer> = (1..=5)
        .map(|id| Racer {
            id,
            points: id as f64,
        })
        .collect();
    store.save_all(&live).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    // `racer:@points` in every index shard of `Racer` (one on one server,
    // each shard's own on a cluster): the entries left are their sum.
    let spaces: BTreeSet<String> = (1..20_100)
        .map(|id| space(&store.keys().of::<Racer>(id).base, &Racer::key(&id)))
        .collect();
    assert_eq!(spaces.len(), if server.is_cluster() { 16 } else { 1 });
    let points = |server: &Target| -> u64 {
        let mut c = server.conn();
        spaces
            .iter()
            .map(|s| c.zcard::<_, u64>(format!("{s}racer:@points")).unwrap())
            .sum()
    };
    assert_eq!(
        points(&server),
        20_005,
        "the expired racers' entries are there"
    );

    let top = store.board(Racer::POINTS).top(5).await.unwrap();
    let ids: Vec<u64> = top.iter().map(|(r, _)| r.id).collect();
    assert_eq!(ids, [5, 4, 3, 2, 1]);
    // The read removed the entries of at most 100 expired racers; the rest
    // are left to `sweep` (and to later reads).
    let left = points(&server);
    assert!(
        (20_005 - 100..20_005).contains(&left),
        "{left} entries left after one read"
    );
    assert_eq!(store.board(Racer::POINTS).rank(5).await.unwrap(), Some(0));
    assert_eq!(store.board(Racer::POINTS).rank(1).await.unwrap(), Some(4));
    let page = store
        .query::<Racer>()
        .order_desc(Racer::POINTS)
        .limit(1, 2)
        .ids()
        .await
        .unwrap();
    assert_eq!(page, [4, 3]);
    let ranged = store
        .query::<Racer>()
        .range(Racer::POINTS, 2.0..)
        .order_asc(Racer::POINTS)
        .limit(0, 10)
        .ids()
        .await
        .unwrap();
    assert_eq!(ranged, [2, 3, 4, 5]);

    let left = points(&server);
    let mut swept = 0;
    loop {
        let n = store.maintenance::<Racer>().sweep(5_000).await.unwrap();
        if n == 0 {
            break;
        }
        swept += n;
    }
    assert_eq!(swept as u64, left - 5);
    assert_eq!(points(&server), 5);
    // With the expired entries swept, ranks count the live racers alone.
    assert_eq!(store.board(Racer::POINTS).rank(5).await.unwrap(), Some(0));
    assert_eq!(store.board(Racer::POINTS).rank(1).await.unwrap(), Some(4));
}
