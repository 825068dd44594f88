// A pk argument of the wrong type names the pk type it expected, once.
use redis_entity::{RedisEntity, Store};

#[derive(RedisEntity)]
struct Product {
    #[pk]
    sku: String,
    price: u32,
}

async fn run(store: Store) {
    let _ = store.get::<Product>(42u64).await;
}

fn main() {
    let _ = run;
}
