//! Unique values of a type spread over many index shards of a 3-master
//! cluster: each value's owner key in its own slot, claimed before a write
//! gives the value, released after; never two owners, leftovers of a crash
//! taken over after the lease, reported by `verify` and removed by `repair`.

use redis::AsyncCommands;
use redis_entity::verify::Violation;
use redis_entity::{CountingConnection, Error, KeyLayout, RedisEntity, Store};
use std::sync::Arc;
use support::RedisCluster;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "acct", shards = 8)]
struct Account {
    #[pk]
    id: u64,
    #[index(unique)]
    email: String,
    #[index]
    team: String,
}

fn acct(id: u64, email: &str) -> Account {
    Account {
        id,
        email: email.into(),
        team: "red".into(),
    }
}

/// The owner key of an email (`{acct:email:<value>}`).
fn owner_key(email: &str) -> String {
    format!("{{acct:email:{email}}}")
}

async fn owner(
    store: &Store<impl redis::aio::ConnectionLike + Clone + Send + Sync>,
    email: &str,
) -> Option<String> {
    store
        .connection()
        .hget(owner_key(email), "owner")
        .await
        .unwrap()
}

/// A 3-master cluster with accounts 1 to 16, emails `u<id>@x`.
async fn sixteen_accounts() -> (
    RedisCluster,
    Store<impl redis::aio::ConnectionLike + Clone + Send + Sync>,
) {
    let cluster = RedisCluster::start(3);
    let store = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    for id in 1..=16u64 {
        store.save(&acct(id, &format!("u{id}@x"))).await.unwrap();
    }
    (cluster, store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unique_value_has_one_owner_across_shards() {
    let (_cluster, store) = sixteen_accounts().await;
    let shards: std::collections::BTreeSet<String> = (1..=16u64)
        .map(|id| {
            store
                .keys()
                .of::<Account>(id)
                .base
                .split('}')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(shards.len() > 3, "spread over shards: {shards:?}");
    assert_eq!(owner(&store, "u3@x").await.as_deref(), Some("3"));
    assert_eq!(
        store.find_unique(Account::EMAIL, "u3@x").await.unwrap(),
        Some(acct(3, "u3@x"))
    );
    assert_eq!(
        store.find_unique(Account::EMAIL, "none@x").await.unwrap(),
        None
    );

    // Another entity, in whatever shard, cannot take a held value; nothing
    // of it is written.
    let err = store.save(&acct(40, "u3@x")).await.unwrap_err();
    assert!(
        matches!(&err, Error::UniqueViolation { field: "email", value } if value == "u3@x"),
        "{err:?}"
    );
    assert_eq!(store.get::<Account>(40).await.unwrap(), None);
    let err = store
        .update::<Account>(4)
        .set(Account::EMAIL, "u3@x".to_owned())
        .exec()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err:?}");
    assert_eq!(
        store.get::<Account>(4).await.unwrap(),
        Some(acct(4, "u4@x"))
    );
    assert_eq!(owner(&store, "u3@x").await.as_deref(), Some("3"));

    // A change frees the old value at once; a delete frees its value.
    store.save(&acct(3, "new3@x")).await.unwrap();
    assert_eq!(owner(&store, "u3@x").await, None);
    store.save(&acct(40, "u3@x")).await.unwrap();
    assert_eq!(owner(&store, "u3@x").await.as_deref(), Some("40"));
    assert!(store.delete::<Account>(40).await.unwrap());
    assert_eq!(owner(&store, "u3@x").await, None);
    store
        .update::<Account>(5)
        .set(Account::EMAIL, "u3@x".to_owned())
        .exec()
        .await
        .unwrap();
    assert_eq!(owner(&store, "u5@x").await, None);
    assert_eq!(
        store.find_unique(Account::EMAIL, "u3@x").await.unwrap(),
        Some(acct(5, "u3@x"))
    );
    // save_all: each entity claims its own values.
    store
        .save_all(&[acct(50, "b1@x"), acct(51, "b2@x")])
        .await
        .unwrap();
    assert_eq!(owner(&store, "b2@x").await.as_deref(), Some("51"));
    let report = store.maintenance::<Account>().verify().await.unwrap();
    assert!(report.is_clean(), "{:?}", report.violations);

    // 16 tasks of different shards race for one value: exactly one owns it.
    let store = Arc::new(store);
    let tasks: Vec<_> = (100..116u64)
        .map(|id| {
            let store = store.clone();
            tokio::spawn(async move { store.save(&acct(id, "race@x")).await })
        })
        .collect();
    let mut winners = Vec::new();
    for (id, t) in (100..116u64).zip(tasks) {
        match t.await.unwrap() {
            Ok(_) => winners.push(id),
            Err(Error::UniqueViolation { .. }) => {}
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    assert_eq!(owner(&store, "race@x").await, Some(winners[0].to_string()));
    let holders: Vec<u64> = store
        .get_many::<Account>((100..116u64).collect::<Vec<_>>())
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .map(|a| a.id)
        .collect();
    assert_eq!(holders, winners);
    assert!(store
        .maintenance::<Account>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_value_costs_one_wave_a_change_three() {
    let cluster = RedisCluster::start(3);
    let conn = redis::cluster::ClusterClient::new(cluster.urls())
        .unwrap()
        .get_async_connection()
        .await
        .unwrap();
    let conn = CountingConnection::new(conn);
    let trips = conn.counter();
    let store = Store::builder()
        .key_layout(KeyLayout::Cluster)
        .layout_check(false)
        .build(conn);
    store.save(&acct(1, "a@x")).await.unwrap();
    trips.take();
    // The write and the claim of its value, sent together: one wave.
    let mut a = acct(1, "a@x");
    a.team = "blue".into();
    store.save(&a).await.unwrap();
    assert_eq!(trips.take(), 2);
    store
        .update::<Account>(1)
        .set(Account::TEAM, "green".to_owned())
        .exec()
        .await
        .unwrap();
    assert_eq!(trips.take(), 1, "no unique value given: the write alone");
    // A new value: write and claim, the write again, the old value released.
    store.save(&acct(1, "b@x")).await.unwrap();
    assert_eq!(trips.take(), 4);
    assert_eq!(owner(&store, "a@x").await, None);
    assert_eq!(owner(&store, "b@x").await.as_deref(), Some("1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftovers_of_a_crash_are_taken_over_reported_and_repaired() {
    let cluster = RedisCluster::start(3);
    let store = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    store.save(&acct(1, "one@x")).await.unwrap();
    store.save(&acct(2, "two@x")).await.unwrap();
    let mut conn = store.connection();
    let plant = |email: &str, owner: &str, at: u64| {
        let (key, owner) = (owner_key(email), owner.to_owned());
        let mut conn = store.connection();
        async move {
            let () = conn
                .hset_multiple(&key, &[("owner", owner), ("at", at.to_string())])
                .await
                .unwrap();
        }
    };
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    };

    // A claim by an entity that crashed before its write, long ago: taken
    // over by the next claimer.
    plant("ghost@x", "999", 0).await;
    store.save(&acct(3, "ghost@x")).await.unwrap();
    assert_eq!(owner(&store, "ghost@x").await.as_deref(), Some("3"));
    // A fresh claim may be a write under way: refused within the lease.
    plant("fresh@x", "998", now_ms()).await;
    let err = store.save(&acct(4, "fresh@x")).await.unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err:?}");
    let () = conn.del(owner_key("fresh@x")).await.unwrap();

    // An old claim of an entity that moved on, and a value whose owner key
    // was lost: both reported, both repaired.
    plant("old@x", "2", 0).await;
    let () = conn.del(owner_key("one@x")).await.unwrap();
    let report = store.maintenance::<Account>().verify().await.unwrap();
    let mut found: Vec<String> = report
        .violations
        .iter()
        .map(|v| match v {
            Violation::StaleOwner { key, member } => format!("stale {key} {member}"),
            Violation::UnownedValue { key, member } => format!("unowned {key} {member}"),
            other => format!("{other:?}"),
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        vec![
            format!("stale {} 2", owner_key("old@x")),
            format!("unowned {} 1", owner_key("one@x")),
        ]
    );
    let repaired = store
        .maintenance::<Account>()
        .repair(&report)
        .await
        .unwrap();
    assert_eq!(repaired.fixed, 2);
    assert!(repaired.left.is_empty(), "{:?}", repaired.left);
    assert_eq!(owner(&store, "old@x").await, None);
    assert_eq!(owner(&store, "one@x").await.as_deref(), Some("1"));
    let report = store.maintenance::<Account>().verify().await.unwrap();
    assert!(report.is_clean(), "{:?}", report.violations);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conditional_change_of_a_unique_value_that_is_refused_keeps_no_claim() {
    let cluster = RedisCluster::start(3);
    let store = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    store.save(&acct(1, "a@x")).await.unwrap();
    let before = cluster.snapshot();
    // The new value is claimed in the same wave as the marked write, which
    // the condition refuses: the claim goes again, nothing is left.
    let err = store
        .update::<Account>(&1)
        .when(Account::TEAM.is("blue".to_owned()))
        .set(Account::EMAIL, "b@x".to_owned())
        .exec()
        .await
        .unwrap_err();
    match err {
        Error::ConditionFailed {
            field, ref found, ..
        } => assert_eq!((field, found.as_deref()), ("team", Some("red"))),
        other => panic!("{other:?}"),
    }
    assert_eq!(owner(&store, "b@x").await, None, "the claim was released");
    assert_eq!(cluster.snapshot(), before, "nothing written");
    // Once the condition holds, the change and its claim go through.
    store
        .update::<Account>(&1)
        .when(Account::TEAM.is("red".to_owned()))
        .set(Account::EMAIL, "b@x".to_owned())
        .exec()
        .await
        .unwrap();
    assert_eq!(owner(&store, "b@x").await.as_deref(), Some("1"));
    assert_eq!(owner(&store, "a@x").await, None);
}

/// Two entities in two shards holding one value (written around the
/// library): each shard alone looks right, so only the owner keys' walk
/// finds it, page by page, and names both holders under the owner key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_value_held_in_two_shards_is_a_duplicate_under_its_owner_key() {
    let (_cluster, store) = sixteen_accounts().await;
    let tag = |id: u64| {
        let base = store.keys().of::<Account>(id).base;
        base[..base.find('}').unwrap() + 1].to_owned()
    };
    let other = (2..=16u64).find(|&id| tag(id) != tag(1)).unwrap();
    // `other` takes `u1@x` in its own shard: its field and its shard's
    // unique key, renamed from its own value's (same shard, same slot).
    let own: Vec<String> = store
        .keys()
        .scan(&format!("{}*u{other}@x", tag(other)))
        .await
        .unwrap();
    assert_eq!(
        own.len(),
        1,
        "the shard's unique key of u{other}@x: {own:?}"
    );
    let planted = own[0].replace(&format!("u{other}@x"), "u1@x");
    let mut conn = store.connection();
    let () = conn.rename(&own[0], &planted).await.unwrap();
    let () = conn
        .hset(store.keys().of::<Account>(other).base, "email", "u1@x")
        .await
        .unwrap();

    let report = store.maintenance::<Account>().verify().await.unwrap();
    assert_eq!(
        report.violations,
        [Violation::DuplicateUnique {
            key: owner_key("u1@x"),
            members: vec!["1".into(), other.to_string()],
        }],
        "{report}"
    );
    assert_eq!(report.entities, 16);
    // Left to a person: which of the two keeps the value.
    let repaired = store
        .maintenance::<Account>()
        .repair(&report)
        .await
        .unwrap();
    assert_eq!((repaired.fixed, repaired.left.len()), (0, 1), "{repaired}");
    assert_eq!(owner(&store, "u1@x").await.as_deref(), Some("1"));
}
