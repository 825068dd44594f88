//! Sorted indexes and leaderboards with profiles: ranges with every kind of
//! bound, ordering, limits, combinations, in-place increments, top N with
//! profiles, ranks, ties, negative and fractional scores, weekly boards.
//! Runs on one server, and with `scripts/test.sh --cluster` on a 3-master
//! cluster, where each index shard has its own sorted sets
//! (`{item:<shard>}:item:@price`). Left on one server:
//! `top_with_profiles_in_two_round_trips_and_rank_in_one` (counts round trips
//! with `counted_store`).

#[allow(dead_code)]
#[path = "../examples/leaderboard.rs"]
mod example;

use example::{players, Player, WEEKLY};
use redis::Commands;
use redis_entity::{AnyConnection, Error, RedisEntity, Store};
use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::{RedisServer, Target};

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "item")]
struct Item {
    #[pk]
    id: u64,
    #[index(sorted)]
    price: f64,
    #[index(sorted)]
    stock: Option<i64>,
    #[index]
    tags: BTreeSet<String>,
    #[index(sorted)]
    added: chrono::DateTime<chrono::Utc>,
}

fn item(id: u64, price: f64, stock: Option<i64>, tags: &[&str]) -> Item {
    Item {
        id,
        price,
        stock,
        tags: tags.iter().map(|t| t.to_string()).collect(),
        added: chrono::DateTime::from_timestamp(1_700_000_000 + id as i64 * 60, 0).unwrap(),
    }
}

fn items() -> Vec<Item> {
    vec![
        item(1, -5.5, Some(3), &["a"]),
        item(2, 0.0, Some(0), &["a", "b"]),
        item(3, 2.25, None, &["b"]),
        item(4, 2.25, Some(-7), &["a"]),
        item(5, 10.0, Some(100), &["b"]),
        item(6, 1e9, Some(1), &[]),
    ]
}

fn ids(items: &[Item]) -> Vec<u64> {
    items.iter().map(|i| i.id).collect()
}

async fn r(q: redis_entity::Query<'_, Item, Store<AnyConnection>>) -> Vec<u64> {
    ids(&q.fetch().await.unwrap())
}

async fn seeded(server: &Target) -> Store<AnyConnection> {
    let store = server.store().await;
    store.save_all(&items()).await.unwrap();
    store
}

/// `family`, a key of `Item`'s index families as one server spells it
/// (`item:@price`), in the space of item `id`'s index shard: itself on one
/// server, `{item:<shard>}:item:@price` on a cluster.
fn shard_key(store: &Store<AnyConnection>, id: u64, family: &str) -> String {
    let base = store.keys().of::<Item>(id).base;
    let space = base
        .strip_suffix(&Item::key(&id))
        .expect("the shard's space, then the key");
    format!("{space}{family}")
}

/// The keys of the sorted index `family` in the shards of `items()`: one on
/// one server, one per shard holding an item on a cluster.
fn shard_keys(store: &Store<AnyConnection>, family: &str) -> Vec<String> {
    let mut keys: Vec<String> = ids(&items())
        .into_iter()
        .map(|id| shard_key(store, id, family))
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// Every entry of the sorted index `family` over the shards of `items()`,
/// in the order of one sorted set (score, then member).
fn zall(server: &Target, store: &Store<AnyConnection>, family: &str) -> Vec<(String, f64)> {
    let mut c = server.conn();
    let mut all: Vec<(String, f64)> = Vec::new();
    for key in shard_keys(store, family) {
        let part: Vec<(String, f64)> = c.zrange_withscores(&key, 0, -1).unwrap();
        all.extend(part);
    }
    all.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    all
}

#[tokio::test]
async fn the_sorted_set_follows_saves_updates_and_deletes() {
    let server = Target::start();
    let store = seeded(&server).await;
    let mut c = server.conn();
    let price_key = shard_key(&store, 1, "item:@price");
    if !server.is_cluster() {
        assert_eq!(price_key, "item:@price");
    } else {
        assert!(
            price_key.starts_with("{item:") && price_key.ends_with("}:item:@price"),
            "{price_key}"
        );
    }
    let keys = server.keys();
    for key in shard_keys(&store, "item:@price") {
        assert!(keys.contains(&key), "{key} in {keys:?}");
    }
    let prices = zall(&server, &store, "item:@price");
    assert_eq!(
        prices,
        [
            ("1".into(), -5.5),
            ("2".into(), 0.0),
            ("3".into(), 2.25),
            ("4".into(), 2.25),
            ("5".into(), 10.0),
            ("6".into(), 1e9)
        ]
    );
    let stock: Vec<String> = zall(&server, &store, "item:@stock")
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    assert_eq!(stock, ["4", "2", "6", "1", "5"]);
    assert!(!stock.contains(&"3".to_string()), "None is not indexed");
    assert_eq!(Item::PRICE.key(), "item:@price");
    let added: f64 = c.zscore(shard_key(&store, 2, "item:@added"), "2").unwrap();
    assert_eq!(
        added, 1_700_000_120_000.0,
        "timestamps score in milliseconds"
    );
    // ZINCRBY-like: the hash and the sorted set change together.
    store
        .update::<Item>(&5)
        .incr(Item::PRICE, -0.5)
        .exec()
        .await
        .unwrap();
    let p: f64 = c.zscore(shard_key(&store, 5, "item:@price"), "5").unwrap();
    assert_eq!(p, 9.5);
    assert_eq!(store.get::<Item>(&5).await.unwrap().unwrap().price, 9.5);
    store
        .update::<Item>(&3)
        .incr(Item::STOCK, 4)
        .exec()
        .await
        .unwrap();
    let stock3 = shard_key(&store, 3, "item:@stock");
    let s: f64 = c.zscore(&stock3, "3").unwrap();
    assert_eq!(s, 4.0, "incr of a missing number starts at 0");
    store
        .update::<Item>(&3)
        .set(Item::STOCK, None)
        .exec()
        .await
        .unwrap();
    let s: Option<f64> = c.zscore(&stock3, "3").unwrap();
    assert_eq!(s, None);
    store.delete::<Item>(&6).await.unwrap();
    let mut n = 0;
    for key in shard_keys(&store, "item:@price") {
        let part: usize = c.zcard(&key).unwrap();
        n += part;
    }
    assert_eq!(n, 5);
    assert!(store
        .maintenance::<Item>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

#[tokio::test]
async fn an_increment_to_fifteen_digits_scores_the_exact_value() {
    // An integer increment's new value goes into the sorted set as the
    // server computed it: written out in full, not in Lua's 14-digit
    // `tostring` (1.2345678901234e+14), alone and in a unit.
    let server = Target::start();
    let store = seeded(&server).await;
    let mut c = server.conn();
    store
        .update::<Item>(&4)
        .set(Item::STOCK, Some(123_456_789_012_340))
        .exec()
        .await
        .unwrap();
    store
        .update::<Item>(&4)
        .incr(Item::STOCK, 5)
        .exec()
        .await
        .unwrap();
    let score: f64 = c.zscore(shard_key(&store, 4, "item:@stock"), "4").unwrap();
    assert_eq!(score, 123_456_789_012_345.0);
    store
        .transaction()
        .update::<Item>(&4, |u| u.incr(Item::STOCK, 2))
        .exec()
        .await
        .unwrap();
    let score: f64 = c.zscore(shard_key(&store, 4, "item:@stock"), "4").unwrap();
    assert_eq!(score, 123_456_789_012_347.0);
    let stored = store.get::<Item>(&4).await.unwrap().unwrap();
    assert_eq!(stored.stock, Some(123_456_789_012_347));
    assert!(store
        .maintenance::<Item>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

#[tokio::test]
async fn ranges_with_inclusive_exclusive_and_open_bounds() {
    let server = Target::start();
    let store = seeded(&server).await;
    let q = || store.query::<Item>();
    assert_eq!(r(q().range(Item::PRICE, 0.0..2.25)).await, [2]);
    assert_eq!(r(q().range(Item::PRICE, 0.0..=2.25)).await, [2, 3, 4]);
    assert_eq!(r(q().range(Item::PRICE, 2.25..)).await, [3, 4, 5, 6]);
    assert_eq!(r(q().range(Item::PRICE, ..0.0)).await, [1]);
    assert_eq!(r(q().range(Item::PRICE, ..)).await, [1, 2, 3, 4, 5, 6]);
    assert_eq!(
        r(q().range(Item::PRICE, 3.0..4.0)).await,
        Vec::<u64>::new(),
        "empty range"
    );
    assert_eq!(
        r(q().range(Item::STOCK, -10..=0)).await,
        [2, 4],
        "negative integers"
    );
    let t = |s: i64| chrono::DateTime::from_timestamp(1_700_000_000 + s, 0).unwrap();
    assert_eq!(
        r(q().range(Item::ADDED, t(120)..t(240))).await,
        [2, 3],
        "timestamps"
    );
    // Combined with tag conditions and each other.
    assert_eq!(
        r(q().range(Item::PRICE, 0.0..).eq(Item::TAGS, "a")).await,
        [2, 4]
    );
    assert_eq!(
        r(q().range(Item::PRICE, 0.0..).range(Item::STOCK, 1..)).await,
        [5, 6]
    );
    assert_eq!(q().range(Item::PRICE, 0.0..=2.25).count().await.unwrap(), 3);
}

#[tokio::test]
async fn order_and_limit_with_stable_ties() {
    let server = Target::start();
    let store = seeded(&server).await;
    let q = || store.query::<Item>();
    let asc = q().order_asc(Item::PRICE).ids().await.unwrap();
    assert_eq!(
        asc,
        [1, 2, 3, 4, 5, 6],
        "ties (3, 4 at 2.25) in member order"
    );
    let desc = q().order_desc(Item::PRICE).ids().await.unwrap();
    assert_eq!(desc, [6, 5, 4, 3, 2, 1], "ties reversed, as ZREVRANGE");
    assert_eq!(
        q().order_desc(Item::PRICE).limit(1, 3).ids().await.unwrap(),
        [5, 4, 3]
    );
    for _ in 0..3 {
        assert_eq!(
            q().order_desc(Item::PRICE).ids().await.unwrap(),
            desc,
            "same order every call"
        );
    }
    // Ordered by one index, filtered by others (the general path).
    let b = q()
        .eq(Item::TAGS, "b")
        .order_desc(Item::PRICE)
        .fetch()
        .await
        .unwrap();
    assert_eq!(ids(&b), [5, 3, 2]);
    let in_stock = q()
        .range(Item::STOCK, 0..)
        .order_asc(Item::PRICE)
        .ids()
        .await
        .unwrap();
    assert_eq!(in_stock, [1, 2, 5, 6]);
    // Entities without a value come last.
    let by_stock = q()
        .order_desc(Item::STOCK)
        .eq(Item::TAGS, "b")
        .ids()
        .await
        .unwrap();
    assert_eq!(by_stock, [5, 2, 3]);
    assert_eq!(
        q().order_desc(Item::PRICE)
            .limit(0, 2)
            .count()
            .await
            .unwrap(),
        6
    );
}

#[tokio::test]
async fn nan_is_refused_before_anything_is_written() {
    let server = Target::start();
    let store = seeded(&server).await;
    let err = store.save(&item(9, f64::NAN, None, &[])).await.unwrap_err();
    assert!(
        matches!(err, Error::Encode { field: "price", .. }),
        "{err:?}"
    );
    let item9 = store.keys().of::<Item>(9);
    assert!(!server
        .keys()
        .iter()
        .any(|k| item9.all().any(|own| own == k)));
    let err = store
        .update::<Item>(&1)
        .set(Item::PRICE, f64::NAN)
        .exec()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Encode { .. }), "{err:?}");
    // An increment that fails on the stored data changes nothing either.
    let item2 = store.keys().of::<Item>(2).base;
    if !server.is_cluster() {
        assert_eq!(item2, "item:2");
    }
    let _: () = server.conn().hset(&item2, "stock", "many").unwrap();
    let err = store
        .update::<Item>(&2)
        .set(Item::TAGS, BTreeSet::from(["z".to_string()]))
        .incr(Item::STOCK, 1)
        .exec()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Decode { key, field: "stock", .. } if *key == item2),
        "{err:?}"
    );
    let tags: BTreeSet<String> = store.get::<Item>(&1).await.unwrap().unwrap().tags;
    assert_eq!(tags, BTreeSet::from(["a".to_string()]));
    let z: bool = server
        .conn()
        .exists(shard_key(&store, 2, "item:@tags:z"))
        .unwrap();
    assert!(
        !z,
        "the tag change before the failing increment did not happen"
    );
}

#[tokio::test]
async fn top_with_profiles_in_two_round_trips_and_rank_in_one() {
    let server = RedisServer::start();
    let (store, trips) = support::counted_store(&server).await;
    store.save_all(&players()).await.unwrap();
    store.board(Player::SCORE).top(1).await.unwrap();
    store.board(Player::SCORE).rank(1000).await.unwrap();
    trips.take();
    let top = store.board(Player::SCORE).top(10).await.unwrap();
    assert_eq!(trips.take(), 2, "top 10 with profiles");
    assert_eq!(top.len(), 10);
    assert!(top.windows(2).all(|w| w[0].1 >= w[1].1), "best first");
    assert_eq!(top[0].0.name, "ivy");
    assert_eq!(top[0].1, 96.0);
    assert_eq!(
        store.board(Player::SCORE).rank(1008).await.unwrap(),
        Some(0)
    );
    assert_eq!(trips.take(), 1, "rank");
    assert_eq!(
        store.board(Player::SCORE).rank(1005).await.unwrap(),
        Some(1)
    );
    assert_eq!(store.board(Player::SCORE).rank(9999).await.unwrap(), None);
    // ZINCRBY moves a player up.
    store
        .update::<Player>(&1000)
        .incr(Player::SCORE, 1000.0)
        .exec()
        .await
        .unwrap();
    assert_eq!(
        store.board(Player::SCORE).rank(1000).await.unwrap(),
        Some(0)
    );
    assert_eq!(
        store.board(Player::SCORE).top(1).await.unwrap()[0].0.id,
        1000
    );
    assert!(store.board(Player::SCORE).top(0).await.unwrap().is_empty());
}

#[tokio::test]
async fn expired_players_are_not_ranked_or_listed() {
    let server = Target::start();
    let store = server.store().await;
    store.save_all(&players()).await.unwrap();
    // ivy (1008, best) leaves soon.
    store
        .expiry::<Player>()
        .expire(&1008, Duration::from_millis(50))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let top = store.board(Player::SCORE).top(3).await.unwrap();
    assert_eq!(top[0].0.name, "flo", "the expired leader is gone");
    assert_eq!(
        store.board(Player::SCORE).rank(1005).await.unwrap(),
        Some(0)
    );
    assert_eq!(store.board(Player::SCORE).rank(1008).await.unwrap(), None);
}

#[tokio::test]
async fn weekly_boards_rotate_and_expire() {
    let server = Target::start();
    let store = server.store().await;
    store.save_all(&players()).await.unwrap();
    // Buckets of the current week and the next one (never the past: Redis
    // would drop a bucket whose expiry lies behind us at once).
    let now = SystemTime::now();
    let next = now + Duration::from_secs(7 * 86_400);
    store
        .board(&WEEKLY)
        .incr_at(&1000, 5.0, next)
        .await
        .unwrap();
    assert_eq!(
        store
            .board(&WEEKLY)
            .incr_at(&1000, 2.5, next)
            .await
            .unwrap(),
        7.5
    );
    let next_top = store.board(&WEEKLY).top_at(next, 5).await.unwrap();
    assert_eq!(
        next_top.iter().map(|(p, s)| (p.id, *s)).collect::<Vec<_>>(),
        [(1000, 7.5)]
    );
    assert!(
        store.board(&WEEKLY).top(5).await.unwrap().is_empty(),
        "another bucket"
    );
    let next_key = WEEKLY.key(store.keys().namespace(), next);
    assert_ne!(next_key, WEEKLY.key(store.keys().namespace(), now));
    assert!(server.keys().contains(&next_key));
    let ttl: i64 = server.conn().pttl(&next_key).unwrap();
    let now_ms = now.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    let end = WEEKLY.expires_at_ms(next) as i64;
    assert!(
        (ttl - (end - now_ms)).abs() < 5_000,
        "expires at its end plus a week: {ttl}"
    );
    // A bucket of a week long gone is dropped by its expiry at once.
    let old = UNIX_EPOCH + Duration::from_secs(18_630 * 86_400);
    store.board(&WEEKLY).incr_at(&1001, 9.0, old).await.unwrap();
    assert!(store
        .board(&WEEKLY)
        .top_at(old, 5)
        .await
        .unwrap()
        .is_empty());
    // The current week: ZINCRBY and a rank.
    store.board(&WEEKLY).incr(&1002, 3.0).await.unwrap();
    store.board(&WEEKLY).incr(&1003, 4.0).await.unwrap();
    assert_eq!(store.board(&WEEKLY).rank(&1003).await.unwrap(), Some(0));
    assert_eq!(store.board(&WEEKLY).rank(&1002).await.unwrap(), Some(1));
    let current = WEEKLY.key(store.keys().namespace(), SystemTime::now());
    let ttl: i64 = server.conn().ttl(&current).unwrap();
    assert!(
        ttl > 7 * 86_400 && ttl <= 14 * 86_400,
        "kept a week past its end: {ttl}"
    );
}

#[tokio::test]
async fn the_example_runs() {
    let server = Target::start();
    example::run(&server.url()).await.unwrap();
    assert!(server.keys().is_empty(), "{:?}", server.keys());
}

#[tokio::test]
async fn verify_names_the_sorted_set_of_a_wrong_score_and_repair_rewrites_it() {
    use redis_entity::verify::Violation;
    let server = Target::start();
    let store = server.store().await;
    store
        .save_all(&[item(1, 1.5, Some(3), &[]), item(2, 8.0, None, &[])])
        .await
        .unwrap();
    let mut c = server.conn();
    let price1 = shard_key(&store, 1, "item:@price");
    let stock9 = shard_key(&store, 9, "item:@stock");
    if !server.is_cluster() {
        assert_eq!(
            (price1.as_str(), stock9.as_str()),
            ("item:@price", "item:@stock")
        );
    }
    // Item 1 listed at 99 instead of 1.5; item 9 does not exist.
    let _: () = c.zadd(&price1, "1", 99.0).unwrap();
    let _: () = c.zadd(&stock9, "9", 4.0).unwrap();
    let report = store.maintenance::<Item>().verify().await.unwrap();
    let mut got = report.violations.clone();
    got.sort_by_key(|v| v.to_string());
    let mut want = vec![
        Violation::MissingSortedEntry {
            key: price1.clone(),
            member: "1".into(),
            value: "1.5".into(),
        },
        Violation::StaleSortedEntry {
            key: price1.clone(),
            member: "1".into(),
            value: "99".into(),
        },
        Violation::StaleSortedEntry {
            key: stock9.clone(),
            member: "9".into(),
            value: "4".into(),
        },
    ];
    want.sort_by_key(|v| v.to_string());
    assert_eq!(got, want, "{report}");
    // Every key a report names exists.
    for v in &report.violations {
        let key = match v {
            Violation::StaleSortedEntry { key, .. } | Violation::MissingSortedEntry { key, .. } => {
                key
            }
            other => panic!("{other}"),
        };
        assert!(c.exists::<_, bool>(key).unwrap(), "{key}");
    }
    assert!(report.to_string().contains(&format!(
        "stale entry: `{price1}` lists `1` with `99`, which it does not hold"
    )));
    let repaired = store.maintenance::<Item>().repair(&report).await.unwrap();
    assert_eq!((repaired.fixed, repaired.left.len()), (3, 0), "{repaired}");
    let p: f64 = c.zscore(&price1, "1").unwrap();
    assert_eq!(p, 1.5);
    let gone: Option<f64> = c.zscore(&stock9, "9").unwrap();
    assert_eq!(gone, None);
    assert!(store
        .maintenance::<Item>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

/// `verify` reads sorted indexes, index sets and the set of all ids in
/// pages (`ZSCAN`, `SSCAN`, not one `ZRANGE 0 -1` or `SMEMBERS` of the
/// whole; the ids' buckets of at most 100 are each read whole): over 2,500
/// items (one tag set of 2,500), an entry planted, one removed and one with
/// the wrong score are each found, wherever they fall among the pages, and
/// nothing else.
#[tokio::test]
async fn verify_reads_big_sorted_indexes_and_the_ids_in_pages() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    let all: Vec<Item> = (1..=2500)
        .map(|id| item(id, id as f64, Some(id as i64), &["a"]))
        .collect();
    store.save_all(&all).await.unwrap();
    assert!(store
        .maintenance::<Item>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    let mut conn = server.conn();
    let _: () = conn.zadd("item:@price", "9999", 77.0).unwrap();
    let _: () = conn.zrem("item:@price", "1234").unwrap();
    let _: () = conn.zadd("item:@stock", "2000", 1.0).unwrap();
    // Integer ids are kept in buckets of 100 (`22xx`: 2200-2299); the one
    // set a store written before buckets keeps is read beside them.
    let _: () = conn.srem("item:@ids:22xx", "2222").unwrap();
    let _: () = conn.sadd("item:@ids", "8888").unwrap();
    let buckets: u64 = conn.scard("item:@ids:@buckets").unwrap();
    assert_eq!(buckets, 26, "0-99 to 2500-2599");
    let _: () = conn.sadd("item:@tags:a", "7777").unwrap();
    let _: () = conn.srem("item:@tags:a", "1500").unwrap();
    let (zscans, sscans, smembers) = (
        server.calls("zscan"),
        server.calls("sscan"),
        server.calls("smembers"),
    );
    let report = store.maintenance::<Item>().verify().await.unwrap();
    // 2,500 entries at about 1,000 a page: several pages of each sorted
    // index (three of them), of the tag set and of the ids; no set whole.
    assert!(server.calls("zscan") - zscans >= 6, "ZSCAN pages");
    assert!(server.calls("sscan") - sscans >= 4, "SSCAN pages");
    assert_eq!(
        server.calls("smembers") - smembers,
        buckets,
        "SMEMBERS of each bucket, of nothing else"
    );
    let mut found: Vec<String> = report.violations.iter().map(|v| v.to_string()).collect();
    found.sort();
    let kinds: Vec<&str> = report.violations.iter().map(|v| v.kind()).collect();
    assert_eq!(report.violations.len(), 8, "{found:#?}");
    for (kind, n) in [
        ("StaleEntry", 1),
        ("MissingEntry", 1),
        ("StaleSortedEntry", 2),
        ("MissingSortedEntry", 2),
        ("StaleId", 1),
        ("MissingId", 1),
    ] {
        assert_eq!(
            kinds.iter().filter(|k| **k == kind).count(),
            n,
            "{kind}: {found:#?}"
        );
    }
    let text = found.join("\n");
    for needle in ["9999", "1234", "2000", "2222", "8888", "7777", "1500"] {
        assert!(text.contains(needle), "{needle} not reported: {text}");
    }
}
