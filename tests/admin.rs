//! Admin operations: layouts, verify and repair, reindex after an index was
//! added, sweep; as the command line an application embeds. Runs on one
//! server, and with `REDIS_ENTITY_TEST_CLUSTER` set on a 3-master cluster,
//! where the indexed types live in their index shards
//! (`{user:<n>}:user:@country:FR`) and the admin walks shard after shard.

use redis::Commands;
use redis_entity::admin::Admin;
use redis_entity::{RedisEntity, Store};
use std::time::Duration;
use support::Target;

/// Version 1 of the type: no index on country.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct UserV1 {
    #[pk]
    id: u64,
    name: String,
    country: String,
}

/// Version 2 adds `#[index]` on country: the stored entities need reindexing.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct User {
    #[pk]
    id: u64,
    name: String,
    #[index]
    country: String,
}

/// A deployed type with a sorted index, and its next definition, which
/// adds an equality index on `topic`.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "note")]
struct NoteV1 {
    #[pk]
    id: u64,
    topic: String,
    #[index(sorted)]
    rank: i64,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "note")]
struct Note {
    #[pk]
    id: u64,
    #[index]
    topic: String,
    #[index(sorted)]
    rank: i64,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "book")]
struct Book {
    #[pk]
    id: u64,
    #[index(prefix)]
    title: String,
}

/// The index key spelled `index` on one server (`User::COUNTRY.key("FR")`)
/// where the entity stored at `base` (in the store's layout) keeps its
/// entries: `index` itself on one server, on a cluster inside that entity's
/// index shard (`{user:<n>}:user:@country:FR`). `standalone` is the entity's
/// key on one server (`User::key(&1)`).
fn entry_key(base: &str, standalone: &str, index: &str) -> String {
    let space = base
        .strip_suffix(standalone)
        .unwrap_or_else(|| panic!("{base} does not end with {standalone}"));
    format!("{space}{index}")
}

fn args(line: &str) -> Vec<String> {
    line.split_whitespace().map(String::from).collect()
}

#[tokio::test]
async fn reindex_after_an_index_was_added() {
    let server = Target::start();
    let store = server.store().await;
    let old: Vec<UserV1> = (1..=1200)
        .map(|id| UserV1 {
            id,
            name: format!("u{id}"),
            country: ["DE", "CN"][(id % 2) as usize].into(),
        })
        .collect();
    store.save_all(&old).await.unwrap();
    // The keyspace's definition has no index on country: a query would
    // miss the 1,200 users, so it is refused, naming the index.
    match store.find(User::COUNTRY, "DE").await {
        Err(redis_entity::Error::IndexBuilding { index, .. }) => assert_eq!(index, "country"),
        other => panic!("expected IndexBuilding, got {:?}", other.map(|v| v.len())),
    }
    assert!(!store
        .maintenance::<User>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    assert_eq!(store.maintenance::<User>().reindex().await.unwrap(), 1200);
    assert_eq!(store.find(User::COUNTRY, "DE").await.unwrap().len(), 600);
    assert!(store
        .maintenance::<User>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

#[tokio::test]
async fn the_schema_commands_plan_apply_and_show_a_build() {
    let server = Target::start();
    let store = server
        .store_with(Store::builder().schema_heartbeat(Duration::from_millis(200)))
        .await;
    let notes: Vec<NoteV1> = (1..=10)
        .map(|id| NoteV1 {
            id,
            topic: ["rust", "redis"][(id % 2) as usize].into(),
            rank: id as i64,
        })
        .collect();
    store.save_all(&notes).await.unwrap();
    let admin = Admin::new(store.clone()).register::<Note>().unwrap();

    let plan = admin.run(&args("schema plan Note")).await.unwrap();
    assert!(
        plan.contains("needs a build: index `topic` (equality) is new"),
        "{plan}"
    );
    assert!(
        plan.contains("apply builds topic: walks 10 stored entities"),
        "{plan}"
    );
    let applied = admin.run(&args("schema apply Note")).await.unwrap();
    assert_eq!(
        applied,
        "Note: built topic; 10 entities indexed in 1 walk\n"
    );
    assert_eq!(store.find(Note::TOPIC, "rust").await.unwrap().len(), 5);
    let status = admin.run(&args("schema status --json Note")).await.unwrap();
    let status: serde_json::Value = serde_json::from_str(status.trim()).unwrap();
    let states: Vec<(&str, &str)> = status["indexes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["field"].as_str().unwrap(), i["state"].as_str().unwrap()))
        .collect();
    assert_eq!(states, [("rank", "ready"), ("topic", "ready")]);
    assert_eq!(
        admin.run(&args("schema apply Note")).await.unwrap(),
        "Note: nothing to apply\n"
    );
    assert!(admin.run(&args("schema frobnicate")).await.is_err());
}

#[tokio::test]
async fn the_embedded_command_line() {
    let server = Target::start();
    let store = server.store().await;
    let admin = Admin::new(store.clone())
        .register::<User>()
        .unwrap()
        .register::<Book>()
        .unwrap();
    assert!(
        Admin::new(store.clone())
            .register::<User>()
            .unwrap()
            .register::<UserV1>()
            .is_err(),
        "two types under one prefix are refused"
    );

    let layouts = admin.run(&args("layouts")).await.unwrap();
    assert!(
        layouts.contains("user:<id>") && layouts.contains("book:@title"),
        "{layouts}"
    );

    store
        .save(&User {
            id: 1,
            name: "a".into(),
            country: "DE".into(),
        })
        .await
        .unwrap();
    store
        .save(&Book {
            id: 2,
            title: "Rust".into(),
        })
        .await
        .unwrap();
    let clean = admin.run(&args("verify")).await.unwrap();
    assert!(
        clean.contains("User: 1 entities") && clean.contains("0 violations"),
        "{clean}"
    );
    // Which memory policy the server runs (the test servers' default).
    assert!(
        clean.contains("server maxmemory-policy: noeviction"),
        "{clean}"
    );

    let fr = entry_key(
        &store.keys().of::<User>(1).base,
        &User::key(&1),
        &User::COUNTRY.key("FR"),
    );
    if !server.is_cluster() {
        assert_eq!(fr, "user:@country:FR");
    } else {
        assert!(
            fr.starts_with("{user:") && fr.ends_with("}:user:@country:FR"),
            "{fr}"
        );
    }
    let _: () = server.conn().sadd(&fr, 1).unwrap();
    let out = admin.run(&args("verify --repair User")).await.unwrap();
    assert!(
        out.contains("1 violations") && out.contains("User: repair: 1 fixed, 0 left"),
        "{out}"
    );
    let again = admin.run(&args("verify User")).await.unwrap();
    assert!(again.contains("0 violations"), "{again}");

    store
        .expiry::<Book>()
        .expire(&2, Duration::from_millis(30))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(80)).await;
    let swept = admin.run(&args("sweep --budget 10 Book")).await.unwrap();
    assert!(swept.contains("Book: 1 expired"), "{swept}");
    let reindexed = admin.run(&args("reindex User")).await.unwrap();
    assert!(
        reindexed.contains("User: 1 entities indexed"),
        "{reindexed}"
    );
    assert!(admin.run(&args("verify Nope")).await.is_err());
    assert!(admin
        .run(&args("help"))
        .await
        .unwrap()
        .contains("types: User, Book"));
}

#[allow(dead_code)]
#[path = "../examples/admin.rs"]
mod example;

#[tokio::test]
async fn the_embedded_command_line_speaks_json_for_scripts() {
    use example::{Customer, Product};
    let server = Target::start();
    let store = server.store().await;
    store
        .save(&Product {
            sku: "SKU-1".into(),
            title: "ruby book".into(),
            tags: ["books".to_string()].into(),
            price_cents: 1299,
        })
        .await
        .unwrap();
    store
        .save(&Customer {
            id: 1,
            email: "a@example.com".into(),
        })
        .await
        .unwrap();
    let run = |line: &str| {
        let url = server.url();
        let line = line.to_owned();
        async move { example::run(&url, &args(&line)).await.unwrap() }
    };
    let out = run("verify --json").await;
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0]["type"], "Product");
    assert_eq!(lines[0]["entities"], 1);
    assert_eq!(lines[0]["violations"], serde_json::json!([]));
    assert_eq!(lines[0]["memory_policy"], "noeviction");
    assert_eq!(lines[0]["repaired"], serde_json::Value::Null);

    // A stale tag entry: reported with its kind, and repaired.
    let sku = "SKU-1".to_string();
    let games = entry_key(
        &store.keys().of::<Product>(sku.clone()).base,
        &Product::key(&sku),
        &Product::TAGS.key("games"),
    );
    if !server.is_cluster() {
        assert_eq!(games, "shop:product:@tags:games");
    } else {
        assert!(
            games.starts_with("{shop:product:") && games.ends_with("}:shop:product:@tags:games"),
            "{games}"
        );
    }
    let _: () = server.conn().sadd(&games, "SKU-1").unwrap();
    let out = run("verify --repair --json Product").await;
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["violations"][0]["kind"], "StaleEntry", "{v}");
    assert!(v["violations"][0]["text"]
        .as_str()
        .unwrap()
        .contains(&games));
    assert_eq!(v["repaired"]["fixed"], 1);
    assert_eq!(v["repaired"]["left"], serde_json::json!([]));

    let v: serde_json::Value =
        serde_json::from_str(run("reindex --json Customer").await.trim()).unwrap();
    assert_eq!(v, serde_json::json!({"type": "Customer", "indexed": 1}));
    let v: serde_json::Value =
        serde_json::from_str(run("sweep --json Customer").await.trim()).unwrap();
    assert_eq!(v, serde_json::json!({"type": "Customer", "swept": 0}));
    let layouts = run("layouts --json").await;
    let first: serde_json::Value = serde_json::from_str(layouts.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "Product");
    assert!(first["keys"].as_array().unwrap().len() > 3, "{first}");
    assert!(run("help").await.contains("types: Product, Customer"));
}

#[tokio::test]
async fn reindex_reports_its_progress() {
    let server = Target::start();
    let store = server.store().await;
    let users: Vec<User> = (1..=1200)
        .map(|id| User {
            id,
            name: format!("u{id}"),
            country: "DE".into(),
        })
        .collect();
    store.save_all(&users).await.unwrap();
    let mut steps = Vec::new();
    let n = store
        .maintenance::<User>()
        .reindex_with(|p| steps.push((p.step, p.done, p.total)))
        .await
        .unwrap();
    assert_eq!(n, 1200);
    // Each SCAN page is indexed as it comes (the walk holds one page, not
    // every member), in batches of at most 500, counted as it goes: the
    // total is not known before the walk ends.
    assert!(
        steps.iter().all(|s| s.0 == "indexing" && s.2.is_none()),
        "{steps:?}"
    );
    let done: Vec<usize> = steps.iter().map(|s| s.1).collect();
    assert_eq!(done.last(), Some(&1200), "{steps:?}");
    assert!(done.len() >= 3, "at least 3 batches of 500: {steps:?}");
    assert!(
        done.windows(2).all(|w| w[0] < w[1] && w[1] - w[0] <= 500),
        "{steps:?}"
    );
}
