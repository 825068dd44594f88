//! `#[version]`: optimistic concurrency. A save based on an older read fails
//! with `Error::VersionConflict` and writes nothing. Runs on one server, and
//! with `REDIS_ENTITY_TEST_CLUSTER` set on a 3-master cluster, where the
//! indexed `Account` (16 shards) keeps its keys in its shard's space
//! (`{account:12}:account:1`) and `Doc` carries a hash tag (`doc:{5}:rev`).

use redis::Commands;
use redis_entity::{AnyConnection, Error, RedisEntity, Store};
use support::Target;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "account")]
struct Account {
    #[pk]
    id: u64,
    #[index]
    owner: String,
    balance: i64,
    #[version]
    version: u64,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "strings")]
struct Doc {
    #[pk]
    id: u64,
    body: String,
    #[version]
    rev: i32,
}

/// `key`, a standalone key of `Account` (`account:@owner:bob`), in the
/// store's layout: on a cluster inside the space of account `pk`'s shard,
/// found from `keys().of` (`{account:12}:account:@owner:bob` for account 1).
fn in_space(store: &Store<AnyConnection>, pk: u64, key: &str) -> String {
    let base = store.keys().of::<Account>(pk).base;
    let space = base
        .strip_suffix(&Account::key(&pk))
        .expect("an entity key ends in its standalone spelling");
    format!("{space}{key}")
}

#[tokio::test]
async fn a_save_from_a_stale_read_fails_and_changes_nothing() {
    let server = Target::start();
    let store = server.store().await;
    let new = Account {
        id: 1,
        owner: "ada".into(),
        balance: 10,
        version: 0,
    };
    store.save(&new).await.unwrap();
    let stored = store.get::<Account>(&1).await.unwrap().unwrap();
    assert_eq!(stored.version, 1, "a save stores the next version");

    // Two clients read version 1; the first save wins.
    let mut a = stored.clone();
    let mut b = stored.clone();
    a.balance = 20;
    store.save(&a).await.unwrap();
    b.balance = 99;
    b.owner = "bob".into();
    match store.save(&b).await.unwrap_err() {
        Error::VersionConflict {
            key,
            expected,
            found,
        } => {
            assert_eq!(key, store.keys().of::<Account>(1).base);
            if !server.is_cluster() {
                assert_eq!(key, "account:1");
            } else {
                assert_eq!(key, "{account:12}:account:1");
            }
            assert_eq!(expected, "1");
            assert_eq!(found, "2");
        }
        other => panic!("expected VersionConflict, got {other:?}"),
    }
    let now = store.get::<Account>(&1).await.unwrap().unwrap();
    assert_eq!(
        (now.balance, now.owner.as_str(), now.version),
        (20, "ada", 2)
    );
    let bob = in_space(&store, 1, "account:@owner:bob");
    if !server.is_cluster() {
        assert_eq!(bob, "account:@owner:bob");
    } else {
        assert_eq!(bob, "{account:12}:account:@owner:bob");
    }
    assert!(
        server
            .keys()
            .contains(&in_space(&store, 1, "account:@owner:ada")),
        "the index entry of the winning save is there"
    );
    assert!(!server.keys().contains(&bob), "no index change either");

    // Re-read and retry succeeds.
    let mut retry = now.clone();
    retry.balance = 99;
    store.save(&retry).await.unwrap();
    assert_eq!(store.get::<Account>(&1).await.unwrap().unwrap().version, 3);
}

#[tokio::test]
async fn updates_bump_the_version_and_can_require_one() {
    let server = Target::start();
    let store = server.store().await;
    store
        .save(&Account {
            id: 1,
            owner: "ada".into(),
            balance: 10,
            version: 0,
        })
        .await
        .unwrap();
    store
        .update::<Account>(&1)
        .incr(Account::BALANCE, 5)
        .exec()
        .await
        .unwrap();
    let account = store.keys().of::<Account>(1).base;
    if !server.is_cluster() {
        assert_eq!(account, "account:1");
    } else {
        assert_eq!(account, "{account:12}:account:1");
    }
    let v: u64 = server.conn().hget(&account, "version").unwrap();
    assert_eq!(v, 2, "every update bumps the version");
    let err = store
        .update::<Account>(&1)
        .incr(Account::BALANCE, 5)
        .if_version(1)
        .exec()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::VersionConflict { .. }), "{err:?}");
    store
        .update::<Account>(&1)
        .incr(Account::BALANCE, 5)
        .if_version(2)
        .exec()
        .await
        .unwrap();
    let a = store.get::<Account>(&1).await.unwrap().unwrap();
    assert_eq!((a.balance, a.version), (20, 3));
}

#[tokio::test]
async fn versions_in_the_strings_layout() {
    let server = Target::start();
    let store = server.store().await;
    let d = Doc {
        id: 5,
        body: "v1".into(),
        rev: 0,
    };
    store.save(&d).await.unwrap();
    let keys = store.keys().of::<Doc>(5);
    let rev_key = keys
        .columns
        .iter()
        .find(|c| c.ends_with(":rev"))
        .expect("a rev column");
    if !server.is_cluster() {
        assert_eq!(rev_key, "doc:5:rev");
    } else {
        assert_eq!(rev_key, "doc:{5}:rev");
    }
    let rev: i32 = server.conn().get(rev_key).unwrap();
    assert_eq!(rev, 1);
    assert!(matches!(
        store.save(&d).await,
        Err(Error::VersionConflict { .. })
    ));
    let mut fresh = store.get::<Doc>(&5).await.unwrap().unwrap();
    fresh.body = "v2".into();
    store.save(&fresh).await.unwrap();
    assert_eq!(store.get::<Doc>(&5).await.unwrap().unwrap().rev, 2);
}
