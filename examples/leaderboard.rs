//! Player profiles as hashes, a leaderboard as a sorted set (ZADD,
//! ZINCRBY), the top 10 with their profiles fetched pipelined, a player's
//! rank, and a weekly board that expires by itself.
//! Run: `cargo run --example leaderboard`.

use redis_entity::board::Board;
use redis_entity::{RedisEntity, Store};

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "player")]
pub struct Player {
    #[pk]
    pub id: u64,
    pub name: String,
    #[index]
    pub country: String,
    /// All-time score: `player:score` is the leaderboard (ZADD on save).
    #[index(sorted)]
    pub score: f64,
}

/// This week's scores, one sorted set per ISO week, kept one more week.
pub const WEEKLY: Board<Player> = Board::weekly("score", 1);

pub fn players() -> Vec<Player> {
    let names = [
        "ada", "bo", "cy", "di", "ed", "flo", "gus", "hal", "ivy", "jo", "kim", "lu",
    ];
    names
        .iter()
        .enumerate()
        .map(|(i, n)| Player {
            id: 1000 + i as u64,
            name: n.to_string(),
            country: ["DE", "CN", "FR"][i % 3].to_string(),
            score: (i as f64 * 37.0) % 100.0,
        })
        .collect()
}

pub async fn run(url: &str) -> redis_entity::Result<()> {
    println!("== leaderboard: profiles, ZINCRBY, top 10 with profiles, rank, weekly board");
    // One server, or a cluster (node URLs separated by commas).
    let store = Store::builder().connect_any(url).await?;
    println!("{}", Player::layout());
    store.save_all(&players()).await?;

    // ZINCRBY player:score 50 1003, and the profile hash field in the same atomic write.
    store
        .update::<Player>(&1003)
        .incr(Player::SCORE, 50.0)
        .exec()
        .await?;
    let top = store.board(Player::SCORE).top(10).await?;
    println!("top 10 (ZREVRANGE + pipelined HMGET, 2 round trips):");
    for (i, (p, score)) in top.iter().enumerate() {
        println!("  {:>2}. {:<4} {:<3} {score:>5}", i + 1, p.name, p.country);
    }
    println!(
        "rank of player 1003 (ZREVRANK) -> {:?}",
        store.board(Player::SCORE).rank(1003).await?
    );

    // Range and order combined with another index.
    let de_mid = store
        .query::<Player>()
        .eq(Player::COUNTRY, "DE")
        .range(Player::SCORE, 10.0..=80.0)
        .order_desc(Player::SCORE)
        .fetch()
        .await?;
    let names: Vec<&str> = de_mid.iter().map(|p| p.name.as_str()).collect();
    println!("DE players with 10 <= score <= 80, best first -> {names:?}");

    // A weekly board: its key rotates every ISO week and expires by itself.
    for (id, points) in [(1000, 5.0), (1001, 12.0), (1000, 9.0)] {
        store.board(&WEEKLY).incr(&id, points).await?;
    }
    let week = store.board(&WEEKLY).top(3).await?;
    let week: Vec<(&str, f64)> = week.iter().map(|(p, s)| (p.name.as_str(), *s)).collect();
    let key = WEEKLY.key(store.keys().namespace(), std::time::SystemTime::now());
    let mut conn = store.connection();
    let ttl: i64 = redis::cmd("TTL")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .expect("ttl");
    println!(
        "weekly board {key} -> {week:?}, expires in {:.1} days\n",
        ttl as f64 / 86_400.0
    );

    for p in players() {
        store.delete::<Player>(&p.id).await?;
    }
    let _: () = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .expect("del");
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
