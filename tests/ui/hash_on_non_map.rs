use redis_entity::RedisEntity;

#[derive(RedisEntity)]
struct User {
    #[pk]
    id: u64,
    #[hash]
    settings: String,
}

fn main() {}
