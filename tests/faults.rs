//! A failed write changes nothing: a key of the wrong type planted at every
//! key family an entity's writes touch makes the write fail with a typed
//! error naming that key, and the whole keyspace is byte-for-byte what it
//! was before (compared with `DUMP` and `PTTL` of every key).
//!
//! One server: it compares the whole keyspace of that server with `DUMP`.

use redis_entity::{Error, RedisEntity, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use support::RedisServer;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "acct")]
struct Acct {
    #[pk]
    id: u64,
    #[index(unique)]
    username: String,
    #[index]
    country: String,
    #[index]
    tags: BTreeSet<String>,
    #[index(sorted)]
    score: f64,
    #[index(prefix)]
    title: String,
    #[hash]
    settings: BTreeMap<String, String>,
}

fn acct(id: u64, username: &str, country: &str) -> Acct {
    Acct {
        id,
        username: username.into(),
        country: country.into(),
        tags: ["a".to_string()].into(),
        score: 1.5,
        title: "ruby".into(),
        settings: [("theme".to_string(), "dark".to_string())].into(),
    }
}

/// Plants `key` holding a value of another type than its family uses.
fn plant(server: &RedisServer, key: &str, as_string: bool) {
    let mut c = server.conn();
    let () = redis::cmd("DEL").arg(key).query(&mut c).unwrap();
    if as_string {
        let () = redis::cmd("SET")
            .arg(key)
            .arg("planted")
            .query(&mut c)
            .unwrap();
    } else {
        let _: i64 = redis::cmd("SADD")
            .arg(key)
            .arg("planted")
            .query(&mut c)
            .unwrap();
    }
}

async fn fresh() -> (RedisServer, Store) {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store.save(&acct(1, "lisi", "DE")).await.unwrap();
    store.save(&acct(2, "zhang", "FR")).await.unwrap();
    (server, store)
}

/// Runs `write` against a keyspace with `key` planted, and checks that it
/// fails naming `key` and changes nothing.
async fn refused<F, Fut>(what: &str, key: &str, as_string: bool, write: F)
where
    F: FnOnce(Store) -> Fut,
    Fut: std::future::Future<Output = redis_entity::Result<()>>,
{
    let (server, store) = fresh().await;
    plant(&server, key, as_string);
    let before = server.snapshot();
    let err = write(store).await.expect_err(what);
    match &err {
        Error::WrongType { key: named, .. } => assert_eq!(named, key, "{what}: {err}"),
        other => panic!("{what}: expected WrongType naming {key}, got {other:?}"),
    }
    assert!(!err.to_string().contains("user_script"), "{what}: {err}");
    assert_eq!(server.snapshot(), before, "{what}: the keyspace changed");
}

#[tokio::test]
async fn a_write_that_meets_a_wrong_type_changes_nothing() {
    // A save moving the entity to CN, under a new name, from tag a to tag b.
    let moved = || {
        let mut a = acct(1, "lisi2", "CN");
        a.tags = ["b".to_string()].into();
        a.score = 9.0;
        a.title = "rust".into();
        a
    };
    for (what, key, as_string) in [
        ("new equality set", "acct:@country:CN", true),
        ("old equality set", "acct:@country:DE", true),
        ("new unique key", "acct:@username:lisi2", false),
        ("old unique key", "acct:@username:lisi", false),
        ("new tag set", "acct:@tags:b", true),
        ("old tag set", "acct:@tags:a", true),
        ("sorted index", "acct:@score", true),
        ("prefix index", "acct:@title", true),
    ] {
        refused(what, key, as_string, |store| async move {
            store.save(&moved()).await.map(drop)
        })
        .await;
    }

    // Integer ids live in buckets of 100 (`xx`: 0-99), listed in a directory.
    refused("set of all ids", "acct:@ids:xx", true, |store| async move {
        store.insert(&acct(3, "wang", "DE")).await
    })
    .await;
    refused(
        "directory of id buckets",
        "acct:@ids:@buckets",
        true,
        |store| async move { store.insert(&acct(300, "wang", "DE")).await },
    )
    .await;
    refused(
        "one set of ids written before buckets",
        "acct:@ids",
        true,
        |store| async move { store.delete::<Acct>(&1).await.map(drop) },
    )
    .await;
    refused("expiry set", "acct:@expiry", true, |store| async move {
        store
            .expiry()
            .save_with_ttl(&acct(1, "lisi", "DE"), Duration::from_secs(60))
            .await
            .map(drop)
    })
    .await;
    refused("#[hash] map", "acct:1:settings", true, |store| async move {
        store
            .update::<Acct>(&1)
            .hset(Acct::SETTINGS, "font", "mono")
            .exec()
            .await
    })
    .await;
    refused(
        "delete: equality set",
        "acct:@country:DE",
        true,
        |store| async move { store.delete::<Acct>(&1).await.map(drop) },
    )
    .await;
    refused(
        "update: new equality set",
        "acct:@country:JP",
        true,
        |store| async move {
            store
                .update::<Acct>(&2)
                .set(Acct::COUNTRY, "JP")
                .exec()
                .await
        },
    )
    .await;
}

#[tokio::test]
async fn the_entity_key_of_the_wrong_type_fails_before_any_write() {
    let (server, store) = fresh().await;
    plant(&server, "acct:1", false);
    let before = server.snapshot();
    let err = store.save(&acct(1, "lisi", "CN")).await.unwrap_err();
    assert!(
        matches!(&err, Error::WrongType { key, .. } if key == "acct:1"),
        "{err:?}"
    );
    assert_eq!(server.snapshot(), before);
}

#[tokio::test]
async fn after_the_planted_key_is_gone_the_write_goes_through() {
    let (server, store) = fresh().await;
    plant(&server, "acct:@country:CN", true);
    assert!(store.save(&acct(1, "lisi", "CN")).await.is_err());
    let () = redis::cmd("DEL")
        .arg("acct:@country:CN")
        .query(&mut server.conn())
        .unwrap();
    store.save(&acct(1, "lisi", "CN")).await.unwrap();
    assert_eq!(
        store
            .find(Acct::COUNTRY, "CN")
            .await
            .unwrap()
            .into_iter()
            .map(|a| a.id)
            .collect::<Vec<_>>(),
        [1]
    );
    assert!(store
        .maintenance::<Acct>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "counter")]
struct Counter {
    #[pk]
    id: u64,
    #[index]
    kind: String,
    hits: i64,
    ratio: f64,
}

/// A counter of kind `a` with `hits`.
fn counter(id: u64, hits: i64) -> Counter {
    Counter {
        id,
        kind: "a".into(),
        hits,
        ratio: 0.5,
    }
}

/// Another program's text in `field` of `key` (not a number).
fn write_text(server: &RedisServer, key: &str, field: &str) {
    let () = redis::cmd("HSET")
        .arg(key)
        .arg(field)
        .arg("n/a")
        .query(&mut server.conn())
        .unwrap();
}

#[tokio::test]
async fn an_increment_of_a_field_that_is_not_a_number_changes_nothing() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store.save(&counter(1, 1)).await.unwrap();
    // Another program wrote text into the counter.
    write_text(&server, "counter:1", "ratio");
    let before = server.snapshot();
    // The first increment alone would succeed; the second cannot.
    let err = store
        .update::<Counter>(&1)
        .incr(Counter::HITS, 1)
        .incr(Counter::RATIO, 1.0)
        .set(Counter::KIND, "b".to_string())
        .exec()
        .await
        .unwrap_err();
    match &err {
        Error::Decode {
            key, field, value, ..
        } => {
            assert_eq!((key.as_str(), *field), ("counter:1", "ratio"));
            assert!(value.contains("n/a"), "{err}");
        }
        other => panic!("expected Decode naming counter:{{1}} ratio, got {other:?}"),
    }
    assert!(!err.to_string().contains("@user"), "{err}");
    assert_eq!(server.snapshot(), before, "nothing was written");
}

/// One increment with an index move: the straight-line write moves the
/// `kind` entry before it increments, so a refused increment (text in the
/// counter, or an overflow) must put the entry back.
#[tokio::test]
async fn a_refused_increment_puts_back_the_index_entry_it_moved() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    for (id, hits) in [(1, 1), (2, i64::MAX)] {
        store.save(&counter(id, hits)).await.unwrap();
    }
    write_text(&server, "counter:1", "hits");
    let before = server.snapshot();
    let err = store
        .update::<Counter>(&1)
        .set(Counter::KIND, "b".to_string())
        .incr(Counter::HITS, 1)
        .exec()
        .await
        .unwrap_err();
    match &err {
        Error::Decode { key, field, .. } => {
            assert_eq!((key.as_str(), *field), ("counter:1", "hits"))
        }
        other => panic!("expected Decode naming counter:1 hits, got {other:?}"),
    }
    assert_eq!(server.snapshot(), before, "nothing was written");
    let err = store
        .update::<Counter>(&2)
        .set(Counter::KIND, "b".to_string())
        .incr(Counter::HITS, 1)
        .exec()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("overflow"), "{err}");
    assert_eq!(server.snapshot(), before, "nothing was written");
    let kind_a: Vec<String> = redis::cmd("SMEMBERS")
        .arg("counter:@kind:a")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(kind_a.len(), 2, "{kind_a:?}");
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "runner")]
struct Runner {
    #[pk]
    id: u64,
    #[index(sorted)]
    points: f64,
}

#[tokio::test]
async fn a_nan_range_bound_is_a_typed_error_before_anything_is_sent() {
    let server = RedisServer::start();
    let (store, trips) = support::counted_store(&server).await;
    trips.take();
    for q in [
        store.query::<Runner>().range(Runner::POINTS, f64::NAN..),
        store.query::<Runner>().range(Runner::POINTS, ..=f64::NAN),
    ] {
        match q.fetch().await {
            Err(Error::Encode {
                field: "points", ..
            }) => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(trips.take(), 0, "nothing was sent");
    // Infinite bounds are bounds.
    store.save(&Runner { id: 1, points: 3.0 }).await.unwrap();
    let all = store
        .query::<Runner>()
        .range(Runner::POINTS, f64::NEG_INFINITY..f64::INFINITY)
        .ids()
        .await
        .unwrap();
    assert_eq!(all, [1]);
}

#[tokio::test]
async fn a_ttl_too_long_for_redis_is_the_longest_one_not_a_panic_or_a_wrap() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    let r = Runner { id: 1, points: 1.0 };
    store
        .expiry()
        .save_with_ttl(&r, Duration::MAX)
        .await
        .unwrap();
    let ttl = store.expiry::<Runner>().ttl(&1).await.unwrap().unwrap();
    assert!(ttl > Duration::from_secs(100 * 365 * 86_400), "{ttl:?}");
    assert_eq!(store.get::<Runner>(&1).await.unwrap(), Some(r));
}

#[tokio::test]
async fn verify_and_repair_go_on_past_an_unreadable_entity_and_a_bad_score() {
    let (server, store) = fresh().await;
    store.save(&acct(3, "wang", "JP")).await.unwrap();
    // Entity 2's key now holds a set; entity 3's score is text.
    plant(&server, "acct:2", false);
    let () = redis::cmd("HSET")
        .arg("acct:3")
        .arg("score")
        .arg("fast")
        .query(&mut server.conn())
        .unwrap();

    let report = store.maintenance::<Acct>().verify().await.unwrap();
    let unreadable: Vec<&str> = report
        .violations
        .iter()
        .filter_map(|v| match v {
            redis_entity::verify::Violation::Unreadable { key, .. } => Some(key.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(unreadable, ["acct:2"], "{report}");
    // Its entries are not called stale: the entity is there, unreadable.
    assert!(!report.to_string().contains("lists `2`"), "{report}");

    // Repair fixes what it can (entity 3's score entry, which a text value
    // cannot have) and leaves entity 2 alone.
    let repaired = store.maintenance::<Acct>().repair(&report).await.unwrap();
    // Listed as left: the unreadable entity, with why.
    assert!(
        repaired.left.iter().any(|u| matches!(
            &u.violation,
            redis_entity::verify::Violation::Unreadable { key, .. } if key == "acct:2"
        ) && u.reason.contains("another type")),
        "{repaired}"
    );
    let mut c = server.conn();
    let score: Option<f64> = redis::cmd("ZSCORE")
        .arg("acct:@score")
        .arg("3")
        .query(&mut c)
        .unwrap();
    assert_eq!(score, None);
    let still: bool = redis::cmd("SISMEMBER")
        .arg("acct:@country:FR")
        .arg("2")
        .query(&mut c)
        .unwrap();
    assert!(still, "entity 2's entries are left for a person to decide");
    // What is left needs a person: the unreadable entity 2, and entity 3's
    // score, which is text.
    let again = store.maintenance::<Acct>().verify().await.unwrap();
    assert!(
        again.violations.iter().all(|v| matches!(
            v,
            redis_entity::verify::Violation::Unreadable { .. }
                | redis_entity::verify::Violation::Undecodable { field: "score", .. }
        )),
        "{again}"
    );
    assert_eq!(again.violations.len(), 2, "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_during_eight_writers_leaves_no_half_written_entity() {
    const AOF: [&str; 4] = ["--appendonly", "yes", "--appendfsync", "always"];
    let mut server = RedisServer::start_with(&AOF);
    let url = server.url();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..8u64)
        .map(|w| {
            let (url, stop) = (url.clone(), stop.clone());
            tokio::spawn(async move {
                let store = Store::connect(&url).await.unwrap();
                let mut i = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let id = w * 1_000 + i % 50;
                    let country = ["DE", "FR", "CN"][(i % 3) as usize];
                    // Saves, moves between index entries, deletes; errors
                    // once the server is gone end the writer.
                    let r = match i % 5 {
                        4 => store.delete::<Acct>(&id).await.map(drop),
                        _ => store
                            .save(&acct(id, &format!("w{w}n{}", i % 50), country))
                            .await
                            .map(drop),
                    };
                    if r.is_err() {
                        break;
                    }
                    i += 1;
                }
                i
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(700)).await;
    // kill -9 in the middle of the writes, then start again from the AOF.
    server.restart_with(&AOF);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut written = 0;
    for w in writers {
        written += w.await.unwrap();
    }
    assert!(written > 100, "the writers wrote ({written})");
    let store = Store::connect(&server.url()).await.unwrap();
    let report = store.maintenance::<Acct>().verify().await.unwrap();
    assert!(report.entities > 0, "{report}");
    assert!(report.is_clean(), "{report}");
}

#[tokio::test]
async fn verify_reports_a_field_that_does_not_decode_with_its_key() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    for id in 1..=3 {
        store
            .save(&Counter {
                id,
                kind: "a".into(),
                hits: 1,
                ratio: 0.5,
            })
            .await
            .unwrap();
    }
    let mut c = server.conn();
    let () = redis::cmd("HSET")
        .arg("counter:2")
        .arg("hits")
        .arg("many")
        .query(&mut c)
        .unwrap();
    let () = redis::cmd("HDEL")
        .arg("counter:3")
        .arg("ratio")
        .query(&mut c)
        .map(|_: i64| ())
        .unwrap();
    let report = store.maintenance::<Counter>().verify().await.unwrap();
    let found: Vec<(String, &str)> = report
        .violations
        .iter()
        .filter_map(|v| match v {
            redis_entity::verify::Violation::Undecodable { key, field, .. } => {
                Some((key.clone(), *field))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        found,
        [
            ("counter:2".to_string(), "hits"),
            ("counter:3".to_string(), "ratio")
        ],
        "{report}"
    );
    assert_eq!(report.violations.len(), 2, "{report}");
    // Repair leaves such records to a person, says why, and does not fail
    // on them.
    let repaired = store
        .maintenance::<Counter>()
        .repair(&report)
        .await
        .unwrap();
    assert_eq!(repaired.fixed, 0, "{repaired}");
    assert_eq!(repaired.left.len(), 2, "{repaired}");
    assert!(
        repaired
            .left
            .iter()
            .all(|u| u.reason.contains("does not decode")),
        "{repaired}"
    );
}

/// A hash at an entity's key that holds none of the fields its type reads
/// (here: another program's field only): a read asks for the type's fields
/// (`HMGET`) and finds no entity; `verify` reads the hash whole and reports
/// it as an entity that does not decode, not as the leftover of a gone
/// one, so `repair` leaves the hash and its field where they are.
#[tokio::test]
async fn a_hash_without_its_types_fields_reads_as_no_entity_and_repair_keeps_it() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store.save(&counter(1, 1)).await.unwrap();
    let mut c = server.conn();
    let () = redis::cmd("HSET")
        .arg("counter:1")
        .arg("legacy")
        .arg("x")
        .query(&mut c)
        .map(|_: i64| ())
        .unwrap();
    let () = redis::cmd("HDEL")
        .arg("counter:1")
        .arg(&["kind", "hits", "ratio"])
        .query(&mut c)
        .map(|_: i64| ())
        .unwrap();
    assert_eq!(store.get::<Counter>(&1).await.unwrap(), None);
    let report = store.maintenance::<Counter>().verify().await.unwrap();
    let undecodable: Vec<&str> = report
        .violations
        .iter()
        .filter_map(|v| match v {
            redis_entity::verify::Violation::Undecodable { key, .. } => Some(key.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(undecodable, ["counter:1"], "{report}");
    assert!(
        !report
            .violations
            .iter()
            .any(|v| matches!(v, redis_entity::verify::Violation::Leftover { .. })),
        "{report}"
    );
    store
        .maintenance::<Counter>()
        .repair(&report)
        .await
        .unwrap();
    let kept: Vec<(String, String)> = redis::cmd("HGETALL")
        .arg("counter:1")
        .query(&mut c)
        .unwrap();
    assert_eq!(kept, [("legacy".to_string(), "x".to_string())]);
}

/// A type whose columns may all be absent: a stored hash that holds only a
/// field an earlier definition wrote (a dropped column) is an entity of
/// that type with every column absent, for reads as for writes; such a
/// type is read whole (`HGETALL`), since its fields alone cannot say that
/// it exists.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "jotting")]
struct Jotting {
    #[pk]
    id: u64,
    body: Option<String>,
}

#[tokio::test]
async fn a_hash_holding_only_a_dropped_field_is_an_entity_whose_columns_are_absent() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    let mut c = server.conn();
    let () = redis::cmd("HSET")
        .arg("jotting:1")
        .arg("title")
        .arg("from v1")
        .query(&mut c)
        .map(|_: i64| ())
        .unwrap();
    let () = redis::cmd("SADD")
        .arg("jotting:@ids:xx")
        .arg("1")
        .query(&mut c)
        .map(|_: i64| ())
        .unwrap();
    let absent = Jotting { id: 1, body: None };
    assert!(store.exists::<Jotting>(1).await.unwrap());
    assert_eq!(
        store.get::<Jotting>(&1).await.unwrap(),
        Some(absent.clone())
    );
    // Saved again as it reads: still there, for reads and writes alike.
    store.save(&absent).await.unwrap();
    assert_eq!(
        store.get::<Jotting>(&1).await.unwrap(),
        Some(absent.clone())
    );
    assert_eq!(
        store.get_many::<Jotting>(&[1, 2]).await.unwrap(),
        [Some(absent), None]
    );
}

/// An update that moves no index entry (a counter's increment, with a field
/// no index reads set beside it) takes the straight-line code's short path:
/// refused with a typed error and nothing written when the counter holds
/// text or would overflow, or the entity is missing; and on an entity with
/// a TTL it goes to the general code, which keeps the TTL (and whose
/// overflow reads as the server says it, without the script's location).
#[tokio::test]
async fn an_update_that_moves_no_index_entry_refuses_and_writes_as_the_rest() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    for (id, hits) in [(1, 1), (2, i64::MAX), (3, 5), (4, 7), (5, i64::MAX)] {
        store.save(&counter(id, hits)).await.unwrap();
    }
    write_text(&server, "counter:1", "hits");
    let before = server.snapshot();
    let bump = |id: u64| {
        store
            .update::<Counter>(&id)
            .incr(Counter::HITS, 1)
            .set(Counter::RATIO, 2.5)
            .exec()
    };
    match bump(1).await.unwrap_err() {
        Error::Decode { key, field, .. } => {
            assert_eq!((key.as_str(), field), ("counter:1", "hits"))
        }
        other => panic!("expected Decode naming counter:1 hits, got {other:?}"),
    }
    let err = bump(2).await.unwrap_err();
    assert!(err.to_string().contains("overflow"), "{err}");
    let err = bump(9).await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    assert_eq!(server.snapshot(), before, "nothing was written");
    bump(3).await.unwrap();
    let c = store.get::<Counter>(&3).await.unwrap().unwrap();
    assert_eq!((c.hits, c.ratio, c.kind.as_str()), (6, 2.5, "a"));
    // With a TTL: the general code, the TTL kept.
    for id in [4, 5] {
        store
            .update::<Counter>(&id)
            .ttl(std::time::Duration::from_secs(600))
            .exec()
            .await
            .unwrap();
    }
    bump(4).await.unwrap();
    let c = store.get::<Counter>(&4).await.unwrap().unwrap();
    assert_eq!((c.hits, c.ratio), (8, 2.5));
    let ttl: i64 = redis::cmd("PTTL")
        .arg("counter:4")
        .query(&mut server.conn())
        .unwrap();
    assert!(ttl > 500_000, "{ttl}");
    // An overflow raised inside the general code (the entity has a TTL),
    // which the library compiles on first use: the server's message,
    // without the location of the script it came from.
    let err = bump(5).await.unwrap_err().to_string();
    assert!(err.contains("overflow"), "{err}");
    assert!(!err.contains("script") && !err.contains("user_"), "{err}");
    // Only the text another program wrote is out of place.
    let report = store.maintenance::<Counter>().verify().await.unwrap();
    assert_eq!(report.violations.len(), 1, "{report:?}");
    assert!(format!("{report:?}").contains("counter:1"), "{report:?}");
}

/// A counter beside a `#[hash]` map.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "tally")]
struct Tally {
    #[pk]
    id: u64,
    #[index]
    kind: String,
    hits: i64,
    #[hash]
    notes: BTreeMap<String, String>,
}

/// The short path of an update that moves no index entry still refuses an
/// entity whose map key another program made a string, as the rest of the
/// straight-line code does: a typed error naming the entity, nothing
/// written.
#[tokio::test]
async fn an_update_that_moves_no_index_entry_refuses_a_map_of_the_wrong_type() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    let tally = Tally {
        id: 1,
        kind: "a".into(),
        hits: 1,
        notes: [("k".to_owned(), "v".to_owned())].into(),
    };
    store.save(&tally).await.unwrap();
    let () = redis::cmd("SET")
        .arg("tally:1:notes")
        .arg("not a hash")
        .query(&mut server.conn())
        .unwrap();
    let before = server.snapshot();
    let err = store
        .update::<Tally>(&1)
        .incr(Tally::HITS, 1)
        .exec()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::WrongType { .. }), "{err:?}");
    assert_eq!(server.snapshot(), before, "nothing was written");
}

/// A player: a sorted score and a counter, no `#[version]` (whose bump
/// would make every update two operations).
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "scorer")]
struct Scorer {
    #[pk]
    id: u64,
    #[index]
    team: String,
    #[index(sorted)]
    points: f64,
    games: i64,
}

fn scorer(id: u64, points: f64, games: i64) -> Scorer {
    Scorer {
        id,
        team: "red".into(),
        points,
        games,
    }
}

/// A store writing its own keys and one writing tenant `t7`'s, each with
/// the head of its keys.
async fn own_and_tenant_stores(server: &RedisServer) -> Vec<(Store, &'static str)> {
    let own = Store::connect(&server.url()).await.unwrap();
    let tenant = Store::builder()
        .namespace(redis_entity::Namespace::new("t7"))
        .connect(&server.url())
        .await
        .unwrap();
    vec![(own, ""), (tenant, "t7:")]
}

/// `points`' entry for `id` in the sorted set, as Redis holds it.
fn points_entry(server: &RedisServer, key: &str, id: u64) -> Option<f64> {
    redis::cmd("ZSCORE")
        .arg(key)
        .arg(id)
        .query(&mut server.conn())
        .unwrap()
}

/// An update that only increments one column has straight-line code of its
/// own (script/fast.rs, `one_increment`): it must write what the rest of
/// the function writes (the field, the score's entry) and refuse as it
/// does (typed errors, nothing written), in a tenant's keys as in the
/// store's own; on an entity with a TTL the general code runs.
#[tokio::test]
async fn an_increment_alone_writes_and_refuses_as_every_update() {
    let server = RedisServer::start();
    for (store, head) in own_and_tenant_stores(&server).await {
        let zset = format!("{head}scorer:@points");
        for (id, games) in [(1, 0), (2, i64::MAX), (3, 0), (4, 0)] {
            store.save(&scorer(id, 1.5, games)).await.unwrap();
        }
        // A float increment of the score: the field and its entry move.
        store
            .update::<Scorer>(&1)
            .incr(Scorer::POINTS, 2.25)
            .exec()
            .await
            .unwrap();
        // An integer increment of the counter: nothing else moves.
        store
            .update::<Scorer>(&1)
            .incr(Scorer::GAMES, 3)
            .exec()
            .await
            .unwrap();
        let s = store.get::<Scorer>(&1).await.unwrap().unwrap();
        assert_eq!((s.points, s.games, s.team.as_str()), (3.75, 3, "red"));
        assert_eq!(points_entry(&server, &zset, 1), Some(3.75), "{zset}");

        // Refusals: the entity missing, the counter's overflow, text in the
        // score, the score's sorted set of another type. Nothing written.
        let before = server.snapshot();
        let err = store
            .update::<Scorer>(&9)
            .incr(Scorer::POINTS, 1.0)
            .exec()
            .await
            .unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
        let err = store
            .update::<Scorer>(&2)
            .incr(Scorer::GAMES, 1)
            .exec()
            .await
            .unwrap_err();
        assert!(err.to_string().contains("overflow"), "{err}");
        assert_eq!(server.snapshot(), before, "nothing was written");
        write_text(&server, &format!("{head}scorer:3"), "points");
        let before = server.snapshot();
        match store
            .update::<Scorer>(&3)
            .incr(Scorer::POINTS, 1.0)
            .exec()
            .await
            .unwrap_err()
        {
            Error::Decode { key, field, .. } => {
                assert_eq!(
                    (key.as_str(), field),
                    (&*format!("{head}scorer:3"), "points")
                )
            }
            other => panic!("expected Decode naming scorer:3 points, got {other:?}"),
        }
        assert_eq!(server.snapshot(), before, "nothing was written");
        plant(&server, &zset, true);
        let before = server.snapshot();
        match store
            .update::<Scorer>(&4)
            .incr(Scorer::POINTS, 1.0)
            .exec()
            .await
            .unwrap_err()
        {
            Error::WrongType { key, .. } => assert_eq!(key, zset),
            other => panic!("expected WrongType naming {zset}, got {other:?}"),
        }
        assert_eq!(server.snapshot(), before, "nothing was written");
        let () = redis::cmd("DEL")
            .arg(&zset)
            .query(&mut server.conn())
            .unwrap();

        // With a TTL: the general code, which keeps the TTL.
        store.save(&scorer(4, 1.0, 0)).await.unwrap();
        store
            .update::<Scorer>(&4)
            .ttl(Duration::from_secs(600))
            .exec()
            .await
            .unwrap();
        store
            .update::<Scorer>(&4)
            .incr(Scorer::POINTS, 0.5)
            .exec()
            .await
            .unwrap();
        assert_eq!(store.get::<Scorer>(&4).await.unwrap().unwrap().points, 1.5);
        assert_eq!(points_entry(&server, &zset, 4), Some(1.5));
        let ttl: i64 = redis::cmd("PTTL")
            .arg(format!("{head}scorer:4"))
            .query(&mut server.conn())
            .unwrap();
        assert!(ttl > 500_000, "{ttl}");
    }
}

/// An update that only sets one column, a field no index reads or one an
/// equality index reads, has straight-line code of its own too: the
/// index entry moves from the stored value's set to the new one's, and a
/// set of another type refuses the write with nothing written.
#[tokio::test]
async fn a_set_alone_moves_its_entry_and_refuses_as_every_update() {
    let server = RedisServer::start();
    for (store, head) in own_and_tenant_stores(&server).await {
        for id in 1..=3 {
            store.save(&scorer(id, 1.0, 0)).await.unwrap();
        }
        let members = |team: &str| -> Vec<u64> {
            let mut m: Vec<u64> = redis::cmd("SMEMBERS")
                .arg(format!("{head}scorer:@team:{team}"))
                .query(&mut server.conn())
                .unwrap();
            m.sort();
            m
        };
        let set_team = |id: u64, team: &str| {
            store
                .update::<Scorer>(&id)
                .set(Scorer::TEAM, team.to_string())
                .exec()
        };
        set_team(1, "blue").await.unwrap();
        // The same value again: nothing moves.
        set_team(2, "red").await.unwrap();
        store
            .update::<Scorer>(&3)
            .set(Scorer::GAMES, 12)
            .exec()
            .await
            .unwrap();
        assert_eq!((members("red"), members("blue")), (vec![2, 3], vec![1]));
        let s = store.get::<Scorer>(&3).await.unwrap().unwrap();
        assert_eq!((s.team.as_str(), s.games), ("red", 12));
        let s = store.get::<Scorer>(&1).await.unwrap().unwrap();
        assert_eq!((s.team.as_str(), s.points), ("blue", 1.0));

        let err = set_team(9, "blue").await.unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
        for planted in ["green", "red"] {
            let key = format!("{head}scorer:@team:{planted}");
            plant(&server, &key, true);
            let before = server.snapshot();
            match set_team(2, "green").await.unwrap_err() {
                Error::WrongType { key: named, .. } => assert_eq!(named, key),
                other => panic!("expected WrongType naming {key}, got {other:?}"),
            }
            assert_eq!(server.snapshot(), before, "nothing was written");
            let () = redis::cmd("DEL")
                .arg(&key)
                .query(&mut server.conn())
                .unwrap();
        }
        // The red set went with the planted key: its entries put back.
        let _: i64 = redis::cmd("SADD")
            .arg(format!("{head}scorer:@team:red"))
            .arg(2)
            .arg(3)
            .query(&mut server.conn())
            .unwrap();

        // With a TTL: the general code, which keeps the TTL.
        store
            .update::<Scorer>(&3)
            .ttl(Duration::from_secs(600))
            .exec()
            .await
            .unwrap();
        set_team(3, "blue").await.unwrap();
        assert_eq!((members("red"), members("blue")), (vec![2], vec![1, 3]));
        // An entry another fault left out of its set: the set adds it to the
        // new value's set all the same.
        let _: i64 = redis::cmd("SREM")
            .arg(format!("{head}scorer:@team:blue"))
            .arg(1)
            .query(&mut server.conn())
            .unwrap();
        set_team(1, "red").await.unwrap();
        assert_eq!((members("red"), members("blue")), (vec![1, 2], vec![3]));
        let ttl: i64 = redis::cmd("PTTL")
            .arg(format!("{head}scorer:3"))
            .query(&mut server.conn())
            .unwrap();
        assert!(ttl > 500_000, "{ttl}");
        let report = store.maintenance::<Scorer>().verify().await.unwrap();
        assert!(report.violations.is_empty(), "{report:?}");
    }
}
