//! A user table in Redis, read and written by primary key.
//!
//! ```sql
//! select * from user where userid = 9;
//! ```
//! becomes a `get` of one entity, stored either as one string key per column
//! (`user:userid:9:username`, the classic layout, `layout = "strings"` with a
//! key template) or as one hash per user (`user:9`). The example saves and
//! reads a user in both layouts, updates the hash, deletes both, and prints
//! each type's key layout.
//! Run: `cargo run --example users`.

use redis_entity::{RedisEntity, Store};

/// The classic layout: `set user:userid:9:username lisi`, one key per column.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "strings", key = "user:userid:{userid}")]
pub struct User {
    #[pk]
    pub userid: u64,
    pub username: String,
    pub password: String,
    pub email: String,
}

/// The same table as one hash per user (`HGETALL user:9`).
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
pub struct UserHash {
    #[pk]
    pub userid: u64,
    pub username: String,
    pub password: String,
    pub email: String,
}

pub async fn run(url: &str) -> redis_entity::Result<()> {
    println!("== users: a table row as keys");
    let store = Store::builder().connect_any(url).await?;
    let lisi = User {
        userid: 9,
        username: "lisi".into(),
        password: "111111".into(),
        email: "lisi@example.com".into(),
    };
    println!("{}", User::layout());
    store.save(&lisi).await?;
    println!(
        "save(User 9)                -> keys {:?}",
        store.keys().scan("user:userid:*").await?
    );
    // select * from user where userid=9;
    let back = store.get::<User>(&9).await?;
    println!("get::<User>(&9)             -> {back:?}");
    assert_eq!(back.as_ref(), Some(&lisi));

    let row = UserHash {
        userid: 9,
        username: lisi.username.clone(),
        password: lisi.password.clone(),
        email: lisi.email.clone(),
    };
    println!("{}", UserHash::layout());
    store.save(&row).await?;
    println!(
        "save(UserHash 9)            -> keys {:?}",
        store.keys().scan("user:[0-9]*").await?
    );
    // update user set password='222222' where userid=9;
    store
        .update::<UserHash>(&9)
        .set(UserHash::PASSWORD, "222222")
        .exec()
        .await?;
    let back = store.get::<UserHash>(&9).await?.expect("stored");
    println!("update password, get        -> {back:?}");
    // delete from user where userid=9;
    println!(
        "delete::<User>(&9)          -> {}",
        store.delete::<User>(&9).await?
    );
    println!(
        "delete::<UserHash>(&9)      -> {}",
        store.delete::<UserHash>(&9).await?
    );
    println!(
        "keys left                   -> {:?}\n",
        store.keys().scan("user:*").await?
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
