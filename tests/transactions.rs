//! Units of work: `store.transaction()` sends saves, updates, deletes,
//! relations, timeline pushes and board increments of several entities as
//! one atomic call, all or nothing: a refusal anywhere (a unique value, a
//! condition, a key of the wrong type, a missing relation end) leaves the
//! keyspace byte for byte as it was and names the operation. Runs on one
//! server, and with `scripts/test.sh --cluster` on a 3-master cluster,
//! where the types share one slot group.

use redis_entity::relation::{Relation, Timeline};
use redis_entity::{board::Board, Error, RedisEntity};
use std::time::Duration;
use support::Target;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "tuser", group = "social")]
struct User {
    #[pk]
    id: u64,
    #[index(unique)]
    name: String,
    posts: i64,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "tpost", group = "social")]
struct Post {
    #[pk]
    id: u64,
    author: u64,
    #[index]
    topic: String,
}

const FOLLOWS: Relation<User, User> = Relation::many_to_many("following", "followers");
const FEED: Timeline<User, Post> = Timeline::new("feed", 100);
const WEEKLY: Board<User> = Board::weekly("weekly", 2);

fn user(id: u64, name: &str) -> User {
    User {
        id,
        name: name.into(),
        posts: 0,
    }
}

fn post(id: u64, author: u64) -> Post {
    Post {
        id,
        author,
        topic: "rust".into(),
    }
}

#[tokio::test]
async fn a_post_its_fan_out_and_the_counter_are_written_as_one_unit() {
    let server = Target::start();
    let store = server.store().await;
    store
        .save_all(&[user(1, "ann"), user(2, "bob"), user(3, "cy")])
        .await
        .unwrap();
    let unit = || {
        store
            .transaction()
            .save(&post(10, 1))
            .update::<User>(&1, |u| u.incr(User::POSTS, 1))
            .push(&FEED, 10, [2u64, 3])
            .relate(&FOLLOWS, &2, &1)
    };
    if server.is_cluster() {
        // A board's buckets live in a slot of their own on a cluster: a
        // unit with an increment is refused before anything is sent.
        let err = unit().board_incr(&WEEKLY, 1, 5.0).exec().await.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidTransaction { reason }
                if reason.contains("one slot") && reason.contains("board:weekly")),
            "{err:?}"
        );
        let before = server.snapshot();
        let err = unit().board_incr(&WEEKLY, 1, 5.0).exec().await.unwrap_err();
        assert!(matches!(err, Error::InvalidTransaction { .. }));
        assert_eq!(server.snapshot(), before, "nothing sent");
        unit().exec().await.unwrap();
        store.board(&WEEKLY).incr(&1, 5.0).await.unwrap();
    } else {
        unit().board_incr(&WEEKLY, 1, 5.0).exec().await.unwrap();
    }
    assert_eq!(store.get::<Post>(&10).await.unwrap(), Some(post(10, 1)));
    assert_eq!(store.get::<User>(&1).await.unwrap().unwrap().posts, 1);
    for owner in [2u64, 3] {
        assert_eq!(store.timeline(&FEED).ids(owner, 0, 10).await.unwrap(), [10]);
    }
    assert_eq!(store.board(&WEEKLY).top(1).await.unwrap()[0].1, 5.0);
    assert!(store.relation(&FOLLOWS).is_related(&2, &1).await.unwrap());
    assert_eq!(
        store.find(Post::TOPIC, "rust".to_owned()).await.unwrap(),
        [post(10, 1)],
        "the index follows"
    );
    let report = store.maintenance::<User>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    let report = store.maintenance::<Post>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
}

/// A unit of five operations whose last is refused: nothing of it is
/// written, and the error names that operation with its own error.
async fn nothing_written_when_the_last_is_refused(
    server: &Target,
    store: &redis_entity::Store<redis_entity::AnyConnection>,
    last: impl FnOnce(
        redis_entity::Transaction<'_, redis_entity::Store<redis_entity::AnyConnection>>,
    )
        -> redis_entity::Transaction<'_, redis_entity::Store<redis_entity::AnyConnection>>,
) -> Error {
    let before = server.snapshot();
    let unit = store
        .transaction()
        .save(&post(20, 1))
        .update::<User>(&1, |u| u.incr(User::POSTS, 1))
        .push(&FEED, 20, [3u64])
        .relate(&FOLLOWS, &3, &1);
    let err = last(unit).exec().await.unwrap_err();
    assert_eq!(server.snapshot(), before, "nothing written: {err:?}");
    match err {
        Error::TransactionRefused { op, source, .. } => {
            assert_eq!(op, 4, "{source:?}");
            *source
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_refusal_anywhere_writes_nothing_and_names_the_operation() {
    let server = Target::start();
    let store = server.store().await;
    store
        .save_all(&[user(1, "ann"), user(2, "bob"), user(3, "cy")])
        .await
        .unwrap();

    // A unique value taken by another entity.
    let err =
        nothing_written_when_the_last_is_refused(&server, &store, |t| t.save(&user(4, "bob")))
            .await;
    assert!(
        matches!(&err, Error::UniqueViolation { field: "name", value } if value == "bob"),
        "{err:?}"
    );

    // A condition that does not hold.
    let err = nothing_written_when_the_last_is_refused(&server, &store, |t| {
        t.update::<User>(&2, |u| {
            u.when(User::POSTS.at_least(1)).incr(User::POSTS, -1)
        })
    })
    .await;
    assert!(
        matches!(&err, Error::ConditionFailed { found: Some(f), .. } if f == "0"),
        "{err:?}"
    );

    // A missing relation end.
    let err =
        nothing_written_when_the_last_is_refused(&server, &store, |t| t.relate(&FOLLOWS, &2, &99))
            .await;
    assert!(
        matches!(&err, Error::NotFound { key } if key.ends_with("tuser:99")),
        "{err:?}"
    );

    // A key of the wrong type: a string where user 2's feed list goes.
    let feed_of_2 = format!("{}:feed", store.keys().of::<User>(&2).base);
    let mut conn = server.conn();
    let () = redis::cmd("SET")
        .arg(&feed_of_2)
        .arg("not a list")
        .query(&mut conn)
        .unwrap();
    let err =
        nothing_written_when_the_last_is_refused(&server, &store, |t| t.push(&FEED, 21, [2u64]))
            .await;
    assert!(
        matches!(&err, Error::WrongType { key, .. } if *key == feed_of_2),
        "{err:?}"
    );
    let () = redis::cmd("DEL").arg(&feed_of_2).query(&mut conn).unwrap();

    // An update of a missing entity.
    let err = nothing_written_when_the_last_is_refused(&server, &store, |t| {
        t.update::<User>(&98, |u| u.incr(User::POSTS, 1))
    })
    .await;
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
}

#[tokio::test]
async fn the_checks_see_what_the_units_earlier_operations_do() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&user(1, "ann")).await.unwrap();
    // A user saved in the unit can be related in it.
    store
        .transaction()
        .save(&user(2, "bob"))
        .relate(&FOLLOWS, &2, &1)
        .exec()
        .await
        .unwrap();
    assert_eq!(store.relation(&FOLLOWS).related(&2).await.unwrap(), [1]);
    // One deleted in the unit cannot.
    let before = server.snapshot();
    let err = store
        .transaction()
        .delete::<User>(&1)
        .relate(&FOLLOWS, &2, &1)
        .exec()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::TransactionRefused { op: 1, source, .. }
            if matches!(**source, Error::NotFound { .. })),
        "{err:?}"
    );
    assert_eq!(server.snapshot(), before);
    // Two operations may not give one unique value to two entities.
    let err = store
        .transaction()
        .save(&user(3, "cy"))
        .save(&user(4, "cy"))
        .exec()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::TransactionRefused { op: 1, source, .. }
            if matches!(**source, Error::UniqueViolation { .. })),
        "{err:?}"
    );
    assert_eq!(server.snapshot(), before);
    // An entity written twice is refused before anything is sent.
    let err = store
        .transaction()
        .save(&user(3, "cy"))
        .update::<User>(&3, |u| u.incr(User::POSTS, 1))
        .exec()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidTransaction { reason } if reason.contains("operations 0 and 1")),
        "{err:?}"
    );
    // A delete in a unit removes the entity, its entries and its relations.
    store
        .transaction()
        .delete::<User>(&2)
        .save(&user(5, "dee"))
        .exec()
        .await
        .unwrap();
    assert!(store.get::<User>(&2).await.unwrap().is_none());
    assert!(store
        .relation(&FOLLOWS)
        .related_back(&1)
        .await
        .unwrap()
        .is_empty());
    let report = store.maintenance::<User>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    // A conditional delete in a unit: refused while the condition does not
    // hold (nothing of the unit written), done once it does; and an
    // unrelate beside it.
    store.relation(&FOLLOWS).relate(5, 1).await.unwrap();
    let before = server.snapshot();
    let err = store
        .transaction()
        .unrelate(&FOLLOWS, 5, 1)
        .delete_if::<User>(5, [User::POSTS.at_least(1)])
        .exec()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::TransactionRefused { op: 1, source, .. }
            if matches!(&**source, Error::ConditionFailed { found: Some(f), .. } if f == "0")),
        "{err:?}"
    );
    assert_eq!(server.snapshot(), before);
    store
        .transaction()
        .unrelate(&FOLLOWS, 5, 1)
        .delete_if::<User>(5, [User::POSTS.at_most(0)])
        .exec()
        .await
        .unwrap();
    assert!(store.get::<User>(&5).await.unwrap().is_none());
    assert!(store
        .relation(&FOLLOWS)
        .related_back(1)
        .await
        .unwrap()
        .is_empty());
    // An empty unit sends nothing.
    store.transaction().exec().await.unwrap();
}

/// One string key per column: a relation checks that the entity exists by
/// its first required column's key.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "tfan", layout = "strings", group = "social")]
struct Fan {
    #[pk]
    id: u64,
    nick: String,
}

const LIKES: Relation<Fan, User> = Relation::many_to_many("likes", "fans");

/// A plain save, insert or update in a unit goes in its type's
/// straight-line code (its compact call, `fast_update`), which checks every
/// increment before the unit's first write: a counter that is not a number
/// in the last operation leaves the earlier ones unwritten. A user with a
/// TTL is left to the general code inside the same unit, and its index
/// entries still follow.
#[tokio::test]
async fn plain_writes_in_a_unit_run_straight_line_code_and_check_first() {
    let server = Target::start();
    let store = server.store().await;
    store
        .save_all(&[user(1, "ann"), user(2, "bob"), user(3, "cy")])
        .await
        .unwrap();
    let explained = store
        .transaction()
        .update::<User>(&1, |u| u.incr(User::POSTS, 1))
        .explain()
        .unwrap();
    // The straight-line call names the entity's key without its index
    // shadow (the general code's call names both).
    let key_of_1 = store.keys().of::<User>(&1).base;
    assert_eq!(explained.keys, [key_of_1], "{explained:?}");
    // User 2's counter is not a number: the unit's last operation is
    // refused, and the first increment (also straight-line) is not written.
    let key_of_2 = store.keys().of::<User>(&2).base;
    let mut conn = server.conn();
    let () = redis::cmd("HSET")
        .arg(&key_of_2)
        .arg("posts")
        .arg("many")
        .query(&mut conn)
        .unwrap();
    let before = server.snapshot();
    // Each unit is refused at operation `op`, naming user 2's counter, and
    // writes nothing.
    let refused_at = |op: usize, err: Error| {
        assert!(
            matches!(&err, Error::TransactionRefused { op: o, source, .. } if *o == op
                && matches!(&**source, Error::Decode { key, field: "posts", .. } if *key == key_of_2)),
            "{err:?}"
        );
        assert_eq!(server.snapshot(), before, "nothing written");
    };
    let last = store
        .transaction()
        .update::<User>(&1, |u| u.incr(User::POSTS, 1))
        .update::<User>(&3, |u| u.incr(User::POSTS, 5))
        .update::<User>(&2, |u| u.incr(User::POSTS, 1));
    refused_at(2, last.exec().await.unwrap_err());
    // First in the unit, its increment is the unit's first write: refused
    // there, before anything else is written.
    let first = store
        .transaction()
        .update::<User>(&2, |u| u.incr(User::POSTS, 1))
        .update::<User>(&1, |u| u.incr(User::POSTS, 1));
    refused_at(0, first.exec().await.unwrap_err());
    // A user with a TTL keeps a shadow: the general code writes it, in the
    // same unit as a straight-line write.
    store
        .expiry::<User>()
        .save_with_ttl(&user(4, "dee"), Duration::from_secs(600))
        .await
        .unwrap();
    store
        .transaction()
        .update::<User>(&4, |u| u.set(User::NAME, "dora".to_owned()))
        .update::<User>(&1, |u| u.set(User::NAME, "anna".to_owned()))
        .exec()
        .await
        .unwrap();
    let found = |name: &'static str| {
        let store = &store;
        async move { store.find_unique(User::NAME, name).await.unwrap() }
    };
    assert_eq!(found("dora").await.map(|u| u.id), Some(4));
    assert_eq!(found("anna").await.map(|u| u.id), Some(1));
    assert_eq!(found("dee").await, None);
    assert_eq!(found("ann").await, None);
    assert!(store.expiry::<User>().ttl(&4).await.unwrap().is_some());
    assert_eq!(store.get::<User>(&1).await.unwrap().unwrap().posts, 0);
}

#[tokio::test]
async fn units_of_one_shape_each_write_their_own_entities_and_values() {
    // The unit function keeps each shape of unit it has read (its kinds,
    // types and counts: lua/unit.lua `SHAPES`); units of a shape seen
    // before, and of another shape as long, write what they name.
    let server = Target::start();
    let store = server.store().await;
    let users: Vec<User> = (1..=6).map(|i| user(i, &format!("u{i}"))).collect();
    store.save_all(&users).await.unwrap();
    for i in 0..3u64 {
        store
            .transaction()
            .update::<User>(2 * i + 1, |u| u.incr(User::POSTS, i as i64 + 1))
            .update::<User>(2 * i + 2, |u| u.set(User::NAME, format!("renamed{i}")))
            .exec()
            .await
            .unwrap();
    }
    store
        .transaction()
        .update::<User>(2, |u| u.incr(User::POSTS, 10))
        .update::<User>(4, |u| u.incr(User::POSTS, 20))
        .exec()
        .await
        .unwrap();
    let stored: Vec<(u64, String, i64)> = store
        .get_many::<User>(1..=6u64)
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.map(|u| (u.id, u.name, u.posts)).unwrap())
        .collect();
    let name = |s: &str| s.to_owned();
    assert_eq!(
        stored,
        [
            (1, name("u1"), 1),
            (2, name("renamed0"), 10),
            (3, name("u3"), 2),
            (4, name("renamed1"), 20),
            (5, name("u5"), 3),
            (6, name("renamed2"), 0),
        ]
    );
    assert_eq!(
        store
            .find_unique(User::NAME, "renamed1")
            .await
            .unwrap()
            .map(|u| u.id),
        Some(4)
    );
    // A refusal in a unit of a shape seen before names its own operation,
    // and nothing of the unit is written.
    let before = server.snapshot();
    let err = store
        .transaction()
        .update::<User>(1, |u| u.incr(User::POSTS, 1))
        .update::<User>(3, |u| u.set(User::NAME, "renamed0".to_owned()))
        .exec()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::TransactionRefused { op: 1, source, .. }
            if matches!(**source, Error::UniqueViolation { .. })),
        "{err:?}"
    );
    assert_eq!(server.snapshot(), before);
}

#[tokio::test]
async fn an_entity_of_any_layout_saved_in_a_unit_can_be_related_in_it() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&user(1, "ann")).await.unwrap();
    let fan = Fan {
        id: 5,
        nick: "f".into(),
    };
    store
        .transaction()
        .save(&fan)
        .relate(&LIKES, 5, 1)
        .exec()
        .await
        .unwrap();
    assert_eq!(store.relation(&LIKES).related_back(1).await.unwrap(), [5]);
    // Deleted earlier in a unit: no longer there to relate.
    let before = server.snapshot();
    let err = store
        .transaction()
        .delete::<Fan>(5)
        .relate(&LIKES, 5, 1)
        .exec()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::TransactionRefused { op: 1, source, .. }
            if matches!(**source, Error::NotFound { .. })),
        "{err:?}"
    );
    assert_eq!(server.snapshot(), before);
}

#[tokio::test]
async fn an_explained_unit_is_one_call_naming_every_operation() {
    let server = Target::start();
    let store = server.store().await;
    let explained = store
        .transaction()
        .save(&user(1, "ann"))
        .relate(&FOLLOWS, &1, &1)
        .explain()
        .unwrap();
    assert_eq!(explained.round_trips.len(), 1);
    assert!(explained.round_trips[0][0].starts_with("FCALL redis_entity_"));
    assert!(explained.what.contains("transaction of 2 operation(s)"));
    assert!(server.keys().is_empty(), "explain sends nothing");
}

/// Accounts whose balance must never go below 0.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "tacct", group = "bank")]
struct Account {
    #[pk]
    id: u64,
    balance: i64,
}

/// A transfer: both sides or neither, never overdrawn.
async fn transfer(
    store: &redis_entity::Store<impl redis::aio::ConnectionLike + Clone + Send + Sync>,
    from: u64,
    to: u64,
    amount: i64,
) -> redis_entity::Result<()> {
    store
        .transaction()
        .update::<Account>(&from, |u| u.incr_within(Account::BALANCE, -amount, 0..))
        .update::<Account>(&to, |u| u.incr(Account::BALANCE, amount))
        .exec()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_transfers_keep_the_sum_and_never_overdraw() {
    let server = Target::start();
    let store = std::sync::Arc::new(server.store().await);
    let accounts: Vec<Account> = (0..8).map(|id| Account { id, balance: 100 }).collect();
    store.save_all(&accounts).await.unwrap();
    let tasks: Vec<_> = (0..8u64)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                let (mut done, mut refused) = (0, 0);
                for i in 0..100u64 {
                    let (from, to) = ((w + i) % 8, (w * 3 + i + 1) % 8);
                    if from == to {
                        continue;
                    }
                    match transfer(&*store, from, to, 7 + (i % 30) as i64).await {
                        Ok(()) => done += 1,
                        Err(Error::TransactionRefused { source, .. })
                            if matches!(*source, Error::ConditionFailed { .. }) =>
                        {
                            refused += 1
                        }
                        Err(e) => panic!("{e:?}"),
                    }
                }
                (done, refused)
            })
        })
        .collect();
    let mut done = 0;
    for t in tasks {
        done += t.await.unwrap().0;
    }
    assert!(done > 100, "{done} transfers");
    let all = store.get_many::<Account>(0..8u64).await.unwrap();
    let balances: Vec<i64> = all.iter().map(|a| a.as_ref().unwrap().balance).collect();
    assert_eq!(balances.iter().sum::<i64>(), 800, "{balances:?}");
    assert!(balances.iter().all(|b| *b >= 0), "{balances:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_during_eight_transferring_writers_keeps_the_sum() {
    if std::env::var_os("REDIS_ENTITY_TEST_CLUSTER").is_some() {
        return; // one server's AOF: see the cluster's own tests
    }
    const AOF: [&str; 4] = ["--appendonly", "yes", "--appendfsync", "always"];
    let mut server = support::RedisServer::start_with(&AOF);
    let url = server.url();
    let setup = redis_entity::Store::connect(&url).await.unwrap();
    let accounts: Vec<Account> = (0..16).map(|id| Account { id, balance: 1000 }).collect();
    setup.save_all(&accounts).await.unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..8u64)
        .map(|w| {
            let (url, stop) = (url.clone(), stop.clone());
            tokio::spawn(async move {
                let store = redis_entity::Store::connect(&url).await.unwrap();
                let mut i = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let (from, to) = ((w + i) % 16, (w * 5 + i + 1) % 16);
                    match transfer(&store, from, to, 1 + (i % 50) as i64).await {
                        Ok(()) | Err(Error::TransactionRefused { .. }) => {}
                        Err(Error::InvalidTransaction { .. }) => {} // from == to
                        Err(_) => break,                            // the server is gone
                    }
                    i += 1;
                }
                i
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(700)).await;
    // kill -9 in the middle of the transfers, then start again from the AOF.
    server.restart_with(&AOF);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut sent = 0;
    for w in writers {
        sent += w.await.unwrap();
    }
    assert!(sent > 100, "the writers transferred ({sent})");
    let store = redis_entity::Store::connect(&server.url()).await.unwrap();
    let all = store.get_many::<Account>(0..16u64).await.unwrap();
    let balances: Vec<i64> = all.iter().map(|a| a.as_ref().unwrap().balance).collect();
    assert_eq!(balances.iter().sum::<i64>(), 16_000, "{balances:?}");
    assert!(balances.iter().all(|b| *b >= 0), "{balances:?}");
}

/// An entity type with a check every save runs first.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "tmail", validate = Mail::check)]
struct Mail {
    #[pk]
    id: u64,
    to: String,
}

impl Mail {
    fn check(&self) -> Result<(), String> {
        if self.to.contains('@') {
            Ok(())
        } else {
            Err(format!("`{}` is not an address", self.to))
        }
    }
}

#[tokio::test]
async fn an_invalid_entity_is_refused_before_anything_is_written() {
    let server = Target::start();
    let store = server.store().await;
    let bad = Mail {
        id: 1,
        to: "nobody".into(),
    };
    let good = Mail {
        id: 2,
        to: "a@b.c".into(),
    };
    let invalid = |e: &Error| {
        matches!(e, Error::Invalid { type_name: "Mail", key, message }
            if key == "tmail:1" && message == "`nobody` is not an address")
    };
    let err = store.save(&bad).await.unwrap_err();
    assert!(invalid(&err), "{err:?}");
    assert!(invalid(&store.insert(&bad).await.unwrap_err()));
    assert!(invalid(
        &store
            .save_all(&[good.clone(), bad.clone()])
            .await
            .unwrap_err()
    ));
    let ttl = Duration::from_secs(60);
    let with_ttl = store.expiry::<Mail>().save_with_ttl(&bad, ttl).await;
    assert!(invalid(&with_ttl.unwrap_err()));
    // In a unit, a refusal before sending is named like the server's
    // refusals: the operation, with the entity's own error inside.
    let err = store
        .transaction()
        .save(&good)
        .save(&bad)
        .exec()
        .await
        .unwrap_err();
    let key_1 = store.keys().of::<Mail>(1).base;
    assert!(
        matches!(&err, Error::TransactionRefused { op: 1, key, source }
            if *key == key_1 && invalid(source)),
        "{err:?}"
    );
    assert!(server.keys().is_empty(), "{:?}", server.keys());
    store.save(&good).await.unwrap();
    assert_eq!(store.get::<Mail>(&2).await.unwrap(), Some(good));
}

#[test]
fn the_blocking_store_runs_the_same_units() {
    let server = support::RedisServer::start();
    let store = redis_entity::blocking::Store::connect(&server.url()).unwrap();
    store.save(&user(1, "ann")).unwrap();
    store
        .transaction()
        .save(&user(2, "bob"))
        .relate(&FOLLOWS, &2, &1)
        .exec()
        .unwrap();
    assert_eq!(store.relation(&FOLLOWS).related(2).unwrap(), [1]);
    let err = store
        .transaction()
        .save(&user(3, "ann"))
        .exec()
        .unwrap_err();
    assert!(
        matches!(err, Error::TransactionRefused { op: 0, .. }),
        "{err:?}"
    );
    assert!(store.transaction().save(&user(3, "cy")).explain().is_ok());
}
