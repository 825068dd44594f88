//! Migrating legacy `User_*_Profile` JSON strings to profile hashes
//! with SCAN (never KEYS), in batches, with a dry run, a progress bar, a
//! resumable cursor, and the sources deleted once their hash is written.
//! Run: `cargo run --example migrate`.

use redis::AsyncCommands;
use redis_entity::migrate::Migration;
use redis_entity::{RedisEntity, Store};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The new layout: one hash per profile, settings in their own hash.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user", key = "user:{id}:profile")]
pub struct Profile {
    #[pk]
    pub id: u64,
    pub name: String,
    #[index]
    pub email: String,
    pub visits: i64,
    #[hash]
    pub settings: BTreeMap<String, String>,
}

/// The legacy JSON, as the old code wrote it.
#[derive(Deserialize)]
struct Legacy {
    name: String,
    email: String,
    #[serde(default)]
    visits: i64,
    #[serde(default)]
    settings: BTreeMap<String, String>,
}

/// `User_1001_Profile` + its JSON -> a `Profile`.
pub fn convert(key: &str, raw: &[u8]) -> Result<Option<Profile>, String> {
    let Some(id) = key
        .strip_prefix("User_")
        .and_then(|k| k.strip_suffix("_Profile"))
        .and_then(|id| id.parse().ok())
    else {
        return Ok(None); // not one of ours after all
    };
    let legacy: Legacy = serde_json::from_slice(raw).map_err(|e| e.to_string())?;
    Ok(Some(Profile {
        id,
        name: legacy.name,
        email: legacy.email,
        visits: legacy.visits,
        settings: legacy.settings,
    }))
}

/// Writes `n` legacy profiles the way the old code did, to one server or a
/// cluster (node URLs separated by commas). For tests/migrate.rs.
#[allow(dead_code)]
pub async fn seed_legacy(url: &str, n: u64) {
    let store = Store::builder().connect_any(url).await.expect("connect");
    seed_with(&mut store.connection(), n).await;
}

/// Writes `n` legacy profiles over `c`: one pipeline on one server, one
/// `SET` after the other on a cluster (the keys are in many slots).
async fn seed_with(c: &mut redis_entity::AnyConnection, n: u64) {
    let json = |id: u64| {
        format!(
            r#"{{"name":"user {id}","email":"u{id}@example.com","visits":{id},"settings":{{"theme":"dark"}}}}"#
        )
    };
    if let redis_entity::AnyConnection::Cluster(_) = c {
        for id in 1..=n {
            let _: () = c
                .set(format!("User_{id}_Profile"), json(id))
                .await
                .expect("seed");
        }
        return;
    }
    let mut pipe = redis::pipe();
    for id in 1..=n {
        pipe.set(format!("User_{id}_Profile"), json(id)).ignore();
    }
    let _: () = pipe.query_async(c).await.expect("seed");
}

fn bar(done: u64, total: u64) -> String {
    let filled = (done * 30 / total.max(1)) as usize;
    format!(
        "[{}{}] {done}/{total}",
        "#".repeat(filled),
        " ".repeat(30 - filled.min(30))
    )
}

pub async fn run(url: &str) -> redis_entity::Result<()> {
    println!("== migrate: User_*_Profile JSON strings -> profile hashes");
    // One server, or a cluster (node URLs separated by commas).
    let store = Store::builder().connect_any(url).await?;
    let mut c = store.connection();
    seed_with(&mut c, 1000).await;
    let _: () = c.set("User_77_Profile", "{not json").await.expect("set");

    let mut plan = Migration::new("User_*_Profile");
    plan.batch = 200;
    plan.dry_run = true;
    let dry = store
        .maintenance()
        .migrate(&plan, 0, convert, |_| {})
        .await?;
    println!(
        "dry run  -> would migrate {}, failing {:?}",
        dry.migrated, dry.failed
    );

    plan.dry_run = false;
    plan.delete_source = true;
    // The first two batches, as if the process were stopped there...
    let (mut cursor, mut before) = (0, 0);
    for _ in 0..2 {
        let batch = store
            .maintenance()
            .migrate_batch(&plan, cursor, convert)
            .await?;
        cursor = batch.cursor;
        before += batch.migrated;
    }
    println!("stopped  -> {before} migrated, resume from cursor {cursor}");
    // ... and resumed from the saved cursor, with a progress bar.
    let done = store
        .maintenance()
        .migrate(&plan, cursor, convert, |p| {
            println!("  {}", bar(before + p.migrated, dry.migrated));
        })
        .await?;
    let left: Vec<String> = store.keys().scan("User_*_Profile").await?;
    println!(
        "resumed  -> migrated {} more, legacy keys left {left:?} (the broken one: {:?})",
        done.migrated, done.failed
    );
    let p = store.get::<Profile>(&1001).await?;
    println!(
        "profile 42 -> {:?}",
        store
            .get::<Profile>(&42)
            .await?
            .map(|p| (p.name, p.visits, p.settings))
    );
    assert!(p.is_none());
    println!(
        "verify   -> {}",
        store.maintenance::<Profile>().verify().await?
    );
    // Leave the server as found.
    let _: () = c.del("User_77_Profile").await.expect("del");
    for id in 1..=1000 {
        store.delete::<Profile>(&id).await?;
    }
    Ok(())
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> redis_entity::Result<()> {
    // The server to run against: `REDIS_URL`, or a local one; or a Redis
    // Cluster: `REDIS_CLUSTER_URLS` (node URLs separated by commas).
    let url = std::env::var("REDIS_CLUSTER_URLS")
        .or_else(|_| std::env::var("REDIS_URL"))
        .unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    run(&url).await
}
