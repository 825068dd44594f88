use redis_entity::{RedisEntity, Store};

#[derive(RedisEntity)]
struct User {
    #[pk]
    id: u64,
    #[index(unique)]
    username: String,
    #[index]
    country: String,
    email: String,
    level: i64,
}

async fn wrong(store: Store) {
    // No index on email: no query, no find.
    let _ = store.query::<User>().eq(User::EMAIL, "a@b.c").fetch().await;
    let _ = store.find(User::EMAIL, "a@b.c").await;
    // find_unique needs a unique index.
    let _ = store.find_unique(User::COUNTRY, "DE").await;
    // A unique value is looked up with find_unique, not set algebra.
    let _ = store.query::<User>().all(User::USERNAME, ["lisi"]).ids().await;
    // Ranges, ordering, top and rank need a sorted index.
    let _ = store.query::<User>().range(User::LEVEL, 1..5).ids().await;
    let _ = store.top(User::LEVEL, 10).await;
}

fn main() {}
