use redis_entity::RedisEntity;

struct Dimensions {
    width: u32,
    height: u32,
}

#[derive(RedisEntity)]
struct Product {
    #[pk]
    id: u64,
    dims: Dimensions,
}

fn main() {}
