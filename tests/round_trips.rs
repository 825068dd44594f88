//! The round-trip budget, counted on the wire: save 1, insert 1, get 1,
//! get_many 1, save_all 1 per batch, delete 1, update 1, exists 1; and the
//! write functions survive SCRIPT FLUSH, FUNCTION FLUSH and a server restart.
//!
//! One server: it counts round trips on the wire and restarts the server
//! (a cluster's calls per op are counted in tests/cluster_unique.rs and the
//! cluster benchmark).

use redis_entity::{RedisEntity, Store};
use std::collections::BTreeMap;
use support::RedisServer;

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
#[redis(layout = "strings", key = "user:userid:{id}")]
struct Columns {
    #[pk]
    id: u64,
    username: String,
    email: Option<String>,
}

fn user(id: u64) -> User {
    User {
        id,
        username: format!("u{id}"),
        level: 1,
        settings: BTreeMap::from([("k".into(), "v".into())]),
    }
}

#[tokio::test]
async fn every_call_is_one_round_trip() {
    let server = RedisServer::start();
    let (store, trips) = support::counted_store(&server).await;
    // The first write may load the script; warm it up.
    store.save(&user(0)).await.unwrap();
    trips.take();

    store.save(&user(1)).await.unwrap();
    assert_eq!(trips.take(), 1, "save");
    store.insert(&user(2)).await.unwrap();
    assert_eq!(trips.take(), 1, "insert");
    assert!(store.insert(&user(2)).await.is_err());
    assert_eq!(trips.take(), 1, "failed insert");
    store.get::<User>(&1).await.unwrap().unwrap();
    assert_eq!(trips.take(), 1, "get with a #[hash] field");
    let many = store.get_many::<User>(&[0, 1, 2, 3]).await.unwrap();
    assert_eq!(many.iter().filter(|u| u.is_some()).count(), 3);
    assert_eq!(trips.take(), 1, "get_many");
    let batch: Vec<User> = (10..110).map(user).collect();
    store.save_all(&batch).await.unwrap();
    assert_eq!(trips.take(), 1, "save_all of 100");
    store
        .update::<User>(&1)
        .set(User::USERNAME, "x")
        .incr(User::LEVEL, 2)
        .hset(User::SETTINGS, "a", "b")
        .exec()
        .await
        .unwrap();
    assert_eq!(trips.take(), 1, "update");
    assert!(store.exists::<User>(&1).await.unwrap());
    assert_eq!(trips.take(), 1, "exists");
    assert!(store.delete::<User>(&1).await.unwrap());
    assert_eq!(trips.take(), 1, "delete");
    store.expiry::<User>().ttl(&2).await.unwrap();
    assert_eq!(trips.take(), 1, "ttl");

    let c = Columns {
        id: 9,
        username: "lisi".into(),
        email: Some("e".into()),
    };
    store.save(&c).await.unwrap();
    assert_eq!(trips.take(), 1, "strings layout save");
    assert_eq!(store.get::<Columns>(&9).await.unwrap(), Some(c));
    assert_eq!(trips.take(), 1, "strings layout get");
}

/// Empties the server's script cache and its function libraries, as a
/// restart without persistence does.
fn flush_scripts(server: &RedisServer) {
    let mut c = server.conn();
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut c).unwrap();
    let _: () = redis::cmd("FUNCTION").arg("FLUSH").query(&mut c).unwrap();
}

#[tokio::test]
async fn writes_survive_script_flush() {
    let server = RedisServer::start();
    let (store, trips) = support::counted_store(&server).await;
    store.save(&user(1)).await.unwrap();
    flush_scripts(&server);
    trips.take();
    store.save(&user(2)).await.unwrap();
    assert_eq!(trips.take(), 2, "function not found, then load and call");
    store.save(&user(3)).await.unwrap();
    assert_eq!(trips.take(), 1, "the library is loaded again");
    assert_eq!(store.get::<User>(&3).await.unwrap(), Some(user(3)));

    flush_scripts(&server);
    let batch: Vec<User> = (10..20).map(user).collect();
    store.save_all(&batch).await.unwrap();
    assert_eq!(
        store.get_many::<User>(&[10, 19]).await.unwrap(),
        vec![Some(user(10)), Some(user(19))]
    );
}

#[tokio::test]
async fn writes_survive_a_server_restart() {
    let mut server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store.save(&user(1)).await.unwrap();
    server.restart();
    let mut saved = false;
    for _ in 0..50 {
        if store.save(&user(2)).await.is_ok() {
            saved = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(saved);
    assert_eq!(store.get::<User>(&2).await.unwrap(), Some(user(2)));
}
