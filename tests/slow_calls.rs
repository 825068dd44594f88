//! No call the library sends holds the server long, at a size where the
//! whole-answer forms did: a private server logs every call slower than
//! 20 ms (`slowlog-log-slower-than 20000`), 100,000 members and a
//! "celebrity" followed by every one of them are written, every operation
//! below is run, and the slow log must stay empty (a failure names each
//! slow call's command and arguments). `SLOW_CALL_MICROS=5000` lowers the
//! bound, to see which calls come near it.
//!
//! Ignored by the parallel `cargo test` (other tests' load on a small
//! machine would slow the server's calls and make it flaky): scripts/test.sh
//! runs it alone, `cargo test --test slow_calls -- --ignored`.

use futures_util::stream::{self, StreamExt};
use redis_entity::relation::{Relation, Timeline};
use redis_entity::{RedisEntity, Store};
use std::collections::{BTreeMap, BTreeSet};
use support::{RedisCluster, RedisServer};

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "member")]
struct Member {
    #[pk]
    id: u64,
    #[index(unique)]
    handle: String,
    #[index]
    city: String,
    #[index]
    tags: BTreeSet<String>,
    #[index(sorted)]
    score: i64,
}

/// An entity with a map of 100,000 entries.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "profile")]
struct Profile {
    #[pk]
    id: u64,
    name: String,
    #[hash]
    prefs: BTreeMap<String, String>,
}

const FOLLOWS: Relation<Member, Member> = Relation::many_to_many("following", "followers");
const FEED: Timeline<Member, Member> = Timeline::new("feed", 100);
const MEMBERS: u64 = 100_000;

fn member(id: u64) -> Member {
    let mut tags: BTreeSet<String> = ["all".to_string()].into();
    if id.is_multiple_of(10) {
        tags.insert("k0".into());
    }
    Member {
        id,
        handle: format!("m{id}"),
        city: format!("c{}", id % (MEMBERS / 50)),
        tags,
        score: ((id * 7919) % 100_000) as i64,
    }
}

/// The slow log's entries as `duration µs: command args...`.
fn slow_calls(server: &RedisServer) -> Vec<String> {
    slow_calls_at(&mut server.conn())
}

/// The slow log of the server behind `conn`.
fn slow_calls_at(conn: &mut redis::Connection) -> Vec<String> {
    let entries: Vec<redis::Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(10_000)
        .query(conn)
        .unwrap();
    entries
        .into_iter()
        .map(|e| {
            let redis::Value::Array(fields) = e else {
                return format!("{e:?}");
            };
            let micros: i64 = redis::from_redis_value(fields[2].clone()).unwrap_or(-1);
            let words: Vec<String> = redis::from_redis_value(fields[3].clone()).unwrap_or_default();
            let words: Vec<String> = words
                .into_iter()
                .map(|w| w.chars().take(60).collect())
                .collect();
            format!("{micros} µs: {}", words.join(" "))
        })
        .collect()
}

#[tokio::test]
#[ignore = "run alone by scripts/test.sh: a loaded machine slows the server"]
async fn no_call_holds_the_server_at_100k_members_and_a_celebrity() {
    // The bound, in µs (SLOW_CALL_MICROS lowers it to see the longest
    // calls).
    let bound = std::env::var("SLOW_CALL_MICROS").unwrap_or_else(|_| "20000".into());
    let server = RedisServer::start_with(&[
        "--slowlog-log-slower-than",
        &bound,
        "--slowlog-max-len",
        "10000",
    ]);
    let store: Store = Store::connect(&server.url()).await.unwrap();
    let members: Vec<Member> = (0..MEMBERS).map(member).collect();
    for chunk in members.chunks(5_000) {
        store.save_all(chunk).await.unwrap();
    }
    // Everyone follows 0.
    let follows = store.relation(&FOLLOWS);
    let related: Vec<bool> = stream::iter(1..MEMBERS)
        .map(|id| {
            let follows = &follows;
            async move { follows.relate(&id, &0).await.unwrap() }
        })
        .buffer_unordered(64)
        .collect()
        .await;
    assert!(related.iter().all(|r| *r));

    // Queries over large sets: paged.
    let q = || store.query::<Member>();
    let first = q()
        .all(Member::TAGS, ["all"])
        .limit(0, 10)
        .fetch()
        .await
        .unwrap();
    assert_eq!(
        first.iter().map(|m| m.id).collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>()
    );
    let top = q()
        .all(Member::TAGS, ["k0"])
        .order_desc(Member::SCORE)
        .limit(0, 10)
        .ids()
        .await
        .unwrap();
    assert_eq!(top.len(), 10);
    assert_eq!(
        q().none(Member::TAGS, ["k0"]).count().await.unwrap(),
        MEMBERS * 9 / 10
    );
    assert_eq!(
        q().any(Member::TAGS, ["k0", "all"]).count().await.unwrap(),
        MEMBERS
    );
    assert_eq!(
        q().all(Member::TAGS, ["all", "k0"]).count().await.unwrap(),
        MEMBERS / 10
    );
    assert_eq!(q().ids().await.unwrap().len() as u64, MEMBERS);
    assert_eq!(
        q().range(Member::SCORE, 1_000..2_000)
            .count()
            .await
            .unwrap(),
        1_000
    );
    assert_eq!(q().eq(Member::CITY, "c7").fetch().await.unwrap().len(), 50);
    assert_eq!(
        store
            .find_unique(Member::HANDLE, "m77")
            .await
            .unwrap()
            .unwrap()
            .id,
        77
    );
    let board = store.board(Member::SCORE);
    assert_eq!(board.top(10).await.unwrap().len(), 10);
    assert!(board.rank(&5).await.unwrap().is_some());

    // The move to a cluster (and the proof it is complete), the relation
    // sets with it: a page at a time on both sides.
    let cluster = RedisCluster::start(3);
    let mut nodes: Vec<redis::Connection> = cluster
        .urls()
        .iter()
        .map(|u| {
            redis::Client::open(u.as_str())
                .unwrap()
                .get_connection()
                .unwrap()
        })
        .collect();
    for node in &mut nodes {
        let () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-log-slower-than")
            .arg(&bound)
            .query(node)
            .unwrap();
    }
    let many = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    let moved = store
        .maintenance::<Member>()
        .relayout(&many, 0, 1_000, |_| {})
        .await
        .unwrap();
    assert_eq!(moved.migrated, MEMBERS);
    let pairs = follows.relayout(&many, 1_000).await.unwrap();
    assert_eq!(pairs.migrated, MEMBERS - 1);
    let compared = store
        .maintenance::<Member>()
        .relayout_compare(&many, 1_000)
        .await
        .unwrap();
    assert!(compared.is_clean(), "{compared:?}");
    for node in &mut nodes {
        assert_eq!(slow_calls_at(node), Vec::<String>::new());
    }

    // The celebrity's followers: read, fanned out to, deleted with.
    assert_eq!(
        follows.related_back(&0).await.unwrap().len() as u64,
        MEMBERS - 1
    );
    let pushed = store
        .timeline(&FEED)
        .push_related(&1, &FOLLOWS, &0)
        .await
        .unwrap();
    assert_eq!(pushed as u64, MEMBERS - 1);
    assert!(store.delete::<Member>(&0).await.unwrap());
    assert!(follows.related(&1).await.unwrap().is_empty());

    // An entity with a big map, deleted.
    let profile = Profile {
        id: 1,
        name: "big".into(),
        prefs: BTreeMap::new(),
    };
    store.save(&profile).await.unwrap();
    for chunk in 0..100 {
        let mut update = store.update::<Profile>(&1);
        for j in 0..1_000 {
            update = update.hset(Profile::PREFS, format!("k{chunk}-{j}"), "v");
        }
        update.exec().await.unwrap();
    }
    assert!(store.delete::<Profile>(&1).await.unwrap());

    // Admin walks.
    let report = store.maintenance::<Member>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(
        store.maintenance::<Member>().reindex().await.unwrap() as u64,
        MEMBERS - 1
    );
    store.maintenance::<Member>().sweep(10_000).await.unwrap();

    assert_eq!(slow_calls(&server), Vec::<String>::new());
}
