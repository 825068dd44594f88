//! Redis Cluster: every key of an entity without indexes shares its hash
//! tag; an indexed entity lives in one of its type's index shards, whose
//! tag its keys and the shard's index entries share, so every write is one
//! script on one slot and queries ask every shard and merge. (A unique
//! index keeps its type in one shard unless it asks for more.)

#[allow(dead_code)]
#[path = "../examples/weibo.rs"]
mod weibo;

use redis_entity::{Error, RedisEntity, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use support::RedisCluster;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user", key = "user:{id}:profile")]
struct Profile {
    #[pk]
    id: u64,
    name: String,
    visits: i64,
    #[hash]
    settings: BTreeMap<String, String>,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "strings", key = "user:userid:{id}")]
struct Columns {
    #[pk]
    id: u64,
    username: String,
    #[redis(ttl = 60)]
    code: Option<String>,
}

fn slot(cluster: &RedisCluster, key: &str) -> i64 {
    redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(&mut cluster.nodes()[0].conn())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_entity_operations_run_on_a_cluster() {
    let cluster = RedisCluster::start(3);
    let store = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    for id in 0..20u64 {
        let p = Profile {
            id,
            name: format!("p{id}"),
            visits: 0,
            settings: BTreeMap::from([("theme".into(), "dark".into())]),
        };
        store.save(&p).await.unwrap();
        store
            .update::<Profile>(&id)
            .incr(Profile::VISITS, 2)
            .hset(Profile::SETTINGS, "lang", "en")
            .exec()
            .await
            .unwrap();
        let back = store.get::<Profile>(&id).await.unwrap().unwrap();
        assert_eq!((back.visits, back.settings.len()), (2, 2));
        assert!(store
            .expiry::<Profile>()
            .expire(&id, Duration::from_secs(60))
            .await
            .unwrap());
        let keys = store.keys().of::<Profile>(&id);
        assert_eq!(
            slot(&cluster, &keys.base),
            slot(&cluster, &keys.maps[0]),
            "one slot per entity"
        );
    }
    // The entities are spread over the nodes, each entity on one.
    let slots: std::collections::BTreeSet<i64> = (0..20u64)
        .map(|id| slot(&cluster, &store.keys().of::<Profile>(&id).base))
        .collect();
    assert!(slots.len() > 1);
    // Walks of keys go to every master: each SCAN is routed to one.
    let mut walk = store.query::<Profile>().scan(5);
    let mut seen = BTreeSet::new();
    while let Some(page) = walk.next_page().await.unwrap() {
        seen.extend(page.into_iter().map(|p| p.unwrap().id));
    }
    assert_eq!(seen, (0..20).collect());
    let keys = store.keys().scan("user:*").await.unwrap();
    assert_eq!(keys.len(), 40, "20 profiles and their settings: {keys:?}");
    // The same walk a page at a time, every master in turn.
    let mut pages = store.keys().scan_pages("user:*");
    let mut paged = BTreeSet::new();
    while let Some(page) = pages.next_page().await.unwrap() {
        paged.extend(page);
    }
    assert_eq!(paged.into_iter().collect::<Vec<_>>(), keys);
    for id in 0..20u64 {
        assert!(store.delete::<Profile>(&id).await.unwrap());
    }

    let c = Columns {
        id: 9,
        username: "lisi".into(),
        code: Some("4711".into()),
    };
    store.insert(&c).await.unwrap();
    assert!(matches!(
        store.insert(&c).await,
        Err(Error::AlreadyExists { .. })
    ));
    assert_eq!(store.get::<Columns>(&9).await.unwrap(), Some(c));
    assert!(store.delete::<Columns>(&9).await.unwrap());
}

/// An indexed type on the cluster: sharded, each entity with its shard's
/// index entries under one hash tag.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "player", shards = 8)]
struct Player {
    #[pk]
    id: u64,
    #[index]
    country: String,
    #[index]
    tags: BTreeSet<String>,
    #[index(sorted)]
    score: f64,
}

fn player(id: u64) -> Player {
    Player {
        id,
        country: ["DE", "FR", "CN"][(id % 3) as usize].into(),
        tags: if id.is_multiple_of(4) {
            BTreeSet::from(["pro".to_string()])
        } else {
            BTreeSet::new()
        },
        // Ties on purpose: ten players per score.
        score: (id % 6) as f64,
    }
}

/// The ids of `players` in the order one sorted set would give them,
/// highest score first (ties by member, backwards).
fn by_score_desc(mut players: Vec<Player>) -> Vec<u64> {
    players.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| b.id.to_string().cmp(&a.id.to_string()))
    });
    players.into_iter().map(|p| p.id).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexed_entities_are_sharded_and_queries_give_one_servers_answers() {
    let cluster = RedisCluster::start(3);
    let store = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    let all: Vec<Player> = (1..=60).map(player).collect();
    store.save_all(&all[..30]).await.unwrap();
    for p in &all[30..] {
        store.save(p).await.unwrap();
    }

    // Each entity's keys and its shard's entries share one tag; the shards
    // spread over the masters.
    let keys = store.keys().of::<Player>(7);
    assert!(
        keys.base.starts_with("{player:") && keys.base.ends_with("}:player:7"),
        "{}",
        keys.base
    );
    let tag = &keys.base[..keys.base.find('}').unwrap() + 1];
    assert_eq!(
        slot(&cluster, &keys.base),
        slot(&cluster, &format!("{tag}:player:@ids"))
    );
    let slots: BTreeSet<i64> = (1..=60u64)
        .map(|id| slot(&cluster, &store.keys().of::<Player>(id).base))
        .collect();
    assert_eq!(slots.len(), 8, "one slot per shard");

    let want = |f: &dyn Fn(&Player) -> bool| -> Vec<u64> {
        all.iter().filter(|p| f(p)).map(|p| p.id).collect()
    };
    let ids = |v: Vec<Player>| -> Vec<u64> { v.into_iter().map(|p| p.id).collect() };

    // Reads of many entities, grouped by slot.
    let got = store.get_many::<Player>([3, 61, 17]).await.unwrap();
    assert_eq!(got, vec![Some(player(3)), None, Some(player(17))]);

    // Set algebra per shard, then the union: exact.
    let mut de = ids(store.find(Player::COUNTRY, "DE").await.unwrap());
    de.sort();
    assert_eq!(de, want(&|p| p.country == "DE"));
    let q = || {
        store
            .query::<Player>()
            .eq(Player::COUNTRY, "FR")
            .all(Player::TAGS, ["pro"])
    };
    let mut fr_pro = ids(q().fetch().await.unwrap());
    fr_pro.sort();
    assert_eq!(
        fr_pro,
        want(&|p| p.country == "FR" && p.tags.contains("pro"))
    );
    assert_eq!(q().count().await.unwrap(), fr_pro.len() as u64);

    // Ordered pages merged across shards, ties as one sorted set orders them.
    let page = store
        .query::<Player>()
        .range(Player::SCORE, 1.0..)
        .order_desc(Player::SCORE)
        .limit(5, 12)
        .fetch()
        .await
        .unwrap();
    let expected: Vec<u64> =
        by_score_desc(all.iter().filter(|p| p.score >= 1.0).cloned().collect());
    assert_eq!(ids(page), expected[5..17].to_vec());

    // A leaderboard: top merged, rank summed over the shards.
    let top = store.board(Player::SCORE).top(7).await.unwrap();
    let top_ids: Vec<u64> = top.iter().map(|(p, _)| p.id).collect();
    let board = by_score_desc(all.clone());
    assert_eq!(top_ids, board[..7].to_vec());
    for id in [1u64, 5, 30, 60] {
        let rank = store.board(Player::SCORE).rank(id).await.unwrap();
        let at = board.iter().position(|&b| b == id).unwrap() as u64;
        assert_eq!(rank, Some(at), "rank of {id}");
    }

    // A walk of the type and of a query, shard after shard.
    let mut walk = store.query::<Player>().scan(7);
    let mut seen = BTreeSet::new();
    while let Some(page) = walk.next_page().await.unwrap() {
        seen.extend(page.into_iter().map(|p| p.unwrap().id));
    }
    assert_eq!(seen, (1..=60).collect());
    let mut walk = store.query::<Player>().eq(Player::COUNTRY, "CN").scan(3);
    let mut cn = BTreeSet::new();
    while let Some(page) = walk.next_page().await.unwrap() {
        cn.extend(page.into_iter().map(|p| p.unwrap().id));
    }
    assert_eq!(cn, want(&|p| p.country == "CN").into_iter().collect());

    // verify, repair, reindex and sweep walk shard after shard, each on
    // its node.
    let report = store.maintenance::<Player>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.entities, 60);
    let de_key = format!("{tag}:player:@country:DE");
    let mut node = redis::Client::open(cluster.urls()[0].as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let planted: redis::RedisResult<i64> =
        redis::cmd("SADD").arg(&de_key).arg("7").query(&mut node);
    let planted = match planted {
        Ok(n) => n,
        // Another master holds the shard: plant it there.
        Err(_) => cluster
            .nodes()
            .iter()
            .find_map(|n| {
                redis::cmd("SADD")
                    .arg(&de_key)
                    .arg("7")
                    .query::<i64>(&mut n.conn())
                    .ok()
            })
            .unwrap(),
    };
    assert_eq!(planted, 1, "player 7 is from CN: a stale DE entry");
    let report = store.maintenance::<Player>().verify().await.unwrap();
    assert_eq!(report.violations.len(), 1, "{report}");
    let repaired = store.maintenance::<Player>().repair(&report).await.unwrap();
    assert_eq!((repaired.fixed, repaired.left.len()), (1, 0), "{repaired}");
    let after = store.maintenance::<Player>().verify().await.unwrap();
    assert!(after.is_clean(), "before: {report}\nafter: {after}");
    // Player 7 listed in another shard than its own (a write around the
    // library): reported with that shard's key, removed there by repair.
    let other = (0..8)
        .map(|s| format!("{{player:{s}}}"))
        .find(|t| *t != tag)
        .unwrap();
    let foreign_key = format!("{other}:player:@country:CN");
    let n: i64 = redis::AsyncCommands::sadd(&mut store.connection(), &foreign_key, "7")
        .await
        .unwrap();
    assert_eq!(n, 1);
    let report = store.maintenance::<Player>().verify().await.unwrap();
    assert_eq!(
        report.violations,
        [redis_entity::verify::Violation::StaleEntry {
            key: foreign_key.clone(),
            member: "7".into()
        }]
    );
    let repaired = store.maintenance::<Player>().repair(&report).await.unwrap();
    assert_eq!((repaired.fixed, repaired.left.len()), (1, 0), "{repaired}");
    let left: bool = redis::AsyncCommands::sismember(&mut store.connection(), &foreign_key, "7")
        .await
        .unwrap();
    assert!(!left, "removed from the shard that listed it");
    assert!(store
        .maintenance::<Player>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    assert_eq!(store.maintenance::<Player>().reindex().await.unwrap(), 60);
    for id in [10u64, 20] {
        assert!(store
            .expiry::<Player>()
            .expire(id, Duration::from_millis(50))
            .await
            .unwrap());
    }
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(store.maintenance::<Player>().sweep(100).await.unwrap(), 2);
    assert_eq!(store.query::<Player>().count().await.unwrap(), 58);

    // Updates move entries within the shard; deletes leave nothing.
    store
        .update::<Player>(2)
        .set(Player::COUNTRY, "CN")
        .exec()
        .await
        .unwrap();
    assert!(ids(store.find(Player::COUNTRY, "CN").await.unwrap()).contains(&2));
    for id in (1..=60u64).filter(|id| ![10, 20].contains(id)) {
        assert!(store.delete::<Player>(id).await.unwrap(), "{id}");
    }
    assert_eq!(
        store
            .query::<Player>()
            .eq(Player::COUNTRY, "DE")
            .count()
            .await
            .unwrap(),
        0
    );
    for node in cluster.nodes() {
        let left: Vec<String> = node
            .keys()
            .into_iter()
            .filter(|k| k.contains("player"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

/// A type with a unique index keeps one shard on a cluster (its default):
/// every entity in one slot, so a unique value is one atomic check.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
struct Member {
    #[pk]
    id: u64,
    #[index(unique)]
    email: String,
}

/// More shards with a unique index: each value has an owner key.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(shards = 4)]
struct Spread {
    #[pk]
    id: u64,
    #[index(unique)]
    email: String,
}

/// Members and players live in different slots.
const COACHES: redis_entity::relation::Relation<Member, Player> =
    redis_entity::relation::Relation::many_to_many("coaches", "coached_by");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unique_value_has_exactly_one_owner_on_a_cluster() {
    let cluster = RedisCluster::start(3);
    let store = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    let m = |id: u64, email: &str| Member {
        id,
        email: email.into(),
    };
    store.save(&m(1, "a@x")).await.unwrap();
    assert_eq!(
        store.find_unique(Member::EMAIL, "a@x").await.unwrap(),
        Some(m(1, "a@x"))
    );
    let err = store.save(&m(2, "a@x")).await.unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err:?}");
    assert_eq!(
        store.get::<Member>(2).await.unwrap(),
        None,
        "nothing written"
    );

    // 16 tasks race for one value: exactly one owns it.
    let store = std::sync::Arc::new(store);
    let tasks: Vec<_> = (100..116u64)
        .map(|id| {
            let store = store.clone();
            tokio::spawn(async move { store.save(&m(id, "race@x")).await.is_ok() })
        })
        .collect();
    let mut winners = 0;
    for t in tasks {
        winners += usize::from(t.await.unwrap());
    }
    assert_eq!(winners, 1);
    let owner = store
        .find_unique(Member::EMAIL, "race@x")
        .await
        .unwrap()
        .unwrap();
    let holders = store
        .get_many::<Member>((100..116u64).collect::<Vec<_>>())
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    assert_eq!(holders, vec![owner]);
    assert!(store
        .maintenance::<Member>()
        .verify()
        .await
        .unwrap()
        .is_clean());

    // More shards than one with a unique index: owner keys per value
    // (tests/cluster_unique.rs).
    let spread = Spread {
        id: 1,
        email: "s@x".into(),
    };
    store.save(&spread).await.unwrap();
    assert_eq!(
        store.find_unique(Spread::EMAIL, "s@x").await.unwrap(),
        Some(spread)
    );
    // A relation between two slots: one call per side (tests/cluster_relations.rs).
    store.save(&player(5)).await.unwrap();
    assert!(store.relation(&COACHES).relate(1, 5).await.unwrap());
    assert_eq!(
        store.relation(&COACHES).related_back(5).await.unwrap(),
        vec![1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_and_migrations_walk_every_master() {
    let cluster = RedisCluster::start(3);
    let store = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();

    // Cache entries in many slots: `clear` finds them on every master.
    let cache = redis_entity::Cache::from_store(&store).named("prices");
    for i in 0..30u64 {
        let v: Option<u64> = cache
            .get_or_load(
                &format!("sku-{i}"),
                Duration::from_secs(60),
                || async move { Ok::<_, std::io::Error>(Some(i)) },
            )
            .await
            .unwrap();
        assert_eq!(v, Some(i));
    }
    assert_eq!(store.keys().scan("cache:*").await.unwrap().len(), 30);
    assert_eq!(cache.clear().await.unwrap(), 30);
    assert!(store.keys().scan("cache:*").await.unwrap().is_empty());

    // Legacy JSON strings under many slots become profiles, master after
    // master, and the sources go.
    let mut c = redis::cluster::ClusterClient::new(cluster.urls())
        .unwrap()
        .get_connection()
        .unwrap();
    for id in 0..40u64 {
        let _: () = redis::cmd("SET")
            .arg(format!("Legacy_{id}_Profile"))
            .arg(format!(r#"{{"name":"p{id}","visits":{id}}}"#))
            .query(&mut c)
            .unwrap();
    }
    let migration = redis_entity::migrate::Migration {
        batch: 7,
        delete_source: true,
        ..redis_entity::migrate::Migration::new("Legacy_*_Profile")
    };
    let progress = store
        .maintenance::<Profile>()
        .migrate(
            &migration,
            0,
            |key, raw| {
                let id: u64 = key.split('_').nth(1).unwrap().parse().unwrap();
                let v: serde_json::Value =
                    serde_json::from_slice(raw).map_err(|e| e.to_string())?;
                Ok(Some(Profile {
                    id,
                    name: v["name"].as_str().unwrap().into(),
                    visits: v["visits"].as_i64().unwrap(),
                    settings: BTreeMap::new(),
                }))
            },
            |_| {},
        )
        .await
        .unwrap();
    assert!(progress.done);
    assert_eq!(
        (progress.migrated, progress.deleted),
        (40, 40),
        "{progress:?}"
    );
    assert!(store.keys().scan("Legacy_*").await.unwrap().is_empty());
    assert_eq!(store.get::<Profile>(39).await.unwrap().unwrap().visits, 39);
}

#[test]
fn the_blocking_store_runs_on_a_cluster() {
    let cluster = RedisCluster::start(3);
    let store = redis_entity::blocking::Store::builder()
        .connect_cluster(&cluster.urls())
        .unwrap();
    let all: Vec<Player> = (1..=30).map(player).collect();
    store.save_all(&all).unwrap();
    let mut de: Vec<u64> = store
        .find(Player::COUNTRY, "DE")
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    de.sort();
    assert_eq!(de, (1..=30).filter(|id| id % 3 == 0).collect::<Vec<_>>());
    let walked: BTreeSet<u64> = store
        .query::<Player>()
        .scan(4)
        .map(|p| p.unwrap().id)
        .collect();
    assert_eq!(walked, (1..=30).collect());
}

/// A social graph in one slot group: users, their follows, and posts pushed
/// to followers' timelines, all in `{social:0}`.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "fan", group = "social")]
struct Fan {
    #[pk]
    id: u64,
    #[index]
    city: String,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "note", group = "social")]
struct Note {
    #[pk]
    id: u64,
    author: u64,
    text: String,
}

const FOLLOWS: redis_entity::relation::Relation<Fan, Fan> =
    redis_entity::relation::Relation::many_to_many("following", "followers");
const FEED: redis_entity::relation::Timeline<Fan, Note> =
    redis_entity::relation::Timeline::new("feed", 100);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relations_and_timelines_run_within_a_slot_group() {
    let cluster = RedisCluster::start(3);
    let store = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    let fan = |id: u64| Fan {
        id,
        city: if id.is_multiple_of(2) { "Rome" } else { "Oslo" }.into(),
    };
    store
        .save_all(&(1..=6).map(fan).collect::<Vec<_>>())
        .await
        .unwrap();
    assert!(store
        .keys()
        .of::<Fan>(3)
        .base
        .starts_with("{social:0}:fan:3"));
    assert!(Note::layout()
        .to_string()
        .contains("`social` group's one slot, `{social:0}:`"));
    let cluster = redis_entity::EntityLayout::of_layout(
        <Note as redis_entity::Entity>::DESC,
        redis_entity::KeyLayout::Cluster,
    );
    assert_eq!(cluster.keys[0].pattern, "{social:0}:note:<id>");
    for follower in 2..=6u64 {
        assert!(store.relation(&FOLLOWS).relate(follower, 1).await.unwrap());
    }
    assert_eq!(
        store
            .relation(&FOLLOWS)
            .related_back_count(1)
            .await
            .unwrap(),
        5
    );
    let note = Note {
        id: 10,
        author: 1,
        text: "hello".into(),
    };
    store.save(&note).await.unwrap();
    assert_eq!(
        store
            .timeline(&FEED)
            .push_related(10, &FOLLOWS, 1)
            .await
            .unwrap(),
        5
    );
    assert_eq!(
        store.timeline(&FEED).page(4, 0, 10).await.unwrap(),
        vec![note.clone()]
    );

    // Deleting a user takes it out of every relation, in the one script.
    assert!(store.delete::<Fan>(4).await.unwrap());
    assert_eq!(
        store
            .relation(&FOLLOWS)
            .related_back_count(1)
            .await
            .unwrap(),
        4
    );
    assert!(store
        .maintenance::<Fan>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    let mut rome: Vec<u64> = store
        .find(Fan::CITY, "Rome")
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.id)
        .collect();
    rome.sort();
    assert_eq!(rome, vec![2, 6]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_weibo_model_runs_on_a_cluster() {
    use weibo::{users, Post, User, FOLLOWS, PUSHED};
    let cluster = RedisCluster::start(3);
    let store = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    store.save_all(&users()).await.unwrap();
    assert!(store.relation(&FOLLOWS).relate(8, 9).await.unwrap());
    assert!(store.relation(&FOLLOWS).relate(7, 9).await.unwrap());
    let post = Post {
        postid: 1,
        userid: 9,
        time: 1_596_338_654_824,
        content: "hello".into(),
    };
    store.save(&post).await.unwrap();
    assert_eq!(
        store
            .timeline(&PUSHED)
            .push_related(1, &FOLLOWS, 9)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store.timeline(&PUSHED).page(8, 0, 10).await.unwrap(),
        vec![post.clone()]
    );
    assert_eq!(store.find(Post::USERID, 9u64).await.unwrap(), vec![post]);
    assert!(store.delete::<User>(8).await.unwrap());
    assert_eq!(
        store.relation(&FOLLOWS).related_back(9).await.unwrap(),
        vec![7]
    );
    assert!(store
        .maintenance::<User>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    assert!(store
        .maintenance::<Post>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

/// A type before and after its first index, with a map and a TTL.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "member2")]
struct MemberV1 {
    #[pk]
    id: u64,
    city: String,
    #[hash]
    prefs: BTreeMap<String, String>,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "member2", shards = 4)]
struct MemberV2 {
    #[pk]
    id: u64,
    #[index]
    city: String,
    #[hash]
    prefs: BTreeMap<String, String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entities_written_before_the_first_index_move_into_their_shards() {
    let cluster = RedisCluster::start(3);
    let store = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    let prefs = BTreeMap::from([("lang".to_string(), "de".to_string())]);
    for id in 1..=20u64 {
        let m = MemberV1 {
            id,
            city: if id % 2 == 0 { "Rome" } else { "Oslo" }.into(),
            prefs: prefs.clone(),
        };
        store.save(&m).await.unwrap();
    }
    store
        .expiry::<MemberV1>()
        .expire(3, Duration::from_secs(300))
        .await
        .unwrap();
    assert_eq!(store.keys().of::<MemberV1>(3).base, "member2:{3}");
    assert!(store.keys().of::<MemberV2>(3).base.starts_with("{member2:"));
    assert_eq!(
        store.get::<MemberV2>(3).await.unwrap(),
        None,
        "not read there"
    );

    // verify names each one; repair moves it with its map and TTL, indexed.
    let report = store.maintenance::<MemberV2>().verify().await.unwrap();
    let unplaced: Vec<&str> = report
        .violations
        .iter()
        .filter_map(|v| match v {
            redis_entity::verify::Violation::Unplaced { key, .. } => Some(key.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(unplaced.len(), 20, "{report}");
    assert!(unplaced.contains(&"member2:{3}"));
    let repaired = store
        .maintenance::<MemberV2>()
        .repair(&report)
        .await
        .unwrap();
    assert!(repaired.left.is_empty(), "{repaired}");
    // The repair made MemberV2 the keyspace's definition; its index on
    // `city` is ready once `schema apply` walked the moved entities.
    let applied = store.schema().apply::<MemberV2>().await.unwrap();
    assert_eq!(applied.built, ["city"]);
    let back = store.get::<MemberV2>(3).await.unwrap().unwrap();
    assert_eq!((back.city.as_str(), &back.prefs), ("Oslo", &prefs));
    let ttl = store.expiry::<MemberV2>().ttl(3).await.unwrap().unwrap();
    assert!(ttl > Duration::from_secs(250), "{ttl:?}");
    assert_eq!(store.find(MemberV2::CITY, "Rome").await.unwrap().len(), 10);
    assert_eq!(
        store.get::<MemberV1>(3).await.unwrap(),
        None,
        "the old keys are gone"
    );
    assert!(store
        .maintenance::<MemberV2>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_of_a_type_without_indexes_reads_every_master() {
    let cluster = RedisCluster::start(3);
    let store = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    for id in 0..60u64 {
        let p = Profile {
            id,
            name: format!("p{id}"),
            visits: 1,
            settings: BTreeMap::new(),
        };
        store.save(&p).await.unwrap();
    }
    // No index, no shards: each entity in its own slot, on every master.
    let per_master: Vec<usize> = cluster
        .nodes()
        .iter()
        .map(|n| n.keys().iter().filter(|k| k.ends_with(":profile")).count())
        .collect();
    assert!(per_master.iter().all(|&n| n > 0), "{per_master:?}");
    let report = store.maintenance::<Profile>().verify().await.unwrap();
    assert_eq!(report.entities, 60, "{report}");
    assert!(report.is_clean(), "{report}");
    // A record that does not decode is found on whichever master holds it.
    let mut conn = redis::cluster::ClusterClient::new(cluster.urls())
        .unwrap()
        .get_connection()
        .unwrap();
    for id in [7u64, 41] {
        let key = store.keys().of::<Profile>(id).base;
        let () = redis::cmd("HSET")
            .arg(&key)
            .arg("visits")
            .arg("many")
            .query(&mut conn)
            .unwrap();
    }
    let report = store.maintenance::<Profile>().verify().await.unwrap();
    assert_eq!(report.entities, 60, "{report}");
    assert_eq!(report.violations.len(), 2, "{report}");
    let text = report.to_string();
    assert!(
        text.contains("user:{7}:profile") && text.contains("user:{41}:profile"),
        "{text}"
    );
}
