//! The near cache on a 3-master cluster: one tracking connection per
//! master, each record read over its master's; hot reads from memory, a
//! write by another client invalidates through the master it lands on, the
//! store's own writes are read back at once, and moving the slots of cached
//! records to another master (`redis-cli --cluster reshard`) leaves no stale
//! read.

use redis_entity::near::{NearCache, NearCacheOptions};
use redis_entity::relation::Relation;
use redis_entity::{RedisEntity, Store};
use std::time::{Duration, Instant};
use support::RedisCluster;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user", shards = 8)]
struct User {
    #[pk]
    id: u64,
    #[index]
    country: String,
    name: String,
}

const FOLLOWS: Relation<User, User> = Relation::many_to_many("following", "followers");

fn user(id: u64, name: &str) -> User {
    User {
        id,
        country: "DE".into(),
        name: name.into(),
    }
}

async fn stores(
    cluster: &RedisCluster,
) -> (
    Store<redis::cluster_async::ClusterConnection>,
    Store<redis::cluster_async::ClusterConnection>,
    NearCache,
) {
    let urls = cluster.urls();
    let near = NearCache::connect_cluster(&urls, NearCacheOptions::default().only::<User>())
        .await
        .unwrap();
    let cached = Store::builder()
        .near_cache(near.clone())
        .connect_cluster(&urls)
        .await
        .unwrap();
    let other = Store::builder().connect_cluster(&urls).await.unwrap();
    (cached, other, near)
}

/// Reads `id` through `store` until its name is `name`, at most 2 s.
async fn reads_name(store: &Store<redis::cluster_async::ClusterConnection>, id: u64, name: &str) {
    let t = Instant::now();
    loop {
        let got = store.get::<User>(id).await.unwrap().map(|u| u.name);
        if got.as_deref() == Some(name) {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "user {id} still reads {got:?}, not {name}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// How many slots the master on `port` serves (`CLUSTER SLOTS`).
fn slots_of(cluster: &RedisCluster, port: u16) -> usize {
    let ranges: Vec<redis::Value> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query(&mut cluster.nodes()[0].conn())
        .unwrap();
    ranges
        .iter()
        .filter_map(|r| match r {
            redis::Value::Array(p) => match (&p[0], &p[1], &p[2]) {
                (redis::Value::Int(lo), redis::Value::Int(hi), redis::Value::Array(node))
                    if node.get(1) == Some(&redis::Value::Int(i64::from(port))) =>
                {
                    Some((hi - lo + 1) as usize)
                }
                _ => None,
            },
            _ => None,
        })
        .sum()
}

/// The port of the master holding `key`.
fn master_of(cluster: &RedisCluster, key: &str) -> u16 {
    cluster
        .nodes()
        .iter()
        .find(|n| {
            redis::cmd("EXISTS")
                .arg(key)
                .query::<i64>(&mut n.conn())
                .is_ok_and(|e| e == 1)
        })
        .map(|n| n.port())
        .expect("a master holds the key")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_reads_come_from_memory_and_writes_anywhere_invalidate() {
    let cluster = RedisCluster::start(3);
    let (cached, other, near) = stores(&cluster).await;
    let users: Vec<User> = (1..=30).map(|id| user(id, "a")).collect();
    other.save_all(&users).await.unwrap();
    let masters: std::collections::BTreeSet<u16> = (1..=30u64)
        .map(|id| master_of(&cluster, &cached.keys().of::<User>(id).base))
        .collect();
    assert_eq!(masters.len(), 3, "the users live on every master");

    for id in 1..=30u64 {
        assert_eq!(cached.get::<User>(id).await.unwrap(), Some(user(id, "a")));
    }
    let before = near.stats();
    for id in 1..=30u64 {
        assert_eq!(cached.get::<User>(id).await.unwrap(), Some(user(id, "a")));
    }
    assert_eq!(
        near.stats().hits - before.hits,
        30,
        "second reads from memory"
    );
    assert_eq!(near.stats().misses, before.misses);

    // Another client writes users on every master: each master tells.
    for id in 1..=30u64 {
        other.save(&user(id, "b")).await.unwrap();
    }
    for id in 1..=30u64 {
        reads_name(&cached, id, "b").await;
    }
    // The store's own writes are read back at once, and kept fresh.
    cached.save(&user(7, "c")).await.unwrap();
    assert_eq!(cached.get::<User>(7).await.unwrap(), Some(user(7, "c")));
    assert!(other.delete::<User>(9).await.unwrap());
    let t = Instant::now();
    while cached.get::<User>(9).await.unwrap().is_some() {
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "a deleted user still read"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // A delete through the cached store cleans other sides in other slots.
    cached.relation(&FOLLOWS).relate(1, 2).await.unwrap();
    cached.relation(&FOLLOWS).relate(3, 1).await.unwrap();
    assert!(cached.delete::<User>(1).await.unwrap());
    assert!(other
        .relation(&FOLLOWS)
        .related_back(2)
        .await
        .unwrap()
        .is_empty());
    assert!(other
        .relation(&FOLLOWS)
        .related(3)
        .await
        .unwrap()
        .is_empty());
    assert!(other
        .maintenance::<User>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_whose_slots_move_are_never_read_stale() {
    let cluster = RedisCluster::start(3);
    let (cached, other, near) = stores(&cluster).await;
    other
        .save_all(&(1..=30).map(|id| user(id, "a")).collect::<Vec<_>>())
        .await
        .unwrap();
    for id in 1..=30u64 {
        cached.get::<User>(id).await.unwrap();
    }
    // Every slot of one master moves to another, with the cached users.
    let key = cached.keys().of::<User>(5).base;
    let from = master_of(&cluster, &key);
    let to = cluster
        .roles()
        .into_iter()
        .find(|r| r.2 && r.1 != from)
        .unwrap()
        .1;
    let moved: Vec<u64> = (1..=30u64)
        .filter(|id| master_of(&cluster, &cached.keys().of::<User>(*id).base) == from)
        .collect();
    let drops = near.stats().drops;
    cluster.reshard(from, to, slots_of(&cluster, from));
    assert_eq!(master_of(&cluster, &key), to);
    // Read correctly from the new master (the old one answers MOVED: the
    // cache is dropped and the slot map read again), then a write there
    // invalidates.
    for &id in &moved {
        assert_eq!(cached.get::<User>(id).await.unwrap(), Some(user(id, "a")));
    }
    assert!(
        near.stats().drops > drops,
        "the redirection dropped the cache"
    );
    for &id in &moved {
        other.save(&user(id, "b")).await.unwrap();
    }
    for id in 1..=30u64 {
        let name = if moved.contains(&id) { "b" } else { "a" };
        reads_name(&cached, id, name).await;
    }
    // And cached again, from the new master.
    let before = near.stats().hits;
    for &id in &moved {
        assert_eq!(cached.get::<User>(id).await.unwrap(), Some(user(id, "b")));
    }
    assert_eq!(near.stats().hits - before, moved.len() as u64);
    // The store's own writes go to the new master too.
    cached.save(&user(moved[0], "c")).await.unwrap();
    reads_name(&other, moved[0], "c").await;
}
