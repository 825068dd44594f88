use redis_entity::{RedisEntity, Store};

#[derive(RedisEntity)]
#[redis(key = "red_package:{program_id}_{uid}")]
struct RedPackage {
    #[pk]
    #[index]
    program_id: u64,
    #[pk]
    uid: u64,
    status: u8,
}

async fn wrong(store: Store) {
    // A pk field is part of the key: `set` cannot change it, as `incr` cannot.
    let _ = store
        .update::<RedPackage>(&(1, 2))
        .set(RedPackage::PROGRAM_ID, 7u64)
        .exec()
        .await;
}

fn main() {}
