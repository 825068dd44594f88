use redis_entity::{RedisEntity, Store, Term};

#[derive(RedisEntity)]
struct User {
    #[pk]
    id: u64,
    #[index(unique)]
    username: String,
    #[index]
    country: String,
    #[index(sorted)]
    score: i64,
    email: String,
    level: i64,
}

async fn wrong(store: Store) {
    // No index on email: no query, no find.
    let _ = store.query::<User>().eq(User::EMAIL, "a@b.c").fetch().await;
    let _ = store.find(User::EMAIL, "a@b.c").await;
    let _ = Term::eq(User::EMAIL, "a@b.c");
    // find_unique needs a unique index.
    let _ = store.find_unique(User::COUNTRY, "DE").await;
    // A unique value is looked up with find_unique, not set algebra.
    let _ = store.query::<User>().all(User::USERNAME, ["lisi"]).ids().await;
    // A sorted field is read by score.
    let _ = store.find(User::SCORE, 10).await;
    // Ranges, ordering, top and rank need a sorted index.
    let _ = store.query::<User>().range(User::LEVEL, 1..5).ids().await;
    let _ = store.query::<User>().order_desc(User::LEVEL).ids().await;
    let _ = store.board(User::LEVEL).top(10).await;
    let _ = store.board(User::LEVEL).rank(1).await;
    // Starts-with needs a prefix index.
    let _ = store.query::<User>().prefix(User::COUNTRY, "D").ids().await;
}

fn blocking(store: redis_entity::blocking::Store) {
    // The blocking store has the same bounds.
    let _ = store.find(User::EMAIL, "a@b.c");
    let _ = store.board(User::LEVEL).top(10);
}

fn main() {}
