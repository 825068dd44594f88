//! The blocking store has the same methods and the same behaviour. Runs on
//! one server, and with `REDIS_ENTITY_TEST_CLUSTER` set on a 3-master
//! cluster, where the keys carry a hash tag (`user:{1}`, `doc:{a%3Ab}`).
//! `blocking_round_trips_and_namespace` stays on one server: it counts round
//! trips with a `CountingConnection`. `blocking_feature_handles_mirror_async`
//! stays there too: its relations and timelines between entities of one type
//! would span slots on a cluster (the cluster tests cover those).

use redis_entity::blocking::Store;
use redis_entity::{CountingConnection, Error, Namespace, RedisEntity};
use std::collections::BTreeMap;
use std::time::Duration;
use support::{RedisServer, Target};

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct User {
    #[pk]
    id: u64,
    username: String,
    level: i64,
    #[hash]
    settings: BTreeMap<String, String>,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "json")]
struct Doc {
    #[pk]
    id: String,
    n: u64,
}

fn user(id: u64) -> User {
    User {
        id,
        username: format!("u{id}"),
        level: 1,
        settings: BTreeMap::from([("theme".into(), "dark".into())]),
    }
}

#[test]
fn blocking_crud_mirrors_async() {
    let server = Target::start();
    crud(
        &server,
        &Store::builder().connect_any(&server.url()).unwrap(),
    );
}

fn crud<C: redis::aio::ConnectionLike + Clone + Send + Sync>(server: &Target, store: &Store<C>) {
    assert!(store.save(&user(1)).unwrap());
    let keys = store.keys().of::<User>(1);
    assert_eq!(server.keys(), [keys.base.clone(), keys.maps[0].clone()]);
    // The paged walk of the keyspace, key by key as an iterator.
    let mut walked: Vec<String> = store
        .keys()
        .scan_pages("user:*")
        .collect::<redis_entity::Result<_>>()
        .unwrap();
    walked.sort();
    // (`server.keys()` leaves out the type's schema record.)
    walked.retain(|k| !k.ends_with("@schema"));
    assert_eq!(walked, server.keys());
    if !server.is_cluster() {
        assert_eq!(server.keys(), ["user:1", "user:1:settings"]);
    } else {
        assert_eq!(server.keys(), ["user:{1}", "user:{1}:settings"]);
    }
    assert_eq!(store.get::<User>(&1).unwrap(), Some(user(1)));
    assert!(matches!(
        store.insert(&user(1)),
        Err(Error::AlreadyExists { .. })
    ));
    store.save_all(&[user(2), user(3)]).unwrap();
    assert_eq!(
        store.get_many::<User>(&[3, 4]).unwrap(),
        vec![Some(user(3)), None]
    );
    store
        .update::<User>(&1)
        .incr(User::LEVEL, 41)
        .hset(User::SETTINGS, "lang", "en")
        .exec()
        .unwrap();
    assert_eq!(store.get::<User>(&1).unwrap().unwrap().level, 42);
    assert_eq!(
        store.hget(User::SETTINGS, 1, "lang").unwrap().as_deref(),
        Some("en")
    );
    assert!(store
        .expiry::<User>()
        .expire(1, Duration::from_secs(50))
        .unwrap());
    assert!(store.expiry::<User>().ttl(1).unwrap().unwrap() > Duration::from_secs(45));
    assert!(store.expiry::<User>().persist(1).unwrap());
    assert_eq!(store.expiry::<User>().ttl(1).unwrap(), None);
    assert!(store.exists::<User>(&1).unwrap());
    assert!(store.delete::<User>(&1).unwrap());
    assert!(!store.exists::<User>(&1).unwrap());
    assert!(matches!(
        store.update::<User>(&1).incr(User::LEVEL, 1).exec(),
        Err(Error::NotFound { .. })
    ));

    store
        .save(&Doc {
            id: "a:b".into(),
            n: 1,
        })
        .unwrap();
    store
        .update::<Doc>(&"a:b".to_string())
        .incr(Doc::N, 2)
        .exec()
        .unwrap();
    assert_eq!(store.get::<Doc>(&"a:b".to_string()).unwrap().unwrap().n, 3);
    let doc = store.keys().of::<Doc>("a:b").base;
    assert_eq!(
        doc,
        if server.is_cluster() {
            "doc:{a%3Ab}"
        } else {
            "doc:a%3Ab"
        }
    );
    assert!(server.keys().contains(&doc));
}

#[test]
fn blocking_round_trips_and_namespace() {
    let server = RedisServer::start();
    // A connection driven by a runtime of the caller's, counted.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let conn = rt
        .block_on(server.client().get_multiplexed_async_connection())
        .unwrap();
    let conn = CountingConnection::new(conn);
    let trips = conn.counter();
    let store = Store::builder()
        .namespace(Namespace::new("shop"))
        .layout_check(false)
        .build(conn)
        .unwrap();
    store.save(&user(1)).unwrap();
    trips.take();
    store.save(&user(1)).unwrap();
    assert_eq!(trips.take(), 1);
    store.get::<User>(&1).unwrap();
    assert_eq!(trips.take(), 1);
    store.save_all(&[user(2), user(3), user(4)]).unwrap();
    assert_eq!(trips.take(), 1);
    assert!(server.keys().iter().all(|k| k.starts_with("shop:user:")));
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "player")]
struct Player {
    #[pk]
    id: u64,
    #[index(sorted)]
    score: i64,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "note")]
struct Note {
    #[pk]
    id: u64,
    text: String,
}

const FOLLOWS: redis_entity::relation::Relation<Player, Player> =
    redis_entity::relation::Relation::many_to_many("following", "followers");
const NOTES: redis_entity::relation::Timeline<Player, Note> =
    redis_entity::relation::Timeline::new("notes", 10);

/// Each feature handle of the blocking store runs its async twin: the
/// leaderboard, relations, timelines and maintenance, against a real server.
#[test]
fn blocking_feature_handles_mirror_async() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).unwrap();
    for (id, score) in [(1, 10), (2, 30), (3, 20)] {
        store.save(&Player { id, score }).unwrap();
    }
    let top: Vec<u64> = store
        .board(Player::SCORE)
        .top(2)
        .unwrap()
        .into_iter()
        .map(|(p, _)| p.id)
        .collect();
    assert_eq!(top, [2, 3]);
    assert_eq!(store.board(Player::SCORE).rank(1).unwrap(), Some(2));

    assert!(store.relation(&FOLLOWS).relate(1, 2).unwrap());
    assert!(store.relation(&FOLLOWS).relate(3, 2).unwrap());
    assert_eq!(store.relation(&FOLLOWS).related_back(2).unwrap(), [1, 3]);
    assert_eq!(
        server
            .keys()
            .iter()
            .filter(|k| k.ends_with(":followers"))
            .count(),
        1
    );

    store
        .save(&Note {
            id: 7,
            text: "hi".into(),
        })
        .unwrap();
    let pushed = store.timeline(&NOTES).push_related(7, &FOLLOWS, 2).unwrap();
    assert_eq!(pushed, 2);
    assert_eq!(store.timeline(&NOTES).page(1, 0, 10).unwrap()[0].text, "hi");
    assert_eq!(store.timeline(&NOTES).len(3).unwrap(), 1);

    let report = store.maintenance::<Player>().verify().unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.entities, 3);

    // Schema evolution: the first save recorded Player's definition.
    let status = store.schema().status::<Player>().unwrap();
    assert_eq!(
        status.indexes,
        [(
            "score".to_owned(),
            "sorted",
            redis_entity::evolution::IndexState::Ready
        )]
    );
    assert!(store.schema().plan::<Player>().unwrap().is_empty());
    assert_eq!(
        store.schema().apply::<Player>().unwrap().walks,
        0,
        "nothing to do"
    );
}
