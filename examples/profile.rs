//! A profile cache as one hash per user. HSET one field, HINCRBY,
//! EXPIRE; settings kept in their own hash (`user:1001:settings`); every key
//! under a tenant prefix (`tenant:42:user:1001:profile`).
//! Run: `cargo run --example profile`.

use redis_entity::{Namespace, RedisEntity, Store};
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user", key = "user:{id}:profile")]
pub struct Profile {
    #[pk]
    pub id: u64,
    pub name: String,
    pub visits: i64,
    pub plan: Option<String>,
    #[hash]
    pub settings: BTreeMap<String, String>,
}

pub async fn run(url: &str) -> redis_entity::Result<()> {
    println!("== profile: profile hash, HINCRBY, EXPIRE, settings hash, tenant prefix");
    let store = Store::builder()
        .namespace(Namespace::tenant(42))
        .connect_any(url)
        .await?;
    println!("{}", Profile::layout());
    let ada = Profile {
        id: 1001,
        name: "Ada".into(),
        visits: 0,
        plan: None,
        settings: BTreeMap::from([("theme".into(), "dark".into())]),
    };
    store.save(&ada).await?;
    println!(
        "save(Profile 1001)           -> keys {:?}",
        store.keys().scan("tenant:42:*").await?
    );

    // HSET tenant:42:user:1001:profile plan pro ; HINCRBY ... visits 1
    store
        .update::<Profile>(&1001)
        .set(Profile::PLAN, Some("pro".to_string()))
        .incr(Profile::VISITS, 1)
        .exec()
        .await?;
    // HSET tenant:42:user:1001:profile:settings lang en
    store
        .update::<Profile>(&1001)
        .hset(Profile::SETTINGS, "lang", "en")
        .exec()
        .await?;
    let p = store.get::<Profile>(&1001).await?.expect("stored");
    println!("HSET plan, HINCRBY visits    -> {p:?}");
    println!(
        "HGET settings lang           -> {:?}",
        store.hget(Profile::SETTINGS, &1001, "lang").await?
    );

    // EXPIRE: a cached profile lives for an hour; saving again keeps the clock.
    store
        .expiry::<Profile>()
        .expire(&1001, Duration::from_secs(3600))
        .await?;
    store.save(&p).await?;
    println!(
        "EXPIRE 3600, save again      -> ttl {:?}",
        store
            .expiry::<Profile>()
            .ttl(&1001)
            .await?
            .map(|d| d.as_secs())
    );

    // Another tenant sees nothing.
    let other = Store::builder()
        .namespace(Namespace::tenant(43))
        .connect_any(url)
        .await?;
    println!(
        "tenant 43 get(1001)          -> {:?}",
        other.get::<Profile>(&1001).await?
    );
    store.delete::<Profile>(&1001).await?;
    println!(
        "delete                       -> keys {:?}\n",
        store.keys().scan("tenant:42:*").await?
    );
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
