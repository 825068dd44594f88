//! A server at its memory limit, and servers that evict keys.
//!
//! Under `noeviction` a server at its `maxmemory` refuses writes that
//! could grow memory: the store says so with `Error::OutOfMemory`, naming
//! the key, and writes nothing; deletes, sweeps and repairs still run, so
//! memory can be freed through the library. Under a policy that evicts any
//! key (`allkeys-*`) the store refuses to write (`Error::EvictingPolicy`)
//! before anything is written, unless built with `allow_eviction(true)`;
//! the policy is read again with every schema announcement. `verify` says
//! which policy the server runs.
//!
//! One server: `maxmemory` and the policy are the server's own settings.

use redis::Commands;
use redis_entity::{Error, RedisEntity, Store};
use std::time::Duration;
use support::RedisServer;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "mem")]
struct Item {
    #[pk]
    id: u64,
    #[index(unique)]
    code: String,
    #[index]
    shelf: String,
    #[index(sorted)]
    score: f64,
    payload: String,
}

fn item(id: u64) -> Item {
    Item {
        id,
        code: format!("c{id}"),
        shelf: format!("s{}", id % 4),
        score: id as f64,
        payload: "x".repeat(900),
    }
}

/// `CONFIG SET maxmemory-policy <policy>` on `server`.
fn set_policy(server: &RedisServer, policy: &str) {
    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg(policy)
        .query(&mut server.conn())
        .unwrap();
}

fn dbsize(server: &RedisServer) -> u64 {
    redis::cmd("DBSIZE").query(&mut server.conn()).unwrap()
}

/// Saves items from `from` on in batches until the server refuses one for
/// memory; returns the first id not saved and the error.
async fn fill(store: &Store, from: u64) -> (u64, Error) {
    let mut next = from;
    loop {
        let batch: Vec<Item> = (next..next + 100).map(item).collect();
        if let Err(e) = store.save_all(&batch).await {
            // The batch's entities are written one by one: find the first
            // not stored.
            while store.get::<Item>(next).await.unwrap().is_some() {
                next += 1;
            }
            return (next, e);
        }
        next += 100;
        assert!(next < 200_000, "the server never ran out of memory");
    }
}

#[tokio::test]
async fn at_the_memory_limit_writes_are_refused_typed_and_deletes_free_memory() {
    let server =
        RedisServer::start_with(&["--maxmemory", "6mb", "--maxmemory-policy", "noeviction"]);
    let store = Store::builder()
        .schema_heartbeat(Duration::from_millis(200))
        .connect(&server.url())
        .await
        .unwrap();
    // A stale entry for repair to remove, planted while there is room.
    let () = server.conn().sadd("mem:@shelf:s1", "999999").unwrap();
    let (next, err) = fill(&store, 1).await;
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err:?}");
    assert!(next > 1_000, "only {next} items fit");

    // A refused save names the entity and writes nothing, also once the
    // store's schema announcement is due again (it runs at the limit).
    // (Used memory moves a little, client buffers freed: a save may still
    // fit; the next ones do not.)
    let mut next = next;
    let (before, err) = loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = dbsize(&server);
        match store.save(&item(next)).await {
            Ok(_) => next += 1,
            Err(e) => break (before, e),
        }
        assert!(next < 200_000);
    };
    match &err {
        Error::OutOfMemory { key, detail } => {
            assert_eq!(key, &format!("mem:{next}"), "{err}");
            assert!(detail.contains("maxmemory"), "{detail}");
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    assert!(!err.is_connection() && !err.is_transient(), "{err:?}");
    assert_eq!(dbsize(&server), before);
    let code: Option<String> = server.conn().get(format!("mem:@code:c{next}")).unwrap();
    assert_eq!(code, None);

    // Still at the limit: verify reads, and repair removes the stale entry.
    let maintenance = store.maintenance::<Item>();
    let report = maintenance.verify().await.unwrap();
    assert_eq!(report.violations.len(), 1, "{report}");
    assert_eq!(report.memory_policy.as_deref(), Some("noeviction"));
    let repaired = maintenance.repair(&report).await.unwrap();
    assert!(repaired.left.is_empty(), "{repaired:?}");
    let shelf: Vec<String> = server.conn().smembers("mem:@shelf:s1").unwrap();
    assert!(!shelf.contains(&"999999".to_owned()));

    // A store that never wrote finds the marker at the limit, and deletes.
    let fresh = Store::connect(&server.url()).await.unwrap();
    assert!(fresh.delete::<Item>(1).await.unwrap());
    // 1,000 entities go through the library: deletes, conditional deletes
    // and a query's delete.
    for id in 2..=400 {
        assert!(store.delete::<Item>(id).await.unwrap(), "delete {id}");
    }
    for id in 401..=600 {
        let cond = [Item::SHELF.is(format!("s{}", id % 4))];
        assert!(store.delete_if::<Item>(id, cond).await.unwrap(), "{id}");
    }
    let ids: Vec<u64> = store
        .query::<Item>()
        .range(Item::SCORE, 601.0..=1000.0)
        .ids()
        .await
        .unwrap();
    assert_eq!(ids.len(), 400);
    let gone = store
        .query::<Item>()
        .range(Item::SCORE, 601.0..=1000.0)
        .delete()
        .await
        .unwrap();
    assert_eq!(gone, 400);
    assert_eq!(store.get::<Item>(700).await.unwrap(), None);
    let owner: Option<String> = server.conn().get("mem:@code:c700").unwrap();
    assert_eq!(owner, None, "the unique value went with its entity");

    // Then saves fit again, and every index holds exactly the stored
    // entities.
    for id in next..next + 100 {
        store.save(&item(id)).await.unwrap();
    }
    assert!(maintenance.verify().await.unwrap().is_clean());
}

#[tokio::test]
async fn a_sweep_unindexes_expired_entities_at_the_memory_limit() {
    let server =
        RedisServer::start_with(&["--maxmemory", "4mb", "--maxmemory-policy", "noeviction"]);
    let store = Store::connect(&server.url()).await.unwrap();
    for id in 1..=50 {
        store
            .expiry::<Item>()
            .save_with_ttl(&item(id), Duration::from_millis(300))
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Filled once the 50 have expired, so that the sweep runs at the limit.
    let (_, err) = fill(&store, 1_000).await;
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err:?}");
    assert_eq!(store.maintenance::<Item>().sweep(1_000).await.unwrap(), 50);
    let shelf: Vec<u64> = server.conn().smembers("mem:@shelf:s1").unwrap();
    assert!(shelf.iter().all(|&id| id >= 1_000), "{shelf:?}");
}

#[tokio::test]
async fn a_policy_evicting_any_key_is_refused_before_anything_is_written() {
    let server = RedisServer::start_with(&["--maxmemory-policy", "allkeys-lru"]);
    let store = Store::connect(&server.url()).await.unwrap();
    for attempt in 0..2 {
        let err = store.save(&item(1)).await.unwrap_err();
        match &err {
            Error::EvictingPolicy { policy } => assert_eq!(policy, "allkeys-lru"),
            other => panic!("attempt {attempt}: expected EvictingPolicy, got {other:?}"),
        }
        assert!(err.to_string().contains("allow_eviction"), "{err}");
    }
    assert_eq!(dbsize(&server), 0, "no marker, no schema record, no entity");

    // Opted in (cache-only data): it writes, and verify names the policy.
    let cache = Store::builder()
        .allow_eviction(true)
        .connect(&server.url())
        .await
        .unwrap();
    cache.save(&item(1)).await.unwrap();
    assert_eq!(cache.get::<Item>(1).await.unwrap(), Some(item(1)));
    let report = cache.maintenance::<Item>().verify().await.unwrap();
    assert_eq!(report.memory_policy.as_deref(), Some("allkeys-lru"));
    assert!(
        report.to_string().contains("indexes can be lost"),
        "{report}"
    );
}

#[tokio::test]
async fn a_policy_changed_while_a_store_writes_is_noticed_within_a_heartbeat() {
    let server = RedisServer::start();
    let store = Store::builder()
        .schema_heartbeat(Duration::from_millis(200))
        .connect(&server.url())
        .await
        .unwrap();
    store.save(&item(1)).await.unwrap();
    set_policy(&server, "allkeys-lfu");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let err = store.save(&item(2)).await.unwrap_err();
    assert!(
        matches!(&err, Error::EvictingPolicy { policy } if policy == "allkeys-lfu"),
        "{err:?}"
    );
    assert_eq!(store.get::<Item>(2).await.unwrap(), None);
    // Back to noeviction: the next announcement lets it write again.
    set_policy(&server, "noeviction");
    store.save(&item(2)).await.unwrap();
    assert_eq!(store.get::<Item>(2).await.unwrap(), Some(item(2)));
}

#[tokio::test]
async fn a_policy_evicting_keys_with_a_ttl_is_written_through_and_reported() {
    let server = RedisServer::start_with(&["--maxmemory-policy", "volatile-lru"]);
    let store = Store::connect(&server.url()).await.unwrap();
    store.save(&item(1)).await.unwrap();
    let report = store.maintenance::<Item>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.memory_policy.as_deref(), Some("volatile-lru"));
    assert!(report.to_string().contains("keys with a TTL"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_an_evicting_policy_is_refused_on_every_slot() {
    let cluster = support::RedisCluster::start(3);
    for node in cluster.nodes() {
        set_policy(node, "allkeys-random");
    }
    let store = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    for id in 1..=5 {
        let err = store.save(&item(id)).await.unwrap_err();
        assert!(
            matches!(&err, Error::EvictingPolicy { policy } if policy == "allkeys-random"),
            "{err:?}"
        );
    }
    assert_eq!(cluster.keys(), Vec::<String>::new());
    let cache = Store::builder()
        .allow_eviction(true)
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    for id in 1..=5 {
        cache.save(&item(id)).await.unwrap();
    }
    let mut found: Vec<u64> = cache
        .find(Item::SHELF, "s1")
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    found.sort();
    assert_eq!(found, [1, 5]);
    let report = cache.maintenance::<Item>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.memory_policy.as_deref(), Some("allkeys-random"));
}
