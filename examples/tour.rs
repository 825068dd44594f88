//! The tour: every scenario, one after the other, against `$REDIS_URL`
//! (default `redis://127.0.0.1:6379/`), or the Redis Cluster of the node URLs
//! in `$REDIS_CLUSTER_URLS`, separated by commas. Run: `cargo run --example
//! tour`; `scripts/demo.sh` runs it against a private redis-server it starts.

#[path = "book_tags.rs"]
mod book_tags;
#[path = "cache.rs"]
mod cache;
#[path = "leaderboard.rs"]
mod leaderboard;
#[path = "migrate.rs"]
mod migrate;
#[path = "pattern_query.rs"]
mod pattern_query;
#[path = "profile.rs"]
mod profile;
#[path = "red_packets.rs"]
mod red_packets;
#[path = "schema_evolution.rs"]
mod schema_evolution;
#[path = "users.rs"]
mod users;
#[path = "weibo.rs"]
mod weibo;

#[tokio::main]
async fn main() -> redis_entity::Result<()> {
    // The server to run against: `REDIS_URL`, or a local one; or a Redis
    // Cluster: `REDIS_CLUSTER_URLS` (node URLs separated by commas).
    let url = std::env::var("REDIS_CLUSTER_URLS")
        .or_else(|_| std::env::var("REDIS_URL"))
        .unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    users::run(&url).await?;
    profile::run(&url).await?;
    book_tags::run(&url).await?;
    red_packets::run(&url).await?;
    pattern_query::run(&url).await?;
    weibo::run(&url).await?;
    leaderboard::run(&url).await?;
    cache::run(&url).await?;
    migrate::run(&url).await?;
    schema_evolution::run(&url).await?;
    println!("tour finished: every scenario ran against {url}");
    Ok(())
}
