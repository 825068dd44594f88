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

    // A native set query: SINTER (with the reads of whether anything
    // expires and how many entities there are), then the records.
    let plan = store
        .query::<Book>()
        .all(Book::TAGS, ["php", "web"])
        .explain()
        .unwrap();
    assert_eq!(
        plan.round_trips[0],
        [
            "ZCARD book:@expiry",
            "SCARD book:@ids:@buckets",
            "SCARD book:@ids",
            "SINTER book:@tags:php book:@tags:web"
        ]
    );
    assert_eq!(
        plan.round_trips[1],
        ["HMGET book:<id> tags price title (per matching entity, pipelined)"]
    );
    assert_eq!(
        plan.keys,
        [
            "book:@expiry",
            "book:@ids:@buckets",
            "book:@ids",
            "book:@tags:php",
            "book:@tags:web"
        ]
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

/// The `FCALL`s the server ran since the last `SLOWLOG RESET` (a server
/// that logs every command), oldest first, each as its words.
fn fcalls_logged(server: &RedisServer) -> Vec<String> {
    let entries: Vec<redis::Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(100)
        .query(&mut server.conn())
        .unwrap();
    let mut calls = Vec::new();
    for entry in entries.iter().rev() {
        let redis::Value::Array(fields) = entry else {
            panic!("a slowlog entry: {entry:?}")
        };
        let words: Vec<String> = redis::from_redis_value_ref(&fields[3]).unwrap();
        if words[0] == "FCALL" {
            calls.push(words.join(" "));
        }
    }
    calls
}

#[tokio::test]
async fn a_save_and_an_update_send_the_call_their_explain_shows() {
    // Every command logged, with its arguments (all short here).
    let server = RedisServer::start_with(&["--slowlog-log-slower-than", "0"]);
    let store = redis_entity::Store::connect(&server.url()).await.unwrap();
    store.save(&book(7, &["rust"])).await.unwrap();
    // `explain()` shows the plan's call; `exec()` sends that call.
    macro_rules! sends_what_it_shows {
        ($update:expr) => {{
            let shown = $update.explain().unwrap().round_trips[0][0].clone();
            redis::cmd("SLOWLOG")
                .arg("RESET")
                .exec(&mut server.conn())
                .unwrap();
            $update.exec().await.unwrap();
            assert_eq!(fcalls_logged(&server), [shown]);
        }};
    }
    // Plain updates: each sent as its straight-line call built without a
    // plan (of a sorted field: an increment, a set; of tags).
    sends_what_it_shows!(store.update::<Book>(&7).incr(Book::PRICE, 2.5));
    sends_what_it_shows!(store.update::<Book>(&7).set(Book::TITLE, "Rust".to_owned()));
    sends_what_it_shows!(store
        .update::<Book>(&7)
        .set(Book::TAGS, BTreeSet::from(["go".to_owned()]))
        .set(Book::PRICE, 4.0));
    // Not plain (a TTL): the plan's call.
    sends_what_it_shows!(store
        .update::<Book>(&7)
        .incr(Book::PRICE, 1.0)
        .ttl(std::time::Duration::from_secs(60)));
    // Saves, new and existing: the same, built from the entity's row.
    for saved in [book(8, &["go", "web"]), book(8, &["web"])] {
        let shown = store.keys().explain_save(&saved).unwrap().round_trips[0][0].clone();
        redis::cmd("SLOWLOG")
            .arg("RESET")
            .exec(&mut server.conn())
            .unwrap();
        store.save(&saved).await.unwrap();
        assert_eq!(fcalls_logged(&server), [shown]);
    }
    let stored = store.get::<Book>(&7).await.unwrap().unwrap();
    assert_eq!((stored.price, stored.title.as_str()), (5.0, "Rust"));
    assert_eq!(stored.tags, ["go".to_owned()].into());
}
