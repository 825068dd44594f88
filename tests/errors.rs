//! Bad data read from Redis gives a typed error naming the key and field,
//! never a panic; so do a wrong key type and a lost connection. Runs on one
//! server, and with `REDIS_ENTITY_TEST_CLUSTER` set on a 3-master cluster,
//! where the keys carry a hash tag (`user:{1}`, `user:userid:{9}:level`).
//! `a_lost_server_fails_the_call_then_the_manager_reconnects` stays on one
//! server: it restarts the server.

use redis::Commands;
use redis_entity::{AnyConnection, Error, RedisEntity, Store};
use support::{RedisServer, Target};

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct User {
    #[pk]
    id: u64,
    username: String,
    level: u8,
    email: Option<String>,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "strings", key = "user:userid:{id}")]
struct Columns {
    #[pk]
    id: u64,
    username: String,
    level: u8,
}

/// User 1's hash, in the store's layout (`user:1`, on a cluster `user:{1}`).
fn user_key(server: &Target, store: &Store<AnyConnection>) -> String {
    let key = store.keys().of::<User>(1).base;
    assert_eq!(
        key,
        if server.is_cluster() {
            "user:{1}"
        } else {
            "user:1"
        }
    );
    key
}

fn user() -> User {
    User {
        id: 1,
        username: "lisi".into(),
        level: 3,
        email: None,
    }
}

#[tokio::test]
async fn a_missing_required_field_names_key_and_field() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&user()).await.unwrap();
    let hash = user_key(&server, &store);
    let _: () = server.conn().hdel(&hash, "username").unwrap();
    let err = store.get::<User>(&1).await.unwrap_err();
    match &err {
        Error::MissingField { key, field } => {
            assert_eq!(*key, hash);
            assert_eq!(*field, "username");
        }
        other => panic!("expected MissingField, got {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        format!("record at `{hash}` has no field `username`")
    );
    if !server.is_cluster() {
        assert_eq!(
            err.to_string(),
            "record at `user:1` has no field `username`"
        );
    }
}

#[tokio::test]
async fn an_unparsable_value_names_key_field_and_value() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&user()).await.unwrap();
    let hash = user_key(&server, &store);
    let _: () = server.conn().hset(&hash, "level", "300").unwrap();
    let err = store.get::<User>(&1).await.unwrap_err();
    match err {
        Error::Decode {
            key, field, value, ..
        } => {
            assert_eq!(key, hash);
            assert_eq!(field, "level");
            assert_eq!(value, "300");
        }
        other => panic!("expected Decode, got {other:?}"),
    }
    // get_many reports the same error rather than a panic or a silent None.
    assert!(matches!(
        store.get_many::<User>(&[1]).await,
        Err(Error::Decode { .. })
    ));
}

#[tokio::test]
async fn strings_layout_errors_name_the_column_key() {
    let server = Target::start();
    let store = server.store().await;
    store
        .save(&Columns {
            id: 9,
            username: "lisi".into(),
            level: 1,
        })
        .await
        .unwrap();
    let level = store.keys().of::<Columns>(9).columns[1].clone();
    assert_eq!(
        level,
        if server.is_cluster() {
            "user:userid:{9}:level"
        } else {
            "user:userid:9:level"
        }
    );
    let _: () = server.conn().set(&level, "high").unwrap();
    match store.get::<Columns>(&9).await.unwrap_err() {
        Error::Decode { key, field, .. } => {
            assert_eq!(key, level);
            assert_eq!(field, "level");
        }
        other => panic!("expected Decode, got {other:?}"),
    }
}

#[tokio::test]
async fn wrongtype_is_a_typed_error_on_read_and_write() {
    let server = Target::start();
    let store = server.store().await;
    let hash = user_key(&server, &store);
    let _: () = server.conn().set(&hash, "not a hash").unwrap();
    let err = store.get::<User>(&1).await.unwrap_err();
    assert!(
        matches!(&err, Error::WrongType { key, .. } if *key == hash),
        "{err:?}"
    );
    let err = store.save(&user()).await.unwrap_err();
    assert!(matches!(&err, Error::WrongType { .. }), "{err:?}");
    let still: String = server.conn().get(&hash).unwrap();
    assert_eq!(still, "not a hash", "the failed write changed nothing");
}

#[tokio::test]
async fn invalid_utf8_is_a_decode_error() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&user()).await.unwrap();
    let _: () = server
        .conn()
        .hset(user_key(&server, &store), "username", &[0xff_u8, 0xfe][..])
        .unwrap();
    assert!(matches!(
        store.get::<User>(&1).await,
        Err(Error::Decode {
            field: "username",
            ..
        })
    ));
}

#[tokio::test]
async fn a_broken_json_document_is_a_decode_error() {
    #[derive(RedisEntity, Debug)]
    #[redis(layout = "json")]
    struct Doc {
        #[pk]
        id: u8,
        n: u8,
    }
    let server = Target::start();
    let store = server.store().await;
    let doc = store.keys().of::<Doc>(1).base;
    assert_eq!(
        doc,
        if server.is_cluster() {
            "doc:{1}"
        } else {
            "doc:1"
        }
    );
    let _: () = server.conn().set(&doc, "{not json").unwrap();
    assert!(matches!(
        store.get::<Doc>(&1).await,
        Err(Error::Decode {
            field: "(document)",
            ..
        })
    ));
    let _: () = server.conn().set(&doc, r#"{"n": "x"}"#).unwrap();
    assert!(matches!(
        store.get::<Doc>(&1).await,
        Err(Error::Decode { field: "n", .. })
    ));
    let err = store
        .update::<Doc>(&1)
        .incr(Doc::N, 1)
        .exec()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Decode { field: "n", .. }), "{err:?}");
}

#[tokio::test]
async fn connection_failure_is_an_error_not_a_panic() {
    let server = Target::start();
    let (url, cluster) = (server.url(), server.is_cluster());
    drop(server);
    // One server: `connect`; the cluster's nodes: `connect_any` of them all.
    let err = if cluster {
        Store::builder()
            .connect_any(&url)
            .await
            .map(drop)
            .unwrap_err()
    } else {
        Store::connect(&url).await.map(drop).unwrap_err()
    };
    assert!(matches!(err, Error::Redis { .. }), "{err:?}");
    assert!(err.is_connection(), "{err:?}");
}

#[tokio::test]
async fn a_lost_server_fails_the_call_then_the_manager_reconnects() {
    let mut server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store.save(&user()).await.unwrap();
    server.restart(); // empty server on the same port
    let mut recovered = false;
    for _ in 0..50 {
        match store.save(&user()).await {
            Ok(_) => {
                recovered = true;
                break;
            }
            Err(e) => assert!(e.is_connection(), "{e:?}"),
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(recovered, "the connection manager reconnects");
    assert_eq!(store.get::<User>(&1).await.unwrap(), Some(user()));
}
