//! `explain()` shows what a call will send without sending it, and what it
//! shows is what the call then does: the same number of round trips, the
//! same commands.
//! Both tests stay on one server (`RedisServer`): they count round trips
//! with `counted_store` (the calls and the trips explained and made, and
//! that explaining sends nothing), which a cluster's per-slot requests change.

use redis_entity::RedisEntity;
use std::collections::BTreeSet;
use support::RedisServer;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "book")]
struct Book {
    #[pk]
    id: u64,
    #[index]
    tags: BTreeSet<String>,
    #[index(sorted)]
    price: f64,
    title: String,
}

fn book(id: u64, tags: &[&str]) -> Book {
    Book {
        id,
        tags: tags.iter().map(|t| t.to_string()).collect(),
        price: id as f64,
        title: format!("book {id}"),
    }
}

#[tokio::test]
async fn a_query_plan_names_its_commands_and_round_trips_and_they_happen() {
    let server = RedisServer::start();
    let (store, trips) = support::counted_store(&server).await;
    store
        .save_all(&[
            book(1, &["php", "web"]),
            book(2, &["php"]),
            book(3, &["web"]),
        ])
        .await
        .unwrap();

    // A native set query: SINTER, then the records.
    let plan = store
        .query::<Book>()
        .all(Book::TAGS, ["php", "web"])
        .explain()
        .unwrap();
    assert_eq!(
        plan.round_trips[0],
        ["ZCARD book:@expiry", "SINTER book:@tags:php book:@tags:web"]
    );
    assert_eq!(
        plan.round_trips[1],
        ["HGETALL book:<id> (per matching entity, pipelined)"]
    );
    assert_eq!(
        plan.keys,
        ["book:@expiry", "book:@tags:php", "book:@tags:web"]
    );
    let text = plan.to_string();
    assert!(text.starts_with("query of Book: 2 round trip(s)"), "{text}");
    trips.take();
    let found = store
        .query::<Book>()
        .all(Book::TAGS, ["php", "web"])
        .fetch()
        .await
        .unwrap();
    assert_eq!(found, [book(1, &["php", "web"])]);
    assert_eq!(trips.take(), plan.round_trips.len() as u64);

    // A range with an order: the read-only query script.
    let plan = store
        .query::<Book>()
        .range(Book::PRICE, 1.5..)
        .order_desc(Book::PRICE)
        .explain()
        .unwrap();
    assert!(plan.round_trips[0][0].starts_with("EVALSHA_RO "), "{plan}");
    assert!(plan.keys.contains(&"book:@price".to_string()), "{plan}");
    assert!(plan.keys.contains(&"book:@ids".to_string()), "{plan}");
    trips.take();
    let found = store
        .query::<Book>()
        .range(Book::PRICE, 1.5..)
        .order_desc(Book::PRICE)
        .fetch()
        .await
        .unwrap();
    assert_eq!(found.iter().map(|b| b.id).collect::<Vec<_>>(), [3, 2]);
    assert_eq!(trips.take(), 2);
}

#[tokio::test]
async fn a_write_plan_is_one_function_call_on_the_entity_keys() {
    let server = RedisServer::start();
    let (store, trips) = support::counted_store(&server).await;
    let plan = store.keys().explain_save(&book(7, &["rust"])).unwrap();
    assert_eq!(plan.round_trips.len(), 1);
    assert!(
        plan.round_trips[0][0].starts_with("FCALL redis_entity_"),
        "{plan}"
    );
    assert_eq!(plan.keys, ["book:7", "book:7:@shadow"]);
    assert!(plan.what.contains("book:7"), "{plan}");
    assert_eq!(trips.take(), 0, "explaining sends nothing");
    assert!(server.keys().is_empty());

    let plan = store
        .update::<Book>(&7)
        .incr(Book::PRICE, 1.0)
        .explain()
        .unwrap();
    assert_eq!(plan.round_trips.len(), 1);
    assert!(plan.what.starts_with("Update of Book"), "{plan}");
    // A NaN is refused by explain as by exec.
    assert!(store
        .update::<Book>(&7)
        .set(Book::PRICE, f64::NAN)
        .explain()
        .is_err());
}
