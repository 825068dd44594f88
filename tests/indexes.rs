//! Secondary indexes: unique lookups (the users-by-username scenario's `user:username:lisi:uid`),
//! equality indexes, and their atomic maintenance on every write. Runs on
//! one server, and with `REDIS_ENTITY_TEST_CLUSTER` set on a 3-master
//! cluster, where `User` (a unique index, so one shard) keeps every key in
//! its shard's space, `{user:0}:user:9`, `{user:0}:user:@country:DE`.
//! `index_maintenance_costs_no_extra_round_trip`,
//! `queries_stay_at_two_round_trips_when_entities_expire` and
//! `find_unique_reads_the_owner_and_its_record_in_one_round_trip` stay on one
//! server: they count round trips with `counted_store`;
//! `a_user_without_scripts_finds_unique_values_with_plain_reads` makes an ACL
//! user on its own server.

use redis::Commands;
use redis_entity::{AnyConnection, Error, RedisEntity, Store};
use std::collections::BTreeSet;
use support::{RedisServer, Target};

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct User {
    #[pk]
    id: u64,
    #[index(unique)]
    username: String,
    email: String,
    #[index]
    country: Option<String>,
    level: i64,
    #[index]
    roles: BTreeSet<String>,
}

fn user(id: u64, name: &str, country: &str) -> User {
    User {
        id,
        username: name.into(),
        email: format!("{name}@example.com"),
        country: Some(country.into()),
        level: 1,
        roles: BTreeSet::new(),
    }
}

fn members(server: &Target, key: &str) -> Vec<String> {
    let mut m: Vec<String> = server.conn().smembers(key).unwrap();
    m.sort();
    m
}

/// `key`, a standalone key of `User` (`user:@country:DE`), in the store's
/// layout: on a cluster inside the space of `User`'s one shard, where its
/// entity keys are (`{user:0}:user:@country:DE`), found from `keys().of`.
fn in_space(store: &Store<AnyConnection>, key: &str) -> String {
    let base = store.keys().of::<User>(1).base;
    let space = base
        .strip_suffix(&User::key(&1))
        .expect("an entity key ends in its standalone spelling");
    format!("{space}{key}")
}

/// `keys`, sorted (as `Target::keys` gives them).
fn sorted(mut keys: Vec<String>) -> Vec<String> {
    keys.sort();
    keys
}

#[tokio::test]
async fn save_writes_the_entity_and_every_index_entry() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&user(9, "lisi", "DE")).await.unwrap();
    let written = sorted(vec![
        store.keys().of::<User>(9).base,
        in_space(&store, "user:@country:DE"),
        in_space(&store, "user:@ids:@buckets"),
        in_space(&store, "user:@ids:xx"),
        in_space(&store, "user:@username:lisi"),
    ]);
    assert_eq!(server.keys(), written);
    if !server.is_cluster() {
        assert_eq!(
            server.keys(),
            [
                "user:9",
                "user:@country:DE",
                "user:@ids:@buckets",
                "user:@ids:xx",
                "user:@username:lisi",
            ]
        );
    } else {
        assert_eq!(
            server.keys(),
            [
                "{user:0}:user:9",
                "{user:0}:user:@country:DE",
                "{user:0}:user:@ids:@buckets",
                "{user:0}:user:@ids:xx",
                "{user:0}:user:@username:lisi",
            ]
        );
    }
    let owner: String = server
        .conn()
        .get(in_space(&store, "user:@username:lisi"))
        .unwrap();
    assert_eq!(owner, "9");
    assert_eq!(
        members(&server, &in_space(&store, "user:@country:DE")),
        ["9"]
    );
    // Integer ids in buckets of 100 (0-99: `xx`), listed in a directory.
    assert_eq!(members(&server, &in_space(&store, "user:@ids:xx")), ["9"]);
    assert_eq!(
        members(&server, &in_space(&store, "user:@ids:@buckets")),
        ["xx"]
    );
    // The typed key builders name exactly the keys written.
    assert_eq!(User::USERNAME.key("lisi"), "user:@username:lisi");
    assert_eq!(User::COUNTRY.key("DE"), "user:@country:DE");
    assert_eq!(User::key(&9), "user:9");
    for k in [
        User::USERNAME.key("lisi"),
        User::COUNTRY.key("DE"),
        User::key(&9),
    ] {
        let k = in_space(&store, &k);
        assert!(server.keys().contains(&k), "{k}");
    }
}

#[tokio::test]
async fn find_unique_and_find_by_equality() {
    let server = Target::start();
    let store = server.store().await;
    store
        .save_all(&[
            user(1, "lisi", "DE"),
            user(2, "wang", "CN"),
            user(3, "anna", "DE"),
        ])
        .await
        .unwrap();
    let lisi = store.find_unique(User::USERNAME, "lisi").await.unwrap();
    assert_eq!(lisi, Some(user(1, "lisi", "DE")));
    assert_eq!(
        store.find_unique(User::USERNAME, "nobody").await.unwrap(),
        None
    );
    let de = store.find(User::COUNTRY, "DE").await.unwrap();
    assert_eq!(de, vec![user(1, "lisi", "DE"), user(3, "anna", "DE")]);
    assert!(store.find(User::COUNTRY, "FR").await.unwrap().is_empty());
}

#[tokio::test]
async fn a_taken_unique_value_fails_and_changes_nothing() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&user(1, "lisi", "DE")).await.unwrap();
    let before = server.keys();
    let err = store.save(&user(2, "lisi", "CN")).await.unwrap_err();
    match err {
        Error::UniqueViolation { field, value } => {
            assert_eq!(field, "username");
            assert_eq!(value, "lisi");
        }
        other => panic!("expected UniqueViolation, got {other:?}"),
    }
    assert_eq!(server.keys(), before, "no entity 2, no CN index entry");
    let err = store.insert(&user(2, "lisi", "CN")).await.unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err:?}");
    // An update of another user to the taken name fails the same way.
    store.save(&user(2, "wang", "CN")).await.unwrap();
    let err = store
        .update::<User>(&2)
        .set(User::USERNAME, "lisi")
        .set(User::EMAIL, "changed")
        .exec()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err:?}");
    let wang = store.get::<User>(&2).await.unwrap().unwrap();
    assert_eq!(
        wang.email, "wang@example.com",
        "the whole update was refused"
    );
    // Saving the owner again with its own value is fine.
    store.save(&user(1, "lisi", "FR")).await.unwrap();
}

#[tokio::test]
async fn a_freed_unique_value_is_reusable_at_once() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&user(1, "lisi", "DE")).await.unwrap();
    let lisi = in_space(&store, "user:@username:lisi");
    assert!(server.keys().contains(&lisi), "{lisi} written");
    store
        .update::<User>(&1)
        .set(User::USERNAME, "lisi2")
        .exec()
        .await
        .unwrap();
    assert!(!server.keys().contains(&lisi));
    store.save(&user(2, "lisi", "CN")).await.unwrap();
    assert_eq!(
        store
            .find_unique(User::USERNAME, "lisi")
            .await
            .unwrap()
            .map(|u| u.id),
        Some(2)
    );
    store.delete::<User>(&2).await.unwrap();
    store.save(&user(3, "lisi", "CN")).await.unwrap();
    assert_eq!(
        store
            .find_unique(User::USERNAME, "lisi")
            .await
            .unwrap()
            .map(|u| u.id),
        Some(3)
    );
}

#[tokio::test]
async fn updates_move_index_entries_using_stored_values() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&user(1, "lisi", "DE")).await.unwrap();
    // The caller's copy is stale (it says CN); the index follows what Redis holds.
    let mut stale = user(1, "lisi", "CN");
    store
        .update::<User>(&1)
        .set(User::COUNTRY, Some("FR".to_string()))
        .exec()
        .await
        .unwrap();
    assert_eq!(
        members(&server, &in_space(&store, "user:@country:DE")),
        Vec::<String>::new()
    );
    assert_eq!(
        members(&server, &in_space(&store, "user:@country:FR")),
        ["1"]
    );
    stale.country = Some("IT".into());
    store.save(&stale).await.unwrap();
    assert!(members(&server, &in_space(&store, "user:@country:FR")).is_empty());
    assert_eq!(
        members(&server, &in_space(&store, "user:@country:IT")),
        ["1"]
    );
    // None is not indexed.
    store
        .update::<User>(&1)
        .set(User::COUNTRY, None)
        .exec()
        .await
        .unwrap();
    let country = in_space(&store, "user:@country:");
    assert!(server.keys().iter().all(|k| !k.starts_with(&country)));
    // Some("") is, under its own key.
    store
        .update::<User>(&1)
        .set(User::COUNTRY, Some(String::new()))
        .exec()
        .await
        .unwrap();
    assert_eq!(
        members(&server, &in_space(&store, "user:@country:%_")),
        ["1"]
    );
}

#[tokio::test]
async fn delete_removes_every_index_entry() {
    let server = Target::start();
    let store = server.store().await;
    let mut u = user(1, "lisi", "DE");
    u.roles = BTreeSet::from(["admin".into()]);
    store.save(&u).await.unwrap();
    store.save(&user(2, "wang", "DE")).await.unwrap();
    assert!(store.delete::<User>(&1).await.unwrap());
    let left = sorted(vec![
        store.keys().of::<User>(2).base,
        in_space(&store, "user:@country:DE"),
        in_space(&store, "user:@ids:@buckets"),
        in_space(&store, "user:@ids:xx"),
        in_space(&store, "user:@username:wang"),
    ]);
    assert_eq!(server.keys(), left);
    if !server.is_cluster() {
        assert_eq!(
            server.keys(),
            [
                "user:2",
                "user:@country:DE",
                "user:@ids:@buckets",
                "user:@ids:xx",
                "user:@username:wang",
            ]
        );
    }
    assert_eq!(
        members(&server, &in_space(&store, "user:@country:DE")),
        ["2"]
    );
}

#[tokio::test]
async fn index_values_are_escaped_in_keys() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&user(1, "a:b{c}*", "中国")).await.unwrap();
    let keys = server.keys();
    assert!(
        keys.contains(&in_space(&store, "user:@username:a%3Ab%7Bc%7D%2A")),
        "{keys:?}"
    );
    assert!(
        keys.contains(&in_space(&store, "user:@country:中国")),
        "{keys:?}"
    );
    assert_eq!(
        store
            .find_unique(User::USERNAME, "a:b{c}*")
            .await
            .unwrap()
            .map(|u| u.id),
        Some(1)
    );
    assert_eq!(store.find(User::COUNTRY, "中国").await.unwrap().len(), 1);
}

#[tokio::test]
async fn index_maintenance_costs_no_extra_round_trip() {
    let server = RedisServer::start();
    let (store, trips) = support::counted_store(&server).await;
    // Load both scripts once (the first call of each answers NOSCRIPT).
    store.save(&user(0, "warm", "DE")).await.unwrap();
    store.find(User::COUNTRY, "DE").await.unwrap();
    trips.take();
    store.save(&user(1, "lisi", "DE")).await.unwrap();
    assert_eq!(trips.take(), 1, "save with indexes");
    store
        .update::<User>(&1)
        .set(User::COUNTRY, Some("FR".to_string()))
        .incr(User::LEVEL, 1)
        .exec()
        .await
        .unwrap();
    assert_eq!(trips.take(), 1, "update of an indexed field");
    let batch: Vec<User> = (10..110).map(|i| user(i, &format!("u{i}"), "CN")).collect();
    store.save_all(&batch).await.unwrap();
    assert_eq!(trips.take(), 1, "save_all of 100 indexed users");
    store
        .find_unique(User::USERNAME, "lisi")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(trips.take(), 1, "find_unique (the owner and its hash)");
    assert_eq!(store.find(User::COUNTRY, "CN").await.unwrap().len(), 100);
    assert_eq!(trips.take(), 2, "query + fetch of 100");
    store.delete::<User>(&1).await.unwrap();
    assert_eq!(trips.take(), 1, "delete with indexes");
}

/// On one server a unique lookup reads the owner key and the owner's hash
/// in one call, and checks what it read as the two-step lookup does: a
/// missing value, an owner key naming an entity that no longer holds the
/// value (repaired), keys of the wrong type (typed errors, nothing lost).
#[tokio::test]
async fn find_unique_reads_the_owner_and_its_record_in_one_round_trip() {
    let server = RedisServer::start();
    let (store, trips) = support::counted_store(&server).await;
    store.save(&user(1, "lisi", "DE")).await.unwrap();
    store.save(&user(2, "wang", "CN")).await.unwrap();
    trips.take();
    assert_eq!(
        store.find_unique(User::USERNAME, "lisi").await.unwrap(),
        Some(user(1, "lisi", "DE"))
    );
    assert_eq!(trips.take(), 1, "a value with an owner");
    assert_eq!(
        store.find_unique(User::USERNAME, "nobody").await.unwrap(),
        None
    );
    assert_eq!(trips.take(), 1, "a value without one");

    // An owner key left naming an entity that holds another value: not
    // that entity, and the key goes (the entity's own stays).
    let mut raw = server.conn();
    let _: () = raw.set("user:@username:ghost", "2").unwrap();
    assert_eq!(
        store.find_unique(User::USERNAME, "ghost").await.unwrap(),
        None
    );
    let ghost: bool = raw.exists("user:@username:ghost").unwrap();
    assert!(!ghost, "the stale owner key is repaired");
    assert_eq!(
        store
            .find_unique(User::USERNAME, "wang")
            .await
            .unwrap()
            .map(|u| u.id),
        Some(2)
    );
    // An owner key naming an entity that is gone.
    let _: () = raw.set("user:@username:gone", "9").unwrap();
    assert_eq!(
        store.find_unique(User::USERNAME, "gone").await.unwrap(),
        None
    );

    // Keys of the wrong type: the owner key, then the owner's record.
    let _: () = raw.rpush("user:@username:listed", "1").unwrap();
    let e = store
        .find_unique(User::USERNAME, "listed")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("user:@username:listed"), "{e}");
    let _: () = raw.set("user:@username:texted", "7").unwrap();
    let _: () = raw.set("user:7", "not a hash").unwrap();
    let e = store
        .find_unique(User::USERNAME, "texted")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("user:7"), "{e}");
    let kept: String = raw.get("user:7").unwrap();
    assert_eq!(kept, "not a hash", "a failed lookup changes nothing");
}

/// A type whose columns may all be absent: the one-call lookup reads the
/// owner's hash whole (`HGETALL`, its fields alone cannot say whether the
/// entity exists), in the same round trip, and the record holding only a
/// field an earlier definition wrote beside the unique value is found.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "handle")]
struct Handle {
    #[pk]
    id: u64,
    #[index(unique)]
    name: Option<String>,
    note: Option<String>,
}

#[tokio::test]
async fn find_unique_reads_a_type_whose_columns_may_all_be_absent_whole() {
    let server = RedisServer::start();
    let (store, trips) = support::counted_store(&server).await;
    let ann = Handle {
        id: 1,
        name: Some("ann".into()),
        note: None,
    };
    store.save(&ann).await.unwrap();
    let _: () = server.conn().hset("handle:1", "dropped", "x").unwrap();
    trips.take();
    let found = store.find_unique(Handle::NAME, "ann").await.unwrap();
    assert_eq!(found, Some(ann));
    assert_eq!(trips.take(), 1, "one call");
    assert_eq!(store.find_unique(Handle::NAME, "bob").await.unwrap(), None);
}

/// A user allowed read commands only (no scripts) still finds by a unique
/// value: refused the one-call lookup, the store reads the owner key and
/// then the entity, from then on.
#[tokio::test]
async fn a_user_without_scripts_finds_unique_values_with_plain_reads() {
    let server = RedisServer::start();
    let writer = Store::connect(&server.url()).await.unwrap();
    writer.save(&user(1, "lisi", "DE")).await.unwrap();
    let reader = Store::connect(&server.read_only_url()).await.unwrap();
    for name in ["lisi", "lisi", "nobody"] {
        let found = reader.find_unique(User::USERNAME, name).await.unwrap();
        assert_eq!(found.map(|u| u.id), (name == "lisi").then_some(1), "{name}");
    }
    // The server refused the script once (its ACL log counts the denials):
    // the store remembered it.
    let log: Vec<std::collections::HashMap<String, redis::Value>> = redis::cmd("ACL")
        .arg("LOG")
        .query(&mut server.conn())
        .unwrap();
    let refused: i64 = log
        .iter()
        .filter(|e| {
            matches!(e.get("object"), Some(redis::Value::BulkString(o)) if o.starts_with(b"eval"))
        })
        .map(|e| match e.get("count") {
            Some(redis::Value::Int(n)) => *n,
            other => panic!("an ACL log entry's count: {other:?}"),
        })
        .sum();
    assert_eq!(refused, 1, "{log:?}");
}

#[tokio::test]
async fn queries_stay_at_two_round_trips_when_entities_expire() {
    let server = RedisServer::start();
    let (store, trips) = support::counted_store(&server).await;
    store.save(&user(1, "a", "DE")).await.unwrap();
    store.find(User::COUNTRY, "DE").await.unwrap();
    trips.take();
    // Nothing expires: one native SINTER (with the expiry check), one read.
    assert_eq!(store.find(User::COUNTRY, "DE").await.unwrap().len(), 1);
    assert_eq!(trips.take(), 2, "native query + fetch");

    // This store gave an entity a TTL: its queries go to the script, which
    // skips expired entities, at once.
    store
        .expiry()
        .save_with_ttl(&user(2, "b", "DE"), std::time::Duration::from_millis(300))
        .await
        .unwrap();
    store.find(User::COUNTRY, "DE").await.unwrap();
    trips.take();
    assert_eq!(store.find(User::COUNTRY, "DE").await.unwrap().len(), 2);
    assert_eq!(trips.take(), 2, "script query + fetch");

    // Another store's first query of the type takes the script (which
    // reports how many entities the type has, and skips expired ones):
    // it never returns an expired entity.
    let (other, other_trips) = support::counted_store(&server).await;
    assert_eq!(other.find(User::COUNTRY, "DE").await.unwrap().len(), 2);
    assert_eq!(other_trips.take(), 2, "script (sent with its text), fetch");
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let found: Vec<u64> = other
        .find(User::COUNTRY, "DE")
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.id)
        .collect();
    assert_eq!(found, [1]);
    assert_eq!(
        other_trips.take(),
        3,
        "script query + fetch + removal of the expired entries"
    );
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "shop")]
struct Shop {
    #[pk]
    id: u64,
    #[index]
    city: String,
    #[hash]
    stock: std::collections::BTreeMap<String, i64>,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "strings", prefix = "card")]
struct Card {
    #[pk]
    id: u64,
    #[index]
    owner: String,
    title: String,
    note: Option<String>,
}

/// `reindex` walks the entity keys a SCAN page at a time and indexes each
/// entity once, from the one key that exists while it does: an entity whose
/// other keys (a `#[hash]` map, the strings layout's columns) fall on other
/// pages is neither counted nor written twice, and every entity is indexed.
#[tokio::test]
async fn reindex_meets_each_entity_once_across_scan_pages() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    let shops: Vec<Shop> = (0..1500)
        .map(|id| Shop {
            id,
            city: ["a", "b"][(id % 2) as usize].into(),
            stock: [("x".to_string(), 1)].into(),
        })
        .collect();
    let cards: Vec<Card> = (0..1500)
        .map(|id| Card {
            id,
            owner: "o".into(),
            title: format!("t{id}"),
            note: Some("n".into()),
        })
        .collect();
    store.save_all(&shops).await.unwrap();
    store.save_all(&cards).await.unwrap();
    // The index keys go; reindex builds them again.
    let mut conn = server.conn();
    let _: () = conn
        .del(&["shop:@city:a", "shop:@city:b", "card:@owner:o"])
        .unwrap();
    assert_eq!(store.maintenance::<Shop>().reindex().await.unwrap(), 1500);
    assert_eq!(store.maintenance::<Card>().reindex().await.unwrap(), 1500);
    let a: u64 = conn.scard("shop:@city:a").unwrap();
    let o: u64 = conn.scard("card:@owner:o").unwrap();
    assert_eq!((a, o), (750, 1500));
    assert!(store
        .maintenance::<Shop>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    assert!(store
        .maintenance::<Card>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}
