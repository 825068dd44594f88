//! Paged queries: a store that may read only a few members per call
//! (`members_per_call`) answers every query shape exactly as a store that
//! answers it in one call, page after page, each page a bounded call.
//!
//! The reference is a store with the default budget over the same data
//! (its answers come whole: the data is small); the paged store reads 10
//! members per call, so every query over the 600 items goes in pages.
//! Runs on one server, and with `REDIS_ENTITY_TEST_CLUSTER` set on a
//! 3-master cluster, where `Item` is split into 4 index shards and each
//! shard's answer is paged in its own slot.

use redis_entity::{AnyConnection, RedisEntity, Store, Term};
use std::collections::BTreeSet;
use std::time::Duration;
use support::Target;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "item", shards = 4)]
struct Item {
    #[pk]
    id: u64,
    #[index]
    group: String,
    #[index]
    tags: BTreeSet<String>,
    #[index(sorted)]
    score: Option<i64>,
    #[index(prefix)]
    title: String,
}

const ITEMS: u64 = 600;

fn item(id: u64) -> Item {
    let mut tags: BTreeSet<String> = ["all".to_string(), format!("k{}", id % 7)].into();
    if id % 2 == 1 {
        tags.insert("odd".into());
    }
    Item {
        id,
        group: format!("g{}", id % 5),
        tags,
        // Some without a score (not in the sorted index), ties on others.
        score: (!id.is_multiple_of(11)).then_some((id as i64 * 37) % 200),
        title: format!("item {id}"),
    }
}

/// The paged store and the reference store over the same items.
async fn stores(target: &Target) -> (Store<AnyConnection>, Store<AnyConnection>) {
    let paged = target
        .store_with(Store::builder().members_per_call(10))
        .await;
    let items: Vec<Item> = (1..=ITEMS).map(item).collect();
    paged.save_all(&items).await.unwrap();
    (paged, target.store().await)
}

/// Runs `$q` (a query builder over `$store`) on both stores and asserts the
/// same ids, counts and fetched ids.
macro_rules! same {
    ($paged:expr, $whole:expr, |$s:ident| $q:expr) => {{
        let ids_paged = {
            let $s = &$paged;
            $q.ids().await.unwrap()
        };
        let ids_whole = {
            let $s = &$whole;
            $q.ids().await.unwrap()
        };
        assert_eq!(ids_paged, ids_whole, "{}", stringify!($q));
        let count_paged = {
            let $s = &$paged;
            $q.count().await.unwrap()
        };
        let count_whole = {
            let $s = &$whole;
            $q.count().await.unwrap()
        };
        assert_eq!(count_paged, count_whole, "{} count", stringify!($q));
        let fetched: Vec<u64> = {
            let $s = &$paged;
            $q.fetch().await.unwrap().iter().map(|i| i.id).collect()
        };
        assert_eq!(fetched, ids_whole, "{} fetch", stringify!($q));
        ids_whole
    }};
}

#[tokio::test]
async fn every_query_shape_reads_the_same_in_pages() {
    let target = Target::start();
    let (paged, whole) = stores(&target).await;
    let all = same!(paged, whole, |s| s.query::<Item>().all(Item::TAGS, ["all"]));
    assert_eq!(all.len() as u64, ITEMS);
    assert_eq!(all, (1..=ITEMS).collect::<Vec<_>>(), "ids come sorted");
    same!(paged, whole, |s| s
        .query::<Item>()
        .all(Item::TAGS, ["all"])
        .limit(5, 10));
    let odd_k3 = same!(paged, whole, |s| s
        .query::<Item>()
        .all(Item::TAGS, ["odd", "k3"]));
    assert!(odd_k3.iter().all(|id| id % 2 == 1 && id % 7 == 3));
    same!(paged, whole, |s| s
        .query::<Item>()
        .any(Item::TAGS, ["k1", "k2"]));
    // Values whose members overlap: a paged count meets each member once.
    let odd_or_k3 = same!(paged, whole, |s| s
        .query::<Item>()
        .any(Item::TAGS, ["odd", "k3"]));
    let expected = (1..=ITEMS).filter(|id| id % 2 == 1 || id % 7 == 3).count();
    assert_eq!(odd_or_k3.len(), expected);
    let every = same!(paged, whole, |s| s
        .query::<Item>()
        .any(Item::TAGS, ["k0", "all", "odd"]));
    assert_eq!(every.len() as u64, ITEMS);
    let even = same!(paged, whole, |s| s
        .query::<Item>()
        .none(Item::TAGS, ["odd"]));
    assert_eq!(even.len() as u64, ITEMS / 2);
    same!(paged, whole, |s| s
        .query::<Item>()
        .eq(Item::GROUP, "g1")
        .none(Item::TAGS, ["k3", "k4"]));
    same!(paged, whole, |s| s
        .query::<Item>()
        .any_of([Term::eq(Item::GROUP, "g1"), Term::eq(Item::TAGS, "k2")])
        .none(Item::TAGS, ["odd"]));
    same!(paged, whole, |s| s
        .query::<Item>()
        .prefix(Item::TITLE, "item 1"));
    same!(paged, whole, |s| s
        .query::<Item>()
        .prefix(Item::TITLE, "item 2")
        .all(Item::TAGS, ["odd"])
        .limit(2, 7));
    same!(paged, whole, |s| s
        .query::<Item>()
        .range(Item::SCORE, 20..120));
    same!(paged, whole, |s| s
        .query::<Item>()
        .range(Item::SCORE, 20..120)
        .eq(Item::GROUP, "g2")
        .order_asc(Item::SCORE));
}

#[tokio::test]
async fn ordered_pages_walk_the_sorted_index_with_ties_and_unscored_last() {
    let target = Target::start();
    let (paged, whole) = stores(&target).await;
    // A first page: the walk of the sorted index stops once it is full.
    same!(paged, whole, |s| s
        .query::<Item>()
        .order_desc(Item::SCORE)
        .limit(0, 10));
    same!(paged, whole, |s| s
        .query::<Item>()
        .all(Item::TAGS, ["odd"])
        .order_desc(Item::SCORE)
        .limit(3, 10));
    same!(paged, whole, |s| s
        .query::<Item>()
        .range(Item::SCORE, 50..=150)
        .order_asc(Item::SCORE)
        .limit(4, 25));
    // A page past the scored items: the walk ends and the items without a
    // score follow, in member order.
    let tail = same!(paged, whole, |s| s
        .query::<Item>()
        .all(Item::TAGS, ["all"])
        .order_asc(Item::SCORE)
        .limit(540, 100));
    let unscored: BTreeSet<u64> = (1..=ITEMS).filter(|id| id % 11 == 0).collect();
    let last: BTreeSet<u64> = tail[tail.len() - unscored.len()..]
        .iter()
        .copied()
        .collect();
    assert_eq!(last, unscored, "{tail:?}");
    // No limit: the whole order, gathered from pages and sorted.
    let every = same!(paged, whole, |s| s
        .query::<Item>()
        .all(Item::TAGS, ["k2"])
        .order_desc(Item::SCORE));
    assert_eq!(
        every.len() as u64,
        (1..=ITEMS).filter(|id| id % 7 == 2).count() as u64
    );
    // Scores of a board page read in pages.
    let top_paged = paged.board(Item::SCORE).top(15).await.unwrap();
    let top_whole = whole.board(Item::SCORE).top(15).await.unwrap();
    let scores = |t: &[(Item, f64)]| t.iter().map(|(i, s)| (i.id, *s)).collect::<Vec<_>>();
    assert_eq!(scores(&top_paged), scores(&top_whole));
}

#[tokio::test]
async fn a_paged_answer_is_asked_in_several_bounded_calls() {
    let target = Target::start();
    let (paged, whole) = stores(&target).await;
    let Target::Server(server) = &target else {
        return; // the cluster's calls are counted per node; one server shows it
    };
    // A store's first call of a script sends it (EVAL_RO), later ones its
    // hash (EVALSHA_RO).
    let calls = || server.calls("evalsha_ro") + server.calls("eval_ro");
    fn q(s: &Store<AnyConnection>) -> redis_entity::Query<'_, Item, Store<AnyConnection>> {
        s.query::<Item>()
            .all(Item::TAGS, ["all"])
            .none(Item::TAGS, ["odd"])
    }
    let before = calls();
    assert_eq!(q(&paged).count().await.unwrap(), ITEMS / 2);
    let paged_calls = calls() - before;
    // 600 members walked by SSCAN at about 10 a page.
    assert!(paged_calls >= 30, "{paged_calls} calls");
    let before = calls();
    assert_eq!(q(&whole).count().await.unwrap(), ITEMS / 2);
    assert_eq!(calls() - before, 1, "the default budget answers whole");
    // A count of one set is its size at once, whatever its size.
    let before = calls();
    let n = paged
        .query::<Item>()
        .all(Item::TAGS, ["all"])
        .count()
        .await
        .unwrap();
    assert_eq!((n, calls() - before), (ITEMS, 1));
    // An intersection is as much work as its smallest set (times the sets),
    // however big the others: with a small one it is answered whole.
    for id in 1..=5 {
        let mut rare = item(id);
        rare.tags.insert("rare".into());
        paged.save(&rare).await.unwrap();
    }
    let before = calls();
    let n = paged
        .query::<Item>()
        .all(Item::TAGS, ["all", "rare"])
        .count()
        .await
        .unwrap();
    assert_eq!((n, calls() - before), (5, 1));
}

#[tokio::test]
async fn expired_entities_are_skipped_across_pages() {
    let target = Target::start();
    let (paged, whole) = stores(&target).await;
    for id in (1..=ITEMS).filter(|id| id % 3 == 0) {
        paged
            .expiry::<Item>()
            .save_with_ttl(&item(id), Duration::from_millis(50))
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(120)).await;
    // The reference store learns of the TTLs too (its reads skip them).
    whole
        .expiry::<Item>()
        .save_with_ttl(&item(3), Duration::from_millis(1))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let live = same!(paged, whole, |s| s.query::<Item>().all(Item::TAGS, ["all"]));
    assert!(live.iter().all(|id| id % 3 != 0), "{live:?}");
    assert_eq!(live.len() as u64, ITEMS - ITEMS / 3);
    same!(paged, whole, |s| s
        .query::<Item>()
        .order_desc(Item::SCORE)
        .limit(0, 30));
    same!(paged, whole, |s| s.query::<Item>().none(Item::TAGS, ["k0"]));
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "fan")]
struct Fan {
    #[pk]
    id: u64,
    name: String,
}

const FOLLOWS: redis_entity::relation::Relation<Fan, Fan> =
    redis_entity::relation::Relation::many_to_many("following", "followers");

#[tokio::test]
async fn deleting_an_entity_with_many_followers_unlinks_them_in_pages() {
    let target = Target::start();
    let store = target
        .store_with(Store::builder().members_per_call(100))
        .await;
    const FANS: u64 = 2_500;
    let fans: Vec<Fan> = (0..=FANS)
        .map(|id| Fan {
            id,
            name: format!("fan {id}"),
        })
        .collect();
    store.save_all(&fans).await.unwrap();
    // Everyone follows 0 (the celebrity); 1 also follows 2.
    let follows = store.relation(&FOLLOWS);
    for id in 1..=FANS {
        follows.relate(&id, &0).await.unwrap();
    }
    follows.relate(&1, &2).await.unwrap();
    assert_eq!(follows.related_back(&0).await.unwrap().len() as u64, FANS);
    let unlink_calls = |t: &Target| match t {
        Target::Server(s) => s.calls("evalsha") + s.calls("eval"),
        Target::Cluster(_) => 0,
    };
    let before = unlink_calls(&target);
    assert!(store.delete::<Fan>(&0).await.unwrap());
    if !target.is_cluster() {
        // The delete, then 2,500 followers at about 100 a call.
        let calls = unlink_calls(&target) - before;
        assert!(calls >= 20, "{calls} calls");
    }
    for id in [1, 2, 1_000, FANS] {
        let following = follows.related(&id).await.unwrap();
        assert!(!following.contains(&0), "{id} still follows the deleted 0");
    }
    assert_eq!(follows.related(&1).await.unwrap(), [2]);
    // No key of the deleted entity is left, nor a register entry of an
    // emptied set.
    let keys = target.keys();
    assert!(
        !keys
            .iter()
            .any(|k| k.contains("fan:0:") || k.ends_with("fan:0")),
        "{:?}",
        keys.iter()
            .filter(|k| k.contains("fan:0"))
            .collect::<Vec<_>>()
    );
    let mut conn = target.conn();
    let register_3 = keys
        .iter()
        .find(|k| k.starts_with("fan:3:@rel") || k.starts_with("fan:{3}:@rel"));
    assert!(register_3.is_none(), "{register_3:?} {:?}", {
        register_3.map(|k| redis::cmd("HGETALL").arg(k).query::<Vec<String>>(&mut conn))
    });
    let report = store.maintenance::<Fan>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");

    // An unlinking the store could not finish (it stopped between pages):
    // the renamed set still lists a follower, whose set still lists the
    // deleted entity. `verify` finds both, `repair` removes both (on a
    // cluster, whichever masters hold them).
    let renamed = format!("{}:followers:@unlinking", store.keys().of::<Fan>(0).base);
    let following = format!("{}:following", store.keys().of::<Fan>(5).base);
    follows.relate(&5, &2).await.unwrap();
    for (key, member) in [(&renamed, 5), (&following, 0)] {
        let _: () = redis::cmd("SADD")
            .arg(key)
            .arg(member)
            .query(&mut conn)
            .unwrap();
    }
    let report = store.maintenance::<Fan>().verify().await.unwrap();
    assert!(!report.is_clean(), "{report}");
    store.maintenance::<Fan>().repair(&report).await.unwrap();
    assert_eq!(follows.related(&5).await.unwrap(), [2]);
    assert!(!target.keys().iter().any(|k| k.contains("@unlinking")));
    let report = store.maintenance::<Fan>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
}
