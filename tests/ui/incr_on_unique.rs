use redis_entity::{RedisEntity, Store};

#[derive(RedisEntity)]
struct Ticket {
    #[pk]
    id: u64,
    #[index(unique)]
    number: u64,
}

async fn wrong(store: Store) {
    // A unique value must be checked before it is written; an increment
    // computes it inside Redis, so it is refused at compile time.
    let _ = store.update::<Ticket>(&1).incr(Ticket::NUMBER, 1).exec().await;
}

fn main() {}
