//! The tour: every seed scenario, one after the other, against a private
//! redis-server (or `$REDIS_URL`). Run: `cargo run --example tour`.

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
#[path = "users.rs"]
mod users;
#[path = "weibo.rs"]
mod weibo;

#[tokio::main]
async fn main() -> redis_entity::Result<()> {
    let (url, _server) = support::example_server();
    users::run(&url).await?;
    profile::run(&url).await?;
    book_tags::run(&url).await?;
    red_packets::run(&url).await?;
    pattern_query::run(&url).await?;
    weibo::run(&url).await?;
    leaderboard::run(&url).await?;
    cache::run(&url).await?;
    migrate::run(&url).await?;
    println!("tour finished: every scenario ran against {url}");
    Ok(())
}
