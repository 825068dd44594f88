use redis_entity::{RedisEntity, Store};

#[derive(RedisEntity)]
struct User {
    #[pk]
    id: u64,
    email: String,
}

async fn wrong(store: Store) {
    // Only numbers can be incremented in place.
    let _ = store.update::<User>(&1).incr(User::EMAIL, 1).exec().await;
}

fn main() {}
