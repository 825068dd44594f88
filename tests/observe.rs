//! What a store tells the application: counters (`Store::metrics`); the
//! `tracing` spans are checked in tests/spans.rs (a process of their own:
//! tracing caches per call site whether anyone listens).
//! `metrics_count_writes_failures_unknown_outcomes_reads_and_queries` stays
//! on one server (`RedisServer`): it stops the server to make an outcome
//! unknown.

use redis_entity::{Error, RedisEntity, Store};
use support::RedisServer;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "book")]
struct Book {
    #[pk]
    id: u64,
    #[index]
    genre: String,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct User {
    #[pk]
    id: u64,
    #[index(unique)]
    username: String,
}

fn book(id: u64) -> Book {
    Book {
        id,
        genre: "sf".into(),
    }
}

#[tokio::test]
async fn metrics_count_writes_failures_unknown_outcomes_reads_and_queries() {
    let mut server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store.save(&book(1)).await.unwrap();
    store.save_all(&[book(2), book(3)]).await.unwrap();
    assert!(matches!(
        store.insert(&book(1)).await,
        Err(Error::AlreadyExists { .. })
    ));
    store.get_many::<Book>(&[1, 2, 9]).await.unwrap();
    store.find(Book::GENRE, "sf").await.unwrap();
    let m = store.clone().metrics();
    assert_eq!(m.writes, 4, "{m:?}");
    assert_eq!(m.write_errors, 1, "{m:?}");
    assert_eq!(m.unknown_outcomes, 0, "{m:?}");
    assert_eq!(m.queries, 1, "{m:?}");
    assert_eq!(m.records_read, 3 + 3, "{m:?}");
    // A write to a stopped server: outcome unknown.
    server.stop();
    assert!(store.save(&book(4)).await.is_err());
    let m = store.metrics();
    assert_eq!((m.writes, m.unknown_outcomes), (5, 1), "{m:?}");
}

/// A unique lookup reads its owner's record in one call where it can, in
/// two reads where it cannot (here: the script's read fails on a key of
/// another type, and the two reads name it): either way it counts the
/// record once, and no record when no entity holds the value.
#[tokio::test]
async fn a_unique_lookup_counts_its_owners_record_once_on_either_path() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    let lisi = User {
        id: 1,
        username: "lisi".into(),
    };
    store.save(&lisi).await.unwrap();
    let read = || store.metrics().records_read;
    let before = read();
    let found = store.find_unique(User::USERNAME, "lisi").await.unwrap();
    assert_eq!(found, Some(lisi));
    assert_eq!(read() - before, 1, "one call, an owner");
    let before = read();
    assert_eq!(
        store.find_unique(User::USERNAME, "nobody").await.unwrap(),
        None
    );
    assert_eq!(read() - before, 0, "one call, no owner");
    // The owner key names user 7, whose key holds a string: the script's
    // read fails, the two reads follow and the record's read fails too.
    let mut raw = server.conn();
    let _: () = redis::Commands::set(&mut raw, "user:@username:texted", "7").unwrap();
    let _: () = redis::Commands::set(&mut raw, "user:7", "not a hash").unwrap();
    let before = read();
    let e = store
        .find_unique(User::USERNAME, "texted")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("user:7"), "{e}");
    assert_eq!(read() - before, 1, "the two reads after the script's");
}

#[tokio::test]
async fn a_unit_of_work_counts_its_operations_as_writes_and_a_refusal_as_one_error() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store
        .transaction()
        .save(&book(1))
        .save(&book(2))
        .exec()
        .await
        .unwrap();
    let m = store.metrics();
    assert_eq!((m.writes, m.write_errors), (2, 0), "{m:?}");
    let refused = store
        .transaction()
        .save(&book(3))
        .insert(&book(1))
        .exec()
        .await;
    assert!(matches!(
        refused,
        Err(Error::TransactionRefused { op: 1, .. })
    ));
    let m = store.metrics();
    assert_eq!((m.writes, m.write_errors), (4, 1), "{m:?}");
}
