//! The admin command line embedded in an application, with the
//! application's own types: `layouts`, `verify [--repair]`, `reindex`,
//! `schema plan|apply|status`, `sweep`, each with `--json` for scripts and a
//! progress bar on a terminal.
//!
//! Run against your server (default `redis://127.0.0.1:6379/`):
//! `REDIS_URL=redis://127.0.0.1:6379/ cargo run --example admin -- verify --repair`
//! (on a cluster: `REDIS_CLUSTER_URLS=redis://127.0.0.1:7000/,redis://127.0.0.1:7001/`)
//! (`cargo run --example admin -- help` lists the commands and types).

use redis_entity::admin::Admin;
use redis_entity::{RedisEntity, Store};
use std::collections::BTreeSet;

/// An application's types, as it declares them anyway.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "shop:product")]
pub struct Product {
    #[pk]
    pub sku: String,
    #[index(prefix)]
    pub title: String,
    #[index]
    pub tags: BTreeSet<String>,
    #[index(sorted)]
    pub price_cents: i64,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "shop:customer")]
pub struct Customer {
    #[pk]
    pub id: u64,
    #[index(unique)]
    pub email: String,
}

/// The admin over the application's types on the server at `url` (or the
/// cluster of the node URLs it lists, separated by commas).
pub async fn admin(url: &str) -> redis_entity::Result<Admin<redis_entity::AnyConnection>> {
    let store = Store::builder().connect_any(url).await?;
    Admin::new(store)
        .register::<Product>()?
        .register::<Customer>()
}

/// Runs one command line (without the program name) and returns its output.
pub async fn run(url: &str, args: &[String]) -> redis_entity::Result<String> {
    admin(url).await?.run(args).await
}

#[tokio::main]
async fn main() -> redis_entity::Result<()> {
    let url = std::env::var("REDIS_CLUSTER_URLS")
        .or_else(|_| std::env::var("REDIS_URL"))
        .unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    let args: Vec<String> = std::env::args().skip(1).collect();
    print!("{}", run(&url, &args).await?);
    Ok(())
}
