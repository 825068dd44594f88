//! Migration of legacy JSON strings to entities with SCAN, batches,
//! a resumable cursor, a dry run, and source deletion. Runs on one server,
//! and with `REDIS_ENTITY_TEST_CLUSTER` set on a 3-master cluster, where the
//! migration walks every master with SCAN and `Profile` (indexed) is written
//! in its index shards (`{user:<shard>}:user:42:profile`).

#[allow(dead_code)]
#[path = "../examples/migrate.rs"]
mod example;

use example::{convert, seed_legacy, Profile};
use redis::Commands;
use redis_entity::migrate::Migration;
use support::Target;

#[tokio::test]
async fn a_dry_run_converts_everything_and_writes_nothing() {
    let server = Target::start();
    let store = server.store().await;
    seed_legacy(&server.url(), 300).await;
    let mut plan = Migration::new("User_*_Profile");
    plan.dry_run = true;
    plan.delete_source = true;
    let p = store
        .maintenance()
        .migrate(&plan, 0, convert, |_| {})
        .await
        .unwrap();
    assert!(p.done);
    assert_eq!((p.scanned, p.migrated, p.deleted), (300, 300, 0));
    assert_eq!(server.keys().len(), 300, "only the legacy keys");
}

#[tokio::test]
async fn migration_in_batches_resumes_from_its_cursor_and_deletes_sources() {
    let server = Target::start();
    let store = server.store().await;
    seed_legacy(&server.url(), 1200).await;
    let mut c = server.conn();
    let _: () = c.set("User_5000_Profile", "{broken").unwrap();
    let _: () = c.sadd("User_6000_Profile", "not a string").unwrap();
    let _: () = c.set("Other_1_Profile", "{}").unwrap();
    let mut plan = Migration::new("User_*_Profile");
    plan.batch = 100;
    plan.delete_source = true;
    // Interrupted after three batches...
    let mut cursor = 0;
    let mut migrated = 0;
    let mut failed = Vec::new();
    for _ in 0..3 {
        let b = store
            .maintenance()
            .migrate_batch(&plan, cursor, convert)
            .await
            .unwrap();
        assert!(!b.done);
        cursor = b.cursor;
        migrated += b.migrated;
        failed.extend(b.failed);
    }
    assert!(migrated > 0 && migrated < 1200);
    // ... then resumed from the saved cursor.
    let mut reports = 0;
    let rest = store
        .maintenance()
        .migrate(&plan, cursor, convert, |_| reports += 1)
        .await
        .unwrap();
    assert!(rest.done && reports > 1);
    assert_eq!(migrated + rest.migrated, 1200, "every profile exactly once");
    // SCAN order decides in which batch the broken key comes.
    failed.extend(rest.failed.clone());
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].0, "User_5000_Profile");
    let p = store.get::<Profile>(&42).await.unwrap().unwrap();
    assert_eq!((p.name.as_str(), p.visits), ("user 42", 42));
    assert_eq!(p.settings.get("theme").map(String::as_str), Some("dark"));
    let legacy: Vec<String> = server
        .keys()
        .into_iter()
        .filter(|k| k.ends_with("_Profile"))
        .collect();
    assert_eq!(
        legacy,
        ["Other_1_Profile", "User_5000_Profile", "User_6000_Profile"],
        "sources deleted once written; the broken and foreign ones kept"
    );
    assert_eq!(
        store
            .find(Profile::EMAIL, "u7@example.com")
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(store
        .maintenance::<Profile>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    // Running it again finds nothing left to do.
    let again = store
        .maintenance()
        .migrate(&plan, 0, convert, |_| {})
        .await
        .unwrap();
    assert_eq!(again.migrated, 0);
}

#[test]
fn blocking_migration() {
    let server = Target::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(seed_legacy(&server.url(), 50));
    let store = redis_entity::blocking::Store::builder()
        .connect_any(&server.url())
        .unwrap();
    let plan = Migration::new("User_*_Profile");
    let p = store
        .maintenance()
        .migrate(&plan, 0, convert, |_| {})
        .unwrap();
    assert_eq!(p.migrated, 50);
    assert_eq!(store.get::<Profile>(&7).unwrap().unwrap().visits, 7);
}

#[tokio::test]
async fn the_example_runs() {
    let server = Target::start();
    example::run(&server.url()).await.unwrap();
    assert!(server.keys().is_empty(), "{:?}", server.keys());
}
