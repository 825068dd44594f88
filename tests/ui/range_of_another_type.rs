use redis_entity::{RedisEntity, Store};
use std::ops::Range;

#[derive(RedisEntity)]
struct Player {
    #[pk]
    id: u64,
    #[index(sorted)]
    score: u64,
}

async fn wrong(store: Store, bounds: Range<i32>) {
    // The bounds of a range are values of the sorted field's type.
    let _ = store.query::<Player>().range(Player::SCORE, bounds).ids().await;
}

fn main() {}
